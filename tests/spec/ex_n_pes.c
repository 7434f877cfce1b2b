/* Spec example: shmem_n_pes. Checked: every PE sees the same count, equal to the
 * world team's size. */
#include "spec_check.h"

int main(void)
{
    static int npes_mine, npes_min, npes_max;
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    SPEC_CHECK(npes == shmem_team_n_pes(SHMEM_TEAM_WORLD), "n_pes %d, team_n_pes(WORLD) %d", npes,
               shmem_team_n_pes(SHMEM_TEAM_WORLD));
    npes_mine = npes;
    shmem_barrier_all();
    shmem_int_min_reduce(SHMEM_TEAM_WORLD, &npes_min, &npes_mine, 1);
    shmem_int_max_reduce(SHMEM_TEAM_WORLD, &npes_max, &npes_mine, 1);
    SPEC_CHECK(npes_min == npes && npes_max == npes, "PEs disagree: n_pes from %d to %d", npes_min,
               npes_max);
    if (me == 0)
        printf("Number of PEs executing this program is: %d\n", npes);
    shmem_finalize();
    return 0;
}
