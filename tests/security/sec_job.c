/* The job the stranger harness (tests/sh/test_security.sh) runs over and
 * over: init, every PE fills its part of the heap with a pattern of its own,
 * reads every other PE's whole part and checks it, then checks its own part
 * again (nobody else wrote into it). Exit 0 only if every byte was right. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define WORDS 4096

static uint64_t pattern(int pe, int i)
{
    return (uint64_t)pe << 48 ^ (uint64_t)i * 0x9e3779b97f4a7c15ull;
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), bad = 0;
    uint64_t *mine = shmem_malloc(WORDS * sizeof *mine);
    uint64_t *got = malloc(WORDS * sizeof *got);
    if (!mine || !got)
        shmem_global_exit(3);
    for (int i = 0; i < WORDS; i++)
        mine[i] = pattern(me, i);
    shmem_barrier_all();
    for (int pe = 0; pe < n; pe++) {
        shmem_getmem(got, mine, WORDS * sizeof *got, pe);
        for (int i = 0; i < WORDS; i++)
            bad += got[i] != pattern(pe, i);
    }
    shmem_barrier_all();
    for (int i = 0; i < WORDS; i++)
        bad += mine[i] != pattern(me, i);
    if (bad)
        fprintf(stderr, "sec_job: PE %d: %d words wrong\n", me, bad);
    shmem_free(mine);
    free(got);
    shmem_finalize();
    return bad ? 1 : 0;
}
