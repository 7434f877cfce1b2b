/* Barriers over shared memory: a dissemination barrier on monotonically
 * increasing epochs, so flags never need resetting. In round r, PE i writes the
 * epoch into flag r of PE (i + 2^r) mod n and waits for its own flag r to reach
 * the epoch. ceil(log2 n) rounds, one cache line moved per round and PE. */
#include <sched.h>
#include <stddef.h>

#include "core/prims.h"

static inline ushmemi_sync_region_t *peer_sync(int pe)
{
    return (ushmemi_sync_region_t *)ushmemi_g.seg[USHMEMI_SEG_HEAP].peer[pe];
}

/* One dissemination barrier over the flag rows `row` (barrier_flag or
 * fini_flag) of every PE's sync region. */
static void dissemination(size_t row_off, uint64_t epoch, const char *call)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    _Atomic uint64_t(*mine)[8] = (_Atomic uint64_t(*)[8])((char *)ushmemi_g.sync + row_off);

    for (int r = 0, dist = 1; dist < n; r++, dist <<= 1) {
        int to = me + dist;
        if (to >= n)
            to -= n;
        ushmemi_sync_region_t *p = peer_sync(to);
        if (USHMEMI_LIKELY(p))
            atomic_store_explicit(&((_Atomic uint64_t(*)[8])((char *)p + row_off))[r][0], epoch,
                                  memory_order_release);
        else /* mpi hook: not mapped: through its transport */
            ushmemi_flag_put(&mine[r][0], epoch, to, call);
        ushmemi_waiter_t w = {0, call};
        while (atomic_load_explicit(&mine[r][0], memory_order_acquire) < epoch)
            ushmemi_wait_poll(&w);
    }
}

void ushmemi_sync_world(void)
{
    dissemination(offsetof(ushmemi_sync_region_t, barrier_flag), ++ushmemi_g.barrier_epoch,
                  "shmem_barrier_all");
}

void ushmemi_sync_fini(void)
{
    dissemination(offsetof(ushmemi_sync_region_t, fini_flag), ++ushmemi_g.fini_epoch,
                  "shmem_finalize");
}

USHMEMI_API void shmem_barrier_all(void)
{
    USHMEMI_CHECK_INIT("shmem_barrier_all");
    ushmemi_quiet(SHMEM_CTX_DEFAULT);
    ushmemi_sync_world();
}

USHMEMI_API void shmem_sync_all(void)
{
    USHMEMI_CHECK_INIT("shmem_sync_all");
    ushmemi_sync_world();
}

/* pshmem_ profiling names */
USHMEMI_PSHMEM(shmem_barrier_all)
USHMEMI_PSHMEM(shmem_sync_all)
