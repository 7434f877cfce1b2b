/* Device API, MoE-style dispatch (issue 20): every warp routes its tokens to
 * destination PEs, reserves a row there with a remote fetch_add, puts the row
 * (a warp put), quiets, then adds 1 to the destination's signal word. On one
 * host every peer is mapped; with USHMEM_FAKE_HOSTS=2 under mpirun the PEs of
 * the other pretend host go through the request ring and the staged proxy.
 *
 * Checked on every PE against a host model: the counter equals the number of
 * tokens routed here, the signal word too, and every received row is a token
 * some PE sent here, each exactly once, byte for byte. Also: host-API
 * fetch_adds on the same counters while the kernels run (one home for the
 * atomics: the totals stay exact), and a blocking get of every row back from
 * its destination through the device API. Random sizes per run (seeded). */
#include "dev_test.cuh"

#define ROW_BYTES 1024 /* a token's row: 16-byte header words then payload */
#define MAX_ROWS  8192

struct moe_cfg {
    int tokens;    /* per PE */
    int topk;      /* destinations per token */
    uint64_t seed; /* routing and contents */
    int row_words; /* 8-byte words per row used (<= ROW_BYTES / 8) */
};

/* Destination k of token t of PE src (distinct for k < topk when topk <= n). */
__host__ __device__ static inline int moe_dest(const moe_cfg &c, int src, int t, int k, int n)
{
    int first = (int)(dt_mix(c.seed ^ ((uint64_t)src << 32) ^ (uint64_t)t) % (uint64_t)n);
    return (first + k) % n;
}

/* Word i of the row of (src, t, k): word 0 names it, the rest are random. */
__host__ __device__ static inline uint64_t moe_word(const moe_cfg &c, int src, int t, int k, int i)
{
    if (i == 0)
        return ((uint64_t)(src + 1) << 40) | ((uint64_t)t << 8) | (uint64_t)k;
    return dt_mix(c.seed ^ ((uint64_t)src << 48) ^ ((uint64_t)t << 16) ^ ((uint64_t)k << 8) ^
                  (uint64_t)i);
}

/* One warp per token: lanes fill the row in a private staging buffer, lane 0
 * reserves the slot at the destination, the warp puts the row, the warp
 * quiets, lane 0 adds 1 to the destination's signal (odd tokens with the
 * relaxed signal, even ones with the release). */
__global__ void k_dispatch(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, moe_cfg c, uint64_t *rows,
                           unsigned long long *counter, uint64_t *signal, uint64_t *stage)
{
    const int lane = threadIdx.x & 31, warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int nwarps = (gridDim.x * blockDim.x) >> 5, me = d.my_pe, n = d.n_pes;
    uint64_t *my_stage = stage + (size_t)warp * (ROW_BYTES / 8);
    for (int t = warp; t < c.tokens; t += nwarps) {
        for (int k = 0; k < c.topk; k++) {
            int dst = moe_dest(c, me, t, k, n);
            for (int i = lane; i < c.row_words; i += 32)
                my_stage[i] = moe_word(c, me, t, k, i);
            __syncwarp();
            unsigned long long slot = 0;
            if (lane == 0)
                slot = shmemx_dev_atomic_fetch_add(d, counter, 1ULL, dst);
            slot = __shfl_sync(0xffffffffu, slot, 0);
            if (slot >= MAX_ROWS) {
                if (lane == 0)
                    printf("PE %d: slot %llu at PE %d beyond %d rows\n", me, slot, dst, MAX_ROWS);
                __trap();
            }
            shmemx_dev_putmem_warp(d, rows + slot * (ROW_BYTES / 8), my_stage,
                                   (size_t)c.row_words * 8, dst);
            shmemx_dev_quiet_warp(d);
            if (lane == 0 && (t & 1)) /* the quiet orders the row: a relaxed signal will do */
                shmemx_dev_signal_op_relaxed(d, signal, 1, SHMEMX_DEV_SIGNAL_ADD, dst);
            else if (lane == 0)
                shmemx_dev_signal_op(d, signal, 1, SHMEMX_DEV_SIGNAL_ADD, dst);
            __syncwarp();
        }
    }
    shmemx_dev_quiet(d);
}

