/* Team collectives with random data, verified on every PE: broadcast (every
 * root), collect (variable sizes, some empty), fcollect, alltoall, alltoalls,
 * untyped and typed forms, sizes from 0 to past 1 MiB, on the world and on
 * sub-teams of several strides. Collectives run back to back with no barrier
 * in between, which checks that each one leaves dest/source free on return.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include "test_util.h"

#define MAXB  ((1 << 20) + 5) /* largest block */
#define MAXPE 8

static unsigned char *src, *dst;
static int round_no;

static int wpe(shmem_team_t team, int i)
{
    return shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD);
}

static void check_bytes(const unsigned char *got, size_t n, int id, int round, const char *what,
                        int from)
{
    size_t bad = 0;
    CHECK(test_verify(got, n, id, round, &bad), "%s: %zu bytes from %d: byte %zu wrong", what, n,
          from, bad);
}

static void test_broadcast(shmem_team_t team)
{
    static const size_t sizes[] = {0, 1, 7, 4097, MAXB};
    int n = shmem_team_n_pes(team), me = shmem_my_pe();
    for (int root = 0; root < n; root++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            size_t sz = sizes[s];
            int r = ++round_no;
            test_fill(src, sz, me, r);
            memset(dst, 0xee, sz + 1);
            CHECK(shmem_broadcastmem(team, dst, src, sz, root) == 0, "broadcastmem");
            check_bytes(dst, sz, wpe(team, root), r, "broadcastmem", wpe(team, root));
            CHECK(dst[sz] == 0xee, "broadcast wrote past the end");
        }
    /* typed, root's dest updated too */
    int *isrc = (int *)src, *idst = (int *)dst;
    for (int root = 0; root < n; root++) {
        for (int i = 0; i < 1000; i++)
            isrc[i] = me * 100000 + i;
        CHECK(shmem_int_broadcast(team, idst, isrc, 1000, root) == 0, "int_broadcast");
        for (int i = 0; i < 1000; i++)
            CHECK(idst[i] == wpe(team, root) * 100000 + i, "int_broadcast [%d] = %d", i, idst[i]);
    }
    /* in place on the root */
    for (int root = 0; root < n; root++) {
        int r = ++round_no;
        test_fill(dst, 333, me, r);
        CHECK(shmem_broadcastmem(team, dst, dst, 333, root) == 0, "in-place broadcast");
        check_bytes(dst, 333, wpe(team, root), r, "in-place broadcast", wpe(team, root));
    }
}

static void test_fcollect(shmem_team_t team)
{
    static const size_t sizes[] = {0, 1, 13, 65541};
    int n = shmem_team_n_pes(team), me = shmem_my_pe();
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t sz = sizes[s];
        int r = ++round_no;
        test_fill(src, sz, me, r);
        memset(dst, 0xee, n * sz + 1);
        CHECK(shmem_fcollectmem(team, dst, src, sz) == 0, "fcollectmem");
        for (int j = 0; j < n; j++)
            check_bytes(dst + j * sz, sz, wpe(team, j), r, "fcollectmem", wpe(team, j));
        CHECK(dst[n * sz] == 0xee, "fcollect wrote past the end");
    }
    long *lsrc = (long *)src, *ldst = (long *)dst;
    for (int i = 0; i < 100; i++)
        lsrc[i] = me * 1000L + i;
    CHECK(shmem_long_fcollect(team, ldst, lsrc, 100) == 0, "long_fcollect");
    for (int j = 0; j < n; j++)
        for (int i = 0; i < 100; i++)
            CHECK(ldst[j * 100 + i] == wpe(team, j) * 1000L + i, "long_fcollect");
}

static size_t collect_size(int pe, int r)
{
    if ((pe + r) % 3 == 0)
        return 0;
    return (size_t)(pe * 7919 + r * 31) % 3000 + (r % 4 == 0 ? 70000 : 0);
}

