/* Legacy start: start_pes, _my_pe/_num_pes, shmalloc, and no shmem_finalize:
 * the library finalizes implicitly when main returns 0.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include "test_util.h"

static long token;

int main(void)
{
    start_pes(0);
    start_pes(0); /* later calls are no-ops */
    int me = _my_pe(), np = _num_pes();
    CHECK(me == shmem_my_pe() && np == shmem_n_pes(), "legacy queries");
    long *buf = shmalloc(sizeof(long) * 8);
    CHECK(buf, "shmalloc");
    shmem_long_p(&token, 1000 + me, (me + 1) % np);
    shmem_barrier_all();
    CHECK(token == 1000 + (me + np - 1) % np, "token %ld", token);
    shfree(buf);
    return 0; /* no shmem_finalize */
}
