/* Spec example: shmem_test_any. Every PE sets flags[me] = 1 on every PE, then polls with
 * test_any (overlapping "computation" between polls) until it has seen all of them.
 * Checked: each index comes once; with all excluded test_any returns SIZE_MAX. */
#include <stdint.h>

#include "spec_check.h"

int main(void)
{
    shmem_init();
    int mype = shmem_my_pe();
    int npes = shmem_n_pes();
    int *flags = shmem_calloc((size_t)npes, sizeof(int));
    int *status = calloc((size_t)npes, sizeof(int));
    for (int i = 0; i < npes; i++)
        shmem_atomic_set(&flags[mype], 1, i);
    int ncompleted = 0;
    size_t completed_idx;
    while (ncompleted < npes) {
        completed_idx = shmem_test_any(flags, (size_t)npes, status, SHMEM_CMP_EQ, 1);
        if (completed_idx != SIZE_MAX) {
            SPEC_CHECK(completed_idx < (size_t)npes && !status[completed_idx],
                       "test_any returned %zu", completed_idx);
            ncompleted++;
            status[completed_idx] = 1;
        } else {
            /* overlap some computation here */
        }
    }
    SPEC_CHECK(shmem_test_any(flags, (size_t)npes, status, SHMEM_CMP_EQ, 1) == SIZE_MAX,
               "test_any with every index excluded");
    free(status);
    shmem_free(flags);
    shmem_finalize();
    return 0;
}
