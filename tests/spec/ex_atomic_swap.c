/* Spec example: shmem_atomic_swap. Each odd PE swaps its number into dest on the next
 * PE (an even one, whose dest holds its own number); checked: an odd PE got the
 * target's number back and its own dest is unchanged; after a barrier an even PE's
 * dest holds its odd predecessor's number. */
#include "spec_check.h"

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    long *dest = shmem_malloc(sizeof(*dest));
    *dest = me;
    shmem_barrier_all();
    long new_val = me;
    if (me & 1) {
        int target = (me + 1) % npes;
        long swapped_val = shmem_atomic_swap(dest, new_val, target);
        SPEC_CHECK(swapped_val == target, "swapped = %ld, want %d", swapped_val, target);
        SPEC_CHECK(*dest == me, "dest = %ld", *dest);
    }
    shmem_barrier_all();
    int pred = (me + npes - 1) % npes; /* who swapped into me, when odd */
    long want = (!(me & 1) && (pred & 1) && (pred + 1) % npes == me) ? pred : me;
    SPEC_CHECK(*dest == want, "dest = %ld, want %ld", *dest, want);
    shmem_free(dest);
    shmem_finalize();
    return 0;
}
