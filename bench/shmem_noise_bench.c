/* shmem_noise_bench: wait behaviour under load, in plain OpenSHMEM 1.4.
 *
 * Only <shmem.h> is used, so the same file builds with ushcc and with Open MPI's
 * oshcc (scripts/bench_noise.sh runs both, with busy background processes).
 *
 *   pingpong  PE 0 and PE 1: shmem_long_p + shmem_long_wait_until, one round
 *             trip per iteration, every iteration timed on PE 0. With 4 PEs,
 *             PEs 2 and 3 run their own ping-pong at the same time (the load
 *             a job puts on itself), not timed.
 *   barrier   shmem_barrier_all on all PEs, every iteration timed on PE 0.
 *   stuck     PE 1 sleeps for -t seconds before it sets PE 0's flag; PE 0 waits
 *             in wait_until and the other PEs in barrier_all; each PE reports
 *             the CPU seconds its wait used (what a hung job costs).
 *
 * Output (stdout, PE 0), one line per test, for scripts:
 *   "pingpong iters N median_ns M p99_ns P max_ns X mean_ns A"   (round trip)
 *   "barrier ..." likewise, "stuck pe K wait_s W cpu_s C" per PE.
 * The ping-pong data is checked: every value PE 0 receives must be the one it
 * sent, or the job ends with shmem_global_exit(1). */
#define _POSIX_C_SOURCE 200809L

#include <shmem.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void report(const char *name, int64_t *t, long n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_i64);
    double sum = 0;
    for (long i = 0; i < n; i++)
        sum += (double)t[i];
    long p99 = (long)((double)n * 0.99);
    if (p99 >= n)
        p99 = n - 1;
    printf("%s iters %ld median_ns %lld p99_ns %lld max_ns %lld mean_ns %.0f\n", name, n,
           (long long)t[n / 2], (long long)t[p99], (long long)t[n - 1], sum / (double)n);
    fflush(stdout);
}

static long *flags; /* symmetric: [0] ping, [1] pong */

static void pingpong(long iters, int64_t *t)
{
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int partner = me ^ 1;
    if (partner >= npes)
        return;
    int leader = (me & 1) == 0;
    for (long i = 1; i <= iters; i++) {
        if (leader) {
            int64_t t0 = now_ns();
            shmem_long_p(&flags[0], i, partner);
            shmem_long_wait_until(&flags[1], SHMEM_CMP_GE, i);
            int64_t t1 = now_ns();
            if (flags[1] != i) {
                fprintf(stderr, "pingpong: PE %d got %ld, expected %ld\n", me, flags[1], i);
                shmem_global_exit(1);
            }
            if (t)
                t[i - 1] = t1 - t0;
        } else {
            shmem_long_wait_until(&flags[0], SHMEM_CMP_GE, i);
            shmem_long_p(&flags[1], flags[0], partner);
        }
    }
}

int main(int argc, char **argv)
{
    long iters = 100000;
    int stuck_s = 0, run_pp = 1, run_bar = 1;
    int c;
    while ((c = getopt(argc, argv, "n:t:o:")) != -1) {
        if (c == 'n')
            iters = atol(optarg);
        else if (c == 't')
            stuck_s = atoi(optarg);
        else if (c == 'o') {
            run_pp = strstr(optarg, "pingpong") != NULL;
            run_bar = strstr(optarg, "barrier") != NULL;
        } else {
            fprintf(stderr, "usage: %s [-n iters] [-o pingpong,barrier] [-t stuck_seconds]\n",
                    argv[0]);
            return 2;
        }
    }
    if (iters < 1)
        iters = 1;
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    flags = shmem_calloc(2, sizeof(long));
    int64_t *t = me == 0 ? malloc((size_t)iters * sizeof *t) : NULL;
    if (!flags || (me == 0 && !t)) {
        fprintf(stderr, "PE %d: out of memory\n", me);
        shmem_global_exit(1);
    }
    if (npes < 2) {
        if (me == 0)
            fprintf(stderr, "shmem_noise_bench needs at least 2 PEs\n");
        shmem_finalize();
        return 2;
    }

    if (stuck_s > 0) {
        static double res[2]; /* symmetric: wait seconds, CPU seconds */
        shmem_barrier_all();
        double c0 = cpu_s();
        int64_t t0 = now_ns();
        if (me == 1) {
            sleep((unsigned)stuck_s);
            shmem_long_p(&flags[1], 1, 0);
        } else if (me == 0) {
            shmem_long_wait_until(&flags[1], SHMEM_CMP_EQ, 1);
        }
        shmem_barrier_all();
        res[0] = (double)(now_ns() - t0) * 1e-9;
        res[1] = cpu_s() - c0;
        shmem_barrier_all();
        if (me == 0) {
            for (int pe = 0; pe < npes; pe++) {
                double r[2];
                shmem_getmem(r, res, sizeof r, pe);
                printf("stuck pe %d wait_s %.2f cpu_s %.3f\n", pe, r[0], r[1]);
            }
        }
        shmem_barrier_all();
    }

    if (run_pp) {
        pingpong(iters / 10 + 1, NULL); /* warm up */
        flags[0] = flags[1] = 0;
        shmem_barrier_all();
        pingpong(iters, t);
        shmem_barrier_all();
        if (me == 0)
            report("pingpong", t, iters);
        flags[0] = flags[1] = 0;
        shmem_barrier_all();
    }
    if (run_bar) {
        long bi = iters / 4 + 1;
        for (long i = 0; i < bi / 10 + 1; i++)
            shmem_barrier_all();
        for (long i = 0; i < bi; i++) {
            int64_t t0 = now_ns();
            shmem_barrier_all();
            if (t)
                t[i] = now_ns() - t0;
        }
        if (me == 0)
            report("barrier", t, bi);
    }
    free(t);
    shmem_free(flags);
    shmem_finalize();
    return 0;
}
