/* Spec example: shmem_broadcast (team form). PE 0 broadcasts 0 1 2 3 over the world
 * team; checked: dest holds 0 1 2 3 on every PE, the root included (1.5 semantics). */
#include "spec_check.h"

#define NUM_ELEMS 4

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    long *source = shmem_malloc(NUM_ELEMS * sizeof(*source));
    long *dest = shmem_malloc(NUM_ELEMS * sizeof(*dest));
    for (int i = 0; i < NUM_ELEMS; i++) {
        source[i] = me == 0 ? i : -100 - i;
        dest[i] = -1;
    }
    shmem_barrier_all(); /* every PE's dest is reset before the root writes it */
    int rc = shmem_long_broadcast(SHMEM_TEAM_WORLD, dest, source, NUM_ELEMS, 0);
    SPEC_CHECK(rc == 0, "broadcast returned %d", rc);
    for (int i = 0; i < NUM_ELEMS; i++)
        SPEC_CHECK(dest[i] == i, "dest[%d] = %ld", i, dest[i]);
    shmem_free(dest);
    shmem_free(source);
    shmem_finalize();
    return 0;
}
