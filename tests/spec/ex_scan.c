/* Spec example (1.6): shmem_sum_exscan. collect_at() gathers each PE's bytes at one PE,
 * at the offset an exclusive prefix sum of the sizes gives. Checked: PE k sends k+1
 * bytes of value k, first to PE 0 then to the last PE, and the receiver holds
 * 0 1 1 2 2 2 ... with the byte after them untouched. */
#include <stdint.h>
#include <string.h>

#include "spec_check.h"

static int collect_at(shmem_team_t team, void *dest, const void *source, size_t nbytes, int who)
{
    static size_t sym_nbytes;
    sym_nbytes = nbytes;
    shmem_team_sync(team);
    int rc = shmem_sum_exscan(team, &sym_nbytes, &sym_nbytes, 1);
    shmem_putmem((void *)((uintptr_t)dest + sym_nbytes), source, nbytes, who);
    shmem_quiet();
    shmem_team_sync(team);
    return rc;
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    size_t total = (size_t)npes * (size_t)(npes + 1) / 2;
    unsigned char *dest = shmem_malloc(total + 1);
    unsigned char src[64];
    SPEC_CHECK(npes < 64, "too many PEs for this test (%d)", npes);
    memset(src, me, (size_t)me + 1);
    int targets[2] = {0, npes - 1};
    for (int t = 0; t < 2; t++) {
        memset(dest, 0xee, total + 1);
        shmem_barrier_all();
        int rc = collect_at(SHMEM_TEAM_WORLD, dest, src, (size_t)me + 1, targets[t]);
        SPEC_CHECK(rc == 0, "sum_exscan returned %d", rc);
        if (me == targets[t]) {
            size_t off = 0;
            for (int pe = 0; pe < npes; pe++)
                for (int j = 0; j <= pe; j++, off++)
                    SPEC_CHECK(dest[off] == pe, "byte %zu = %d, want %d", off, dest[off], pe);
            SPEC_CHECK(dest[total] == 0xee, "wrote past the end");
        }
        shmem_barrier_all();
    }
    shmem_free(dest);
    shmem_finalize();
    return 0;
}
