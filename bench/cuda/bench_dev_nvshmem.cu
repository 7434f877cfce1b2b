// NVSHMEM's device API on one GPU shared by 2 PEs: the same measurements as
// bench_dev_ushmem.cu (see there), printed the same way, so that
// bench/cuda/dev_table.py can put them side by side. This process forks the
// second PE before any CUDA call (unique-id bootstrap, as bench_nvshmem.cu and
// /work/shared/anchors/nvshmem_two_pes_one_gpu.cu); both use GPU 0.
// The rows that wait on the device run only under MPS (NVSHMEM's "full MPG":
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE summing to <= 100); otherwise they are
// skipped with a "# skipped:" line (DEV_BENCH_WAITS=1 forces them, =0 skips them).
// While PE 0 measures alone, PE 1 waits on a pipe, off the GPU.
// Build: nvcc -O2 -std=c++17 -arch=sm_90 -rdc=true -I$NVSHMEM/include bench_dev_nvshmem.cu
//        -L$NVSHMEM/lib -l:libnvshmem_host.so.3 -lnvshmem_device
// Run: NVSHMEM_SYMMETRIC_SIZE=3G NVSHMEM_DISABLE_NVLS=1 bench_dev_nvshmem [MAX_BW_BYTES]
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "dev_fadd.cuh"

static int g_me = -1;
static bool g_nvshmem_up = false;

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "bench_dev_nvshmem PE %d: %s:%d: %s: %s\n", g_me, __FILE__, __LINE__,  \
                    #x, cudaGetErrorString(e_));                                                   \
            fflush(NULL);                                                                          \
            if (g_nvshmem_up)                                                                      \
                nvshmem_global_exit(1);                                                            \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void die(const char *msg)
{
    fprintf(stderr, "bench_dev_nvshmem PE %d: %s\n", g_me, msg);
    fflush(NULL);
    if (g_nvshmem_up)
        nvshmem_global_exit(1);
    exit(1);
}

static const int kBlock = 512;       // threads of every "block" variant and of the put_bw CTAs
static const int kReps = 5;          // timed launches per number (the median is printed)
static const double kTargetMs = 20;  // one timed launch of a PE-0-only row lasts about this
static const int kPairIters = 10000; // iterations per launch of the rows both PEs run
static const int kPairWarm = 1000;

/* ---- kernels (the same loops as bench_dev_ushmem.cu) ---- */

// put + quiet latency (shmem_put_latency): G = 0 thread, 1 warp, 2 block. The
// group forms quiet as the perftest does: sync, one thread nvshmem_quiet, sync.
template <int G> __global__ void k_put_lat(char *dst, const char *src, size_t n, int pe, int iters)
{
    for (int i = 0; i < iters; i++) {
        if constexpr (G == 0) {
            nvshmem_putmem_nbi(dst, src, n, pe);
            nvshmem_quiet();
        } else if constexpr (G == 1) {
            nvshmemx_putmem_nbi_warp(dst, src, n, pe);
            __syncwarp();
            if ((threadIdx.x & 31) == 0)
                nvshmem_quiet();
            __syncwarp();
        } else {
            nvshmemx_putmem_nbi_block(dst, src, n, pe);
            __syncthreads();
            if (threadIdx.x == 0)
                nvshmem_quiet();
            __syncthreads();
        }
    }
}

// 64-bit fetch_add on the peer's word, one thread; the next increment depends
// on the fetched value (always 1), so each iteration is one full round trip.
__global__ void k_fadd(uint64_t *ctr, int pe, int iters, uint64_t *sink)
{
    uint64_t inc = 1, acc = 0;
    for (int i = 0; i < iters; i++) {
        uint64_t old = nvshmem_uint64_atomic_fetch_add(ctr, inc, pe);
        acc += old;
        inc = 1 + (old >> 63);
    }
    *sink = acc;
}

