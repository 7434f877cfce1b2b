/* Spec example (Memory Model, atomicity guarantees, atomicity domains): PE 0 increments x through a
 * context of SHMEM_TEAM_SHARED while the others use contexts of SHMEM_TEAM_WORLD: two
 * atomicity domains on one location, undefined behaviour. This runs the resolved form
 * the text implies: every PE's context comes from the same team (SHMEM_TEAM_WORLD), so
 * the increments are exclusive. Checked: x on PE 0 ends at npes; PE 0's world number
 * in SHMEM_TEAM_SHARED (the example's translate) is its number there. */
#include <stdint.h>

#include "spec_check.h"

int main(void)
{
    static uint64_t x = 0;
    shmem_init();
    int target = 0;
    shmem_ctx_t ctx;
    if (shmem_my_pe() == 0) { /* the listing's translate: PE 0 is in its own shared team */
        int shared0 = shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, SHMEM_TEAM_SHARED);
        SPEC_CHECK(shared0 == shmem_team_my_pe(SHMEM_TEAM_SHARED),
                   "PE 0 translates to %d in SHMEM_TEAM_SHARED, where it is %d", shared0,
                   shmem_team_my_pe(SHMEM_TEAM_SHARED));
    }
    int rc = shmem_team_create_ctx(SHMEM_TEAM_WORLD, 0, &ctx); /* one domain for all */
    SPEC_CHECK(rc == 0, "team_create_ctx returned %d", rc);
    shmem_ctx_uint64_atomic_inc(ctx, &x, target);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    if (shmem_my_pe() == 0)
        SPEC_CHECK(x == (uint64_t)shmem_n_pes(), "x = %llu, want %d", (unsigned long long)x,
                   shmem_n_pes());
    shmem_ctx_destroy(ctx);
    shmem_finalize();
    return 0;
}
