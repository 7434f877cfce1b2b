/* Contexts created on teams: PE numbers given to RMA, AMO and signal calls
 * on such a context are relative to the team; team contexts are destroyed
 * with their team.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include "test_util.h"

static long box[16];
static int ibox;
static uint64_t sig;

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();

    /* reversed world: team PE i is world PE n-1-i */
    shmem_team_t rev;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev) == 0, "rev");
    shmem_ctx_t ctx;
    CHECK(shmem_team_create_ctx(rev, 0, &ctx) == 0, "team_create_ctx");
    shmem_team_t t;
    CHECK(shmem_ctx_get_team(ctx, &t) == 0 && t == rev, "ctx_get_team");

    /* team PE 0 is world PE n-1 */
    long v = 1000 + me;
    shmem_ctx_long_put(ctx, &box[me], &v, 1, 0);
    shmem_ctx_long_atomic_add(ctx, &box[15], 1, 0);
    shmem_ctx_putmem_signal(ctx, &box[8], &v, sizeof v, &sig, 1, SHMEM_SIGNAL_ADD, 0);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    if (me == n - 1) {
        for (int j = 0; j < n; j++)
            CHECK(box[j] == 1000 + j, "team-relative put from %d: %ld", j, box[j]);
        CHECK(box[15] == n, "team-relative atomic_add: %ld", box[15]);
        CHECK(sig == (uint64_t)n, "team-relative signal: %llu", (unsigned long long)sig);
    }
    long g = shmem_ctx_long_g(ctx, &box[0], 0);
    CHECK(g == 1000, "team-relative g: %ld", g);
    shmem_barrier_all();

    /* odd team: its PE 0 is world PE 1 */
    if (n > 1) {
        shmem_team_t odd;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odd) == 0, "odd");
        if (odd != SHMEM_TEAM_INVALID) {
            shmem_ctx_t octx;
            CHECK(shmem_team_create_ctx(odd, SHMEM_CTX_PRIVATE, &octx) == 0, "odd ctx");
            shmem_ctx_int_atomic_inc(octx, &ibox, 0);
            shmem_ctx_quiet(octx);
            /* left open: destroying the team destroys it */
        }
        shmem_barrier_all();
        if (me == 1)
            CHECK(ibox == n / 2, "odd ctx inc: %d", ibox);
        shmem_team_destroy(odd);
    }
    shmem_ctx_destroy(ctx);
    shmem_team_destroy(rev);
    shmem_barrier_all();
    if (me == 0)
        printf("test_ctx_team: OK (%d PEs)\n", n);
    shmem_finalize();
    return 0;
}
