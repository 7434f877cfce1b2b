/* Point-to-point synchronization for every sync type: wait_until and test, and
 * the _all / _any / _some / _vector variants of both, with status masks
 * (excluded entries are pre-satisfied, so an implementation that ignores the
 * mask is caught), all six comparison operators and real producers: a thread of
 * PE (me-1) stores the values into this PE's array with shmem_p, ctx_p,
 * atomic_set or ctx_atomic_set in random order after random delays, only
 * after this PE has checked that nothing is satisfied yet and said "go".
 * Also: all entries excluded (SIZE_MAX / 0 / immediate return), nelems 0, and
 * shmem_test observing a store made through shmem_ptr by a peer that then
 * never calls into the library.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "test_types.h"
#include "test_util.h"

/* Type table: TEST_SYNC_TYPES in test_types.h. */

#define NV 8 /* array length */
enum { K_SCALAR, K_ARRAY_WAIT, K_ARRAY_TEST, K_VECTOR_WAIT, K_VECTOR_TEST, NKIND };
#define NCMP 6

typedef struct {
    int tidx, cmp, kind;
    int null_status;   /* pass status = NULL (all included) */
    int status[NV];    /* 0: included, 1: excluded */
    size_t ninc;       /* included count */
    uint64_t init[NV]; /* bit patterns */
    uint64_t fin[NV];  /* what the producer stores (excluded: pre-satisfied init) */
    uint64_t cval[NV]; /* comparison value (scalar forms use cval[0]) */
    size_t order[NV], norder;
    unsigned delay_us[NV];
} plan_t;

typedef struct {
    const char *name;
    size_t size;
    int (*sat)(uint64_t a, uint64_t b, int cmp);
    uint64_t (*norm)(uint64_t r);
    void (*store)(size_t i, uint64_t bits, int pe, unsigned how);
    void (*waiter)(const plan_t *pl, long k);
    void (*excluded)(void);
} tinfo_t;

static const char *const cmp_name[NCMP] = {"EQ", "NE", "GT", "GE", "LT", "LE"};
static const int cmp_op[NCMP] = {SHMEM_CMP_EQ, SHMEM_CMP_NE, SHMEM_CMP_GT,
                                 SHMEM_CMP_GE, SHMEM_CMP_LT, SHMEM_CMP_LE};

static int me, np, to, from;
static unsigned char *g_iv; /* symmetric: NV 8-byte-aligned elements of the type under test */
static long *g_go, *g_done; /* symmetric: case counters */
static int *g_flag, *g_stop;
static unsigned char *g_payload;

static void go(long k);

#define SAT(a, b, cmp)                                                                             \
    ((cmp) == SHMEM_CMP_EQ   ? (a) == (b)                                                          \
     : (cmp) == SHMEM_CMP_NE ? (a) != (b)                                                          \
     : (cmp) == SHMEM_CMP_GT ? (a) > (b)                                                           \
     : (cmp) == SHMEM_CMP_GE ? (a) >= (b)                                                          \
     : (cmp) == SHMEM_CMP_LT ? (a) < (b)                                                           \
                             : (a) <= (b))

/* The producer's stores are atomic; so are the test's own reads (for TSan). */
#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)

#define STORE_P(T, N, dst, v, pe, how)                                                             \
    do {                                                                                           \
        switch ((how) % 3) {                                                                       \
        case 0: shmem_##N##_p(dst, v, pe); break;                                                  \
        case 1: shmem_ctx_##N##_p(SHMEM_CTX_DEFAULT, dst, v, pe); break;                           \
        default: shmem_p(dst, v, pe); break;                                                       \
        }                                                                                          \
    } while (0)
