/* Barriers over shared memory: a dissemination barrier on monotonically
 * increasing epochs, so flags never need resetting. In round r, PE i writes the
 * epoch into flag r of PE (i + 2^r) mod n and waits for its own flag r to reach
 * the epoch. ceil(log2 n) rounds, one cache line moved per round and PE. */
#include <sched.h>

#include "core/prims.h"

/* Flag r of a sync region's barrier row: shmem_barrier_all's, or finalize's
 * own (so a PE in finalize never completes a peer's user barrier). */
static inline _Atomic uint64_t *flag_of(ushmemi_sync_region_t *s, int fini, int r)
{
    return fini ? &s->fini_flag[r][0] : &s->barrier_flag[r][0];
}

static void dissemination(int fini, uint64_t epoch, const char *call)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;

    for (int r = 0, dist = 1; dist < n; r++, dist <<= 1) {
        int to = me + dist;
        if (to >= n)
            to -= n;
        ushmemi_sync_region_t *p = ushmemi_peer_sync(to);
        _Atomic uint64_t *mine = flag_of(ushmemi_g.sync, fini, r);
        if (USHMEMI_LIKELY(p))
            atomic_store_explicit(flag_of(p, fini, r), epoch, memory_order_release);
        else /* mpi hook: not mapped: through its transport */
            ushmemi_flag_put(mine, epoch, to, call);
        ushmemi_waiter_t w =
            USHMEMI_WAITER(call, SHMEM_TEAM_WORLD, mine, me - dist < 0 ? me - dist + n : me - dist);
        while (atomic_load_explicit(mine, memory_order_acquire) < epoch)
            ushmemi_wait_poll(&w);
        ushmemi_wait_done(&w);
    }
}

void ushmemi_sync_world(void)
{
    dissemination(0, ++ushmemi_g.barrier_epoch, "shmem_barrier_all");
}

void ushmemi_sync_fini(void)
{
    dissemination(1, ++ushmemi_g.fini_epoch, "shmem_finalize");
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
