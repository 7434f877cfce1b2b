/* Spec example: shmem_iput. PE 0 puts every second short of source (stride 2) into
 * consecutive shorts of dest on PE 1; checked: PE 1 has 1 3 5 7 9 then zeros. */
#include "spec_check.h"

int main(void)
{
    short source[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    static short dest[10];
    shmem_init();
    int me = shmem_my_pe();
    if (me == 0)
        shmem_iput(dest, source, 1, 2, 5, 1); /* dst stride 1, src stride 2, 5 elements */
    shmem_barrier_all();
    for (int i = 0; i < 10; i++) {
        short want = (me == 1 && i < 5) ? (short)(2 * i + 1) : 0;
        SPEC_CHECK(dest[i] == want, "dest[%d] = %d, want %d", i, dest[i], want);
    }
    shmem_finalize();
    return 0;
}
