/* Unit test of the work-queue rule under MPS (src/transport/cuda/loader.c):
 * two contexts per PE share about 120 queues per GPU, so each asks for the
 * largest power of two up to 8 that fits the PEs per GPU. Exit 0 on pass. */
#include <stdio.h>
#include <stdlib.h>

#include "transport/cuda/cuda_api.h"

static int fails;

static void want(long pes, long gpus, long queues)
{
    long got = ushmemi_cuda_queues_for(pes, gpus);
    if (got != queues) {
        fprintf(stderr, "FAIL: %ld PEs on %ld GPUs: %ld queues, want %ld\n", pes, gpus, got,
                queues);
        fails++;
    }
    /* every context's queues together stay within the pool */
    long per_gpu = gpus > 1 ? (pes + gpus - 1) / gpus : pes;
    if (per_gpu <= 60 && got * 2 * per_gpu > 120) {
        fprintf(stderr, "FAIL: %ld PEs on %ld GPUs: %ld x 2 x %ld > 120\n", pes, gpus, got,
                per_gpu);
        fails++;
    }
}

int main(void)
{
    want(1, 1, 8);
    want(2, 1, 8);
    want(7, 1, 8);
    want(8, 1, 4); /* the H200 case that stalled with 8: 16 contexts x 8 = 128 */
    want(15, 1, 4);
    want(16, 1, 2);
    want(30, 1, 2);
    want(31, 1, 1);
    want(48, 1, 1);
    want(8, 8, 8); /* one PE per GPU: no reason to lower it */
    want(16, 8, 8);
    want(64, 8, 4);
    want(9, 0, 4); /* GPUs unknown: as one */
    for (long p = 1; p <= 60; p++)
        for (long g = 1; g <= 8; g++)
            want(p, g, ushmemi_cuda_queues_for(p, g));
    if (fails)
        return 1;
    printf("test_cuda_queues: OK\n");
    return 0;
}