// p ping-pong (shmem_p_ping_pong_latency), flag values growing across launches.
__global__ void k_p_pingpong(uint64_t *flag, int me, int iters, uint64_t base)
{
    int peer = 1 - me;
    for (int i = 1; i <= iters; i++) {
        uint64_t v = base + (uint64_t)i;
        if (me == 0) {
            nvshmem_uint64_p(flag, v, peer);
            nvshmem_uint64_wait_until(flag, NVSHMEM_CMP_GE, v);
        } else {
            nvshmem_uint64_wait_until(flag, NVSHMEM_CMP_GE, v);
            nvshmem_uint64_p(flag, v, peer);
        }
    }
    nvshmem_quiet();
}

// put_signal ping-pong (shmem_put_signal_ping_pong_latency): 8 bytes with a
// signal SET, then wait for the peer's; G = 0 thread, 2 block (thread 0 waits).
template <int G> __device__ __forceinline__ void sig_wait(uint64_t *sig, uint64_t v)
{
    if constexpr (G == 0) {
        nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
    } else {
        if (threadIdx.x == 0)
            nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
        __syncthreads();
    }
}
template <int G>
__device__ __forceinline__ void sig_put(char *data, const char *src, uint64_t *sig, uint64_t v,
                                        int peer)
{
    if constexpr (G == 0)
        nvshmem_putmem_signal_nbi(data, src, 8, sig, v, NVSHMEM_SIGNAL_SET, peer);
    else
        nvshmemx_putmem_signal_nbi_block(data, src, 8, sig, v, NVSHMEM_SIGNAL_SET, peer);
}
template <int G>
__global__ void k_sig_pingpong(char *data, const char *src, uint64_t *sig, int me, int iters,
                               uint64_t base)
{
    int peer = 1 - me;
    for (int i = 1; i <= iters; i++) {
        uint64_t v = base + (uint64_t)i;
        if (me == 0) {
            sig_put<G>(data, src, sig, v, peer);
            sig_wait<G>(sig, v);
        } else {
            sig_wait<G>(sig, v);
            sig_put<G>(data, src, sig, v, peer);
        }
    }
    if constexpr (G != 0)
        __syncthreads();
    if (threadIdx.x == 0)
        nvshmem_quiet();
}

// barrier_all_block latency: 1 CTA per PE.
__global__ void k_barrier(int iters)
{
    for (int i = 0; i < iters; i++)
        nvshmemx_barrier_all_block();
}

// putmem_nbi_block bandwidth (shmem_put_bw, final quiet per CTA): CTA b puts
// its contiguous chunk [b*chunk, (b+1)*chunk) each iteration, then quiets.
__global__ void k_bw(char *dst, const char *src, size_t n, int pe, int iters)
{
    size_t nb = gridDim.x;
    size_t chunk = ((n + nb - 1) / nb + 15) & ~(size_t)15;
    size_t off = (size_t)blockIdx.x * chunk;
    size_t len = off < n ? (n - off < chunk ? n - off : chunk) : 0;
    if (len) {
        for (int i = 0; i < iters; i++)
            nvshmemx_putmem_nbi_block(dst + off, src + off, len, pe);
    }
    __syncthreads();
    if (threadIdx.x == 0)
        nvshmem_quiet();
    __syncthreads();
}

/* ---- a CPU barrier between the two forked PEs (pipes made before fork) ---- */

static int g_to1[2], g_to0[2]; // PE 0 -> PE 1, PE 1 -> PE 0

static void pipe_sync(void)
{
    char c = 0;
    if (g_me == 0) {
        if (write(g_to1[1], &c, 1) != 1 || read(g_to0[0], &c, 1) != 1)
            die("pipe barrier: the other PE is gone");
    } else {
        if (read(g_to1[0], &c, 1) != 1 || write(g_to0[1], &c, 1) != 1)
            die("pipe barrier: the other PE is gone");
    }
}

/* ---- timing ---- */

static cudaStream_t g_s;
static cudaEvent_t g_a, g_b;

