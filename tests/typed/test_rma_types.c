/* Every typed RMA routine for every standard RMA type (put, get, p, g, iput,
 * iget, put_nbi, get_nbi, ibput, ibget, each also as ctx_ on
 * SHMEM_CTX_DEFAULT and as the C11 generic form), then the sized forms
 * (8/16/32/64/128 and mem). Random data; every PE checks what it received and
 * that nothing outside the transfer changed; zero-length calls with NULL.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include "test_types.h"
#include "test_util.h"

#define RMA_TYPES TEST_RMA_TYPES

/* Sized routines: X(bits, bytes per element). */
#define SIZED(X) X(8, 1) X(16, 2) X(32, 4) X(64, 8) X(128, 16)

#define REGION 1024 /* elements per destination region */
#define NREG   12   /* destination regions (one per put variant) */
#define NMAX   200  /* contiguous transfer length */
#define MAXE   16   /* largest element (long double, 128-bit) */

static int me, np, to, from;
static unsigned char *g_src, *g_dst; /* symmetric */
static unsigned char g_touched[REGION];
static long double g_loc_store[REGION]; /* local (private) get target, 16-byte aligned */
static unsigned char *const g_loc = (unsigned char *)g_loc_store;

/* Value of element i of PE pe's source in test t (pe -1: the sentinel). */
static uint64_t rv(int pe, int t, size_t i)
{
    return test_mix(test_seed() ^ ((uint64_t)(unsigned)pe << 44) ^ ((uint64_t)t << 24) ^ i);
}

/* Floats from integers so == is exact and NaN never appears. */
#define GEN_F(T, r) ((T)(int32_t)((r) >> 40) / (T)4)
#define GEN_I(T, r) ((T)(r))

typedef struct {
    size_t n;             /* contiguous */
    size_t np_;           /* p/g count */
    ptrdiff_t dst, sst;   /* iput/iget strides */
    size_t ni;            /* iput/iget count */
    ptrdiff_t bdst, bsst; /* ibput/ibget strides */
    size_t bsize, nb;     /* ibput/ibget block size and count */
} params_t;

/* Same on every PE (independent of the PE number). */
static params_t params_for(int t)
{
    params_t p;
    p.n = 1 + rv(-7, t, 0) % NMAX;
    p.np_ = 1 + rv(-7, t, 1) % 16;
    p.dst = 1 + (ptrdiff_t)(rv(-7, t, 2) % 4);
    p.sst = 1 + (ptrdiff_t)(rv(-7, t, 3) % 4);
    p.ni = 1 + rv(-7, t, 4) % 200;
    p.bsize = 1 + rv(-7, t, 5) % 4;
    p.bdst = (ptrdiff_t)p.bsize + (ptrdiff_t)(rv(-7, t, 6) % 4);
    p.bsst = (ptrdiff_t)p.bsize + (ptrdiff_t)(rv(-7, t, 7) % 4);
    p.nb = 1 + rv(-7, t, 8) % 100;
    /* every span fits a region: iput (200-1)*4+1, ibput 99*7+4 */
    return p;
}

/* ---------------- typed ---------------- */

