/* Spec example: shmem_put. PE 0 puts ten longs into dest on PE 1; checked after the
 * barrier: PE 1 holds 1..10, every other PE's dest is untouched. */
#include "spec_check.h"

int main(void)
{
    long source[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    static long dest[10];
    shmem_init();
    int me = shmem_my_pe();
    if (me == 0)
        shmem_put(dest, source, 10, 1);
    shmem_barrier_all(); /* sender and receiver meet here */
    for (int i = 0; i < 10; i++)
        SPEC_CHECK(dest[i] == (me == 1 ? source[i] : 0), "dest[%d] = %ld", i, dest[i]);
    shmem_finalize();
    return 0;
}
