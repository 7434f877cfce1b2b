/* Runtime state shared by the core, heap, RMA, sync and transports. */
#ifndef USHMEM_STATE_H
#define USHMEM_STATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/internal.h"

typedef enum { USHMEMI_MEM_HOST = 0, USHMEMI_MEM_DEVICE = 1 } ushmemi_mem_kind_t;

/* Symmetric segments. HEAP starts with a reserved internal region (sync flags,
 * collective scratch) followed by the user heap; DATA is the executable's
 * writable data segment (.data/.bss) remapped onto shared memory at init. */
enum {
    USHMEMI_SEG_HEAP = 0,
    USHMEMI_SEG_DATA = 1,
    USHMEMI_SEG_DEVHEAP = 2, /* cuda hook: device heap (src/transport/cuda), kind DEVICE */
    USHMEMI_NSEG = 3
};

typedef struct {
    char *base;  /* this PE's copy */
    size_t size; /* 0 = segment absent */
    ushmemi_mem_kind_t kind;
    int fd;      /* memfd backing this PE's copy (-1 once shared) */
    char **peer; /* [n_pes]: base of peer's copy mapped here, or NULL */
} ushmemi_seg_t;

/* Internal region at the start of every heap: fixed layout, same on every PE. */
#define USHMEMI_MAX_ROUNDS 32
typedef struct {
    /* dissemination barrier: flag[r] is written by the round-r partner */
    _Alignas(USHMEMI_CACHELINE) _Atomic uint64_t barrier_flag[USHMEMI_MAX_ROUNDS][8];
    /* heap debug checks: each PE writes its request here */
    _Alignas(USHMEMI_CACHELINE) _Atomic uint64_t alloc_check[4];
    /* finalize's own barrier: separate flags, so a PE that finalizes (or exits
     * without finalizing) can never complete a peer's shmem_barrier_all */
    _Alignas(USHMEMI_CACHELINE) _Atomic uint64_t fini_flag[USHMEMI_MAX_ROUNDS][8];
    /* written by the owner, read by waiting peers (src/sync/wait.c): depart is
     * USHMEMI_DEPART_* (running, in finalize, left without finalize); pid is
     * for the run-time check of which CPU the PE is queued on */
    _Alignas(USHMEMI_CACHELINE) _Atomic uint32_t depart;
    _Atomic int32_t pid;
    /* locks this PE holds (src/sync/lock.c): how many, and the key of the
     * last one taken (0: unknown), so a waiter in shmem_set_lock can tell
     * whether a PE that left holds its lock */
    _Atomic uint32_t locks_held;
    _Atomic uint64_t last_lock;
} ushmemi_sync_region_t;
#define USHMEMI_DEPART_RUNNING  0u
#define USHMEMI_DEPART_FINALIZE 1u /* called shmem_finalize */
#define USHMEMI_DEPART_EXIT     2u /* exit(0) / return from main without shmem_finalize */
#define USHMEMI_INTERNAL_SIZE   ((size_t)1 << 20) /* reserved at heap start */
/* Layout of the internal region: [0, 64K) ushmemi_sync_region_t (core
 * barrier); [64K, 1M) owned by teams/collectives/locks (src/core/team.c,
 * src/coll/), laid out there. */
#define USHMEMI_COLL_REGION_OFF  ((size_t)64 << 10)
#define USHMEMI_COLL_REGION_SIZE (USHMEMI_INTERNAL_SIZE - USHMEMI_COLL_REGION_OFF)

typedef struct {
    int initialized; /* init refcount (1.6: init/finalize pairs) */
    int ever_initialized;
    int my_pe, n_pes;
    int local_rank, local_size;
    unsigned char *is_local; /* [n_pes]: PE runs on this host */
    int wait_oversub;        /* more PEs of this job on the host than CPUs: yield at once */
    int proxy_awake;         /* CPUs enough for the proxy's threads to stay awake between polls */
    int64_t wait_spin_ns;    /* a wait spins (or yields) this long, then sleeps */
    int wait_spin_set;       /* USHMEM_WAIT_SPIN_US was given (waits with MPI peers sleep then) */
    int64_t wait_sleep_max_ns;
    int thread_level;
    ushmemi_seg_t seg[USHMEMI_NSEG];
    ushmemi_sync_region_t *sync; /* == seg[HEAP].base */
    uint64_t barrier_epoch;      /* barriers completed by this PE */
    uint64_t fini_epoch;         /* finalize barriers completed (1.6: init/finalize pairs) */
    _Atomic int aborting;
    /* cuda hook: a CUDA device is bound and the device heap exists; the data
     * paths test it before calling into src/transport/cuda/devmem.h. */
    int cuda_active;
} ushmemi_state_t;

