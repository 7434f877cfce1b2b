// ushmem's device collectives (shmemx_device_coll.cuh), block form, one CTA of
// 512 threads per PE, all PEs on one GPU: alltoall, broadcast, fcollect, float
// sum reduction and alltoallv (equal counts), 8 B .. COLL_MAX (4 MiB) per PE.
// bench_dev_coll_nvshmem.cu measures NVSHMEM's nvshmemx_*_block the same way
// (bench/cuda/dev_run.sh runs both). Run under ushrun -n N with
// USHMEM_DEVICE=0, under MPS at CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = 100 / N
// (ushrun --mps): the collectives wait on the device (elsewhere the program
// prints one "# skipped:" line and exits 0).
// Each number: one kernel per PE looping ITERS collectives back to back on the
// same buffers (ITERS so that a launch lasts about 20 ms, the same on every
// PE), timed with cudaEvents on PE 0; the median of 5 launches, in µs per
// collective. Before timing, each collective's result is checked once at the
// size (every PE, every byte). PE 0 prints one line per number:
//   R coll_<name> block<N> <bytes per PE> <µs>
// bytes per PE: alltoall(v): the block each PE sends each PE; broadcast: the
// message; fcollect: each PE's part; sum: the array (floats).
// usage: bench_dev_coll   (env COLL_MAX, COLL_OPS=alltoall,broadcast,fcollect,sum,alltoallv)
#include <cuda_runtime.h>
#include <shmemx.h>
#include <shmemx_device.cuh>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#define BENCH_NAME                "bench_dev_coll"
#define BENCH_GLOBAL_EXIT(status) shmem_global_exit(status)
#include "bench_util.cuh"

static int g_np = 0;

static const int kBlock = 512;
static const int kReps = 5;
static const double kTargetUs = 20000;

enum { C_ALLTOALL, C_BROADCAST, C_FCOLLECT, C_SUM, C_ALLTOALLV, C_COUNT };
static const char *const c_name[C_COUNT] = {"alltoall", "broadcast", "fcollect", "sum",
                                            "alltoallv"};

#define DEVH const SHMEMX_GRID_CONSTANT shmemx_dev_t

// iters collectives of kind C, b bytes per PE, back to back on the same buffers:
// one kernel per collective, as a program calls one (one kernel holding all
// five needed over 128 registers a thread and spilled).
// off: alltoallv's offsets and counts in bytes (3 x npes: dest, source, count).
template <int C>
__global__ void __launch_bounds__(kBlock)
    k_coll(DEVH d, char *dst, const char *src, size_t b, const size_t *off, int iters)
{
    const int n = shmemx_dev_n_pes(d);
    for (int i = 0; i < iters; i++) {
        switch (C) {
        case C_ALLTOALL: shmemx_dev_alltoallmem_block(d, dst, src, b); break;
        case C_BROADCAST: shmemx_dev_broadcastmem_block(d, dst, src, b, 0); break;
        case C_FCOLLECT: shmemx_dev_fcollectmem_block(d, dst, src, b); break;
        case C_SUM:
            shmemx_dev_float_sum_reduce_block(d, (float *)dst, (const float *)src, b / 4);
            break;
        default: shmemx_dev_alltoallvmem_block(d, dst, off, src, off + n, off + 2 * n); break;
        }
    }
}

// src byte k of PE p: a pattern; sum: small integers (exact in float).
__host__ __device__ static inline uint8_t pat(int p, size_t k)
{
    return (uint8_t)((k * 131 + (size_t)p * 17 + (k >> 9)) % 251 + 1);
}
__host__ __device__ static inline float fpat(int p, size_t k)
{
    return (float)((int)((k * 7 + (size_t)p * 3) % 61) - 30);
}
__global__ void k_fill(char *src, size_t bytes, int p, int c)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < bytes; k += stride) {
        if (c == C_SUM) {
            if (k % 4 == 0)
                ((float *)src)[k / 4] = fpat(p, k / 4);
        } else {
            src[k] = (char)pat(p, k);
        }
    }
}

static void launch(int c, char *dst, const char *src, size_t b, const size_t *off, int iters,
                   shmemx_dev_t *d)
{
    void *args[] = {(void *)d, &dst, &src, &b, &off, &iters};
    static const void *const kernels[C_COUNT] = {
        (const void *)k_coll<C_ALLTOALL>, (const void *)k_coll<C_BROADCAST>,
        (const void *)k_coll<C_FCOLLECT>, (const void *)k_coll<C_SUM>,
        (const void *)k_coll<C_ALLTOALLV>};
    if (shmemx_collective_launch(kernels[c], dim3(1), dim3(kBlock), args, 0, g_s) != 0)
        die("shmemx_collective_launch failed");
}

// Every PE: the largest of the PEs' v (host memory, the host API).
static long *g_slot;
static long agree_max(long v)
{
    g_slot[0] = v;
    shmem_barrier_all();
    shmem_long_max_reduce(SHMEM_TEAM_WORLD, g_slot + 1, g_slot, 1);
    return g_slot[1];
}

static size_t src_bytes(int c, size_t b)
{
    return c == C_ALLTOALL || c == C_ALLTOALLV ? b * (size_t)g_np : b;
}
static size_t dst_bytes(int c, size_t b)
{
    return c == C_BROADCAST || c == C_SUM ? b : b * (size_t)g_np;
}

