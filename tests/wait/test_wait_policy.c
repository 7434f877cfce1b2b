/* The wait policy (docs/waits.md) through shmemx_wait_stats: a long wait ends
 * in sleeps and costs little CPU, its length and call are recorded, reset
 * clears the counters, NULL is refused; a wait a peer ends quickly never gets
 * past spinning; values received are checked. With peers over MPI a wait
 * never sleeps (it drives the progress of RMA aimed at its PE; the long wait
 * lasts 1.3 s there, past the 1 s after which waits used to sleep), unless
 * USHMEM_WAIT_SPIN_US is set (ctest mpi/wait_spin_set).
 * USHMEM_TEST_NPES: 2 3 */
#include <shmemx.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
    static long flag, echo;
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(shmemx_wait_stats(NULL) == SHMEMX_ERR_INVALID, "NULL must be refused");
    shmem_barrier_all();
    shmemx_wait_stats_reset();
    shmemx_wait_stats_t s;
    CHECK(shmemx_wait_stats(&s) == 0, "wait stats: %llu slow waits, %llu sleeps, longest %llu ns",
          s.slow_waits, s.sleeps, s.longest_ns);
    CHECK(s.slow_waits == 0 && s.sleeps == 0 && s.longest_ns == 0 && s.longest_call[0] == '\0',
          "wait stats: %llu slow waits, %llu sleeps, longest %llu ns", s.slow_waits, s.sleeps,
          s.longest_ns);

    /* A long wait: PE 1 sets PE 0's flag after 400 ms (1.3 s over MPI). */
    const int over_mpi = !test_all_mapped();
    /* with peers over MPI a wait never sleeps unless USHMEM_WAIT_SPIN_US says
     * when (docs/waits.md) */
    const int may_sleep = !over_mpi || getenv("USHMEM_WAIT_SPIN_US") != NULL;
    long value = (long)(test_mix(test_seed()) >> 2) + 1;
    if (me == 1) {
        usleep(over_mpi ? 1300000 : 400000);
        shmem_long_p(&flag, value, 0);
    } else if (me == 0) {
        double c0 = cpu_now(), w0 = wall_now();
        shmem_long_wait_until(&flag, SHMEM_CMP_EQ, value);
        double cpu = cpu_now() - c0, wall = wall_now() - w0;
        CHECK(flag == value, "got %ld, want %ld", flag, value);
        CHECK(shmemx_wait_stats(&s) == 0,
              "wait stats: %llu slow waits, %llu sleeps, longest %llu ns", s.slow_waits, s.sleeps,
              s.longest_ns);
        printf("PE 0: waited %.3f s using %.3f CPU s: %llu slow waits, %llu sleeps, "
               "longest %.3f ms in %s\n",
               wall, cpu, s.slow_waits, s.sleeps, (double)s.longest_ns * 1e-6, s.longest_call);
        CHECK(wall >= 0.35, "the wait ended after %.3f s, before PE 1 wrote", wall);
        CHECK(s.slow_waits >= 1, "wait stats: %llu slow waits, %llu sleeps, longest %llu ns",
              s.slow_waits, s.sleeps, s.longest_ns);
        CHECK(may_sleep ? s.sleeps >= 1 : s.sleeps == 0,
              "wait stats: %llu slow waits, %llu sleeps, longest %llu ns", s.slow_waits, s.sleeps,
              s.longest_ns);
        CHECK(s.longest_ns >= 300000000ull && s.longest_ns <= (unsigned long long)(wall * 1e9) + 1,
              "wait stats: %llu slow waits, %llu sleeps, longest %llu ns", s.slow_waits, s.sleeps,
              s.longest_ns);
        CHECK(strcmp(s.longest_call, "shmem_long_wait_until") == 0, "longest wait in %s",
              s.longest_call);
        /* A sleeping wait does not burn the core: spinning it through would
         * cost the whole wait in CPU time. */
        CHECK(!may_sleep || cpu < 0.5 * wall, "a %.3f s wait used %.3f CPU s", wall, cpu);
    }
    shmem_barrier_all();

    /* Quick waits: a ring of short ping-pongs with data every PE checks. */
    shmemx_wait_stats_reset();
    for (int round = 1; round <= 200; round++) {
        long v = (long)(test_mix(test_seed() ^ (uint64_t)round) >> 8) * 2 + 1;
        if (me == 0) {
            shmem_long_p(&echo, v, 1 % n);
            shmem_long_wait_until(&flag, SHMEM_CMP_EQ, v);
        } else {
            shmem_long_wait_until(&echo, SHMEM_CMP_EQ, v);
            shmem_long_p(me == n - 1 ? &flag : &echo, v, (me + 1) % n);
        }
        shmem_barrier_all();
    }
    CHECK(shmemx_wait_stats(&s) == 0, "wait stats: %llu slow waits, %llu sleeps, longest %llu ns",
          s.slow_waits, s.sleeps, s.longest_ns);
    CHECK(s.longest_ns < 5000000000ull, "wait stats: %llu slow waits, %llu sleeps, longest %llu ns",
          s.slow_waits, s.sleeps, s.longest_ns);
    shmem_finalize();
    return 0;
}
