/* Spec example: shmem_ptr. PE 0 writes 1 2 3 4 straight into PE 1's dest through the
 * pointer shmem_ptr gives. Checked: the pointer is not NULL exactly when PE 1 is in PE 0's
 * SHMEM_TEAM_SHARED (always, on one host with the shm transport), PE 1 then sees
 * 1 2 3 4, and where it is NULL dest stays untouched. */
#include <string.h>

#include "spec_check.h"

int main(void)
{
    static int dest[4];
    static int mapped; /* on PE 1: whether PE 0 could write directly */
    shmem_init();
    int me = shmem_my_pe();
    if (me == 0) {
        int *ptr = shmem_ptr(dest, 1);
        /* SHMEM_TEAM_SHARED holds the PEs whose memory shmem_ptr reaches */
        int shared = shmem_team_translate_pe(SHMEM_TEAM_WORLD, 1, SHMEM_TEAM_SHARED) >= 0;
        /* ushmem on one host maps every PE unless the launch forces another transport */
        const char *t = getenv("USHMEM_TRANSPORTS"), *f = getenv("USHMEM_FAKE_HOSTS");
        if ((!t || strstr(t, "shm")) && !(f && atoi(f) > 1))
            SPEC_CHECK(shared, "PE 1 is not in PE 0's SHMEM_TEAM_SHARED on one host");
        SPEC_CHECK((ptr != NULL) == shared, "shmem_ptr(dest, 1) = %p, PE 1 in the shared team: %d",
                   (void *)ptr, shared);
        if (ptr == NULL)
            printf("can't use pointer to directly access PE 1's dest array\n");
        else
            for (int i = 0; i < 4; i++)
                *ptr++ = i + 1;
        shmem_int_p(&mapped, ptr != NULL, 1);
        SPEC_CHECK(shmem_ptr(dest, 0) == (void *)dest, "shmem_ptr to myself is not my address");
    }
    shmem_barrier_all();
    if (me == 1)
        for (int i = 0; i < 4; i++)
            SPEC_CHECK(dest[i] == (mapped ? i + 1 : 0), "dest[%d] = %d", i, dest[i]);
    shmem_finalize();
    return 0;
}
