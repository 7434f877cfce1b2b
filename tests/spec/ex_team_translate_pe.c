/* Spec example: shmem_team_translate_pe. The even PEs form a team ((npes+1)/2 members);
 * checked: each member's team number translates back to its world number, and a PE
 * outside the team translates to -1. */
#include "spec_check.h"

int main(void)
{
    shmem_team_t new_team;
    shmem_team_config_t *config;
    shmem_init();
    config = NULL;
    int my_pe = shmem_my_pe();
    int npes = shmem_n_pes();
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, config, 0, &new_team);
    SPEC_CHECK((new_team != SHMEM_TEAM_INVALID) == (my_pe % 2 == 0), "membership %d",
               new_team != SHMEM_TEAM_INVALID);
    if (new_team != SHMEM_TEAM_INVALID) {
        int t_pe = shmem_team_my_pe(new_team);
        int t_global = shmem_team_translate_pe(new_team, t_pe, SHMEM_TEAM_WORLD);
        SPEC_CHECK(t_global == my_pe, "team PE %d translates to world PE %d", t_pe, t_global);
        if (npes > 1) /* world PE 1 is odd, so not in the team */
            SPEC_CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 1, new_team) == -1,
                       "world PE 1 translates to %d",
                       shmem_team_translate_pe(SHMEM_TEAM_WORLD, 1, new_team));
        shmem_team_destroy(new_team);
    }
    shmem_finalize();
    return 0;
}
