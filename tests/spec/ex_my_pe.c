/* Spec example: shmem_my_pe. Checked: gathering every PE's number gives 0..npes-1
 * in order, and the world team agrees. */
#include "spec_check.h"

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    int *mine = shmem_malloc(sizeof(int));
    int *all = shmem_malloc((size_t)npes * sizeof(int));
    *mine = me;
    shmem_barrier_all();
    SPEC_CHECK(shmem_int_fcollect(SHMEM_TEAM_WORLD, all, mine, 1) == 0, "fcollect failed");
    for (int i = 0; i < npes; i++)
        SPEC_CHECK(all[i] == i, "PE %d says it is PE %d", i, all[i]);
    SPEC_CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me, "team_my_pe(WORLD) %d",
               shmem_team_my_pe(SHMEM_TEAM_WORLD));
    shmem_free(all);
    shmem_free(mine);
    shmem_finalize();
    return 0;
}
