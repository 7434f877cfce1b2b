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
    const char *name; /* "launcher", "torchrun", "uid", "single" or "mpi" */
    /* Collective over all ranks; each returns 0 or a negative USHMEM_E* code
     * after printing one line. Each waits at most USHMEM_BOOTSTRAP_TIMEOUT
     * seconds for the slowest PE (so shmem_finalize must do its unbounded
     * shmem_barrier_all before the bootstrap barrier). After a failure the PEs
     * are out of step and every later call fails: abort the job. A peer that
     * dies while one of these waits ends the job when the monitor is on, and
     * makes the call fail (USHMEM_EBOOTSTRAP) when it is not. An ABORT from a
     * peer always ends this process. */
    int (*allgather)(const void *in, void *out, size_t len); /* out: nranks * len */
    int (*bcast)(void *buf, size_t len, int root);
    int (*barrier)(void);
    /* Tear down the connections (collective, after a barrier). */
    void (*fini)(void);
    /* mpi hook: end the whole job with status, for bootstraps that are not the
     * star (which aborts through its own connections; NULL there). Does not
     * return. ushmemi_bootstrap_abort calls it. */
    void (*abort)(int status, const char *msg);
} ushmemi_bootstrap_ops_t;

typedef struct {
    int rank, nranks;
    int local_rank; /* the launcher's LOCAL_RANK, else counted from host ids */
    const ushmemi_bootstrap_ops_t *ops;
} ushmemi_bootstrap_t;

/* Detect from the environment (USHMEM_BOOTSTRAP or auto) and connect.
 * On failure prints a one-line reason and returns a negative code within
 * USHMEM_BOOTSTRAP_TIMEOUT seconds. */
int ushmemi_bootstrap_init_env(ushmemi_bootstrap_t *bs);
/* Unique-id path (shmemx_init_attr). Rank 0 should be the process that made
 * the id (it then reuses the socket make_uid opened); otherwise rank 0 binds
 * the id's port itself, and fails with a clear message if it cannot. */
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
 * peer sends an abort, the job is brought down: root prints one line naming
 * the PE (the others print one only if root itself vanished) and every PE
 * _exit()s, with the abort status or 1. A PE spinning in the application is
 * stopped too: the monitor is a thread. */
int ushmemi_bootstrap_monitor_start(void); /* after init; no-op with 1 PE or if running */
/* finalize: barrier, monitor_stop, barrier, fini. Idempotent, and safe if
 * start never ran; fini calls it too. */
void ushmemi_bootstrap_monitor_stop(void);
/* Ask every PE to exit with status (used by shmem_global_exit and fatal errors).
 * Returns after the request has been sent; the caller then _exit()s. Root
 * prints "ushmem: PE k called shmem_global_exit(status)" when msg is NULL or
 * empty, "ushmem: msg" when msg starts with "PE k ", else "ushmem: PE k: msg
 * (exit status s)"; the other PEs exit silently. msg is cut at 200 bytes.
 * Safe to call at any time: a no-op before init, after fini, or with 1 PE. */
void ushmemi_bootstrap_abort(int status, const char *msg);
/* The connections to the PEs this one talks to (star: root all, the others
 * root), for watching them while waiting on something else; 0 when the
 * bootstrap has none (mpi, one PE). */
int ushmemi_bootstrap_watch_fds(int *fds, int max);

#endif
