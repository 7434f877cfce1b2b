/* Teams: predefined teams, strided splits (even/odd, reversed, nested), 2-D
 * splits, translate_pe, team_ptr, config, team_sync on sub-teams, invalid
 * arguments, and slot recycling over many create/destroy cycles.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include "test_util.h"

/* .bss, symmetric. Teams whose checks may overlap in time (a PE done with
 * one team's check starts the next while others still check the first) use
 * different areas. */
static long marks[2][64];

/* In each round every member writes the round number into its cell on every
 * other member, syncs, and checks all cells: a sync that returned early
 * shows up as a stale cell. */
static void check_sync(shmem_team_t team, int rounds, int area)
{
    int me = shmem_team_my_pe(team), n = shmem_team_n_pes(team);
    for (int r = 1; r <= rounds; r++) {
        for (int j = 0; j < n; j++) {
            int pe = shmem_team_translate_pe(team, j, SHMEM_TEAM_WORLD);
            shmem_long_p(&marks[area][me], r, pe);
        }
        shmem_quiet();
        CHECK(shmem_team_sync(team) == 0, "team_sync");
        for (int j = 0; j < n; j++)
            CHECK(marks[area][j] == r, "round %d: cell %d is %ld", r, j, marks[area][j]);
        CHECK(shmem_team_sync(team) == 0, "team_sync");
    }
}

