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

#include <shmem.h>

#include "core/prims.h"
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

/* Memory the CPU cannot load and store (the device heap and other GPU
 * memory), lent by the transport that owns it (cuda) while it is attached:
 * rma/, amo/, coll/ and sync/ reach device memory only through this table.
 * NULL: no such memory in this process.
 * put/get/strided (remote: the peer's mapped copy; sym_dev: the symmetric
 * side is in the device heap) and load: 1 when a side is device memory (done;
 * blocking unless nbi, then complete at quiet), 0 when both are host memory
 * (the caller's host path). amo/signal: on a device-heap word. The
 * collectives: same arguments and results as ushmemi_broadcast & co. */
typedef struct ushmemi_devmem_ops {
    int (*put)(void *remote, const void *local, size_t n, int sym_dev, int nbi, const char *call);
    int (*get)(void *local, const void *remote, size_t n, int sym_dev, int nbi, const char *call);
    int (*strided)(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                   size_t nblocks, int sym_dev, const char *call);
    void (*quiet)(void);
    uint64_t (*amo)(ushmemi_amo_op_t op, size_t size, void *remote, uint64_t value, uint64_t cond,
                    const char *call);
    void (*signal)(uint64_t *remote, uint64_t value, int sig_op, const char *call);
    int (*load)(const volatile void *addr, size_t size, void *out, const char *call);
    int (*broadcast)(shmem_team_t team, void *dest, const void *src, size_t nbytes, int root,
                     const char *call);
    int (*fcollect)(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                    const char *call);
    int (*alltoall)(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                    const char *call);
    int (*reduce)(shmem_team_t team, void *dest, const void *src, size_t nelems, int dtype,
                  ushmemi_redop_t op, const char *call);
    /* Why pe's device heap is not mapped here when its GPU cannot be reached
     * from ours; NULL otherwise. */
    const char *(*unmapped_why)(int pe);
} ushmemi_devmem_ops_t;

extern const ushmemi_devmem_ops_t *ushmemi_devmem __attribute__((visibility("hidden")));

/* [addr, addr+1) lies in this PE's device heap (a symmetric device address;
 * never while no device heap exists). */
static inline int ushmemi_devheap_has(const void *addr)
{
    const ushmemi_seg_t *seg = &ushmemi_g.seg[USHMEMI_SEG_DEVHEAP];
    return (uintptr_t)addr - (uintptr_t)seg->base < seg->size;
}

#endif
