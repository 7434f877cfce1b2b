/* Spec example: shmem_atomic_add. PE 1 adds 44 to dst on PE 0; checked: PE 0 has 66,
 * the others 22. */
#include "spec_check.h"

int main(void)
{
    static int dst;
    shmem_init();
    int me = shmem_my_pe();
    dst = 22;
    shmem_barrier_all();
    if (me == 1)
        shmem_atomic_add(&dst, 44, 0);
    shmem_barrier_all();
    SPEC_CHECK(dst == (me == 0 ? 66 : 22), "dst = %d", dst);
    shmem_finalize();
    return 0;
}
