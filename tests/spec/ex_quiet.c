/* Spec example: shmem_quiet. PE 0 puts to PEs 1 and 2, quiets, and reads the values
 * back with gets (x = {1,2,3}, y = 90), then puts targ to PEs 1 and 2. Checked: the
 * gets see the quieted puts, and after a barrier PEs 1 and 2 hold dest and targ.
 * Needs 3 PEs: run at 3 and 4.
 * SPEC_NPES: 3 4 */
#include "spec_check.h"

long dest[3] = {0};
int targ = 0;
long source[3] = {1, 2, 3};
int src = 90;

int main(void)
{
    long x[3] = {0};
    int y = 0;
    shmem_init();
    int me = shmem_my_pe();
    SPEC_CHECK(shmem_n_pes() >= 3, "needs 3 PEs, has %d", shmem_n_pes());
    if (me == 0) {
        shmem_long_put(dest, source, 3, 1); /* put1 */
        shmem_int_put(&targ, &src, 1, 2);   /* put2 */
        shmem_quiet();
        shmem_long_get(x, dest, 3, 1);  /* dest on PE 1, updated */
        shmem_int_get(&y, &targ, 1, 2); /* targ on PE 2, updated */
        SPEC_CHECK(x[0] == 1 && x[1] == 2 && x[2] == 3, "x: {%ld,%ld,%ld}, want {1,2,3}", x[0],
                   x[1], x[2]);
        SPEC_CHECK(y == 90, "y: %d, want 90", y);
        shmem_int_put(&targ, &src, 1, 1); /* put3 */
        shmem_int_put(&targ, &src, 1, 2); /* put4 */
    }
    shmem_barrier_all();
    for (int i = 0; i < 3; i++)
        SPEC_CHECK(dest[i] == (me == 1 ? i + 1 : 0), "dest[%d] = %ld", i, dest[i]);
    SPEC_CHECK(targ == ((me == 1 || me == 2) ? 90 : 0), "targ = %d", targ);
    shmem_finalize();
    return 0;
}
