/* Every AMO for every type of its spec table, typed, ctx_ on SHMEM_CTX_DEFAULT
 * and C11 generic, blocking and _nbi (+ quiet), with random values:
 *   extended AMO types: fetch, set, swap (+ fetch_nbi, swap_nbi), and swap
 *     under contention (the values seen form exactly the values put in);
 *   standard AMO types: compare_swap (success and failure), fetch_inc, inc,
 *     fetch_add, add (+ _nbi fetching forms); under contention on PE
 *     (t % npes): a compare_swap increment loop, fetch_inc results that are a
 *     permutation of 0..n-1, fetch_add results that chain exactly, exact sums;
 *   bitwise AMO types: fetch_and/or/xor, and/or/xor (+ _nbi): each PE owns
 *     distinct bits of one object, so every fetched value and the final value
 *     are checkable;
 *   the deprecated names (shmem_int_fadd, ..., shmem_swap) once each.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include "test_types.h"
#include "test_util.h"

/* Type tables: TEST_AMO_{STD,EXT,BIT}_TYPES in test_types.h. */

#define NSLOT 32
#define K     40 /* contended operations per PE per object */

typedef struct {
    uint64_t f, a; /* fetched value, operand (bit patterns) */
} rec_t;
enum { SEC_SWAP, SEC_FINC, SEC_FADD, NSEC };

static int me, np, to, from;
static unsigned char *g_obj; /* symmetric: NSLOT 8-byte slots */
static rec_t *g_rec;         /* symmetric: NSEC * K records */
static rec_t *g_all;         /* local: np * K records gathered from every PE */

#define SLOT(T, i) ((T *)(g_obj + 8 * (i)))

static uint64_t rv(int pe, int t, size_t i)
{
    return test_mix(test_seed() ^ ((uint64_t)(unsigned)pe << 44) ^ ((uint64_t)t << 24) ^ i);
}

#define GEN_F(T, r) ((T)(int32_t)((r) >> 40) / (T)4)
#define GEN_I(T, r) ((T)(r))

static uint64_t bits_of(const void *v, size_t n)
{
    uint64_t u = 0;
    memcpy(&u, v, n);
    return u;
}
#define BITS(T, v) bits_of(&(T){(v)}, sizeof(T))

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}
static int cmp_rec(const void *a, const void *b)
{
    return cmp_u64(&((const rec_t *)a)->f, &((const rec_t *)b)->f);
}

/* Every PE's records of one section, in g_all; returns the count. */
static size_t gather(int sec, size_t per_pe)
{
    for (int pe = 0; pe < np; pe++)
        shmem_getmem(g_all + (size_t)pe * per_pe, g_rec + (size_t)sec * K, per_pe * sizeof(rec_t),
                     pe);
    return (size_t)np * per_pe;
}

/* ---------------- extended: fetch, set, swap ---------------- */

