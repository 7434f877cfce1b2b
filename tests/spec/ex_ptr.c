/* Spec example: shmem_ptr. PE 0 writes 1 2 3 4 straight into PE 1's dest through the
 * pointer shmem_ptr gives. Checked: on one host (all PEs mapped) the pointer is not
 * NULL and PE 1 sees 1 2 3 4; where it is NULL, dest stays untouched. */
#include "spec_check.h"

int main(void)
{
    static int dest[4];
    static int mapped; /* on PE 1: whether PE 0 could write directly */
    shmem_init();
    int me = shmem_my_pe();
    if (me == 0) {
        int *ptr = shmem_ptr(dest, 1);
        SPEC_CHECK(ptr != NULL, "shmem_ptr(dest, 1) is NULL on one host");
        for (int i = 0; i < 4; i++)
            *ptr++ = i + 1;
        shmem_int_p(&mapped, 1, 1);
        SPEC_CHECK(shmem_ptr(dest, 0) == (void *)dest, "shmem_ptr to myself is not my address");
    }
    shmem_barrier_all();
    if (me == 1)
        for (int i = 0; i < 4; i++)
            SPEC_CHECK(dest[i] == (mapped ? i + 1 : 0), "dest[%d] = %d", i, dest[i]);
    shmem_finalize();
    return 0;
}
