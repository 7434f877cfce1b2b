/* Spec example: shmem_finalize. PE 0 reads x from the last PE with shmem_g, then all
 * PEs finalize and return 0; checked: PE 0 got 10101, the others kept -1, and the
 * job ends cleanly (ushrun's status). */
#include "spec_check.h"

int main(void)
{
    static long x = 10101;
    long y = -1;
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    if (me == 0)
        y = shmem_g(&x, npes - 1);
    SPEC_CHECK(y == (me == 0 ? 10101 : -1), "y = %ld", y);
    shmem_finalize();
    return 0;
}
