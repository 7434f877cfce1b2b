// MoE-style dispatch and combine with ushmem's device API (the workload of
// tests/cuda/dev_moe.cu, plus the way back), all PEs on one GPU under MPS;
// bench_moe_nvshmem.cu does the same with NVSHMEM (bench/cuda/moe_run.sh runs
// both at 2, 4 and 8 PEs). Workload, routing, row contents and the check live
// in moe_common.cuh, shared by the two.
//
// Each PE has TOKENS tokens; token t goes to TOPK PEs (moe_dest: a
// pseudo-random first PE and the next ones). A row is HIDDEN floats (1 KiB by
// default): a header naming it (PE, token, k, round) and a payload.
//  dispatch: each warp takes tokens in turn; per destination, lane 0 reserves a
//    row there with a remote fetch_add on that PE's counter, then the warp puts
//    the row into the reserved slot (putmem_nbi_warp). Each CTA then quiets
//    (quiet_block) and thread 0 adds (1 << 32) + rows-sent to word [me] of
//    every PE's signal array (shmemx_dev_signal_op_relaxed: the quiet orders
//    the rows, as NVSHMEM's nvshmemx_signal_op; MOE_SIGNAL=release in the
//    environment takes the release form shmemx_dev_signal_op instead). CTA 0
//    of each PE waits until every source's word reaches BLOCKS << 32 (all CTAs
//    of every PE have signalled): the rows it counts have arrived.
//  combine: each warp takes received rows in turn and puts each back into its
//    origin's slot (t * TOPK + k) with a signal add of 1 (putmem_signal_nbi_warp);
//    each CTA waits until TOPK * TOKENS rows are back, then all sum their share
//    of out[t] = sum over k of back[t][k] (float adds, in k order).
// A round: reset (counters, signals, buffers; untimed), host barrier, a device
// barrier kernel (barrier_all_block: the PEs start the timed kernels together),
// then event, dispatch kernel, event, combine kernel, event, on one stream.
// Per PE and round: dispatch = first-to-second event, combine = second-to-third,
// total = first-to-third. Each round's number is the largest over the PEs (the
// round is done when the slowest PE is); PE 0 prints one line per phase with
// best, mean, median, p90 and max over the ROUNDS timed rounds:
//   R moe_<dispatch|combine|total> np<N> best <µs> mean <µs> median <µs> p90 <µs> max <µs>
// Every round (warm-up too) is checked on every PE against the host model
// (moe_check: every received row byte for byte, the counter, the signals, every
// returned row, the sums); a wrong result ends the job with one line and a
// non-zero exit.
// The kernels wait on the device, so they need device waits allowed (under
// MPS at CUDA_MPS_ACTIVE_THREAD_PERCENTAGE <= 100 / PEs; elsewhere the program
// prints one "# skipped:" line and exits 0) and are started with
// shmemx_collective_launch (all CTAs resident; -b BLOCKS must fit this PE's
// share of the GPU).
// Run: USHMEM_DEVICE=0 ushrun --mps -n N bench_moe_ushmem [options]  (see moe_usage)
#include <cuda_runtime.h>
#include <string.h>
#include <shmemx.h>
#include <shmemx_device.cuh>

#define BENCH_NAME                "bench_moe_ushmem"
#define BENCH_GLOBAL_EXIT(status) shmem_global_exit(status)
#include "bench_util.cuh"

#include "moe_common.cuh"

#define DEVH const SHMEMX_GRID_CONSTANT shmemx_dev_t

/* ---- kernels ---- */

__global__ void k_barrier(DEVH d, uint64_t *st)
{
    shmemx_dev_barrier_all_block(d);
    if (threadIdx.x == 0)
        moe_stamp(st, MOE_ST_B_END, moe_now());
}

