/* Spec example: shmem_atomic_compare_swap. Every PE races to swap its number into
 * race_winner on PE 0 (initially -1); checked: exactly one PE saw -1, race_winner
 * holds that PE's number, and every loser saw that number. */
#include "spec_check.h"

int main(void)
{
    static int race_winner = -1;
    static int winners; /* on PE 0 */
    shmem_init();
    int me = shmem_my_pe();
    int oldval = shmem_atomic_compare_swap(&race_winner, -1, me, 0);
    if (oldval == -1) {
        printf("pe %d was first\n", me);
        shmem_atomic_inc(&winners, 0);
    }
    shmem_barrier_all();
    int winner = shmem_atomic_fetch(&race_winner, 0);
    SPEC_CHECK(winner >= 0 && winner < shmem_n_pes(), "race_winner = %d", winner);
    SPEC_CHECK(oldval == (me == winner ? -1 : winner), "saw %d, winner %d", oldval, winner);
    if (me == 0)
        SPEC_CHECK(winners == 1, "%d PEs were first", winners);
    shmem_finalize();
    return 0;
}
