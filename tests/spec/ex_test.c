/* Spec example: shmem_test. user_wait() polls with shmem_test until ivar equals value.
 * Here each PE's left neighbour stores 42 into its ivar after a barrier. Checked: the
 * loop ends with ivar = 42, and shmem_test said 0 before the store (checked before the
 * barrier). */
#include "spec_check.h"

static void user_wait(long *ivar, long value)
{
    while (!shmem_test(ivar, SHMEM_CMP_EQ, value))
        ; /* "do something useful" */
}

int main(void)
{
    static long ivar;
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    SPEC_CHECK(shmem_test(&ivar, SHMEM_CMP_EQ, 42) == 0, "test is true before any store");
    shmem_barrier_all();
    shmem_long_atomic_set(&ivar, 42, (me + 1) % npes);
    user_wait(&ivar, 42);
    SPEC_CHECK(ivar == 42, "ivar = %ld", ivar);
    shmem_finalize();
    return 0;
}
