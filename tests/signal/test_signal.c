/* Put-with-signal and signals:
 *   every typed (standard RMA types), sized and mem put_signal and
 *   put_signal_nbi, plain / ctx_ on SHMEM_CTX_DEFAULT / C11 generic, with
 *   SHMEM_SIGNAL_SET and SHMEM_SIGNAL_ADD; the receiver waits on the signal
 *   and checks the data with no barrier in between;
 *   "the data of a put-with-signal is visible to a PE that saw the signal":
 *   1 MiB random payloads, many rounds, the receiver checks all of it right
 *   after its signal_wait_until returns; and several senders ADDing distinct
 *   bits to one signal, the receiver checking each sender's slice as soon as
 *   its bit shows;
 *   shmem_signal_fetch, shmem_signal_wait_until with every comparison,
 *   shmem_signal_add / shmem_signal_set (1.6), their ctx_ and generic forms;
 *   signal_wait_until returns the value that satisfied the condition, while a
 *   peer thread keeps changing the signal.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include <pthread.h>
#include <time.h>

#include "test_types.h"
#include "test_util.h"

#define SIZED(X) X(8, 1) X(16, 2) X(32, 4) X(64, 8) X(128, 16)

#define NVAR   6 /* variants per type: plain, ctx, nbi, ctx nbi, generic, generic ctx nbi */
#define REGION (4096 + 64) /* bytes per variant region */
#define NMAX   256         /* elements (<= 4096 bytes for 16-byte types) */
#define BIG    (1 << 20)
#define SLICE  (BIG / 4)

static int me, np, to, from;
static unsigned char *g_dst;    /* symmetric: NVAR regions */
static unsigned char *g_src;    /* symmetric source (put_signal's source may be private too) */
static uint64_t *g_sig;         /* symmetric signals */
static unsigned char *g_big;    /* symmetric 1 MiB */
static unsigned char *g_bigsrc; /* private 1 MiB */

static uint64_t rv(int pe, int t, size_t i)
{
    return test_mix(test_seed() ^ ((uint64_t)(unsigned)pe << 44) ^ ((uint64_t)t << 24) ^ i);
}

static void sleep_us(unsigned us)
{
    struct timespec ts = {0, (long)us * 1000};
    nanosleep(&ts, NULL);
}

/* Signal value variant v of PE pe sends in test t (never 0: the signals start at 0). */
static uint64_t sigval(int pe, int t, int v)
{
    return 1 + rv(pe, t, 1000 + (size_t)v) % 1000000;
}
static int sigop(int t, int v)
{
    return (t + v) % 2 ? SHMEM_SIGNAL_ADD : SHMEM_SIGNAL_SET;
}
/* The signal's value before the put: ADD starts from a non-zero base so that an
 * ADD done as a SET shows (and the wait below is for "changed", so it fails
 * rather than hangs). */
static uint64_t sigbase(int t, int v)
{
    return sigop(t, v) == SHMEM_SIGNAL_ADD ? 5000000 + rv(-2, t, (size_t)v) % 1000 : 0;
}

/* Wait for variant v's signal, then check its region: n elements of esize
 * bytes from PE `from`, and nothing after them. */
static void receive(const char *what, int t, int v, size_t nbytes)
{
    uint64_t want = sigbase(t, v) + sigval(from, t, v);
    uint64_t got = shmem_signal_wait_until(&g_sig[v], SHMEM_CMP_NE, sigbase(t, v));
    CHECK(got == want, "%s: signal_wait_until returned %llu, want %llu", what,
          (unsigned long long)got, (unsigned long long)want);
    CHECK(shmem_signal_fetch(&g_sig[v]) == want, "%s: signal_fetch", what);
    size_t bad = 0;
    unsigned char *r = g_dst + (size_t)v * REGION;
    CHECK(test_verify(r, nbytes, from, t * 8 + 1, &bad),
          "%s (%s): byte %zu of %zu wrong although the signal was seen", what,
          sigop(t, v) == SHMEM_SIGNAL_ADD ? "ADD" : "SET", bad, nbytes);
    for (size_t i = nbytes; i < REGION; i++)
        CHECK(r[i] == 0xee, "%s: byte %zu past the end written", what, i);
}

/* After the closing barrier: the zero-length put-with-signals still added. */
static void check_zero_length(const char *what, uint64_t want)
{
    CHECK(g_sig[NVAR] == want, "%s with nelems 0: signal %llu, want %llu", what,
          (unsigned long long)g_sig[NVAR], (unsigned long long)want);
}

