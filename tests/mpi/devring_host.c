/* The device API's reverse-offload path without a GPU: host threads play
 * kernel threads, handing requests to this PE's consumer thread
 * (src/transport/proxy/devring.c) through the request ring with ring.h's
 * host producer, which follows the device producer step for step. With
 * USHMEM_PROXY_HOST=1 the ring lives in ordinary memory and its requests
 * reach host memory of the other pretend host through the staged proxy: the
 * same consumer, request words and transport calls a kernel's requests go
 * through on a GPU machine.
 *
 * 4 PEs on two pretend hosts (mpirun, USHMEM_FAKE_HOSTS=2): PE p targets
 * PE (p + 2) % 4 on the other host. NT threads each, per round: an inline
 * put (1..40 bytes), a staged put (up to 5 MiB: more than the consumer's
 * 4 MiB bounce buffer), a fetching fetch_add, a non-fetching add, an inline
 * put with signal and a staged one (the signal must never overtake its
 * data), a small and a large get of the target's pattern, and a QUIET. The
 * target checks every byte it received and the exact totals; the origin
 * checks its gets and that the fetched values are a permutation. Then a
 * burst: NB threads each take BURST fetch_adds back to back on one word of
 * the target (more than the consumer's AMOs in flight), exact total and a
 * permutation again, and the time per AMO printed (not asserted). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/state.h"
#include "shmemx_device_types.h"
#include "test_util.h"
#include "transport/proxy/devring.h"

#define NT      4
#define ROUNDS  12
#define SMALL   64                         /* bytes per (thread, round) inline slot */
#define BIG     ((size_t)5 << 20)          /* the largest staged put */
#define SIGDATA ((size_t)96 << 10)         /* staged put-with-signal payload */
#define PAT     ((size_t)6 << 20)          /* each PE's pattern, read by gets */
#define FOREVER ((uint64_t)60000000000ull) /* 60 s: a stuck consumer fails the test */

static char *small_buf, *big_buf, *sigdata, *pattern;
static uint64_t *counter, *adds, *sig_small, *sig_big;
static const ushmemi_ring_t *ring;
static uint64_t *quiet_upto;
static int me, target;
static uint64_t fetched[NT * ROUNDS];
#define NB    16
#define BURST 128
static uint64_t *burst_word;
static uint64_t burst_got[NB * BURST];

static uint64_t w0(unsigned op, unsigned len, unsigned aux, int pe)
{
    return USHMEMI_REQ_W0(op, len, aux, pe);
}

/* One request, as ushmemi_dev_ring_call does on the device. */
static uint64_t call(const uint64_t q[7])
{
    uint64_t t, v = 0;
    CHECK(ushmemi_ring_reserve(ring, &t, FOREVER) == 0, "ring reserve");
    ushmemi_ring_publish(ring, t, q);
    if (q[0] & USHMEMI_REQ_WAIT)
        CHECK(ushmemi_ring_wait_ret(ring, t, &v, FOREVER) == 0, "waiting for the answer");
    return v;
}

static size_t small_len(int src, int tid, int r)
{
    return 1 + test_mix(test_seed() ^ ((uint64_t)src << 40) ^ ((uint64_t)tid << 20) ^ r) % 40;
}

static size_t big_len(int src, int tid, int r)
{
    if (tid == 0 && r == 0)
        return BIG; /* several bounce buffers' worth */
    return 41 +
           test_mix(test_seed() ^ 0xb16ULL ^ ((uint64_t)src << 40) ^ ((uint64_t)tid << 20) ^ r) %
               (64 << 10);
}

