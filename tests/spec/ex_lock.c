/* Spec example: shmem_set_lock / shmem_clear_lock. Under the lock each PE reads count on
 * PE 0, increments it and writes it back. Checked: the values read are 0..npes-1, each
 * once (no lost update), and count on PE 0 ends at npes. */
#include "spec_check.h"

int main(void)
{
    static long lock = 0;
    static int count = 0;
    static long seen; /* on PE 0: bit v set when some PE read v */
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    shmem_set_lock(&lock);
    int val = shmem_g(&count, 0); /* count on PE 0 */
    printf("%d: count is %d\n", me, val);
    val++;
    shmem_p(&count, val, 0);
    shmem_clear_lock(&lock); /* completes the update before releasing the lock */
    SPEC_CHECK(val >= 1 && val <= npes, "read %d", val - 1);
    long old = shmem_atomic_fetch_or(&seen, 1L << (val - 1), 0);
    SPEC_CHECK(!(old & (1L << (val - 1))), "two PEs read count = %d", val - 1);
    shmem_barrier_all();
    if (me == 0)
        SPEC_CHECK(count == npes && seen == (1L << npes) - 1, "count %d, reads 0x%lx", count, seen);
    shmem_finalize();
    return 0;
}
