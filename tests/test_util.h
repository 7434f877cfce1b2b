/* Helpers for multi-PE tests: a failed check prints "PE n: file:line: what"
 * and exits non-zero, which makes ushrun stop the whole job. */
#ifndef USHMEM_TEST_UTIL_H
#define USHMEM_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shmem.h>

/* Deterministic per-(pe, round) random bytes, so any PE can recompute what
 * another PE sent. Seeded from USHMEM_TEST_SEED or the date of the run. */
static inline uint64_t test_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static inline uint64_t test_seed(void)
{
    static uint64_t seed;
    if (!seed) {
        /* Different every job (ushrun's secret is random and the same on all
         * PEs); USHMEM_TEST_SEED replays a failing run. */
        const char *s = getenv("USHMEM_TEST_SEED");
        const char *secret = getenv("USHMEM_SECRET");
        if (s)
            seed = strtoull(s, NULL, 0);
        else if (secret)
            for (seed = 1469598103934665603ULL; *secret; secret++)
                seed = (seed ^ (unsigned char)*secret) * 1099511628211ULL;
        else
            seed = 0x5eed;
    }
    return seed;
}

static inline void test_fill(void *buf, size_t n, int pe, int round)
{
    uint64_t st = test_mix(test_seed() ^ ((uint64_t)pe << 32) ^ (uint64_t)round);
    unsigned char *b = buf;
    for (size_t i = 0; i < n; i++) {
        if (i % 8 == 0)
            st = test_mix(st);
        b[i] = (unsigned char)(st >> (8 * (i % 8)));
    }
}

static inline int test_verify(const void *buf, size_t n, int pe, int round, size_t *bad)
{
    unsigned char *want = malloc(n ? n : 1);
    test_fill(want, n, pe, round);
    const unsigned char *b = buf;
    int ok = 1;
    for (size_t i = 0; i < n; i++)
        if (b[i] != want[i]) {
            if (bad)
                *bad = i;
            ok = 0;
            break;
        }
    free(want);
    return ok;
}

/* Whether every PE maps every other PE's memory (one host, shm), so that
 * shmem_ptr works for all of them. False when the launch forces the mpi
 * transport (USHMEM_TRANSPORTS without shm) or splits the PEs into pretend
 * hosts (USHMEM_FAKE_HOSTS), as the tests/mpi runs of this suite do. */
static inline int test_all_mapped(void)
{
    const char *t = getenv("USHMEM_TRANSPORTS"), *f = getenv("USHMEM_FAKE_HOSTS");
    if (t && !strstr(t, "shm"))
        return shmem_n_pes() == 1;
    return !(f && atoi(f) > 1 && shmem_n_pes() > 1);
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", shmem_my_pe(), __FILE__, __LINE__, \
                    #cond);                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " (USHMEM_TEST_SEED=0x%llx)\n", (unsigned long long)test_seed());      \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#endif
