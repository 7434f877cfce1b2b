/* Spec example: shmem_ctx_create (dynamic task counters). Every PE holds a task counter;
 * each thread, on its own private context, takes tasks with fetch_inc from its own PE's
 * counter, then helps the next PE, and so on; a sum reduction totals the tasks done.
 * The spec uses an OpenMP parallel region; this uses NTHREADS pthreads (same logic,
 * no OpenMP runtime that the sanitizers cannot see). Checked: the total is
 * ntasks * npes, and every PE's counter went past ntasks. */
#include <pthread.h>

#include "spec_check.h"

#define NTHREADS 4

long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
long psync[SHMEM_REDUCE_SYNC_SIZE];

long task_cntr = 0;  /* next task counter */
long tasks_done = 0; /* tasks done by this PE */
long total_done = 0; /* total tasks done by all PEs */

static const long ntasks = 1024; /* tasks per PE */
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    (void)arg;
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    shmem_ctx_t ctx;
    int task_pe = me, pes_done = 0;
    long my_done = 0;
    int ret = shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx);
    SPEC_CHECK(ret == 0, "shmem_ctx_create(SHMEM_CTX_PRIVATE) returned %d", ret);
    /* tasks on all PEs, starting with ours; when one PE's are all taken, help the next */
    while (pes_done < npes) {
        long task = shmem_atomic_fetch_inc(ctx, &task_cntr, task_pe);
        while (task < ntasks) {
            my_done++; /* "perform task (task_pe, task)" */
            task = shmem_atomic_fetch_inc(ctx, &task_cntr, task_pe);
        }
        pes_done++;
        task_pe = (task_pe + 1) % npes;
    }
    shmem_ctx_destroy(ctx);
    pthread_mutex_lock(&done_lock); /* the spec's reduction(+ : tasks_done) */
    tasks_done += my_done;
    pthread_mutex_unlock(&done_lock);
    return NULL;
}

int main(void)
{
    int tl, i;
    for (i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    int rc = shmem_init_thread(SHMEM_THREAD_MULTIPLE, &tl);
    SPEC_CHECK(rc == 0 && tl == SHMEM_THREAD_MULTIPLE, "init_thread: rc %d, level %d", rc, tl);
    int npes = shmem_n_pes();
    pthread_t th[NTHREADS];
    for (i = 0; i < NTHREADS; i++)
        SPEC_CHECK(pthread_create(&th[i], NULL, worker, NULL) == 0, "pthread_create");
    for (i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    shmem_long_sum_to_all(&total_done, &tasks_done, 1, 0, 0, npes, pwrk, psync);
    SPEC_CHECK(total_done == ntasks * npes, "total_done %ld, want %ld", total_done, ntasks * npes);
    shmem_barrier_all(); /* every thread everywhere has stopped taking tasks */
    SPEC_CHECK(task_cntr >= ntasks, "task_cntr %ld", task_cntr);
    shmem_finalize();
    return 0;
}
