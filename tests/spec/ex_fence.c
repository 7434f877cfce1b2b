/* Spec example: shmem_fence. PE 0 puts dest to PEs 1 and 2, fences, then puts targ to
 * PEs 1 and 2: the fence orders put1 before put3 and put2 before put4. Checked: a
 * receiver that sees targ = 99 also sees the whole dest (PEs 1 and 2 poll targ), and
 * after the barrier both hold everything. Needs 3 PEs: run at 3 and 4.
 * SPEC_NPES: 3 4 */
#include "spec_check.h"

int main(void)
{
    int src = 99;
    long source[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    static long dest[10];
    static int targ;
    shmem_init();
    int me = shmem_my_pe();
    SPEC_CHECK(shmem_n_pes() >= 3, "needs 3 PEs, has %d", shmem_n_pes());
    if (me == 0) {
        shmem_put(dest, source, 10, 1); /* put1 */
        shmem_put(dest, source, 10, 2); /* put2 */
        shmem_fence();
        shmem_put(&targ, &src, 1, 1); /* put3 */
        shmem_put(&targ, &src, 1, 2); /* put4 */
    } else if (me <= 2) {
        shmem_int_wait_until(&targ, SHMEM_CMP_EQ, 99);
        for (int i = 0; i < 10; i++)
            SPEC_CHECK(dest[i] == i + 1, "dest[%d] = %ld once targ arrived", i, dest[i]);
    }
    shmem_barrier_all(); /* sender and receivers meet here */
    for (int i = 0; i < 10; i++)
        SPEC_CHECK(dest[i] == ((me == 1 || me == 2) ? i + 1 : 0), "dest[%d] = %ld", i, dest[i]);
    SPEC_CHECK(targ == ((me == 1 || me == 2) ? 99 : 0), "targ = %d", targ);
    shmem_finalize();
    return 0;
}
