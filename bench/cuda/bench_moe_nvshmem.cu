// MoE-style dispatch and combine with NVSHMEM's device API: the workload,
// timing, check and output of bench_moe_ushmem.cu (see there; moe_common.cuh
// holds the shared part), with NVSHMEM's calls in the kernels:
//   nvshmem_uint64_atomic_fetch_add      for shmemx_dev_atomic_fetch_add
//   nvshmemx_putmem_nbi_warp             for shmemx_dev_putmem_nbi_warp
//   __syncthreads; thread 0 nvshmem_quiet for shmemx_dev_quiet_block (as
//                                        NVSHMEM's perftests quiet a block)
//   nvshmemx_signal_op                   for shmemx_dev_signal_op
//   nvshmem_signal_wait_until            for shmemx_dev_signal_wait_until
//   nvshmem_signal_fetch                 for shmemx_dev_signal_fetch
//   nvshmemx_putmem_signal_nbi_warp      for shmemx_dev_putmem_signal_nbi_warp
//   nvshmemx_barrier_all_block           for shmemx_dev_barrier_all_block
//   nvshmemx_collective_launch           for shmemx_collective_launch
// PES PEs (-n, or env NPES, default 2) all on GPU 0: this process forks PES-1
// children before touching CUDA and all start NVSHMEM with a unique id (as
// bench_dev_coll_nvshmem.cu). Run under MPS (NVSHMEM's full MPG:
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE summing to <= 100), as moe_run.sh does:
// the kernels wait on the device for the other PEs.
// Each PE's per-round times go to a shared mapping made before the fork; PE 0
// takes each round's largest over the PEs, as the ushmem program does.
// A PE that fails kills the others (PR_SET_PDEATHSIG), so a failure ends the run.
// Build: nvcc -O2 -std=c++17 -arch=sm_90 -rdc=true -I$NVSHMEM/include bench_moe_nvshmem.cu
//        -L$NVSHMEM/lib -l:libnvshmem_host.so.3 -lnvshmem_device
// Run: NVSHMEM_DISABLE_NVLS=1 bench_moe_nvshmem -n N [options]  (see moe_usage)
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "moe_common.cuh"

static int g_me = -1, g_np = 0;
static pid_t g_children[MOE_MAX_PES], g_parent;
static double *g_times;  // [pe][3 * rounds], mapped before the fork
static uint64_t *g_recs; // [pe][rounds][MOE_REC] phase records (moe_record), mapped likewise

static void die(const char *msg)
{
    fprintf(stderr, "bench_moe_nvshmem PE %d: %s\n", g_me, msg);
    fflush(NULL);
    if (g_me == 0) {
        for (int r = 1; r < g_np; r++)
            if (g_children[r] > 0)
                kill(g_children[r], SIGKILL);
    } else if (getppid() == g_parent) {
        kill(g_parent, SIGKILL); // the other children follow it (PR_SET_PDEATHSIG)
    }
    _exit(1);
}

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            char m_[256];                                                                          \
            snprintf(m_, sizeof m_, "%s:%d: %s: %s", __FILE__, __LINE__, #x,                       \
                     cudaGetErrorString(e_));                                                      \
            die(m_);                                                                               \
        }                                                                                          \
    } while (0)

/* ---- kernels (the same steps as bench_moe_ushmem.cu's) ---- */

__global__ void k_barrier(uint64_t *st)
{
    nvshmemx_barrier_all_block();
    if (threadIdx.x == 0)
        moe_stamp(st, MOE_ST_B_END, moe_now());
}