// sig: this PE's array of npes words, word [src] for PE src's rows; cap: the
// receive buffer's rows; nrecv: set to the rows received (for the combine).
__global__ void __launch_bounds__(MOE_MAX_THREADS)
    k_dispatch(DEVH d, moe_cfg c, const float *x, float *rows, uint64_t *counter, uint64_t *sig,
               uint64_t cap, int *nrecv, uint64_t *st, int release)
{
    __shared__ unsigned sent[MOE_MAX_PES];
    __shared__ uint64_t wend[MOE_MAX_THREADS / 32];
    if (threadIdx.x == 0)
        moe_stamp(st, MOE_ST_D_START, moe_now());
    const int lane = threadIdx.x & 31, me = d.my_pe, n = c.npes;
    const int warp = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    const int nwarps = (int)((gridDim.x * blockDim.x) >> 5);
    const size_t H = (size_t)c.hidden;
    for (int p = threadIdx.x; p < n; p += blockDim.x)
        sent[p] = 0;
    __syncthreads();
    for (int t = warp; t < c.tokens; t += nwarps) {
        for (int k = 0; k < c.topk; k++) {
            const int dst = moe_dest(c, me, t, k);
            uint64_t slot = 0;
            if (lane == 0)
                slot = shmemx_dev_atomic_fetch_add(d, counter, (uint64_t)1, dst);
            slot = __shfl_sync(0xffffffffu, slot, 0);
            if (slot >= cap) {
                if (lane == 0)
                    printf("bench_moe_ushmem PE %d: slot %llu at PE %d beyond its %llu rows\n", me,
                           (unsigned long long)slot, dst, (unsigned long long)cap);
                __trap();
            }
            shmemx_dev_putmem_nbi_warp(d, rows + slot * H, x + ((size_t)t * c.topk + k) * H,
                                       H * sizeof(float), dst);
            if (lane == 0)
                atomicAdd(&sent[dst], 1u);
        }
    }
    moe_warp_end(wend);
    shmemx_dev_quiet_block(d); // every warp's puts are complete; sent[] is final
    if (threadIdx.x == 0) {
        moe_stamp(st, MOE_ST_D_QUIET, moe_now());
        moe_stamp(st, MOE_ST_D_ISSUED, moe_last_warp(wend));
        for (int i = 1; i <= n; i++) {
            const int p = (me + i) % n;
            const uint64_t v = ((uint64_t)1 << 32) | sent[p];
            if (release)
                shmemx_dev_signal_op(d, sig + me, v, SHMEMX_DEV_SIGNAL_ADD, p);
            else
                shmemx_dev_signal_op_relaxed(d, sig + me, v, SHMEMX_DEV_SIGNAL_ADD, p);
        }
        moe_stamp(st, MOE_ST_D_SIGNALLED, moe_now());
    }
    if (blockIdx.x == 0) {
        for (int p = threadIdx.x; p < n; p += blockDim.x)
            shmemx_dev_signal_wait_until(d, sig + p, SHMEMX_DEV_CMP_GE, (uint64_t)gridDim.x << 32);
        __syncthreads();
        if (threadIdx.x == 0) {
            moe_stamp(st, MOE_ST_D_RECEIVED, moe_now());
            uint64_t total = 0;
            for (int p = 0; p < n; p++)
                total += shmemx_dev_signal_fetch(d, sig + p) & 0xffffffffu;
            *nrecv = (int)total;
        }
    }
}

__global__ void __launch_bounds__(MOE_MAX_THREADS)
    k_combine(DEVH d, moe_cfg c, const float *rows, const int *nrecv, float *back, uint64_t *csig,
              float *out, uint64_t *st)
{
    __shared__ uint64_t wend[MOE_MAX_THREADS / 32];
    if (threadIdx.x == 0)
        moe_stamp(st, MOE_ST_C_START, moe_now());
    const int warp = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    const int nwarps = (int)((gridDim.x * blockDim.x) >> 5);
    const size_t H = (size_t)c.hidden;
    const int nr = *nrecv;
    for (int r = warp; r < nr; r += nwarps) {
        const float *row = rows + (size_t)r * H;
        const int src = (int)row[0], t = (int)row[1], k = (int)row[2];
        if (src < 0 || src >= c.npes || t < 0 || t >= c.tokens || k < 0 || k >= c.topk) {
            if ((threadIdx.x & 31) == 0)
                printf("bench_moe_ushmem PE %d: received row %d names PE %d token %d k %d\n",
                       d.my_pe, r, src, t, k);
            __trap();
        }
        shmemx_dev_putmem_signal_nbi_warp(d, back + ((size_t)t * c.topk + k) * H, row,
                                          H * sizeof(float), csig, 1, SHMEMX_DEV_SIGNAL_ADD, src);
    }
    moe_warp_end(wend);
    if (threadIdx.x == 0) {
        shmemx_dev_signal_wait_until(d, csig, SHMEMX_DEV_CMP_GE, (uint64_t)c.tokens * c.topk);
        moe_stamp(st, MOE_ST_C_BACK, moe_now());
    }
    __syncthreads();
    if (threadIdx.x == 0)
        moe_stamp(st, MOE_ST_C_SENT, moe_last_warp(wend));
    const size_t total = (size_t)c.tokens * H;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const size_t t = e / H, i = e % H;
        float s = 0;
        for (int k = 0; k < c.topk; k++)
            s += back[(t * c.topk + k) * H + i];
        out[e] = s;
    }
}

