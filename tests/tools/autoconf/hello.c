/* The autoconf project's program (tests/sh/test_ushcc_autoconf.sh). */
#include <shmem.h>
#include <stdio.h>

static long sum;

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_long_atomic_add(&sum, me + 1, 0);
    shmem_barrier_all();
    if (me == 0)
        printf("autoconf hello: %d PEs, sum %ld\n", n, sum);
    shmem_finalize();
    return me == 0 && sum != (long)n * (n + 1) / 2;
}
