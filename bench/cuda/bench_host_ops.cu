// How long the host's smallest GPU operations take from enqueue to "the host
// knows it is done" (issue 20: the staged proxy applies every request that
// arrives for the device heap with one of them). 2000 rounds each, mean and
// best, in microseconds:
//   copy_query   cuMemcpyAsync 8 B pinned host -> device, cuStreamQuery until done
//   copy_flag    the same copy, then cuStreamWriteValue32 to a mapped host word; the host polls it
//   write_query  cuStreamWriteValue64 to device memory, cuStreamQuery until done
//   kernel_query a one-thread kernel (an atomicAdd), cuStreamQuery until done
//   kernel_flag  the kernel also stores to a mapped host word; the host polls it
//   copy_sync    cuMemcpyHtoD 8 B from pageable memory (synchronous)
// "bench_host_ops spin S" instead keeps one CTA spinning for S seconds (a
// second MPS client, as the origin PE's kernel is when it waits).
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "%s: error %d\n", #x, (int)r_);                                        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

__global__ void k_add(unsigned long long *w, volatile unsigned *flag, unsigned v)
{
    atomicAdd(w, 1ULL);
    if (flag) {
        __threadfence_system();
        *flag = v;
    }
}

__global__ void k_spin(long long ns)
{
    long long t0 = clock64(), lim = ns * 2; // ~2 GHz
    while (clock64() - t0 < lim)
        ;
}

static void wait_stream(CUstream s)
{
    CUresult r;
    while ((r = cuStreamQuery(s)) == CUDA_ERROR_NOT_READY)
        ;
    CK(r);
}

static void wait_flag(volatile unsigned *f, unsigned v)
{
    while (*f != v)
        ;
}

int main(int argc, char **argv)
{
    cudaSetDevice(0);
    cudaFree(0);
    if (argc > 2 && !strcmp(argv[1], "spin")) {
        k_spin<<<1, 32>>>((long long)(atof(argv[2]) * 1e9));
        cudaDeviceSynchronize();
        return 0;
    }
    int rounds = 2000;
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    unsigned long long *dw;
    cudaMalloc(&dw, 64);
    unsigned long long *hp, src8 = 7;
    unsigned *flag, *dflag;
    cudaHostAlloc(&hp, 64, cudaHostAllocMapped);
    cudaHostAlloc(&flag, 64, cudaHostAllocMapped);
    cudaHostGetDevicePointer(&dflag, flag, 0);
    const char *names[] = {"copy_query",   "copy_flag",   "write_query",
                           "kernel_query", "kernel_flag", "copy_sync"};
    for (int m = 0; m < 6; m++) {
        double sum = 0, best = 1e30;
        for (int i = 0; i < rounds + 100; i++) {
            *flag = 0;
            double t0 = now_us();
            switch (m) {
            case 0:
                CK(cuMemcpyHtoDAsync((CUdeviceptr)dw, hp, 8, s));
                wait_stream(s);
                break;
            case 1:
                CK(cuMemcpyHtoDAsync((CUdeviceptr)dw, hp, 8, s));
                CK(cuStreamWriteValue32(s, (CUdeviceptr)dflag, i + 1, 0));
                wait_flag(flag, i + 1);
                break;
            case 2:
                CK(cuStreamWriteValue64(s, (CUdeviceptr)dw, i, 0));
                wait_stream(s);
                break;
            case 3:
                k_add<<<1, 1, 0, (cudaStream_t)s>>>(dw, NULL, 0);
                wait_stream(s);
                break;
            case 4:
                k_add<<<1, 1, 0, (cudaStream_t)s>>>(dw, dflag, i + 1);
                wait_flag(flag, i + 1);
                break;
            case 5: CK(cuMemcpyHtoD((CUdeviceptr)dw, &src8, 8)); break;
            }
            double d = now_us() - t0;
            if (i >= 100) {
                sum += d;
                if (d < best)
                    best = d;
            }
        }
        cuStreamSynchronize(s);
        printf("%-13s mean %6.2f us  best %6.2f us\n", names[m], sum / rounds, best);
    }
    return 0;
}
