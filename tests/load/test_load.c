/* Load held (issue 12's reliability figures): every PE, for ROUNDS rounds,
 *   - puts its slot of every peer's region (itself included) in random-sized
 *     pieces in random order, through putmem, putmem_nbi, char_put and a
 *     second context's putmem_nbi; every PE checks every byte of every slot;
 *   - gets random ranges at random offsets from random peers' sources
 *     (getmem, getmem_nbi, char_get, the context's getmem_nbi) and checks
 *     every byte against the owner's generator;
 *   - runs fetch_add, add (default context and the second one), inc and
 *     fetch_inc on counters of every PE: exact totals at the end, and the
 *     tickets handed out by fetch_inc are 0..T-1 (sum and sum of squares);
 *   - put_signals a random-sized payload to every peer and signal_adds a
 *     shared count: the receiver checks the payload as soon as the signal
 *     shows, and the count exactly;
 *   - increments a counter non-atomically (get, then put) under a lock: exact;
 *   - interleaves barrier_all, sync_all, reduce, broadcast, fcollect and
 *     alltoall on the world, and a strided split (every round) or a 2-D split
 *     (every fourth round) with a reduce and a sync on the new team.
 * PE 0 prints one FIGURE line with the counts summed over all PEs.
 * ROUNDS rounds; fewer in sanitizer builds and when peers go through the mpi
 * transport (tests/mpi runs this suite), where each operation costs far more;
 * USHMEM_LOAD_ROUNDS overrides (hand runs).
 * USHMEM_TEST_NPES: 4 8 */
#include <time.h>

#include "test_util.h"

#define ROUNDS 400
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SLOW_ROUNDS 100
#else
#define SLOW_ROUNDS 24
#endif
#define SLOT    8192  /* bytes each PE puts into each peer's region per round */
#define CHUNK   2048  /* largest put piece */
#define SRC     32768 /* each PE's get source */
#define NGET    24    /* gets per PE per round */
#define GMAX    4096  /* largest get */
#define SSLOT   4096  /* largest put_signal payload */
#define NAMO    6     /* per kind, per target, per round */
#define NLOCK   3     /* lock sections per PE per round */
#define NTICKET 4     /* fetch_inc per PE per round */
#define NVEC    8     /* collective vector length */

enum {
    C_PUT,
    C_PUT_B,
    C_GET,
    C_GET_B,
    C_SIG,
    C_SIG_B,
    C_FADD,
    C_ADD,
    C_INC,
    C_FINC,
    C_LOCK,
    C_BAR,
    C_COLL,
    C_TEAM,
    C_N
};

static long ctr[3];     /* fetch_add, add, inc */
static uint64_t ticket; /* fetch_inc, on PE 0 */
static long lk, lcount; /* lock and its counter (on the last PE) */
static uint64_t sigsum; /* signal_add count */
/* one destination per collective: a peer still checking one result must not
 * see it overwritten by the next collective */
static long vsrc[NVEC], rdst[NVEC], bsrc[NVEC], bdst[NVEC];
static long fsrc[NVEC], fdst[64 * NVEC], asrc[64 * NVEC], adst[64 * NVEC];
static long tsrc, tdst[2];
static size_t cut[SLOT + 1], order[SLOT];

static uint64_t rng_state;
static uint64_t rnd(uint64_t n)
{
    rng_state = test_mix(rng_state);
    return rng_state % n;
}

/* fill keys: pe in the generator's own field, the round and target here */
static int key_put(int r, int t)
{
    return r << 12 | t;
}
static int key_sig(int r, int t)
{
    return r << 12 | 0x800 | t;
}
static int key_src(int r)
{
    return r << 12 | 0xfff;
}

static size_t sig_len(int from, int r, int to)
{
    return 1 +
           test_mix(test_seed() ^ (uint64_t)from << 40 ^ (uint64_t)r << 20 ^ (uint64_t)to) % SSLOT;
}

