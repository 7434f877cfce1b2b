/* Put/get between every pair of PEs with random data, on the heap and on
 * global arrays; typed, sized, strided, single-element and _nbi forms.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include "test_util.h"

#define MAXN (1 << 20)
static unsigned char global_dst[4096];    /* .bss */
static long global_longs[64] = {1, 2, 3}; /* .data */

static void check_putmem(unsigned char *dst, unsigned char *src, size_t n, int round)
{
    int me = shmem_my_pe(), np = shmem_n_pes();
    int to = (me + 1) % np, from = (me + np - 1) % np;
    test_fill(src, n, me, round);
    memset(dst, 0xee, n + 1);
    shmem_barrier_all();
    shmem_putmem(dst, src, n, to);
    shmem_barrier_all();
    size_t bad = 0;
    CHECK(test_verify(dst, n, from, round, &bad), "putmem %zu bytes from PE %d: byte %zu wrong", n,
          from, bad);
    CHECK(dst[n] == 0xee, "putmem %zu bytes wrote past the end", n);
    /* get the peer's source back */
    unsigned char *local = malloc(n + 1);
    shmem_getmem(local, src, n, to);
    CHECK(test_verify(local, n, to, round, &bad), "getmem %zu bytes from PE %d: byte %zu wrong", n,
          to, bad);
    free(local);
    shmem_barrier_all();
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), np = shmem_n_pes();
    int to = (me + 1) % np, from = (me + np - 1) % np;
    unsigned char *src = shmem_malloc(MAXN + 64);
    unsigned char *dst = shmem_malloc(MAXN + 64);
    CHECK(src && dst, "shmem_malloc failed");

    int round = 0;
    for (size_t n = 1; n <= MAXN; n = n * 3 + 1)
        check_putmem(dst, src, n, round++);
    check_putmem(dst, src, MAXN, round++);
    /* globals: .bss destination, heap source */
    check_putmem(global_dst, src, sizeof global_dst - 1, round++);

    /* zero-length transfers with NULL pointers are legal */
    shmem_putmem(NULL, NULL, 0, to);
    shmem_getmem(NULL, NULL, 0, to);
    shmem_putmem_nbi(NULL, NULL, 0, to);

    /* typed put/get and the C11 generic form on .data */
    long mine[64];
    test_fill(mine, sizeof mine, me, round);
    shmem_barrier_all();
    shmem_long_put(global_longs, mine, 64, to);
    shmem_barrier_all();
    CHECK(test_verify(global_longs, sizeof global_longs, from, round, NULL), "long_put on .data");
    round++;
    double dsrc[100], *dd = shmem_malloc(100 * sizeof(double));
    for (int i = 0; i < 100; i++)
        dsrc[i] = me * 1000.0 + i + 0.25;
    shmem_barrier_all();
    shmem_put(dd, dsrc, 100, to);
    shmem_barrier_all();
    for (int i = 0; i < 100; i++)
        CHECK(dd[i] == from * 1000.0 + i + 0.25, "generic put double[%d] = %f", i, dd[i]);
    double dget[100];
    shmem_get(dget, dd, 100, to);
    for (int i = 0; i < 100; i++)
        CHECK(dget[i] == me * 1000.0 + i + 0.25, "generic get double[%d] = %f", i, dget[i]);
    shmem_barrier_all();

    /* p/g */
    static int pval;
    static short sval;
    shmem_int_p(&pval, 7000 + me, to);
    shmem_p(&sval, (short)(300 + me), to);
    shmem_barrier_all();
    CHECK(pval == 7000 + from, "int_p got %d", pval);
    CHECK(sval == 300 + from, "generic p short got %d", sval);
    CHECK(shmem_int_g(&pval, to) == 7000 + me, "int_g");
    CHECK(shmem_g(&sval, to) == 300 + me, "generic g");
    shmem_barrier_all();

    /* sized puts/gets */
    uint64_t s64[16], *d64 = shmem_malloc(sizeof s64);
    uint16_t s16[16], *d16 = shmem_malloc(sizeof s16);
    unsigned char s128[16 * 16], *d128 = shmem_malloc(sizeof s128);
    test_fill(s64, sizeof s64, me, round);
    test_fill(s16, sizeof s16, me, round + 1);
    test_fill(s128, sizeof s128, me, round + 2);
    shmem_barrier_all();
    shmem_put64(d64, s64, 16, to);
    shmem_put16(d16, s16, 16, to);
    shmem_put128(d128, s128, 16, to);
    shmem_barrier_all();
    CHECK(test_verify(d64, sizeof s64, from, round, NULL), "put64");
    CHECK(test_verify(d16, sizeof s16, from, round + 1, NULL), "put16");
    CHECK(test_verify(d128, sizeof s128, from, round + 2, NULL), "put128");
    uint64_t g64[16];
    shmem_get64(g64, d64, 16, from);
    CHECK(test_verify(g64, sizeof g64, (from + np - 1) % np, round, NULL), "get64");
    round += 3;
    shmem_barrier_all();

    /* strided: every 3rd element of src to every 2nd of dest */
    int isrc[90], *idst = shmem_calloc(200, sizeof(int));
    for (int i = 0; i < 90; i++)
        isrc[i] = me * 100000 + i;
    shmem_barrier_all();
    shmem_int_iput(idst, isrc, 2, 3, 30, to);
    shmem_barrier_all();
    for (int i = 0; i < 60; i++) {
        int want = (i % 2 == 0) ? from * 100000 + (i / 2) * 3 : 0;
        CHECK(idst[i] == want, "iput idst[%d]=%d want %d", i, idst[i], want);
    }
    int iget[30];
    shmem_int_iget(iget, idst, 1, 2, 30, to);
    for (int i = 0; i < 30; i++)
        CHECK(iget[i] == me * 100000 + i * 3, "iget[%d]=%d", i, iget[i]);
    shmem_barrier_all();

    /* nbi + quiet */
    test_fill(src, 65536, me, round);
    shmem_barrier_all();
    for (int k = 0; k < 16; k++)
        shmem_putmem_nbi(dst + k * 4096, src + k * 4096, 4096, to);
    shmem_quiet();
    shmem_barrier_all();
    CHECK(test_verify(dst, 65536, from, round, NULL), "putmem_nbi");
    unsigned char *gl = malloc(65536);
    shmem_getmem_nbi(gl, src, 65536, to);
    shmem_quiet();
    CHECK(test_verify(gl, 65536, to, round, NULL), "getmem_nbi");
    free(gl);

    /* shmem_ptr gives a usable view of the peer's copy */
    unsigned char *peer = shmem_ptr(src, to);
    CHECK(peer != NULL || !test_all_mapped(), "shmem_ptr to a local-host peer is NULL");
    unsigned char want[64];
    test_fill(want, 64, to, round);
    CHECK(!peer || memcmp(peer, want, 64) == 0, "shmem_ptr view differs from the peer's data");
    CHECK(shmem_ptr(&global_longs[3], to) != NULL || !test_all_mapped(), "shmem_ptr on a global");
    CHECK(shmem_ptr(src, me) == src, "shmem_ptr to self");
    int stack_var = 0;
    CHECK(shmem_ptr(&stack_var, to) == NULL, "shmem_ptr on a stack address must be NULL");

    shmem_barrier_all();
    shmem_free(d128);
    shmem_free(d16);
    shmem_free(d64);
    shmem_free(idst);
    shmem_free(dd);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
