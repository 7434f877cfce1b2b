/* Shared helpers of the team collectives. Every collective here reads or
 * writes the other members' symmetric buffers through the mapping of their
 * heaps (ushmemi_xlate) and synchronizes with team syncs, so data moves in
 * parallel on all PEs and synchronization stays logarithmic. Members whose
 * memory is not mapped here (other hosts: mpi) are read and written with
 * blocking get/put through their transport instead (ushmemi_coll_get/put/src):
 * the same algorithms, each copy a network transfer. */
#ifndef USHMEM_COLL_H
#define USHMEM_COLL_H

#include <stddef.h>
#include <string.h>

#include "core/prims.h"
#include "core/team.h"
#include "transport/transport.h"

/* A collective on device-heap buffers runs on the GPU (ushmemi_devmem). */
#define USHMEMI_COLL_ON_DEVICE(dest, src)                                                          \
    (USHMEMI_UNLIKELY(ushmemi_devmem != NULL) &&                                                   \
     (ushmemi_devheap_has(dest) || ushmemi_devheap_has(src)))

/* ---- Staged collectives (staged.c) ----
 * Device-heap buffers on a team where some member's device heap is not
 * mapped here (another host, reached through the proxy): the GPU stream
 * collectives cannot run, so the collective moves its data with
 * ushmemi_put/get (routed per peer: cuda or proxy) and team syncs. */

/* 1 when some member of team has a device heap that is not mapped here. */
int ushmemi_coll_dev_unmapped(shmem_team_t team);

/* Testing knob USHMEM_COLL_STAGED=1: the staged algorithms on host memory
 * too (-1 until read, once). */
extern _Atomic int ushmemi_coll_staged_env __attribute__((visibility("hidden")));
int ushmemi_coll_staged_pick(shmem_team_t team, int on_device);

/* 1 when this collective takes the staged path: on_device is
 * USHMEMI_COLL_ON_DEVICE(dest, src). The same answer on every member (the
 * members on one host map each other's heaps). 0 for an invalid team: the
 * caller's checks report it. */
static inline int ushmemi_coll_staged(shmem_team_t team, int on_device)
{
    if (USHMEMI_LIKELY(!on_device &&
                       !atomic_load_explicit(&ushmemi_coll_staged_env, memory_order_relaxed)))
        return 0;
    return ushmemi_coll_staged_pick(team, on_device);
}

/* The staged collectives; arguments already checked by the caller. */
typedef void (*ushmemi_coll_comb_t)(void *acc, const void *in, size_t n, ushmemi_redop_t op);
int ushmemi_coll_staged_bcast(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                              int root, int root_dest, const char *call);
int ushmemi_coll_staged_fcollect(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                                 const char *call);
int ushmemi_coll_staged_collect(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                                const char *call);
int ushmemi_coll_staged_alltoall(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                                 const char *call);
int ushmemi_coll_staged_alltoalls(shmem_team_t team, void *dest, const void *src, ptrdiff_t dst,
                                  ptrdiff_t sst, size_t nelems, size_t esize, const char *call);
/* Reductions and sum scans combine with fn (reduce.c's host functions). */
int ushmemi_coll_staged_reduce(shmem_team_t team, void *dest, const void *src, size_t nelems,
                               size_t esize, ushmemi_coll_comb_t fn, ushmemi_redop_t op,
                               const char *call);
int ushmemi_coll_staged_scan(shmem_team_t team, void *dest, const void *src, size_t nelems,
                             size_t esize, ushmemi_coll_comb_t fn, int exclusive, const char *call);

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

/* mpi hook: copy n bytes of team member i's copy of sym into dst (a memcpy
 * when mapped; else a blocking get through the member's transport). */
static inline void ushmemi_coll_get(void *dst, const void *sym, shmem_team_t team, int i, size_t n,
                                    const char *call)
{
    int pe = ushmemi_team_world_pe(team, i);
    const char *p = ushmemi_xlate(sym, pe);
    if (USHMEMI_LIKELY(p))
        memcpy(dst, p, n);
    else
        ushmemi_get(SHMEM_CTX_DEFAULT, dst, sym, n, pe, call);
}

/* mpi hook: copy n bytes from src into team member i's copy of sym (blocking:
 * complete on return). */
static inline void ushmemi_coll_put(void *sym, const void *src, shmem_team_t team, int i, size_t n,
                                    const char *call)
{
    int pe = ushmemi_team_world_pe(team, i);
    char *p = ushmemi_xlate(sym, pe);
    if (USHMEMI_LIKELY(p))
        memcpy(p, src, n);
    else
        ushmemi_put(SHMEM_CTX_DEFAULT, sym, src, n, pe, call);
}

/* mpi hook: member i's copy of sym for reading n bytes: the mapping, or a
 * copy fetched into tmp (n bytes) when the member is not mapped. */
static inline const char *ushmemi_coll_src(const void *sym, shmem_team_t team, int i, size_t n,
                                           void *tmp, const char *call)
{
    int pe = ushmemi_team_world_pe(team, i);
    const char *p = ushmemi_xlate(sym, pe);
    if (USHMEMI_LIKELY(p))
        return p;
    ushmemi_get(SHMEM_CTX_DEFAULT, tmp, sym, n, pe, call);
    return tmp;
}

