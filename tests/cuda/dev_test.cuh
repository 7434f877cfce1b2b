/* Helpers for the device API tests (tests/cuda/dev_*.cu): SPMD programs run by
 * ushrun that launch kernels using include/shmemx_device.cuh through the CUDA
 * runtime (the library binds the device's primary context, which the runtime
 * shares). They skip (exit 77) where no GPU is usable, and print one
 * "PE n: PASS ..." or "PE n: FAIL: ..." line per check group.
 *
 * Data: byte i of a message with seed s is dt_gen(s, i): random, never 0, so
 * that the poison (0) tells "not written" from "written", and any PE can
 * recompute what another PE sent. */
#ifndef USHMEM_DEV_TEST_CUH
#define USHMEM_DEV_TEST_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <shmemx.h>
#include <shmemx_device.cuh>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DT_POISON 0

/* this PE, once shmem_init returned (inline: one for the whole program, so a
 * test of several translation units, dev_coll, prints it from each) */
inline int dt_me = -1;

static inline uint64_t dt_seed(void)
{
    /* As tests/test_util.h: different every job (ushrun's secret is random and
     * the same on every PE); USHMEM_TEST_SEED replays a failing run. */
    static uint64_t seed;
    if (!seed) {
        const char *s = getenv("USHMEM_TEST_SEED"), *secret = getenv("USHMEM_SECRET");
        if (s)
            seed = strtoull(s, NULL, 0);
        else if (secret)
            for (seed = 1469598103934665603ULL; *secret; secret++)
                seed = (seed ^ (unsigned char)*secret) * 1099511628211ULL;
        if (!seed)
            seed = 0x5eed;
    }
    return seed;
}

static inline void dt_fail_begin(const char *file, int line)
{
    fflush(stdout);
    printf("PE %d: FAIL: %s:%d: ", dt_me, file, line);
}

__attribute__((noreturn)) static inline void dt_fail_end(void)
{
    printf(" (USHMEM_TEST_SEED=0x%llx)\n", (unsigned long long)dt_seed());
    fflush(stdout);
    exit(1);
}

#define DT_FAIL(...)                                                                               \
    do {                                                                                           \
        dt_fail_begin(__FILE__, __LINE__);                                                         \
        printf(__VA_ARGS__);                                                                       \
        dt_fail_end();                                                                             \
    } while (0)

#define DT_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            dt_fail_begin(__FILE__, __LINE__);                                                     \
            printf("check failed: %s: ", #cond);                                                   \
            printf(__VA_ARGS__);                                                                   \
            dt_fail_end();                                                                         \
        }                                                                                          \
    } while (0)

/* Every CUDA runtime call is checked; a kernel launch is followed by CK_LAUNCH(). */
#define CK(expr)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (expr);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            DT_FAIL("%s: %s (%s)", #expr, cudaGetErrorName(e_), cudaGetErrorString(e_));           \
    } while (0)
#define CK_LAUNCH() CK(cudaGetLastError())

static inline double dt_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* splitmix64's finalizer: the one mixing function of host and device. */
__host__ __device__ static inline uint64_t dt_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static inline uint64_t dt_rand(uint64_t *st)
{
    *st = dt_mix(*st);
    return *st;
}

/* 1..max, log-uniform. */
static inline size_t dt_log_uniform(uint64_t *st, size_t max)
{
    double u = (double)(dt_rand(st) >> 11) * (1.0 / 9007199254740992.0);
    double v = exp2(u * log2((double)max + 1.0));
    size_t n = (size_t)v;
    return n < 1 ? 1 : n > max ? max : n;
}

__host__ __device__ static inline uint8_t dt_gen(uint64_t seed, uint64_t i)
{
    uint64_t w = dt_mix(seed ^ ((i >> 3) * 0xd1b54a32d192ed03ULL));
    uint8_t b = (uint8_t)(w >> ((i & 7) * 8));
    return b ? b : 0x5a;
}

/* buf[i] = dt_gen(seed, gen_off + i) for i < n. */
static __global__ void dt_k_fill(uint8_t *buf, size_t n, uint64_t seed, uint64_t gen_off)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        buf[i] = dt_gen(seed, gen_off + i);
}

typedef struct {
    unsigned long long bad;   /* mismatching bytes */
    unsigned long long first; /* lowest mismatching index, ~0 if none */
} dt_result_t;

/* buf[0, span): [lo, lo + n) holds dt_gen(seed, gen_off + i - lo), the rest the poison. */
static __global__ void dt_k_verify(const uint8_t *buf, size_t span, size_t lo, size_t n,
                                   uint64_t seed, uint64_t gen_off, dt_result_t *r)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned long long bad = 0, first = ~0ULL;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < span; i += stride) {
        uint8_t want = (i >= lo && i - lo < n) ? dt_gen(seed, gen_off + (i - lo)) : DT_POISON;
        if (buf[i] != want) {
            bad++;
            if (i < first)
                first = i;
        }
    }
    if (bad) {
        atomicAdd(&r->bad, bad);
        atomicMin(&r->first, first);
    }
}

static inline unsigned dt_blocks(size_t n, unsigned threads, unsigned max)
{
    size_t b = (n + threads - 1) / threads;
    return b < 1 ? 1 : b > max ? max : (unsigned)b;
}

static inline void dt_fill(cudaStream_t s, void *buf, size_t n, uint64_t seed, uint64_t gen_off)
{
    if (!n)
        return;
    dt_k_fill<<<dt_blocks(n, 256, 1024), 256, 0, s>>>((uint8_t *)buf, n, seed, gen_off);
    CK_LAUNCH();
}

