// ushmem's device API (include/shmemx_device.cuh) on one GPU shared by 2 PEs:
// the measurements of NVSHMEM's device perftests, repeated for NVSHMEM by
// bench_dev_nvshmem.cu (run both with bench/cuda/dev_run.sh). Run under ushrun
// with USHMEM_DEVICE=0 (and MPS at CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 for the
// rows that wait on the device; without it they are skipped, with one
// "# skipped:" line saying why). Each number is the median of 5 launches of one
// kernel that loops many iterations, timed with cudaEvents (as the perftests);
// PE 0 prints one line per number:
//   R <bench> <variant> <bytes> <value>     (value in us, or GB/s for *_bw)
// bench: floor (1-thread flag round trip between two streams of PE 0, no
// library), put_lat (putmem_nbi + quiet), p_pingpong, put_signal_pingpong,
// fetch_add_lat (one thread's dependent fetch_adds on 16 words of PE 1 4 KiB
// apart, whose times differ by word: variant thread the median, fastest and
// slowest), barrier_all_lat, put_bw (putmem_nbi_block, each CTA its own
// chunk, then quiet; variant ctaN), memcpy_bw (cudaMemcpyAsync to the peer's
// mapping, one per iteration, the baseline for put_bw).
// usage: bench_dev_ushmem [MAX_BW_BYTES (default 1 GiB)]
#include <cuda_runtime.h>
#include <shmemx.h>
#include <shmemx_device.cuh>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#define BENCH_NAME                "bench_dev_ushmem"
#define BENCH_GLOBAL_EXIT(status) shmem_global_exit(status)
#include "bench_util.cuh"
#include "bench_ushmem.cuh"
#include "dev_fadd.cuh"

static const int kBlock = 512;       // threads of every "block" variant and of the put_bw CTAs
static const int kReps = 5;          // timed launches per number (the median is printed)
static const double kTargetMs = 20;  // one timed launch of a PE-0-only row lasts about this
static const int kPairIters = 10000; // iterations per launch of the rows both PEs run
static const int kPairWarm = 1000;

#define DEVH const SHMEMX_GRID_CONSTANT shmemx_dev_t

/* ---- kernels ---- */

