/* Thousands of back-to-back collectives with no barrier in between, random
 * sizes (mostly small, some past the one-synchronization push path's limits),
 * random roots and random data, interleaved over several teams: the world,
 * the even PEs, the rows and columns of a 2-D split, and teams created and
 * destroyed in a loop (a slot reused by a new team). Every PE checks every
 * result, recomputing what each member sent. Also a broadcast storm from one
 * root while the readers sometimes sleep: the root must not overwrite cells
 * a reader has not read yet (the push path's reuse check).
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include <unistd.h>

#include "test_util.h"

#define MAXSZ 20000 /* largest block in bytes */
#define MAXPE 8

static unsigned char *src, *dst;
static uint64_t step; /* same sequence on every PE, members or not */

static uint64_t rnd(void)
{
    return test_mix(test_seed() ^ 0xc0117e57ULL ^ ++step);
}

static int wpe(shmem_team_t team, int i)
{
    return shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD);
}

/* Mostly a few bytes, sometimes up to a few KiB, rarely MAXSZ. */
static size_t pick_size(uint64_t r)
{
    r = test_mix(r);
    switch (r % 8) {
    case 0: return (size_t)(r >> 8) % MAXSZ + 1;
    case 1:
    case 2: return (size_t)(r >> 8) % 9000 + 1;
    default: return (size_t)(r >> 8) % 300 + 1;
    }
}

static void check_block(const unsigned char *got, size_t n, int id, int round, const char *what,
                        int it)
{
    size_t bad = 0;
    CHECK(test_verify(got, n, id, round, &bad), "%s: iteration %d, %zu bytes: byte %zu wrong", what,
          it, n, bad);
}

static void guard(size_t at)
{
    dst[at] = 0xa5;
}

static void check_guard(size_t at, const char *what, int it)
{
    CHECK(dst[at] == 0xa5, "%s: iteration %d wrote past the end", what, it);
}

static int64_t ival(int pe, size_t i, int round)
{
    return (int64_t)test_mix(test_seed() ^ ((uint64_t)pe << 40) ^ ((uint64_t)i << 20) ^
                             (uint64_t)round);
}

static double dval(int pe, size_t i, int round)
{
    return (double)(ival(pe, i, round) >> 11) / 9007199254740992.0 * 3.0 - 1.5;
}

/* One random collective on team (this PE is a member), drawn from r. */
static void one(shmem_team_t team, int it, uint64_t r)
{
    int n = shmem_team_n_pes(team), me = shmem_team_my_pe(team), mw = shmem_my_pe();
    int op = (int)(r % 7), root = (int)((r >> 8) % (uint64_t)n), round = (int)(r >> 32);
    size_t sz = pick_size(r);
    switch (op) {
    case 0: { /* broadcast, sometimes in place on the root */
        int inplace = (r >> 16) & 1;
        test_fill(inplace ? dst : src, sz, mw, round);
        guard(sz);
        CHECK(shmem_broadcastmem(team, dst, inplace ? dst : src, sz, root) == 0, "broadcastmem");
        check_block(dst, sz, wpe(team, root), round, "broadcastmem", it);
        check_guard(sz, "broadcastmem", it);
        break;
    }
    case 1: { /* fcollect */
        sz = sz / (size_t)n + 1;
        test_fill(src, sz, mw, round);
        guard(sz * (size_t)n);
        CHECK(shmem_fcollectmem(team, dst, src, sz) == 0, "fcollectmem");
        for (int j = 0; j < n; j++)
            check_block(dst + (size_t)j * sz, sz, wpe(team, j), round, "fcollectmem", it);
        check_guard(sz * (size_t)n, "fcollectmem", it);
        break;
    }
    case 2: { /* alltoall: block j of member p is tagged (p, j) */
        sz = sz / (size_t)n + 1;
        for (int j = 0; j < n; j++)
            test_fill(src + (size_t)j * sz, sz, mw * MAXPE + j, round);
        guard(sz * (size_t)n);
        CHECK(shmem_alltoallmem(team, dst, src, sz) == 0, "alltoallmem");
        for (int j = 0; j < n; j++)
            check_block(dst + (size_t)j * sz, sz, wpe(team, j) * MAXPE + me, round, "alltoallmem",
                        it);
        check_guard(sz * (size_t)n, "alltoallmem", it);
        break;
    }
    case 3:
    case 4: { /* int64 and double sums, sometimes in place; exact, in team order */
        size_t nel = sz / 8 + 1, i;
        int inplace = (r >> 16) & 1;
        int64_t *id = (int64_t *)dst, *is = inplace ? id : (int64_t *)src;
        double *dd = (double *)dst, *ds = inplace ? dd : (double *)src;
        for (i = 0; i < nel; i++)
            if (op == 3)
                is[i] = ival(mw, i, round);
            else
                ds[i] = dval(mw, i, round);
        guard(nel * 8);
        if (op == 3)
            CHECK(shmem_int64_sum_reduce(team, id, is, nel) == 0, "int64_sum_reduce");
        else
            CHECK(shmem_double_sum_reduce(team, dd, ds, nel) == 0, "double_sum_reduce");
        for (i = 0; i < nel; i++) {
            uint64_t ie = (uint64_t)ival(wpe(team, 0), i, round);
            double de = dval(wpe(team, 0), i, round);
            for (int k = 1; k < n; k++) {
                ie += (uint64_t)ival(wpe(team, k), i, round);
                de += dval(wpe(team, k), i, round);
            }
            if (op == 3)
                CHECK(id[i] == (int64_t)ie, "int64_sum_reduce: iteration %d, element %zu of %zu",
                      it, i, nel);
            else
                CHECK(!memcmp(&dd[i], &de, sizeof de),
                      "double_sum_reduce: iteration %d, element %zu of %zu: %a, want %a", it, i,
                      nel, dd[i], de);
        }
        check_guard(nel * 8, op == 3 ? "int64_sum_reduce" : "double_sum_reduce", it);
        break;
    }
    case 5: { /* inclusive or exclusive prefix sum */
        size_t nel = sz / 8 + 1;
        int ex = (r >> 16) & 1;
        int64_t *d = (int64_t *)dst, *s = (int64_t *)src;
        for (size_t i = 0; i < nel; i++)
            s[i] = ival(mw, i, round);
        guard(nel * 8);
        CHECK((ex ? shmem_int64_sum_exscan(team, d, s, nel)
                  : shmem_int64_sum_inscan(team, d, s, nel)) == 0,
              "scan");
        for (size_t i = 0; i < nel; i++) {
            uint64_t e = 0;
            for (int k = 0; k < me + !ex; k++)
                e += (uint64_t)ival(wpe(team, k), i, round);
            CHECK(d[i] == (int64_t)e, "int64 %sscan: iteration %d, element %zu of %zu",
                  ex ? "ex" : "in", it, i, nel);
        }
        check_guard(nel * 8, "scan", it);
        break;
    }
    default: /* a team sync now and then: the push path's reuse shortcut */
        CHECK(shmem_team_sync(team) == 0, "team_sync");
        break;
    }
}