#define DEF_TYPED(T, N, K)                                                                         \
    static T val_##N(int pe, int t, size_t i)                                                      \
    {                                                                                              \
        return GEN_##K(T, rv(pe, t, i));                                                           \
    }                                                                                              \
    /* buf[b*dst_st + k] == src_pe's element b*sst + k; the rest is the sentinel. */               \
    static void check_##N(const char *what, const T *buf, int srcpe, int t, ptrdiff_t dst_st,      \
                          ptrdiff_t sst, size_t bsize, size_t nblocks)                             \
    {                                                                                              \
        memset(g_touched, 0, sizeof g_touched);                                                    \
        for (size_t b = 0; b < nblocks; b++)                                                       \
            for (size_t k = 0; k < bsize; k++) {                                                   \
                size_t d = b * (size_t)dst_st + k, s = b * (size_t)sst + k;                        \
                g_touched[d] = 1;                                                                  \
                CHECK(buf[d] == val_##N(srcpe, t, s),                                              \
                      "%s %s: element %zu (PE %d's element %zu) wrong", #N, what, d, srcpe, s);    \
            }                                                                                      \
        T sent = val_##N(-1, t, 0);                                                                \
        for (size_t d = 0; d < REGION; d++)                                                        \
            CHECK(g_touched[d] || buf[d] == sent,                                                  \
                  "%s %s: element %zu outside the transfer was written", #N, what, d);             \
    }                                                                                              \
    static void fill_loc_##N(int t)                                                                \
    {                                                                                              \
        T *loc = (T *)g_loc, sent = val_##N(-1, t, 0);                                             \
        for (size_t i = 0; i < REGION; i++)                                                        \
            loc[i] = sent;                                                                         \
    }                                                                                              \
    static void test_##N(int t)                                                                    \
    {                                                                                              \
        T *src = (T *)g_src, *dst = (T *)g_dst, *loc = (T *)g_loc;                                 \
        T sent = val_##N(-1, t, 0);                                                                \
        params_t p = params_for(t);                                                                \
        for (size_t i = 0; i < REGION; i++)                                                        \
            src[i] = val_##N(me, t, i);                                                            \
        for (size_t i = 0; i < (size_t)NREG * REGION; i++)                                         \
            dst[i] = sent;                                                                         \
        shmem_barrier_all();                                                                       \
        shmem_##N##_put(dst + 0 * REGION, src, p.n, to);                                           \
        shmem_ctx_##N##_put(SHMEM_CTX_DEFAULT, dst + 1 * REGION, src, p.n, to);                    \
        shmem_##N##_put_nbi(dst + 2 * REGION, src, p.n, to);                                       \
        shmem_ctx_##N##_put_nbi(SHMEM_CTX_DEFAULT, dst + 3 * REGION, src, p.n, to);                \
        shmem_put(dst + 4 * REGION, src, p.n, to);                                                 \
        for (size_t k = 0; k < p.np_; k++) {                                                       \
            if (k % 3 == 0)                                                                        \
                shmem_##N##_p(dst + 5 * REGION + k, src[k], to);                                   \
            else if (k % 3 == 1)                                                                   \
                shmem_ctx_##N##_p(SHMEM_CTX_DEFAULT, dst + 5 * REGION + k, src[k], to);            \
            else                                                                                   \
                shmem_p(dst + 5 * REGION + k, src[k], to);                                         \
        }                                                                                          \
        shmem_##N##_iput(dst + 6 * REGION, src, p.dst, p.sst, p.ni, to);                           \
        shmem_ctx_##N##_iput(SHMEM_CTX_DEFAULT, dst + 7 * REGION, src, p.dst, p.sst, p.ni, to);    \
        shmem_##N##_ibput(dst + 8 * REGION, src, p.bdst, p.bsst, p.bsize, p.nb, to);               \
        shmem_ctx_##N##_ibput(SHMEM_CTX_DEFAULT, dst + 9 * REGION, src, p.bdst, p.bsst, p.bsize,   \
                              p.nb, to);                                                           \
        shmem_iput(dst + 10 * REGION, src, p.dst, p.sst, p.ni, to);                                \
        shmem_ibput(SHMEM_CTX_DEFAULT, dst + 11 * REGION, src, p.bdst, p.bsst, p.bsize, p.nb, to); \
        /* zero length: pointers may be NULL */                                                    \
        shmem_##N##_put(NULL, NULL, 0, to);                                                        \
        shmem_ctx_##N##_put(SHMEM_CTX_DEFAULT, NULL, NULL, 0, to);                                 \
        shmem_##N##_put_nbi(NULL, NULL, 0, to);                                                    \
        shmem_ctx_##N##_put_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, to);                             \
        shmem_##N##_get(NULL, NULL, 0, to);                                                        \
        shmem_ctx_##N##_get(SHMEM_CTX_DEFAULT, NULL, NULL, 0, to);                                 \
        shmem_##N##_get_nbi(NULL, NULL, 0, to);                                                    \
        shmem_ctx_##N##_get_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, to);                             \
        shmem_##N##_iput(NULL, NULL, 1, 1, 0, to);                                                 \
        shmem_##N##_iget(NULL, NULL, 1, 1, 0, to);                                                 \
        shmem_ctx_##N##_iput(SHMEM_CTX_DEFAULT, NULL, NULL, 1, 1, 0, to);                          \
        shmem_ctx_##N##_iget(SHMEM_CTX_DEFAULT, NULL, NULL, 1, 1, 0, to);                          \
        shmem_##N##_ibput(NULL, NULL, 1, 1, 1, 0, to);                                             \
        shmem_##N##_ibget(NULL, NULL, 1, 1, 1, 0, to);                                             \
        shmem_ctx_##N##_ibput(SHMEM_CTX_DEFAULT, NULL, NULL, 1, 1, 0, 3, to);                      \
        shmem_ctx_##N##_ibget(SHMEM_CTX_DEFAULT, NULL, NULL, 1, 1, 0, 3, to);                      \
        shmem_quiet();                                                                             \
        shmem_barrier_all();                                                                       \
        check_##N("put", dst + 0 * REGION, from, t, 1, 1, p.n, 1);                                 \
        check_##N("ctx_put", dst + 1 * REGION, from, t, 1, 1, p.n, 1);                             \
        check_##N("put_nbi", dst + 2 * REGION, from, t, 1, 1, p.n, 1);                             \
        check_##N("ctx_put_nbi", dst + 3 * REGION, from, t, 1, 1, p.n, 1);                         \
        check_##N("generic put", dst + 4 * REGION, from, t, 1, 1, p.n, 1);                         \
        check_##N("p/ctx_p/generic p", dst + 5 * REGION, from, t, 1, 1, p.np_, 1);                 \
        check_##N("iput", dst + 6 * REGION, from, t, p.dst, p.sst, 1, p.ni);                       \
        check_##N("ctx_iput", dst + 7 * REGION, from, t, p.dst, p.sst, 1, p.ni);                   \
        check_##N("ibput", dst + 8 * REGION, from, t, p.bdst, p.bsst, p.bsize, p.nb);              \
        check_##N("ctx_ibput", dst + 9 * REGION, from, t, p.bdst, p.bsst, p.bsize, p.nb);          \
        check_##N("generic iput", dst + 10 * REGION, from, t, p.dst, p.sst, 1, p.ni);              \
        check_##N("generic ctx ibput", dst + 11 * REGION, from, t, p.bdst, p.bsst, p.bsize, p.nb); \
        /* gets read `to`'s source, which nobody changes until the next barrier */                 \
        fill_loc_##N(t);                                                                           \
        shmem_##N##_get(loc, src, p.n, to);                                                        \
        check_##N("get", loc, to, t, 1, 1, p.n, 1);                                                \
        fill_loc_##N(t);                                                                           \
        shmem_ctx_##N##_get(SHMEM_CTX_DEFAULT, loc, src, p.n, to);                                 \
        check_##N("ctx_get", loc, to, t, 1, 1, p.n, 1);                                            \
        fill_loc_##N(t);                                                                           \
        shmem_##N##_get_nbi(loc, src, p.n, to);                                                    \
        shmem_quiet();                                                                             \
        check_##N("get_nbi", loc, to, t, 1, 1, p.n, 1);                                            \
        fill_loc_##N(t);                                                                           \
        shmem_ctx_##N##_get_nbi(SHMEM_CTX_DEFAULT, loc, src, p.n, to);                             \
        shmem_ctx_quiet(SHMEM_CTX_DEFAULT);                                                        \
        check_##N("ctx_get_nbi", loc, to, t, 1, 1, p.n, 1);                                        \
        fill_loc_##N(t);                                                                           \
        shmem_get(loc, src, p.n, to);                                                              \
        check_##N("generic get", loc, to, t, 1, 1, p.n, 1);                                        \
        fill_loc_##N(t);                                                                           \
        shmem_get_nbi(SHMEM_CTX_DEFAULT, loc, src, p.n, to);                                       \
        shmem_quiet();                                                                             \
        check_##N("generic ctx get_nbi", loc, to, t, 1, 1, p.n, 1);                                \
        fill_loc_##N(t);                                                                           \
        for (size_t k = 0; k < p.np_; k++)                                                         \
            loc[k] = k % 3 == 0   ? shmem_##N##_g(src + k, to)                                     \
                     : k % 3 == 1 ? shmem_ctx_##N##_g(SHMEM_CTX_DEFAULT, src + k, to)              \
                                  : shmem_g(src + k, to);                                          \
        check_##N("g/ctx_g/generic g", loc, to, t, 1, 1, p.np_, 1);                                \
        fill_loc_##N(t);                                                                           \
        shmem_##N##_iget(loc, src, p.dst, p.sst, p.ni, to);                                        \
        check_##N("iget", loc, to, t, p.dst, p.sst, 1, p.ni);                                      \
        fill_loc_##N(t);                                                                           \
        shmem_ctx_##N##_iget(SHMEM_CTX_DEFAULT, loc, src, p.dst, p.sst, p.ni, to);                 \
        check_##N("ctx_iget", loc, to, t, p.dst, p.sst, 1, p.ni);                                  \
        fill_loc_##N(t);                                                                           \
        shmem_iget(loc, src, p.dst, p.sst, p.ni, to);                                              \
        check_##N("generic iget", loc, to, t, p.dst, p.sst, 1, p.ni);                              \
        fill_loc_##N(t);                                                                           \
        shmem_##N##_ibget(loc, src, p.bdst, p.bsst, p.bsize, p.nb, to);                            \
        check_##N("ibget", loc, to, t, p.bdst, p.bsst, p.bsize, p.nb);                             \
        fill_loc_##N(t);                                                                           \
        shmem_ctx_##N##_ibget(SHMEM_CTX_DEFAULT, loc, src, p.bdst, p.bsst, p.bsize, p.nb, to);     \
        check_##N("ctx_ibget", loc, to, t, p.bdst, p.bsst, p.bsize, p.nb);                         \
        fill_loc_##N(t);                                                                           \
        shmem_ibget(loc, src, p.bdst, p.bsst, p.bsize, p.nb, to);                                  \
        check_##N("generic ibget", loc, to, t, p.bdst, p.bsst, p.bsize, p.nb);                     \
        shmem_barrier_all();                                                                       \
    }

RMA_TYPES(DEF_TYPED)

/* ---------------- sized (bytes) ---------------- */

static unsigned char byte_of(int pe, int t, size_t i)
{
    return (unsigned char)(rv(pe, t, i / 8) >> (8 * (i % 8)));
}

/* buf element b*dst_st + k (esize bytes) == src_pe's element b*sst + k. */
static void check_bytes(const char *what, const unsigned char *buf, size_t esize, int srcpe, int t,
                        ptrdiff_t dst_st, ptrdiff_t sst, size_t bsize, size_t nblocks)
{
    memset(g_touched, 0, sizeof g_touched);
    for (size_t b = 0; b < nblocks; b++)
        for (size_t k = 0; k < bsize; k++) {
            size_t d = b * (size_t)dst_st + k, s = b * (size_t)sst + k;
            g_touched[d] = 1;
            for (size_t q = 0; q < esize; q++)
                CHECK(buf[d * esize + q] == byte_of(srcpe, t, s * esize + q),
                      "%s (esize %zu): element %zu byte %zu (PE %d's element %zu) wrong", what,
                      esize, d, q, srcpe, s);
        }
    for (size_t d = 0; d < REGION; d++)
        for (size_t q = 0; !g_touched[d] && q < esize; q++)
            CHECK(buf[d * esize + q] == byte_of(-1, t, d * esize + q),
                  "%s (esize %zu): element %zu outside the transfer was written", what, esize, d);
}

static void fill_sent_bytes(unsigned char *buf, size_t esize, int t)
{
    for (size_t i = 0; i < REGION * esize; i++)
        buf[i] = byte_of(-1, t, i);
}

#define DEF_SIZED(B, E)                                                                            \
    static void test_sized##B(int t)                                                               \
    {                                                                                              \
        params_t p = params_for(t);                                                                \
        unsigned char *d = g_dst;                                                                  \
        const size_t R = (size_t)REGION * E;                                                       \
        for (size_t i = 0; i < R; i++)                                                             \
            g_src[i] = byte_of(me, t, i);                                                          \
        for (int r = 0; r < 8; r++)                                                                \
            fill_sent_bytes(d + r * R, E, t);                                                      \
        shmem_barrier_all();                                                                       \
        shmem_put##B(d + 0 * R, g_src, p.n, to);                                                   \
        shmem_ctx_put##B(SHMEM_CTX_DEFAULT, d + 1 * R, g_src, p.n, to);                            \
        shmem_put##B##_nbi(d + 2 * R, g_src, p.n, to);                                             \
        shmem_ctx_put##B##_nbi(SHMEM_CTX_DEFAULT, d + 3 * R, g_src, p.n, to);                      \
        shmem_iput##B(d + 4 * R, g_src, p.dst, p.sst, p.ni, to);                                   \
        shmem_ctx_iput##B(SHMEM_CTX_DEFAULT, d + 5 * R, g_src, p.dst, p.sst, p.ni, to);            \
        shmem_ibput##B(d + 6 * R, g_src, p.bdst, p.bsst, p.bsize, p.nb, to);                       \
        shmem_ctx_ibput##B(SHMEM_CTX_DEFAULT, d + 7 * R, g_src, p.bdst, p.bsst, p.bsize, p.nb,     \
                           to);                                                                    \
        shmem_put##B(NULL, NULL, 0, to);                                                           \
        shmem_ctx_put##B(SHMEM_CTX_DEFAULT, NULL, NULL, 0, to);                                    \
        shmem_put##B##_nbi(NULL, NULL, 0, to);                                                     \
        shmem_ctx_put##B##_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, to);                              \
        shmem_get##B(NULL, NULL, 0, to);                                                           \
        shmem_ctx_get##B(SHMEM_CTX_DEFAULT, NULL, NULL, 0, to);                                    \
        shmem_get##B##_nbi(NULL, NULL, 0, to);                                                     \
        shmem_ctx_get##B##_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, to);                              \
        shmem_iput##B(NULL, NULL, 1, 1, 0, to);                                                    \
        shmem_ctx_iput##B(SHMEM_CTX_DEFAULT, NULL, NULL, 1, 1, 0, to);                             \
        shmem_iget##B(NULL, NULL, 1, 1, 0, to);                                                    \
        shmem_ctx_iget##B(SHMEM_CTX_DEFAULT, NULL, NULL, 1, 1, 0, to);                             \
        shmem_ibput##B(NULL, NULL, 1, 1, 1, 0, to);                                                \
        shmem_ctx_ibput##B(SHMEM_CTX_DEFAULT, NULL, NULL, 1, 1, 1, 0, to);                         \
        shmem_ibget##B(NULL, NULL, 1, 1, 1, 0, to);                                                \
        shmem_ctx_ibget##B(SHMEM_CTX_DEFAULT, NULL, NULL, 1, 1, 1, 0, to);                         \
        shmem_quiet();                                                                             \
        shmem_barrier_all();                                                                       \
        check_bytes("put" #B, d + 0 * R, E, from, t, 1, 1, p.n, 1);                                \
        check_bytes("ctx_put" #B, d + 1 * R, E, from, t, 1, 1, p.n, 1);                            \
        check_bytes("put" #B "_nbi", d + 2 * R, E, from, t, 1, 1, p.n, 1);                         \
        check_bytes("ctx_put" #B "_nbi", d + 3 * R, E, from, t, 1, 1, p.n, 1);                     \
        check_bytes("iput" #B, d + 4 * R, E, from, t, p.dst, p.sst, 1, p.ni);                      \
        check_bytes("ctx_iput" #B, d + 5 * R, E, from, t, p.dst, p.sst, 1, p.ni);                  \
        check_bytes("ibput" #B, d + 6 * R, E, from, t, p.bdst, p.bsst, p.bsize, p.nb);             \
        check_bytes("ctx_ibput" #B, d + 7 * R, E, from, t, p.bdst, p.bsst, p.bsize, p.nb);         \
        fill_sent_bytes(g_loc, E, t);                                                              \
        shmem_get##B(g_loc, g_src, p.n, to);                                                       \
        check_bytes("get" #B, g_loc, E, to, t, 1, 1, p.n, 1);                                      \
        fill_sent_bytes(g_loc, E, t);                                                              \
        shmem_ctx_get##B(SHMEM_CTX_DEFAULT, g_loc, g_src, p.n, to);                                \
        check_bytes("ctx_get" #B, g_loc, E, to, t, 1, 1, p.n, 1);                                  \
        fill_sent_bytes(g_loc, E, t);                                                              \
        shmem_get##B##_nbi(g_loc, g_src, p.n, to);                                                 \
        shmem_quiet();                                                                             \
        check_bytes("get" #B "_nbi", g_loc, E, to, t, 1, 1, p.n, 1);                               \
        fill_sent_bytes(g_loc, E, t);                                                              \
        shmem_ctx_get##B##_nbi(SHMEM_CTX_DEFAULT, g_loc, g_src, p.n, to);                          \
        shmem_ctx_quiet(SHMEM_CTX_DEFAULT);                                                        \
        check_bytes("ctx_get" #B "_nbi", g_loc, E, to, t, 1, 1, p.n, 1);                           \
        fill_sent_bytes(g_loc, E, t);                                                              \
        shmem_iget##B(g_loc, g_src, p.dst, p.sst, p.ni, to);                                       \
        check_bytes("iget" #B, g_loc, E, to, t, p.dst, p.sst, 1, p.ni);                            \
        fill_sent_bytes(g_loc, E, t);                                                              \
        shmem_ctx_iget##B(SHMEM_CTX_DEFAULT, g_loc, g_src, p.dst, p.sst, p.ni, to);                \
        check_bytes("ctx_iget" #B, g_loc, E, to, t, p.dst, p.sst, 1, p.ni);                        \
        fill_sent_bytes(g_loc, E, t);                                                              \
        shmem_ibget##B(g_loc, g_src, p.bdst, p.bsst, p.bsize, p.nb, to);                           \
        check_bytes("ibget" #B, g_loc, E, to, t, p.bdst, p.bsst, p.bsize, p.nb);                   \
        fill_sent_bytes(g_loc, E, t);                                                              \
        shmem_ctx_ibget##B(SHMEM_CTX_DEFAULT, g_loc, g_src, p.bdst, p.bsst, p.bsize, p.nb, to);    \
        check_bytes("ctx_ibget" #B, g_loc, E, to, t, p.bdst, p.bsst, p.bsize, p.nb);               \
        shmem_barrier_all();                                                                       \
    }

SIZED(DEF_SIZED)

static void test_mem(int t)
{
    params_t p = params_for(t);
    size_t n = p.n * 5 + (size_t)t % 5; /* odd byte counts too; <= REGION */
    unsigned char *d = g_dst;
    const size_t R = REGION;
    for (size_t i = 0; i < R; i++)
        g_src[i] = byte_of(me, t, i);
    for (int r = 0; r < 4; r++)
        fill_sent_bytes(d + r * R, 1, t);
    shmem_barrier_all();
    shmem_putmem(d + 0 * R, g_src, n, to);
    shmem_ctx_putmem(SHMEM_CTX_DEFAULT, d + 1 * R, g_src, n, to);
    shmem_putmem_nbi(d + 2 * R, g_src, n, to);
    shmem_ctx_putmem_nbi(SHMEM_CTX_DEFAULT, d + 3 * R, g_src, n, to);
    shmem_putmem(NULL, NULL, 0, to);
    shmem_ctx_putmem(SHMEM_CTX_DEFAULT, NULL, NULL, 0, to);
    shmem_putmem_nbi(NULL, NULL, 0, to);
    shmem_ctx_putmem_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, to);
    shmem_getmem(NULL, NULL, 0, to);
    shmem_ctx_getmem(SHMEM_CTX_DEFAULT, NULL, NULL, 0, to);
    shmem_getmem_nbi(NULL, NULL, 0, to);
    shmem_ctx_getmem_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, to);
    shmem_quiet();
    shmem_barrier_all();
    check_bytes("putmem", d + 0 * R, 1, from, t, 1, 1, n, 1);
    check_bytes("ctx_putmem", d + 1 * R, 1, from, t, 1, 1, n, 1);
    check_bytes("putmem_nbi", d + 2 * R, 1, from, t, 1, 1, n, 1);
    check_bytes("ctx_putmem_nbi", d + 3 * R, 1, from, t, 1, 1, n, 1);
    fill_sent_bytes(g_loc, 1, t);
    shmem_getmem(g_loc, g_src, n, to);
    check_bytes("getmem", g_loc, 1, to, t, 1, 1, n, 1);
    fill_sent_bytes(g_loc, 1, t);
    shmem_ctx_getmem(SHMEM_CTX_DEFAULT, g_loc, g_src, n, to);
    check_bytes("ctx_getmem", g_loc, 1, to, t, 1, 1, n, 1);
    fill_sent_bytes(g_loc, 1, t);
    shmem_getmem_nbi(g_loc, g_src, n, to);
    shmem_quiet();
    check_bytes("getmem_nbi", g_loc, 1, to, t, 1, 1, n, 1);
    fill_sent_bytes(g_loc, 1, t);
    shmem_ctx_getmem_nbi(SHMEM_CTX_DEFAULT, g_loc, g_src, n, to);
    shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
    check_bytes("ctx_getmem_nbi", g_loc, 1, to, t, 1, 1, n, 1);
    shmem_barrier_all();
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    np = shmem_n_pes();
    to = (me + 1) % np;
    from = (me + np - 1) % np;
    g_src = shmem_align(64, (size_t)REGION * MAXE);
    g_dst = shmem_align(64, (size_t)NREG * REGION * MAXE);
    CHECK(g_src && g_dst, "shmem_align failed");

    int t = 0;
    for (int rep = 0; rep < 2; rep++) {
#define RUN_TYPED(T, N, K) test_##N(t++);
        RMA_TYPES(RUN_TYPED)
#define RUN_SIZED(B, E) test_sized##B(t++);
        SIZED(RUN_SIZED)
        test_mem(t++);
    }

    shmem_barrier_all();
    shmem_free(g_dst);
    shmem_free(g_src);
    shmem_finalize();
    return 0;
}
