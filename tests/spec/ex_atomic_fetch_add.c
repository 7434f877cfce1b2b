/* Spec example: shmem_atomic_fetch_add. PE 1 adds 44 to dst on PE 0 and gets the old
 * value; checked: PE 1 got 22, PE 0 has 66, the others 22 and old -1. */
#include "spec_check.h"

int main(void)
{
    static int dst;
    shmem_init();
    int me = shmem_my_pe();
    int old = -1;
    dst = 22;
    shmem_barrier_all();
    if (me == 1)
        old = shmem_atomic_fetch_add(&dst, 44, 0);
    shmem_barrier_all();
    SPEC_CHECK(old == (me == 1 ? 22 : -1), "old = %d", old);
    SPEC_CHECK(dst == (me == 0 ? 66 : 22), "dst = %d", dst);
    shmem_finalize();
    return 0;
}
