/* Spec example: shmem_test_some. Every PE sets ivars[me] = me+1 on every PE, then polls
 * with test_some, taking each batch of ready indices. Checked: indices are new each
 * time, each value is its PE's, and the count reaches npes. */
#include "spec_check.h"

int main(void)
{
    shmem_init();
    int mype = shmem_my_pe();
    int npes = shmem_n_pes();
    int *ivars = shmem_calloc((size_t)npes, sizeof(int));
    int *status = calloc((size_t)npes, sizeof(int));
    size_t *indices = malloc((size_t)npes * sizeof(size_t));
    for (int i = 0; i < npes; i++)
        shmem_atomic_set(&ivars[mype], mype + 1, i);
    size_t ncompleted = 0;
    while (ncompleted < (size_t)npes) {
        size_t ntests = shmem_test_some(ivars, (size_t)npes, indices, status, SHMEM_CMP_NE, 0);
        SPEC_CHECK(ncompleted + ntests <= (size_t)npes, "test_some returned %zu", ntests);
        if (ntests > 0) {
            for (size_t i = 0; i < ntests; i++) {
                size_t k = indices[i];
                SPEC_CHECK(k < (size_t)npes && !status[k], "index %zu", k);
                SPEC_CHECK(ivars[k] == (int)k + 1, "ivars[%zu] = %d", k, ivars[k]);
                status[k] = 1;
            }
            ncompleted += ntests;
        } else {
            /* overlap some computation here */
        }
    }
    free(indices);
    free(status);
    shmem_free(ivars);
    shmem_finalize();
    return 0;
}
