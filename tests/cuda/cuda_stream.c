/* Every stream-ordered operation, with random data checked on every PE:
 * putmem/getmem, putmem_signal (SET, ADD) with signal_wait_until for every
 * comparison (device and host signals), signal_op (SET, ADD), barrier_all/
 * sync_all/team barrier and sync, quiet, alltoallmem, broadcastmem, fcollectmem, reductions
 * (in place too); host memory with a stream and device memory with the NULL
 * stream. Run with 2 and 4 PEs on one GPU (USHMEM_DEVICE=0). */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <unistd.h>

#include "cuda_test.h"

static uint64_t rnd(uint64_t *st)
{
    *st = test_mix(*st);
    return *st;
}

/* Check len bytes at device or host address p against test_fill(pe, round). */
static void verify(const void *p, size_t len, int pe, int round, const char *what)
{
    size_t bad = 0;
    void *h = tcu_to_host(p, len);
    CHECK(test_verify(h, len, pe, round, &bad), "%s: %zu bytes from PE %d (round %d): byte %zu",
          what, len, pe, round, bad);
    free(h);
}

/* Device copy of test_fill(pe, round) into dst. */
static void fill_dev(void *dst, size_t len, int pe, int round)
{
    void *h = malloc(len ? len : 1);
    test_fill(h, len, pe, round);
    tcu_copy(dst, h, len);
    free(h);
}

/* The signalling side runs on its own host thread, so the waiting side can
 * enqueue its wait first whatever the driver does at enqueue time. */
typedef struct {
    CUcontext ctx;
    char *a, *b;
    size_t n;
    uint64_t *sg, v1, v2;
    int op, pe;
} putter_t;

static void *putter_main(void *arg)
{
    putter_t *p = arg;
    TCU(tcu.cuCtxSetCurrent(p->ctx));
    CUstream s2 = tcu_stream();
    usleep(1000);
    shmemx_putmem_signal_on_stream(p->a, p->b, p->n, p->sg, p->v1, p->op, p->pe, s2);
    if (p->op == SHMEM_SIGNAL_ADD && p->v2)
        shmemx_putmem_signal_on_stream(p->a, p->b, p->n, p->sg, p->v2, SHMEM_SIGNAL_ADD, p->pe, s2);
    TCU(tcu.cuStreamSynchronize(s2));
    TCU(tcu.cuStreamDestroy(s2));
    return NULL;
}

static void section(const char *what)
{
    if (getenv("USHMEM_TEST_VERBOSE"))
        fprintf(stderr, "PE %d: %s\n", shmem_my_pe(), what);
}

static int64_t val_i64(int pe, size_t i)
{
    return (int64_t)(test_mix(test_seed() ^ ((uint64_t)pe << 40) ^ i) % 2001) - 1000;
}

