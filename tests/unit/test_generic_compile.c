/* Compile-only test of the C11 type-generic selections in shmem_gen.h: every
 * generic is used with int, double (where the spec's table allows it) and a
 * fixed-width type, with and without a context where the spec has one. Arrays
 * are passed as arrays, to check they decay in the selection. The return-type
 * assertions check that the selection picked the routine of the right type.
 * Nothing here runs; the build compiling it is the test. */
#include <complex.h>
#include <shmem.h>
#include <stdint.h>

#if !defined(__STDC_VERSION__) || __STDC_VERSION__ < 201112L
#error "test_generic_compile.c needs C11"
#endif

#define SAME_TYPE(expr, T) _Generic((expr), T : 1, default : 0)

void ushmem_test_generic_compile(shmem_ctx_t ctx, shmem_team_t team, int pe);

/* put/get families, p/g, put-with-signal: the standard RMA types. */
#define RMA(T)                                                                                     \
    {                                                                                              \
        static T d[8], s[8];                                                                       \
        static const T cs[8];                                                                      \
        static uint64_t sig;                                                                       \
        T v = (T)1;                                                                                \
        shmem_put(d, cs, 8, pe);                                                                   \
        shmem_put(ctx, d, s, 8, pe);                                                               \
        shmem_get(d, s, 8, pe);                                                                    \
        shmem_get(ctx, d, cs, 8, pe);                                                              \
        shmem_put_nbi(d, s, 8, pe);                                                                \
        shmem_put_nbi(ctx, d, s, 8, pe);                                                           \
        shmem_get_nbi(d, s, 8, pe);                                                                \
        shmem_get_nbi(ctx, d, s, 8, pe);                                                           \
        shmem_iput(d, s, 2, 2, 4, pe);                                                             \
        shmem_iput(ctx, d, s, 2, 2, 4, pe);                                                        \
        shmem_iget(d, s, 2, 2, 4, pe);                                                             \
        shmem_iget(ctx, d, s, 2, 2, 4, pe);                                                        \
        shmem_ibput(d, s, 4, 4, 2, 2, pe);                                                         \
        shmem_ibput(ctx, d, s, 4, 4, 2, 2, pe);                                                    \
        shmem_ibget(d, s, 4, 4, 2, 2, pe);                                                         \
        shmem_ibget(ctx, d, s, 4, 4, 2, 2, pe);                                                    \
        shmem_p(d, v, pe);                                                                         \
        shmem_p(ctx, &d[1], v, pe);                                                                \
        v = shmem_g(d, pe);                                                                        \
        v = shmem_g(ctx, cs, pe);                                                                  \
        _Static_assert(SAME_TYPE(shmem_g(cs, 0), T), "shmem_g: " #T);                              \
        _Static_assert(SAME_TYPE(shmem_g(ctx, d, 0), T), "shmem_g ctx: " #T);                      \
        shmem_put_signal(d, s, 8, &sig, 1, SHMEM_SIGNAL_SET, pe);                                  \
        shmem_put_signal(ctx, d, s, 8, &sig, 1, SHMEM_SIGNAL_ADD, pe);                             \
        shmem_put_signal_nbi(d, s, 8, &sig, 1, SHMEM_SIGNAL_SET, pe);                              \
        shmem_put_signal_nbi(ctx, d, s, 8, &sig, 1, SHMEM_SIGNAL_ADD, pe);                         \
        (void)shmem_broadcast(team, d, s, 8, 0);                                                   \
        (void)shmem_collect(team, d, cs, 1);                                                       \
        (void)shmem_fcollect(team, d, s, 1);                                                       \
        (void)shmem_alltoall(team, d, s, 1);                                                       \
        (void)shmem_alltoalls(team, d, s, 1, 1, 1);                                                \
        (void)v;                                                                                   \
    }

/* fetch, set, swap (+ _nbi): the extended AMO types. */
#define EXTAMO(T)                                                                                  \
    {                                                                                              \
        static T d;                                                                                \
        static const T cd;                                                                         \
        T f, v = (T)1;                                                                             \
        v = shmem_atomic_fetch(&d, pe);                                                            \
        v = shmem_atomic_fetch(ctx, &cd, pe);                                                      \
        _Static_assert(SAME_TYPE(shmem_atomic_fetch(&cd, 0), T), "fetch: " #T);                    \
        shmem_atomic_set(&d, v, pe);                                                               \
        shmem_atomic_set(ctx, &d, v, pe);                                                          \
        v = shmem_atomic_swap(&d, v, pe);                                                          \
        v = shmem_atomic_swap(ctx, &d, v, pe);                                                     \
        _Static_assert(SAME_TYPE(shmem_atomic_swap(ctx, &d, v, 0), T), "swap");                    \
        shmem_atomic_fetch_nbi(&f, &d, pe);                                                        \
        shmem_atomic_fetch_nbi(ctx, &f, &cd, pe);                                                  \
        shmem_atomic_swap_nbi(&f, &d, v, pe);                                                      \
        shmem_atomic_swap_nbi(ctx, &f, &d, v, pe);                                                 \
        (void)v;                                                                                   \
    }

/* compare_swap, fetch_inc, inc, fetch_add, add (+ _nbi): the standard AMO types. */
#define STDAMO(T)                                                                                  \
    {                                                                                              \
        static T d;                                                                                \
        T f, v = (T)1;                                                                             \
        v = shmem_atomic_compare_swap(&d, v, v, pe);                                               \
        v = shmem_atomic_compare_swap(ctx, &d, v, v, pe);                                          \
        v = shmem_atomic_fetch_inc(&d, pe);                                                        \
        v = shmem_atomic_fetch_inc(ctx, &d, pe);                                                   \
        shmem_atomic_inc(&d, pe);                                                                  \
        shmem_atomic_inc(ctx, &d, pe);                                                             \
        v = shmem_atomic_fetch_add(&d, v, pe);                                                     \
        v = shmem_atomic_fetch_add(ctx, &d, v, pe);                                                \
        _Static_assert(SAME_TYPE(shmem_atomic_fetch_add(&d, v, 0), T), "fadd");                    \
        shmem_atomic_add(&d, v, pe);                                                               \
        shmem_atomic_add(ctx, &d, v, pe);                                                          \
        shmem_atomic_compare_swap_nbi(&f, &d, v, v, pe);                                           \
        shmem_atomic_compare_swap_nbi(ctx, &f, &d, v, v, pe);                                      \
        shmem_atomic_fetch_inc_nbi(&f, &d, pe);                                                    \
        shmem_atomic_fetch_inc_nbi(ctx, &f, &d, pe);                                               \
        shmem_atomic_fetch_add_nbi(&f, &d, v, pe);                                                 \
        shmem_atomic_fetch_add_nbi(ctx, &f, &d, v, pe);                                            \
        (void)v;                                                                                   \
    }

/* and, or, xor (fetching, non-fetching, _nbi): the bitwise AMO types. */
#define BITAMO(T)                                                                                  \
    {                                                                                              \
        static T d;                                                                                \
        T f, v = (T)1;                                                                             \
        v = shmem_atomic_fetch_and(&d, v, pe);                                                     \
        v = shmem_atomic_fetch_and(ctx, &d, v, pe);                                                \
        v = shmem_atomic_fetch_or(&d, v, pe);                                                      \
        v = shmem_atomic_fetch_or(ctx, &d, v, pe);                                                 \
        v = shmem_atomic_fetch_xor(&d, v, pe);                                                     \
        v = shmem_atomic_fetch_xor(ctx, &d, v, pe);                                                \
        _Static_assert(SAME_TYPE(shmem_atomic_fetch_xor(&d, v, 0), T), "fxor");                    \
        shmem_atomic_and(&d, v, pe);                                                               \
        shmem_atomic_and(ctx, &d, v, pe);                                                          \
        shmem_atomic_or(&d, v, pe);                                                                \
        shmem_atomic_or(ctx, &d, v, pe);                                                           \
        shmem_atomic_xor(&d, v, pe);                                                               \
        shmem_atomic_xor(ctx, &d, v, pe);                                                          \
        shmem_atomic_fetch_and_nbi(&f, &d, v, pe);                                                 \
        shmem_atomic_fetch_and_nbi(ctx, &f, &d, v, pe);                                            \
        shmem_atomic_fetch_or_nbi(&f, &d, v, pe);                                                  \
        shmem_atomic_fetch_or_nbi(ctx, &f, &d, v, pe);                                             \
        shmem_atomic_fetch_xor_nbi(&f, &d, v, pe);                                                 \
        shmem_atomic_fetch_xor_nbi(ctx, &f, &d, v, pe);                                            \
        (void)v;                                                                                   \
    }

/* wait_until / test families: the point-to-point synchronization types. */
#define SYNC(T)                                                                                    \
    {                                                                                              \
        static T ivars[4];                                                                         \
        static const T cmp_values[4];                                                              \
        static const int status[4];                                                                \
        size_t idx[4], n = 0;                                                                      \
        int r = 0;                                                                                 \
        shmem_wait_until(&ivars[0], SHMEM_CMP_NE, (T)0);                                           \
        shmem_wait_until_all(ivars, 4, status, SHMEM_CMP_EQ, (T)1);                                \
        n += shmem_wait_until_any(ivars, 4, NULL, SHMEM_CMP_GT, (T)1);                             \
        n += shmem_wait_until_some(ivars, 4, idx, status, SHMEM_CMP_GE, (T)1);                     \
        shmem_wait_until_all_vector(ivars, 4, status, SHMEM_CMP_LT, cmp_values);                   \
        n += shmem_wait_until_any_vector(ivars, 4, status, SHMEM_CMP_LE, cmp_values);              \
        n += shmem_wait_until_some_vector(ivars, 4, idx, NULL, SHMEM_CMP_EQ, cmp_values);          \
        r += shmem_test(&ivars[1], SHMEM_CMP_EQ, (T)1);                                            \
        r += shmem_test_all(ivars, 4, status, SHMEM_CMP_EQ, (T)1);                                 \
        n += shmem_test_any(ivars, 4, status, SHMEM_CMP_EQ, (T)1);                                 \
        n += shmem_test_some(ivars, 4, idx, status, SHMEM_CMP_EQ, (T)1);                           \
        r += shmem_test_all_vector(ivars, 4, status, SHMEM_CMP_EQ, cmp_values);                    \
        n += shmem_test_any_vector(ivars, 4, status, SHMEM_CMP_EQ, cmp_values);                    \
        n += shmem_test_some_vector(ivars, 4, idx, status, SHMEM_CMP_EQ, cmp_values);              \
        _Static_assert(SAME_TYPE(shmem_test_any(ivars, 4, status, 0, (T)1), size_t), "test_any");  \
        (void)n;                                                                                   \
        (void)r;                                                                                   \
    }

#define REDUCE(T, op)                                                                              \
    {                                                                                              \
        static T d[4], s[4];                                                                       \
        int rc = shmem_##op##_reduce(team, d, s, 4);                                               \
        (void)rc;                                                                                  \
    }

#define SCAN(T)                                                                                    \
    {                                                                                              \
        static T d[4], s[4];                                                                       \
        int rc = shmem_sum_inscan(team, d, s, 4) + shmem_sum_exscan(team, d, s, 4);                \
        (void)rc;                                                                                  \
    }

/* Deprecated (1.4) C11 names: fetch/set/swap on float double int long
 * long long; cswap/finc/inc/fadd/add on int long long long. */
#define DEPEXT(T)                                                                                  \
    {                                                                                              \
        static T d;                                                                                \
        T v = shmem_fetch(&d, pe);                                                                 \
        shmem_set(&d, v, pe);                                                                      \
        v = shmem_swap(&d, v, pe);                                                                 \
        (void)v;                                                                                   \
    }
#define DEPSTD(T)                                                                                  \
    {                                                                                              \
        static T d;                                                                                \
        T v = shmem_cswap(&d, (T)0, (T)1, pe);                                                     \
        v = shmem_finc(&d, pe);                                                                    \
        shmem_inc(&d, pe);                                                                         \
        v = shmem_fadd(&d, v, pe);                                                                 \
        shmem_add(&d, v, pe);                                                                      \
        (void)v;                                                                                   \
    }

void ushmem_test_generic_compile(shmem_ctx_t ctx, shmem_team_t team, int pe)
{
    /* clang-format off */
    RMA(int)
    RMA(double)
    RMA(int64_t)
    RMA(char)
    RMA(long double)
    RMA(size_t)
    EXTAMO(int)
    EXTAMO(double)
    EXTAMO(int64_t)
    EXTAMO(float)
    EXTAMO(ptrdiff_t)
    STDAMO(int)
    STDAMO(int64_t)
    STDAMO(unsigned long long)
    STDAMO(size_t)
    BITAMO(int)
    BITAMO(int64_t)
    BITAMO(uint32_t)
    BITAMO(unsigned long)
    SYNC(int)
    SYNC(int64_t)
    SYNC(size_t)
    SYNC(short)
    REDUCE(int, and)
    REDUCE(int64_t, or)
    REDUCE(unsigned char, xor)
    REDUCE(size_t, and)
    REDUCE(int, max)
    REDUCE(double, max)
    REDUCE(int64_t, max)
    REDUCE(char, max)
    REDUCE(int, min)
    REDUCE(double, min)
    REDUCE(uint16_t, min)
    REDUCE(long double, min)
    REDUCE(int, sum)
    REDUCE(double, sum)
    REDUCE(int64_t, sum)
    REDUCE(double _Complex, sum)
    REDUCE(int, prod)
    REDUCE(double, prod)
    REDUCE(uint8_t, prod)
    REDUCE(float _Complex, prod)
    SCAN(int)
    SCAN(double)
    SCAN(int64_t)
    SCAN(double _Complex)
    DEPEXT(int)
    DEPEXT(double)
    DEPEXT(long long)
    DEPEXT(float)
    DEPSTD(int)
    DEPSTD(long)
    DEPSTD(long long)
    /* clang-format on */

    /* 1.6 signal updates: optional context first. */
    static uint64_t sig;
    shmem_signal_set(&sig, 1, pe);
    shmem_signal_set(ctx, &sig, 1, pe);
    shmem_signal_add(&sig, 1, pe);
    shmem_signal_add(SHMEM_CTX_DEFAULT, &sig, 1, pe);

    /* The deprecated long-typed functions share names with generics. */
    static long lv;
    shmem_wait_until(&lv, SHMEM_CMP_NE, 0L);
    shmem_wait(&lv, 0L);
    lv = shmem_swap(&lv, 1L, pe);
}