extern ushmemi_state_t ushmemi_g __attribute__((visibility("hidden")));

/* Translate a symmetric address of this PE to the peer's copy mapped here.
 * Returns NULL if addr is not symmetric or the peer is not mapped. */
static inline void *ushmemi_xlate(const void *addr, int pe)
{
    uintptr_t a = (uintptr_t)addr;
    for (int s = 0; s < USHMEMI_NSEG; s++) {
        const ushmemi_seg_t *seg = &ushmemi_g.seg[s];
        uintptr_t off = a - (uintptr_t)seg->base;
        if (off < seg->size)
            return seg->peer[pe] ? seg->peer[pe] + off : NULL;
    }
    return NULL;
}

/* PE pe's internal region (its ushmemi_sync_region_t), mapped here, or NULL
 * when pe is not mapped (mpi). */
static inline ushmemi_sync_region_t *ushmemi_peer_sync(int pe)
{
    return (ushmemi_sync_region_t *)ushmemi_g.seg[USHMEMI_SEG_HEAP].peer[pe];
}

/* Monotonic clock in nanoseconds. */
static inline int64_t ushmemi_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Segment index of a local symmetric address, or -1. */
static inline int ushmemi_seg_of(const void *addr, size_t len)
{
    uintptr_t a = (uintptr_t)addr;
    for (int s = 0; s < USHMEMI_NSEG; s++) {
        const ushmemi_seg_t *seg = &ushmemi_g.seg[s];
        uintptr_t off = a - (uintptr_t)seg->base;
        if (off < seg->size && len <= seg->size - off)
            return s;
    }
    return -1;
}

/* The same nonzero key on every PE for a symmetric address (segment and
 * offset), 0 for any other address. */
static inline uint64_t ushmemi_sym_key(const volatile void *addr)
{
    int s = ushmemi_seg_of((const void *)addr, 1);
    if (s < 0)
        return 0;
    return ((uint64_t)(s + 1) << 56) |
           (uint64_t)((uintptr_t)addr - (uintptr_t)ushmemi_g.seg[s].base);
}

/* ---- Data types (for AMOs, wait/test, reductions) ---- */
typedef enum {
    USHMEMI_KIND_SINT = 1,
    USHMEMI_KIND_UINT = 2,
    USHMEMI_KIND_FLOAT = 3,
    USHMEMI_KIND_COMPLEX = 4,
} ushmemi_kind_t;
/* A dtype packs kind and byte size: kind << 8 | size. */
#define USHMEMI_DT(kind, size) ((int)(((kind) << 8) | (size)))
#define USHMEMI_DT_KIND(dt)    ((dt) >> 8)
#define USHMEMI_DT_SIZE(dt)    ((size_t)((dt)&0xff))

/* ---- AMO descriptor ---- */
typedef enum {
    USHMEMI_AMO_FETCH,
    USHMEMI_AMO_SET,
    USHMEMI_AMO_SWAP,
    USHMEMI_AMO_CSWAP,
    USHMEMI_AMO_ADD, /* fetch_add / add / inc (value 1) */
    USHMEMI_AMO_AND,
    USHMEMI_AMO_OR,
    USHMEMI_AMO_XOR,
} ushmemi_amo_op_t;

typedef struct {
    ushmemi_amo_op_t op;
    int dtype;
    void *remote;         /* symmetric address (this PE's view) */
    uint64_t value, cond; /* operands, bit patterns in the low dtype-size bytes */
    uint64_t result;      /* fetched value (out) */
    void *fetch_out;      /* _nbi fetching AMOs: where to store result, else NULL */
    int pe;
} ushmemi_amo_desc_t;

/* Slots of ushmemi_activity (core/prims.h): the proxy's helper threads. */
enum { USHMEMI_ACT_DEVRING, USHMEMI_ACT_STAGED, USHMEMI_ACT_SLOTS };

#endif
