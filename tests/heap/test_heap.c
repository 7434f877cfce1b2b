/* Symmetric heap: malloc/calloc/align/realloc/free semantics and errors.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include <stdint.h>

#include "test_util.h"
#include <shmemx.h>

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), np = shmem_n_pes();
    int to = (me + 1) % np, from = (me + np - 1) % np;

    CHECK(shmem_malloc(0) == NULL, "malloc(0) must return NULL");
    CHECK(shmem_align(3, 64) == NULL, "align(3) must fail");
    CHECK(shmem_align(0, 64) == NULL, "align(0) must fail");
    CHECK(shmem_calloc(SIZE_MAX / 2, 4) == NULL, "calloc overflow must fail");
    CHECK(shmem_malloc(SIZE_MAX - 4096) == NULL, "huge malloc must fail");

    /* symmetric: the same offset from the heap start on every PE, checked by
     * comparing the peer's idea of the address (through shmem_ptr) */
    char *blocks[32];
    size_t sizes[32];
    for (int i = 0; i < 32; i++) {
        sizes[i] = 1 + (size_t)((test_mix(test_seed() + (uint64_t)i) % 9000));
        blocks[i] =
            (i % 3 == 0) ? shmem_align((size_t)1 << (i % 13), sizes[i]) : shmem_malloc(sizes[i]);
        CHECK(blocks[i], "allocation %d of %zu failed", i, sizes[i]);
        if (i % 3 == 0)
            CHECK(((uintptr_t)blocks[i] & (((size_t)1 << (i % 13)) - 1)) == 0, "misaligned");
    }
    for (int i = 0; i < 32; i++) {
        test_fill(blocks[i], sizes[i], me, i);
        for (int j = 0; j < i; j++) /* no overlap */
            CHECK(blocks[i] + sizes[i] <= blocks[j] || blocks[j] + sizes[j] <= blocks[i],
                  "blocks %d and %d overlap", i, j);
    }
    shmem_barrier_all();
    for (int i = 0; i < 32; i++) {
        char *tmp = malloc(sizes[i]);
        shmem_getmem(tmp, blocks[i], sizes[i], to);
        CHECK(test_verify(tmp, sizes[i], to, i, NULL), "block %d content from PE %d", i, to);
        free(tmp);
    }
    shmem_barrier_all();
    for (int i = 0; i < 32; i += 2)
        shmem_free(blocks[i]);

    /* calloc zeroes even reused memory */
    long *z = shmem_calloc(1000, sizeof(long));
    CHECK(z, "calloc");
    for (int i = 0; i < 1000; i++)
        CHECK(z[i] == 0, "calloc not zero at %d", i);

    /* realloc keeps contents, grown and moved */
    int *r = shmem_malloc(100 * sizeof(int));
    for (int i = 0; i < 100; i++)
        r[i] = me * 1000 + i;
    r = shmem_realloc(r, 100000 * sizeof(int));
    CHECK(r, "realloc grow");
    for (int i = 0; i < 100; i++)
        CHECK(r[i] == me * 1000 + i, "realloc lost [%d]", i);
    shmem_barrier_all();
    shmem_int_p(&r[99999], me, to);
    shmem_barrier_all();
    CHECK(r[99999] == from, "realloc'd block not symmetric");
    r = shmem_realloc(r, 10 * sizeof(int));
    CHECK(r && r[9] == me * 1000 + 9, "realloc shrink");

    /* alignments above the page size hold, at the same offset on every PE */
    for (size_t al = 8192; al <= ((size_t)1 << 24); al <<= 4) {
        char *a = shmem_align(al, 100);
        CHECK(a && ((uintptr_t)a & (al - 1)) == 0, "shmem_align(%zu) gave %p", al, (void *)a);
        shmem_int_p((int *)a, me, to);
        shmem_barrier_all();
        CHECK(*(int *)a == from, "aligned block not symmetric");
        shmem_free(a);
    }
    CHECK(shmem_align((size_t)1 << 31, 64) == NULL, "alignment above 1 GiB must fail");

    /* exhaustion: NULL, and the heap still works afterwards */
    size_t big = (size_t)1 << 40;
    CHECK(shmem_malloc(big) == NULL, "1 TiB allocation succeeded");
    void *ok = shmem_malloc(1 << 20);
    CHECK(ok, "allocation after a failed one");

    /* double free and foreign pointers are reported, not corrupting */
    shmem_free(ok);
    shmem_free(ok);
    int local;
    shmem_free(&local);
    shmem_free(NULL);
    void *again = shmem_malloc(1 << 20);
    CHECK(again == ok, "heap state changed by bad frees (%p vs %p)", again, ok);
    shmem_free(again);

    /* deprecated names */
    long *old = shmalloc(64);
    CHECK(old, "shmalloc");
    old = shrealloc(old, 128);
    CHECK(old, "shrealloc");
    shfree(old);
    void *al = shmemalign(4096, 10);
    CHECK(al && ((uintptr_t)al & 4095) == 0, "shmemalign");
    shfree(al);
    void *h = shmem_malloc_with_hints(256, SHMEM_MALLOC_ATOMICS_REMOTE | SHMEMX_MALLOC_HOST);
    CHECK(h, "malloc_with_hints");
    shmem_free(h);

    shmem_free(r);
    shmem_free(z);
    for (int i = 1; i < 32; i += 2)
        shmem_free(blocks[i]);
    shmem_finalize();
    return 0;
}
