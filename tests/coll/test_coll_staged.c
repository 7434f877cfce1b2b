/* The staged collectives (src/coll/staged.c: what runs on device memory when
 * a member's device heap is not mapped here), forced onto host memory with
 * USHMEM_COLL_STAGED=1 so they run without a GPU: broadcast (every root),
 * fcollect, collect, alltoall, alltoalls, reductions (sum/min/max on int,
 * long and double, xor on int32/int64, prod on small ints), in place and not,
 * sum scans, nelems 0, on the world, on every other PE and on teams of one;
 * then 50 collectives back to back with sizes up to 1 MiB and no barrier in
 * between. Random data, every result checked on every PE.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include "test_util.h"

#define MAXB  ((size_t)1 << 20) /* largest block */
#define MAXPE 8

static unsigned char *src, *dst;
static int round_no;

static int wpe(shmem_team_t team, int i)
{
    return shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD);
}

static void check_bytes(const unsigned char *got, size_t n, int id, int round, const char *what)
{
    size_t bad = 0;
    CHECK(test_verify(got, n, id, round, &bad), "%s: %zu bytes from %d (round %d): byte %zu wrong",
          what, n, id, round, bad);
}

static void do_bcast(shmem_team_t team, size_t sz, int root)
{
    int me = shmem_my_pe(), r = ++round_no;
    test_fill(src, sz, me, r);
    memset(dst, 0xee, sz + 1);
    CHECK(shmem_broadcastmem(team, dst, src, sz, root) == 0, "broadcastmem");
    check_bytes(dst, sz, wpe(team, root), r, "broadcastmem");
    CHECK(dst[sz] == 0xee, "broadcast wrote past the end");
}

static void do_fcollect(shmem_team_t team, size_t sz)
{
    int n = shmem_team_n_pes(team), me = shmem_my_pe(), r = ++round_no;
    test_fill(src, sz, me, r);
    memset(dst, 0xee, n * sz + 1);
    CHECK(shmem_fcollectmem(team, dst, src, sz) == 0, "fcollectmem");
    for (int j = 0; j < n; j++)
        check_bytes(dst + j * sz, sz, wpe(team, j), r, "fcollectmem");
    CHECK(dst[n * sz] == 0xee, "fcollect wrote past the end");
}

static size_t collect_size(int pe, int r, size_t max)
{
    if ((pe + r) % 3 == 0)
        return 0;
    return (size_t)test_mix(test_seed() ^ (uint64_t)pe << 40 ^ (uint64_t)r) % (max + 1);
}

static void do_collect(shmem_team_t team, size_t max)
{
    int n = shmem_team_n_pes(team), me = shmem_my_pe(), r = ++round_no;
    size_t mine = collect_size(me, r, max), total = 0;
    test_fill(src, mine, me, r);
    for (int j = 0; j < n; j++)
        total += collect_size(wpe(team, j), r, max);
    memset(dst, 0xee, total + 1);
    CHECK(shmem_collectmem(team, dst, src, mine) == 0, "collectmem");
    size_t off = 0;
    for (int j = 0; j < n; j++) {
        size_t sz = collect_size(wpe(team, j), r, max);
        check_bytes(dst + off, sz, wpe(team, j), r, "collectmem");
        off += sz;
    }
    CHECK(dst[total] == 0xee, "collect wrote past the end");
}

static void do_alltoall(shmem_team_t team, size_t sz)
{
    int n = shmem_team_n_pes(team), me = shmem_my_pe(), tme = shmem_team_my_pe(team);
    int r = ++round_no;
    for (int j = 0; j < n; j++)
        test_fill(src + j * sz, sz, me * 1000 + j, r);
    memset(dst, 0xee, n * sz + 1);
    CHECK(shmem_alltoallmem(team, dst, src, sz) == 0, "alltoallmem");
    for (int j = 0; j < n; j++)
        check_bytes(dst + j * sz, sz, wpe(team, j) * 1000 + tme, r, "alltoallmem");
    CHECK(dst[n * sz] == 0xee, "alltoall wrote past the end");
}

static void do_alltoalls(shmem_team_t team)
{
    /* dst 2, sst 3, five int64 per pair; the gaps stay untouched */
    enum { NE = 5, DS = 2, SS = 3 };
    int n = shmem_team_n_pes(team), me = shmem_my_pe(), tme = shmem_team_my_pe(team);
    int64_t *s64 = (int64_t *)src, *d64 = (int64_t *)dst;
    for (int k = 0; k < n; k++)
        for (int e = 0; e < NE; e++)
            s64[(k * NE + e) * SS] = (int64_t)me << 32 | k << 16 | e;
    for (int i = 0; i < n * NE * DS; i++)
        d64[i] = -1;
    CHECK(shmem_int64_alltoalls(team, d64, s64, DS, SS, NE) == 0, "int64_alltoalls");
    for (int j = 0; j < n; j++)
        for (int e = 0; e < NE; e++) {
            int64_t want = (int64_t)wpe(team, j) << 32 | tme << 16 | e;
            CHECK(d64[(j * NE + e) * DS] == want, "alltoalls from %d elem %d", j, e);
            CHECK(d64[(j * NE + e) * DS + 1] == -1, "alltoalls wrote a gap");
        }
    int r = ++round_no;
    for (int j = 0; j < n; j++)
        test_fill(src + j * 100, 100, me * 1000 + j, r);
    CHECK(shmem_alltoallsmem(team, dst, src, 1, 1, 100) == 0, "alltoallsmem");
    for (int j = 0; j < n; j++)
        check_bytes(dst + j * 100, 100, wpe(team, j) * 1000 + tme, r, "alltoallsmem");
    CHECK(shmem_alltoallsmem(team, dst, src, 0, 1, 1) != 0, "stride 0 accepted");
}

