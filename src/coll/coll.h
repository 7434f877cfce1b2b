/* Shared helpers of the team collectives. Every collective here reads or
 * writes the other members' symmetric buffers through the mapping of their
 * heaps (ushmemi_xlate) and synchronizes with team syncs, so data moves in
 * parallel on all PEs and synchronization stays logarithmic. */
#ifndef USHMEM_COLL_H
#define USHMEM_COLL_H

#include "core/prims.h"
#include "core/team.h"
#include "transport/cuda/devmem.h"

/* A collective on device-heap buffers runs on the GPU (src/transport/cuda). */
#define USHMEMI_COLL_ON_DEVICE(dest, src)                                                          \
    (USHMEMI_UNLIKELY(ushmemi_g.cuda_active) &&                                                    \
     (ushmemi_cuda_is_sym(dest) || ushmemi_cuda_is_sym(src)))

/* The caller's team handle is usable; otherwise a one-line error. */
static inline int ushmemi_coll_team_ok(shmem_team_t team, const char *call)
{
    USHMEMI_CHECK_INIT(call);
    return ushmemi_team_check(team, call);
}

/* [addr, addr+len) must be symmetric: the peers address it by offset. */
static inline void ushmemi_coll_sym(const void *addr, size_t len, const char *what,
                                    const char *call)
{
    if (len && ushmemi_seg_of(addr, len) < 0)
        ushmemi_fatal(call, "%s (%p, %zu bytes) is not a symmetric object", what, addr, len);
}

/* Team member i's copy of the symmetric address addr. */
static inline char *ushmemi_coll_peer(const void *addr, shmem_team_t team, int i, const char *call)
{
    int pe = ushmemi_team_world_pe(team, i);
    char *p = ushmemi_xlate(addr, pe);
    if (USHMEMI_UNLIKELY(!p))
        ushmemi_fatal(call,
                      "PE %d's memory is not mapped in this process: collectives need "
                      "every team member on this host",
                      pe);
    return p;
}

/* Byte size of n elements of esize, or fatal on overflow. */
static inline size_t ushmemi_coll_bytes(size_t n, size_t esize, const char *call)
{
    if (esize && n > SIZE_MAX / esize)
        ushmemi_fatal(call, "%zu elements of %zu bytes overflow", n, esize);
    return n * esize;
}

#endif
