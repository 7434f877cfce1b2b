/* Bootstrap: how PEs find each other. Setup only, never on the data path.
 *
 * All implementations are a star over stream sockets: rank 0 listens, the
 * others connect and authenticate with a shared secret, and rank 0 relays
 * allgather/bcast/barrier. What differs is where the address and secret come
 * from (launcher environment, torchrun environment, unique id). */
#ifndef USHMEM_BOOTSTRAP_H
#define USHMEM_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "shmemx.h"

typedef struct ushmemi_bootstrap_ops {
    const char *name;
    /* Collective over all ranks; each returns 0 or a negative USHMEM_E* code. */
    int (*allgather)(const void *in, void *out, size_t len); /* out: nranks * len */
    int (*bcast)(void *buf, size_t len, int root);
    int (*barrier)(void);
    /* Tear down the connections (collective, after a barrier). */
    void (*fini)(void);
} ushmemi_bootstrap_ops_t;

typedef struct {
    int rank, nranks;
    int local_rank; /* -1 when unknown */
    const ushmemi_bootstrap_ops_t *ops;
} ushmemi_bootstrap_t;

/* Detect from the environment (USHMEM_BOOTSTRAP or auto) and connect.
 * On failure prints a one-line reason and returns a negative code within
 * USHMEM_BOOTSTRAP_TIMEOUT seconds. */
int ushmemi_bootstrap_init_env(ushmemi_bootstrap_t *bs);
/* Unique-id path (shmemx_init_attr). */
int ushmemi_bootstrap_init_uid(ushmemi_bootstrap_t *bs, int rank, int nranks,
                               const shmemx_uniqueid_t *uid);
/* Create a unique id: binds a listening TCP socket kept for the later
 * ushmemi_bootstrap_init_uid(rank 0) in this process. */
int ushmemi_bootstrap_make_uid(shmemx_uniqueid_t *uid);

/* What the host-id exchange at init found: this PE's index among the PEs on
 * its host (hostname + kernel boot id) and how many there are. 0 or
 * USHMEM_ESTATE before init. (bs->local_rank is the launcher's LOCAL_RANK when
 * it gave one, else this local_rank.) */
int ushmemi_bootstrap_local_info(int *local_rank, int *local_size);

/* Liveness monitoring: after init, a background thread watches the bootstrap
 * connections. If a peer's connection drops before it announced finalize, or a
 * peer sends an abort, the job is brought down: every PE prints one line and
 * _exit()s with the abort status. */
int ushmemi_bootstrap_monitor_start(void);
void ushmemi_bootstrap_monitor_stop(void); /* before fini; idempotent */
/* Ask every PE to exit with status (used by shmem_global_exit and fatal errors).
 * Returns after the request has been sent; the caller then _exit()s. */
void ushmemi_bootstrap_abort(int status, const char *msg);

#endif