static void test_collect(shmem_team_t team)
{
    int n = shmem_team_n_pes(team), me = shmem_my_pe();
    for (int k = 0; k < 8; k++) {
        int r = ++round_no;
        size_t mine = collect_size(me, r), total = 0;
        test_fill(src, mine, me, r);
        for (int j = 0; j < n; j++)
            total += collect_size(wpe(team, j), r);
        memset(dst, 0xee, total + 1);
        CHECK(shmem_collectmem(team, dst, src, mine) == 0, "collectmem");
        size_t off = 0;
        for (int j = 0; j < n; j++) {
            size_t sz = collect_size(wpe(team, j), r);
            check_bytes(dst + off, sz, wpe(team, j), r, "collectmem", wpe(team, j));
            off += sz;
        }
        CHECK(dst[total] == 0xee, "collect wrote past the end");
    }
    /* typed: PE j contributes j+1 ints */
    int *isrc = (int *)src, *idst = (int *)dst;
    for (int i = 0; i <= me; i++)
        isrc[i] = me * 10 + i;
    CHECK(shmem_int_collect(team, idst, isrc, (size_t)me + 1) == 0, "int_collect");
    int off = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i <= wpe(team, j); i++, off++)
            CHECK(idst[off] == wpe(team, j) * 10 + i, "int_collect [%d] = %d", off, idst[off]);
}

static void test_alltoall(shmem_team_t team)
{
    static const size_t sizes[] = {0, 1, 9, 40000};
    int n = shmem_team_n_pes(team), me = shmem_my_pe(), tme = shmem_team_my_pe(team);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t sz = sizes[s];
        int r = ++round_no;
        for (int j = 0; j < n; j++)
            test_fill(src + j * sz, sz, me * 1000 + j, r);
        memset(dst, 0xee, n * sz + 1);
        CHECK(shmem_alltoallmem(team, dst, src, sz) == 0, "alltoallmem");
        for (int j = 0; j < n; j++)
            check_bytes(dst + j * sz, sz, wpe(team, j) * 1000 + tme, r, "alltoallmem",
                        wpe(team, j));
        CHECK(dst[n * sz] == 0xee, "alltoall wrote past the end");
    }
    /* strided: dst 2, sst 3, five int64 per pair; untouched elements stay */
    enum { NE = 5, DS = 2, SS = 3 };
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
    /* bytes, contiguous */
    int r = ++round_no;
    for (int j = 0; j < n; j++)
        test_fill(src + j * 100, 100, me * 1000 + j, r);
    CHECK(shmem_alltoallsmem(team, dst, src, 1, 1, 100) == 0, "alltoallsmem");
    for (int j = 0; j < n; j++)
        check_bytes(dst + j * 100, 100, wpe(team, j) * 1000 + tme, r, "alltoallsmem", wpe(team, j));
    CHECK(shmem_alltoallsmem(team, dst, src, 0, 1, 1) != 0, "stride 0 accepted");
}

static void battery(shmem_team_t team)
{
    if (team == SHMEM_TEAM_INVALID)
        return;
    test_broadcast(team);
    test_fcollect(team);
    test_collect(team);
    test_alltoall(team);
    CHECK(shmem_team_sync(team) == 0, "team_sync");
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(n <= MAXPE, "test written for at most %d PEs", MAXPE);
    src = shmem_malloc((size_t)MAXPE * MAXB + 64);
    dst = shmem_malloc((size_t)MAXPE * MAXB + 64);
    CHECK(src && dst, "shmem_malloc");

    battery(SHMEM_TEAM_WORLD);

    shmem_team_t even, odd, rev, xt, yt;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &even) == 0,
          "split even");
    CHECK(n < 2 || shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odd) == 0,
          "split odd");
    if (n < 2)
        odd = SHMEM_TEAM_INVALID;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev) == 0, "rev");
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &xt, NULL, 0, &yt) == 0, "2d");
    /* Rounds must agree within a team: each team's battery starts from a
     * common round number. */
    int base = round_no;
    battery(even);
    round_no = base + 1000;
    battery(odd);
    round_no = base + 2000;
    battery(rev);
    round_no = base + 3000;
    battery(yt);
    round_no = base + 4000;
    battery(xt);
    shmem_barrier_all();
    round_no = base + 5000;
    battery(SHMEM_TEAM_SHARED);

    shmem_team_destroy(even);
    shmem_team_destroy(odd);
    shmem_team_destroy(rev);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
    shmem_free(src);
    shmem_free(dst);
    if (me == 0)
        printf("test_coll: OK (%d PEs)\n", n);
    shmem_finalize();
    return 0;
}
