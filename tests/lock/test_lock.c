/* Distributed locks: a counter on another PE incremented non-atomically
 * (get, then put) inside the critical section by every PE must come out
 * exact; test_lock succeeds only on a free lock; two locks are independent;
 * the ticket counters wrap around 2^32 correctly.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include <sched.h>

#include "test_util.h"

#define ITERS 2000

static long lock_a, lock_b, lock_wrap;
static long counter_a, counter_b, counter_w;

static void bump(long *counter, int owner)
{
    long v = shmem_long_g(counter, owner);
    if (v % 7 == 0)
        sched_yield(); /* widen the window a broken lock would leave open */
    shmem_long_p(counter, v + 1, owner);
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int owner = n - 1;

    /* held lock: test_lock fails everywhere else, then succeeds after clear */
    if (me == 0)
        shmem_set_lock(&lock_a);
    shmem_barrier_all();
    if (me != 0)
        CHECK(shmem_test_lock(&lock_a) == 1, "test_lock took a held lock");
    shmem_barrier_all();
    if (me == 0)
        shmem_clear_lock(&lock_a);
    shmem_barrier_all();
    if (me == n - 1) {
        CHECK(shmem_test_lock(&lock_a) == 0, "test_lock on a free lock failed");
        shmem_clear_lock(&lock_a);
    }
    shmem_barrier_all();

    /* contention: set_lock on A, test_lock spinning on B */
    for (int i = 0; i < ITERS; i++) {
        shmem_set_lock(&lock_a);
        bump(&counter_a, owner);
        shmem_clear_lock(&lock_a);
        while (shmem_test_lock(&lock_b))
            sched_yield();
        bump(&counter_b, 0);
        shmem_clear_lock(&lock_b);
    }
    shmem_barrier_all();
    if (me == owner)
        CHECK(counter_a == (long)n * ITERS, "counter_a %ld, want %ld", counter_a, (long)n * ITERS);
    if (me == 0)
        CHECK(counter_b == (long)n * ITERS, "counter_b %ld, want %ld", counter_b, (long)n * ITERS);

    /* tickets about to wrap: free state with next == serving == 2^32 - 3 */
    if (me == 0)
        lock_wrap = (long)(0xfffffffdULL << 32 | 0xfffffffdULL);
    shmem_barrier_all();
    for (int i = 0; i < 50; i++) {
        shmem_set_lock(&lock_wrap);
        bump(&counter_w, owner);
        shmem_clear_lock(&lock_wrap);
    }
    shmem_barrier_all();
    if (me == owner)
        CHECK(counter_w == (long)n * 50, "counter_w %ld", counter_w);
    if (me == 0) {
        unsigned long w = (unsigned long)lock_wrap;
        CHECK((w >> 32) == (w & 0xffffffffUL), "wrapped lock not free: 0x%lx", w);
        CHECK(shmem_test_lock(&lock_wrap) == 0, "wrapped lock not free");
        shmem_clear_lock(&lock_wrap);
    }
    shmem_barrier_all();
    if (me == 0)
        printf("test_lock: OK (%d PEs)\n", n);
    shmem_finalize();
    return 0;
}