/* Reads row r back from PE pe with a blocking get (thread form for small,
 * block form otherwise) into out. */
__global__ void k_fetch_rows(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, const uint64_t *rows,
                             int pe, int nrows, int row_words, uint64_t *out)
{
    for (int r = blockIdx.x; r < nrows; r += gridDim.x) {
        if (row_words <= 1) {
            if (threadIdx.x == 0)
                out[(size_t)r * (ROW_BYTES / 8)] =
                    shmemx_dev_g(d, rows + (size_t)r * (ROW_BYTES / 8), pe);
        } else {
            shmemx_dev_getmem_block(d, out + (size_t)r * (ROW_BYTES / 8),
                                    rows + (size_t)r * (ROW_BYTES / 8), (size_t)row_words * 8, pe);
        }
    }
}

int main(void)
{
    shmemx_dev_t d = dt_init();
    int me = shmem_my_pe(), np = shmem_n_pes();
    cudaStream_t s = dt_stream();
    uint64_t st = dt_seed() ^ 0x30e0ULL;
    for (int round = 0; round < 3; round++) {
        moe_cfg c;
        c.tokens = 64 + (int)(dt_rand(&st) % 449);
        c.topk = 1 + (int)(dt_rand(&st) % (uint64_t)(np < 2 ? 1 : 2));
        c.seed = dt_rand(&st);
        c.row_words = round == 2 ? 1 : 2 + (int)(dt_rand(&st) % (ROW_BYTES / 8 - 1));
        int host_adds = 1 + (int)(dt_rand(&st) % 64);
        /* the model: rows routed to me */
        int expect = 0;
        for (int src = 0; src < np; src++)
            for (int t = 0; t < c.tokens; t++)
                for (int k = 0; k < c.topk; k++)
                    expect += moe_dest(c, src, t, k, np) == me;
        DT_CHECK(expect + np * host_adds <= MAX_ROWS, "model: %d rows", expect);

        uint64_t *rows = (uint64_t *)shmem_calloc(MAX_ROWS, ROW_BYTES);
        unsigned long long *counter = (unsigned long long *)shmem_calloc(1, 8);
        uint64_t *signal = (uint64_t *)shmem_calloc(1, 8);
        DT_CHECK(rows && counter && signal, "shmem_calloc of %d rows", MAX_ROWS);
        uint64_t *stage, *back;
        CK(cudaMalloc(&stage, (size_t)64 * 4 * ROW_BYTES));
        CK(cudaMalloc(&back, (size_t)MAX_ROWS * ROW_BYTES));
        shmem_barrier_all();
        double t0 = dt_now();
        k_dispatch<<<64, 128, 0, s>>>(d, c, rows, counter, signal, stage);
        CK_LAUNCH();
        /* host-API atomics on the same counters meanwhile: they take slots
         * too (left unwritten), so the totals stay exact only if all
         * atomics of a word run in one place */
        for (int i = 0; i < host_adds; i++)
            for (int pe = 0; pe < np; pe++)
                (void)shmem_ulonglong_atomic_fetch_add(counter, 1ULL, (me + pe) % np);
        CK(cudaStreamSynchronize(s));
        double t1 = dt_now();
        shmem_barrier_all();

        unsigned long long got_count = 0;
        uint64_t got_signal = 0;
        CK(cudaMemcpy(&got_count, counter, 8, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(&got_signal, signal, 8, cudaMemcpyDeviceToHost));
        DT_CHECK(got_count == (unsigned long long)(expect + np * host_adds),
                 "round %d: counter %llu, want %d kernel rows + %d host adds", round, got_count,
                 expect, np * host_adds);
        DT_CHECK(got_signal == (uint64_t)expect, "round %d: signal %llu, want %d", round,
                 (unsigned long long)got_signal, expect);

        /* every row: a token routed here, once, every word right */
        size_t nslots = (size_t)got_count;
        uint64_t *h = (uint64_t *)malloc(nslots * ROW_BYTES);
        unsigned char *seen = (unsigned char *)calloc((size_t)np * c.tokens * c.topk, 1);
        DT_CHECK(h && seen, "malloc");
        CK(cudaMemcpy(h, rows, nslots * ROW_BYTES, cudaMemcpyDeviceToHost));
        int found = 0;
        for (size_t r = 0; r < nslots; r++) {
            const uint64_t *row = h + r * (ROW_BYTES / 8);
            if (row[0] == 0)
                continue; /* a slot a host fetch_add took */
            int src = (int)(row[0] >> 40) - 1, t = (int)((row[0] >> 8) & 0xffffffff),
                k = (int)(row[0] & 0xff);
            DT_CHECK(src >= 0 && src < np && t < c.tokens && k < c.topk &&
                         moe_dest(c, src, t, k, np) == me,
                     "round %d: row %zu names PE %d token %d k %d, not routed here", round, r, src,
                     t, k);
            size_t id = ((size_t)src * c.tokens + t) * c.topk + k;
            DT_CHECK(!seen[id], "round %d: token %d of PE %d (k %d) arrived twice", round, t, src,
                     k);
            seen[id] = 1;
            found++;
            for (int i = 1; i < c.row_words; i++)
                DT_CHECK(row[i] == moe_word(c, src, t, k, i),
                         "round %d: row %zu (PE %d token %d) word %d is 0x%llx, want 0x%llx", round,
                         r, src, t, i, (unsigned long long)row[i],
                         (unsigned long long)moe_word(c, src, t, k, i));
        }
        DT_CHECK(found == expect, "round %d: %d rows found, want %d", round, found, expect);

        /* read the next PE's rows back through the device API */
        int next = (me + 1) % np;
        unsigned long long next_count = 0;
        shmem_getmem(&next_count, counter, 8, next);
        DT_CHECK(next_count <= MAX_ROWS, "PE %d's counter %llu", next, next_count);
        uint64_t *direct = (uint64_t *)malloc(next_count * ROW_BYTES + 1);
        shmem_getmem(direct, rows, next_count * ROW_BYTES, next);
        k_fetch_rows<<<32, 128, 0, s>>>(d, rows, next, (int)next_count, c.row_words, back);
        CK_LAUNCH();
        CK(cudaStreamSynchronize(s));
        uint64_t *hb = (uint64_t *)malloc(next_count * ROW_BYTES + 1);
        CK(cudaMemcpy(hb, back, next_count * ROW_BYTES, cudaMemcpyDeviceToHost));
        for (size_t r = 0; r < next_count; r++)
            for (int i = 0; i < c.row_words; i++)
                DT_CHECK(hb[r * (ROW_BYTES / 8) + i] == direct[r * (ROW_BYTES / 8) + i],
                         "round %d: device get of PE %d's row %zu word %d: 0x%llx, host get "
                         "0x%llx",
                         round, next, r, i, (unsigned long long)hb[r * (ROW_BYTES / 8) + i],
                         (unsigned long long)direct[r * (ROW_BYTES / 8) + i]);
        printf("PE %d: PASS moe round %d: %d tokens x top-%d, %d-byte rows, %d rows here, "
               "%llu read back from PE %d (%s), dispatch %.2f ms\n",
               me, round, c.tokens, c.topk, c.row_words * 8, expect, next_count, next,
               shmem_ptr(rows, next) ? "mapped" : "through the proxy", (t1 - t0) * 1e3);
        fflush(stdout);
        free(hb);
        free(direct);
        free(seen);
        free(h);
        shmem_barrier_all();
        CK(cudaFree(back));
        CK(cudaFree(stage));
        shmem_free(signal);
        shmem_free(counter);
        shmem_free(rows);
    }
    CK(cudaStreamDestroy(s));
    printf("PE %d: PASS dev_moe\n", me);
    fflush(stdout);
    shmem_finalize();
    return 0;
}