__global__ void __launch_bounds__(MOE_MAX_THREADS)
    k_dispatch(moe_cfg c, const float *x, float *rows, uint64_t *counter, uint64_t *sig,
               uint64_t cap, int *nrecv, uint64_t *st)
{
    __shared__ unsigned sent[MOE_MAX_PES];
    __shared__ uint64_t wend[MOE_MAX_THREADS / 32];
    if (threadIdx.x == 0)
        moe_stamp(st, MOE_ST_D_START, moe_now());
    const int lane = threadIdx.x & 31, me = nvshmem_my_pe(), n = c.npes;
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
                slot = nvshmem_uint64_atomic_fetch_add(counter, (uint64_t)1, dst);
            slot = __shfl_sync(0xffffffffu, slot, 0);
            if (slot >= cap) {
                if (lane == 0)
                    printf("bench_moe_nvshmem PE %d: slot %llu at PE %d beyond its %llu rows\n", me,
                           (unsigned long long)slot, dst, (unsigned long long)cap);
                __trap();
            }
            nvshmemx_putmem_nbi_warp(rows + slot * H, x + ((size_t)t * c.topk + k) * H,
                                     H * sizeof(float), dst);
            if (lane == 0)
                atomicAdd(&sent[dst], 1u);
        }
    }
    moe_warp_end(wend);
    __syncthreads(); // every warp's puts issued; sent[] is final
    if (threadIdx.x == 0) {
        nvshmem_quiet();
        moe_stamp(st, MOE_ST_D_QUIET, moe_now());
        moe_stamp(st, MOE_ST_D_ISSUED, moe_last_warp(wend));
        for (int i = 1; i <= n; i++) {
            const int p = (me + i) % n;
            nvshmemx_signal_op(sig + me, ((uint64_t)1 << 32) | sent[p], NVSHMEM_SIGNAL_ADD, p);
        }
        moe_stamp(st, MOE_ST_D_SIGNALLED, moe_now());
    }
    if (blockIdx.x == 0) {
        for (int p = threadIdx.x; p < n; p += blockDim.x)
            nvshmem_signal_wait_until(sig + p, NVSHMEM_CMP_GE, (uint64_t)gridDim.x << 32);
        __syncthreads();
        if (threadIdx.x == 0) {
            moe_stamp(st, MOE_ST_D_RECEIVED, moe_now());
            uint64_t total = 0;
            for (int p = 0; p < n; p++)
                total += nvshmem_signal_fetch(sig + p) & 0xffffffffu;
            *nrecv = (int)total;
        }
    }
}