/* mpi hook: the 64-bit word at sym in team member i's memory. */
static inline uint64_t ushmemi_coll_word(const void *sym, shmem_team_t team, int i,
                                         const char *call)
{
    uint64_t v;
    ushmemi_coll_get(&v, sym, team, i, sizeof v, call);
    return v;
}

/* Team syncs of up to this many members are flat (team_sync.c), on sync
 * flags [0, 8); broadcast, alltoall and fcollect on up to as many mapped
 * members pull with flags of their own (coll.c): arrivals [8, 16), reads
 * done [16, 24). */
#define USHMEMI_FLAT_SYNC_PES 8
#define USHMEMI_FLAG_ARRIVE   8
#define USHMEMI_FLAG_READ     16
_Static_assert(USHMEMI_FLAG_READ + USHMEMI_FLAT_SYNC_PES <= USHMEMI_MAX_ROUNDS,
               "a sync flag per member and use");

/* Small collectives with one synchronization (push.c): each member writes
 * its contribution into cells of the readers' slots. */
#define USHMEMI_PUSH_MAX_PES 16 /* larger teams: the tree and transport paths */
/* Larger data takes the pull paths (limits measured, see push.c): */
#define USHMEMI_PUSH_SHARED_TOTAL 4096 /* PEs share cores: bytes a PE copies in */
#define USHMEMI_PUSH_OWN_BYTES    (4 * USHMEMI_CACHELINE - 16) /* a core each: per cell */
#define USHMEMI_PUSH_OWN_BCAST    (USHMEMI_CACHELINE - 16)     /* ... for a broadcast */
typedef struct {
    shmem_team_t team;
    uint64_t seq;  /* this collective's sequence number on the team */
    size_t stride; /* bytes between cells */
    size_t off;    /* offset of this collective's area in the collective region */
} ushmemi_push_t;

/* 1 and *p set up when a collective sending nbytes per cell takes the push
 * path on team (the same answer on every member); else 0 and nothing changes.
 * Cell i of a reader is written by member i only; one_writer: only the root
 * writes (broadcast). */
int ushmemi_push_begin(shmem_team_t team, size_t nbytes, int one_writer, ushmemi_push_t *p);
/* Write nbytes of data into cell `cell` of member `to` and flag it (waits
 * first if `to` may still be reading that area for an older collective). */
void ushmemi_push_send(shmem_team_t team, const ushmemi_push_t *p, int to, int cell,
                       const void *data, size_t nbytes, const char *call);
/* Wait for this PE's cell `cell` and return its data (valid until push_end). */
const void *ushmemi_push_recv(const ushmemi_push_t *p, int cell, const char *call);
/* Every member of team is mapped here (cached in the team). */
int ushmemi_coll_mapped(shmem_team_t team);
/* This PE's own cell: unused by the others, a scratch buffer of the cell
 * size for this PE during the collective. */
void *ushmemi_push_mine(shmem_team_t team, const ushmemi_push_t *p);
/* This PE is done reading its cells; heard_all: it received from every
 * other member in this collective. */
void ushmemi_push_end(shmem_team_t team, const ushmemi_push_t *p, int heard_all);

/* ---- SHMEM_DEBUG: every member calls the same collective (check.c) ----
 * Each collective states its arguments; with SHMEM_DEBUG the members publish
 * and compare them before any data moves, and a mismatch ends the job with
 * one line naming both PEs and both calls. Without it: one branch. */
typedef enum {
    USHMEMI_COLL_BCAST = 1,
    USHMEMI_COLL_COLLECT,
    USHMEMI_COLL_FCOLLECT,
    USHMEMI_COLL_ALLTOALL,
    USHMEMI_COLL_ALLTOALLS,
    USHMEMI_COLL_REDUCE,
    USHMEMI_COLL_SCAN,
} ushmemi_coll_kind_t;
typedef struct {
    ushmemi_coll_kind_t kind;
    int root;         /* broadcast */
    uint64_t count;   /* bytes; elements for alltoalls, reductions, scans */
    uint64_t esize;   /* alltoalls */
    int dtype;        /* reductions, scans */
    int op;           /* reductions: ushmemi_redop_t; scans: 1 exclusive */
    int64_t dst, sst; /* alltoalls */
} ushmemi_coll_args_t;
void ushmemi_coll_check_args(shmem_team_t team, const ushmemi_coll_args_t *a, const char *call);
#define USHMEMI_COLL_CHECK(team, call, ...)                                                        \
    do {                                                                                           \
        if (USHMEMI_UNLIKELY(ushmemi_env.debug))                                                   \
            ushmemi_coll_check_args((team), &(ushmemi_coll_args_t){__VA_ARGS__}, (call));          \
    } while (0)

/* Byte size of n elements of esize, or fatal on overflow. */
static inline size_t ushmemi_coll_bytes(size_t n, size_t esize, const char *call)
{
    if (esize && n > SIZE_MAX / esize)
        ushmemi_fatal(call, "%zu elements of %zu bytes overflow", n, esize);
    return n * esize;
}

#endif