#define STORE_A(T, N, dst, v, pe, how)                                                             \
    do {                                                                                           \
        switch ((how) % 5) {                                                                       \
        case 0: shmem_##N##_p(dst, v, pe); break;                                                  \
        case 1: shmem_ctx_##N##_p(SHMEM_CTX_DEFAULT, dst, v, pe); break;                           \
        case 2: shmem_##N##_atomic_set(dst, v, pe); break;                                         \
        case 3: shmem_ctx_##N##_atomic_set(SHMEM_CTX_DEFAULT, dst, v, pe); break;                  \
        default: shmem_atomic_set(dst, v, pe); break;                                              \
        }                                                                                          \
    } while (0)

/* The waiter's side of one case, for one type. `go(k)` releases the producer. */
#define DEF_SYNC(T, N, HOW)                                                                        \
    static T val_##N(uint64_t bits)                                                                \
    {                                                                                              \
        T v;                                                                                       \
        memcpy(&v, &bits, sizeof v);                                                               \
        return v;                                                                                  \
    }                                                                                              \
    static uint64_t norm_##N(uint64_t r)                                                           \
    {                                                                                              \
        T v = (T)r;                                                                                \
        uint64_t b = 0;                                                                            \
        memcpy(&b, &v, sizeof v);                                                                  \
        return b;                                                                                  \
    }                                                                                              \
    static int sat_##N(uint64_t a, uint64_t b, int cmp)                                            \
    {                                                                                              \
        T x = val_##N(a), y = val_##N(b);                                                          \
        return SAT(x, y, cmp);                                                                     \
    }                                                                                              \
    static void store_##N(size_t i, uint64_t bits, int pe, unsigned how)                           \
    {                                                                                              \
        T *dst = (T *)g_iv + i;                                                                    \
        STORE_##HOW(T, N, dst, val_##N(bits), pe, how);                                            \
    }                                                                                              \
    static void check_some_##N(const plan_t *pl, const char *what, const size_t *idx, size_t m,    \
                               int exact)                                                          \
    {                                                                                              \
        const T *iv = (const T *)g_iv;                                                             \
        int seen[NV] = {0};                                                                        \
        CHECK(m >= 1 && m <= pl->ninc, "%s %s %s: count %zu of %zu included", #N,                  \
              cmp_name[pl->cmp], what, m, pl->ninc);                                               \
        for (size_t j = 0; j < m; j++) {                                                           \
            size_t e = idx[j];                                                                     \
            CHECK(e < NV && !seen[e], "%s %s %s: index %zu bad or repeated", #N,                   \
                  cmp_name[pl->cmp], what, e);                                                     \
            seen[e] = 1;                                                                           \
            CHECK(pl->null_status || pl->status[e] == 0, "%s %s %s: excluded index %zu", #N,       \
                  cmp_name[pl->cmp], what, e);                                                     \
            CHECK(sat_##N(norm_##N((uint64_t)LOAD(&iv[e])), pl->cval[e], cmp_op[pl->cmp]),         \
                  "%s %s %s: index %zu not satisfied", #N, cmp_name[pl->cmp], what, e);            \
        }                                                                                          \
        if (exact)                                                                                 \
            for (size_t e = 0; e < NV; e++)                                                        \
                CHECK(seen[e] == (pl->null_status || pl->status[e] == 0),                          \
                      "%s %s %s: index %zu %s", #N, cmp_name[pl->cmp], what, e,                    \
                      seen[e] ? "reported but excluded" : "missing");                              \
    }                                                                                              \
    static void waiter_##N(const plan_t *pl, long k)                                               \
    {                                                                                              \
        T *iv = (T *)g_iv;                                                                         \
        T cv[NV];                                                                                  \
        size_t idx[NV], m, i;                                                                      \
        const int cmp = cmp_op[pl->cmp];                                                           \
        const int *st = pl->null_status ? NULL : pl->status;                                       \
        for (size_t e = 0; e < NV; e++)                                                            \
            cv[e] = val_##N(pl->cval[e]);                                                          \
        const T c = cv[0];                                                                         \
        const int vec = pl->kind == K_VECTOR_WAIT || pl->kind == K_VECTOR_TEST;                    \
        const int polling = pl->kind == K_ARRAY_TEST || pl->kind == K_VECTOR_TEST;                 \
        if (pl->kind == K_SCALAR) {                                                                \
            CHECK(!shmem_##N##_test(&iv[0], cmp, c) && !shmem_##N##_test(&iv[1], cmp, c),          \
                  "%s test %s true before any store", #N, cmp_name[pl->cmp]);                      \
            go(k);                                                                                 \
            shmem_##N##_wait_until(&iv[0], cmp, c);                                                \
            CHECK(LOAD(&iv[0]) == val_##N(pl->fin[0]), "%s wait_until %s returned early", #N,      \
                  cmp_name[pl->cmp]);                                                              \
            while (!shmem_##N##_test(&iv[1], cmp, c))                                              \
                sched_yield();                                                                     \
            CHECK(LOAD(&iv[1]) == val_##N(pl->fin[1]), "%s test %s true early", #N,                \
                  cmp_name[pl->cmp]);                                                              \
            shmem_wait_until(&iv[1], cmp, c);                                                      \
            CHECK(shmem_test(&iv[0], cmp, c) == 1, "%s generic test", #N);                         \
            return;                                                                                \
        }                                                                                          \
        /* nothing included is satisfied yet (excluded entries are) */                             \
        if (!vec) {                                                                                \
            CHECK(shmem_##N##_test_all(iv, NV, st, cmp, c) == 0, "%s test_all early", #N);         \
            CHECK(shmem_##N##_test_any(iv, NV, st, cmp, c) == SIZE_MAX, "%s test_any early", #N);  \
            CHECK(shmem_##N##_test_some(iv, NV, idx, st, cmp, c) == 0, "%s test_some early", #N);  \
        } else {                                                                                   \
            CHECK(shmem_##N##_test_all_vector(iv, NV, st, cmp, cv) == 0,                           \
                  "%s test_all_vector early", #N);                                                 \
            CHECK(shmem_##N##_test_any_vector(iv, NV, st, cmp, cv) == SIZE_MAX,                    \
                  "%s test_any_vector early", #N);                                                 \
            CHECK(shmem_##N##_test_some_vector(iv, NV, idx, st, cmp, cv) == 0,                     \
                  "%s test_some_vector early", #N);                                                \
        }                                                                                          \
        go(k);                                                                                     \
        /* any */                                                                                  \
        if (!vec && !polling)                                                                      \
            i = shmem_##N##_wait_until_any(iv, NV, st, cmp, c);                                    \
        else if (vec && !polling)                                                                  \
            i = shmem_##N##_wait_until_any_vector(iv, NV, st, cmp, cv);                            \
        else                                                                                       \
            while ((i = vec ? shmem_##N##_test_any_vector(iv, NV, st, cmp, cv)                     \
                            : shmem_##N##_test_any(iv, NV, st, cmp, c)) == SIZE_MAX)               \
                sched_yield();                                                                     \
        check_some_##N(pl, "any", &i, 1, 0);                                                       \
        /* some */                                                                                 \
        if (!vec && !polling)                                                                      \
            m = shmem_##N##_wait_until_some(iv, NV, idx, st, cmp, c);                              \
        else if (vec && !polling)                                                                  \
            m = shmem_##N##_wait_until_some_vector(iv, NV, idx, st, cmp, cv);                      \
        else                                                                                       \
            while ((m = vec ? shmem_##N##_test_some_vector(iv, NV, idx, st, cmp, cv)               \
                            : shmem_##N##_test_some(iv, NV, idx, st, cmp, c)) == 0)                \
                sched_yield();                                                                     \
        check_some_##N(pl, "some", idx, m, 0);                                                     \
        /* all */                                                                                  \
        if (!vec && !polling)                                                                      \
            shmem_##N##_wait_until_all(iv, NV, st, cmp, c);                                        \
        else if (vec && !polling)                                                                  \
            shmem_##N##_wait_until_all_vector(iv, NV, st, cmp, cv);                                \
        else                                                                                       \
            while (!(vec ? shmem_##N##_test_all_vector(iv, NV, st, cmp, cv)                        \
                         : shmem_##N##_test_all(iv, NV, st, cmp, c)))                              \
                sched_yield();                                                                     \
        for (size_t e = 0; e < NV; e++)                                                            \
            if (pl->null_status || pl->status[e] == 0)                                             \
                CHECK(LOAD(&iv[e]) == val_##N(pl->fin[e]),                                         \
                      "%s %s all%s returned before element %zu", #N, cmp_name[pl->cmp],            \
                      vec ? "_vector" : "", e);                                                    \
        /* now everything included is satisfied: exact answers, typed and generic */               \
        if (!vec) {                                                                                \
            CHECK(shmem_##N##_test_all(iv, NV, st, cmp, c) == 1, "%s test_all", #N);               \
            CHECK(shmem_test_all(iv, NV, st, cmp, c) == 1, "%s generic test_all", #N);             \
            i = shmem_##N##_test_any(iv, NV, st, cmp, c);                                          \
            check_some_##N(pl, "test_any after", &i, 1, 0);                                        \
            i = shmem_wait_until_any(iv, NV, st, cmp, c);                                          \
            check_some_##N(pl, "generic wait_until_any", &i, 1, 0);                                \
            m = shmem_##N##_test_some(iv, NV, idx, st, cmp, c);                                    \
            check_some_##N(pl, "test_some after", idx, m, 1);                                      \
            m = shmem_wait_until_some(iv, NV, idx, st, cmp, c);                                    \
            check_some_##N(pl, "generic wait_until_some", idx, m, 1);                              \
            m = shmem_test_some(iv, NV, idx, st, cmp, c);                                          \
            check_some_##N(pl, "generic test_some", idx, m, 1);                                    \
            shmem_wait_until_all(iv, NV, st, cmp, c);                                              \
            i = shmem_test_any(iv, NV, st, cmp, c);                                                \
            check_some_##N(pl, "generic test_any", &i, 1, 0);                                      \
        } else {                                                                                   \
            CHECK(shmem_##N##_test_all_vector(iv, NV, st, cmp, cv) == 1, "%s test_all_vector",     \
                  #N);                                                                             \
            CHECK(shmem_test_all_vector(iv, NV, st, cmp, cv) == 1, "%s generic test_all_vector",   \
                  #N);                                                                             \
            i = shmem_##N##_test_any_vector(iv, NV, st, cmp, cv);                                  \
            check_some_##N(pl, "test_any_vector after", &i, 1, 0);                                 \
            i = shmem_wait_until_any_vector(iv, NV, st, cmp, cv);                                  \
            check_some_##N(pl, "generic wait_until_any_vector", &i, 1, 0);                         \
            m = shmem_##N##_test_some_vector(iv, NV, idx, st, cmp, cv);                            \
            check_some_##N(pl, "test_some_vector after", idx, m, 1);                               \
            m = shmem_wait_until_some_vector(iv, NV, idx, st, cmp, cv);                            \
            check_some_##N(pl, "generic wait_until_some_vector", idx, m, 1);                       \
            m = shmem_test_some_vector(iv, NV, idx, st, cmp, cv);                                  \
            check_some_##N(pl, "generic test_some_vector", idx, m, 1);                             \
            shmem_wait_until_all_vector(iv, NV, st, cmp, cv);                                      \
            i = shmem_test_any_vector(iv, NV, st, cmp, cv);                                        \
            check_some_##N(pl, "generic test_any_vector", &i, 1, 0);                               \
        }                                                                                          \
    }                                                                                              \
    /* Every entry excluded, and nelems 0 with NULL pointers: nothing to wait for. */              \
    static void excluded_##N(void)                                                                 \
    {                                                                                              \
        T *iv = (T *)g_iv, cv[NV] = {0};                                                           \
        int st[NV];                                                                                \
        size_t idx[NV];                                                                            \
        for (int e = 0; e < NV; e++) {                                                             \
            st[e] = 1;                                                                             \
            iv[e] = 0;                                                                             \
        }                                                                                          \
        for (int c = 0; c < NCMP; c++) {                                                           \
            int cmp = cmp_op[c];                                                                   \
            /* test forms first: an implementation ignoring status fails here, not hangs */        \
            CHECK(shmem_##N##_test_all(iv, NV, st, cmp, 1) == 1, "%s test_all, all excluded", #N); \
            CHECK(shmem_##N##_test_all_vector(iv, NV, st, cmp, cv) == 1,                           \
                  "%s test_all_vector, all excluded", #N);                                         \
            CHECK(shmem_##N##_test_any(iv, NV, st, cmp, 1) == SIZE_MAX,                            \
                  "%s test_any, all excluded", #N);                                                \
            CHECK(shmem_##N##_test_any_vector(iv, NV, st, cmp, cv) == SIZE_MAX,                    \
                  "%s test_any_vector, all excluded", #N);                                         \
            CHECK(shmem_##N##_test_some(iv, NV, idx, st, cmp, 1) == 0,                             \
                  "%s test_some, all excluded", #N);                                               \
            CHECK(shmem_##N##_test_some_vector(iv, NV, idx, st, cmp, cv) == 0,                     \
                  "%s test_some_vector, all excluded", #N);                                        \
            shmem_##N##_wait_until_all(iv, NV, st, cmp, 1);                                        \
            shmem_##N##_wait_until_all_vector(iv, NV, st, cmp, cv);                                \
            CHECK(shmem_##N##_wait_until_any(iv, NV, st, cmp, 1) == SIZE_MAX,                      \
                  "%s wait_until_any, all excluded", #N);                                          \
            CHECK(shmem_##N##_wait_until_any_vector(iv, NV, st, cmp, cv) == SIZE_MAX,              \
                  "%s wait_until_any_vector, all excluded", #N);                                   \
            CHECK(shmem_##N##_wait_until_some(iv, NV, idx, st, cmp, 1) == 0,                       \
                  "%s wait_until_some, all excluded", #N);                                         \
            CHECK(shmem_##N##_wait_until_some_vector(iv, NV, idx, st, cmp, cv) == 0,               \
                  "%s wait_until_some_vector, all excluded", #N);                                  \
            /* nelems 0 */                                                                         \
            shmem_##N##_wait_until_all(NULL, 0, NULL, cmp, 1);                                     \
            shmem_##N##_wait_until_all_vector(NULL, 0, NULL, cmp, NULL);                           \
            CHECK(shmem_##N##_wait_until_any(NULL, 0, NULL, cmp, 1) == SIZE_MAX,                   \
                  "%s wait_until_any, nelems 0", #N);                                              \
            CHECK(shmem_##N##_wait_until_any_vector(NULL, 0, NULL, cmp, NULL) == SIZE_MAX,         \
                  "%s wait_until_any_vector, nelems 0", #N);                                       \
            CHECK(shmem_##N##_wait_until_some(NULL, 0, NULL, NULL, cmp, 1) == 0,                   \
                  "%s wait_until_some, nelems 0", #N);                                             \
            CHECK(shmem_##N##_wait_until_some_vector(NULL, 0, NULL, NULL, cmp, NULL) == 0,         \
                  "%s wait_until_some_vector, nelems 0", #N);                                      \
            CHECK(shmem_##N##_test_all(NULL, 0, NULL, cmp, 1) == 1, "%s test_all, nelems 0", #N);  \
            CHECK(shmem_##N##_test_any(NULL, 0, NULL, cmp, 1) == SIZE_MAX,                         \
                  "%s test_any, nelems 0", #N);                                                    \
            CHECK(shmem_##N##_test_some(NULL, 0, NULL, NULL, cmp, 1) == 0,                         \
                  "%s test_some, nelems 0", #N);                                                   \
            CHECK(shmem_##N##_test_all_vector(NULL, 0, NULL, cmp, NULL) == 1,                      \
                  "%s test_all_vector, nelems 0", #N);                                             \
            CHECK(shmem_##N##_test_any_vector(NULL, 0, NULL, cmp, NULL) == SIZE_MAX,               \
                  "%s test_any_vector, nelems 0", #N);                                             \
            CHECK(shmem_##N##_test_some_vector(NULL, 0, NULL, NULL, cmp, NULL) == 0,               \
                  "%s test_some_vector, nelems 0", #N);                                            \
        }                                                                                          \
    }

TEST_SYNC_TYPES(DEF_SYNC)

static const tinfo_t types[] = {
#define TINFO(T, N, HOW) {#N, sizeof(T), sat_##N, norm_##N, store_##N, waiter_##N, excluded_##N},
    TEST_SYNC_TYPES(TINFO)};
#define NTYPES ((int)(sizeof types / sizeof types[0]))
#define NCASES ((long)NTYPES * NCMP * NKIND)

/* ---------------- plans: the same on the waiter and its producer ---------------- */

typedef struct {
    uint64_t s;
} rng_t;
static uint64_t rnd(rng_t *r)
{
    r->s = test_mix(r->s);
    return r->s;
}

/* A value near c half the time (so EQ and the boundaries come up), else any
 * value. Adding in 64 bits and truncating is addition modulo the type's width. */
static uint64_t candidate(const tinfo_t *ti, rng_t *r, uint64_t c)
{
    uint64_t x = rnd(r);
    if (x & 1)
        return ti->norm(c + (uint64_t)((int64_t)((x >> 8) % 7) - 3));
    return ti->norm(rnd(r));
}

static int find_value(const tinfo_t *ti, rng_t *r, uint64_t c, int cmp, int want, uint64_t *out)
{
    for (int tries = 0; tries < 200; tries++) {
        uint64_t v = candidate(ti, r, c);
        if (ti->sat(v, c, cmp) == want) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* c, an unsatisfying init and a satisfying final value for one element. */
static void pick_element(const tinfo_t *ti, rng_t *r, int cmp, uint64_t *c, int fixed_c,
                         uint64_t *init, uint64_t *fin)
{
    for (;;) {
        if (!fixed_c)
            *c = ti->norm(rnd(r));
        if (find_value(ti, r, *c, cmp, 0, init) && find_value(ti, r, *c, cmp, 1, fin))
            return;
        CHECK(!fixed_c, "no values for a fixed comparison value");
    }
}

static void make_plan(long k, int waiter, plan_t *pl)
{
    long z = k - 1;
    memset(pl, 0, sizeof *pl);
    pl->kind = (int)(z % NKIND);
    pl->cmp = (int)(z / NKIND % NCMP);
    pl->tidx = (int)(z / NKIND / NCMP);
    const tinfo_t *ti = &types[pl->tidx];
    const int cmp = cmp_op[pl->cmp];
    rng_t r = {test_seed() ^ ((uint64_t)k << 20) ^ ((uint64_t)waiter << 8)};
    int vec = pl->kind == K_VECTOR_WAIT || pl->kind == K_VECTOR_TEST;
    pl->null_status = pl->kind != K_SCALAR && rnd(&r) % 4 == 0;
    /* scalar comparison value: pick it with the first element; keep it fixed when
     * some value satisfies and some does not (retry with a new one otherwise) */
    uint64_t c0 = 0;
    for (;;) {
        uint64_t a, b;
        c0 = ti->norm(rnd(&r));
        if (find_value(ti, &r, c0, cmp, 0, &a) && find_value(ti, &r, c0, cmp, 1, &b))
            break;
    }
    for (size_t e = 0; e < NV; e++) {
        pl->cval[e] = c0;
        pick_element(ti, &r, cmp, &pl->cval[e], !vec, &pl->init[e], &pl->fin[e]);
        pl->status[e] = !pl->null_status && pl->kind != K_SCALAR && rnd(&r) % 3 == 0;
    }
    if (!pl->null_status && pl->kind != K_SCALAR) {
        size_t inc = 0;
        for (size_t e = 0; e < NV; e++)
            inc += !pl->status[e];
        if (!inc)
            pl->status[rnd(&r) % NV] = 0;
    }
    /* excluded entries start satisfied and are never stored to */
    for (size_t e = 0; e < NV; e++)
        if (pl->status[e])
            pl->init[e] = pl->fin[e];
    if (pl->kind == K_SCALAR) {
        pl->order[0] = 0;
        pl->order[1] = 1;
        pl->norder = 2;
        pl->ninc = 2;
    } else {
        for (size_t e = 0; e < NV; e++)
            if (!pl->status[e])
                pl->order[pl->norder++] = e;
        pl->ninc = pl->norder;
        for (size_t j = pl->norder; j > 1; j--) { /* shuffle */
            size_t q = rnd(&r) % j, tmp = pl->order[j - 1];
            pl->order[j - 1] = pl->order[q];
            pl->order[q] = tmp;
        }
    }
    for (size_t j = 0; j < NV; j++)
        pl->delay_us[j] = rnd(&r) % 4 == 0 ? 0 : (unsigned)(rnd(&r) % 150);
}

/* ---------------- producer thread and the case loop ---------------- */

static void sleep_us(unsigned us)
{
    if (!us)
        return;
    struct timespec ts = {0, (long)us * 1000};
    nanosleep(&ts, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Produces for PE `to` (whose producer this PE is). */
static void *producer(void *arg)
{
    (void)arg;
    for (long k = 1; k <= NCASES; k++) {
        plan_t pl;
        shmem_long_wait_until(g_go, SHMEM_CMP_GE, k);
        make_plan(k, to, &pl);
        const tinfo_t *ti = &types[pl.tidx];
        for (size_t j = 0; j < pl.norder; j++) {
            sleep_us(pl.delay_us[j]);
            size_t e = pl.order[j];
            ti->store(e, pl.fin[e], to, (unsigned)(k + (long)j));
        }
        shmem_quiet();
        shmem_long_atomic_set(g_done, k, to);
    }
    return NULL;
}

static void go(long k)
{
    shmem_long_atomic_set(g_go, k, from);
}

static void run_cases(void)
{
    for (long k = 1; k <= NCASES; k++) {
        plan_t pl;
        /* the previous case's producer has finished storing into our array */
        shmem_long_wait_until(g_done, SHMEM_CMP_GE, k - 1);
        make_plan(k, me, &pl);
        const tinfo_t *ti = &types[pl.tidx];
        memset(g_iv, 0, NV * 8);
        for (size_t e = 0; e < NV; e++)
            memcpy(g_iv + e * ti->size, &pl.init[e], ti->size);
        ti->waiter(&pl, k);
    }
    shmem_long_wait_until(g_done, SHMEM_CMP_GE, NCASES);
}

/* A peer stores through shmem_ptr and then spins on a plain local variable,
 * never calling into the library, until the observer tells it to stop: the
 * observer's shmem_test (and wait_until) must still see the store. */
static void progress_without_target(void)
{
    if (np < 2)
        return;
    for (int round = 0; round < np; round++) {
        int obs = round, storer = (round + 1) % np;
        *g_flag = 0;
        *g_stop = 0;
        memset(g_payload, 0, 4096);
        shmem_barrier_all();
        if (me == storer) {
            int *flag = shmem_ptr(g_flag, obs);
            unsigned char *pay = shmem_ptr(g_payload, obs);
            CHECK((flag && pay) || !test_all_mapped(), "shmem_ptr to PE %d on this host is NULL",
                  obs);
            sleep_us(2000 + (unsigned)(test_seed() % 3000));
            if (flag && pay) {
                test_fill(pay, 4096, me, 1000 + round);
                __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
            } else { /* not mapped (mpi): blocking puts, then no more library calls */
                unsigned char buf[4096];
                test_fill(buf, 4096, me, 1000 + round);
                shmem_putmem(g_payload, buf, 4096, obs);
                shmem_fence();
                shmem_int_p(g_flag, 1, obs);
            }
            volatile int *stop = g_stop;
            while (!*stop)
                sched_yield(); /* a system call, not the library */
        } else if (me == obs) {
            double t0 = now_s();
            while (!shmem_int_test(g_flag, SHMEM_CMP_EQ, 1))
                CHECK(now_s() - t0 < 20,
                      "shmem_test never saw PE %d's store (made through "
                      "shmem_ptr; the peer is not calling the library)",
                      storer);
            shmem_int_wait_until(g_flag, SHMEM_CMP_NE, 0);
            CHECK(test_verify(g_payload, 4096, storer, 1000 + round, NULL),
                  "data stored before the flag is not visible after shmem_test saw the flag");
            shmem_int_atomic_set(g_stop, 1, storer);
        }
        shmem_barrier_all();
    }
}

/* The deprecated forms 1.6 still lists: shmem_TYPE_wait (until != value),
 * shmem_wait and shmem_wait_until on long. `from` stores after a delay. */
static void deprecated_waits(void)
{
    short *s = (short *)g_iv;
    int *i = (int *)(g_iv + 8);
    long *l = (long *)(g_iv + 16), *lw = (long *)(g_iv + 24), *lu = (long *)(g_iv + 32);
    long long *q = (long long *)(g_iv + 40);
    memset(g_iv, 0, NV * 8);
    *lu = 5;
    shmem_barrier_all();
    sleep_us(500 + (unsigned)(test_seed() % 2000));
    shmem_short_p(s, 3, to);
    shmem_int_p(i, 4, to);
    shmem_long_p(l, 5, to);
    shmem_long_p(lw, 6, to);
    shmem_long_atomic_set(lu, 7, to);
    shmem_longlong_p(q, 8, to);
    shmem_short_wait(s, 0);
    shmem_int_wait(i, 0);
    shmem_long_wait(l, 0);
    shmem_wait(lw, 0);
    shmem_wait_until(lu, SHMEM_CMP_GT, 6);   /* C11 generic (selects shmem_long_wait_until) */
    (shmem_wait_until)(lu, SHMEM_CMP_EQ, 7); /* the deprecated long function itself */
    shmem_longlong_wait(q, 0);
    CHECK(*s == 3 && *i == 4 && *l == 5 && *lw == 6 && *lu == 7 && *q == 8,
          "deprecated waits returned before the store");
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
    g_iv = shmem_align(64, NV * 8);
    g_go = shmem_calloc(2, sizeof(long));
    g_done = g_go + 1;
    g_flag = shmem_calloc(2, sizeof(int));
    g_stop = g_flag + 1;
    g_payload = shmem_malloc(4096);
    CHECK(g_iv && g_go && g_flag && g_payload, "allocation failed");

    (void)test_seed(); /* initialise the lazy seed before the second thread reads it */
    shmem_barrier_all();
    pthread_t th;
    CHECK(pthread_create(&th, NULL, producer, NULL) == 0, "pthread_create");
    run_cases();
    pthread_join(th, NULL);
    shmem_barrier_all();

    for (int t = 0; t < NTYPES; t++)
        types[t].excluded();
    deprecated_waits();

    progress_without_target();

    shmem_barrier_all();
    shmem_free(g_payload);
    shmem_free(g_flag);
    shmem_free(g_go);
    shmem_free(g_iv);
    shmem_finalize();
    return 0;
}
