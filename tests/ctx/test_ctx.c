/* Contexts on the world: create/destroy, options, get_team, ctx put/get/AMO,
 * fence/quiet, pe_quiet, sessions, and the invalid handles.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include "test_util.h"

static long box[64];

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int to = (me + 1) % n, from = (me + n - 1) % n;

    shmem_ctx_t ctx[4];
    long opts[4] = {0, SHMEM_CTX_SERIALIZED, SHMEM_CTX_PRIVATE,
                    SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE};
    for (int i = 0; i < 4; i++) {
        CHECK(shmem_ctx_create(opts[i], &ctx[i]) == 0, "ctx_create options 0x%lx", opts[i]);
        shmem_team_t t = SHMEM_TEAM_INVALID;
        CHECK(shmem_ctx_get_team(ctx[i], &t) == 0 && t == SHMEM_TEAM_WORLD, "get_team");
    }
    shmem_team_t t = SHMEM_TEAM_INVALID;
    CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t) == 0 && t == SHMEM_TEAM_WORLD,
          "default ctx team");
    CHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &t) != 0 && t == SHMEM_TEAM_INVALID,
          "invalid ctx team");
    shmem_ctx_t bad = SHMEM_CTX_DEFAULT;
    CHECK(shmem_ctx_create(1L << 30, &bad) != 0 && bad == SHMEM_CTX_INVALID, "unknown option");
    CHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &bad) != 0 && bad == SHMEM_CTX_INVALID,
          "ctx on INVALID team");

    /* RMA and AMOs through each context */
    for (int i = 0; i < 4; i++) {
        long v[8];
        for (int k = 0; k < 8; k++)
            v[k] = me * 100 + i * 10 + k;
        shmem_ctx_long_put(ctx[i], &box[8 * i], v, 8, to);
        shmem_ctx_fence(ctx[i]);
        shmem_ctx_long_atomic_add(ctx[i], &box[40 + i], me + 1, to);
        shmem_ctx_quiet(ctx[i]);
    }
    shmem_barrier_all();
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 8; k++)
            CHECK(box[8 * i + k] == from * 100 + i * 10 + k, "ctx %d put elem %d", i, k);
        CHECK(box[40 + i] == from + 1, "ctx %d atomic_add", i);
        long g[8];
        shmem_ctx_long_get(ctx[i], g, &box[8 * i], 8, to);
        for (int k = 0; k < 8; k++)
            CHECK(g[k] == me * 100 + i * 10 + k, "ctx %d get", i);
    }

    int pes[2] = {to, from};
    shmem_pe_quiet(pes, 2);
    shmem_ctx_pe_quiet(ctx[0], pes, 2);
    shmem_pe_quiet(NULL, 0);
    shmem_session_config_t cfg = {.total_ops = 16};
    shmem_session_start(ctx[1], SHMEM_SESSION_SAME_AMO, &cfg, SHMEM_SESSION_TOTAL_OPS);
    shmem_ctx_long_p(ctx[1], &box[60], me, to);
    shmem_session_stop(ctx[1]);
    shmem_session_start(SHMEM_CTX_DEFAULT, 0, NULL, 0);
    shmem_session_stop(SHMEM_CTX_DEFAULT);
    /* the 1.6 names (the ones above are the drafts' aliases) */
    shmem_ctx_session_config_t cfg16 = {.total_ops = 4};
    shmem_ctx_session_start(ctx[1], SHMEM_CTX_SESSION_BATCH, &cfg16, SHMEM_CTX_SESSION_TOTAL_OPS);
    long mine = me;
    shmem_ctx_putmem(ctx[1], &box[61], &mine, sizeof mine, to);
    shmem_ctx_session_stop(ctx[1]);
    shmem_barrier_all();
    CHECK(box[60] == from, "put in a session");
    CHECK(box[61] == from, "put in a 1.6-named session");

    shmem_ctx_fence(SHMEM_CTX_INVALID); /* no-ops */
    shmem_ctx_quiet(SHMEM_CTX_INVALID);
    shmem_ctx_destroy(SHMEM_CTX_INVALID);
    for (int i = 0; i < 4; i++)
        shmem_ctx_destroy(ctx[i]);

    /* many create/destroy cycles */
    for (int i = 0; i < 1000; i++) {
        shmem_ctx_t c;
        CHECK(shmem_ctx_create(0, &c) == 0, "cycle %d", i);
        shmem_ctx_destroy(c);
    }
    shmem_barrier_all();
    if (me == 0)
        printf("test_ctx: OK (%d PEs)\n", n);
    shmem_finalize();
    return 0;
}
