/* Spec example: shmem_init. PE 0 puts 33 to PE 1 (PE 0 itself when alone); checked:
 * the receiver has 33 after the barrier, the others still 0. */
#include "spec_check.h"

int main(void)
{
    static int targ = 0;
    shmem_init();
    int me = shmem_my_pe();
    int receiver = 1 % shmem_n_pes();
    if (me == 0) {
        int src = 33;
        shmem_put(&targ, &src, 1, receiver);
    }
    shmem_barrier_all(); /* sender and receiver meet here */
    if (me == receiver)
        SPEC_CHECK(targ == 33, "targ=%d, expected 33", targ);
    else
        SPEC_CHECK(targ == 0, "targ=%d on a PE nobody wrote to", targ);
    shmem_finalize();
    return 0;
}
