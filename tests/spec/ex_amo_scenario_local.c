/* Spec example (Memory Model, atomicity guarantees): PE 0 increments x with a plain x++
 * while the others increment it with shmem_atomic_inc, undefined behaviour. The spec's
 * fix: PE 0 uses shmem_atomic_inc too; that is what runs here. Checked: x = npes. */
#include "spec_check.h"

int main(void)
{
    static int x = 0;
    shmem_init();
    if (shmem_my_pe() > 0)
        shmem_int_atomic_inc(&x, 0);
    else
        shmem_int_atomic_inc(&x, 0); /* was x++ */
    shmem_barrier_all();
    if (shmem_my_pe() == 0)
        SPEC_CHECK(x == shmem_n_pes(), "x = %d, want %d", x, shmem_n_pes());
    shmem_finalize();
    return 0;
}
