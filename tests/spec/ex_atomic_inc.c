/* Spec example: shmem_atomic_inc. PE 0 increments dst on PE 1; checked: PE 1 has 75,
 * the others 74. */
#include "spec_check.h"

int dst;

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    dst = 74;
    shmem_barrier_all();
    if (me == 0)
        shmem_atomic_inc(&dst, 1);
    shmem_barrier_all();
    SPEC_CHECK(dst == (me == 1 ? 75 : 74), "dst = %d", dst);
    shmem_finalize();
    return 0;
}
