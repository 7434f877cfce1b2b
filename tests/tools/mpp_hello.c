/* A program written for the deprecated header location <mpp/...> that OpenSHMEM 1.5 and 1.6
 * still list (tests/sh/test_mpp_headers.sh, tests/sh/test_install.sh build it with ushcc). */
#include <mpp/shmem.h>
#include <mpp/shmemx.h>
#include <stdio.h>

static int received = -1;

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_int_p(&received, me, (me + 1) % n);
    shmem_barrier_all();
    double t = shmemx_wtime(); /* from shmemx.h */
    printf("mpp: PE %d of %d got %d%s\n", me, n, received, t >= 0 ? "" : " (bad wtime)");
    shmem_finalize();
    return received == (me + n - 1) % n ? 0 : 1;
}
