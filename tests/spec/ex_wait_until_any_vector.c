/* Spec example: shmem_wait_until_any_vector. Odd PEs set ivars[me] = 2 on every PE, even
 * PEs 1; each PE waits for each slot to equal its own expected value. Checked: each
 * index comes once and the values sum to npes + npes/2 (the spec's check). */
#include "spec_check.h"

int main(void)
{
    int total_sum = 0;
    shmem_init();
    int mype = shmem_my_pe();
    int npes = shmem_n_pes();
    int *ivars = shmem_calloc((size_t)npes, sizeof(int));
    int *status = calloc((size_t)npes, sizeof(int));
    int *cmp_values = malloc((size_t)npes * sizeof(int));
    for (int i = 0; i < npes; i++) {
        shmem_atomic_set(&ivars[mype], mype % 2 + 1, i);
        cmp_values[i] = i % 2 + 1; /* what PE i will store */
    }
    for (int i = 0; i < npes; i++) {
        size_t completed_idx =
            shmem_wait_until_any_vector(ivars, (size_t)npes, status, SHMEM_CMP_EQ, cmp_values);
        SPEC_CHECK(completed_idx < (size_t)npes && !status[completed_idx],
                   "wait_until_any_vector returned %zu", completed_idx);
        status[completed_idx] = 1;
        total_sum += ivars[completed_idx];
    }
    int correct_result = npes + npes / 2;
    SPEC_CHECK(total_sum == correct_result, "total %d, want %d", total_sum, correct_result);
    free(cmp_values);
    free(status);
    shmem_free(ivars);
    shmem_finalize();
    return 0;
}
