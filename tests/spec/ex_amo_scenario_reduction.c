/* Spec example (Memory Model, atomicity guarantees): atomic increments of x race with a
 * reduction that reads x, undefined behaviour. The spec's fix: a barrier before the
 * reduction, so every AMO has completed; that is what runs here. Checked: each x is 1
 * and the sum is npes. */
#include "spec_check.h"

int main(void)
{
    static long psync[SHMEM_REDUCE_SYNC_SIZE];
    static int pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    static int x = 0, y = 0;
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    int npes = shmem_n_pes();
    shmem_int_atomic_inc(&x, (shmem_my_pe() + 1) % npes);
    shmem_barrier_all(); /* the fix */
    SPEC_CHECK(x == 1, "x = %d", x);
    shmem_int_sum_to_all(&y, &x, 1, 0, 0, npes, pwrk, psync);
    SPEC_CHECK(y == npes, "sum = %d, want %d", y, npes);
    shmem_finalize();
    return 0;
}