/* Root 0 broadcasts small blocks back to back; every reader sleeps now and
 * then, so the root runs ahead and must wait before reusing a cell. */
static void storm(shmem_team_t team, int iters)
{
    int me = shmem_team_my_pe(team);
    for (int it = 0; it < iters; it++) {
        size_t sz = (size_t)(it % 40) + 1;
        int round = 1000000 + it;
        if (me == 0)
            test_fill(src, sz, shmem_my_pe(), round);
        else if (it % 97 == (me * 13) % 97)
            usleep(2000);
        CHECK(shmem_broadcastmem(team, dst, src, sz, 0) == 0, "broadcastmem");
        check_block(dst, sz, wpe(team, 0), round, "storm broadcast", it);
    }
}

int main(void)
{
    shmem_init();
    int np = shmem_n_pes(), me = shmem_my_pe();
    int iters = getenv("TEST_ITERS") ? atoi(getenv("TEST_ITERS")) : 3000;
    src = shmem_malloc((size_t)MAXSZ * 2 + 64);
    dst = shmem_malloc((size_t)MAXSZ * 2 + 64);
    CHECK(src && dst, "shmem_malloc");

    shmem_team_t even, xt, yt;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (np + 1) / 2, NULL, 0, &even) == 0,
          "split even");
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &xt, NULL, 0, &yt) == 0, "split_2d");

    storm(SHMEM_TEAM_WORLD, iters);
    /* Interleaved: every PE draws the same team sequence; non-members skip. */
    for (int it = 0; it < iters; it++) {
        uint64_t r = rnd(), what = rnd();
        shmem_team_t t = r % 4 == 0 ? SHMEM_TEAM_WORLD : r % 4 == 1 ? even : r % 4 == 2 ? xt : yt;
        if (t != SHMEM_TEAM_INVALID)
            one(t, it, what);
    }
    shmem_barrier_all();
    shmem_team_destroy(even);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);

    /* Teams created and destroyed in a loop: each new team reuses the slot
     * and must start from clean cells. */
    for (int k = 0; k < 40; k++) {
        shmem_team_t t;
        int start = k % 2 && np > 1 ? 1 : 0;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, start, 1, np - start, NULL, 0, &t) == 0,
              "split");
        for (int it = 0; it < 25; it++) {
            uint64_t what = rnd();
            if (t != SHMEM_TEAM_INVALID)
                one(t, it, what);
        }
        if (t != SHMEM_TEAM_INVALID)
            shmem_team_destroy(t);
    }
    shmem_barrier_all();
    if (me == 0)
        printf("test_coll_push: %d PEs ok\n", np);
    shmem_finalize();
    return 0;
}
