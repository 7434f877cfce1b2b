/* Spec example: shmem_g. PE 0 reads the last PE's x; checked: y = 10101 on PE 0,
 * -1 (untouched) elsewhere. */
#include "spec_check.h"

int main(void)
{
    long y = -1;
    static long x = 10101;
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    if (me == 0)
        y = shmem_g(&x, npes - 1);
    SPEC_CHECK(y == (me == 0 ? 10101 : -1), "y = %ld", y);
    shmem_finalize();
    return 0;
}
