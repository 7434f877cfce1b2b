/* Internal primitives behind the public API. The generated typed API
 * (src/gen/api_gen.c) is a thin layer over these: each public routine passes its
 * own name as `call` so errors read "PE n: shmem_int_put: reason".
 *
 * Contract for every primitive: arguments are validated (PE range, symmetric
 * address, sizes); on bad input the primitive reports through ushmemi_fatal (the
 * public routines return void) unless it returns a status. */
#ifndef USHMEM_PRIMS_H
#define USHMEM_PRIMS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "core/state.h"

/* The library must be initialized; fatal otherwise. Cheap (one load). */
#define USHMEMI_CHECK_INIT(call)                                                                   \
    do {                                                                                           \
        if (USHMEMI_UNLIKELY(!ushmemi_g.initialized))                                              \
            ushmemi_fatal(call, "OpenSHMEM library not initialized");                              \
    } while (0)

/* The same for the shmemx calls that return a status: one line, SHMEMX_ERR_STATE. */
#define USHMEMI_CHECK_INIT_STATUS(call)                                                            \
    do {                                                                                           \
        if (USHMEMI_UNLIKELY(!ushmemi_g.initialized)) {                                            \
            ushmemi_error(call, "OpenSHMEM library not initialized");                              \
            return SHMEMX_ERR_STATE;                                                               \
        }                                                                                          \
    } while (0)

/* ---- RMA (nbytes may be 0, then pointers may be NULL) ---- */
void ushmemi_put(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe,
                 const char *call);
void ushmemi_get(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe,
                 const char *call);
void ushmemi_put_nbi(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe,
                     const char *call);
void ushmemi_get_nbi(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe,
                     const char *call);
/* Strided: element i goes from src[i*sst] to dest[i*dst] (strides in elements). */
void ushmemi_iput(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                  size_t nelems, size_t esize, int pe, const char *call);
void ushmemi_iget(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                  size_t nelems, size_t esize, int pe, const char *call);
/* 1.6 blocked strided: nblocks blocks of bsize elements. */
void ushmemi_ibput(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                   size_t bsize, size_t nblocks, size_t esize, int pe, const char *call);
void ushmemi_ibget(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                   size_t bsize, size_t nblocks, size_t esize, int pe, const char *call);
/* Single element of esize bytes (p / g). NOTE: g is ushmemi_get_elem, since
 * ushmemi_g is the state variable. */
void ushmemi_p(shmem_ctx_t ctx, void *dest, const void *value, size_t esize, int pe,
               const char *call);
void ushmemi_get_elem(shmem_ctx_t ctx, void *out, const void *src, size_t esize, int pe,
                      const char *call);

/* ---- AMOs: value/cond/result are bit patterns in the low dtype-size bytes ---- */
uint64_t ushmemi_amo(shmem_ctx_t ctx, ushmemi_amo_op_t op, int dtype, void *dest, uint64_t value,
                     uint64_t cond, int pe, const char *call);
void ushmemi_amo_nbi(shmem_ctx_t ctx, ushmemi_amo_op_t op, int dtype, void *fetch, void *dest,
                     uint64_t value, uint64_t cond, int pe, const char *call);

/* ---- Signals ---- */
void ushmemi_put_signal(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes,
                        uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, int nbi,
                        const char *call);
void ushmemi_signal_op(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                       const char *call);
/* mpi hook: store v into PE pe's copy of the symmetric flag (barrier and
 * collective flags, one writer each): a release store when the peer is mapped,
 * else its transport's atomic SET; complete on return. */
void ushmemi_flag_put(_Atomic uint64_t *flag, uint64_t v, int pe, const char *call);

/* ---- Point-to-point synchronization ---- */
/* Compare *ivar (dtype) with *value using SHMEM_CMP_*; 1 if satisfied. */
int ushmemi_compare(const volatile void *ivar, int dtype, int cmp, const void *value,
                    const char *call);
/* Wait loop state. Every wait in the library is
 *     ushmemi_waiter_t w = USHMEMI_WAITER(call, team, addr, pe);
 *     while (!cond)
 *         ushmemi_wait_poll(&w);
 *     ushmemi_wait_done(&w);
 * the policy (spin, yield, sleeping back-off), MPI progress, counters, the
 * check for peers that left and the hang report all live in src/sync/wait.c.
 * What the wait needs: team (its members must all come: a barrier, a
 * collective; NULL: any PE may end it), addr (the word waited on; for
 * shmem_set_lock the lock, whose holder must come) and pe (the world PE
 * expected to write it, -1: any). */
typedef struct {
    unsigned spins;
    const char *call;
    shmem_team_t team;
    const volatile void *addr;
    int pe;
} ushmemi_waiter_t;
#define USHMEMI_WAITER(call, team, addr, pe)                                                       \
    {                                                                                              \
        0, (call), (team), (const volatile void *)(addr), (pe)                                     \
    }
void ushmemi_wait_poll(ushmemi_waiter_t *w);
/* A wait that reached the slow path published itself for the hang report
 * (SIGURG, see wait.c); one predictable branch otherwise. */
void ushmemi_wait_unpublish(ushmemi_waiter_t *w);