template <typename F> static double timed_ms(F launch)
{
    CK(cudaEventRecord(g_a, g_s));
    launch();
    CK(cudaEventRecord(g_b, g_s));
    CK(cudaEventSynchronize(g_b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, g_a, g_b));
    return ms;
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// PE 0 alone: microseconds per iteration of launch(iters) on g_s, the median
// of kReps launches of about kTargetMs each (at least 3 iterations).
template <typename F> static double measure_us(F launch, long max_iters = 1000000)
{
    launch(1); // warm-up
    CK(cudaStreamSynchronize(g_s));
    double per = timed_ms([&] { launch(1); }) * 1e3;
    if (per < 1000)
        per = timed_ms([&] { launch(100); }) * 1e3 / 100;
    long it = per > 0 ? (long)(kTargetMs * 1e3 / per) : max_iters;
    it = std::max(3L, std::min(it, max_iters));
    std::vector<double> v;
    for (int r = 0; r < kReps; r++)
        v.push_back(timed_ms([&] { launch((int)it); }) * 1e3 / (double)it);
    return median(v);
}

// Both PEs: launch(iters, base) after a barrier; microseconds per iteration as
// PE 0's events saw it (median of kReps). base advances the same on both PEs.
template <typename F> static double measure_pair_us(F launch, uint64_t *base)
{
    pipe_sync();
    launch(kPairWarm, *base);
    *base += kPairWarm;
    CK(cudaStreamSynchronize(g_s));
    std::vector<double> v;
    for (int r = 0; r < kReps; r++) {
        pipe_sync();
        v.push_back(timed_ms([&] { launch(kPairIters, *base); }) * 1e3 / kPairIters);
        *base += kPairIters;
    }
    pipe_sync();
    return median(v);
}

// Kernels that wait on a peer: nvshmemx_collective_launch, as the perftests;
// if it fails, a plain launch (one CTA is always resident).
static bool g_coop = true;
static void launch_waiting(const void *kernel, unsigned threads, void **args)
{
    if (g_coop) {
        int rc = nvshmemx_collective_launch(kernel, dim3(1), dim3(threads), args, 0, g_s);
        if (rc == 0)
            return;
        (void)cudaGetLastError();
        g_coop = false;
        printf("# note: PE %d: nvshmemx_collective_launch failed (%d); plain launches from here "
               "on\n",
               g_me, rc);
        fflush(stdout);
    }
    CK(cudaLaunchKernel(kernel, dim3(1), dim3(threads), args, 0, g_s));
}

static void row(const char *bench, const char *variant, size_t bytes, double v)
{
    if (g_me == 0) {
        printf("R %s %s %zu %.3f\n", bench, variant, bytes, v);
        fflush(stdout);
    }
}

static int run(int rank, nvshmemx_uniqueid_t id, size_t maxbw)
{
    g_me = rank;
    const int me = rank;
    CK(cudaSetDevice(0));
    int mps = -1;
    // cudaDevAttrMpsEnabled (133, CUDA 12.x+); an older runtime rejects it: unknown (-1)
    if (cudaDeviceGetAttribute(&mps, (cudaDeviceAttr)133, 0) != cudaSuccess) {
        mps = -1;
        (void)cudaGetLastError();
    }
    const char *force = getenv("DEV_BENCH_WAITS");
    bool waits = mps == 1;
    if (force && *force)
        waits = *force == '1';

    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_set_attr_uniqueid_args(rank, 2, &id, &attr);
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0)
        die("nvshmemx_init_attr failed");
    g_nvshmem_up = true;
    if (nvshmem_my_pe() != rank || nvshmem_n_pes() != 2)
        die("unexpected PE numbering after nvshmemx_init_attr");
    if (me == 0) {
        cudaDeviceProp prop;
        CK(cudaGetDeviceProperties(&prop, 0));
        printf("# bench_dev_nvshmem: 2 PEs, CUDA device 0 (%s, %d SMs), MPS %d, "
               "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s, device waits %s\n",
               prop.name, prop.multiProcessorCount, mps,
               getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")
                   ? getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")
                   : "unset",
               waits ? "on" : "off");
        fflush(stdout);
    }

    CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
    CK(cudaEventCreate(&g_a));
    CK(cudaEventCreate(&g_b));

    char *dst = (char *)nvshmem_malloc(maxbw), *src = (char *)nvshmem_malloc(maxbw);
    uint64_t *small = (uint64_t *)nvshmem_malloc(4096);
    uint64_t *ctrs = (uint64_t *)nvshmem_malloc(kFaddBytes); // fetch_add targets
    if (!dst || !src || !small || !ctrs)
        die("nvshmem_malloc failed (NVSHMEM_SYMMETRIC_SIZE: 2 x MAX_BW_BYTES + 1G)");
    uint64_t *flag = small;             // p ping-pong flag
    uint64_t *sig = small + 16;         // put_signal ping-pong signal
    char *sdata = (char *)(small + 32); // put_signal ping-pong data (8 B)
    char *ssrc = (char *)(small + 48);  // its source (8 B)
    CK(cudaMemset(src, 1, maxbw));
    CK(cudaMemset(dst, 0, maxbw));
    CK(cudaMemset(small, 0, 4096));
    CK(cudaMemset(ctrs, 0, kFaddBytes));
    uint64_t *sink = NULL;
    CK(cudaMalloc(&sink, 64));
    CK(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    if (me == 0 && !nvshmem_ptr(dst, 1))
        printf("# note: nvshmem_ptr(dst, 1) is NULL: PE 1 is not reached by loads and stores\n");

    // put + quiet latency, 8 B .. 1 MiB, and fetch_add (PE 0; PE 1 waits on the pipe)
    if (me == 0) {
        static const size_t sizes[] = {8, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576};
        for (int g = 0; g < 3; g++) {
            for (size_t n : sizes) {
                double us = measure_us([&](int it) {
                    if (g == 0)
                        k_put_lat<0><<<1, 1, 0, g_s>>>(dst, src, n, 1, it);
                    else if (g == 1)
                        k_put_lat<1><<<1, 32, 0, g_s>>>(dst, src, n, 1, it);
                    else
                        k_put_lat<2><<<1, kBlock, 0, g_s>>>(dst, src, n, 1, it);
                    CK(cudaGetLastError());
                });
                row("put_lat", g == 0 ? "thread" : g == 1 ? "warp" : "block", n, us);
            }
        }
        // fetch_add on 16 words of PE 1 (dev_fadd.cuh, as bench_dev_ushmem)
        fadd_rows(
            ctrs,
            [&](uint64_t *ctr) {
                return measure_us([&](int it) {
                    k_fadd<<<1, 1, 0, g_s>>>(ctr, 1, it, sink);
                    CK(cudaGetLastError());
                });
            },
            row);
    }
    pipe_sync();

    // rows that wait on the device (both PEs)
    if (!waits) {
        if (me == 0) {
            printf("# skipped: %s\n",
                   mps == 1 ? "DEV_BENCH_WAITS=0"
                            : "not under MPS: NVSHMEM runs in limited MPG, where a device wait "
                              "between PEs on one GPU costs a time slice per hand-off");
            printf("#   (rows skipped: p_pingpong, put_signal_pingpong, barrier_all_lat)\n");
            fflush(stdout);
        }
    } else {
        uint64_t base = 0;
        int iters_arg = 0;
        uint64_t base_arg = 0;
        int me_arg = me;
        double us = measure_pair_us(
            [&](int it, uint64_t b) {
                iters_arg = it;
                base_arg = b;
                void *args[] = {(void *)&flag, (void *)&me_arg, (void *)&iters_arg,
                                (void *)&base_arg};
                launch_waiting((const void *)k_p_pingpong, 1, args);
            },
            &base);
        row("p_pingpong", "thread", 8, us);

        base = 0;
        for (int g = 0; g < 2; g++) {
            us = measure_pair_us(
                [&](int it, uint64_t b) {
                    iters_arg = it;
                    base_arg = b;
                    void *args[] = {(void *)&sdata,  (void *)&ssrc,      (void *)&sig,
                                    (void *)&me_arg, (void *)&iters_arg, (void *)&base_arg};
                    if (g == 0)
                        launch_waiting((const void *)k_sig_pingpong<0>, 1, args);
                    else
                        launch_waiting((const void *)k_sig_pingpong<2>, kBlock, args);
                },
                &base);
            row("put_signal_pingpong", g == 0 ? "thread" : "block", 8, us);
        }

        uint64_t unused = 0;
        us = measure_pair_us(
            [&](int it, uint64_t) {
                iters_arg = it;
                void *args[] = {(void *)&iters_arg};
                launch_waiting((const void *)k_barrier, kBlock, args);
            },
            &unused);
        row("barrier_all_lat", "block", 0, us);
    }
    CK(cudaStreamSynchronize(g_s));
    pipe_sync();

    // putmem_nbi_block bandwidth (PE 0)
    if (me == 0) {
        std::vector<size_t> sizes;
        for (size_t n = 1024; n <= maxbw; n *= 4)
            sizes.push_back(n);
        static const int ctas[] = {1, 8, 32, 132};
        for (int nc : ctas) {
            char variant[16];
            snprintf(variant, sizeof variant, "cta%d", nc);
            for (size_t n : sizes) {
                double us = measure_us([&](int it) {
                    k_bw<<<nc, kBlock, 0, g_s>>>(dst, src, n, 1, it);
                    CK(cudaGetLastError());
                });
                row("put_bw", variant, n, (double)n / us / 1e3);
            }
        }
    }
    CK(cudaDeviceSynchronize());
    pipe_sync();
    // PE 1: the largest put_bw size arrived (src is all 1s)
    if (me == 1) {
        size_t top = 1024;
        while (top * 4 <= maxbw)
            top *= 4;
        const size_t offs[3] = {0, top / 2, top - 1};
        for (size_t o : offs) {
            unsigned char c = 0;
            CK(cudaMemcpy(&c, dst + o, 1, cudaMemcpyDeviceToHost));
            if (c != 1)
                printf("# note: PE 1: put_bw data check failed: byte %zu is %u, not 1\n", o, c);
        }
        fflush(stdout);
    }
    nvshmem_barrier_all();
    if (me == 0) {
        printf("# done\n");
        fflush(stdout);
    }
    CK(cudaFree(sink));
    nvshmem_free(ctrs);
    nvshmem_free(small);
    nvshmem_free(src);
    nvshmem_free(dst);
    nvshmem_finalize();
    return 0;
}

int main(int argc, char **argv)
{
    size_t maxbw = argc > 1 ? strtoull(argv[1], NULL, 0) : ((size_t)1 << 30);
    if (maxbw < ((size_t)1 << 20))
        maxbw = (size_t)1 << 20; // the put_lat rows use 1 MiB of the buffers
    signal(SIGPIPE, SIG_IGN);    // a write to a gone PE's pipe fails (EPIPE) instead
    int p[2];
    if (pipe(p) || pipe(g_to1) || pipe(g_to0)) {
        perror("pipe");
        return 1;
    }
    fflush(NULL);
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    pid_t c = fork(); // before any CUDA call
    if (c < 0) {
        perror("fork");
        return 1;
    }
    if (c == 0) {
        close(p[1]);
        close(g_to1[1]);
        close(g_to0[0]);
        if (read(p[0], &id, sizeof id) != (ssize_t)sizeof id)
            return 1;
        return run(1, id, maxbw);
    }
    close(p[0]);
    close(g_to1[0]);
    close(g_to0[1]);
    if (nvshmemx_get_uniqueid(&id) != 0) {
        fprintf(stderr, "nvshmemx_get_uniqueid failed\n");
        kill(c, SIGKILL);
        waitpid(c, NULL, 0);
        return 1;
    }
    if (write(p[1], &id, sizeof id) != (ssize_t)sizeof id)
        return 1;
    int r = run(0, id, maxbw), st = 0;
    if (waitpid(c, &st, 0) != c)
        return 1;
    return r ? r : (WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}
