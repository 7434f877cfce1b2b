/* Reductions for every type and operator the API has, in place and not,
 * sizes 0 to past one internal block, on the world and on sub-teams; and
 * sum_inscan / sum_exscan. Every PE recomputes every input (deterministic
 * per PE and round) and checks every element.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include <complex.h>

#include "test_util.h"

#define MAXN 5000 /* > the library's 4 KiB block for 1-byte types */

static char *src, *dst;
static int round_no;

static uint64_t bits(int pe, size_t i, int r)
{
    return test_mix(test_seed() ^ (uint64_t)pe << 48 ^ (uint64_t)r << 32 ^ i);
}

/* Floating values are small integers, so every sum and product of up to a
 * few PEs is exact whatever the order. */
static int small(int pe, size_t i, int r, int which)
{
    static const int tab[5] = {-2, -1, 1, 2, 3};
    return tab[(bits(pe, i, r) >> (8 * which)) % 5];
}

/* X(NAME, T, KIND): KIND is INT, FLT or CPX. */
/* clang-format off */
#define BIT_TYPES(X)                                                  \
    X(uchar, unsigned char, INT) X(ushort, unsigned short, INT)       \
    X(uint, unsigned int, INT) X(ulong, unsigned long, INT)           \
    X(ulonglong, unsigned long long, INT)                             \
    X(int8, int8_t, INT) X(int16, int16_t, INT)                       \
    X(int32, int32_t, INT) X(int64, int64_t, INT)                     \
    X(uint8, uint8_t, INT) X(uint16, uint16_t, INT)                   \
    X(uint32, uint32_t, INT) X(uint64, uint64_t, INT)                 \
    X(size, size_t, INT)
#define MINMAX_TYPES(X)                                               \
    BIT_TYPES(X)                                                      \
    X(char, char, INT) X(schar, signed char, INT) X(short, short, INT) \
    X(int, int, INT) X(long, long, INT) X(longlong, long long, INT)   \
    X(ptrdiff, ptrdiff_t, INT)                                        \
    X(float, float, FLT) X(double, double, FLT)                       \
    X(longdouble, long double, FLT)
#define SUM_TYPES(X)                                                  \
    MINMAX_TYPES(X)                                                   \
    X(complexf, float _Complex, CPX) X(complexd, double _Complex, CPX)
/* clang-format on */

#define VAL_INT(T) (T) bits(pe, i, r)
#define VAL_FLT(T) (T) small(pe, i, r, 0)
#define VAL_CPX(T) (T)(small(pe, i, r, 0) + small(pe, i, r, 1) * I)
#define DEF_VAL(NAME, T, KIND)                                                                     \
    static T val_##NAME(int pe, size_t i, int r)                                                   \
    {                                                                                              \
        return VAL_##KIND(T);                                                                      \
    }
SUM_TYPES(DEF_VAL)

/* Expected combinations; integer sums and products wrap. */
#define C_and(T, a, b)      (T)((a) & (b))
#define C_or(T, a, b)       (T)((a) | (b))
#define C_xor(T, a, b)      (T)((a) ^ (b))
#define C_max(T, a, b)      ((b) > (a) ? (b) : (a))
#define C_min(T, a, b)      ((b) < (a) ? (b) : (a))
#define C_sum_INT(T, a, b)  (T)((unsigned long long)(a) + (unsigned long long)(b))
#define C_prod_INT(T, a, b) (T)((unsigned long long)(a) * (unsigned long long)(b))
#define C_sum_FLT(T, a, b)  (T)((a) + (b))
#define C_prod_FLT(T, a, b) (T)((a) * (b))
#define C_sum_CPX           C_sum_FLT
#define C_prod_CPX          C_prod_FLT
#define C_and_INT           C_and
#define C_or_INT            C_or
#define C_xor_INT           C_xor
#define C_max_INT           C_max
#define C_min_INT           C_min
#define C_max_FLT           C_max
#define C_min_FLT           C_min

static int wpe(shmem_team_t team, int k)
{
    return shmem_team_translate_pe(team, k, SHMEM_TEAM_WORLD);
}