/* Enqueue the check of buf (see dt_k_verify) on s after what is already there,
 * wait for it, and fail with the first bad bytes. r: device memory. */
static inline void dt_verify(cudaStream_t s, dt_result_t *r, const void *buf, size_t span,
                             size_t lo, size_t n, uint64_t seed, uint64_t gen_off, const char *what)
{
    dt_result_t h;
    CK(cudaMemsetAsync(&r->bad, 0, sizeof r->bad, s));
    CK(cudaMemsetAsync(&r->first, 0xff, sizeof r->first, s));
    dt_k_verify<<<dt_blocks(span, 256, 2048), 256, 0, s>>>((const uint8_t *)buf, span, lo, n, seed,
                                                           gen_off, r);
    CK_LAUNCH();
    CK(cudaMemcpyAsync(&h, r, sizeof h, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    if (!h.bad)
        return;
    uint8_t got[16];
    size_t k = h.first, m = span - k < 16 ? span - k : 16;
    CK(cudaMemcpy(got, (const uint8_t *)buf + k, m, cudaMemcpyDeviceToHost));
    char gs[64] = "", ws[64] = "";
    for (size_t j = 0; j < m; j++) {
        size_t i = k + j;
        uint8_t want = (i >= lo && i - lo < n) ? dt_gen(seed, gen_off + (i - lo)) : DT_POISON;
        snprintf(gs + 3 * j, 4, "%02x ", got[j]);
        snprintf(ws + 3 * j, 4, "%02x ", want);
    }
    DT_FAIL("%s: %llu bad bytes of %zu checked (data at [%zu, %zu)); first bad at %zu (%s): got "
            "%s, want %s",
            what, h.bad, span, lo, lo + n, k,
            k < lo       ? "before the data"
            : k - lo < n ? "inside the data"
                         : "after the data",
            gs, ws);
}

/* Exit 77 before shmem_init when the CUDA runtime sees no GPU. */
static inline void dt_skip_without_gpu(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) {
        printf("SKIP: no usable CUDA device (cudaGetDeviceCount: %s, %d devices)\n",
               cudaGetErrorName(e), n);
        exit(77);
    }
}

/* shmem_init, the world handle and the runtime bound to the device holding the
 * device heap; exits 77 (after shmem_finalize, on every PE alike) when this PE
 * has no device heap. */
static inline shmemx_dev_t dt_init(void)
{
    dt_skip_without_gpu();
    shmem_init();
    dt_me = shmem_my_pe();
    shmemx_dev_t d;
    memset(&d, 0, sizeof d);
    if (shmemx_dev_get(&d) != 0) {
        const char *why = shmemx_dev_why();
        printf("PE %d: SKIP: no GPU bound (shmemx_dev_get failed: %s); set USHMEM_DEVICE=0\n",
               dt_me, why ? why : "?");
        fflush(stdout);
        shmem_finalize();
        exit(77);
    }
    DT_CHECK(d.magic == SHMEMX_DEV_MAGIC && d.version == SHMEMX_DEV_VERSION,
             "handle magic 0x%x version %u", d.magic, d.version);
    DT_CHECK(d.my_pe == dt_me && d.n_pes == shmem_n_pes() && d.world_pe == dt_me &&
                 d.world_n_pes == shmem_n_pes() && (d.flags & SHMEMX_DEV_F_WORLD),
             "handle: my_pe %d n_pes %d world_pe %d world_n_pes %d flags 0x%x", d.my_pe, d.n_pes,
             d.world_pe, d.world_n_pes, d.flags);
    void *probe = shmem_malloc(64);
    DT_CHECK(probe != NULL, "shmem_malloc(64)");
    DT_CHECK((uint64_t)(uintptr_t)probe >= d.heap_base &&
                 (uint64_t)(uintptr_t)probe < d.heap_base + d.heap_size,
             "shmem_malloc returned %p, outside the handle's device heap [0x%llx, +%llu)", probe,
             (unsigned long long)d.heap_base, (unsigned long long)d.heap_size);
    cudaPointerAttributes a;
    memset(&a, 0, sizeof a);
    CK(cudaPointerGetAttributes(&a, probe));
    DT_CHECK(a.type == cudaMemoryTypeDevice, "shmem_malloc memory is not device memory (type %d)",
             (int)a.type);
    CK(cudaSetDevice(a.device));
    shmem_free(probe);
    return d;
}

/* One line per PE: whether device-side waits are allowed (dev_refuse.sh reads it). */
static inline int dt_waits_allowed(const shmemx_dev_t &d)
{
    const char *why = shmemx_dev_why();
    int ok = why == NULL;
    if (ok)
        printf("PE %d: WAITS: allowed%s (%d PEs on this GPU, flags 0x%x)\n", dt_me,
               (d.flags & SHMEMX_DEV_F_TIMESLICED) ? " by USHMEM_DEVICE_WAIT=timesliced" : "",
               d.gpu_pes, d.flags);
    else
        printf("PE %d: WAITS: refused: %s\n", dt_me, why);
    fflush(stdout);
    DT_CHECK(ok == ((d.flags & SHMEMX_DEV_F_WAIT_OK) != 0),
             "shmemx_dev_why() is %s but the handle's WAIT_OK flag is %s", ok ? "NULL" : "set",
             (d.flags & SHMEMX_DEV_F_WAIT_OK) ? "set" : "clear");
    return ok;
}

static inline cudaStream_t dt_stream(void)
{
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
}

#endif