static void *producer(void *arg)
{
    int tid = (int)(intptr_t)arg;
    unsigned char *tmp = malloc(BIG), *got = malloc(PAT);
    CHECK(tmp && got, "malloc");
    test_fill(got, PAT, target, 77); /* the target's pattern */
    for (int r = 0; r < ROUNDS; r++) {
        int id = tid * ROUNDS + r;
        /* inline put */
        size_t n = small_len(me, tid, r);
        uint64_t q[7] = {w0(USHMEMI_REQ_PUT_INLINE, (unsigned)n, 0, target),
                         (uint64_t)(uintptr_t)(small_buf + (size_t)id * SMALL)};
        test_fill(tmp, n, me, 1000 + id);
        memcpy(&q[2], tmp, n);
        call(q);
        /* staged put (blocking: tmp is reused right after) */
        n = big_len(me, tid, r);
        test_fill(tmp, n, me, 2000 + id);
        uint64_t p[7] = {w0(USHMEMI_REQ_PUT | USHMEMI_REQ_WAIT, 0, 0, target),
                         (uint64_t)(uintptr_t)(big_buf + (size_t)tid * BIG),
                         (uint64_t)(uintptr_t)tmp, n};
        call(p); /* the target checks the last round's */
        /* AMOs: a fetching fetch_add and a non-fetching add */
        uint64_t a[7] = {
            w0(USHMEMI_REQ_AMO | USHMEMI_REQ_WAIT, 0, USHMEMI_AMO_ADD | 8u << 8, target),
            (uint64_t)(uintptr_t)counter, 1};
        fetched[id] = call(a);
        uint64_t b[7] = {w0(USHMEMI_REQ_AMO, 0, USHMEMI_AMO_ADD | 8u << 8, target),
                         (uint64_t)(uintptr_t)adds, (uint64_t)id + 1};
        call(b);
        /* put with signal, inline (8 bytes) and staged: the target checks the
         * data whenever it sees the signal */
        uint64_t v = test_mix(test_seed() ^ ((uint64_t)me << 32) ^ (uint64_t)id);
        uint64_t s[7] = {w0(USHMEMI_REQ_PUT_SIGNAL_INLINE, 8, SHMEM_SIGNAL_ADD, target),
                         (uint64_t)(uintptr_t)(sigdata + ROUNDS * SIGDATA + (size_t)id * 8),
                         v,
                         0,
                         (uint64_t)(uintptr_t)sig_small,
                         1};
        call(s);
        if (tid == 0) { /* round r's block, then the signal r + 1 */
            test_fill(tmp, SIGDATA, me, 3000 + r);
            uint64_t t[7] = {
                w0(USHMEMI_REQ_PUT_SIGNAL | USHMEMI_REQ_WAIT, 0, SHMEM_SIGNAL_SET, target),
                (uint64_t)(uintptr_t)(sigdata + (size_t)r * SIGDATA),
                (uint64_t)(uintptr_t)tmp,
                SIGDATA,
                (uint64_t)(uintptr_t)sig_big,
                (uint64_t)r + 1};
            call(t);
        }
        /* gets of the target's pattern: small (the answer carries it) and staged */
        size_t off = test_mix(test_seed() ^ 0x9e7ULL ^ (uint64_t)id) % (PAT - 8);
        uint64_t g[7] = {w0(USHMEMI_REQ_GET_SMALL | USHMEMI_REQ_WAIT, 8, 0, target),
                         (uint64_t)(uintptr_t)(pattern + off)};
        uint64_t gv = call(g);
        CHECK(memcmp(&gv, got + off, 8) == 0, "small get at %zu of PE %d", off, target);
        size_t glen = 9 + test_mix(test_seed() ^ 0x6e7ULL ^ (uint64_t)id) % (PAT - off - 8);
        unsigned char *gd = malloc(glen);
        CHECK(gd, "malloc");
        uint64_t h[7] = {w0(USHMEMI_REQ_GET | USHMEMI_REQ_WAIT, 0, 0, target),
                         (uint64_t)(uintptr_t)(pattern + off), (uint64_t)(uintptr_t)gd, glen};
        call(h);
        CHECK(memcmp(gd, got + off, glen) == 0, "get of %zu bytes at %zu of PE %d", glen, off,
              target);
        free(gd);
        /* quiet: afterwards quiet_upto covers it */
        uint64_t z[7] = {w0(USHMEMI_REQ_QUIET | USHMEMI_REQ_WAIT, 0, 0, me)};
        call(z);
        CHECK(__atomic_load_n(quiet_upto, __ATOMIC_ACQUIRE) >= 1, "quiet_upto not raised");
    }
    free(got);
    free(tmp);
    return NULL;
}