#define DEF_RED(NAME, T, KIND, OP)                                                                 \
    static void red_##NAME##_##OP(shmem_team_t team, size_t nel, int inplace)                      \
    {                                                                                              \
        int me = shmem_my_pe(), n = shmem_team_n_pes(team), r = ++round_no;                        \
        T *s = (T *)src, *d = (T *)dst;                                                            \
        for (size_t i = 0; i < nel; i++) {                                                         \
            int pe = me;                                                                           \
            (inplace ? d : s)[i] = val_##NAME(pe, i, r);                                           \
        }                                                                                          \
        memset(&d[nel], 0x5a, sizeof(T));                                                          \
        CHECK(shmem_##NAME##_##OP##_reduce(team, d, inplace ? d : s, nel) == 0,                    \
              #NAME "_" #OP "_reduce");                                                            \
        for (size_t i = 0; i < nel; i++) {                                                         \
            T e = val_##NAME(wpe(team, 0), i, r);                                                  \
            for (int k = 1; k < n; k++) {                                                          \
                T b = val_##NAME(wpe(team, k), i, r);                                              \
                e = C_##OP##_##KIND(T, e, b);                                                      \
            }                                                                                      \
            CHECK(d[i] == e, #NAME "_" #OP "_reduce: %zu of %zu elements wrong (inplace %d)", i,   \
                  nel, inplace);                                                                   \
        }                                                                                          \
        unsigned char guard[sizeof(T)];                                                            \
        memset(guard, 0x5a, sizeof guard);                                                         \
        CHECK(!memcmp(&d[nel], guard, sizeof guard), #NAME "_" #OP " wrote past the end");         \
    }

#define DEF_BIT(NAME, T, KIND)                                                                     \
    DEF_RED(NAME, T, KIND, and) DEF_RED(NAME, T, KIND, or) DEF_RED(NAME, T, KIND, xor)
#define DEF_MINMAX(NAME, T, KIND) DEF_RED(NAME, T, KIND, max) DEF_RED(NAME, T, KIND, min)
#define DEF_SUM(NAME, T, KIND)    DEF_RED(NAME, T, KIND, sum) DEF_RED(NAME, T, KIND, prod)
BIT_TYPES(DEF_BIT)
MINMAX_TYPES(DEF_MINMAX)
SUM_TYPES(DEF_SUM)

/* Prefix sums: member m gets the sum over members 0..m (inscan) or 0..m-1. */
#define DEF_SCAN(NAME, T, KIND)                                                                    \
    static void scan_##NAME(shmem_team_t team, size_t nel, int ex, int inplace)                    \
    {                                                                                              \
        int me = shmem_my_pe(), tme = shmem_team_my_pe(team), r = ++round_no;                      \
        T *s = (T *)src, *d = (T *)dst;                                                            \
        for (size_t i = 0; i < nel; i++) {                                                         \
            int pe = me;                                                                           \
            (inplace ? d : s)[i] = val_##NAME(pe, i, r);                                           \
        }                                                                                          \
        int rc = ex ? shmem_##NAME##_sum_exscan(team, d, inplace ? d : s, nel)                     \
                    : shmem_##NAME##_sum_inscan(team, d, inplace ? d : s, nel);                    \
        CHECK(rc == 0, #NAME " scan");                                                             \
        for (size_t i = 0; i < nel; i++) {                                                         \
            T e = 0;                                                                               \
            for (int k = 0; k < tme + !ex; k++) {                                                  \
                T b = val_##NAME(wpe(team, k), i, r);                                              \
                e = C_sum_##KIND(T, e, b);                                                         \
            }                                                                                      \
            CHECK(d[i] == e, #NAME " %sscan: element %zu of %zu wrong", ex ? "ex" : "in", i, nel); \
        }                                                                                          \
    }
SUM_TYPES(DEF_SCAN)

static const size_t sizes[] = {0, 1, 7, MAXN};

static void run_all(shmem_team_t team)
{
    if (team == SHMEM_TEAM_INVALID)
        return;
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++)
        for (int inplace = 0; inplace < 2; inplace++) {
            size_t nel = sizes[z];
#define RUN_BIT(NAME, T, KIND)                                                                     \
    red_##NAME##_and(team, nel, inplace);                                                          \
    red_##NAME##_or(team, nel, inplace);                                                           \
    red_##NAME##_xor(team, nel, inplace);
#define RUN_MINMAX(NAME, T, KIND)                                                                  \
    red_##NAME##_max(team, nel, inplace);                                                          \
    red_##NAME##_min(team, nel, inplace);
#define RUN_SUM(NAME, T, KIND)                                                                     \
    red_##NAME##_sum(team, nel, inplace);                                                          \
    red_##NAME##_prod(team, nel, inplace);                                                         \
    scan_##NAME(team, nel, 0, inplace);                                                            \
    scan_##NAME(team, nel, 1, inplace);
            BIT_TYPES(RUN_BIT)
            MINMAX_TYPES(RUN_MINMAX)
            SUM_TYPES(RUN_SUM)
        }
}

int main(void)
{
    shmem_init();
    int n = shmem_n_pes();
    src = shmem_malloc(MAXN * 16 + 64);
    dst = shmem_malloc(MAXN * 16 + 64);
    CHECK(src && dst, "shmem_malloc");

    run_all(SHMEM_TEAM_WORLD);

    shmem_team_t even, odd;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &even) == 0,
          "split even");
    odd = SHMEM_TEAM_INVALID;
    if (n > 1)
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odd) == 0,
              "split odd");
    int base = round_no;
    run_all(even);
    round_no = base + 100000;
    run_all(odd);

    /* float max/min: identical everywhere even for values that are not exact */
    shmem_barrier_all();
    double *ds = (double *)src, *dd = (double *)dst;
    for (int i = 0; i < 100; i++)
        ds[i] = (double)bits(shmem_my_pe(), i, -1) / 3.0e10 + 0.1 * i;
    CHECK(shmem_double_sum_reduce(SHMEM_TEAM_WORLD, dd, ds, 100) == 0, "double_sum");
    double *all = (double *)shmem_malloc(100 * sizeof(double) * (size_t)n);
    CHECK(shmem_double_fcollect(SHMEM_TEAM_WORLD, all, dd, 100) == 0, "fcollect");
    CHECK(!memcmp(all, all + 100 * (n - 1), 100 * sizeof(double)), "sums differ between PEs");
    shmem_free(all);

    shmem_team_destroy(even);
    shmem_team_destroy(odd);
    shmem_free(src);
    shmem_free(dst);
    if (shmem_my_pe() == 0)
        printf("test_reduce: OK (%d PEs)\n", n);
    shmem_finalize();
    return 0;
}
