/* Spec example: shmem_wait_until_some (all-to-all sum). As the wait_until_any example,
 * but each wait returns every slot ready so far (their indices). Checked: the indices
 * are new each time, the count reaches npes, and the sum is M(M+1)/2. */
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
    size_t *indices = malloc((size_t)npes * sizeof(size_t));
    int *status = calloc((size_t)npes, sizeof(int));
    for (int i = 0; i < N; i++)
        my_data[i] = mype * N + i;
    for (int i = 0; i < npes; i++)
        shmem_put_nbi(&all_data[mype * N], my_data, N, i);
    shmem_fence(); /* data before flags */
    for (int i = 0; i < npes; i++)
        shmem_atomic_set(&flags[mype], 1, i);
    size_t ncompleted = 0;
    while (ncompleted < (size_t)npes) {
        size_t ntests =
            shmem_wait_until_some(flags, (size_t)npes, indices, status, SHMEM_CMP_NE, 0);
        SPEC_CHECK(ntests >= 1 && ncompleted + ntests <= (size_t)npes,
                   "wait_until_some returned %zu", ntests);
        for (size_t i = 0; i < ntests; i++) {
            SPEC_CHECK(indices[i] < (size_t)npes && !status[indices[i]], "index %zu", indices[i]);
            for (int j = 0; j < N; j++)
                total_sum += all_data[indices[i] * N + j];
            status[indices[i]] = 1;
        }
        ncompleted += ntests;
    }
    int M = N * npes - 1;
    SPEC_CHECK(total_sum == M * (M + 1) / 2, "total %d, want %d", total_sum, M * (M + 1) / 2);
    free(status);
    free(indices);
    free(my_data);
    shmem_free(flags);
    shmem_free(all_data);
    shmem_finalize();
    return 0;
}
