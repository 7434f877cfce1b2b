/* Spec example: the profiling interface (pshmem). The program defines its own
 * shmem_long_put that times the call and forwards it to pshmem_long_put. Checked: a
 * call to shmem_long_put lands in the wrapper (count and time kept), and the data
 * arrives through the pshmem_ name. */
#include <sys/time.h>

#include <pshmem.h>

#include "spec_check.h"

static double total_put_time = 0.0;
static double avg_put_time = 0.0;
static long put_count = 0;

static inline double get_wtime(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + (double)tv.tv_usec / 1.0e6;
}

void shmem_long_put(long *dest, const long *source, size_t nelems, int pe)
{
    double t_start = get_wtime();
    pshmem_long_put(dest, source, nelems, pe); /* the name-shifted call */
    total_put_time += get_wtime() - t_start;
    put_count += 1;
    avg_put_time = total_put_time / (double)put_count;
}

int main(void)
{
    static long dest[8];
    long src[8];
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    for (int i = 0; i < 8; i++)
        src[i] = 1000 * me + i;
    shmem_long_put(dest, src, 8, (me + 1) % npes);
    shmem_long_put(dest, src, 8, (me + 1) % npes);
    SPEC_CHECK(put_count == 2, "the wrapper saw %ld puts, want 2", put_count);
    SPEC_CHECK(total_put_time >= 0.0 && avg_put_time >= 0.0, "times %g %g", total_put_time,
               avg_put_time);
    shmem_barrier_all();
    int from = (me + npes - 1) % npes;
    for (int i = 0; i < 8; i++)
        SPEC_CHECK(dest[i] == 1000 * from + i, "dest[%d] = %ld", i, dest[i]);
    shmem_finalize();
    return 0;
}
