/* Spec example: shmem_sync_all. Each PE puts 4 into x on the next PE, quiets, then
 * syncs; checked: x is 4 everywhere. */
#include "spec_check.h"

int main(void)
{
    static int x = 1010;
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    shmem_p(&x, 4, (me + 1) % npes);
    shmem_quiet(); /* sync_all does not complete puts: quiet first */
    shmem_sync_all();
    SPEC_CHECK(x == 4, "x = %d", x);
    shmem_finalize();
    return 0;
}
