/* Collective latency benchmark in plain OpenSHMEM (only shmem.h): the
 * active-set collectives (broadcast64, collect64, fcollect64, alltoall64,
 * long_sum_to_all) and barrier_all, which both ushmem and Open MPI's OSHMEM
 * (OpenSHMEM 1.4) provide, so one source builds with ushcc and oshcc.
 *
 * Every PE takes part; PE 0 prints the mean time per call in microseconds.
 * Each timed call is followed by shmem_barrier_all (the spec's condition for
 * reusing pSync), so every number includes one barrier, for both libraries.
 * Each size is verified once, so no speed is reported for a wrong result.
 * Usage: shmem_coll_bench [-s max_bytes] [-q] */
#define _POSIX_C_SOURCE 200809L

#include <shmem.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long psync[SHMEM_REDUCE_SYNC_SIZE];
static long *pwrk; /* symmetric work array for sum_to_all */

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void fail(const char *what, size_t n)
{
    fprintf(stderr, "PE %d: %s: wrong result at %zu bytes\n", shmem_my_pe(), what, n);
    shmem_global_exit(1);
}

static int iters_for(size_t bytes, int quick)
{
    int it = bytes <= 1024 ? 2000 : bytes <= 65536 ? 300 : 40;
    return quick ? (it / 10 > 5 ? it / 10 : 5) : it;
}

typedef enum { BCAST, COLLECT, FCOLLECT, ALLTOALL, SUM } op_t;
static const char *const op_names[] = {"broadcast64", "collect64", "fcollect64", "alltoall64",
                                       "long_sum_to_all"};

/* One call of op with nelems 64-bit elements per PE. */
static void run_op(op_t op, int64_t *dst, int64_t *src, size_t nelems, int np)
{
    switch (op) {
    case BCAST: shmem_broadcast64(dst, src, nelems, 0, 0, 0, np, psync); break;
    case COLLECT: shmem_collect64(dst, src, nelems, 0, 0, np, psync); break;
    case FCOLLECT: shmem_fcollect64(dst, src, nelems, 0, 0, np, psync); break;
    case ALLTOALL: shmem_alltoall64(dst, src, nelems, 0, 0, np, psync); break;
    case SUM:
        shmem_long_sum_to_all((long *)dst, (long *)src, (int)nelems, 0, 0, np, pwrk, psync);
        break;
    }
    /* pSync may only be reused after every PE is done with it. */
    shmem_barrier_all();
}

static void verify(op_t op, const int64_t *dst, size_t nelems, int me, int np)
{
    for (size_t i = 0; i < nelems; i++) {
        int64_t want;
        switch (op) {
        case BCAST:
            if (me == 0)
                return; /* the root's dest is not written */
            want = (int64_t)i * 7;
            if (dst[i] != want)
                fail(op_names[op], nelems * 8);
            break;
        case COLLECT:
        case FCOLLECT:
            for (int pe = 0; pe < np; pe++)
                if (dst[(size_t)pe * nelems + i] != (int64_t)pe * 1000003 + (int64_t)i)
                    fail(op_names[op], nelems * 8);
            break;
        case ALLTOALL:
            for (int pe = 0; pe < np; pe++)
                if (dst[(size_t)pe * nelems + i] !=
                    ((int64_t)pe * 1000003 + (int64_t)me * 7919 + (int64_t)i))
                    fail(op_names[op], nelems * 8);
            break;
        case SUM:
            want = 0;
            for (int pe = 0; pe < np; pe++)
                want += (int64_t)pe * 1000003 + (int64_t)i;
            if (dst[i] != want)
                fail(op_names[op], nelems * 8);
            break;
        }
    }
}

static void fill(op_t op, int64_t *src, size_t nelems, int me, int np)
{
    if (op == ALLTOALL) {
        for (int pe = 0; pe < np; pe++)
            for (size_t i = 0; i < nelems; i++)
                src[(size_t)pe * nelems + i] =
                    (int64_t)me * 1000003 + (int64_t)pe * 7919 + (int64_t)i;
    } else if (op == BCAST) {
        for (size_t i = 0; i < nelems; i++)
            src[i] = me == 0 ? (int64_t)i * 7 : -1;
    } else {
        for (size_t i = 0; i < nelems; i++)
            src[i] = (int64_t)me * 1000003 + (int64_t)i;
    }
}

int main(int argc, char **argv)
{
    size_t max_bytes = 1 << 20;
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-q"))
            quick = 1;
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            char *end;
            max_bytes = strtoull(argv[++i], &end, 0);
            max_bytes <<= *end == 'K' ? 10 : *end == 'M' ? 20 : 0;
        }
    }
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    int me = shmem_my_pe(), np = shmem_n_pes();
    size_t max_elems = max_bytes / 8;
    int64_t *src = shmem_malloc(max_elems * 8 * (size_t)np);
    int64_t *dst = shmem_malloc(max_elems * 8 * (size_t)np);
    /* sum_to_all's work array must hold max(nreduce/2+1, MIN_WRKDATA) */
    long *wrk = shmem_malloc((max_elems / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE) * sizeof(long));
    pwrk = wrk;
    if (!src || !dst || !wrk) {
        if (me == 0)
            fprintf(stderr, "shmem_coll_bench: cannot allocate; raise SHMEM_SYMMETRIC_SIZE\n");
        shmem_global_exit(3);
    }
    if (me == 0)
        printf("# shmem_coll_bench npes %d max_size %zu quick %d\n", np, max_bytes, quick);

    shmem_barrier_all();
    int it = quick ? 2000 : 20000;
    for (int i = 0; i < 100; i++)
        shmem_barrier_all();
    double t0 = now_us();
    for (int i = 0; i < it; i++)
        shmem_barrier_all();
    double t = (now_us() - t0) / it;
    if (me == 0)
        printf("# section barrier_all\n# cols npes lat_us iters\n%-8d %12.4f %10d\n", np, t, it);

    for (op_t op = BCAST; op <= SUM; op++) {
        if (me == 0)
            printf("# section %s\n# cols size_B lat_us iters\n", op_names[op]);
        for (size_t bytes = 8; bytes <= max_bytes; bytes *= quick ? 16 : 4) {
            size_t n = bytes / 8;
            int iters = iters_for(bytes * (size_t)np, quick);
            fill(op, src, n, me, np);
            shmem_barrier_all();
            run_op(op, dst, src, n, np); /* warm-up + check */
            verify(op, dst, n, me, np);
            shmem_barrier_all();
            t0 = now_us();
            for (int i = 0; i < iters; i++)
                run_op(op, dst, src, n, np);
            t = (now_us() - t0) / iters;
            if (me == 0)
                printf("%-12zu %12.4f %10d\n", bytes, t, iters);
        }
    }
    shmem_free(wrk);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
