/* Spec example: SHMEM_CTX_INVALID (a library keeps one context per thread, created on
 * first use, falling back to a shared one and then to the default). Each thread puts
 * its share of this PE's buffers to every PE through its thread context. The spec uses
 * OpenMP; this uses NTHREADS pthreads with the same loop split. Checked: after a
 * barrier PE i's dst_bufs[s] holds PE s's fill, (s << 10) + the number of the thread
 * that filled and sent PE i's slice (i % NTHREADS). */
#include <pthread.h>
#include <stddef.h>

#include "spec_check.h"

#define NTHREADS 3

static _Thread_local shmem_ctx_t thread_ctx = SHMEM_CTX_INVALID;

static void lib_thread_register(void)
{
    if (thread_ctx == SHMEM_CTX_INVALID)
        if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &thread_ctx) && shmem_ctx_create(0, &thread_ctx))
            thread_ctx = SHMEM_CTX_DEFAULT;
}

static void lib_thread_unregister(void)
{
    if (thread_ctx != SHMEM_CTX_DEFAULT) {
        shmem_ctx_destroy(thread_ctx);
        thread_ctx = SHMEM_CTX_INVALID;
    }
}

static void lib_thread_putmem(void *dst, const void *src, size_t nbytes, int pe)
{
    shmem_ctx_putmem(thread_ctx, dst, src, nbytes, pe);
}

static int mype, npes;
static const int count = 1 << 15;
static int **src_bufs, **dst_bufs;
static pthread_barrier_t fill_done;

static void *thread_main(void *arg)
{
    int my_thrd = (int)(intptr_t)arg;
    /* the spec's "omp for": PE i's slice goes to thread i % NTHREADS */
    for (int i = my_thrd; i < npes; i += NTHREADS)
        for (int j = 0; j < count; j++)
            src_bufs[i][j] = (mype << 10) + my_thrd;
    pthread_barrier_wait(&fill_done); /* the implicit barrier after "omp for" */
    lib_thread_register();
    SPEC_CHECK(thread_ctx != SHMEM_CTX_INVALID, "no context for thread %d", my_thrd);
    for (int i = my_thrd; i < npes; i += NTHREADS)
        lib_thread_putmem(dst_bufs[mype], src_bufs[i], (size_t)count * sizeof(*src_bufs[i]), i);
    lib_thread_unregister();
    SPEC_CHECK(thread_ctx == SHMEM_CTX_INVALID || thread_ctx == SHMEM_CTX_DEFAULT,
               "context left registered");
    return NULL;
}

int main(void)
{
    int provided;
    if (shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided))
        return 1;
    SPEC_CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
    mype = shmem_my_pe();
    npes = shmem_n_pes();
    src_bufs = malloc((size_t)npes * sizeof(*src_bufs));
    dst_bufs = malloc((size_t)npes * sizeof(*dst_bufs));
    for (int i = 0; i < npes; i++) {
        src_bufs[i] = shmem_calloc((size_t)count, sizeof(*src_bufs[i]));
        SPEC_CHECK(src_bufs[i] != NULL, "shmem_calloc");
        dst_bufs[i] = shmem_calloc((size_t)count, sizeof(*dst_bufs[i]));
        SPEC_CHECK(dst_bufs[i] != NULL, "shmem_calloc");
    }
    pthread_barrier_init(&fill_done, NULL, NTHREADS);
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++)
        SPEC_CHECK(pthread_create(&th[t], NULL, thread_main, (void *)(intptr_t)t) == 0,
                   "pthread_create");
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&fill_done);
    shmem_barrier_all(); /* destroyed contexts completed their puts; all PEs are done */
    for (int s = 0; s < npes; s++)
        for (int j = 0; j < count; j++) {
            int v = dst_bufs[s][j];
            SPEC_CHECK((v >> 10) == s && (v & 1023) == mype % NTHREADS, "dst_bufs[%d][%d] = 0x%x",
                       s, j, v);
        }
    for (int i = 0; i < npes; i++) {
        shmem_free(dst_bufs[i]);
        shmem_free(src_bufs[i]);
    }
    free(dst_bufs);
    free(src_bufs);
    shmem_finalize();
    return 0;
}
