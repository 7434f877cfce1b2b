// Raw CUDA baseline for two GPUs, no library, one process: cudaMemcpyPeerAsync
// from a buffer on GPU 0 to one on GPU 1 (peer access enabled), on a stream of
// GPU 0, timed like bench_ushmem.cu's puts (events on the stream, best of 3
// timings of 1000/100/10 back-to-back copies). Prints
//   R raw_peer put_us|put_GBps <bytes> <value>   and   R raw_peer put8_sync_us 8 <us>
// usage: bench_peer [MAXBYTES] [SRC_GPU DST_GPU]   (exit 77: fewer than 2 GPUs)
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e = (x);                                                                       \
        if (e != cudaSuccess) {                                                                    \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e));     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now()
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    size_t maxsz = argc > 1 ? strtoull(argv[1], NULL, 0) : (1ull << 30);
    int g0 = argc > 3 ? atoi(argv[2]) : 0, g1 = argc > 3 ? atoi(argv[3]) : 1;
    int ndev = 0, can = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess)
        ndev = 0;
    if (ndev < 2 || g0 == g1 || g0 >= ndev || g1 >= ndev) {
        printf("# bench_peer: needs two GPUs (%d visible)\n", ndev);
        return 77;
    }
    CK(cudaDeviceCanAccessPeer(&can, g0, g1));
    printf("# bench_peer: GPU %d -> GPU %d, peer access %s\n", g0, g1, can ? "yes" : "NO");
    if (!can)
        return 1;
    char *src, *dst;
    CK(cudaSetDevice(g1));
    CK(cudaMalloc(&dst, maxsz));
    CK(cudaMemset(dst, 0, maxsz));
    CK(cudaSetDevice(g0));
    CK(cudaDeviceEnablePeerAccess(g1, 0));
    CK(cudaMalloc(&src, maxsz));
    CK(cudaMemset(src, 1, maxsz));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (size_t sz = 8; sz <= maxsz; sz *= 2) {
        int it = sz < (1u << 20) ? 1000 : sz < (256u << 20) ? 100 : 10;
        double us = 1e30;
        for (int w = 0; w < 20; w++)
            CK(cudaMemcpyPeerAsync(dst, g1, src, g0, sz, s));
        for (int rep = 0; rep < 3; rep++) {
            CK(cudaEventRecord(a, s));
            for (int i = 0; i < it; i++)
                CK(cudaMemcpyPeerAsync(dst, g1, src, g0, sz, s));
            CK(cudaEventRecord(b, s));
            CK(cudaEventSynchronize(b));
            float ms;
            CK(cudaEventElapsedTime(&ms, a, b));
            us = ms * 1e3 / it < us ? ms * 1e3 / it : us;
        }
        printf("R raw_peer put_us %zu %.3f\nR raw_peer put_GBps %zu %.2f\n", sz, us, sz,
               sz / us / 1e3);
        fflush(stdout);
    }
    for (int i = 0; i < 200; i++) {
        CK(cudaMemcpyPeerAsync(dst, g1, src, g0, 8, s));
        CK(cudaStreamSynchronize(s));
    }
    int n = 10000;
    double t0 = now();
    for (int i = 0; i < n; i++) {
        CK(cudaMemcpyPeerAsync(dst, g1, src, g0, 8, s));
        CK(cudaStreamSynchronize(s));
    }
    printf("R raw_peer put8_sync_us 8 %.3f\n", (now() - t0) * 1e6 / n);
    CK(cudaFree(src));
    CK(cudaSetDevice(g1));
    CK(cudaFree(dst));
    return 0;
}
