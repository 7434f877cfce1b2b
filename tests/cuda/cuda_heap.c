/* Device heap and the host API on device memory: allocation kinds, peer
 * views (shmem_ptr, heap bases, a kernel storing through them), put/get in
 * every host/device combination with random data, p/g, strided, AMOs,
 * signals, wait/test, calloc/realloc, and host and device heaps in one job.
 * Run with 2 and 4 PEs on one GPU (USHMEM_DEVICE=0). */
#include "cuda_test.h"
#include "transport/cuda/devmem.h" /* the collectives src/coll hands device memory to */

static uint64_t rnd(uint64_t *st)
{
    *st = test_mix(*st);
    return *st;
}

int main(void)
{
    if (tcu_load() != 0)
        return 77;
    shmem_init();
    int me = shmem_my_pe(), np = shmem_n_pes();
    int next = (me + 1) % np, prev = (me + np - 1) % np;
    CUstream s = tcu_stream();
    const size_t MAXN = 1 << 20;

    /* ---- kinds ---- */
    char *d = shmem_malloc(MAXN);
    char *h = shmem_malloc_with_hints(MAXN, SHMEMX_MALLOC_HOST);
    char *d2 = shmem_malloc_with_hints(MAXN, SHMEMX_MALLOC_DEVICE);
    CHECK(d && h && d2, "allocation failed");
    CHECK(tcu_is_device(d), "shmem_malloc did not return device memory with a device bound");
    CHECK(tcu_is_device(d2), "SHMEMX_MALLOC_DEVICE did not return device memory");
    CHECK(!tcu_is_device(h), "SHMEMX_MALLOC_HOST returned device memory");
    h[0] = 1; /* host memory is CPU-accessible */
    void **bases = malloc((size_t)np * sizeof *bases);
    CHECK(shmemx_heap_bases(d, bases) == 0, "heap_bases");
    for (int pe = 0; pe < np; pe++) {
        /* NULL exactly for PEs of other hosts (USHMEM_FAKE_HOSTS under mpirun) */
        CHECK(bases[pe] == shmem_ptr(d, pe) && (bases[pe] || !shmem_ptr(h, pe) || pe != me),
              "PE %d: base %p, shmem_ptr %p", pe, bases[pe], shmem_ptr(d, pe));
        CHECK(!bases[pe] || tcu_is_device(bases[pe]), "peer view of PE %d is not device memory",
              pe);
        /* mapped where shmem_ptr gives an address, else the proxy (another host) */
        int want = bases[pe] ? SHMEMX_ROUTE_MAPPED : SHMEMX_ROUTE_PROXY;
        CHECK(shmemx_device_route(pe) == want, "device route to PE %d: %d, want %d", pe,
              shmemx_device_route(pe), want);
    }
    CHECK(shmem_ptr(d, me) == d, "shmem_ptr to self");
    CHECK(shmem_addr_accessible(d, next), "device heap not accessible");

    /* ---- put/get, random sizes, every combination ---- */
    unsigned char *src = malloc(MAXN), *back = malloc(MAXN);
    CUdeviceptr dlocal;
    TCU(tcu.cuMemAlloc(&dlocal, MAXN)); /* non-symmetric device buffer */
    uint64_t st = test_seed();
    for (int round = 0; round < 24; round++) {
        size_t n = 1 + rnd(&st) % (round < 12 ? 4096 : MAXN - 1);
        size_t off = rnd(&st) % (MAXN - n + 1);
        test_fill(src, n, me, round);
        /* host local -> device heap (peer) */
        shmem_putmem(d + off, src, n, next);
        /* device local -> host heap (peer) */
        tcu_copy((void *)(uintptr_t)dlocal, src, n);
        shmem_putmem(h + off, (void *)(uintptr_t)dlocal, n, next);
        /* device local -> device heap (peer), other object */
        shmem_putmem(d2 + off, (void *)(uintptr_t)dlocal, n, next);
        shmem_barrier_all();
        size_t bad = 0;
        tcu_copy(back, d + off, n);
        CHECK(test_verify(back, n, prev, round, &bad),
              "round %d: put host->device, %zu bytes, "
              "byte %zu wrong",
              round, n, bad);
        CHECK(test_verify(h + off, n, prev, round, &bad), "round %d: put device->host, byte %zu",
              round, bad);
        tcu_copy(back, d2 + off, n);
        CHECK(test_verify(back, n, prev, round, &bad), "round %d: put device->device, byte %zu",
              round, bad);
        /* gets: device heap (peer) -> host local and -> device local */
        memset(back, 0, n);
        shmem_getmem(back, d + off, n, next);
        CHECK(test_verify(back, n, me, round, &bad), "round %d: get device->host, byte %zu", round,
              bad);
        shmem_getmem((void *)(uintptr_t)dlocal, d2 + off, n, next);
        tcu_copy(back, (void *)(uintptr_t)dlocal, n);
        CHECK(test_verify(back, n, me, round, &bad), "round %d: get device->device, byte %zu",
              round, bad);
        shmem_getmem_nbi(back, d + off, n, prev);
        shmem_quiet();
        CHECK(test_verify(back, n, (prev + np - 1) % np, round, &bad), "round %d: get_nbi", round);
        shmem_barrier_all();
    }

    /* ---- shmem_align on the device heap: up to the user part's boundary (1 MiB past the
     * 2 MiB-aligned allocation); above it refused (NULL and a line), never misaligned ---- */
    for (size_t a = 256; a <= ((size_t)1 << 20); a <<= 2) {
        char *al = shmem_align(a, 100);
        CHECK(al && tcu_is_device(al), "shmem_align(%zu) on the device heap", a);
        CHECK((uintptr_t)al % a == 0, "shmem_align(%zu) gave %p", a, (void *)al);
        shmem_free(al);
    }
    for (size_t a = (size_t)2 << 20; a <= ((size_t)1 << 30); a <<= 4) { /* honoured or NULL */
        char *al = shmem_align(a, 100);
        CHECK(!al || (uintptr_t)al % a == 0, "shmem_align(%zu) gave %p", a, (void *)al);
        shmem_free(al);
    }

    /* ---- p/g and strided on device memory ---- */
    long *dl = shmem_calloc(64, sizeof(long));
    long *zero = tcu_to_host(dl, 64 * sizeof(long));
    for (int i = 0; i < 64; i++)
        CHECK(zero[i] == 0, "shmem_calloc on the device heap: word %d = %ld", i, zero[i]);
    free(zero);
    shmem_barrier_all(); /* everyone has checked its zeros before anyone writes */
    shmem_long_p(&dl[me], me * 100 + 7, next);
    shmem_barrier_all();
    CHECK(shmem_long_g(&dl[prev], me) == prev * 100 + 7, "p/g on device memory");
    long pat[16], got[16];
    for (int i = 0; i < 16; i++)
        pat[i] = me * 1000 + i;
    shmem_barrier_all();
    shmem_long_iput(dl + 32, pat, 2, 1, 16, next); /* dl[32 + 2i] = pat[i] */
    shmem_barrier_all();
    shmem_long_iget(got, dl + 32, 1, 2, 16, me);
    for (int i = 0; i < 16; i++)
        CHECK(got[i] == prev * 1000 + i, "iput/iget element %d: %ld", i, got[i]);

    /* ---- AMOs on device memory ---- */
    long long *ctr = shmem_calloc(4, sizeof(long long));
    int *ictr = shmem_calloc(4, sizeof(int));
    for (int i = 0; i < 50; i++) {
        shmem_longlong_atomic_fetch_add(&ctr[0], 1, 0);
        shmem_int_atomic_add(&ictr[0], 2, 0);
    }
    shmem_barrier_all();
    CHECK(shmem_longlong_atomic_fetch(&ctr[0], 0) == 50LL * np, "fetch_add total %lld",
          shmem_longlong_atomic_fetch(&ctr[0], 0));
    CHECK(shmem_int_atomic_fetch(&ictr[0], 0) == 100 * np, "int add total");
    shmem_barrier_all();
    if (me == 0) {
        shmem_longlong_atomic_set(&ctr[1], 5, next);
        CHECK(shmem_longlong_atomic_swap(&ctr[1], 9, next) == 5, "swap");
        CHECK(shmem_longlong_atomic_compare_swap(&ctr[1], 9, 11, next) == 9, "cswap hit");
        CHECK(shmem_longlong_atomic_compare_swap(&ctr[1], 9, 13, next) == 11, "cswap miss");
        shmem_uint_atomic_or((unsigned *)&ictr[1], 0xf0, next);
        shmem_uint_atomic_and((unsigned *)&ictr[1], 0x3c, next);
        shmem_uint_atomic_xor((unsigned *)&ictr[1], 0x01, next);
        CHECK(shmem_uint_atomic_fetch((unsigned *)&ictr[1], next) == 0x31, "and/or/xor: 0x%x",
              shmem_uint_atomic_fetch((unsigned *)&ictr[1], next));
        unsigned long long fetched = 0;
        shmem_ulonglong_atomic_fetch_add_nbi(&fetched, (unsigned long long *)&ctr[1], 1, next);
        shmem_quiet();
        CHECK(fetched == 11, "fetch_add_nbi fetched %llu", fetched);
    }
    shmem_barrier_all();

    /* ---- signals, wait and test on device memory ---- */
    uint64_t *sig = shmem_calloc(2, sizeof(uint64_t));
    test_fill(src, 65536, me, 77);
    shmem_putmem_signal(d, src, 65536, &sig[0], 1, SHMEM_SIGNAL_SET, next);
    shmem_signal_wait_until(&sig[0], SHMEM_CMP_EQ, 1);
    tcu_copy(back, d, 65536);
    CHECK(test_verify(back, 65536, prev, 77, NULL), "data not there when the signal was seen");
    shmem_barrier_all();
    shmem_putmem_signal(d, src, 8, &sig[1], 3, SHMEM_SIGNAL_ADD, next);
    shmem_putmem_signal(d, src, 8, &sig[1], 4, SHMEM_SIGNAL_ADD, next);
    shmem_uint64_wait_until(&sig[1], SHMEM_CMP_GE, 7);
    CHECK(shmem_signal_fetch(&sig[1]) == 7, "signal add: %llu",
          (unsigned long long)shmem_signal_fetch(&sig[1]));
    shmem_barrier_all();
    CHECK(shmem_uint64_test(&sig[1], SHMEM_CMP_GT, 7) == 0, "test true too early");
    shmem_barrier_all();
    shmem_uint64_atomic_set(&sig[1], 8, next);
    while (!shmem_uint64_test(&sig[1], SHMEM_CMP_GT, 7))
        ;
    shmem_barrier_all();

    /* ---- a kernel stores into the next PE's heap through shmem_ptr ---- */
    size_t nw = 1 << 16;
    uint64_t *kb = shmem_malloc(nw * 8);
    if (shmem_ptr(kb, next)) {
        tcu_fill(s, shmem_ptr(kb, next), nw, 0xabc000ULL + (uint64_t)me);
    } else { /* another host: fill here, then a stream put through the proxy */
        tcu_fill(s, (void *)(uintptr_t)dlocal, nw, 0xabc000ULL + (uint64_t)me);
        shmemx_putmem_on_stream(kb, (void *)(uintptr_t)dlocal, nw * 8, next, (shmemx_stream_t)s);
    }
    TCU(tcu.cuStreamSynchronize(s));
    shmem_barrier_all();
    uint64_t *kh = tcu_to_host(kb, nw * 8);
    for (size_t i = 0; i < nw; i++)
        CHECK(kh[i] == tcu_fill_word(i, 0xabc000ULL + (uint64_t)prev), "kernel word %zu", i);
    free(kh);

    /* ---- blocking collectives on device memory (what src/coll calls) ---- */
    {
        size_t blk = 1000;
        char *cs = shmem_malloc((size_t)np * blk), *cd = shmem_malloc((size_t)np * blk);
        for (int j = 0; j < np; j++) {
            test_fill(src, blk, me, 900 + j);
            tcu_copy(cs + (size_t)j * blk, src, blk);
        }
        CHECK(ushmemi_cuda_alltoall(SHMEM_TEAM_WORLD, cd, cs, blk, "test") == 0, "alltoall");
        for (int j = 0; j < np; j++) {
            tcu_copy(back, cd + (size_t)j * blk, blk);
            CHECK(test_verify(back, blk, j, 900 + me, NULL), "device alltoall block %d", j);
        }
        CHECK(ushmemi_cuda_fcollect(SHMEM_TEAM_WORLD, cd, cs, blk, "test") == 0, "fcollect");
        for (int j = 0; j < np; j++) {
            tcu_copy(back, cd + (size_t)j * blk, blk);
            CHECK(test_verify(back, blk, j, 900, NULL), "device fcollect block %d", j);
        }
        CHECK(ushmemi_cuda_broadcast(SHMEM_TEAM_WORLD, cd, cs, blk, 0, "test") == 0, "bcast");
        tcu_copy(back, cd, blk);
        CHECK(test_verify(back, blk, 0, 900, NULL), "device broadcast");
        int iv[256], ir[256];
        for (int i = 0; i < 256; i++)
            iv[i] = me * 3 + i;
        tcu_copy(cs, iv, sizeof iv);
        CHECK(ushmemi_cuda_reduce(SHMEM_TEAM_WORLD, cd, cs, 256, USHMEMI_DT(USHMEMI_KIND_SINT, 4),
                                  USHMEMI_OP_SUM, "test") == 0,
              "reduce");
        tcu_copy(ir, cd, sizeof ir);
        for (int i = 0; i < 256; i++)
            CHECK(ir[i] == 3 * np * (np - 1) / 2 + np * i, "device int sum [%d] = %d", i, ir[i]);
        shmem_free(cd);
        shmem_free(cs);
    }

    /* ---- realloc keeps contents; free ---- */
    test_fill(src, 4096, me, 5);
    tcu_copy(kb, src, 4096);
    shmem_barrier_all();
    uint64_t *kb2 = shmem_realloc(kb, nw * 8 * 4);
    CHECK(kb2 && tcu_is_device(kb2), "realloc on the device heap");
    tcu_copy(back, kb2, 4096);
    CHECK(test_verify(back, 4096, me, 5, NULL), "realloc lost the contents");

    /* ---- host heap still works beside the device heap ---- */
    int *hh = shmem_malloc_with_hints(np * sizeof(int), SHMEMX_MALLOC_HOST);
    shmem_int_p(&hh[me], me + 1, next);
    shmem_barrier_all();
    CHECK(hh[prev] == prev + 1, "host heap put beside the device heap");

    shmem_barrier_all();
    shmem_free(hh);
    shmem_free(kb2);
    shmem_free(sig);
    shmem_free(ictr);
    shmem_free(ctr);
    shmem_free(dl);
    shmem_free(d2);
    shmem_free(h);
    shmem_free(d);
    TCU(tcu.cuMemFree(dlocal));
    if (me == 0)
        printf("cuda_heap: %d PEs OK\n", np);
    shmem_finalize();
    return 0;
}
