/* Spec example: shmem_barrier (active set, deprecated in 1.5 but still listed). Even PEs
 * put 4 into x on the next even PE (circularly) and meet in a barrier of the even PEs
 * (start 0, log stride 1); checked: after it every even PE has 4, odd PEs keep 10101. */
#include "spec_check.h"

int main(void)
{
    static int x = 10101;
    static long pSync[SHMEM_BARRIER_SYNC_SIZE];
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++)
        pSync[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    if (me % 2 == 0) {
        /* the next even PE, circularly over the even PEs */
        int next = (me + 2) % (npes + npes % 2);
        shmem_p(&x, 4, next);
        shmem_barrier(0, 1, npes / 2 + npes % 2, pSync);
        SPEC_CHECK(x == 4, "x = %d after the even PEs' barrier", x);
    } else {
        SPEC_CHECK(x == 10101, "x = %d on an odd PE", x);
    }
    shmem_finalize();
    return 0;
}
