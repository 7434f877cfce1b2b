/* The stream API on host memory with no stream (NULL: "now", as the host API),
 * to every PE, the PEs of other hosts included (the mpi/mixed and mpi/proxy
 * runs put half the PEs on another pretend host): putmem_on_stream,
 * getmem_on_stream, putmem_signal_on_stream (ADD and SET), signal_op_on_stream
 * (ADD from every PE, SET to the right neighbour), quiet_on_stream,
 * barrier_all_on_stream and sync_all_on_stream. Random sizes and contents;
 * every PE checks every byte and the exact signal totals it received.
 * USHMEM_TEST_NPES: 1 2 4 */
#include <shmemx.h>

#include "test_util.h"

#define MAXB  4099 /* bytes per block (odd: no alignment assumed) */
#define ROUND 6

static int me, np;

static unsigned char byte_of(int from, int to, int r, size_t i)
{
    return (unsigned char)(test_mix(test_seed() ^ ((uint64_t)(unsigned)from << 40) ^
                                    ((uint64_t)(unsigned)to << 28) ^ ((uint64_t)r << 20) ^ i) >>
                           11);
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    np = shmem_n_pes();
    unsigned char *dst = shmem_malloc((size_t)np * MAXB);  /* block p: from PE p */
    unsigned char *sdst = shmem_malloc((size_t)np * MAXB); /* put_signal's blocks */
    unsigned char *src = shmem_malloc(MAXB);
    unsigned char *got = malloc(MAXB), *priv = malloc(MAXB);
    uint64_t *sig = shmem_calloc(3, sizeof(uint64_t)); /* [0] ADDs, [1] SET, [2] put_signal */
    CHECK(dst && sdst && src && got && priv && sig, "allocation failed");
    uint64_t want_add = 0;
    for (int r = 0; r < ROUND; r++) {
        size_t n = 1 + test_mix(test_seed() ^ (uint64_t)r) % MAXB; /* same on every PE */
        memset(dst, 0, (size_t)np * MAXB);
        memset(sdst, 0, (size_t)np * MAXB);
        shmemx_barrier_all_on_stream(NULL);
        for (int pe = 0; pe < np; pe++) {
            for (size_t i = 0; i < n; i++)
                priv[i] = byte_of(me, pe, r, i);
            shmemx_putmem_on_stream(dst + (size_t)me * MAXB, priv, n, pe, NULL);
            shmemx_putmem_signal_on_stream(sdst + (size_t)me * MAXB, priv, n, &sig[2], 1,
                                           SHMEM_SIGNAL_ADD, pe, NULL);
            shmemx_signal_op_on_stream(&sig[0], (uint64_t)(me + 1) * (uint64_t)(r + 1),
                                       SHMEM_SIGNAL_ADD, pe, NULL);
        }
        shmemx_signal_op_on_stream(&sig[1], ((uint64_t)r << 32) | (uint64_t)me, SHMEM_SIGNAL_SET,
                                   (me + 1) % np, NULL);
        shmemx_quiet_on_stream(NULL);
        shmemx_barrier_all_on_stream(NULL);
        for (int pe = 0; pe < np; pe++)
            want_add += (uint64_t)(pe + 1) * (uint64_t)(r + 1);
        CHECK(shmem_signal_fetch(&sig[0]) == want_add, "round %d: ADD total %llu, want %llu", r,
              (unsigned long long)shmem_signal_fetch(&sig[0]), (unsigned long long)want_add);
        uint64_t want_set = ((uint64_t)r << 32) | (uint64_t)((me + np - 1) % np);
        CHECK(shmem_signal_fetch(&sig[1]) == want_set, "round %d: SET %#llx, want %#llx", r,
              (unsigned long long)shmem_signal_fetch(&sig[1]), (unsigned long long)want_set);
        CHECK(shmem_signal_fetch(&sig[2]) == (uint64_t)np * (uint64_t)(r + 1),
              "round %d: put_signal count %llu, want %d", r,
              (unsigned long long)shmem_signal_fetch(&sig[2]), np * (r + 1));
        for (int pe = 0; pe < np; pe++)
            for (size_t i = 0; i < MAXB; i++) {
                unsigned char w = i < n ? byte_of(pe, me, r, i) : 0;
                CHECK(dst[(size_t)pe * MAXB + i] == w,
                      "round %d: byte %zu from PE %d: %#x, want %#x", r, i, pe,
                      dst[(size_t)pe * MAXB + i], w);
                CHECK(sdst[(size_t)pe * MAXB + i] == w,
                      "round %d: put_signal byte %zu from PE %d: %#x, want %#x", r, i, pe,
                      sdst[(size_t)pe * MAXB + i], w);
            }
        /* get every PE's source back, stream form */
        for (size_t i = 0; i < n; i++)
            src[i] = byte_of(me, -1, r, i);
        shmemx_sync_all_on_stream(NULL);
        for (int pe = 0; pe < np; pe++) {
            shmemx_getmem_on_stream(got, src, n, pe, NULL);
            for (size_t i = 0; i < n; i++)
                CHECK(got[i] == byte_of(pe, -1, r, i), "round %d: get byte %zu of PE %d: %#x", r, i,
                      pe, got[i]);
        }
        shmemx_barrier_all_on_stream(NULL);
    }
    shmem_free(sig);
    shmem_free(src);
    shmem_free(sdst);
    shmem_free(dst);
    free(got);
    free(priv);
    shmem_finalize();
    if (me == 0)
        printf("test_on_stream_host: %d PEs OK\n", np);
    return 0;
}