/* What a helper thread of this PE is doing (the proxy's threads), for the
 * hang report: one line per busy slot. what NULL: idle. The strings must
 * be static. */
void ushmemi_activity(int slot, const char *what, int pe);
static inline void ushmemi_wait_done(ushmemi_waiter_t *w)
{
    if (USHMEMI_UNLIKELY(w->spins == UINT_MAX))
        ushmemi_wait_unpublish(w);
}
/* At init, after locality: local_pes = this job's PEs on this host. */
void ushmemi_wait_setup(int local_pes);
/* At finalize: print the counters when USHMEM_WAIT_STATS is set. */
void ushmemi_wait_report(void);

void ushmemi_wait_until(volatile void *ivar, int dtype, int cmp, const void *value,
                        const char *call);
int ushmemi_test(volatile void *ivar, int dtype, int cmp, const void *value, const char *call);
/* Array forms. status may be NULL (all included); value is one value, values
 * an array of nelems (vector forms: pass values, value NULL). Return as in the
 * spec: _all -> void (wait) / 1|0 (test); _any -> index or SIZE_MAX; _some ->
 * count with indices written. */
void ushmemi_wait_until_all(volatile void *ivars, size_t nelems, const int *status, int dtype,
                            int cmp, const void *value, const void *values, const char *call);
size_t ushmemi_wait_until_any(volatile void *ivars, size_t nelems, const int *status, int dtype,
                              int cmp, const void *value, const void *values, const char *call);
size_t ushmemi_wait_until_some(volatile void *ivars, size_t nelems, size_t *indices,
                               const int *status, int dtype, int cmp, const void *value,
                               const void *values, const char *call);
int ushmemi_test_all(volatile void *ivars, size_t nelems, const int *status, int dtype, int cmp,
                     const void *value, const void *values, const char *call);
size_t ushmemi_test_any(volatile void *ivars, size_t nelems, const int *status, int dtype, int cmp,
                        const void *value, const void *values, const char *call);
size_t ushmemi_test_some(volatile void *ivars, size_t nelems, size_t *indices, const int *status,
                         int dtype, int cmp, const void *value, const void *values,
                         const char *call);

/* ---- Ordering / barriers ---- */
void ushmemi_quiet(shmem_ctx_t ctx);
void ushmemi_fence(shmem_ctx_t ctx);
/* Barrier among all PEs of the job over shared memory (no quiet). */
void ushmemi_sync_world(void);
/* finalize's barrier: own flags, never pairs with a user's barrier. */
void ushmemi_sync_fini(void);

/* ---- Collectives and reductions (teams) ---- */
typedef enum {
    USHMEMI_OP_AND,
    USHMEMI_OP_OR,
    USHMEMI_OP_XOR,
    USHMEMI_OP_MAX,
    USHMEMI_OP_MIN,
    USHMEMI_OP_SUM,
    USHMEMI_OP_PROD,
} ushmemi_redop_t;
int ushmemi_broadcast(shmem_team_t team, void *dest, const void *src, size_t nbytes, int root,
                      const char *call);
int ushmemi_collect(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                    const char *call);
int ushmemi_fcollect(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                     const char *call);
int ushmemi_alltoall(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                     const char *call);
int ushmemi_alltoalls(shmem_team_t team, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                      size_t nelems, size_t esize, const char *call);
int ushmemi_reduce(shmem_team_t team, void *dest, const void *src, size_t nelems, int dtype,
                   ushmemi_redop_t op, const char *call);
int ushmemi_scan(shmem_team_t team, void *dest, const void *src, size_t nelems, int dtype,
                 int exclusive, const char *call);
/* Deprecated active-set forms map the (start, logstride, size) triple to a team. */
shmem_team_t ushmemi_active_set_team(int start, int logstride, int size, const char *call);

/* A CPU atomic of type T on ptr (amo.c on mapped memory, the proxy's hands on
 * its own host memory): returns the old value as uint64_t for every op but
 * SET (0). Falls through when op is unknown. */
#define USHMEMI_CPU_AMO(T, ptr, op, value, cond)                                                   \
    do {                                                                                           \
        T *p = (T *)(ptr), v = (T)(value), c = (T)(cond);                                          \
        switch (op) {                                                                              \
        case USHMEMI_AMO_FETCH: return (uint64_t)__atomic_load_n(p, __ATOMIC_SEQ_CST);             \
        case USHMEMI_AMO_SET: __atomic_store_n(p, v, __ATOMIC_SEQ_CST); return 0;                  \
        case USHMEMI_AMO_SWAP: return (uint64_t)__atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);       \
        case USHMEMI_AMO_CSWAP:                                                                    \
            __atomic_compare_exchange_n(p, &c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);          \
            return (uint64_t)c;                                                                    \
        case USHMEMI_AMO_ADD: return (uint64_t)__atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);         \
        case USHMEMI_AMO_AND: return (uint64_t)__atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);         \
        case USHMEMI_AMO_OR: return (uint64_t)__atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);           \
        case USHMEMI_AMO_XOR: return (uint64_t)__atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);         \
        }                                                                                          \
    } while (0)

#endif
