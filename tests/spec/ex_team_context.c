/* Spec example: shmem_ctx_get_team / shmem_team_create_ctx. Teams of every second PE
 * (2s) and every third PE (3s), one context each; every member puts its team number to
 * its right neighbour in the team, then PEs in both teams add what they received into
 * isum on "PE 4 of the 3s team", reached through the 2s context. The spec's listing has
 * typos (shmem_team_spit_strided, dest_pe, ival2/ival3 undeclared, SHMEM_TEAM_NULL);
 * this is the evident intent. PE 4 of the 3s team needs 13 PEs: with fewer, the last
 * even-numbered member of the 3s team is the target (noted in README). The teams take
 * every even and every third PE ((npes+1)/2 and (npes+2)/3 members; the spec's npes/2
 * and npes/3 give an empty 3s team at 2 PEs). Checked: isum on the target
 * is the sum over PEs in both teams of what they received. */
#include "spec_check.h"

int isum, ival2, ival3;

static int my_ctx_translate_pe(shmem_ctx_t src_ctx, int src_pe, shmem_ctx_t dest_ctx)
{
    if (src_ctx == SHMEM_CTX_INVALID || dest_ctx == SHMEM_CTX_INVALID)
        return -1;
    shmem_team_t src_team, dest_team;
    shmem_ctx_get_team(src_ctx, &src_team);
    shmem_ctx_get_team(dest_ctx, &dest_team);
    return shmem_team_translate_pe(src_team, src_pe, dest_team);
}

static shmem_ctx_t my_team_create_ctx(shmem_team_t team)
{
    if (team == SHMEM_TEAM_INVALID)
        return SHMEM_CTX_INVALID;
    shmem_ctx_t ctx;
    int rc = shmem_team_create_ctx(team, 0, &ctx);
    SPEC_CHECK(rc == 0, "shmem_team_create_ctx returned %d", rc);
    return ctx;
}

static void my_send_to_neighbor(shmem_ctx_t ctx, int *val)
{
    if (ctx == SHMEM_CTX_INVALID)
        return;
    shmem_team_t team;
    shmem_ctx_get_team(ctx, &team);
    int pe = shmem_team_my_pe(team);
    int npes = shmem_team_n_pes(team);
    int rpe = (pe + 1) % npes;
    shmem_ctx_int_put(ctx, val, &pe, 1, rpe); /* my team number to my right neighbour */
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    isum = 0;
    ival2 = ival3 = -1;
    shmem_team_t team_2s, team_3s;
    shmem_ctx_t ctx_2s, ctx_3s;
    shmem_team_config_t conf;
    conf.num_contexts = 1;
    long cmask = SHMEM_TEAM_NUM_CONTEXTS;
    int n2 = (npes + 1) / 2, n3 = (npes + 2) / 3; /* every even PE, every third PE */
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, n2, &conf, cmask, &team_2s);
    shmem_team_sync(SHMEM_TEAM_WORLD); /* overlapping splits of one parent */
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 3, n3, &conf, cmask, &team_3s);
    ctx_2s = my_team_create_ctx(team_2s);
    ctx_3s = my_team_create_ctx(team_3s);
    SPEC_CHECK((ctx_2s != SHMEM_CTX_INVALID) == (me % 2 == 0), "2s membership");
    SPEC_CHECK((ctx_3s != SHMEM_CTX_INVALID) == (me % 3 == 0), "3s membership");
    my_send_to_neighbor(ctx_2s, &ival2);
    my_send_to_neighbor(ctx_3s, &ival3);
    if (ctx_2s != SHMEM_CTX_INVALID)
        shmem_ctx_quiet(ctx_2s);
    if (ctx_3s != SHMEM_CTX_INVALID)
        shmem_ctx_quiet(ctx_3s);
    shmem_team_sync(SHMEM_TEAM_WORLD);
    if (me % 2 == 0)
        SPEC_CHECK(ival2 == (me / 2 + n2 - 1) % n2, "ival2 = %d", ival2);
    if (me % 3 == 0)
        SPEC_CHECK(ival3 == (me / 3 + n3 - 1) % n3, "ival3 = %d", ival3);

    /* the spec's PE 4 of the 3s team (world PE 12, also in the 2s team); with fewer PEs
     * the last even-numbered member, whose world number is a multiple of 6 as well */
    int target3 = n3 > 4 ? 4 : ((n3 - 1) & ~1);
    int target_world = 3 * target3;
    if (team_3s != SHMEM_TEAM_INVALID && team_2s != SHMEM_TEAM_INVALID) {
        int target2 = my_ctx_translate_pe(ctx_3s, target3, ctx_2s);
        SPEC_CHECK(target2 == target_world / 2, "PE %d of 3s is PE %d of 2s, want %d", target3,
                   target2, target_world / 2);
        shmem_ctx_int_atomic_add(ctx_2s, &isum, ival2 + ival3, target2);
    }
    if (ctx_2s != SHMEM_CTX_INVALID)
        shmem_ctx_quiet(ctx_2s);
    shmem_team_sync(SHMEM_TEAM_WORLD);
    if (shmem_team_my_pe(team_3s) == target3) {
        int want = 0;
        for (int p = 0; p < npes; p += 6)
            want += (p / 2 + n2 - 1) % n2 + (p / 3 + n3 - 1) % n3;
        SPEC_CHECK(isum == want, "isum on PE %d of the 3s team = %d, want %d", target3, isum, want);
    }
    /* contexts before teams */
    if (ctx_2s != SHMEM_CTX_INVALID)
        shmem_ctx_destroy(ctx_2s);
    if (team_2s != SHMEM_TEAM_INVALID)
        shmem_team_destroy(team_2s);
    if (ctx_3s != SHMEM_CTX_INVALID)
        shmem_ctx_destroy(ctx_3s);
    if (team_3s != SHMEM_TEAM_INVALID)
        shmem_team_destroy(team_3s);
    shmem_finalize();
    return 0;
}