static long fadd_val(int w, int r, int t, int j)
{
    return 1 + (w * 131 + r * 17 + t * 7 + j) % 251;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void team_round(shmem_team_t team, int which, long *count)
{
    if (team == SHMEM_TEAM_INVALID)
        return;
    int tn = shmem_team_n_pes(team);
    long want = 0;
    for (int i = 0; i < tn; i++)
        want += shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD);
    tsrc = shmem_my_pe();
    CHECK(shmem_long_sum_reduce(team, &tdst[which], &tsrc, 1) == 0, "team reduce");
    CHECK(tdst[which] == want, "team reduce %ld, want %ld", tdst[which], want);
    CHECK(shmem_team_sync(team) == 0, "team_sync");
    count[C_COLL] += 2;
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int rounds = test_all_mapped() ? ROUNDS : SLOW_ROUNDS;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    rounds = SLOW_ROUNDS;
#endif
    if (getenv("USHMEM_LOAD_ROUNDS"))
        rounds = atoi(getenv("USHMEM_LOAD_ROUNDS"));
    CHECK(n <= 64 && rounds > 0 && rounds < 4096, "n %d rounds %d", n, rounds);
    rng_state = test_mix(test_seed() ^ (uint64_t)me << 32);

    unsigned char *pbuf = shmem_malloc((size_t)n * SLOT);
    unsigned char *gsrc = shmem_malloc(SRC);
    unsigned char *sbuf = shmem_malloc((size_t)n * SSLOT);
    uint64_t *sig = shmem_calloc((size_t)n, sizeof(uint64_t));
    CHECK(pbuf && gsrc && sbuf && sig, "shmem_malloc");
    unsigned char *psrc = malloc((size_t)n * SLOT);    /* what I put, per target */
    unsigned char *ssrc = malloc(SSLOT);               /* put_signal payload */
    unsigned char *gexp = malloc((size_t)n * SRC);     /* every owner's source this round */
    unsigned char *gdst = malloc((size_t)NGET * GMAX); /* what I got */
    int gpe[NGET];
    size_t goff[NGET], glen[NGET];
    CHECK(psrc && ssrc && gexp && gdst, "malloc");
    shmem_ctx_t ctx;
    if (shmem_ctx_create(0, &ctx) != 0)
        ctx = SHMEM_CTX_DEFAULT;
    long count[C_N] = {0};
    uint64_t tsum = 0, tsq = 0;

    shmem_barrier_all();
    double t0 = now_s();
    for (int r = 1; r <= rounds; r++) {
        test_fill(gsrc, SRC, me, key_src(r));
        for (int t = 0; t < n; t++)
            test_fill(gexp + (size_t)t * SRC, SRC, t, key_src(r));
        shmem_barrier_all(); /* sources ready */
        count[C_BAR]++;

        /* puts and atomics, target by target from a random first one */
        int first = (int)rnd((uint64_t)n);
        for (int k = 0; k < n; k++) {
            int t = (first + k) % n;
            unsigned char *src = psrc + (size_t)t * SLOT, *dst = pbuf + (size_t)me * SLOT;
            test_fill(src, SLOT, me, key_put(r, t));
            /* random cut points, pieces issued in a random order */
            size_t ncut = 0, off = 0;
            while (off < SLOT) {
                cut[ncut++] = off;
                off += 1 + rnd(CHUNK);
            }
            cut[ncut] = SLOT;
            for (size_t i = 0; i < ncut; i++)
                order[i] = i;
            for (size_t i = ncut; i > 1; i--) {
                size_t j = rnd(i), x = order[i - 1];
                order[i - 1] = order[j];
                order[j] = x;
            }
            for (size_t i = 0; i < ncut; i++) {
                size_t a = cut[order[i]], len = cut[order[i] + 1] - a;
                switch (rnd(4)) {
                case 0: shmem_putmem(dst + a, src + a, len, t); break;
                case 1: shmem_putmem_nbi(dst + a, src + a, len, t); break;
                case 2: shmem_char_put((char *)dst + a, (const char *)src + a, len, t); break;
                default: shmem_ctx_putmem_nbi(ctx, dst + a, src + a, len, t); break;
                }
                count[C_PUT]++;
                count[C_PUT_B] += (long)len;
            }
            for (int j = 0; j < NAMO; j++) {
                (void)shmem_long_atomic_fetch_add(&ctr[0], fadd_val(me, r, t, j), t);
                if (j % 2)
                    shmem_ctx_long_atomic_add(ctx, &ctr[1], me + 1, t);
                else
                    shmem_long_atomic_add(&ctr[1], me + 1, t);
                shmem_long_atomic_inc(&ctr[2], t);
            }
            count[C_FADD] += NAMO;
            count[C_ADD] += NAMO;
            count[C_INC] += NAMO;
        }
        for (int j = 0; j < NTICKET; j++) {
            uint64_t v = shmem_uint64_atomic_fetch_inc(&ticket, 0);
            tsum += v;
            tsq += v * v;
        }
        count[C_FINC] += NTICKET;

        /* gets: random peers, offsets and sizes */
        for (int i = 0; i < NGET; i++) {
            gpe[i] = (int)rnd((uint64_t)n);
            glen[i] = 1 + rnd(GMAX);
            goff[i] = rnd(SRC - glen[i] + 1);
            unsigned char *d = gdst + (size_t)i * GMAX;
            switch (rnd(4)) {
            case 0: shmem_getmem(d, gsrc + goff[i], glen[i], gpe[i]); break;
            case 1: shmem_getmem_nbi(d, gsrc + goff[i], glen[i], gpe[i]); break;
            case 2: shmem_char_get((char *)d, (const char *)gsrc + goff[i], glen[i], gpe[i]); break;
            default: shmem_ctx_getmem_nbi(ctx, d, gsrc + goff[i], glen[i], gpe[i]); break;
            }
            count[C_GET]++;
            count[C_GET_B] += (long)glen[i];
        }
        shmem_quiet();
        shmem_ctx_quiet(ctx);
        for (int i = 0; i < NGET; i++) {
            const unsigned char *want = gexp + (size_t)gpe[i] * SRC + goff[i];
            CHECK(memcmp(gdst + (size_t)i * GMAX, want, glen[i]) == 0,
                  "round %d: get of %zu bytes at %zu from PE %d differs", r, glen[i], goff[i],
                  gpe[i]);
        }

        /* put_signal to every peer; signal_add on a shared count */
        for (int k = 1; k < n; k++) {
            int t = (me + k) % n;
            size_t len = sig_len(me, r, t);
            test_fill(ssrc, len, me, key_sig(r, t));
            shmem_putmem_signal(sbuf + (size_t)me * SSLOT, ssrc, len, &sig[me], (uint64_t)r,
                                SHMEM_SIGNAL_SET, t);
            shmem_signal_add(&sigsum, 1, t);
            count[C_SIG] += 2;
            count[C_SIG_B] += (long)len;
        }
        for (int k = 1; k < n; k++) {
            int w = (me + n - k) % n;
            uint64_t got = shmem_signal_wait_until(&sig[w], SHMEM_CMP_EQ, (uint64_t)r);
            CHECK(got == (uint64_t)r, "signal from PE %d: %llu", w, (unsigned long long)got);
            size_t len = sig_len(w, r, me), bad = 0;
            CHECK(test_verify(sbuf + (size_t)w * SSLOT, len, w, key_sig(r, me), &bad),
                  "round %d: put_signal payload from PE %d (%zu bytes) differs at %zu", r, w, len,
                  bad);
        }

        shmem_ctx_quiet(ctx);
        shmem_barrier_all(); /* puts complete */
        count[C_BAR]++;
        for (int w = 0; w < n; w++) {
            size_t bad = 0;
            CHECK(test_verify(pbuf + (size_t)w * SLOT, SLOT, w, key_put(r, me), &bad),
                  "round %d: slot of PE %d differs at byte %zu", r, w, bad);
        }
        CHECK(shmem_signal_fetch(&sigsum) == (uint64_t)(n - 1) * (uint64_t)r,
              "round %d: signal count %llu, want %llu", r,
              (unsigned long long)shmem_signal_fetch(&sigsum),
              (unsigned long long)((uint64_t)(n - 1) * (uint64_t)r));

        /* lock-protected non-atomic increments */
        for (int j = 0; j < NLOCK; j++) {
            shmem_set_lock(&lk);
            long v = shmem_long_g(&lcount, n - 1);
            shmem_long_p(&lcount, v + 1, n - 1);
            shmem_clear_lock(&lk);
        }
        count[C_LOCK] += NLOCK;

        /* world collectives */
        for (int i = 0; i < NVEC; i++)
            vsrc[i] = (long)me * (i + 1) + r;
        CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, rdst, vsrc, NVEC) == 0, "reduce");
        for (int i = 0; i < NVEC; i++)
            CHECK(rdst[i] == (long)n * (n - 1) / 2 * (i + 1) + (long)n * r, "reduce[%d] %ld", i,
                  rdst[i]);
        int root = r % n;
        for (int i = 0; i < NVEC; i++)
            bsrc[i] = (long)root << 20 | (long)r << 8 | i;
        CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, bdst, bsrc, NVEC, root) == 0, "broadcast");
        for (int i = 0; i < NVEC; i++)
            CHECK(bdst[i] == ((long)root << 20 | (long)r << 8 | i), "broadcast[%d] %ld", i,
                  bdst[i]);
        shmem_sync_all();
        for (int i = 0; i < NVEC; i++)
            fsrc[i] = (long)me << 20 | (long)r << 8 | i;
        CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, fdst, fsrc, NVEC) == 0, "fcollect");
        for (int p = 0; p < n; p++)
            for (int i = 0; i < NVEC; i++)
                CHECK(fdst[p * NVEC + i] == ((long)p << 20 | (long)r << 8 | i), "fcollect");
        for (int p = 0; p < n; p++)
            for (int i = 0; i < NVEC; i++)
                asrc[p * NVEC + i] = (long)me << 24 | (long)p << 16 | (long)r << 4 | i;
        CHECK(shmem_long_alltoall(SHMEM_TEAM_WORLD, adst, asrc, NVEC) == 0, "alltoall");
        for (int p = 0; p < n; p++)
            for (int i = 0; i < NVEC; i++)
                CHECK(adst[p * NVEC + i] == ((long)p << 24 | (long)me << 16 | (long)r << 4 | i),
                      "alltoall from PE %d [%d]", p, i);
        count[C_COLL] += 4;
        count[C_BAR]++; /* sync_all */

        /* team splits */
        if (r % 4 == 0) {
            shmem_team_t x = SHMEM_TEAM_INVALID, y = SHMEM_TEAM_INVALID;
            CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &x, NULL, 0, &y) == 0,
                  "split_2d");
            team_round(x, 0, count);
            team_round(y, 1, count);
            shmem_team_destroy(x);
            shmem_team_destroy(y);
        } else {
            int start = r % 2;
            shmem_team_t t = SHMEM_TEAM_INVALID;
            CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, start, 2, (n - start + 1) / 2, NULL, 0,
                                           &t) == 0,
                  "split_strided");
            team_round(t, 0, count);
            if (t != SHMEM_TEAM_INVALID)
                shmem_team_destroy(t);
        }
        count[C_TEAM]++;
        shmem_barrier_all(); /* end of round: everyone done reading */
        count[C_BAR]++;
    }
    double el = now_s() - t0;

    /* exact totals */
    long want[3] = {0, 0, (long)n * NAMO * rounds};
    for (int w = 0; w < n; w++)
        for (int r = 1; r <= rounds; r++)
            for (int j = 0; j < NAMO; j++) {
                want[0] += fadd_val(w, r, me, j);
                want[1] += w + 1;
            }
    for (int i = 0; i < 3; i++)
        CHECK(ctr[i] == want[i], "counter %d: %ld, want %ld", i, ctr[i], want[i]);
    if (me == n - 1)
        CHECK(lcount == (long)n * NLOCK * rounds, "lock counter %ld, want %ld", lcount,
              (long)n * NLOCK * rounds);
    static uint64_t tin[2], tout[2];
    tin[0] = tsum;
    tin[1] = tsq;
    CHECK(shmem_uint64_sum_reduce(SHMEM_TEAM_WORLD, tout, tin, 2) == 0, "ticket reduce");
    uint64_t T = (uint64_t)n * NTICKET * (uint64_t)rounds;
    if (me == 0)
        CHECK(ticket == T, "ticket %llu, want %llu", (unsigned long long)ticket,
              (unsigned long long)T);
    CHECK(tout[0] == T * (T - 1) / 2 && tout[1] == (T - 1) * T * (2 * T - 1) / 6,
          "tickets are not 0..%llu", (unsigned long long)(T - 1));

    static long csrc[C_N], call[C_N];
    memcpy(csrc, count, sizeof count);
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, call, csrc, C_N) == 0, "count reduce");
    if (me == 0)
        printf("FIGURE load np=%d rounds=%d: %.2f s; puts %ld (%ld bytes), gets %ld (%ld bytes), "
               "put_signal+signal_add %ld (%ld bytes), fetch_add %ld, add %ld, inc %ld, "
               "fetch_inc %ld, lock sections %ld, barrier/sync_all %ld, collectives %ld, team "
               "splits %ld; %ld RMA bytes checked; totals exact\n",
               n, rounds, el, call[C_PUT], call[C_PUT_B], call[C_GET], call[C_GET_B], call[C_SIG],
               call[C_SIG_B], call[C_FADD], call[C_ADD], call[C_INC], call[C_FINC], call[C_LOCK],
               call[C_BAR] / n, call[C_COLL], call[C_TEAM] / n,
               call[C_PUT_B] + call[C_GET_B] + call[C_SIG_B]);

    if (ctx != SHMEM_CTX_DEFAULT)
        shmem_ctx_destroy(ctx);
    shmem_free(sig);
    shmem_free(sbuf);
    shmem_free(gsrc);
    shmem_free(pbuf);
    free(psrc);
    free(ssrc);
    free(gexp);
    free(gdst);
    shmem_finalize();
    return 0;
}
