/* Team synchronization on the team's slot, with epochs that only grow (as
 * src/sync/barrier.c does for the world). Up to USHMEMI_FLAT_SYNC_PES members
 * (the same choice on every member, so the flags mean the same everywhere):
 * flat, flag i written by member i. Larger teams: a dissemination barrier,
 * in round r member i writes the epoch into flag r of member (i + 2^r) mod n
 * and waits for its own flag r to reach it. ceil(log2 n) rounds; after the
 * last one every member has transitively heard from all. */
#include "coll/coll.h"

void ushmemi_team_sync(shmem_team_t team, const char *call)
{
    /* Orders this PE's earlier stores into peers (the non-temporal stores of
     * large memcpys included) before any flag the peers wait on. */
    atomic_thread_fence(memory_order_seq_cst);
    int n = team->size, me = team->my_pe;
    if (n == 1)
        return;
    uint64_t epoch = ++team->sync_epoch;
    ushmemi_team_slot_t *mine = ushmemi_team_my_slot(team);
    if (n <= USHMEMI_FLAT_SYNC_PES) {
        /* Flat: member i writes the epoch into flag i of every other member
         * and waits for all of theirs. One round instead of a chain of
         * ceil(log2 n), which matters when PEs share cores: a chain stalls
         * at every descheduled link (4 PEs on 2 cores, alltoall of 2 KiB
         * blocks, two team syncs: 5.0 us flat vs 5.6 dissemination; fcollect
         * 32 KiB 10.0 vs 13.0). */
        for (int k = 1; k < n; k++)
            ushmemi_flag_put(&mine->sync_flag[me], epoch,
                             ushmemi_team_world_pe(team, me + k >= n ? me + k - n : me + k), call);
        for (int k = 1; k < n; k++) {
            int j = me + k >= n ? me + k - n : me + k;
            ushmemi_waiter_t w =
                USHMEMI_WAITER(call, team, &mine->sync_flag[j], ushmemi_team_world_pe(team, j));
            while (atomic_load_explicit(&mine->sync_flag[j], memory_order_acquire) < epoch)
                ushmemi_wait_poll(&w);
            ushmemi_wait_done(&w);
        }
        team->push_safe = team->push_seq;
        return;
    }
    for (int r = 0, dist = 1; dist < n; r++, dist <<= 1) {
        int to = me + dist >= n ? me + dist - n : me + dist;
        int pe = ushmemi_team_world_pe(team, to);
        ushmemi_coll_region_t *peer = ushmemi_coll_region(pe);
        if (USHMEMI_LIKELY(peer))
            atomic_store_explicit(&peer->slot[team->slot].sync_flag[r], epoch,
                                  memory_order_release);
        else /* mpi hook: not mapped: through its transport */
            ushmemi_flag_put(&mine->sync_flag[r], epoch, pe, call);
        ushmemi_waiter_t w =
            USHMEMI_WAITER(call, team, &mine->sync_flag[r],
                           ushmemi_team_world_pe(team, me - dist < 0 ? me - dist + n : me - dist));
        while (atomic_load_explicit(&mine->sync_flag[r], memory_order_acquire) < epoch)
            ushmemi_wait_poll(&w);
        ushmemi_wait_done(&w);
    }
    /* Every member got here, so each one has finished reading the cells of
     * every small collective before (src/coll/push.c). */
    team->push_safe = team->push_seq;
}

USHMEMI_API int shmem_team_sync(shmem_team_t team)
{
    static const char call[] = "shmem_team_sync";
    if (!ushmemi_coll_team_ok(team, call))
        return USHMEM_EINVAL;
    ushmemi_team_sync(team, call);
    return 0;
}

/* Deprecated active-set forms; pSync is not needed (the team has its slot). */
USHMEMI_API void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    static const char call[] = "shmem_barrier";
    (void)pSync;
    shmem_team_t team = ushmemi_active_set_team(PE_start, logPE_stride, PE_size, call);
    if (team == SHMEM_TEAM_INVALID) /* not a member */
        return;
    ushmemi_quiet(SHMEM_CTX_DEFAULT);
    ushmemi_team_sync(team, call);
}

/* Parenthesized: shmem.h's C11 macro dispatches shmem_sync(team) to team_sync. */
USHMEMI_API void(shmem_sync)(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    static const char call[] = "shmem_sync";
    (void)pSync;
    shmem_team_t team = ushmemi_active_set_team(PE_start, logPE_stride, PE_size, call);
    if (team != SHMEM_TEAM_INVALID) /* else not a member */
        ushmemi_team_sync(team, call);
}

/* pshmem_ profiling names */
USHMEMI_PSHMEM(shmem_team_sync)
USHMEMI_PSHMEM(shmem_barrier)
USHMEMI_PSHMEM(shmem_sync)
