/* Each PE puts its number into the next PE's copy of a global, then all
 * atomically add into PE 0's counter. Build: ushcc ring.c -o ring; run:
 * ushrun -n 4 ./ring */
#include <shmem.h>
#include <stdio.h>

int received; /* globals are symmetric too */
long total;

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_int_p(&received, me, (me + 1) % n); /* write into the next PE */
    shmem_long_atomic_add(&total, me, 0);     /* atomic on PE 0 */
    shmem_barrier_all();
    printf("PE %d of %d got %d from PE %d\n", me, n, received, (me + n - 1) % n);
    if (me == 0)
        printf("sum of PE numbers on PE 0: %ld\n", total);
    shmem_finalize();
    return 0;
}
