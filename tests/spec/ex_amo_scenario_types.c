/* Spec example (Memory Model, atomicity guarantees): PEs other than 0 OR a 32-bit value
 * into the 64-bit x on PE 0 while PE 0 ORs into it with 64 bits: two datatypes on one
 * location, undefined behaviour. The spec's fix: shift the 32-bit value left and use a
 * 64-bit OR everywhere; that is what runs here. Checked: x holds every PE's bits. */
#include <stdint.h>

#include "spec_check.h"

int main(void)
{
    static uint64_t x = 0;
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    if (me > 0)
        shmem_uint64_atomic_or(&x, (uint64_t)(me + 1) << 32, 0);
    else
        shmem_uint64_atomic_or(&x, (uint64_t)(me + 1), 0);
    shmem_barrier_all();
    if (me == 0) {
        uint64_t want = 1;
        for (int pe = 1; pe < npes; pe++)
            want |= (uint64_t)(pe + 1) << 32;
        SPEC_CHECK(x == want, "x = 0x%llx, want 0x%llx", (unsigned long long)x,
                   (unsigned long long)want);
    }
    shmem_finalize();
    return 0;
}
