/* pstart_pes, the profiling name of the deprecated start_pes, is exported: a tool
 * wraps start_pes (this file's definition takes the library's place) and reaches the
 * library through pstart_pes, as the OpenSHMEM profiling interface has it.
 * USHMEM_TEST_NPES: 1 2 */
#include <pshmem.h>

#include "test_util.h"

static int wrapped;
static long token;

void start_pes(int npes)
{
    wrapped++;
    pstart_pes(npes);
}

int main(void)
{
    start_pes(0);
    pstart_pes(0); /* later calls are no-ops */
    CHECK(wrapped == 1 && shmem_query_initialized(), "start_pes wrapped and initialized");
    int me = shmem_my_pe(), np = shmem_n_pes();
    shmem_long_p(&token, 1000 + me, (me + 1) % np);
    shmem_barrier_all();
    CHECK(token == 1000 + (me + np - 1) % np, "token %ld", token);
    return 0; /* start_pes: finalized at exit */
}
