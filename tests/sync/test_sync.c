/* Barriers, wait_until and test with real data flow.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include "test_util.h"

static long flags[8];
static int iflag;
static uint64_t u64flag;

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), np = shmem_n_pes();
    int to = (me + 1) % np, from = (me + np - 1) % np;
    long *slots = shmem_calloc((size_t)np * 200, sizeof(long));

    /* barrier ordering: round i, every PE writes its slot on every other PE;
     * after the barrier all slots hold round i. Catches a barrier that lets a
     * PE through early. */
    for (int round = 1; round <= 200; round++) {
        for (int pe = 0; pe < np; pe++)
            shmem_long_p(&slots[(size_t)me * 200 + (size_t)round - 1], round * 10 + me, pe);
        if (round % 2)
            shmem_barrier_all();
        else {
            shmem_quiet();
            shmem_sync_all();
        }
        for (int pe = 0; pe < np; pe++)
            CHECK(slots[(size_t)pe * 200 + (size_t)round - 1] == round * 10 + pe,
                  "round %d slot of PE %d = %ld", round, pe,
                  slots[(size_t)pe * 200 + (size_t)round - 1]);
    }

    /* ring token: wait_until on a long, many laps */
    if (np > 1) {
        for (long lap = 1; lap <= 300; lap++) {
            if (me == 0) {
                shmem_long_p(&flags[0], lap, to);
                shmem_long_wait_until(&flags[0], SHMEM_CMP_EQ, lap);
            } else {
                shmem_long_wait_until(&flags[0], SHMEM_CMP_GE, lap);
                shmem_long_p(&flags[0], lap, to);
            }
        }
    }
    shmem_barrier_all();

    /* data then fence then flag: the flag's arrival implies the data's */
    int *data = shmem_malloc(4096 * sizeof(int));
    int src[4096];
    test_fill(src, sizeof src, me, 9);
    shmem_barrier_all();
    shmem_int_put(data, src, 4096, to);
    shmem_fence();
    shmem_int_p(&iflag, 1, to);
    shmem_int_wait_until(&iflag, SHMEM_CMP_NE, 0);
    CHECK(test_verify(data, sizeof src, from, 9, NULL), "data not there when flag seen");

    /* test: not yet, then yes */
    shmem_barrier_all();
    CHECK(shmem_uint64_test(&u64flag, SHMEM_CMP_GT, 5) == 0, "test true too early");
    shmem_barrier_all();
    shmem_uint64_atomic_set(&u64flag, 6, to);
    while (!shmem_uint64_test(&u64flag, SHMEM_CMP_GT, 5))
        ;
    CHECK(u64flag == 6, "u64flag %llu", (unsigned long long)u64flag);
    /* generic form */
    shmem_wait_until(&u64flag, SHMEM_CMP_LE, 6);
    CHECK(shmem_test(&iflag, SHMEM_CMP_EQ, 1), "generic test");

    /* C11 shmem_sync(team) and the active-set shmem_sync side by side */
    static long psync[SHMEM_SYNC_SIZE];
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    CHECK(shmem_sync(SHMEM_TEAM_WORLD) == 0, "shmem_sync(team)");
    shmem_sync(0, 0, np, psync);
    shmem_pcontrol(1);

    shmem_barrier_all();
    shmem_free(data);
    shmem_free(slots);
    shmem_finalize();
    return 0;
}
