/* Spec example: shmem_wait_until_all. Every PE sets flags[me] = 1 on every PE and
 * waits until all its flags are 1 (status NULL: all of them). Checked: every flag is
 * 1 after the wait, without any barrier. */
#include "spec_check.h"

int main(void)
{
    shmem_init();
    int mype = shmem_my_pe();
    int npes = shmem_n_pes();
    int *flags = shmem_calloc((size_t)npes, sizeof(int));
    int *status = NULL;
    for (int i = 0; i < npes; i++)
        shmem_atomic_set(&flags[mype], 1, i);
    shmem_wait_until_all(flags, (size_t)npes, status, SHMEM_CMP_EQ, 1);
    for (int i = 0; i < npes; i++)
        SPEC_CHECK(flags[i] == 1, "flags[%d] = %d after wait_until_all", i, flags[i]);
    shmem_free(flags);
    shmem_finalize();
    return 0;
}
