/* Spec example: shmem_atomic_fetch_inc. PE 0 increments dst (a global, so symmetric)
 * on PE 1; checked: PE 0 got 22, PE 1 has 23, the others 22. */
#include "spec_check.h"

int dst;

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    int old = -1;
    dst = 22;
    shmem_barrier_all();
    if (me == 0)
        old = shmem_atomic_fetch_inc(&dst, 1);
    shmem_barrier_all();
    SPEC_CHECK(old == (me == 0 ? 22 : -1), "old = %d", old);
    SPEC_CHECK(dst == (me == 1 ? 23 : 22), "dst = %d", dst);
    shmem_finalize();
    return 0;
}
