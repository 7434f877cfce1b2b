/* Spec example: shmem_team_split_strided. The even PEs form a team (start 0, stride 2,
 * npes/2 members). Checked: exactly the first npes/2 even PEs are members, with team
 * number mype/2 and team size npes/2 (the spec calls shmem_global_exit(1) instead). */
#include "spec_check.h"

int main(void)
{
    shmem_team_t new_team;
    shmem_team_config_t *config;
    shmem_init();
    config = NULL;
    int mype = shmem_my_pe();
    int npes = shmem_n_pes();
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, npes / 2, config, 0, &new_team);
    SPEC_CHECK(rc == 0, "split returned %d", rc);
    int member = mype % 2 == 0 && mype / 2 < npes / 2;
    SPEC_CHECK((new_team != SHMEM_TEAM_INVALID) == member, "member %d, want %d",
               new_team != SHMEM_TEAM_INVALID, member);
    if (new_team != SHMEM_TEAM_INVALID) {
        int team_npes = shmem_team_n_pes(new_team);
        int team_mype = shmem_team_my_pe(new_team);
        SPEC_CHECK(mype % 2 == 0 && mype / 2 == team_mype && npes / 2 == team_npes,
                   "team PE %d of %d", team_mype, team_npes);
        shmem_team_destroy(new_team);
    }
    shmem_finalize();
    return 0;
}