#define DEF_EXT(T, N, KIND)                                                                        \
    static T ev_##N(int pe, int t, size_t i)                                                       \
    {                                                                                              \
        return GEN_##KIND(T, rv(pe, t, i));                                                        \
    }                                                                                              \
    static void ext_##N(int t)                                                                     \
    {                                                                                              \
        T *a = SLOT(T, 0), *b = SLOT(T, 1), *c = SLOT(T, 2), *d = SLOT(T, 3), *s = SLOT(T, 4);     \
        T f;                                                                                       \
        int tg = t % np;                                                                           \
        *s = ev_##N(me, t, 99); /* the contended object's start value (used on tg) */              \
        shmem_barrier_all();                                                                       \
        /* set: slot i of PE `to` is written by this PE only */                                    \
        shmem_##N##_atomic_set(a, ev_##N(me, t, 0), to);                                           \
        shmem_ctx_##N##_atomic_set(SHMEM_CTX_DEFAULT, b, ev_##N(me, t, 1), to);                    \
        shmem_atomic_set(c, ev_##N(me, t, 2), to);                                                 \
        shmem_atomic_set(SHMEM_CTX_DEFAULT, d, ev_##N(me, t, 3), to);                              \
        shmem_barrier_all();                                                                       \
        CHECK(*a == ev_##N(from, t, 0), "%s atomic_set", #N);                                      \
        CHECK(*b == ev_##N(from, t, 1), "%s ctx_atomic_set", #N);                                  \
        CHECK(*c == ev_##N(from, t, 2), "%s generic atomic_set", #N);                              \
        CHECK(*d == ev_##N(from, t, 3), "%s generic ctx atomic_set", #N);                          \
        shmem_barrier_all(); /* `from` swaps into these slots next */                              \
        /* fetch */                                                                                \
        CHECK(shmem_##N##_atomic_fetch(a, to) == ev_##N(me, t, 0), "%s atomic_fetch", #N);         \
        CHECK(shmem_ctx_##N##_atomic_fetch(SHMEM_CTX_DEFAULT, b, to) == ev_##N(me, t, 1),          \
              "%s ctx_atomic_fetch", #N);                                                          \
        CHECK(shmem_atomic_fetch(c, to) == ev_##N(me, t, 2), "%s generic atomic_fetch", #N);       \
        CHECK(shmem_atomic_fetch(SHMEM_CTX_DEFAULT, d, to) == ev_##N(me, t, 3),                    \
              "%s generic ctx atomic_fetch", #N);                                                  \
        f = 0;                                                                                     \
        shmem_##N##_atomic_fetch_nbi(&f, a, to);                                                   \
        shmem_quiet();                                                                             \
        CHECK(f == ev_##N(me, t, 0), "%s atomic_fetch_nbi", #N);                                   \
        f = 0;                                                                                     \
        shmem_ctx_##N##_atomic_fetch_nbi(SHMEM_CTX_DEFAULT, &f, b, to);                            \
        shmem_ctx_quiet(SHMEM_CTX_DEFAULT);                                                        \
        CHECK(f == ev_##N(me, t, 1), "%s ctx_atomic_fetch_nbi", #N);                               \
        f = 0;                                                                                     \
        shmem_atomic_fetch_nbi(&f, c, to);                                                         \
        shmem_quiet();                                                                             \
        CHECK(f == ev_##N(me, t, 2), "%s generic atomic_fetch_nbi", #N);                           \
        /* swap returns the previous value */                                                      \
        CHECK(shmem_##N##_atomic_swap(a, ev_##N(me, t, 10), to) == ev_##N(me, t, 0),               \
              "%s atomic_swap", #N);                                                               \
        CHECK(shmem_ctx_##N##_atomic_swap(SHMEM_CTX_DEFAULT, b, ev_##N(me, t, 11), to) ==          \
                  ev_##N(me, t, 1),                                                                \
              "%s ctx_atomic_swap", #N);                                                           \
        CHECK(shmem_atomic_swap(c, ev_##N(me, t, 12), to) == ev_##N(me, t, 2),                     \
              "%s generic atomic_swap", #N);                                                       \
        f = 0;                                                                                     \
        shmem_##N##_atomic_swap_nbi(&f, d, ev_##N(me, t, 13), to);                                 \
        shmem_quiet();                                                                             \
        CHECK(f == ev_##N(me, t, 3), "%s atomic_swap_nbi", #N);                                    \
        f = 0;                                                                                     \
        shmem_ctx_##N##_atomic_swap_nbi(SHMEM_CTX_DEFAULT, &f, a, ev_##N(me, t, 14), to);          \
        shmem_quiet();                                                                             \
        CHECK(f == ev_##N(me, t, 10), "%s ctx_atomic_swap_nbi", #N);                               \
        f = 0;                                                                                     \
        shmem_atomic_swap_nbi(&f, b, ev_##N(me, t, 15), to);                                       \
        shmem_quiet();                                                                             \
        CHECK(f == ev_##N(me, t, 11), "%s generic atomic_swap_nbi", #N);                           \
        /* contention: everybody swaps into one object on tg */                                    \
        T nbi_f[K];                                                                                \
        for (int k = 0; k < K; k++) {                                                              \
            T v = ev_##N(me, t, 100 + (size_t)k), r = 0;                                           \
            switch (k % 4) {                                                                       \
            case 0: r = shmem_##N##_atomic_swap(s, v, tg); break;                                  \
            case 1: r = shmem_ctx_##N##_atomic_swap(SHMEM_CTX_DEFAULT, s, v, tg); break;           \
            case 2: shmem_##N##_atomic_swap_nbi(&nbi_f[k], s, v, tg); break;                       \
            case 3: shmem_ctx_##N##_atomic_swap_nbi(SHMEM_CTX_DEFAULT, &nbi_f[k], s, v, tg);       \
                break;                                                                             \
            }                                                                                      \
            if (k % 4 < 2)                                                                         \
                nbi_f[k] = r;                                                                      \
        }                                                                                          \
        shmem_quiet();                                                                             \
        for (int k = 0; k < K; k++)                                                                \
            g_rec[SEC_SWAP * K + k] =                                                              \
                (rec_t){BITS(T, nbi_f[k]), BITS(T, ev_##N(me, t, 100 + (size_t)k))};               \
        shmem_barrier_all();                                                                       \
        CHECK(*a == ev_##N(from, t, 14), "%s: final value of ctx swap_nbi", #N);                   \
        CHECK(*b == ev_##N(from, t, 15), "%s: final value of generic swap_nbi", #N);               \
        CHECK(*c == ev_##N(from, t, 12), "%s: final value of generic swap", #N);                   \
        CHECK(*d == ev_##N(from, t, 13), "%s: final value of swap_nbi", #N);                       \
        /* values seen (returned + final) == values put in (start + swapped in) */                 \
        size_t n = gather(SEC_SWAP, K);                                                            \
        uint64_t *seen = malloc((n + 1) * sizeof *seen), *put = malloc((n + 1) * sizeof *put);     \
        for (size_t i = 0; i < n; i++) {                                                           \
            seen[i] = g_all[i].f;                                                                  \
            put[i] = g_all[i].a;                                                                   \
        }                                                                                          \
        seen[n] = BITS(T, shmem_##N##_atomic_fetch(s, tg));                                        \
        put[n] = BITS(T, ev_##N(tg, t, 99));                                                       \
        qsort(seen, n + 1, sizeof *seen, cmp_u64);                                                 \
        qsort(put, n + 1, sizeof *put, cmp_u64);                                                   \
        for (size_t i = 0; i <= n; i++)                                                            \
            CHECK(seen[i] == put[i],                                                               \
                  "%s contended swap on PE %d: values returned differ from values swapped in", #N, \
                  tg);                                                                             \
        free(seen);                                                                                \
        free(put);                                                                                 \
        shmem_barrier_all();                                                                       \
    }

TEST_AMO_EXT_TYPES(DEF_EXT)

/* ---------------- standard: compare_swap, inc, add ---------------- */

#define DEF_STD(T, N)                                                                              \
    /* distinct small values (spaced by 1000), negative too for signed types */                    \
    static T sv_##N(int pe, int t, size_t k)                                                       \
    {                                                                                              \
        return (T)((int64_t)(k * 1000 + rv(pe, t, k) % 1000) - 3000);                              \
    }                                                                                              \
    static void std_##N(int t)                                                                     \
    {                                                                                              \
        T *a = SLOT(T, 5), *cs = SLOT(T, 6), *fi = SLOT(T, 7), *in = SLOT(T, 8);                   \
        T *fa = SLOT(T, 9), *ad = SLOT(T, 10), f;                                                  \
        int tg_cs = t % np, tg_fi = (t + 1) % np, tg_in = (t + 2) % np, tg_fa = (t + 3) % np;      \
        int tg_ad = (t + 4) % np;                                                                  \
        T fa0 = (T)(rv(-2, t, 0) % 1000), ad0 = (T)(rv(-2, t, 1) % 1000);                          \
        *a = sv_##N(me, t, 0);                                                                     \
        *cs = 0;                                                                                   \
        *fi = 0;                                                                                   \
        *in = 0;                                                                                   \
        *fa = fa0;                                                                                 \
        *ad = ad0;                                                                                 \
        shmem_barrier_all();                                                                       \
        /* compare_swap on `to`'s slot, written only by this PE; `to` starts at sv(to,0) */        \
        T x0 = sv_##N(to, t, 0);                                                                   \
        CHECK(shmem_##N##_atomic_compare_swap(a, (T)(x0 + 1), sv_##N(me, t, 9), to) == x0,         \
              "%s compare_swap failure case: returned value", #N);                                 \
        CHECK(shmem_##N##_atomic_fetch(a, to) == x0, "%s failed compare_swap changed dest", #N);   \
        CHECK(shmem_##N##_atomic_compare_swap(a, x0, sv_##N(me, t, 1), to) == x0,                  \
              "%s compare_swap success case", #N);                                                 \
        CHECK(shmem_##N##_atomic_fetch(a, to) == sv_##N(me, t, 1),                                 \
              "%s compare_swap did not store", #N);                                                \
        CHECK(shmem_ctx_##N##_atomic_compare_swap(SHMEM_CTX_DEFAULT, a, x0, sv_##N(me, t, 9),      \
                                                  to) == sv_##N(me, t, 1),                         \
              "%s ctx_compare_swap failure", #N);                                                  \
        CHECK(shmem_ctx_##N##_atomic_compare_swap(SHMEM_CTX_DEFAULT, a, sv_##N(me, t, 1),          \
                                                  sv_##N(me, t, 2), to) == sv_##N(me, t, 1),       \
              "%s ctx_compare_swap success", #N);                                                  \
        CHECK(shmem_atomic_compare_swap(a, sv_##N(me, t, 2), sv_##N(me, t, 3), to) ==              \
                  sv_##N(me, t, 2),                                                                \
              "%s generic compare_swap", #N);                                                      \
        f = 0;                                                                                     \
        shmem_##N##_atomic_compare_swap_nbi(&f, a, sv_##N(me, t, 3), sv_##N(me, t, 4), to);        \
        shmem_quiet();                                                                             \
        CHECK(f == sv_##N(me, t, 3), "%s compare_swap_nbi success", #N);                           \
        f = 0;                                                                                     \
        shmem_##N##_atomic_compare_swap_nbi(&f, a, sv_##N(me, t, 3), sv_##N(me, t, 9), to);        \
        shmem_quiet();                                                                             \
        CHECK(f == sv_##N(me, t, 4), "%s compare_swap_nbi failure", #N);                           \
        f = 0;                                                                                     \
        shmem_ctx_##N##_atomic_compare_swap_nbi(SHMEM_CTX_DEFAULT, &f, a, sv_##N(me, t, 4),        \
                                                sv_##N(me, t, 5), to);                             \
        shmem_quiet();                                                                             \
        CHECK(f == sv_##N(me, t, 4), "%s ctx_compare_swap_nbi", #N);                               \
        f = 0;                                                                                     \
        shmem_atomic_compare_swap_nbi(&f, a, sv_##N(me, t, 5), sv_##N(me, t, 6), to);              \
        shmem_quiet();                                                                             \
        CHECK(f == sv_##N(me, t, 5), "%s generic compare_swap_nbi", #N);                           \
        /* contended: a compare_swap increment loop on tg_cs */                                    \
        for (int k = 0; k < K; k++) {                                                              \
            T old, got;                                                                            \
            do {                                                                                   \
                old = shmem_##N##_atomic_fetch(cs, tg_cs);                                         \
                got = (k & 1) ? shmem_ctx_##N##_atomic_compare_swap(SHMEM_CTX_DEFAULT, cs, old,    \
                                                                    (T)(old + 1), tg_cs)           \
                              : shmem_##N##_atomic_compare_swap(cs, old, (T)(old + 1), tg_cs);     \
            } while (got != old);                                                                  \
        }                                                                                          \
        /* contended fetch_inc: record what came back */                                           \
        T fv[K];                                                                                   \
        for (int k = 0; k < K; k++) {                                                              \
            switch (k % 5) {                                                                       \
            case 0: fv[k] = shmem_##N##_atomic_fetch_inc(fi, tg_fi); break;                        \
            case 1: fv[k] = shmem_ctx_##N##_atomic_fetch_inc(SHMEM_CTX_DEFAULT, fi, tg_fi); break; \
            case 2: fv[k] = shmem_atomic_fetch_inc(fi, tg_fi); break;                              \
            case 3: shmem_##N##_atomic_fetch_inc_nbi(&fv[k], fi, tg_fi); break;                    \
            case 4:                                                                                \
                shmem_ctx_##N##_atomic_fetch_inc_nbi(SHMEM_CTX_DEFAULT, &fv[k], fi, tg_fi);        \
                break;                                                                             \
            }                                                                                      \
        }                                                                                          \
        shmem_quiet();                                                                             \
        for (int k = 0; k < K; k++)                                                                \
            g_rec[SEC_FINC * K + k] = (rec_t){BITS(T, fv[k]), 1};                                  \
        /* contended inc */                                                                        \
        for (int k = 0; k < K; k++) {                                                              \
            if (k % 4 == 0)                                                                        \
                shmem_##N##_atomic_inc(in, tg_in);                                                 \
            else if (k % 4 == 1)                                                                   \
                shmem_ctx_##N##_atomic_inc(SHMEM_CTX_DEFAULT, in, tg_in);                          \
            else if (k % 4 == 2)                                                                   \
                shmem_atomic_inc(in, tg_in);                                                       \
            else                                                                                   \
                shmem_atomic_inc(SHMEM_CTX_DEFAULT, in, tg_in);                                    \
        }                                                                                          \
        /* contended fetch_add with random addends: results chain exactly */                       \
        for (int k = 0; k < K; k++) {                                                              \
            T v = (T)(1 + rv(me, t, 300 + (size_t)k) % 1000);                                      \
            switch (k % 5) {                                                                       \
            case 0: fv[k] = shmem_##N##_atomic_fetch_add(fa, v, tg_fa); break;                     \
            case 1:                                                                                \
                fv[k] = shmem_ctx_##N##_atomic_fetch_add(SHMEM_CTX_DEFAULT, fa, v, tg_fa);         \
                break;                                                                             \
            case 2: fv[k] = shmem_atomic_fetch_add(fa, v, tg_fa); break;                           \
            case 3: shmem_##N##_atomic_fetch_add_nbi(&fv[k], fa, v, tg_fa); break;                 \
            case 4:                                                                                \
                shmem_ctx_##N##_atomic_fetch_add_nbi(SHMEM_CTX_DEFAULT, &fv[k], fa, v, tg_fa);     \
                break;                                                                             \
            }                                                                                      \
        }                                                                                          \
        shmem_quiet();                                                                             \
        for (int k = 0; k < K; k++)                                                                \
            g_rec[SEC_FADD * K + k] =                                                              \
                (rec_t){BITS(T, fv[k]), BITS(T, (T)(1 + rv(me, t, 300 + (size_t)k) % 1000))};      \
        /* contended add */                                                                        \
        for (int k = 0; k < K; k++) {                                                              \
            T v = (T)(rv(me, t, 500 + (size_t)k) % 1000);                                          \
            if (k % 4 == 0)                                                                        \
                shmem_##N##_atomic_add(ad, v, tg_ad);                                              \
            else if (k % 4 == 1)                                                                   \
                shmem_ctx_##N##_atomic_add(SHMEM_CTX_DEFAULT, ad, v, tg_ad);                       \
            else if (k % 4 == 2)                                                                   \
                shmem_atomic_add(ad, v, tg_ad);                                                    \
            else                                                                                   \
                shmem_atomic_fetch_add(SHMEM_CTX_DEFAULT, ad, v, tg_ad);                           \
        }                                                                                          \
        shmem_barrier_all();                                                                       \
        /* every PE checks every result */                                                         \
        CHECK(*a == sv_##N(from, t, 6), "%s: final compare_swap value", #N);                       \
        T fin = shmem_##N##_atomic_fetch(cs, tg_cs);                                               \
        CHECK(fin == (T)(np * K), "%s contended compare_swap loop on PE %d: %llu, want %d", #N,    \
              tg_cs, (unsigned long long)fin, np * K);                                             \
        fin = shmem_##N##_atomic_fetch(in, tg_in);                                                 \
        CHECK(fin == (T)(np * K), "%s contended inc on PE %d: %llu, want %d", #N, tg_in,           \
              (unsigned long long)fin, np * K);                                                    \
        fin = shmem_##N##_atomic_fetch(fi, tg_fi);                                                 \
        CHECK(fin == (T)(np * K), "%s contended fetch_inc final on PE %d: %llu", #N, tg_fi,        \
              (unsigned long long)fin);                                                            \
        size_t n = gather(SEC_FINC, K);                                                            \
        qsort(g_all, n, sizeof *g_all, cmp_rec);                                                   \
        for (size_t i = 0; i < n; i++)                                                             \
            CHECK(g_all[i].f == i, "%s fetch_inc values are not a permutation of 0..%zu", #N,      \
                  n - 1);                                                                          \
        n = gather(SEC_FADD, K);                                                                   \
        qsort(g_all, n, sizeof *g_all, cmp_rec);                                                   \
        CHECK(g_all[0].f == BITS(T, fa0), "%s fetch_add: first fetched value", #N);                \
        for (size_t i = 0; i + 1 < n; i++)                                                         \
            CHECK(g_all[i].f + g_all[i].a == g_all[i + 1].f,                                       \
                  "%s fetch_add results do not chain at %zu", #N, i);                              \
        fin = shmem_##N##_atomic_fetch(fa, tg_fa);                                                 \
        CHECK(BITS(T, fin) == g_all[n - 1].f + g_all[n - 1].a, "%s fetch_add final", #N);          \
        T want = ad0;                                                                              \
        for (int pe = 0; pe < np; pe++)                                                            \
            for (int k = 0; k < K; k++)                                                            \
                want = (T)(want + (T)(rv(pe, t, 500 + (size_t)k) % 1000));                         \
        fin = shmem_##N##_atomic_fetch(ad, tg_ad);                                                 \
        CHECK(fin == want, "%s contended add on PE %d: %llu, want %llu", #N, tg_ad,                \
              (unsigned long long)fin, (unsigned long long)want);                                  \
        shmem_barrier_all();                                                                       \
    }

TEST_AMO_STD_TYPES(DEF_STD)

/* ---------------- bitwise ---------------- */

/* The bits of a W-bit word that PE pe owns: b % np == pe. */
static uint64_t own_mask(int pe, unsigned w)
{
    uint64_t m = 0;
    for (unsigned b = (unsigned)pe; b < w; b += (unsigned)np)
        m |= 1ULL << b;
    return m;
}

#define DEF_BIT(T, N)                                                                              \
    static T bm_##N(int pe, int t, int k) /* PE pe's k-th random mask, within its bits */          \
    {                                                                                              \
        return (T)(rv(pe, t, 700 + (size_t)k) & own_mask(pe, 8 * sizeof(T)));                      \
    }                                                                                              \
    static void bit_##N(int t)                                                                     \
    {                                                                                              \
        T *o = SLOT(T, 11), *an = SLOT(T, 12), *x = SLOT(T, 13);                                   \
        int tg = t % np;                                                                           \
        const T mine = (T)own_mask(me, 8 * sizeof(T));                                             \
        const T x0 = (T)rv(-4, t, 0);                                                              \
        *o = 0;                                                                                    \
        *an = (T) ~(T)0;                                                                           \
        *x = x0;                                                                                   \
        shmem_barrier_all();                                                                       \
        T acc_or = 0, acc_and = mine, acc_xor = (T)(x0 & mine), f[3][K];                           \
        T want_[3][K];                                                                             \
        for (int k = 0; k < K; k++) {                                                              \
            T m = bm_##N(me, t, k);                                                                \
            want_[0][k] = acc_or;                                                                  \
            want_[1][k] = acc_and;                                                                 \
            want_[2][k] = acc_xor;                                                                 \
            f[0][k] = f[1][k] = f[2][k] = 0;                                                       \
            switch (k % 8) {                                                                       \
            case 0:                                                                                \
                f[0][k] = shmem_##N##_atomic_fetch_or(o, m, tg);                                   \
                f[1][k] = shmem_##N##_atomic_fetch_and(an, (T)~m, tg);                             \
                f[2][k] = shmem_##N##_atomic_fetch_xor(x, m, tg);                                  \
                break;                                                                             \
            case 1:                                                                                \
                f[0][k] = shmem_ctx_##N##_atomic_fetch_or(SHMEM_CTX_DEFAULT, o, m, tg);            \
                f[1][k] = shmem_ctx_##N##_atomic_fetch_and(SHMEM_CTX_DEFAULT, an, (T)~m, tg);      \
                f[2][k] = shmem_ctx_##N##_atomic_fetch_xor(SHMEM_CTX_DEFAULT, x, m, tg);           \
                break;                                                                             \
            case 2:                                                                                \
                shmem_##N##_atomic_fetch_or_nbi(&f[0][k], o, m, tg);                               \
                shmem_##N##_atomic_fetch_and_nbi(&f[1][k], an, (T)~m, tg);                         \
                shmem_##N##_atomic_fetch_xor_nbi(&f[2][k], x, m, tg);                              \
                break;                                                                             \
            case 3:                                                                                \
                shmem_ctx_##N##_atomic_fetch_or_nbi(SHMEM_CTX_DEFAULT, &f[0][k], o, m, tg);        \
                shmem_ctx_##N##_atomic_fetch_and_nbi(SHMEM_CTX_DEFAULT, &f[1][k], an, (T)~m, tg);  \
                shmem_ctx_##N##_atomic_fetch_xor_nbi(SHMEM_CTX_DEFAULT, &f[2][k], x, m, tg);       \
                break;                                                                             \
            case 4:                                                                                \
                f[0][k] = shmem_atomic_fetch_or(o, m, tg);                                         \
                f[1][k] = shmem_atomic_fetch_and(an, (T)~m, tg);                                   \
                f[2][k] = shmem_atomic_fetch_xor(x, m, tg);                                        \
                break;                                                                             \
            case 5:                                                                                \
                shmem_##N##_atomic_or(o, m, tg);                                                   \
                shmem_##N##_atomic_and(an, (T)~m, tg);                                             \
                shmem_##N##_atomic_xor(x, m, tg);                                                  \
                break;                                                                             \
            case 6:                                                                                \
                shmem_ctx_##N##_atomic_or(SHMEM_CTX_DEFAULT, o, m, tg);                            \
                shmem_ctx_##N##_atomic_and(SHMEM_CTX_DEFAULT, an, (T)~m, tg);                      \
                shmem_ctx_##N##_atomic_xor(SHMEM_CTX_DEFAULT, x, m, tg);                           \
                break;                                                                             \
            case 7:                                                                                \
                shmem_atomic_or(o, m, tg);                                                         \
                shmem_atomic_and(SHMEM_CTX_DEFAULT, an, (T)~m, tg);                                \
                shmem_atomic_xor(x, m, tg);                                                        \
                shmem_atomic_fetch_or_nbi(&f[0][k], o, 0, tg); /* generic nbi: no-op op */         \
                shmem_atomic_fetch_and_nbi(&f[1][k], an, (T) ~(T)0, tg);                           \
                shmem_atomic_fetch_xor_nbi(SHMEM_CTX_DEFAULT, &f[2][k], x, 0, tg);                 \
                break;                                                                             \
            }                                                                                      \
            acc_or = (T)(acc_or | m);                                                              \
            acc_and = (T)(acc_and & ~m);                                                           \
            acc_xor = (T)(acc_xor ^ m);                                                            \
            if (k % 8 == 7) { /* the no-op fetches see the state after this step */                \
                want_[0][k] = acc_or;                                                              \
                want_[1][k] = acc_and;                                                             \
                want_[2][k] = acc_xor;                                                             \
            }                                                                                      \
        }                                                                                          \
        shmem_quiet();                                                                             \
        static const char *const opn[3] = {"or", "and", "xor"};                                    \
        for (int k = 0; k < K; k++)                                                                \
            for (int op = 0; op < 3; op++)                                                         \
                CHECK(k % 8 == 5 || k % 8 == 6 || (T)(f[op][k] & mine) == want_[op][k],            \
                      "%s fetch_%s #%d: own bits 0x%llx, want 0x%llx", #N, opn[op], k,             \
                      (unsigned long long)(T)(f[op][k] & mine), (unsigned long long)want_[op][k]); \
        shmem_barrier_all();                                                                       \
        T all_or = 0, all_xor = x0;                                                                \
        for (int pe = 0; pe < np; pe++)                                                            \
            for (int k = 0; k < K; k++) {                                                          \
                all_or = (T)(all_or | bm_##N(pe, t, k));                                           \
                all_xor = (T)(all_xor ^ bm_##N(pe, t, k));                                         \
            }                                                                                      \
        T got = shmem_##N##_atomic_fetch(o, tg);                                                   \
        CHECK(got == all_or, "%s or on PE %d: 0x%llx want 0x%llx", #N, tg,                         \
              (unsigned long long)got, (unsigned long long)all_or);                                \
        got = shmem_##N##_atomic_fetch(an, tg);                                                    \
        CHECK(got == (T)~all_or, "%s and on PE %d: 0x%llx want 0x%llx", #N, tg,                    \
              (unsigned long long)got, (unsigned long long)(T)~all_or);                            \
        got = shmem_##N##_atomic_fetch(x, tg);                                                     \
        CHECK(got == all_xor, "%s xor on PE %d: 0x%llx want 0x%llx", #N, tg,                       \
              (unsigned long long)got, (unsigned long long)all_xor);                               \
        shmem_barrier_all();                                                                       \
    }

TEST_AMO_BIT_TYPES(DEF_BIT)

/* ---------------- deprecated names, once each ---------------- */

static void deprecated(int t)
{
    int *i0 = SLOT(int, 20);
    long *l0 = SLOT(long, 21);
    long long *q0 = SLOT(long long, 22);
    float *f0 = SLOT(float, 23);
    double *d0 = SLOT(double, 24);
    long *s0 = SLOT(long, 25);
    int iv = (int)(rv(me, t, 0) % 1000);
    long lv = (long)(rv(me, t, 1) % 1000);
    long long qv = (long long)(rv(me, t, 2) % 1000);
    float fv = (float)(rv(me, t, 3) % 1000) / 8;
    double dv = (double)(rv(me, t, 4) % 1000) / 8;
    shmem_barrier_all();
    /* set, fetch, swap, cswap, finc, inc, fadd, add: each on `to`, written only by me */
    shmem_int_set(i0, iv, to);
    shmem_long_set(l0, lv, to);
    shmem_longlong_set(q0, qv, to);
    shmem_float_set(f0, fv, to);
    shmem_double_set(d0, dv, to);
    shmem_long_set(s0, 5, to);
    CHECK(shmem_int_fetch(i0, to) == iv, "shmem_int_fetch");
    CHECK(shmem_long_fetch(l0, to) == lv, "shmem_long_fetch");
    CHECK(shmem_longlong_fetch(q0, to) == qv, "shmem_longlong_fetch");
    CHECK(shmem_float_fetch(f0, to) == fv, "shmem_float_fetch");
    CHECK(shmem_double_fetch(d0, to) == dv, "shmem_double_fetch");
    CHECK(shmem_int_swap(i0, iv + 1, to) == iv, "shmem_int_swap");
    CHECK(shmem_long_swap(l0, lv + 1, to) == lv, "shmem_long_swap");
    CHECK(shmem_longlong_swap(q0, qv + 1, to) == qv, "shmem_longlong_swap");
    CHECK(shmem_float_swap(f0, fv + 1, to) == fv, "shmem_float_swap");
    CHECK(shmem_double_swap(d0, dv + 1, to) == dv, "shmem_double_swap");
    CHECK((shmem_swap)(s0, 6L, to) == 5, "shmem_swap (the long function)");
    CHECK(shmem_swap(s0, 7L, to) == 6, "shmem_swap (generic)");
    CHECK(shmem_int_cswap(i0, iv, 0, to) == iv + 1, "shmem_int_cswap failure");
    CHECK(shmem_int_cswap(i0, iv + 1, iv + 2, to) == iv + 1, "shmem_int_cswap success");
    CHECK(shmem_long_cswap(l0, lv + 1, lv + 2, to) == lv + 1, "shmem_long_cswap");
    CHECK(shmem_longlong_cswap(q0, qv + 1, qv + 2, to) == qv + 1, "shmem_longlong_cswap");
    CHECK(shmem_int_finc(i0, to) == iv + 2, "shmem_int_finc");
    CHECK(shmem_long_finc(l0, to) == lv + 2, "shmem_long_finc");
    CHECK(shmem_longlong_finc(q0, to) == qv + 2, "shmem_longlong_finc");
    shmem_int_inc(i0, to);
    shmem_long_inc(l0, to);
    shmem_longlong_inc(q0, to);
    CHECK(shmem_int_fadd(i0, 10, to) == iv + 4, "shmem_int_fadd");
    CHECK(shmem_long_fadd(l0, 10, to) == lv + 4, "shmem_long_fadd");
    CHECK(shmem_longlong_fadd(q0, 10, to) == qv + 4, "shmem_longlong_fadd");
    shmem_int_add(i0, 100, to);
    shmem_long_add(l0, 100, to);
    shmem_longlong_add(q0, 100, to);
    shmem_barrier_all();
    int fi = (int)(rv(from, t, 0) % 1000);
    long fl = (long)(rv(from, t, 1) % 1000);
    long long fq = (long long)(rv(from, t, 2) % 1000);
    CHECK(*i0 == fi + 114, "deprecated int ops: %d want %d", *i0, fi + 114);
    CHECK(*l0 == fl + 114, "deprecated long ops: %ld want %ld", *l0, fl + 114);
    CHECK(*q0 == fq + 114, "deprecated longlong ops: %lld want %lld", *q0, fq + 114);
    CHECK(*f0 == (float)(rv(from, t, 3) % 1000) / 8 + 1, "deprecated float swap");
    CHECK(*d0 == (double)(rv(from, t, 4) % 1000) / 8 + 1, "deprecated double swap");
    CHECK(*s0 == 7, "shmem_swap final %ld", *s0);
    /* the deprecated C11 generic names */
    long *g0 = SLOT(long, 26);
    shmem_barrier_all();
    shmem_set(g0, 40L, to);
    CHECK(shmem_fetch(g0, to) == 40, "generic shmem_fetch");
    CHECK(shmem_cswap(g0, 40L, 41L, to) == 40, "generic shmem_cswap");
    CHECK(shmem_finc(g0, to) == 41, "generic shmem_finc");
    shmem_inc(g0, to);
    CHECK(shmem_fadd(g0, 5L, to) == 43, "generic shmem_fadd");
    shmem_add(g0, 7L, to);
    shmem_barrier_all();
    CHECK(*g0 == 55, "deprecated generic names: %ld want 55", *g0);
    shmem_barrier_all();
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    np = shmem_n_pes();
    to = (me + 1) % np;
    from = (me + np - 1) % np;
    g_obj = shmem_align(64, NSLOT * 8);
    g_rec = shmem_malloc(NSEC * K * sizeof(rec_t));
    g_all = malloc((size_t)np * K * sizeof(rec_t));
    CHECK(g_obj && g_rec && g_all, "allocation failed");

    /* USHMEM_TEST_AMO_REPS: passes over every type (3; the 4-PE runs across
     * pretend hosts, where each AMO is an MPI call on oversubscribed cores,
     * take 1) */
    const char *reps_env = getenv("USHMEM_TEST_AMO_REPS");
    int reps = reps_env && atoi(reps_env) > 0 ? atoi(reps_env) : 3;
    int t = 0;
    for (int rep = 0; rep < reps; rep++) {
#define RUN_EXT(T, N, KIND) ext_##N(t++);
        TEST_AMO_EXT_TYPES(RUN_EXT)
#define RUN_STD(T, N) std_##N(t++);
        TEST_AMO_STD_TYPES(RUN_STD)
#define RUN_BIT(T, N) bit_##N(t++);
        TEST_AMO_BIT_TYPES(RUN_BIT)
    }
    deprecated(t++);

    shmem_barrier_all();
    free(g_all);
    shmem_free(g_rec);
    shmem_free(g_obj);
    shmem_finalize();
    return 0;
}
