/* Transports: how bytes reach one peer. One const ops table per transport, in
 * an ordered array; for each peer and memory kind the first transport whose
 * reachable() says yes wins (USHMEM_TRANSPORTS filters and reorders).
 *
 * When a transport maps the peer's segment into this process (ptr != NULL in
 * the segment table), the core does loads, stores, memcpy and atomics inline;
 * the function pointers below are only used for peers that are not mapped. */
#ifndef USHMEM_TRANSPORT_H
#define USHMEM_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "core/state.h"

typedef enum {
    USHMEMI_CAP_MAP = 1 << 0,    /* peer memory is load/store accessible */
    USHMEMI_CAP_DEVICE = 1 << 1, /* can reach device memory */
} ushmemi_transport_caps_t;

typedef struct ushmemi_transport_ops {
    const char *name;
    unsigned caps;
    /* Why the transport cannot be used here (NULL when usable); for ushmem_info. */
    const char *(*unusable_reason)(void);
    /* How it works here, for ushmem_info and SHMEM_DEBUG (may be NULL). */
    const char *(*describe)(void);
    int (*init)(void);
    void (*fini)(void);
    int (*reachable)(int pe, ushmemi_mem_kind_t kind);
    /* Make every local segment visible to the peers this transport reaches and
     * fill state.seg[s].peer[pe] for the peers it maps. Collective. */
    int (*attach)(void);
    void (*detach)(void);
    /* Data path for unmapped peers (may be NULL for mapping transports). */
    int (*put)(void *remote_dest, const void *src, size_t n, int pe, int nbi);
    int (*get)(void *dest, const void *remote_src, size_t n, int pe, int nbi);
    int (*amo)(ushmemi_amo_desc_t *desc);
    /* Data, then the signal (SHMEM_SIGNAL_SET/ADD) on the same PE, in that
     * order; NULL: the core puts, completes, then signals. */
    int (*put_signal)(void *remote_dest, const void *src, size_t n, uint64_t *sig, uint64_t signal,
                      int sig_op, int pe);
    int (*fence)(void);
    int (*quiet)(void);
    void (*progress)(void);
    /* Optional (the kernels' request thread keeps several in flight): start
     * an AMO; *handle NULL when it finished at once (desc->result set), else
     * amo_test finishes it later: 1 with *result once answered (the handle
     * is then freed), 0 not yet, < 0 an error. Later operations to the same
     * PE are applied after it at the target, as with amo. */
    int (*amo_start)(ushmemi_amo_desc_t *desc, void **handle);
    int (*amo_test)(void *handle, uint64_t *result);
} ushmemi_transport_ops_t;

extern const ushmemi_transport_ops_t ushmemi_transport_shm;

#endif