static void prepare(int t, size_t nbytes)
{
    memset(g_dst, 0xee, (size_t)NVAR * REGION);
    for (int v = 0; v < NVAR; v++)
        g_sig[v] = sigbase(t, v);
    g_sig[NVAR] = 0;
    test_fill(g_src, nbytes, me, t * 8 + 1);
    shmem_barrier_all();
}

#define DEF_TYPED(T, N, kind_unused)                                                               \
    static void typed_##N(int t)                                                                   \
    {                                                                                              \
        size_t n = 1 + rv(-1, t, 0) % NMAX;                                                        \
        T *src = (T *)g_src;                                                                       \
        T *d[NVAR];                                                                                \
        for (int v = 0; v < NVAR; v++)                                                             \
            d[v] = (T *)(g_dst + (size_t)v * REGION);                                              \
        prepare(t, n * sizeof(T));                                                                 \
        shmem_##N##_put_signal(d[0], src, n, &g_sig[0], sigval(me, t, 0), sigop(t, 0), to);        \
        shmem_ctx_##N##_put_signal(SHMEM_CTX_DEFAULT, d[1], src, n, &g_sig[1], sigval(me, t, 1),   \
                                   sigop(t, 1), to);                                               \
        shmem_##N##_put_signal_nbi(d[2], src, n, &g_sig[2], sigval(me, t, 2), sigop(t, 2), to);    \
        shmem_ctx_##N##_put_signal_nbi(SHMEM_CTX_DEFAULT, d[3], src, n, &g_sig[3],                 \
                                       sigval(me, t, 3), sigop(t, 3), to);                         \
        shmem_put_signal(d[4], src, n, &g_sig[4], sigval(me, t, 4), sigop(t, 4), to);              \
        shmem_put_signal_nbi(SHMEM_CTX_DEFAULT, d[5], src, n, &g_sig[5], sigval(me, t, 5),         \
                             sigop(t, 5), to);                                                     \
        /* zero elements: only the signal moves (to a signal nobody waits on) */                   \
        shmem_##N##_put_signal(NULL, NULL, 0, &g_sig[NVAR], 1, SHMEM_SIGNAL_ADD, to);              \
        shmem_##N##_put_signal_nbi(NULL, NULL, 0, &g_sig[NVAR], 1, SHMEM_SIGNAL_ADD, to);          \
        shmem_quiet();                                                                             \
        static const char *const vn[NVAR] = {"put_signal",         "ctx_put_signal",               \
                                             "put_signal_nbi",     "ctx_put_signal_nbi",           \
                                             "generic put_signal", "generic ctx put_signal_nbi"};  \
        for (int v = 0; v < NVAR; v++) {                                                           \
            char what[96];                                                                         \
            snprintf(what, sizeof what, "shmem_%s %s", #N, vn[v]);                                 \
            receive(what, t, v, n * sizeof(T));                                                    \
        }                                                                                          \
        shmem_barrier_all();                                                                       \
        check_zero_length("shmem_" #N "_put_signal[_nbi]", 2);                                     \
    }

TEST_RMA_TYPES(DEF_TYPED)

#define DEF_SIZED(B, E)                                                                            \
    static void sized_##B(int t)                                                                   \
    {                                                                                              \
        size_t n = 1 + rv(-1, t, 0) % NMAX;                                                        \
        unsigned char *d = g_dst;                                                                  \
        prepare(t, n *E);                                                                          \
        shmem_put##B##_signal(d, g_src, n, &g_sig[0], sigval(me, t, 0), sigop(t, 0), to);          \
        shmem_ctx_put##B##_signal(SHMEM_CTX_DEFAULT, d + REGION, g_src, n, &g_sig[1],              \
                                  sigval(me, t, 1), sigop(t, 1), to);                              \
        shmem_put##B##_signal_nbi(d + 2 * REGION, g_src, n, &g_sig[2], sigval(me, t, 2),           \
                                  sigop(t, 2), to);                                                \
        shmem_ctx_put##B##_signal_nbi(SHMEM_CTX_DEFAULT, d + 3 * REGION, g_src, n, &g_sig[3],      \
                                      sigval(me, t, 3), sigop(t, 3), to);                          \
        shmem_put##B##_signal(NULL, NULL, 0, &g_sig[NVAR], 1, SHMEM_SIGNAL_ADD, to);               \
        shmem_quiet();                                                                             \
        receive("put" #B "_signal", t, 0, n *E);                                                   \
        receive("ctx_put" #B "_signal", t, 1, n *E);                                               \
        receive("put" #B "_signal_nbi", t, 2, n *E);                                               \
        receive("ctx_put" #B "_signal_nbi", t, 3, n *E);                                           \
        shmem_barrier_all();                                                                       \
        check_zero_length("put" #B "_signal", 1);                                                  \
    }

SIZED(DEF_SIZED)

static void mem_forms(int t)
{
    size_t n = 1 + rv(-1, t, 0) % 4096;
    unsigned char *d = g_dst;
    prepare(t, n);
    shmem_putmem_signal(d, g_src, n, &g_sig[0], sigval(me, t, 0), sigop(t, 0), to);
    shmem_ctx_putmem_signal(SHMEM_CTX_DEFAULT, d + REGION, g_src, n, &g_sig[1], sigval(me, t, 1),
                            sigop(t, 1), to);
    shmem_putmem_signal_nbi(d + 2 * REGION, g_src, n, &g_sig[2], sigval(me, t, 2), sigop(t, 2), to);
    shmem_ctx_putmem_signal_nbi(SHMEM_CTX_DEFAULT, d + 3 * REGION, g_src, n, &g_sig[3],
                                sigval(me, t, 3), sigop(t, 3), to);
    shmem_putmem_signal(NULL, NULL, 0, &g_sig[NVAR], 1, SHMEM_SIGNAL_ADD, to);
    shmem_putmem_signal_nbi(NULL, NULL, 0, &g_sig[NVAR], 1, SHMEM_SIGNAL_ADD, to);
    shmem_quiet();
    receive("putmem_signal", t, 0, n);
    receive("ctx_putmem_signal", t, 1, n);
    receive("putmem_signal_nbi", t, 2, n);
    receive("ctx_putmem_signal_nbi", t, 3, n);
    shmem_barrier_all();
    check_zero_length("putmem_signal[_nbi]", 2);
}

/* 1 MiB from `from` to me each round; the receiver acknowledges with
 * shmem_signal_set so the sender can reuse the buffer. */
static void big_stream(int t0, int rounds)
{
    uint64_t *sig = &g_sig[8], *ack = &g_sig[9];
    *sig = 0;
    *ack = 0;
    shmem_barrier_all();
    for (int r = 1; r <= rounds; r++) {
        int t = t0 + r;
        /* send round r to `to` once it has finished checking round r-1 */
        shmem_signal_wait_until(ack, SHMEM_CMP_GE, (uint64_t)(r - 1));
        test_fill(g_bigsrc, BIG, me, t);
        switch (r % 6) {
        case 0:
            shmem_putmem_signal(g_big, g_bigsrc, BIG, sig, (uint64_t)r, SHMEM_SIGNAL_SET, to);
            break;
        case 1: shmem_putmem_signal_nbi(g_big, g_bigsrc, BIG, sig, 1, SHMEM_SIGNAL_ADD, to); break;
        case 2:
            shmem_ctx_uint64_put_signal(SHMEM_CTX_DEFAULT, (uint64_t *)g_big, (uint64_t *)g_bigsrc,
                                        BIG / 8, sig, (uint64_t)r, SHMEM_SIGNAL_SET, to);
            break;
        case 3:
            shmem_put64_signal_nbi(g_big, g_bigsrc, BIG / 8, sig, 1, SHMEM_SIGNAL_ADD, to);
            break;
        case 4:
            shmem_put_signal((double *)g_big, (double *)g_bigsrc, BIG / 8, sig, (uint64_t)r,
                             SHMEM_SIGNAL_SET, to);
            break;
        default:
            shmem_ctx_put128_signal_nbi(SHMEM_CTX_DEFAULT, g_big, g_bigsrc, BIG / 16, sig, 1,
                                        SHMEM_SIGNAL_ADD, to);
            break;
        }
        shmem_quiet();
        /* receive round r from `from` */
        uint64_t got = shmem_signal_wait_until(sig, SHMEM_CMP_GE, (uint64_t)r);
        CHECK(got == (uint64_t)r, "big round %d: signal %llu", r, (unsigned long long)got);
        size_t bad = 0;
        CHECK(test_verify(g_big, BIG, from, t, &bad),
              "big round %d: byte %zu of the 1 MiB payload wrong after the signal was seen", r,
              bad);
        /* let `from` send the next round */
        if (r % 2)
            shmem_signal_set(ack, (uint64_t)r, from);
        else
            shmem_ctx_signal_set(SHMEM_CTX_DEFAULT, ack, (uint64_t)r, from);
    }
    shmem_barrier_all();
}

/* All PEs send a 256 KiB slice to one receiver and ADD their own bit to its
 * signal; the receiver checks each slice as soon as its bit shows. */
static void fan_in(int t0, int rounds)
{
    uint64_t *sig = &g_sig[10];
    const uint64_t all = (np >= 64 ? ~0ULL : (1ULL << np) - 1);
    for (int r = 0; r < rounds; r++) {
        int t = t0 + r, recv = r % np;
        *sig = 0;
        memset(g_big, 0, (size_t)np * SLICE);
        test_fill(g_bigsrc, SLICE, me, t);
        shmem_barrier_all();
        unsigned char *dst = g_big + (size_t)me * SLICE;
        uint64_t bit = 1ULL << me;
        switch ((r + me) % 4) {
        case 0: shmem_putmem_signal(dst, g_bigsrc, SLICE, sig, bit, SHMEM_SIGNAL_ADD, recv); break;
        case 1:
            shmem_putmem_signal_nbi(dst, g_bigsrc, SLICE, sig, bit, SHMEM_SIGNAL_ADD, recv);
            break;
        case 2:
            shmem_int_put_signal((int *)dst, (int *)g_bigsrc, SLICE / sizeof(int), sig, bit,
                                 SHMEM_SIGNAL_ADD, recv);
            break;
        default:
            shmem_ctx_put32_signal_nbi(SHMEM_CTX_DEFAULT, dst, g_bigsrc, SLICE / 4, sig, bit,
                                       SHMEM_SIGNAL_ADD, recv);
            break;
        }
        shmem_quiet();
        if (me == recv) {
            uint64_t seen = 0;
            while (seen != all) {
                uint64_t v = shmem_signal_wait_until(sig, SHMEM_CMP_NE, seen);
                CHECK((v & seen) == seen && (v & ~all) == 0,
                      "fan-in round %d: signal 0x%llx after 0x%llx (ADDs of distinct bits)", r,
                      (unsigned long long)v, (unsigned long long)seen);
                for (int s = 0; s < np; s++)
                    if ((v & ~seen) & (1ULL << s)) {
                        size_t bad = 0;
                        CHECK(
                            test_verify(g_big + (size_t)s * SLICE, SLICE, s, t, &bad),
                            "fan-in round %d: PE %d's slice byte %zu wrong after its ADD was seen",
                            r, s, bad);
                    }
                seen = v;
            }
            CHECK(shmem_signal_fetch(sig) == all, "fan-in final signal");
        }
        shmem_barrier_all();
    }
}

/* signal_wait_until with each comparison; the peer changes the signal after a
 * random delay with signal_set / signal_add (plain, ctx_, generic). */
static void every_cmp(int t)
{
    uint64_t *sig = &g_sig[11];
    struct step {
        int cmp;
        uint64_t value; /* wait until sig <cmp> value */
        int op;         /* what the peer does */
        uint64_t arg;
        uint64_t after; /* the signal afterwards */
    } steps[] = {
        {SHMEM_CMP_NE, 100, SHMEM_SIGNAL_SET, 200, 200},
        {SHMEM_CMP_EQ, 300, SHMEM_SIGNAL_ADD, 100, 300},
        {SHMEM_CMP_GT, 300, SHMEM_SIGNAL_ADD, 1, 301},
        {SHMEM_CMP_GE, 310, SHMEM_SIGNAL_SET, 310, 310},
        {SHMEM_CMP_LT, 100, SHMEM_SIGNAL_SET, 50, 50},
        {SHMEM_CMP_LE, 40, SHMEM_SIGNAL_SET, 40, 40},
        {SHMEM_CMP_GE, 40, SHMEM_SIGNAL_ADD, 0, 40}, /* already true */
    };
    *sig = 100;
    shmem_barrier_all();
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        struct step *s = &steps[i];
        uint64_t before = shmem_signal_fetch(sig);
        sleep_us((unsigned)(rv(me, t, i) % 3000));
        switch ((i + (size_t)me) % 3) {
        case 0:
            if (s->op == SHMEM_SIGNAL_SET)
                shmem_signal_set(sig, s->arg, to);
            else
                shmem_signal_add(sig, s->arg, to);
            break;
        case 1:
            if (s->op == SHMEM_SIGNAL_SET)
                shmem_ctx_signal_set(SHMEM_CTX_DEFAULT, sig, s->arg, to);
            else
                shmem_ctx_signal_add(SHMEM_CTX_DEFAULT, sig, s->arg, to);
            break;
        default: /* C11 generic, with and without a context */
            if (s->op == SHMEM_SIGNAL_SET)
                shmem_signal_set(SHMEM_CTX_DEFAULT, sig, s->arg, to);
            else
                shmem_signal_add(SHMEM_CTX_DEFAULT, sig, s->arg, to);
            break;
        }
        uint64_t got = shmem_signal_wait_until(sig, s->cmp, s->value);
        CHECK(got == s->after,
              "signal_wait_until step %zu (cmp %d %llu): returned %llu, want %llu "
              "(was %llu)",
              i, s->cmp, (unsigned long long)s->value, (unsigned long long)got,
              (unsigned long long)s->after, (unsigned long long)before);
        CHECK(shmem_signal_fetch(sig) == s->after, "signal_fetch after step %zu", i);
        shmem_barrier_all(); /* nobody starts the next step before this one is seen */
    }
}

/* A thread of each PE flips `to`'s signal between 0 and 1 as fast as it can
 * while the main thread waits for it to be 1, over and over: what
 * shmem_signal_wait_until returns must be the value that satisfied the
 * condition (1), not a later reload (the spec: "the contents of sig_addr ...
 * that satisfies the wait condition"). Oversubscribing the cores makes a
 * waiter preempted between the two loads likely. */
static uint64_t *g_flip_sig;
static long *g_flip_stop;

static void *flipper(void *arg)
{
    (void)arg;
    uint64_t v = 0;
    for (unsigned i = 0; !__atomic_load_n(g_flip_stop, __ATOMIC_ACQUIRE); i++) {
        v ^= 1;
        if (i % 2)
            shmem_signal_set(g_flip_sig, v, to);
        else
            shmem_ctx_signal_set(SHMEM_CTX_DEFAULT, g_flip_sig, v, to);
    }
    return NULL;
}

static void wait_returns_satisfying_value(void)
{
    g_flip_sig = &g_sig[12];
    g_flip_stop = (long *)&g_sig[13];
    *g_flip_sig = 0;
    *g_flip_stop = 0;
    shmem_barrier_all();
    pthread_t th;
    CHECK(pthread_create(&th, NULL, flipper, NULL) == 0, "pthread_create");
    struct timespec t0, t1;
    long waits = 0, bad = 0;
    uint64_t last_bad = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 100; i++, waits++) {
            uint64_t v = shmem_signal_wait_until(g_flip_sig, SHMEM_CMP_EQ, 1);
            if (v != 1) {
                bad++;
                last_bad = v;
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
    } while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 300000000L);
    shmem_long_atomic_set(g_flip_stop, 1, from); /* stop the thread flipping our signal */
    pthread_join(th, NULL);
    CHECK(bad == 0,
          "shmem_signal_wait_until(EQ 1) returned %llu, a value that does not satisfy the "
          "condition, in %ld of %ld waits",
          (unsigned long long)last_bad, bad, waits);
    shmem_barrier_all();
}

int main(void)
{
    int provided = -1;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    CHECK(provided == SHMEM_THREAD_MULTIPLE, "SHMEM_THREAD_MULTIPLE not provided (%d)", provided);
    me = shmem_my_pe();
    np = shmem_n_pes();
    to = (me + 1) % np;
    from = (me + np - 1) % np;
    g_dst = shmem_align(64, (size_t)NVAR * REGION);
    g_src = shmem_align(64, REGION);
    g_sig = shmem_calloc(16, sizeof(uint64_t));
    g_big = shmem_align(4096, BIG);
    g_bigsrc = malloc(BIG);
    CHECK(g_dst && g_src && g_sig && g_big && g_bigsrc, "allocation failed");

    int t = 0;
    for (int rep = 0; rep < 2; rep++) {
#define RUN_TYPED(T, N, kind_unused) typed_##N(t++);
        TEST_RMA_TYPES(RUN_TYPED)
#define RUN_SIZED(B, E) sized_##B(t++);
        SIZED(RUN_SIZED)
        mem_forms(t++);
    }
    every_cmp(t++);
    big_stream(t, 24);
    t += 100;
    fan_in(t, 4 * np);
    wait_returns_satisfying_value();

    shmem_barrier_all();
    free(g_bigsrc);
    shmem_free(g_big);
    shmem_free(g_sig);
    shmem_free(g_src);
    shmem_free(g_dst);
    shmem_finalize();
    return 0;
}
