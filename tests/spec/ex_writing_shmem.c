/* Spec example: Writing OpenSHMEM programs. PE 0 puts 16 shorts 0..15 into dest on every
 * other PE; the receivers print it under a lock. Checked: every receiver has 0..15,
 * PE 0's own dest is untouched. */
#include "spec_check.h"

#define SIZE 16

int main(void)
{
    short source[SIZE];
    static short dest[SIZE];
    static long lock = 0;
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    if (me == 0) {
        for (int i = 0; i < SIZE; i++)
            source[i] = (short)i; /* local, not symmetric */
        for (int i = 1; i < npes; i++)
            shmem_put(dest, source, SIZE, i); /* static makes dest symmetric */
    }
    shmem_barrier_all(); /* sender and receivers meet here */
    if (me != 0) {
        shmem_set_lock(&lock);
        for (int i = 0; i < SIZE; i++)
            SPEC_CHECK(dest[i] == i, "dest[%d] = %hd", i, dest[i]);
        shmem_clear_lock(&lock);
    } else {
        for (int i = 0; i < SIZE; i++)
            SPEC_CHECK(dest[i] == 0, "dest[%d] = %hd on the sender", i, dest[i]);
    }
    shmem_finalize();
    return 0;
}
