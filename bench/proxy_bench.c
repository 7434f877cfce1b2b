/* Host API on symmetric memory of PE 1, timed from PE 0: the staged proxy
 * (PE 1 on another pretend host: mpirun -n 2 with USHMEM_FAKE_HOSTS=2) or a
 * mapped peer (same run without it). With a GPU bound (USHMEM_DEVICE=0) the
 * memory is the device heap; without one, host memory (add
 * USHMEM_PROXY_HOST=1 to send it through the proxy). Plain OpenSHMEM.
 *
 * Rows (median of REPS timed batches, microseconds or GB/s):
 *   put8+quiet     8-byte put then shmem_quiet
 *   get8           8-byte blocking get
 *   fetch_add      64-bit fetch-add on PE 1's word
 *   put_signal rtt PE 0 puts 8 B + signal to PE 1, PE 1 answers the same way
 *   put bw N       N-byte puts back to back, one quiet per batch
 * Every row first checks its data once (random bytes, read back). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <shmem.h>

#define REPS 7

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v)
{
    qsort(v, REPS, sizeof *v, cmp);
    return v[REPS / 2];
}

int main(int argc, char **argv)
{
    size_t maxsz = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)64 << 20;
    shmem_init();
    int me = shmem_my_pe();
    if (shmem_n_pes() != 2) {
        if (me == 0)
            fprintf(stderr, "proxy_bench: run with 2 PEs\n");
        shmem_finalize();
        return 2;
    }
    char *buf = shmem_malloc(maxsz);
    uint64_t *sig = shmem_calloc(2, sizeof *sig);
    uint64_t *word = shmem_calloc(1, sizeof *word);
    char *host = malloc(maxsz), *back = malloc(maxsz);
    if (!buf || !sig || !word || !host || !back) {
        fprintf(stderr, "PE %d: allocation failed\n", me);
        shmem_global_exit(1);
    }
    for (size_t i = 0; i < maxsz; i++)
        host[i] = (char)(i * 131 + 7);
    const char *route = shmem_ptr(buf, 1 - me) ? "mapped" : "unmapped";
    double t[REPS];
    shmem_barrier_all();
    if (me == 0) {
        /* check once: what we put comes back */
        shmem_putmem(buf, host, maxsz, 1);
        shmem_quiet();
        shmem_getmem(back, buf, maxsz, 1);
        if (memcmp(back, host, maxsz)) {
            fprintf(stderr, "PE 0: data read back differs\n");
            shmem_global_exit(1);
        }
        printf("# peer %s; memory: %s\n", route, getenv("USHMEM_DEVICE") ? "device" : "host");
        int iters = 2000;
        for (int r = 0; r < REPS; r++) {
            double t0 = now_us();
            for (int i = 0; i < iters; i++) {
                shmem_putmem(buf, host, 8, 1);
                shmem_quiet();
            }
            t[r] = (now_us() - t0) / iters;
        }
        printf("put8+quiet_us %.3f\n", median(t));
        for (int r = 0; r < REPS; r++) {
            double t0 = now_us();
            for (int i = 0; i < iters; i++)
                shmem_getmem(back, buf, 8, 1);
            t[r] = (now_us() - t0) / iters;
        }
        printf("get8_us %.3f\n", median(t));
        uint64_t expect = 0;
        for (int r = 0; r < REPS; r++) {
            double t0 = now_us();
            for (int i = 0; i < iters; i++)
                if (shmem_uint64_atomic_fetch_add(word, 1, 1) != expect++) {
                    fprintf(stderr, "PE 0: fetch_add returned a wrong value\n");
                    shmem_global_exit(1);
                }
            t[r] = (now_us() - t0) / iters;
        }
        printf("fetch_add_us %.3f\n", median(t));
    }
    shmem_barrier_all();
    /* put-with-signal ping-pong */
    int iters = 1000;
    uint64_t k = 0;
    for (int r = 0; r < REPS; r++) {
        shmem_barrier_all();
        double t0 = now_us();
        for (int i = 0; i < iters; i++) {
            k++;
            if (me == 0) {
                shmem_putmem_signal(buf, host, 8, &sig[0], k, SHMEM_SIGNAL_SET, 1);
                shmem_uint64_wait_until(&sig[1], SHMEM_CMP_EQ, k);
            } else {
                shmem_uint64_wait_until(&sig[0], SHMEM_CMP_EQ, k);
                shmem_putmem_signal(buf, host, 8, &sig[1], k, SHMEM_SIGNAL_SET, 0);
            }
        }
        t[r] = (now_us() - t0) / iters;
    }
    if (me == 0)
        printf("put_signal_rtt_us %.3f\n", median(t));
    shmem_barrier_all();
    if (me == 0) {
        for (size_t n = 8; n <= maxsz; n *= 8) {
            size_t total = n < ((size_t)64 << 20) ? (size_t)64 << 20 : n;
            int batch = (int)(total / n);
            if (batch > 20000)
                batch = 20000;
            for (int r = 0; r < REPS; r++) {
                double t0 = now_us();
                for (int i = 0; i < batch; i++)
                    shmem_putmem(buf, host, n, 1);
                shmem_quiet();
                t[r] = (now_us() - t0);
                t[r] = (double)n * batch / t[r] / 1e3; /* GB/s */
            }
            printf("put_bw_GBps %zu %.3f\n", n, median(t));
            if (n < 1024 * 1024 && n * 8 > 1024 * 1024 && maxsz >= 1024 * 1024)
                n = 1024 * 1024 / 8; /* always a 1 MiB row */
        }
    }
    shmem_barrier_all();
    free(host);
    free(back);
    shmem_free(word);
    shmem_free(sig);
    shmem_free(buf);
    shmem_finalize();
    return 0;
}
