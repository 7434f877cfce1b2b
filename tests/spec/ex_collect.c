/* Spec example: shmem_collect. PE k contributes k+1 ints, numbered so that the
 * concatenation is 0 1 2 ... (a lock keeps the printouts apart); checked: every PE's
 * dest is exactly 0..total-1. */
#include "spec_check.h"

int main(void)
{
    static long lock = 0;
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    int my_nelem = me + 1; /* linearly increasing number of elements with PE */
    int total_nelem = (npes * (npes + 1)) / 2;
    int *source = shmem_malloc((size_t)npes * sizeof(int));
    int *dest = shmem_malloc((size_t)total_nelem * sizeof(int));
    for (int i = 0; i < my_nelem; i++)
        source[i] = (me * (me + 1)) / 2 + i;
    for (int i = 0; i < total_nelem; i++)
        dest[i] = -9999;
    shmem_team_sync(SHMEM_TEAM_WORLD); /* every PE has set source and dest */
    int rc = shmem_int_collect(SHMEM_TEAM_WORLD, dest, source, (size_t)my_nelem);
    SPEC_CHECK(rc == 0, "collect returned %d", rc);
    shmem_set_lock(&lock);
    for (int i = 0; i < total_nelem; i++)
        SPEC_CHECK(dest[i] == i, "dest[%d] = %d", i, dest[i]);
    shmem_clear_lock(&lock);
    shmem_free(dest);
    shmem_free(source);
    shmem_finalize();
    return 0;
}
