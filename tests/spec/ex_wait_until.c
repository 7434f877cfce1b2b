/* Spec example: shmem_wait_until. wait_on_ivar() waits until ivar < 0. Here each PE
 * waits while its left neighbour first stores 5 (not enough) and then -7. Checked:
 * the wait returns and ivar is -7 then. */
#include "spec_check.h"

int ivar;

static void wait_on_ivar(void)
{
    shmem_int_wait_until(&ivar, SHMEM_CMP_LT, 0);
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    int right = (me + 1) % npes;
    shmem_barrier_all();
    shmem_int_atomic_set(&ivar, 5, right);
    shmem_fence();
    shmem_int_atomic_set(&ivar, -7, right);
    wait_on_ivar();
    SPEC_CHECK(ivar == -7, "ivar = %d after waiting for < 0", ivar);
    shmem_finalize();
    return 0;
}