/* ---- reductions ---- */

static uint64_t bits(int pe, size_t i, int r)
{
    return test_mix(test_seed() ^ (uint64_t)pe << 48 ^ (uint64_t)r << 32 ^ i);
}

/* Small values: products of a few PEs do not overflow and floating sums
 * are exact in any order. */
static int small(int pe, size_t i, int r)
{
    static const int tab[5] = {-2, -1, 1, 2, 3};
    return tab[bits(pe, i, r) % 5];
}

static int v_int(int pe, size_t i, int r)
{
    return (int)(bits(pe, i, r) % 2000001) - 1000000;
}
static long v_long(int pe, size_t i, int r)
{
    return (long)bits(pe, i, r);
}
static double v_double(int pe, size_t i, int r)
{
    return (double)small(pe, i, r) * 0.5;
}
static int v_small(int pe, size_t i, int r)
{
    return small(pe, i, r);
}

#define C_SUM(T, a, b)  (T)((unsigned long)(a) + (unsigned long)(b))
#define C_FSUM(T, a, b) (T)((a) + (b))
#define C_PROD(T, a, b) (T)((a) * (b))
#define C_MIN(T, a, b)  ((b) < (a) ? (b) : (a))
#define C_MAX(T, a, b)  ((b) > (a) ? (b) : (a))
#define C_XOR(T, a, b)  (T)((a) ^ (b))

