/* Spec example: shmem_alltoalls (team form, strides 1 and 1). Block pe of PE me's source holds
 * me+pe; checked, as the spec's own loop does but failing: block pe of dest holds pe+me. */
#include <inttypes.h>
#include <stdint.h>

#include "spec_check.h"

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    int count = 2;
    int64_t *dest = shmem_malloc((size_t)(count * npes) * sizeof(int64_t));
    int64_t *source = shmem_malloc((size_t)(count * npes) * sizeof(int64_t));
    for (int pe = 0; pe < npes; pe++)
        for (int i = 0; i < count; i++) {
            source[(pe * count) + i] = me + pe;
            dest[(pe * count) + i] = 9999;
        }
    shmem_team_sync(SHMEM_TEAM_WORLD);
    int rc = shmem_int64_alltoalls(SHMEM_TEAM_WORLD, dest, source, 1, 1, (size_t)count);
    SPEC_CHECK(rc == 0, "alltoalls returned %d", rc);
    for (int pe = 0; pe < npes; pe++)
        for (int i = 0; i < count; i++)
            SPEC_CHECK(dest[(pe * count) + i] == me + pe, "dest[%d] = %" PRId64 ", want %d",
                       (pe * count) + i, dest[(pe * count) + i], me + pe);
    shmem_free(dest);
    shmem_free(source);
    shmem_finalize();
    return 0;
}