// The floor: one thread on each of two streams of one process ping-pong on two
// device words (st.release.sys / ld.acquire.sys), no library. err: set on a 5 s timeout.
__device__ __forceinline__ uint64_t fl_ld_acquire(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void fl_st_release(uint64_t *p, uint64_t v)
{
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ uint64_t fl_now(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__global__ void k_floor(uint64_t *mine, uint64_t *theirs, int iters, uint64_t base, int first,
                        int *err)
{
    for (int i = 1; i <= iters; i++) {
        uint64_t v = base + (uint64_t)i;
        if (first)
            fl_st_release(theirs, v);
        uint64_t t0 = 0;
        for (unsigned polls = 1; fl_ld_acquire(mine) < v; polls++) {
            if ((polls & 1023) == 0) {
                uint64_t t = fl_now();
                if (t0 == 0)
                    t0 = t;
                else if (t - t0 > 5000000000ull) {
                    atomicExch(err, 1);
                    return;
                }
            }
        }
        if (!first)
            fl_st_release(theirs, v);
    }
}

// put + quiet latency (shmem_put_latency): G = 0 thread, 1 warp, 2 block.
template <int G>
__global__ void k_put_lat(DEVH d, char *dst, const char *src, size_t n, int pe, int iters)
{
    for (int i = 0; i < iters; i++) {
        if constexpr (G == 0) {
            shmemx_dev_putmem_nbi(d, dst, src, n, pe);
            shmemx_dev_quiet(d);
        } else if constexpr (G == 1) {
            shmemx_dev_putmem_nbi_warp(d, dst, src, n, pe);
            shmemx_dev_quiet_warp(d);
        } else {
            shmemx_dev_putmem_nbi_block(d, dst, src, n, pe);
            shmemx_dev_quiet_block(d);
        }
    }
}

// 64-bit fetch_add on the peer's word, one thread; the next increment depends
// on the fetched value (always 1), so each iteration is one full round trip.
__global__ void k_fadd(DEVH d, uint64_t *ctr, int pe, int iters, uint64_t *sink)
{
    uint64_t inc = 1, acc = 0;
    for (int i = 0; i < iters; i++) {
        uint64_t old = shmemx_dev_atomic_fetch_add(d, ctr, inc, pe);
        acc += old;
        inc = 1 + (old >> 63);
    }
    *sink = acc;
}

// p ping-pong (shmem_p_ping_pong_latency): PE 0 sets PE 1's flag to v, PE 1
// waits for it and sets PE 0's; v grows across launches (never reset).
__global__ void k_p_pingpong(DEVH d, uint64_t *flag, int me, int iters, uint64_t base)
{
    int peer = 1 - me;
    for (int i = 1; i <= iters; i++) {
        uint64_t v = base + (uint64_t)i;
        if (me == 0) {
            shmemx_dev_p(d, flag, v, peer);
            shmemx_dev_wait_until(d, flag, SHMEMX_DEV_CMP_GE, v);
        } else {
            shmemx_dev_wait_until(d, flag, SHMEMX_DEV_CMP_GE, v);
            shmemx_dev_p(d, flag, v, peer);
        }
    }
    shmemx_dev_quiet(d);
}

// put_signal ping-pong (shmem_put_signal_ping_pong_latency): 8 bytes with a
// signal SET, then wait for the peer's; G = 0 thread, 2 block (thread 0 waits).
template <int G>
__device__ __forceinline__ void sig_wait(const shmemx_dev_t &d, uint64_t *sig, uint64_t v)
{
    if constexpr (G == 0) {
        shmemx_dev_signal_wait_until(d, sig, SHMEMX_DEV_CMP_GE, v);
    } else {
        if (threadIdx.x == 0)
            shmemx_dev_signal_wait_until(d, sig, SHMEMX_DEV_CMP_GE, v);
        __syncthreads();
    }
}
template <int G>
__device__ __forceinline__ void sig_put(const shmemx_dev_t &d, char *data, const char *src,
                                        uint64_t *sig, uint64_t v, int peer)
{
    if constexpr (G == 0)
        shmemx_dev_putmem_signal_nbi(d, data, src, 8, sig, v, SHMEMX_DEV_SIGNAL_SET, peer);
    else
        shmemx_dev_putmem_signal_nbi_block(d, data, src, 8, sig, v, SHMEMX_DEV_SIGNAL_SET, peer);
}
template <int G>
__global__ void k_sig_pingpong(DEVH d, char *data, const char *src, uint64_t *sig, int me,
                               int iters, uint64_t base)
{
    int peer = 1 - me;
    for (int i = 1; i <= iters; i++) {
        uint64_t v = base + (uint64_t)i;
        if (me == 0) {
            sig_put<G>(d, data, src, sig, v, peer);
            sig_wait<G>(d, sig, v);
        } else {
            sig_wait<G>(d, sig, v);
            sig_put<G>(d, data, src, sig, v, peer);
        }
    }
    if constexpr (G == 0)
        shmemx_dev_quiet(d);
    else
        shmemx_dev_quiet_block(d);
}

// barrier_all_block latency: 1 CTA per PE.
__global__ void k_barrier(DEVH d, int iters)
{
    for (int i = 0; i < iters; i++)
        shmemx_dev_barrier_all_block(d);
}

// putmem_nbi_block bandwidth (shmem_put_bw, final quiet per CTA): CTA b puts
// its contiguous chunk [b*chunk, (b+1)*chunk) each iteration, then quiets.
__global__ void k_bw(DEVH d, char *dst, const char *src, size_t n, int pe, int iters)
{
    size_t nb = gridDim.x;
    size_t chunk = ((n + nb - 1) / nb + 15) & ~(size_t)15;
    size_t off = (size_t)blockIdx.x * chunk;
    size_t len = off < n ? (n - off < chunk ? n - off : chunk) : 0;
    if (len) {
        for (int i = 0; i < iters; i++)
            shmemx_dev_putmem_nbi_block(d, dst + off, src + off, len, pe);
    }
    shmemx_dev_quiet_block(d);
}

static void row(const char *bench, const char *variant, size_t bytes, double v)
{
    if (g_me == 0) {
        printf("R %s %s %zu %.3f\n", bench, variant, bytes, v);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    size_t maxbw = argc > 1 ? strtoull(argv[1], NULL, 0) : ((size_t)1 << 30);
    if (maxbw < ((size_t)1 << 20))
        maxbw = (size_t)1 << 20; // the put_lat rows use 1 MiB of the buffers
    shmem_init();
    g_me = shmem_my_pe();
    const int me = g_me;
    if (shmem_n_pes() != 2)
        die("run with 2 PEs (ushrun -n 2)");
    shmemx_dev_t d;
    if (shmemx_dev_get(&d) != 0)
        die("shmemx_dev_get failed (no device heap? set USHMEM_DEVICE=0)");
    const char *why = shmemx_dev_why();
    const bool waits = why == NULL;
    int dev = -1, mps = -1;
    CK(cudaGetDevice(&dev));
    // cudaDevAttrMpsEnabled (133, CUDA 12.x+); an older runtime rejects it: unknown (-1)
    if (cudaDeviceGetAttribute(&mps, (cudaDeviceAttr)133, dev) != cudaSuccess) {
        mps = -1;
        (void)cudaGetLastError();
    }
    if (me == 0) {
        cudaDeviceProp prop;
        CK(cudaGetDeviceProperties(&prop, dev));
        printf("# bench_dev_ushmem: 2 PEs, CUDA device %d (%s, %d SMs), MPS %d, "
               "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s, device waits %s\n",
               dev, prop.name, prop.multiProcessorCount, mps,
               getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")
                   ? getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")
                   : "unset",
               waits ? "allowed" : "off");
        fflush(stdout);
    }

    CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
    CK(cudaEventCreate(&g_a));
    CK(cudaEventCreate(&g_b));

    char *dst = (char *)shmem_malloc(maxbw), *src = (char *)shmem_malloc(maxbw);
    uint64_t *small = (uint64_t *)shmem_malloc(4096);
    uint64_t *ctrs = (uint64_t *)shmem_malloc(kFaddBytes); // fetch_add targets
    if (!dst || !src || !small || !ctrs)
        die("shmem_malloc failed (USHMEM_DEVICE_HEAP_SIZE: 2 x MAX_BW_BYTES + 1G)");
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
    shmem_barrier_all();

    // 1. the floor (PE 0; PE 1 waits in the host barrier)
    if (me == 0) {
        cudaStream_t s2;
        CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
        uint64_t *f = NULL;
        int *err = NULL;
        CK(cudaMalloc(&f, 256));
        CK(cudaMalloc(&err, sizeof(int)));
        CK(cudaMemset(f, 0, 256));
        CK(cudaMemset(err, 0, sizeof(int)));
        CK(cudaDeviceSynchronize());
        uint64_t fbase = 0;
        auto pp = [&](int it) {
            k_floor<<<1, 1, 0, g_s>>>(f, f + 8, it, fbase, 1, err);
            CK(cudaGetLastError());
            k_floor<<<1, 1, 0, s2>>>(f + 8, f, it, fbase, 0, err);
            CK(cudaGetLastError());
            fbase += (uint64_t)it;
        };
        pp(kPairWarm);
        CK(cudaDeviceSynchronize());
        std::vector<double> v;
        for (int r = 0; r < kReps; r++) {
            v.push_back(timed_ms([&] { pp(kPairIters); }) * 1e3 / kPairIters);
            CK(cudaStreamSynchronize(s2));
        }
        int e = 0;
        CK(cudaMemcpy(&e, err, sizeof e, cudaMemcpyDeviceToHost));
        if (e)
            printf("# floor: a kernel timed out (5 s) waiting for the other stream\n");
        else
            row("floor", "flag_rtt", 0, median(v));
        CK(cudaFree(f));
        CK(cudaFree(err));
        CK(cudaStreamDestroy(s2));
    }
    shmem_barrier_all();

    // 2. put + quiet latency, 8 B .. 1 MiB (PE 0)
    if (me == 0) {
        static const size_t sizes[] = {8, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576};
        for (int g = 0; g < 3; g++) {
            for (size_t n : sizes) {
                double us = measure_us(
                    [&](int it) {
                        if (g == 0)
                            k_put_lat<0><<<1, 1, 0, g_s>>>(d, dst, src, n, 1, it);
                        else if (g == 1)
                            k_put_lat<1><<<1, 32, 0, g_s>>>(d, dst, src, n, 1, it);
                        else
                            k_put_lat<2><<<1, kBlock, 0, g_s>>>(d, dst, src, n, 1, it);
                        CK(cudaGetLastError());
                    },
                    kReps, kTargetMs);
                row("put_lat", g == 0 ? "thread" : g == 1 ? "warp" : "block", n, us);
            }
        }
        // 3. fetch_add latency (PE 0 on PE 1's words; dev_fadd.cuh)
        fadd_rows(
            ctrs,
            [&](uint64_t *ctr) {
                return measure_us(
                    [&](int it) {
                        k_fadd<<<1, 1, 0, g_s>>>(d, ctr, 1, it, sink);
                        CK(cudaGetLastError());
                    },
                    kReps, kTargetMs);
            },
            row);
    }
    shmem_barrier_all();

    // 4. rows that wait on the device (both PEs)
    if (!waits) {
        if (me == 0) {
            printf("# skipped: %s\n", why);
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
                void *args[] = {(void *)&d, (void *)&flag, (void *)&me_arg, (void *)&iters_arg,
                                (void *)&base_arg};
                launch_waiting(k_p_pingpong, 1, args);
            },
            &base, kPairWarm, kPairIters, kReps);
        row("p_pingpong", "thread", 8, us);

        base = 0; // the signal word starts at 0 too
        for (int g = 0; g < 2; g++) {
            us = measure_pair_us(
                [&](int it, uint64_t b) {
                    iters_arg = it;
                    base_arg = b;
                    void *args[] = {(void *)&d,       (void *)&sdata,  (void *)&ssrc,
                                    (void *)&sig,     (void *)&me_arg, (void *)&iters_arg,
                                    (void *)&base_arg};
                    if (g == 0)
                        launch_waiting(k_sig_pingpong<0>, 1, args);
                    else
                        launch_waiting(k_sig_pingpong<2>, kBlock, args);
                },
                &base, kPairWarm, kPairIters, kReps);
            row("put_signal_pingpong", g == 0 ? "thread" : "block", 8, us);
        }

        uint64_t unused = 0;
        us = measure_pair_us(
            [&](int it, uint64_t) {
                iters_arg = it;
                void *args[] = {(void *)&d, (void *)&iters_arg};
                launch_waiting(k_barrier, kBlock, args);
            },
            &unused, kPairWarm, kPairIters, kReps);
        row("barrier_all_lat", "block", 0, us);
    }
    CK(cudaStreamSynchronize(g_s));
    shmem_barrier_all();

    // 5. putmem_nbi_block bandwidth and the cudaMemcpyAsync baseline (PE 0)
    if (me == 0) {
        void *peer = shmem_ptr(dst, 1);
        if (!peer)
            die("shmem_ptr(dst, 1) is NULL: PE 1's device heap is not mapped here");
        std::vector<size_t> sizes;
        for (size_t n = 1024; n <= maxbw; n *= 4)
            sizes.push_back(n);
        static const int ctas[] = {1, 8, 32, 132};
        for (int nc : ctas) {
            char variant[16];
            snprintf(variant, sizeof variant, "cta%d", nc);
            for (size_t n : sizes) {
                double us = measure_us(
                    [&](int it) {
                        k_bw<<<nc, kBlock, 0, g_s>>>(d, dst, src, n, 1, it);
                        CK(cudaGetLastError());
                    },
                    kReps, kTargetMs);
                row("put_bw", variant, n, (double)n / us / 1e3);
            }
        }
        for (size_t n : sizes) {
            double us = measure_us(
                [&](int it) {
                    for (int i = 0; i < it; i++)
                        CK(cudaMemcpyAsync(peer, src, n, cudaMemcpyDeviceToDevice, g_s));
                },
                kReps, kTargetMs, 20000);
            row("memcpy_bw", "d2d", n, (double)n / us / 1e3);
        }
    }
    CK(cudaDeviceSynchronize());
    shmem_barrier_all();
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
    shmem_barrier_all();
    if (me == 0) {
        printf("# done\n");
        fflush(stdout);
    }
    CK(cudaFree(sink));
    shmem_free(ctrs);
    shmem_free(small);
    shmem_free(src);
    shmem_free(dst);
    shmem_finalize();
    return 0;
}