/* shmem_NAME_OP_reduce over values VALF, checked against COMB in team order. */
#define DEF_RED(NAME, T, OP, COMB, VALF)                                                           \
    static void red_##NAME##_##OP(shmem_team_t team, size_t ne, int inplace)                       \
    {                                                                                              \
        int n = shmem_team_n_pes(team), me = shmem_my_pe(), r = ++round_no;                        \
        T *s = (T *)src, *d = (T *)dst, *in = inplace ? d : s;                                     \
        for (size_t i = 0; i < ne; i++)                                                            \
            in[i] = (T)VALF(me, i, r);                                                             \
        d[ne] = (T)77;                                                                             \
        CHECK(shmem_##NAME##_##OP##_reduce(team, d, in, ne) == 0, #NAME "_" #OP "_reduce");        \
        for (size_t i = 0; i < ne; i++) {                                                          \
            T want = (T)VALF(wpe(team, 0), i, r);                                                  \
            for (int j = 1; j < n; j++)                                                            \
                want = COMB(T, want, (T)VALF(wpe(team, j), i, r));                                 \
            CHECK(d[i] == want, #NAME "_" #OP "_reduce%s of %zu: [%zu] wrong",                     \
                  inplace ? " in place" : "", ne, i);                                              \
        }                                                                                          \
        CHECK(d[ne] == (T)77, #NAME "_" #OP "_reduce wrote past the end");                         \
    }
DEF_RED(int, int, sum, C_SUM, v_int)
DEF_RED(int, int, min, C_MIN, v_int)
DEF_RED(int, int, max, C_MAX, v_int)
DEF_RED(int32, int32_t, xor, C_XOR, v_int)
DEF_RED(int, int, prod, C_PROD, v_small)
DEF_RED(long, long, sum, C_SUM, v_long)
DEF_RED(long, long, min, C_MIN, v_long)
DEF_RED(long, long, max, C_MAX, v_long)
DEF_RED(int64, int64_t, xor, C_XOR, v_long)
DEF_RED(long, long, prod, C_PROD, v_small)
DEF_RED(double, double, sum, C_FSUM, v_double)
DEF_RED(double, double, min, C_MIN, v_double)
DEF_RED(double, double, max, C_MAX, v_double)
DEF_RED(double, double, prod, C_PROD, v_double)

static void (*const reductions[])(shmem_team_t, size_t, int) = {
    red_int_sum,    red_int_min,    red_int_max,    red_int32_xor,   red_int_prod,
    red_long_sum,   red_long_min,   red_long_max,   red_int64_xor,   red_long_prod,
    red_double_sum, red_double_min, red_double_max, red_double_prod,
};
#define NRED (sizeof reductions / sizeof *reductions)

/* Member m gets the sum over members 0..m (inscan) or 0..m-1 (exscan). */
static void do_scan(shmem_team_t team, size_t ne, int ex, int inplace)
{
    int me = shmem_my_pe(), tme = shmem_team_my_pe(team), r = ++round_no;
    long *s = (long *)src, *d = (long *)dst, *in = inplace ? d : s;
    for (size_t i = 0; i < ne; i++)
        in[i] = v_long(me, i, r);
    int rc = ex ? shmem_long_sum_exscan(team, d, in, ne) : shmem_long_sum_inscan(team, d, in, ne);
    CHECK(rc == 0, "long_sum_%sscan", ex ? "ex" : "in");
    for (size_t i = 0; i < ne; i++) {
        long want = 0;
        for (int j = 0; j < tme + !ex; j++)
            want = C_SUM(long, want, v_long(wpe(team, j), i, r));
        CHECK(d[i] == want, "long_sum_%sscan%s [%zu] wrong", ex ? "ex" : "in",
              inplace ? " in place" : "", i);
    }
}

static void battery(shmem_team_t team)
{
    if (team == SHMEM_TEAM_INVALID)
        return;
    static const size_t sizes[] = {0, 1, 7, 4097, 70001};
    int n = shmem_team_n_pes(team);
    for (int root = 0; root < n; root++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            do_bcast(team, sizes[s], root);
    /* the root's own dest (team form), in place on the root */
    for (int root = 0; root < n; root++) {
        int r = ++round_no;
        test_fill(dst, 333, shmem_my_pe(), r);
        CHECK(shmem_broadcastmem(team, dst, dst, 333, root) == 0, "in-place broadcast");
        check_bytes(dst, 333, wpe(team, root), r, "in-place broadcast");
    }
    CHECK(shmem_broadcastmem(team, dst, src, 1, n) != 0, "root out of range accepted");
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        do_fcollect(team, sizes[s]);
        do_alltoall(team, sizes[s]);
        do_collect(team, sizes[s]);
    }
    do_alltoalls(team);
    static const size_t nes[] = {0, 1, 5, 1001, (MAXB / 8) + 3}; /* last: > one staging piece */
    for (size_t k = 0; k < NRED; k++)
        for (size_t s = 0; s < sizeof nes / sizeof *nes; s++)
            for (int inplace = 0; inplace < 2; inplace++)
                reductions[k](team, nes[s], inplace);
    for (size_t s = 0; s < sizeof nes / sizeof *nes; s++)
        for (int ex = 0; ex < 2; ex++)
            for (int inplace = 0; inplace < 2; inplace++)
                do_scan(team, nes[s], ex, inplace);
}

/* Collectives back to back, no barrier in between: each must leave every
 * dest complete and every source free on return. Sizes are the same on
 * every member (from the seed). */
static void back_to_back(shmem_team_t team)
{
    if (team == SHMEM_TEAM_INVALID)
        return;
    int n = shmem_team_n_pes(team);
    for (int it = 0; it < 50; it++) {
        uint64_t x = test_mix(test_seed() ^ 0xb2bULL << 20 ^ (uint64_t)it);
        size_t sz = (size_t)(x >> 8) % (MAXB + 1);
        if (x % 7 == 0)
            sz %= 64; /* some small ones among the large */
        switch ((x >> 3) % 6) {
        case 0: do_bcast(team, sz, (int)((x >> 40) % (uint64_t)n)); break;
        case 1: do_fcollect(team, sz); break;
        case 2: do_alltoall(team, sz); break;
        case 3: do_collect(team, sz); break;
        case 4: reductions[(x >> 40) % NRED](team, sz / 8, (int)(x >> 50) & 1); break;
        default: do_scan(team, sz / 8, (int)(x >> 48) & 1, (int)(x >> 50) & 1); break;
        }
    }
}

int main(void)
{
    setenv("USHMEM_COLL_STAGED", "1", 1);
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(n <= MAXPE, "test written for at most %d PEs", MAXPE);
    size_t bytes = (size_t)(n < 2 ? 2 : n) * MAXB + 4096;
    src = shmem_malloc(bytes);
    dst = shmem_malloc(bytes);
    CHECK(src && dst, "shmem_malloc");

    battery(SHMEM_TEAM_WORLD);

    shmem_team_t even, odd, xt, yt;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &even) == 0,
          "split even");
    odd = SHMEM_TEAM_INVALID;
    CHECK(n < 2 || shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odd) == 0,
          "split odd");
    /* xrange 1: every PE alone in its x team */
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 1, NULL, 0, &xt, NULL, 0, &yt) == 0, "2d");
    CHECK(shmem_team_n_pes(xt) == 1, "a team of one");
    /* Rounds must agree within a team: each team starts from a common one. */
    int base = round_no;
    battery(even);
    round_no = base + 100000;
    battery(odd);
    round_no = base + 200000;
    battery(xt);

    round_no = base + 300000;
    back_to_back(SHMEM_TEAM_WORLD);
    round_no = base + 400000;
    back_to_back(even);
    round_no = base + 500000;
    back_to_back(odd);

    shmem_team_destroy(even);
    shmem_team_destroy(odd);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
    shmem_free(src);
    shmem_free(dst);
    if (me == 0)
        printf("test_coll_staged: OK (%d PEs)\n", n);
    shmem_finalize();
    return 0;
}