int main(void)
{
    if (tcu_load() != 0)
        return 77;
    int provided = 0;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    CHECK(provided == SHMEM_THREAD_MULTIPLE, "thread level %d", provided);
    int me = shmem_my_pe(), np = shmem_n_pes();
    CUcontext ctx = NULL;
    TCU(tcu.cuCtxGetCurrent(&ctx));
    int next = (me + 1) % np, prev = (me + np - 1) % np;
    CUstream s = tcu_stream();
    const size_t MAXN = 1 << 20;
    uint64_t st = test_seed() ^ 0x5157;

    char *a = shmem_malloc(MAXN), *b = shmem_malloc(MAXN);
    char *hbuf = shmem_malloc_with_hints(MAXN, SHMEMX_MALLOC_HOST);
    char *hsrc = malloc(MAXN), *pin = NULL;
    /* In-stream copies to host memory go to pinned memory: a device-to-pageable
     * cuMemcpyAsync returns only once the copy is done (CUDA's rule). */
    TCU(tcu.cuMemHostAlloc((void **)&pin, MAXN, CU_MEMHOSTALLOC_PORTABLE));
    CHECK(a && b && hbuf && hsrc, "allocation");

    /* ---- putmem / getmem on a stream, random sizes and offsets ---- */
    for (int round = 0; round < 16; round++) {
        size_t n = 1 + rnd(&st) % (round < 8 ? 8192 : MAXN - 1);
        size_t off = rnd(&st) % (MAXN - n + 1);
        fill_dev(b, n, me, round);
        shmemx_barrier_all_on_stream(s);
        if (round % 2)
            shmemx_putmem_on_stream(a + off, b, n, next, s); /* device source */
        else {
            test_fill(hsrc, n, me, round);
            shmemx_putmem_on_stream(a + off, hsrc, n, next, s); /* pageable host source */
        }
        shmemx_barrier_all_on_stream(s);
        TCU(tcu.cuStreamSynchronize(s));
        verify(a + off, n, prev, round, "putmem_on_stream");
        shmemx_getmem_on_stream(b, a + off, n, next, s);
        TCU(tcu.cuStreamSynchronize(s));
        verify(b, n, me, round, "getmem_on_stream");
        shmemx_barrier_all_on_stream(s);
    }
    TCU(tcu.cuStreamSynchronize(s));
    shmem_barrier_all();

    section("signals");
    /* ---- put with signal, then waits with every comparison ---- */
    uint64_t *sig = shmem_calloc(16, sizeof(uint64_t));
    uint64_t *hsig = shmem_malloc_with_hints(16 * sizeof(uint64_t), SHMEMX_MALLOC_HOST);
    memset(hsig, 0, 16 * sizeof(uint64_t));
    struct {
        int cmp;
        uint64_t init, v1, v2; /* signal starts at init; SET v1, or ADD v1 then v2 */
        int op;
        uint64_t wait;
    } cases[] = {
        {SHMEM_CMP_EQ, 0, 5, 0, SHMEM_SIGNAL_SET, 5},
        {SHMEM_CMP_GE, 0, 3, 3, SHMEM_SIGNAL_ADD, 6},
        {SHMEM_CMP_GT, 0, 10, 0, SHMEM_SIGNAL_SET, 9},
        {SHMEM_CMP_NE, 0, 1, 0, SHMEM_SIGNAL_SET, 0},
        {SHMEM_CMP_LT, 100, 3, 0, SHMEM_SIGNAL_SET, 50},
        {SHMEM_CMP_LE, 100, 50, 0, SHMEM_SIGNAL_SET, 50},
        {SHMEM_CMP_GE, 1, 2, 0, SHMEM_SIGNAL_ADD, 3},
    };
    int ncases = (int)(sizeof cases / sizeof cases[0]);
    for (int host = 0; host < 2; host++) {
        for (int c = 0; c < ncases; c++) {
            int round = 100 + host * 10 + c;
            size_t n = 4096 + (size_t)c * 1000;
            uint64_t *sg = host ? &hsig[c] : &sig[c];
            if (host)
                *sg = cases[c].init;
            else
                tcu_copy(sg, &cases[c].init, 8);
            fill_dev(b, n, me, round);
            shmem_barrier_all(); /* everyone's signal is initialized */
            /* The waiting side enqueues first (the putter sleeps 1 ms): its
             * stream must block until the signal condition holds. */
            putter_t pt = {ctx, a, b, n, sg, cases[c].v1, cases[c].v2, cases[c].op, next};
            pthread_t th;
            CHECK(pthread_create(&th, NULL, putter_main, &pt) == 0, "pthread_create");
            /* compute-sanitizer serializes the driver calls of a process, so
             * a wait enqueued first would hold up our own putter: there, put
             * first (the waits are still checked for correctness). */
            if (getenv("USHMEM_TEST_PUT_FIRST"))
                pthread_join(th, NULL);
            shmemx_signal_wait_until_on_stream(sg, cases[c].cmp, cases[c].wait, s);
            TCU(tcu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)pin, (CUdeviceptr)(uintptr_t)a, n, s));
            TCU(tcu.cuStreamSynchronize(s));
            if (!getenv("USHMEM_TEST_PUT_FIRST"))
                pthread_join(th, NULL);
            size_t bad = 0;
            CHECK(test_verify(pin, n, prev, round, &bad),
                  "%s signal, case %d (cmp %d): data not there after the wait (byte %zu)",
                  host ? "host" : "device", c, cases[c].cmp, bad);
            uint64_t want = cases[c].op == SHMEM_SIGNAL_SET
                                ? cases[c].v1
                                : cases[c].init + cases[c].v1 + cases[c].v2;
            uint64_t got;
            tcu_copy(&got, sg, 8);
            CHECK(got == want, "signal case %d: %llu, want %llu", c, (unsigned long long)got,
                  (unsigned long long)want);
            shmem_barrier_all();
        }
    }

    section("signal_op_on_stream");
    /* ---- the signal alone: every PE adds me + 1 to every PE's word 8 and sets
     * its next PE's word 9, on device and host memory, then the NULL stream on
     * host memory (now, in program order) ---- */
    for (int host = 0; host < 2; host++) {
        uint64_t *sg = host ? &hsig[8] : &sig[8];
        uint64_t zero[2] = {0, 0}, got[2];
        if (host)
            sg[0] = sg[1] = 0;
        else
            tcu_copy(sg, zero, sizeof zero);
        shmem_barrier_all();
        for (int pe = 0; pe < np; pe++)
            shmemx_signal_op_on_stream(&sg[0], (uint64_t)me + 1, SHMEM_SIGNAL_ADD, pe, s);
        shmemx_signal_op_on_stream(&sg[1], 100 + (uint64_t)me, SHMEM_SIGNAL_SET, next, s);
        shmemx_barrier_all_on_stream(s);
        TCU(tcu.cuStreamSynchronize(s));
        tcu_copy(got, sg, sizeof got);
        CHECK(got[0] == (uint64_t)np * (uint64_t)(np + 1) / 2,
              "signal_op_on_stream ADD on %s memory: %llu, want %llu", host ? "host" : "device",
              (unsigned long long)got[0],
              (unsigned long long)np * (unsigned long long)(np + 1) / 2);
        CHECK(got[1] == 100 + (uint64_t)prev, "signal_op_on_stream SET on %s memory: %llu, want %d",
              host ? "host" : "device", (unsigned long long)got[1], 100 + prev);
        shmem_barrier_all();
    }
    hsig[10] = 0;
    shmem_barrier_all();
    shmemx_signal_op_on_stream(&hsig[10], (uint64_t)me + 1, SHMEM_SIGNAL_ADD, next, NULL);
    shmem_barrier_all();
    CHECK(shmem_signal_fetch(&hsig[10]) == (uint64_t)prev + 1,
          "signal_op_on_stream ADD on host memory, NULL stream: %llu, want %d",
          (unsigned long long)shmem_signal_fetch(&hsig[10]), prev + 1);
    shmem_barrier_all();

    section("barriers");
    /* ---- barriers on a stream: every PE's slot on every PE each round ---- */
    uint64_t *slots = shmem_calloc((size_t)np, sizeof(uint64_t));
    uint64_t *vals = shmem_malloc(64 * sizeof(uint64_t));
    uint64_t hv[64];
    for (int r = 0; r < 64; r++)
        hv[r] = ((uint64_t)me << 32) | (uint64_t)r;
    tcu_copy(vals, hv, sizeof hv);
    uint64_t *seen = (uint64_t *)(void *)pin;
    for (int r = 1; r < 64; r++) {
        for (int pe = 0; pe < np; pe++)
            shmemx_putmem_on_stream(&slots[me], &vals[r], 8, pe, s);
        /* A sync does not complete earlier puts (OpenSHMEM 1.5, 9.9.3):
         * with members on other hosts a put may still be on its way when
         * the sync's signals, through other PEs, arrive. The sync rounds
         * quiet first. */
        if (r % 3 == 0) {
            shmemx_barrier_all_on_stream(s);
        } else if (r % 3 == 1) {
            shmemx_quiet_on_stream(s);
            shmemx_sync_all_on_stream(s);
        } else {
            shmemx_barrier_on_stream(SHMEM_TEAM_WORLD, s);
        }
        TCU(tcu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)seen, (CUdeviceptr)(uintptr_t)slots,
                              (size_t)np * 8, s));
        TCU(tcu.cuStreamSynchronize(s));
        for (int pe = 0; pe < np; pe++)
            CHECK(seen[pe] == (((uint64_t)pe << 32) | (uint64_t)r),
                  "stream barrier round %d: slot of PE %d = 0x%llx", r, pe,
                  (unsigned long long)seen[pe]);
        shmemx_barrier_all_on_stream(s);
    }
    shmemx_quiet_on_stream(s);

    /* team of the even PEs: barrier and sync on the team */
    shmem_team_t even = SHMEM_TEAM_INVALID;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (np + 1) / 2, NULL, 0, &even);
    if (even != SHMEM_TEAM_INVALID) {
        int tn = shmem_team_n_pes(even), tme = shmem_team_my_pe(even);
        for (int r = 1; r < 16; r++) {
            for (int j = 0; j < tn; j++)
                shmemx_putmem_on_stream(&slots[me], &vals[r], 8,
                                        shmem_team_translate_pe(even, j, SHMEM_TEAM_WORLD), s);
            if (r % 2) {
                shmemx_barrier_on_stream(even, s);
            } else {
                shmemx_quiet_on_stream(s); /* as above: a sync completes no puts */
                shmemx_team_sync_on_stream(even, s);
            }
            TCU(tcu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)seen, (CUdeviceptr)(uintptr_t)slots,
                                  (size_t)np * 8, s));
            TCU(tcu.cuStreamSynchronize(s));
            for (int j = 0; j < tn; j++) {
                int pe = 2 * j;
                CHECK(seen[pe] == (((uint64_t)pe << 32) | (uint64_t)r),
                      "team barrier round %d (team PE %d): slot of PE %d", r, tme, pe);
            }
            shmemx_team_sync_on_stream(even, s);
        }
    }
    TCU(tcu.cuStreamSynchronize(s));
    shmem_barrier_all();

    section("collectives");
    /* ---- alltoall, broadcast, fcollect on a stream ---- */
    size_t blk = 4096 + 24;
    char *csrc = shmem_malloc((size_t)np * blk), *cdst = shmem_malloc((size_t)np * blk);
    for (int j = 0; j < np; j++)
        fill_dev(csrc + (size_t)j * blk, blk, me, 200 + j);
    CHECK(shmemx_alltoallmem_on_stream(SHMEM_TEAM_WORLD, cdst, csrc, blk, s) == 0, "alltoall");
    TCU(tcu.cuStreamSynchronize(s));
    for (int j = 0; j < np; j++)
        verify(cdst + (size_t)j * blk, blk, j, 200 + me, "alltoallmem_on_stream");
    int root = np - 1;
    fill_dev(csrc, blk, me, 300);
    CHECK(shmemx_broadcastmem_on_stream(SHMEM_TEAM_WORLD, cdst, csrc, blk, root, s) == 0,
          "broadcast");
    TCU(tcu.cuStreamSynchronize(s));
    verify(cdst, blk, root, 300, "broadcastmem_on_stream");
    fill_dev(csrc, blk, me, 400);
    CHECK(shmemx_fcollectmem_on_stream(SHMEM_TEAM_WORLD, cdst, csrc, blk, s) == 0, "fcollect");
    TCU(tcu.cuStreamSynchronize(s));
    for (int j = 0; j < np; j++)
        verify(cdst + (size_t)j * blk, blk, j, 400, "fcollectmem_on_stream");

    section("reductions");
    /* ---- reductions on a stream ---- */
    size_t ne = 10000;
    long *lsrc = shmem_malloc(ne * sizeof(long)), *ldst = shmem_malloc(ne * sizeof(long));
    double *dsrc = shmem_malloc(ne * sizeof(double)), *ddst = shmem_malloc(ne * sizeof(double));
    long *lh = malloc(ne * sizeof(long)), *lr = malloc(ne * sizeof(long));
    double *dh = malloc(ne * sizeof(double)), *dr = malloc(ne * sizeof(double));
    for (size_t i = 0; i < ne; i++) {
        lh[i] = (long)val_i64(me, i);
        dh[i] = (double)val_i64(me, i) / 7.0;
    }
    tcu_copy(lsrc, lh, ne * sizeof(long));
    tcu_copy(dsrc, dh, ne * sizeof(double));
    CHECK(shmemx_long_sum_reduce_on_stream(SHMEM_TEAM_WORLD, ldst, lsrc, ne, s) == 0, "sum");
    TCU(tcu.cuStreamSynchronize(s));
    tcu_copy(lr, ldst, ne * sizeof(long));
    for (size_t i = 0; i < ne; i++) {
        long want = 0;
        for (int pe = 0; pe < np; pe++)
            want += (long)val_i64(pe, i);
        CHECK(lr[i] == want, "long sum [%zu] = %ld, want %ld", i, lr[i], want);
    }
    CHECK(shmemx_long_max_reduce_on_stream(SHMEM_TEAM_WORLD, ldst, lsrc, ne, s) == 0, "max");
    TCU(tcu.cuStreamSynchronize(s));
    tcu_copy(lr, ldst, ne * sizeof(long));
    for (size_t i = 0; i < ne; i++) {
        long want = LONG_MIN;
        for (int pe = 0; pe < np; pe++)
            want = (long)val_i64(pe, i) > want ? (long)val_i64(pe, i) : want;
        CHECK(lr[i] == want, "long max [%zu]", i);
    }
    CHECK(shmemx_double_sum_reduce_on_stream(SHMEM_TEAM_WORLD, ddst, dsrc, ne, s) == 0, "dsum");
    TCU(tcu.cuStreamSynchronize(s));
    tcu_copy(dr, ddst, ne * sizeof(double));
    for (size_t i = 0; i < ne; i++) {
        double want = 0;
        for (int pe = 0; pe < np; pe++)
            want += (double)val_i64(pe, i) / 7.0;
        CHECK(fabs(dr[i] - want) <= 1e-9 * (1 + fabs(want)), "double sum [%zu] = %g, want %g", i,
              dr[i], want);
    }
    /* in place: dest == source */
    CHECK(shmemx_long_xor_reduce_on_stream(SHMEM_TEAM_WORLD, lsrc, lsrc, ne, s) == 0, "xor");
    TCU(tcu.cuStreamSynchronize(s));
    tcu_copy(lr, lsrc, ne * sizeof(long));
    for (size_t i = 0; i < ne; i++) {
        long want = 0;
        for (int pe = 0; pe < np; pe++)
            want ^= (long)val_i64(pe, i);
        CHECK(lr[i] == want, "in-place xor [%zu]", i);
    }

    section("host memory and NULL stream");
    /* ---- host memory with a stream; device memory with the NULL stream ---- */
    size_t n = 100000;
    test_fill(hsrc, n, me, 500);
    shmem_barrier_all();
    shmemx_putmem_on_stream(hbuf, hsrc, n, next, s); /* host -> host heap, in stream order */
    shmemx_barrier_all_on_stream(s);
    TCU(tcu.cuStreamSynchronize(s));
    CHECK(test_verify(hbuf, n, prev, 500, NULL), "host memory with a stream");
    fill_dev(b, n, me, 501);
    shmemx_putmem_on_stream(a, b, n, next, NULL); /* device memory, NULL = default stream */
    shmemx_barrier_all_on_stream(NULL);
    TCU(tcu.cuStreamSynchronize(NULL));
    verify(a, n, prev, 501, "device memory with the NULL stream");
    test_fill(hsrc, n, me, 502);
    shmem_barrier_all();
    shmemx_putmem_on_stream(hbuf, hsrc, n, next, NULL); /* all host, NULL: now */
    shmem_barrier_all();
    CHECK(test_verify(hbuf, n, prev, 502, NULL), "host memory with the NULL stream");
    /* host collectives with a stream run after the stream's earlier work */
    char *hc = shmem_malloc_with_hints((size_t)np * 64, SHMEMX_MALLOC_HOST);
    char *hd = shmem_malloc_with_hints((size_t)np * 64, SHMEMX_MALLOC_HOST);
    for (int j = 0; j < np; j++)
        test_fill(hc + j * 64, 64, me, 600 + j);
    CHECK(shmemx_alltoallmem_on_stream(SHMEM_TEAM_WORLD, hd, hc, 64, s) == 0, "host alltoall");
    for (int j = 0; j < np; j++)
        CHECK(test_verify(hd + j * 64, 64, j, 600 + me, NULL), "host alltoall on a stream");

    TCU(tcu.cuStreamSynchronize(s));
    shmem_barrier_all();
    if (even != SHMEM_TEAM_INVALID)
        shmem_team_destroy(even);
    shmem_free(hd);
    shmem_free(hc);
    shmem_free(ddst);
    shmem_free(dsrc);
    shmem_free(ldst);
    shmem_free(lsrc);
    shmem_free(cdst);
    shmem_free(csrc);
    shmem_free(vals);
    shmem_free(slots);
    shmem_free(hsig);
    shmem_free(sig);
    shmem_free(hbuf);
    shmem_free(b);
    shmem_free(a);
    TCU(tcu.cuMemFreeHost(pin));
    free(hsrc);
    if (me == 0)
        printf("cuda_stream: %d PEs OK\n", np);
    shmem_finalize();
    return 0;
}
