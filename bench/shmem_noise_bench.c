/* shmem_noise_bench: wait behaviour under load, in plain OpenSHMEM 1.4.
 *
 * Only <shmem.h> is used, so the same file builds with ushcc and with Open MPI's
 * oshcc (scripts/bench_noise.sh runs both, with busy background processes).
 *
 *   pingpong  PE 0 and PE 1: shmem_long_p + shmem_long_wait_until, one round
 *             trip per iteration, every iteration timed on PE 0; -n round
 *             trips at most, and at most -d seconds (a loaded run ends on time). With 4 PEs,
 *             PEs 2 and 3 run their own ping-pong at the same time (the load
 *             a job puts on itself), not timed.
 *   barrier   shmem_barrier_all on all PEs, every iteration timed on PE 0
 *             (as many as fit in about -d seconds, at most n/4).
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

/* One ping-pong run: at most `iters` round trips, and no more than `max_ns`
 * (the leader stops early by sending a negative ping, so a heavily loaded run
 * still ends on time). Returns the round trips done (leaders) or 0. */
static long pingpong(long iters, int64_t max_ns, int64_t *t)
{
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int partner = me ^ 1;
    if (partner >= npes)
        return 0;
    if ((me & 1) == 0) {
        int64_t start = now_ns();
        long i;
        for (i = 1; i <= iters; i++) {
            int64_t t0 = now_ns();
            long v = (t0 - start > max_ns || i == iters) ? -i : i; /* negative: last one */
            shmem_long_p(&flags[0], v, partner);
            shmem_long_wait_until(&flags[1], SHMEM_CMP_EQ, v);
            int64_t t1 = now_ns();
            if (t)
                t[i - 1] = t1 - t0;
            if (v < 0)
                break;
        }
        return i > iters ? iters : i;
    }
    long last = 0;
    for (;;) {
        shmem_long_wait_until(&flags[0], SHMEM_CMP_NE, last);
        long v = flags[0];
        if (v != -last && v != last + 1 && v != -(last + 1)) {
            fprintf(stderr, "pingpong: PE %d got %ld after %ld\n", me, v, last);
            shmem_global_exit(1);
        }
        shmem_long_p(&flags[1], v, partner);
        if (v < 0)
            return 0;
        last = v;
    }
}

int main(int argc, char **argv)
{
    long iters = 100000;
    int64_t max_ns = (int64_t)3 * 1000000000; /* per test */
    int stuck_s = 0, run_pp = 1, run_bar = 1;
    int c;
    while ((c = getopt(argc, argv, "n:t:o:d:")) != -1) {
        if (c == 'n')
            iters = atol(optarg);
        else if (c == 'd')
            max_ns = (int64_t)(atof(optarg) * 1e9);
        else if (c == 't')
            stuck_s = atoi(optarg);
        else if (c == 'o') {
            run_pp = strstr(optarg, "pingpong") != NULL;
            run_bar = strstr(optarg, "barrier") != NULL;
        } else {
            fprintf(stderr,
                    "usage: %s [-n iters] [-d max_seconds_per_test] [-o pingpong,barrier] [-t "
                    "stuck_seconds]\n",
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

    static long nbar; /* symmetric: barrier iterations, set by PE 0 */
    if (run_pp) {
        pingpong(iters / 10 + 1, max_ns / 10, NULL); /* warm up */
        flags[0] = flags[1] = 0;
        shmem_barrier_all();
        long done = pingpong(iters, max_ns, t);
        shmem_barrier_all();
        if (me == 0)
            report("pingpong", t, done);
        flags[0] = flags[1] = 0;
        shmem_barrier_all();
    }
    if (run_bar) {
        /* As many barriers as fit in about max_ns, measured on PE 0 over a
         * first batch, the same count on every PE. */
        if (me == 0) {
            int64_t t0 = now_ns();
            for (int i = 0; i < 64; i++)
                shmem_barrier_all();
            int64_t per = (now_ns() - t0) / 64 + 1;
            long k = (long)(max_ns / per);
            nbar = k < 10 ? 10 : k > iters / 4 + 1 ? iters / 4 + 1 : k;
            for (int pe = 1; pe < npes; pe++)
                shmem_long_p(&nbar, nbar, pe);
        } else {
            for (int i = 0; i < 64; i++)
                shmem_barrier_all();
        }
        shmem_barrier_all();
        for (long i = 0; i < nbar; i++) {
            int64_t t0 = now_ns();
            shmem_barrier_all();
            if (t)
                t[i] = now_ns() - t0;
        }
        if (me == 0)
            report("barrier", t, nbar);
    }
    free(t);
    shmem_free(flags);
    shmem_finalize();
    return 0;
}
