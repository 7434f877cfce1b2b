/* Spec example: shmem_sync (team form). Teams of every second PE from 2 and every third
 * from 3; members put 2 (resp. 3) into x on the next member and sync their team;
 * checked: multiples of 3 (not 0) hold 3, other even PEs (not 0) hold 2, the rest
 * keep 10101. The spec calls shmem_global_exit with a code; this prints which. */
#include "spec_check.h"

int main(void)
{
    static int x = 10101;
    shmem_team_t twos_team = SHMEM_TEAM_INVALID;
    shmem_team_t threes_team = SHMEM_TEAM_INVALID;
    shmem_team_config_t *config;
    shmem_init();
    config = NULL;
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    if (npes > 2)
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 2, 2, (npes - 1) / 2, config, 0, &twos_team);
    if (npes > 3)
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 3, 3, (npes - 1) / 3, config, 0, &threes_team);
    int my_pe_twos = shmem_team_my_pe(twos_team);
    int my_pe_threes = shmem_team_my_pe(threes_team);
    int npes_twos = shmem_team_n_pes(twos_team);
    int npes_threes = shmem_team_n_pes(threes_team);
    int in_twos = me >= 2 && me % 2 == 0 && npes > 2;
    int in_threes = me >= 3 && me % 3 == 0 && npes > 3;
    SPEC_CHECK((twos_team != SHMEM_TEAM_INVALID) == in_twos, "in the twos team: %d",
               twos_team != SHMEM_TEAM_INVALID);
    SPEC_CHECK((threes_team != SHMEM_TEAM_INVALID) == in_threes, "in the threes team: %d",
               threes_team != SHMEM_TEAM_INVALID);
    if (twos_team != SHMEM_TEAM_INVALID) {
        /* put 2 to the next team member, circularly */
        shmem_p(&x, 2,
                shmem_team_translate_pe(twos_team, (my_pe_twos + 1) % npes_twos, SHMEM_TEAM_WORLD));
        shmem_quiet();
        shmem_sync(twos_team);
    }
    shmem_sync(SHMEM_TEAM_WORLD);
    if (threes_team != SHMEM_TEAM_INVALID) {
        /* put 3 to the next team member, circularly */
        shmem_p(&x, 3,
                shmem_team_translate_pe(threes_team, (my_pe_threes + 1) % npes_threes,
                                        SHMEM_TEAM_WORLD));
        shmem_quiet();
        shmem_sync(threes_team);
    }
    if (me && me % 3 == 0)
        SPEC_CHECK(x == 3, "x = %d (spec: global_exit(3))", x);
    else if (me && me % 2 == 0)
        SPEC_CHECK(x == 2, "x = %d (spec: global_exit(2))", x);
    else
        SPEC_CHECK(x == 10101, "x = %d (spec: global_exit(1))", x);
    if (twos_team != SHMEM_TEAM_INVALID)
        shmem_team_destroy(twos_team);
    if (threes_team != SHMEM_TEAM_INVALID)
        shmem_team_destroy(threes_team);
    shmem_finalize();
    return 0;
}