static void *burster(void *arg)
{
    int tid = (int)(intptr_t)arg;
    for (int i = 0; i < BURST; i++) {
        uint64_t a[7] = {
            w0(USHMEMI_REQ_AMO | USHMEMI_REQ_WAIT, 0, USHMEMI_AMO_ADD | 8u << 8, target),
            (uint64_t)(uintptr_t)burst_word, 1};
        burst_got[tid * BURST + i] = call(a);
    }
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    int np = shmem_n_pes();
    if (np != 4) {
        fprintf(stderr, "devring_host: run with 4 PEs on two pretend hosts\n");
        return 1;
    }
    target = (me + 2) % 4;
    int src = (me + 2) % 4; /* who targets me */
    ring = ushmemi_devring_host_ring(&quiet_upto);
    CHECK(ring, "no host request ring (run with USHMEM_FAKE_HOSTS=2 USHMEM_PROXY_HOST=1)");
    small_buf = shmem_calloc(NT * ROUNDS, SMALL);
    big_buf = shmem_calloc(NT, BIG);
    sigdata = shmem_calloc(1, ROUNDS * SIGDATA + NT * ROUNDS * 8);
    pattern = shmem_malloc(PAT);
    counter = shmem_calloc(4, 8);
    CHECK(small_buf && big_buf && sigdata && pattern && counter, "shmem_calloc");
    CHECK(!shmem_ptr(counter, target), "PE %d is mapped: not on another pretend host", target);
    adds = counter + 1;
    sig_small = counter + 2;
    sig_big = counter + 3;
    test_fill(pattern, PAT, me, 77);
    shmem_barrier_all();

    pthread_t th[NT];
    for (int t = 0; t < NT; t++)
        CHECK(pthread_create(&th[t], NULL, producer, (void *)(intptr_t)t) == 0, "thread");
    /* meanwhile: once the staged signal says s, the blocks of rounds < s are
     * there (each round writes its own block, once) */
    uint64_t seen = 0;
    unsigned char *want = malloc(SIGDATA);
    CHECK(want, "malloc");
    while (seen < ROUNDS) {
        uint64_t s = shmem_signal_fetch(sig_big);
        for (; seen < s; seen++) {
            size_t bad = 0;
            CHECK(test_verify(sigdata + seen * SIGDATA, SIGDATA, src, 3000 + (int)seen, &bad),
                  "signal %llu seen before the data of round %llu (byte %zu)",
                  (unsigned long long)s, (unsigned long long)seen, bad);
        }
    }
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    shmem_barrier_all();

    /* origin: the fetched values are a permutation of what every origin took */
    qsort(fetched, NT * ROUNDS, 8, cmp_u64);
    for (int i = 1; i < NT * ROUNDS; i++)
        CHECK(fetched[i] != fetched[i - 1], "fetch_add returned %llu twice",
              (unsigned long long)fetched[i]);
    /* target: totals and data */
    uint64_t total_add = 0;
    for (int i = 0; i < NT * ROUNDS; i++)
        total_add += (uint64_t)i + 1;
    CHECK(*counter == NT * ROUNDS, "counter %llu, want %d", (unsigned long long)*counter,
          NT * ROUNDS);
    CHECK(fetched[NT * ROUNDS - 1] < (uint64_t)(NT * ROUNDS), "a fetched value out of range");
    CHECK(*adds == total_add, "adds %llu, want %llu", (unsigned long long)*adds,
          (unsigned long long)total_add);
    CHECK(*sig_small == NT * ROUNDS, "inline signals %llu", (unsigned long long)*sig_small);
    CHECK(*sig_big == ROUNDS, "staged signal %llu", (unsigned long long)*sig_big);
    for (int t = 0; t < NT; t++)
        for (int r = 0; r < ROUNDS; r++) {
            int id = t * ROUNDS + r;
            size_t n = small_len(src, t, r), bad = 0;
            CHECK(test_verify(small_buf + (size_t)id * SMALL, n, src, 1000 + id, &bad),
                  "inline put %d from PE %d (%zu bytes): byte %zu", id, src, n, bad);
            uint64_t v = test_mix(test_seed() ^ ((uint64_t)src << 32) ^ (uint64_t)id);
            CHECK(!memcmp(sigdata + ROUNDS * SIGDATA + (size_t)id * 8, &v, 8),
                  "inline put-signal %d", id);
        }
    for (int t = 0; t < NT; t++) {
        size_t n = big_len(src, t, ROUNDS - 1), bad = 0;
        CHECK(test_verify(big_buf + (size_t)t * BIG, n, src, 2000 + t * ROUNDS + ROUNDS - 1, &bad),
              "staged put of thread %d (%zu bytes): byte %zu", t, n, bad);
    }
    free(want);
    shmem_barrier_all();

    /* the burst */
    burst_word = shmem_calloc(1, 8);
    CHECK(burst_word, "shmem_calloc");
    pthread_t bt[NB];
    double t0 = now_s();
    for (int t = 0; t < NB; t++)
        CHECK(pthread_create(&bt[t], NULL, burster, (void *)(intptr_t)t) == 0, "thread");
    for (int t = 0; t < NB; t++)
        pthread_join(bt[t], NULL);
    double us = (now_s() - t0) * 1e6 / (NB * BURST);
    shmem_barrier_all();
    CHECK(*burst_word == NB * BURST, "burst word %llu, want %d", (unsigned long long)*burst_word,
          NB * BURST);
    qsort(burst_got, NB * BURST, 8, cmp_u64);
    for (int i = 0; i < NB * BURST; i++)
        CHECK(burst_got[i] == (uint64_t)i, "burst: fetched values not 0..%d (position %d: %llu)",
              NB * BURST - 1, i, (unsigned long long)burst_got[i]);
    if (me == 0)
        printf("devring_host: %d threads x %d fetch_adds to the other host: %.2f us each\n", NB,
               BURST, us);
    shmem_free(burst_word);
    shmem_barrier_all();
    if (me == 0)
        printf("devring_host: %d PEs x %d threads x %d rounds of ring requests through the proxy: "
               "data, signals, totals and gets checked\n",
               np, NT, ROUNDS);
    shmem_free(counter);
    shmem_free(pattern);
    shmem_free(sigdata);
    shmem_free(big_buf);
    shmem_free(small_buf);
    shmem_finalize();
    return 0;
}