static void check_members(shmem_team_t team, int start, int stride, int size, int area)
{
    int me = shmem_my_pe();
    int d = me - start;
    int member = stride ? d % stride == 0 && d / stride >= 0 && d / stride < size : d == 0;
    if (!member) {
        CHECK(team == SHMEM_TEAM_INVALID, "non-member got a team (start %d stride %d size %d)",
              start, stride, size);
        CHECK(shmem_team_my_pe(team) == -1 && shmem_team_n_pes(team) == -1, "INVALID queries");
        return;
    }
    CHECK(team != SHMEM_TEAM_INVALID, "member got SHMEM_TEAM_INVALID");
    CHECK(shmem_team_n_pes(team) == size, "n_pes %d, want %d", shmem_team_n_pes(team), size);
    CHECK(shmem_team_my_pe(team) == (stride ? d / stride : 0), "my_pe %d", shmem_team_my_pe(team));
    for (int i = 0; i < size; i++) {
        int w = shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD);
        CHECK(w == start + i * stride, "translate %d -> %d", i, w);
        CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, w, team) == i, "translate back");
        CHECK(shmem_team_ptr(team, marks, i) == shmem_ptr(marks, w), "team_ptr");
    }
    CHECK(shmem_team_translate_pe(team, size, SHMEM_TEAM_WORLD) == -1, "translate out of range");
    CHECK(shmem_team_ptr(team, marks, size) == NULL, "team_ptr out of range");
    check_sync(team, 5, area);
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();

    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me, "world my_pe");
    CHECK(shmem_team_n_pes(SHMEM_TEAM_WORLD) == n, "world n_pes");
    CHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) == n || !test_all_mapped(),
          "one host: shared == world");
    int sme = shmem_team_my_pe(SHMEM_TEAM_SHARED);
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_SHARED, sme, SHMEM_TEAM_WORLD) == me, "shared pe");
    check_sync(SHMEM_TEAM_WORLD, 10, 0);
    check_sync(SHMEM_TEAM_SHARED, 3, 0);

    /* even and odd PEs */
    shmem_team_t even, odd;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &even) == 0,
          "split even");
    check_members(even, 0, 2, (n + 1) / 2, 0);
    if (n > 1) {
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odd) == 0,
              "split odd");
        check_members(odd, 1, 2, n / 2, 0);
    } else {
        odd = SHMEM_TEAM_INVALID;
    }
    /* the world is still fine in between */
    shmem_barrier_all();
    check_sync(SHMEM_TEAM_WORLD, 2, 0);

    /* reversed world: negative stride */
    shmem_team_t rev;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev) == 0, "rev");
    CHECK(shmem_team_my_pe(rev) == n - 1 - me, "reversed my_pe %d", shmem_team_my_pe(rev));
    check_members(rev, n - 1, -1, n, 0);

    /* nested: the last member of the even team, split from the even team */
    if (even != SHMEM_TEAM_INVALID) {
        int en = shmem_team_n_pes(even);
        shmem_team_t last;
        shmem_team_config_t cfg = {.num_contexts = 3}, got = {0};
        CHECK(shmem_team_split_strided(even, en - 1, 0, 1, &cfg, SHMEM_TEAM_NUM_CONTEXTS, &last) ==
                  0,
              "nested split");
        check_members(last, 2 * (en - 1), 1, 1, 0);
        if (last != SHMEM_TEAM_INVALID) {
            CHECK(shmem_team_get_config(last, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 &&
                      got.num_contexts == 3,
                  "config num_contexts %d", got.num_contexts);
            shmem_team_destroy(last);
        }
    }

    /* 2-D splits with every xrange */
    for (int xr = 1; xr <= n + 1; xr++) {
        shmem_team_t xt, yt;
        CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, xr, NULL, 0, &xt, NULL, 0, &yt) == 0,
              "split_2d xrange %d", xr);
        int x = xr > n ? n : xr;
        CHECK(shmem_team_my_pe(xt) == me % x, "x my_pe");
        CHECK(shmem_team_my_pe(yt) == me / x, "y my_pe");
        int row0 = me / x * x;
        check_members(xt, row0, 1, n - row0 < x ? n - row0 : x, 0);
        check_members(yt, me % x, x, (n - 1 - me % x) / x + 1, 1);
        shmem_team_destroy(xt);
        shmem_team_destroy(yt);
    }

    /* invalid arguments: non-zero on every PE, SHMEM_TEAM_INVALID out */
    shmem_team_t bad = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n + 1, NULL, 0, &bad) != 0 &&
              bad == SHMEM_TEAM_INVALID,
          "size past the end accepted");
    bad = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, n, 1, 1, NULL, 0, &bad) != 0 &&
              bad == SHMEM_TEAM_INVALID,
          "start past the end accepted");
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 0, NULL, 0, &bad) != 0, "size 0");
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, -1, 1, 1, NULL, 0, &bad) != 0, "start -1");
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 0, 2, NULL, 0, &bad) != 0,
          "stride 0 with size 2");
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, -1, 2, NULL, 0, &bad) != 0,
          "wrap-around below 0");
    CHECK(shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, NULL, 0, &bad) != 0 &&
              bad == SHMEM_TEAM_INVALID,
          "INVALID parent");
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 1, NULL, 1L << 20, &bad) != 0,
          "unknown config bit");
    shmem_team_t xt, yt;
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 0, NULL, 0, &xt, NULL, 0, &yt) != 0 &&
              xt == SHMEM_TEAM_INVALID && yt == SHMEM_TEAM_INVALID,
          "xrange 0");
    CHECK(shmem_team_sync(SHMEM_TEAM_INVALID) != 0, "sync on INVALID");
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD) == -1, "translate");
    shmem_team_destroy(SHMEM_TEAM_WORLD);   /* error line, no effect */
    shmem_team_destroy(SHMEM_TEAM_INVALID); /* no-op */
    shmem_barrier_all();
    check_sync(SHMEM_TEAM_WORLD, 2, 0);

    /* many live teams at once, then slot reuse over many cycles */
    enum { LIVE = 100 };
    static shmem_team_t live[LIVE];
    for (int i = 0; i < LIVE; i++)
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, i % n, 1, n - i % n, NULL, 0, &live[i]) ==
                  0,
              "live team %d", i);
    for (int i = 0; i < LIVE; i += 7) {
        if (live[i] != SHMEM_TEAM_INVALID)
            check_sync(live[i], 1, 0);
        shmem_barrier_all();
    }
    for (int i = 0; i < LIVE; i++)
        shmem_team_destroy(live[i]);
    for (int i = 0; i < 300; i++) {
        shmem_team_t t;
        int start = i % n;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, start, 1, n - start, NULL, 0, &t) == 0,
              "cycle %d", i);
        if (t != SHMEM_TEAM_INVALID) {
            CHECK(shmem_team_sync(t) == 0, "cycle sync");
            CHECK(shmem_team_sync(t) == 0, "cycle sync");
        }
        shmem_team_destroy(t);
    }

    shmem_team_destroy(even);
    shmem_team_destroy(odd);
    shmem_team_destroy(rev);
    shmem_barrier_all();
    if (me == 0)
        printf("test_team: OK (%d PEs)\n", n);
    shmem_finalize();
    return 0;
}
