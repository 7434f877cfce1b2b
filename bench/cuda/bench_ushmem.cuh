// What the ushmem CUDA benchmarks that time two PEs share (bench_dev_ushmem,
// bench_dev_probe): the pair timing and the launch of kernels that wait on a
// peer. Include after bench_util.cuh (CK, g_s, timed_ms, median).
#ifndef USHMEM_BENCH_USHMEM_CUH
#define USHMEM_BENCH_USHMEM_CUH

#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>

// Both PEs: launch(iters, base) after a host barrier (warm iterations first);
// microseconds per iteration as PE 0's events saw it, the median of reps
// launches of iters each. base (flag values) advances the same on both PEs.
template <typename F>
static double measure_pair_us(F launch, uint64_t *base, int warm, int iters, int reps)
{
    shmem_barrier_all();
    launch(warm, *base);
    *base += (uint64_t)warm;
    CK(cudaStreamSynchronize(g_s));
    std::vector<double> v;
    for (int r = 0; r < reps; r++) {
        shmem_barrier_all();
        v.push_back(timed_ms([&] { launch(iters, *base); }) * 1e3 / iters);
        *base += (uint64_t)iters;
    }
    CK(cudaStreamSynchronize(g_s));
    shmem_barrier_all();
    return median(v);
}

// Kernels that wait on a peer: the collective launch (cooperative); if this
// GPU or MPS refuses it, a plain launch (one CTA is always resident).
// (The header declares shmemx_collective_launch for nvcc's host pass only, so
// the device pass must not see the call: #if !defined(__CUDA_ARCH__).)
#if !defined(__CUDA_ARCH__)
static bool g_coop = true;
#endif
template <typename K> static void launch_waiting(K *kernel, unsigned threads, void **args)
{
#if !defined(__CUDA_ARCH__)
    if (g_coop) {
        if (shmemx_collective_launch(kernel, dim3(1), dim3(threads), args, 0, g_s) == 0)
            return;
        (void)cudaGetLastError();
        g_coop = false;
        printf("# note: PE %d: shmemx_collective_launch failed; plain launches from here on\n",
               g_me);
        fflush(stdout);
    }
    CK(cudaLaunchKernel((const void *)kernel, dim3(1), dim3(threads), args, 0, g_s));
#endif
}

#endif
