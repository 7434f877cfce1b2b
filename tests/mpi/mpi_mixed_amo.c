/* Mixed routing: some peers reached through shm (mapped), others through MPI.
 * Run under mpirun with USHMEM_FAKE_HOSTS=2 (PEs split into two pretend
 * hosts) or USHMEM_TRANSPORTS=mpi. Every PE hammers the same objects on every
 * PE (its own included) with several AMO kinds at once; the totals must be
 * exact, which holds only if all the job's atomics on one object go through
 * one mechanism (docs/mpi.md). Then RMA, signals, a lock and collectives
 * across the two kinds of peers. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

#define ROUNDS 300

static long counter;       /* fetch_add / add / inc from everyone */
static uint32_t counter32; /* 32-bit adds */
static long cas_counter;   /* incremented with compare-and-swap loops */
static uint64_t xor_word;  /* each PE flips its own bits: ends with all of them set */
static uint64_t sig;       /* signal_add from everyone */
static long lock;
static long locked_total; /* read-modify-write under the lock with get/put */

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(n <= 64, "at most 64 PEs (one xor bit each)");

    /* Routes: with pretend hosts, some peers are mapped and some are not. */
    int mapped = 0;
    for (int pe = 0; pe < n; pe++)
        mapped += shmem_ptr(&counter, pe) != NULL;
    if (me == 0)
        printf("PE 0: %d of %d PEs mapped (the rest through mpi)\n", mapped, n);
    CHECK(shmem_ptr(&counter, me) == &counter, "self is always mapped");

    shmem_barrier_all();
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < n; k++) {
            int pe = (me + k) % n;
            shmem_long_atomic_fetch_add(&counter, 2, pe);
            shmem_long_atomic_add(&counter, 3, pe);
            shmem_long_atomic_inc(&counter, pe);
            shmem_uint32_atomic_add(&counter32, 7, pe);
            long old = shmem_long_atomic_fetch(&cas_counter, pe), seen;
            while ((seen = shmem_long_atomic_compare_swap(&cas_counter, old, old + 1, pe)) != old)
                old = seen;
            if (r == 0)
                shmem_uint64_atomic_xor(&xor_word, 1ULL << me, pe);
            shmem_signal_add(&sig, 1, pe);
        }
    }
    shmem_barrier_all();
    long want = (long)ROUNDS * n * 6;
    CHECK(counter == want, "counter %ld, want %ld", counter, want);
    CHECK(counter32 == (uint32_t)(ROUNDS * n * 7), "counter32 %u", counter32);
    CHECK(cas_counter == (long)ROUNDS * n, "cas_counter %ld, want %ld", cas_counter,
          (long)ROUNDS * n);
    uint64_t all = n == 64 ? ~0ULL : (1ULL << n) - 1;
    CHECK(xor_word == all, "xor_word %llx", (unsigned long long)xor_word);
    CHECK(shmem_signal_fetch(&sig) == (uint64_t)ROUNDS * n, "signal %llu",
          (unsigned long long)shmem_signal_fetch(&sig));

    /* A lock (AMOs on PE 0) protecting a get-modify-put on PE n-1. */
    for (int r = 0; r < 20; r++) {
        shmem_set_lock(&lock);
        long v = shmem_long_g(&locked_total, n - 1);
        shmem_long_p(&locked_total, v + 1, n - 1);
        shmem_quiet();
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
    if (me == n - 1)
        CHECK(locked_total == 20L * n, "locked_total %ld, want %ld", locked_total, 20L * n);

    /* put-with-signal ring: the data is there when the signal is. */
    enum { N = 4096 };
    char *buf = shmem_malloc(N), *src = malloc(N);
    uint64_t *flag = shmem_calloc(1, sizeof *flag);
    int to = (me + 1) % n, from = (me + n - 1) % n;
    for (int r = 1; r <= 5; r++) {
        test_fill(src, N, me, r);
        shmem_putmem_signal_nbi(buf, src, N, flag, (uint64_t)r, SHMEM_SIGNAL_SET, to);
        shmem_quiet();
        shmem_signal_wait_until(flag, SHMEM_CMP_EQ, (uint64_t)r);
        size_t bad = 0;
        CHECK(test_verify(buf, N, from, r, &bad), "round %d: byte %zu from PE %d", r, bad, from);
        shmem_barrier_all();
    }

    /* A reduction and a broadcast over members of both kinds. */
    long *v = shmem_malloc(64 * sizeof *v), *s = shmem_malloc(64 * sizeof *s);
    for (int i = 0; i < 64; i++)
        v[i] = me + i;
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, s, v, 64);
    for (int i = 0; i < 64; i++)
        CHECK(s[i] == (long)n * (n - 1) / 2 + (long)n * i, "sum[%d] = %ld", i, s[i]);
    shmem_long_broadcast(SHMEM_TEAM_WORLD, s, v, 64, n - 1);
    for (int i = 0; i < 64; i++)
        CHECK(s[i] == n - 1 + i, "bcast[%d] = %ld", i, s[i]);

    shmem_free(v);
    shmem_free(s);
    shmem_free(flag);
    shmem_free(buf);
    free(src);
    if (me == 0)
        printf("PE 0: mixed-routing atomics exact over %d PEs\n", n);
    shmem_finalize();
    return 0;
}
