/* Spec example: shmem_wait_until_any (all-to-all sum). Every PE puts its N numbers into
 * its slot of all_data on every PE, fences, then sets its flag there; each PE takes the
 * slots in the order the flags arrive. Checked: each index comes once, and the sum of
 * everything is M(M+1)/2 with M = N*npes-1 (the spec's check, failing loudly). */
#include <stdint.h>

#include "spec_check.h"

#define N 100

int main(void)
{
    int total_sum = 0;
    shmem_init();
    int mype = shmem_my_pe();
    int npes = shmem_n_pes();
    int *my_data = malloc(N * sizeof(int));
    int *all_data = shmem_malloc((size_t)(N * npes) * sizeof(int));
    int *flags = shmem_calloc((size_t)npes, sizeof(int));
    int *status = calloc((size_t)npes, sizeof(int));
    for (int i = 0; i < N; i++)
        my_data[i] = mype * N + i;
    for (int i = 0; i < npes; i++)
        shmem_put_nbi(&all_data[mype * N], my_data, N, i);
    shmem_fence(); /* data before flags */
    for (int i = 0; i < npes; i++)
        shmem_atomic_set(&flags[mype], 1, i);
    for (int i = 0; i < npes; i++) {
        size_t completed_idx = shmem_wait_until_any(flags, (size_t)npes, status, SHMEM_CMP_NE, 0);
        SPEC_CHECK(completed_idx < (size_t)npes && !status[completed_idx],
                   "wait_until_any returned %zu", completed_idx);
        for (int j = 0; j < N; j++)
            total_sum += all_data[completed_idx * N + j];
        status[completed_idx] = 1;
    }
    SPEC_CHECK(shmem_wait_until_any(flags, (size_t)npes, status, SHMEM_CMP_NE, 0) == SIZE_MAX,
               "wait_until_any with every index excluded must return SIZE_MAX");
    int M = N * npes - 1;
    SPEC_CHECK(total_sum == M * (M + 1) / 2, "total %d, want %d", total_sum, M * (M + 1) / 2);
    free(status);
    free(my_data);
    shmem_free(flags);
    shmem_free(all_data);
    shmem_finalize();
    return 0;
}
