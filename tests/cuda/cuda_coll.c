/* Host-API collectives (shmem_broadcastmem, fcollectmem, alltoallmem, typed
 * reductions) on device-heap buffers, random data verified on every PE. */
#include "cuda_test.h"

#define NW 4096 /* 64-bit words per PE block */

static uint64_t seed_of(int pe)
{
    return test_mix(test_seed() ^ (uint64_t)(pe + 1) * 7777);
}

int main(void)
{
    if (tcu_load())
        return 77;
    shmem_init();
    int me = shmem_my_pe(), np = shmem_n_pes();
    CUstream s = tcu_stream();
    size_t bytes = NW * 8;
    uint64_t *src = shmem_malloc(bytes * (size_t)np); /* device heap (a device is bound) */
    uint64_t *dst = shmem_malloc(bytes * (size_t)np);
    CHECK(src && dst && tcu_is_device(src) && tcu_is_device(dst), "device allocations");

    /* broadcast from every root */
    for (int root = 0; root < np; root++) {
        tcu_fill(s, src, NW, seed_of(root) + (uint64_t)root);
        TCU(tcu.cuStreamSynchronize(s));
        CHECK(shmem_broadcastmem(SHMEM_TEAM_WORLD, dst, src, bytes, root) == 0, "broadcastmem");
        uint64_t *h = tcu_to_host(dst, bytes);
        for (size_t i = 0; i < NW; i++)
            CHECK(h[i] == tcu_fill_word(i, seed_of(root) + (uint64_t)root),
                  "broadcast from %d word %zu", root, i);
        free(h);
    }

    /* fcollect: block p comes from PE p */
    tcu_fill(s, src, NW, seed_of(me));
    TCU(tcu.cuStreamSynchronize(s));
    CHECK(shmem_fcollectmem(SHMEM_TEAM_WORLD, dst, src, bytes) == 0, "fcollectmem");
    uint64_t *h = tcu_to_host(dst, bytes * (size_t)np);
    for (int p = 0; p < np; p++)
        for (size_t i = 0; i < NW; i++)
            CHECK(h[(size_t)p * NW + i] == tcu_fill_word(i, seed_of(p)), "fcollect block %d", p);
    free(h);

    /* alltoall: block q of PE p's source is filled with seed(p) ^ q */
    for (int q = 0; q < np; q++)
        tcu_fill(s, src + (size_t)q * NW, NW, seed_of(me) ^ (uint64_t)q);
    TCU(tcu.cuStreamSynchronize(s));
    CHECK(shmem_alltoallmem(SHMEM_TEAM_WORLD, dst, src, bytes) == 0, "alltoallmem");
    h = tcu_to_host(dst, bytes * (size_t)np);
    for (int p = 0; p < np; p++)
        for (size_t i = 0; i < NW; i++)
            CHECK(h[(size_t)p * NW + i] == tcu_fill_word(i, seed_of(p) ^ (uint64_t)me),
                  "alltoall block from %d", p);
    free(h);

    /* reductions: sum and max of uint64 (wrapping sum), xor */
    tcu_fill(s, src, NW, seed_of(me));
    TCU(tcu.cuStreamSynchronize(s));
    CHECK(shmem_uint64_sum_reduce(SHMEM_TEAM_WORLD, dst, src, NW) == 0, "sum_reduce");
    h = tcu_to_host(dst, bytes);
    for (size_t i = 0; i < NW; i++) {
        uint64_t want = 0;
        for (int p = 0; p < np; p++)
            want += tcu_fill_word(i, seed_of(p));
        CHECK(h[i] == want, "sum word %zu", i);
    }
    free(h);
    CHECK(shmem_uint64_max_reduce(SHMEM_TEAM_WORLD, dst, src, NW) == 0, "max_reduce");
    h = tcu_to_host(dst, bytes);
    for (size_t i = 0; i < NW; i++) {
        uint64_t want = 0;
        for (int p = 0; p < np; p++) {
            uint64_t v = tcu_fill_word(i, seed_of(p));
            want = v > want ? v : want;
        }
        CHECK(h[i] == want, "max word %zu", i);
    }
    free(h);

    shmem_free(dst);
    shmem_free(src);
    if (me == 0)
        printf("cuda_coll: broadcast, fcollect, alltoall, sum/max reduce on device memory OK (%d "
               "PEs)\n",
               np);
    shmem_finalize();
    return 0;
}
