/* Spec example: hello-openshmem (Programming Model Overview). Every PE learns its
 * number and the job size; checked: the numbers are 0..npes-1, each taken once. */
#include "spec_check.h"

int main(void)
{
    static long seen; /* bit p set by PE p, on PE 0 */
    shmem_init();
    int nprocs = shmem_n_pes();
    int me = shmem_my_pe();
    SPEC_CHECK(nprocs >= 1 && nprocs <= 62, "n_pes %d", nprocs);
    SPEC_CHECK(me >= 0 && me < nprocs, "my_pe %d of %d", me, nprocs);
    long old = shmem_atomic_fetch_or(&seen, 1L << me, 0);
    SPEC_CHECK(!(old & (1L << me)), "PE number %d taken twice", me);
    shmem_barrier_all();
    if (me == 0)
        SPEC_CHECK(seen == (1L << nprocs) - 1, "PE numbers seen 0x%lx, want 0..%d", seen,
                   nprocs - 1);
    shmem_finalize();
    return 0;
}
