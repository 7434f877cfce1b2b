/* Local blocks (shmemx_malloc_local / shmemx_free_local / shmemx_heap_offset /
 * shmemx_heap_addr / shmemx_heap_local_part): each PE allocates alone, at offsets that differ from
 * PE to PE; peers that learn an offset write into the block (putmem, shmem_ptr stores, atomics, put
 * with signal) and every PE checks every byte it received. Also: the local part is kept out of the
 * collective arena, frees never wait for peers, 1000 alloc/free cycles leave nothing behind, bad
 * calls give their status. USHMEM_TEST_NPES: 1 2 3 4 */
#include "test_util.h"
#include <shmemx.h>
#include <stdint.h>

#define LOCAL_SIZE ((size_t)8 << 20)
#define ROUNDS     6
#define SPACERS    16

typedef struct {
    uint64_t off, size, ctr_off;
} card_t;

static uint64_t rnd(uint64_t *st)
{
    *st = test_mix(*st);
    return *st;
}

static char *peer_addr(uint64_t off)
{
    char *p = shmemx_heap_addr((size_t)off, SHMEMX_MALLOC_HOST);
    CHECK(p != NULL, "shmemx_heap_addr(%llu)", (unsigned long long)off);
    return p;
}

int main(void)
{
    setenv("USHMEM_LOCAL_HEAP_SIZE", "8M", 1);
    setenv("SHMEM_SYMMETRIC_SIZE", "64M", 1);
    shmem_init();
    int me = shmem_my_pe(), np = shmem_n_pes();
    int right = (me + 1) % np, left = (me - 1 + np) % np;
    uint64_t st = test_seed() ^ (uint64_t)me * 0x9e37;

    /* where the offsets travel: one card per PE per round, collective memory */
    card_t *cards = shmem_calloc((size_t)np * ROUNDS, sizeof *cards);
    uint64_t *sig = shmem_calloc(1, sizeof *sig);
    CHECK(cards && sig, "collective allocations");
    size_t coff;
    CHECK(shmemx_heap_offset(cards, &coff) == SHMEMX_MALLOC_HOST, "offset of a collective block");
    CHECK(shmemx_heap_addr(coff, 0) == (void *)cards, "addr(offset(p)) == p");

    /* where the local part lies: the same offset on every PE, at least the size
     * asked for (its start is rounded down to SHMEMX_LOCAL_ALIGN_MAX), above
     * every collective block */
    size_t part_off = 0, part_size = 0;
    CHECK(shmemx_heap_local_part(0, &part_off, &part_size) == SHMEMX_SUCCESS, "local part");
    CHECK(part_size >= LOCAL_SIZE && part_size < LOCAL_SIZE + SHMEMX_LOCAL_ALIGN_MAX,
          "local part of %zu bytes for %zu asked", part_size, LOCAL_SIZE);
    CHECK(coff + (size_t)np * ROUNDS * sizeof *cards <= part_off, "collective block in the part");
    static uint64_t part0;
    if (me == 0)
        part0 = part_off;
    shmem_barrier_all();
    CHECK(shmem_uint64_g(&part0, 0) == part_off, "PE 0's local part at %llu, this PE's at %zu",
          (unsigned long long)shmem_uint64_g(&part0, 0), part_off);

    /* a different number of spacers per PE: the blocks land at different offsets */
    void *spacer[SPACERS];
    int nspace = (int)(rnd(&st) % SPACERS);
    for (int i = 0; i < nspace; i++) {
        spacer[i] = shmemx_malloc_local(1 + rnd(&st) % 20000, 0, 0);
        CHECK(spacer[i] != NULL, "spacer %d", i);
    }

    for (int r = 0; r < ROUNDS; r++) {
        size_t size = 1 + (size_t)(rnd(&st) % 300000);
        size_t align = r == 0 ? 0 : (size_t)1 << (rnd(&st) % 21);
        char *blk = shmemx_malloc_local(size, align, 0);
        uint64_t *ctr = shmemx_malloc_local(sizeof *ctr, 8, SHMEMX_MALLOC_HOST);
        CHECK(blk && ctr, "round %d: local blocks of %zu bytes", r, size);
        CHECK(((uintptr_t)blk & (align ? align - 1 : 63)) == 0, "alignment %zu", align);
        /* not inside a collective block */
        CHECK((uintptr_t)blk >= (uintptr_t)(cards + np * ROUNDS) ||
                  (uintptr_t)blk + size <= (uintptr_t)cards,
              "local block overlaps the collective one");
        memset(blk, 0xEE, size);
        *ctr = 0;
        size_t off, ctr_off;
        CHECK(shmemx_heap_offset(blk, &off) == SHMEMX_MALLOC_HOST, "offset");
        CHECK(shmemx_heap_offset(ctr, &ctr_off) == SHMEMX_MALLOC_HOST, "offset");
        CHECK(shmemx_heap_addr(off, 0) == blk, "round trip");
        CHECK(off >= part_off && off + size <= part_off + part_size,
              "block [%zu, +%zu) outside the local part [%zu, +%zu)", off, size, part_off,
              part_size);
        card_t mine = {off, size, ctr_off};
        for (int pe = 0; pe < np; pe++)
            shmem_putmem(&cards[r * np + me], &mine, sizeof mine, pe);
        shmem_barrier_all();

        /* write the right neighbour's block: first half by putmem, the rest by
         * shmem_ptr stores where mapped (else putmem) */
        card_t rc = cards[r * np + right];
        char *dst = peer_addr(rc.off);
        char *src = malloc(rc.size);
        test_fill(src, rc.size, me, r);
        size_t half = rc.size / 2;
        shmem_putmem(dst, src, half, right);
        char *direct = shmem_ptr(dst, right);
        if (direct && test_all_mapped())
            memcpy(direct + half, src + half, rc.size - half);
        else
            shmem_putmem(dst + half, src + half, rc.size - half, right);
        /* every PE adds to every PE's counter */
        for (int pe = 0; pe < np; pe++)
            shmem_uint64_atomic_add((uint64_t *)peer_addr(cards[r * np + pe].ctr_off),
                                    (uint64_t)me + 1, pe);
        shmem_quiet();
        shmem_uint64_atomic_add(sig, 1, right);
        shmem_uint64_wait_until(sig, SHMEM_CMP_GE, (uint64_t)r + 1);
        shmem_barrier_all();
        size_t bad = 0;
        CHECK(test_verify(blk, size, left, r, &bad), "round %d: byte %zu of %zu from PE %d", r, bad,
              size, left);
        CHECK(*ctr == (uint64_t)np * (np + 1) / 2, "round %d: counter %llu", r,
              (unsigned long long)*ctr);
        free(src);
        shmem_barrier_all(); /* nobody still writes into blocks freed below */
        /* frees are local: PE 0 frees while the others are not in any call */
        if (me == 0 || r % 2)
            CHECK(shmemx_free_local(blk) == SHMEMX_SUCCESS, "free");
        CHECK(shmemx_free_local(ctr) == SHMEMX_SUCCESS, "free counter");
        if (!(me == 0 || r % 2))
            CHECK(shmemx_free_local(blk) == SHMEMX_SUCCESS, "free later");
        CHECK(shmemx_free_local(ctr) == SHMEMX_ERR_NOTFOUND, "double free");
    }

    /* put with signal into a local block */
    uint64_t *flag = shmemx_malloc_local(sizeof *flag, 0, 0);
    long *data = shmemx_malloc_local(64 * sizeof(long), 0, 0);
    CHECK(flag && data, "signal blocks");
    *flag = 0;
    size_t foff, doff;
    shmemx_heap_offset(flag, &foff);
    shmemx_heap_offset(data, &doff);
    card_t c = {doff, foff, 0};
    shmem_putmem(&cards[me], &c, sizeof c, left);
    shmem_barrier_all();
    long mine[64];
    for (int i = 0; i < 64; i++)
        mine[i] = (long)test_mix((uint64_t)me * 1000 + (uint64_t)i + test_seed());
    card_t rc = cards[right];
    shmem_putmem_signal(peer_addr(rc.off), mine, sizeof mine, (uint64_t *)peer_addr(rc.size), 7,
                        SHMEM_SIGNAL_SET, right);
    shmem_signal_wait_until(flag, SHMEM_CMP_EQ, 7);
    for (int i = 0; i < 64; i++)
        CHECK(data[i] == (long)test_mix((uint64_t)left * 1000 + (uint64_t)i + test_seed()),
              "signal data %d", i);
    shmem_barrier_all();
    shmemx_free_local(flag);
    shmemx_free_local(data);

    /* the collective arena ends below the local part: a collective block as
     * large as the heap minus less than the local part does not fit anywhere */
    void *huge = shmem_malloc(((size_t)64 << 20) - LOCAL_SIZE / 2);
    CHECK(huge == NULL, "collective allocation reached into the local part");

    /* 1000 cycles leave nothing behind: the whole local part, less the
     * spacers, is still free in one piece afterwards */
    for (int i = 0; i < nspace; i++)
        CHECK(shmemx_free_local(spacer[i]) == SHMEMX_SUCCESS, "spacer free");
    for (int i = 0; i < 1000; i++) {
        void *a = shmemx_malloc_local(1 + rnd(&st) % 100000, 0, 0);
        void *b = shmemx_malloc_local(1 + rnd(&st) % 100000, 256, 0);
        CHECK(a && b, "cycle %d", i);
        CHECK(shmemx_free_local(i % 2 ? a : b) == 0 && shmemx_free_local(i % 2 ? b : a) == 0,
              "cycle free %d", i);
    }
    void *all = shmemx_malloc_local(LOCAL_SIZE, 0, 0);
    CHECK(all != NULL, "the whole local part after the cycles");
    CHECK(shmemx_malloc_local(1, 0, 0) == NULL, "full local part gives NULL");
    CHECK(shmemx_free_local(all) == SHMEMX_SUCCESS, "free all");

    /* bad calls */
    CHECK(shmemx_malloc_local(0, 0, 0) == NULL, "size 0");
    CHECK(shmemx_malloc_local(8, 3, 0) == NULL, "alignment 3");
    CHECK(shmemx_malloc_local(8, (size_t)4 << 20, 0) == NULL, "alignment 4 MiB");
    CHECK(shmemx_free_local(NULL) == SHMEMX_SUCCESS, "free NULL");
    CHECK(shmemx_free_local(cards) == SHMEMX_ERR_NOTFOUND, "free of a collective block");
    CHECK(shmemx_free_local(&c) == SHMEMX_ERR_NOTFOUND, "free of a stack address");
    size_t o;
    CHECK(shmemx_heap_offset(&c, &o) == SHMEMX_ERR_NOTFOUND, "offset of a stack address");
    CHECK(shmemx_heap_offset(cards, NULL) == SHMEMX_ERR_INVALID, "NULL offset");
    CHECK(shmemx_heap_addr((size_t)1 << 40, 0) == NULL, "offset past the heap");
    CHECK(shmemx_heap_addr(0, SHMEMX_MALLOC_DEVICE) == NULL, "no device heap");
    CHECK(shmemx_heap_local_part(SHMEMX_MALLOC_DEVICE, &o, &o) == SHMEMX_ERR_NOTFOUND,
          "local part of no device heap");
    CHECK(shmemx_heap_local_part(0, NULL, &o) == SHMEMX_ERR_INVALID, "NULL offset");
    CHECK(shmemx_heap_local_part(0, &o, NULL) == SHMEMX_ERR_INVALID, "NULL size");

    shmem_free(sig);
    shmem_free(cards);
    shmem_finalize();
    return 0;
}
