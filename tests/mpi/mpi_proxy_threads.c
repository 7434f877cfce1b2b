/* Several threads of each PE put large blocks (staged: header and payload
 * as two messages) into the same PE through the proxy at once: every payload
 * must land where its own header says, never swapped with another thread's.
 * 8 threads per PE; each thread of PE p writes random-sized blocks (8 KiB ..
 * 1.25 MiB) with contents of its own into its slot of every other PE, in
 * rounds (with one payload tag for all threads this failed 3 runs of 3); after each round every PE
 * checks every byte of every slot against the model. Without a GPU the test asks for
 * USHMEM_PROXY_HOST=1, so host memory of the other pretend host goes through the proxy. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define NT     8
#define SLOT   ((size_t)5 << 18) /* 1.25 MiB per (sender, thread) */
#define ROUNDS 10

static char *buf; /* [n_pes][NT][SLOT] */
static char *src[NT];
static int me, np, round_no;

static size_t len_of(int from, int t, int pe, int r)
{
    uint64_t x = test_mix(test_seed() ^ ((uint64_t)from << 40) ^ ((uint64_t)t << 32) ^
                          ((uint64_t)pe << 16) ^ (uint64_t)r);
    return 8192 + (size_t)(x % (SLOT - 8192));
}

static int tag_of(int from, int t, int r)
{
    return (from * NT + t) * 64 + r;
}

static void *writer(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int k = 1; k < np; k++) {
        int pe = (me + k) % np;
        size_t n = len_of(me, t, pe, round_no);
        shmem_putmem(buf + ((size_t)me * NT + (size_t)t) * SLOT, src[t], n, pe);
    }
    return NULL;
}

int main(void)
{
    if (!getenv("USHMEM_DEVICE"))
        setenv("USHMEM_PROXY_HOST", "1", 0);
    int provided = 0;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    CHECK(provided == SHMEM_THREAD_MULTIPLE, "SHMEM_THREAD_MULTIPLE not provided (%d)", provided);
    me = shmem_my_pe();
    np = shmem_n_pes();
    buf = shmem_calloc((size_t)np * NT, SLOT);
    CHECK(buf, "allocation failed");
    for (int t = 0; t < NT; t++)
        src[t] = malloc(SLOT);
    for (round_no = 0; round_no < ROUNDS; round_no++) {
        for (int t = 0; t < NT; t++)
            test_fill(src[t], SLOT, tag_of(me, t, round_no), round_no);
        shmem_barrier_all();
        pthread_t th[NT];
        for (int t = 0; t < NT; t++)
            CHECK(pthread_create(&th[t], NULL, writer, (void *)(intptr_t)t) == 0, "thread");
        for (int t = 0; t < NT; t++)
            pthread_join(th[t], NULL);
        shmem_barrier_all(); /* quiets every thread's puts */
        for (int from = 0; from < np; from++) {
            if (from == me)
                continue;
            for (int t = 0; t < NT; t++) {
                size_t n = len_of(from, t, me, round_no), bad = 0;
                const char *got = buf + ((size_t)from * NT + (size_t)t) * SLOT;
                CHECK(test_verify(got, n, tag_of(from, t, round_no), round_no, &bad),
                      "round %d: block of PE %d thread %d (%zu bytes) differs at byte %zu",
                      round_no, from, t, n, bad);
            }
        }
    }
    shmem_barrier_all();
    if (me == 0)
        printf("mpi_proxy_threads: %d PEs x %d threads x %d rounds of large puts: OK\n", np, NT,
               ROUNDS);
    for (int t = 0; t < NT; t++)
        free(src[t]);
    shmem_free(buf);
    shmem_finalize();
    return 0;
}
