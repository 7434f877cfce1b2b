/* Spec example: reductions (shmem_or_reduce, shmem_sum_reduce). Each PE draws NELEMS
 * numbers in [0, npes) with rand() seeded by its PE number and flags the maximal ones
 * (npes-1); an OR reduction marks the indices where any PE drew one and a SUM counts
 * them. Checked: every PE replays all PEs' draws and gets the same flags and count. */
#include "spec_check.h"

#define NELEMS 32

int main(void)
{
    shmem_init();
    int mype = shmem_my_pe();
    int npes = shmem_n_pes();
    int *values = shmem_malloc(NELEMS * sizeof(int));
    unsigned char *value_is_maximal = shmem_malloc(NELEMS * sizeof(unsigned char));
    unsigned char *value_is_maximal_all = shmem_malloc(NELEMS * sizeof(unsigned char));
    static int maximal_values_count = 0;
    static int maximal_values_total;
    srand((unsigned)mype);
    for (int i = 0; i < NELEMS; i++) {
        values[i] = rand() % npes;
        value_is_maximal[i] = (values[i] == (npes - 1)) ? 1 : 0;
        maximal_values_count += value_is_maximal[i];
    }
    shmem_sync(SHMEM_TEAM_WORLD); /* every PE's arrays are ready */
    int rc1 = shmem_or_reduce(SHMEM_TEAM_WORLD, value_is_maximal_all, value_is_maximal, NELEMS);
    int rc2 = shmem_sum_reduce(SHMEM_TEAM_WORLD, &maximal_values_total, &maximal_values_count, 1);
    SPEC_CHECK(rc1 == 0 && rc2 == 0, "reductions returned %d %d", rc1, rc2);

    /* replay every PE's draws (rand() is deterministic per seed) */
    unsigned char want_flags[NELEMS] = {0};
    int want_total = 0;
    for (int pe = 0; pe < npes; pe++) {
        srand((unsigned)pe);
        for (int i = 0; i < NELEMS; i++)
            if (rand() % npes == npes - 1) {
                want_flags[i] = 1;
                want_total++;
            }
    }
    SPEC_CHECK(maximal_values_total == want_total, "sum_reduce %d, want %d", maximal_values_total,
               want_total);
    for (int i = 0; i < NELEMS; i++)
        SPEC_CHECK(value_is_maximal_all[i] == want_flags[i], "or_reduce[%d] = %d, want %d", i,
                   value_is_maximal_all[i], want_flags[i]);
    shmem_free(value_is_maximal_all);
    shmem_free(value_is_maximal);
    shmem_free(values);
    shmem_finalize();
    return 0;
}
