// What the CUDA benchmarks share: the error checks and the event timing.
//
// Before including, define BENCH_NAME (the program's name, for its error
// lines) and BENCH_GLOBAL_EXIT(status) (the library's global exit:
// shmem_global_exit, nvshmem_global_exit), and optionally BENCH_ON_ERROR()
// (what to print before exiting, e.g. the results so far). Written for both
// libraries; the NVSHMEM benchmarks still carry their own copies (they build
// only where NVSHMEM is installed: move them on the GPU machine).
#ifndef USHMEM_BENCH_UTIL_CUH
#define USHMEM_BENCH_UTIL_CUH

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <vector>

#ifndef BENCH_ON_ERROR
#define BENCH_ON_ERROR() ((void)0)
#endif

static int g_me = -1; // this PE, for the error lines (-1 before init)

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s PE %d: %s:%d: %s: %s\n", BENCH_NAME, g_me, __FILE__, __LINE__, #x, \
                    cudaGetErrorString(e_));                                                       \
            BENCH_ON_ERROR();                                                                      \
            fflush(NULL);                                                                          \
            BENCH_GLOBAL_EXIT(1);                                                                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static inline void die(const char *msg)
{
    fprintf(stderr, "%s PE %d: %s\n", BENCH_NAME, g_me, msg);
    BENCH_ON_ERROR();
    fflush(NULL);
    BENCH_GLOBAL_EXIT(1);
    exit(1);
}

// The stream the timed work runs on and the two events around it (the
// program creates them).
[[maybe_unused]] static cudaStream_t g_s;
[[maybe_unused]] static cudaEvent_t g_a, g_b;

// Milliseconds of GPU time that launch() queues on g_s.
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

static inline double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Microseconds per iteration of launch(iters) on g_s: a warm-up launch, an
// estimate, then the median of reps launches of about target_ms each (at
// least 3 iterations, at most max_iters).
template <typename F>
static double measure_us(F launch, int reps, double target_ms, long max_iters = 1000000)
{
    launch(1); // warm-up (lazy module loading, first touch)
    CK(cudaStreamSynchronize(g_s));
    double per = timed_ms([&] { launch(1); }) * 1e3;
    if (per < 1000) /* short: estimate again from 100 iterations */
        per = timed_ms([&] { launch(100); }) * 1e3 / 100;
    long it = per > 0 ? (long)(target_ms * 1e3 / per) : max_iters;
    it = std::max(3L, std::min(it, max_iters));
    std::vector<double> v;
    for (int r = 0; r < reps; r++)
        v.push_back(timed_ms([&] { launch((int)it); }) * 1e3 / (double)it);
    return median(v);
}

#endif