__global__ void __launch_bounds__(MOE_MAX_THREADS)
    k_combine(moe_cfg c, const float *rows, const int *nrecv, float *back, uint64_t *csig,
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
                printf("bench_moe_nvshmem PE %d: received row %d names PE %d token %d k %d\n",
                       nvshmem_my_pe(), r, src, t, k);
            __trap();
        }
        nvshmemx_putmem_signal_nbi_warp(back + ((size_t)t * c.topk + k) * H, row, H * sizeof(float),
                                        csig, 1, NVSHMEM_SIGNAL_ADD, src);
    }
    moe_warp_end(wend);
    if (threadIdx.x == 0) {
        nvshmem_signal_wait_until(csig, NVSHMEM_CMP_GE, (uint64_t)c.tokens * c.topk);
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

static cudaStream_t g_s;

static void launch(const void *kernel, int blocks, int threads, void **args)
{
    if (nvshmemx_collective_launch(kernel, dim3(blocks), dim3(threads), args, 0, g_s) != 0)
        die("nvshmemx_collective_launch failed (-b BLOCKS x -T THREADS too many for this PE's "
            "share of the GPU?)");
}

static int run(int rank, nvshmemx_uniqueid_t id, moe_cfg c)
{
    g_me = rank;
    const int me = rank;
    CK(cudaSetDevice(0));
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (nvshmemx_set_attr_uniqueid_args(rank, g_np, &id, &attr) != 0)
        die("nvshmemx_set_attr_uniqueid_args failed");
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0)
        die("nvshmemx_init_attr failed");
    if (nvshmem_my_pe() != rank || nvshmem_n_pes() != g_np)
        die("NVSHMEM's PE numbering differs from the unique-id ranks");
    if (me == 0) {
        cudaDeviceProp prop;
        CK(cudaGetDeviceProperties(&prop, 0));
        const char *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
        printf("# bench_moe_nvshmem: %d PEs, CUDA device 0 (%s, %d SMs), "
               "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s; %d tokens x top-%d per PE, %d-byte rows, "
               "%d CTAs x %d threads, %d rounds after %d warm-up\n",
               c.npes, prop.name, prop.multiProcessorCount, pct ? pct : "unset", c.tokens, c.topk,
               c.hidden * 4, c.blocks, c.threads, c.rounds, c.warmup);
        fflush(stdout);
    }

    const std::vector<int> routes = moe_routes(c);
    const uint64_t cap = (uint64_t)moe_capacity(c, routes);
    const size_t H = (size_t)c.hidden, mine = (size_t)c.tokens * c.topk;
    const size_t row_bytes = H * sizeof(float);
    float *x = (float *)nvshmem_malloc(mine * row_bytes);
    float *rows = (float *)nvshmem_malloc(cap * row_bytes);
    float *back = (float *)nvshmem_malloc(mine * row_bytes);
    const size_t nsmall = (size_t)c.npes + 2; // counter, combine signal, dispatch signals
    uint64_t *small = (uint64_t *)nvshmem_malloc(nsmall * sizeof(uint64_t));
    if (!x || !rows || !back || !small) {
        char m[200];
        snprintf(m, sizeof m,
                 "nvshmem_malloc failed: the symmetric heap needs about %zu MiB "
                 "(NVSHMEM_SYMMETRIC_SIZE)",
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
    const int R = c.rounds;
    double *tmine = g_times + (size_t)me * 3 * R;
    void *bargs[] = {&st};
    uint64_t *rec_mine = g_recs + (size_t)me * R * MOE_REC;
    void *dargs[] = {&c, &x, &rows, &counter, &sig, (void *)&cap, &nrecv, &st};
    void *cargs[] = {&c, &rows, &nrecv, &back, &csig, &out, &st};
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
        nvshmem_barrier_all();
        launch((const void *)k_barrier, 1, 32, bargs);
        CK(cudaEventRecord(ev[0], g_s));
        launch((const void *)k_dispatch, c.blocks, c.threads, dargs);
        CK(cudaEventRecord(ev[1], g_s));
        launch((const void *)k_combine, c.blocks, c.threads, cargs);
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
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    nvshmem_barrier_all(); // every PE's times are in the mapping
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (me == 0) {
        static const char *const phase[3] = {"dispatch", "combine", "total"};
        for (int p = 0; p < 3; p++) {
            std::vector<double> v((size_t)R, 0.0);
            for (int pe = 0; pe < g_np; pe++)
                for (int i = 0; i < R; i++)
                    v[i] = std::max(v[i], g_times[((size_t)pe * 3 + p) * R + i]);
            moe_print(phase[p], c.npes, v);
        }
        moe_print_profile(c.npes, R, g_recs);
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
    nvshmem_free(small);
    nvshmem_free(back);
    nvshmem_free(rows);
    nvshmem_free(x);
    nvshmem_finalize();
    return 0;
}

int main(int argc, char **argv)
{
    moe_cfg c;
    if (!moe_parse(argc, argv, &c, true))
        return 2;
    g_np = c.npes;
    size_t tbytes = (size_t)g_np * 3 * c.rounds * sizeof(double);
    size_t rbytes = (size_t)g_np * c.rounds * MOE_REC * sizeof(uint64_t);
    g_times =
        (double *)mmap(NULL, tbytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    g_recs =
        (uint64_t *)mmap(NULL, rbytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_times == MAP_FAILED || g_recs == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    // Fork first, CUDA and NVSHMEM after (neither survives a fork).
    g_parent = getpid();
    int pipes[MOE_MAX_PES][2];
    fflush(NULL);
    for (int r = 1; r < g_np; r++) {
        if (pipe(pipes[r]) != 0) {
            perror("pipe");
            die("pipe failed");
        }
        pid_t ch = fork();
        if (ch < 0) {
            perror("fork");
            die("fork failed");
        }
        if (ch == 0) {
            g_me = r;
            if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != g_parent)
                _exit(1);
            nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
            if (read(pipes[r][0], &id, sizeof id) != (ssize_t)sizeof id)
                die("reading the unique id failed");
            return run(r, id, c);
        }
        g_children[r] = ch;
    }
    g_me = 0;
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (nvshmemx_get_uniqueid(&id) != 0)
        die("nvshmemx_get_uniqueid failed");
    for (int r = 1; r < g_np; r++)
        if (write(pipes[r][1], &id, sizeof id) != (ssize_t)sizeof id)
            die("writing the unique id failed");
    int rc = run(0, id, c);
    for (int r = 1; r < g_np; r++) {
        int st = 0;
        if (waitpid(g_children[r], &st, 0) != g_children[r] || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0) {
            fprintf(stderr, "bench_moe_nvshmem: PE %d failed (status 0x%x)\n", r, st);
            rc = 1;
        }
    }
    return rc;
}