// One run at size b, then every PE checks its dest.
static void check(int c, char *dst, char *src, size_t b, const size_t *off, shmemx_dev_t *d)
{
    k_fill<<<64, 256, 0, g_s>>>(src, src_bytes(c, b), g_me, c);
    CK(cudaGetLastError());
    CK(cudaMemsetAsync(dst, 0, dst_bytes(c, b), g_s));
    CK(cudaStreamSynchronize(g_s));
    shmem_barrier_all();
    launch(c, dst, src, b, off, 1, d);
    CK(cudaStreamSynchronize(g_s));
    std::vector<char> h(dst_bytes(c, b));
    CK(cudaMemcpy(h.data(), dst, h.size(), cudaMemcpyDeviceToHost));
    size_t bad = 0, first = ~(size_t)0;
    for (size_t k = 0; k < h.size(); k++) {
        bool ok;
        if (c == C_SUM) {
            if (k % 4)
                continue;
            float want = 0, got;
            for (int p = 0; p < g_np; p++)
                want += fpat(p, k / 4);
            memcpy(&got, &h[k], 4);
            ok = got == want;
        } else {
            size_t blk = k / b, in = k % b;
            uint8_t want = c == C_BROADCAST  ? pat(0, k)
                           : c == C_FCOLLECT ? pat((int)blk, in)
                                             : pat((int)blk, (size_t)g_me * b + in);
            ok = (uint8_t)h[k] == want;
        }
        if (!ok && bad++ == 0)
            first = k;
    }
    if (bad) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s of %zu bytes per PE: %zu bad bytes, the first at %zu",
                 c_name[c], b, bad, first);
        die(msg);
    }
    shmem_barrier_all();
}

static double timed_us(int c, char *dst, const char *src, size_t b, const size_t *off, int iters,
                       shmemx_dev_t *d)
{
    shmem_barrier_all();
    CK(cudaEventRecord(g_a, g_s));
    launch(c, dst, src, b, off, iters, d);
    CK(cudaEventRecord(g_b, g_s));
    CK(cudaEventSynchronize(g_b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, g_a, g_b));
    return ms * 1e3;
}

static bool wanted(const char *list, int c)
{
    size_t n = strlen(c_name[c]);
    for (const char *p = list; (p = strstr(p, c_name[c])) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return true;
    return false;
}

int main(void)
{
    const char *cm = getenv("COLL_MAX"), *ops = getenv("COLL_OPS");
    size_t cmax = cm && *cm ? strtoull(cm, NULL, 0) : (size_t)4 << 20;
    if (!ops || !*ops)
        ops = "alltoall,broadcast,fcollect,sum,alltoallv";
    shmem_init();
    g_me = shmem_my_pe();
    g_np = shmem_n_pes();
    shmemx_dev_t d;
    if (shmemx_dev_get(&d) != 0)
        die("shmemx_dev_get failed (no device heap? set USHMEM_DEVICE=0)");
    const char *why = shmemx_dev_why();
    if (g_me == 0) {
        cudaDeviceProp prop;
        int dev = 0;
        CK(cudaGetDevice(&dev));
        CK(cudaGetDeviceProperties(&prop, dev));
        const char *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
        printf(
            "# bench_dev_coll: %d PEs, CUDA device %d (%s), CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s, "
            "1 CTA x %d threads per PE, COLL_MAX=%zu\n",
            g_np, dev, prop.name, pct ? pct : "unset", kBlock, cmax);
        fflush(stdout);
    }
    if (why) {
        if (g_me == 0)
            printf("# skipped: %s\n", why);
        shmem_finalize();
        return 0;
    }
    CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
    CK(cudaEventCreate(&g_a));
    CK(cudaEventCreate(&g_b));
    size_t cap = cmax * (size_t)g_np;
    char *dst = (char *)shmem_malloc(cap), *src = (char *)shmem_malloc(cap);
    g_slot = (long *)shmem_malloc_with_hints(2 * sizeof(long), SHMEMX_MALLOC_HOST);
    size_t *off = NULL;
    CK(cudaMalloc(&off, 3 * (size_t)g_np * sizeof(size_t)));
    if (!dst || !src || !g_slot)
        die("shmem_malloc failed (USHMEM_DEVICE_HEAP_SIZE: 2 x COLL_MAX x PEs, plus room)");

    std::vector<size_t> sizes;
    for (size_t b = 8; b <= cmax; b *= 4)
        sizes.push_back(b);
    if (sizes.back() != cmax && cmax >= 8)
        sizes.push_back(cmax);
    for (int c = 0; c < C_COUNT; c++) {
        if (!wanted(ops, c))
            continue;
        for (size_t b : sizes) {
            if (c == C_SUM && b % 4)
                continue;
            std::vector<size_t> h(3 * (size_t)g_np); // alltoallv: equal blocks, as alltoall
            for (int p = 0; p < g_np; p++) {
                h[p] = (size_t)g_me * b;             // at my slot of p's dest
                h[(size_t)g_np + p] = (size_t)p * b; // from p's block of my source
                h[2 * (size_t)g_np + p] = b;
            }
            CK(cudaMemcpy(off, h.data(), h.size() * sizeof(size_t), cudaMemcpyHostToDevice));
            check(c, dst, src, b, off, &d);
            double one = timed_us(c, dst, src, b, off, 4, &d) / 4; // warm, and an estimate
            int iters = (int)agree_max((long)std::max(3.0, std::min(2000.0, kTargetUs / one)));
            std::vector<double> v;
            for (int r = 0; r < kReps; r++)
                v.push_back(timed_us(c, dst, src, b, off, iters, &d) / iters);
            std::sort(v.begin(), v.end());
            if (g_me == 0) {
                printf("R coll_%s block%d %zu %.3f\n", c_name[c], g_np, b, v[kReps / 2]);
                fflush(stdout);
            }
        }
    }
    CK(cudaStreamSynchronize(g_s));
    shmem_barrier_all();
    if (g_me == 0)
        printf("# done\n");
    CK(cudaFree(off));
    shmem_free(g_slot);
    shmem_free(src);
    shmem_free(dst);
    shmem_finalize();
    return 0;
}