/* ---- host ---- */

// The header declares shmemx_collective_launch for nvcc's host pass only.
template <typename K> static void launch(K *kernel, int blocks, int threads, void **args)
{
#if !defined(__CUDA_ARCH__)
    if (shmemx_collective_launch(kernel, dim3(blocks), dim3(threads), args, 0, g_s) != 0)
        die("shmemx_collective_launch failed (-b BLOCKS x -T THREADS too many for this PE's "
            "share of the GPU?)");
#endif
}

int main(int argc, char **argv)
{
    shmem_init();
    g_me = shmem_my_pe();
    const int me = g_me;
    moe_cfg c;
    if (!moe_parse(argc, argv, &c, false)) {
        shmem_finalize();
        return 2;
    }
    c.npes = shmem_n_pes();
    if (c.npes > MOE_MAX_PES)
        die("at most 64 PEs");
    shmemx_dev_t d;
    if (shmemx_dev_get(&d) != 0)
        die("shmemx_dev_get failed (no device heap? set USHMEM_DEVICE=0)");
    const char *sigform = getenv("MOE_SIGNAL");
    int release = sigform && strcmp(sigform, "release") == 0;
    if (sigform && !release && strcmp(sigform, "relaxed") != 0)
        die("MOE_SIGNAL: release or relaxed");
    const char *why = shmemx_dev_why();
    int dev = 0;
    CK(cudaGetDevice(&dev));
    if (me == 0) {
        cudaDeviceProp prop;
        CK(cudaGetDeviceProperties(&prop, dev));
        const char *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
        printf("# bench_moe_ushmem: %d PEs, CUDA device %d (%s, %d SMs), "
               "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s; %d tokens x top-%d per PE, %d-byte rows, "
               "%d CTAs x %d threads, %d rounds after %d warm-up; dispatch signals %s\n",
               c.npes, dev, prop.name, prop.multiProcessorCount, pct ? pct : "unset", c.tokens,
               c.topk, c.hidden * 4, c.blocks, c.threads, c.rounds, c.warmup,
               release ? "release" : "relaxed");
        fflush(stdout);
    }
    if (why) {
        if (me == 0)
            printf("# skipped: %s\n", why);
        shmem_finalize();
        return 0;
    }

    const std::vector<int> routes = moe_routes(c);
    const uint64_t cap = (uint64_t)moe_capacity(c, routes);
    const size_t H = (size_t)c.hidden, mine = (size_t)c.tokens * c.topk;
    const size_t row_bytes = H * sizeof(float);
    float *x = (float *)shmem_malloc(mine * row_bytes);
    float *rows = (float *)shmem_malloc(cap * row_bytes);
    float *back = (float *)shmem_malloc(mine * row_bytes);
    const size_t nsmall = (size_t)c.npes + 2; // counter, combine signal, dispatch signals
    uint64_t *small = (uint64_t *)shmem_malloc(nsmall * sizeof(uint64_t));
    const int R = c.rounds;
    double *tmine =
        (double *)shmem_malloc_with_hints(3 * (size_t)R * sizeof(double), SHMEMX_MALLOC_HOST);
    double *tmax =
        (double *)shmem_malloc_with_hints(3 * (size_t)R * sizeof(double), SHMEMX_MALLOC_HOST);
    // phase stamps: this PE's records of the timed rounds, and everyone's (PE 0 prints)
    const size_t nrec = (size_t)R * MOE_REC;
    uint64_t *rec_mine =
        (uint64_t *)shmem_malloc_with_hints(nrec * sizeof(uint64_t), SHMEMX_MALLOC_HOST);
    uint64_t *rec_all =
        (uint64_t *)shmem_malloc_with_hints(nrec * c.npes * sizeof(uint64_t), SHMEMX_MALLOC_HOST);
    if (!x || !rows || !back || !small || !tmine || !tmax || !rec_mine || !rec_all) {
        char m[200];
        snprintf(m, sizeof m,
                 "shmem_malloc failed: the device heap needs about %zu MiB "
                 "(USHMEM_DEVICE_HEAP_SIZE)",
                 ((2 * mine + cap) * row_bytes >> 20) + 1);
        die(m);
    }
    uint64_t *counter = small, *csig = small + 1, *sig = small + 2;
    float *out = NULL;
    int *nrecv = NULL;
    CK(cudaMalloc(&out, (size_t)c.tokens * row_bytes));
    CK(cudaMalloc(&nrecv, sizeof(int)));
    const size_t nst = (size_t)c.blocks * MOE_ST;
    uint64_t *st = NULL;
    std::vector<uint64_t> hst(nst);
    CK(cudaMalloc(&st, nst * sizeof(uint64_t)));
    CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
    cudaEvent_t ev[3];
    for (cudaEvent_t &e : ev)
        CK(cudaEventCreate(&e));

    moe_result g;
    g.sig.resize((size_t)c.npes);
    g.rows.resize(cap * H);
    g.back.resize(mine * H);
    g.out.resize((size_t)c.tokens * H);
    std::vector<uint64_t> hsmall(nsmall);
    char msg[512];
    int threads = c.threads;
    void *bargs[] = {(void *)&d, &st};
    void *dargs[] = {(void *)&d, &c,           &x,     &rows, &counter,
                     &sig,       (void *)&cap, &nrecv, &st,   &release};
    void *cargs[] = {(void *)&d, &c, &rows, &nrecv, &back, &csig, &out, &st};
    for (int r = 0; r < c.warmup + R; r++) {
        // untimed: reset, this round's rows, everyone ready
        CK(cudaMemsetAsync(small, 0, nsmall * sizeof(uint64_t), g_s));
        CK(cudaMemsetAsync(rows, 0, cap * row_bytes, g_s));
        CK(cudaMemsetAsync(back, 0, mine * row_bytes, g_s));
        CK(cudaMemsetAsync(out, 0, (size_t)c.tokens * row_bytes, g_s));
        CK(cudaMemsetAsync(nrecv, 0, sizeof(int), g_s));
        CK(cudaMemsetAsync(st, 0, nst * sizeof(uint64_t), g_s));
        moe_fill<<<64, 256, 0, g_s>>>(c, me, r, x);
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(g_s));
        shmem_barrier_all();
        launch(k_barrier, 1, 32, bargs);
        CK(cudaEventRecord(ev[0], g_s));
        launch(k_dispatch, c.blocks, threads, dargs);
        CK(cudaEventRecord(ev[1], g_s));
        launch(k_combine, c.blocks, threads, cargs);
        CK(cudaEventRecord(ev[2], g_s));
        CK(cudaStreamSynchronize(g_s));

        CK(cudaMemcpy(hsmall.data(), small, nsmall * sizeof(uint64_t), cudaMemcpyDeviceToHost));
        g.counter = hsmall[0];
        g.csig = hsmall[1];
        std::copy(hsmall.begin() + 2, hsmall.end(), g.sig.begin());
        CK(cudaMemcpy(g.rows.data(), rows, cap * row_bytes, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(g.back.data(), back, mine * row_bytes, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(g.out.data(), out, (size_t)c.tokens * row_bytes, cudaMemcpyDeviceToHost));
        if (moe_check(c, me, r, routes, g, msg, sizeof msg))
            die(msg);
        if (r >= c.warmup) {
            float a = 0, b = 0;
            CK(cudaEventElapsedTime(&a, ev[0], ev[1]));
            CK(cudaEventElapsedTime(&b, ev[1], ev[2]));
            const int i = r - c.warmup;
            tmine[i] = a * 1e3;
            tmine[R + i] = b * 1e3;
            tmine[2 * R + i] = (a + b) * 1e3;
            CK(cudaMemcpy(hst.data(), st, nst * sizeof(uint64_t), cudaMemcpyDeviceToHost));
            moe_record(hst.data(), c.blocks, rec_mine + (size_t)i * MOE_REC);
        }
    }
    shmem_barrier_all();
    shmem_double_max_reduce(SHMEM_TEAM_WORLD, tmax, tmine, 3 * (size_t)R);
    shmem_uint64_fcollect(SHMEM_TEAM_WORLD, rec_all, rec_mine, nrec);
    if (me == 0) {
        static const char *const phase[3] = {"dispatch", "combine", "total"};
        for (int p = 0; p < 3; p++)
            moe_print(phase[p], c.npes,
                      std::vector<double>(tmax + (size_t)p * R, tmax + (size_t)(p + 1) * R));
        moe_print_profile(c.npes, R, rec_all);
        printf("# checked: %d rounds on every PE, every row and sum\n", c.warmup + R);
        printf("# done\n");
        fflush(stdout);
    }
    for (cudaEvent_t &e : ev)
        CK(cudaEventDestroy(e));
    CK(cudaStreamDestroy(g_s));
    CK(cudaFree(st));
    CK(cudaFree(nrecv));
    CK(cudaFree(out));
    shmem_free(rec_all);
    shmem_free(rec_mine);
    shmem_free(tmax);
    shmem_free(tmine);
    shmem_free(small);
    shmem_free(back);
    shmem_free(rows);
    shmem_free(x);
    shmem_finalize();
    return 0;
}
