// NVSHMEM on one GPU shared by 2 PEs (this process forks the second; unique-id
// bootstrap, as /work/shared/anchors/nvshmem_two_pes_one_gpu.cu): the same
// measurements as bench_ushmem.cu, printed the same way (impl "nvshmem").
// Device: rank % device count (two GPUs: one PE each; one GPU: both on GPU 0).
// Also alltoallmem/broadcastmem on a stream (alltoall_us / broadcast_us, bytes
// per block, COLL_MAX bytes at most, default 16 MiB), as bench_ushmem.cu.
// Build: nvcc -O2 -arch=sm_90 -rdc=true -I$NVSHMEM/include -L$NVSHMEM/lib
//        -l:libnvshmem_host.so.3 -lnvshmem_device; run with NVSHMEM_DISABLE_NVLS=1.
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e = (x);                                                                       \
        if (e != cudaSuccess) {                                                                    \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e));              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now()
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int run(int rank, int n, nvshmemx_uniqueid_t id, size_t maxsz)
{
    int ndev = 1;
    CK(cudaGetDeviceCount(&ndev));
    CK(cudaSetDevice(rank % ndev));
    printf("# nvshmem PE %d of %d: CUDA device %d\n", rank, n, rank % ndev);
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_set_attr_uniqueid_args(rank, n, &id, &attr);
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) {
        fprintf(stderr, "nvshmem init failed\n");
        return 1;
    }
    char *buf = (char *)nvshmem_malloc(maxsz), *src = (char *)nvshmem_malloc(maxsz);
    if (!buf || !src) {
        fprintf(stderr, "nvshmem_malloc failed (NVSHMEM_SYMMETRIC_SIZE)\n");
        return 1;
    }
    CK(cudaMemset(src, 1, maxsz));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    float ms;
    nvshmem_barrier_all();
    if (rank == 0) {
        for (size_t sz = 8; sz <= maxsz; sz *= 2) {
            int it = sz < (1u << 20) ? 1000 : sz < (256u << 20) ? 100 : 10;
            double us = 1e30;
            for (int w = 0; w < 20; w++)
                nvshmemx_putmem_on_stream(buf, src, sz, 1, s);
            for (int rep = 0; rep < 3; rep++) { /* best of 3, as bench_ushmem */
                CK(cudaEventRecord(a, s));
                for (int i = 0; i < it; i++)
                    nvshmemx_putmem_on_stream(buf, src, sz, 1, s);
                CK(cudaEventRecord(b, s));
                CK(cudaEventSynchronize(b));
                CK(cudaEventElapsedTime(&ms, a, b));
                us = ms * 1e3 / it < us ? ms * 1e3 / it : us;
            }
            printf("R nvshmem put_us %zu %.3f\nR nvshmem put_GBps %zu %.2f\n", sz, us, sz,
                   sz / us / 1e3);
            fflush(stdout);
        }
        int np8 = 300;
        for (int i = 0; i < 20; i++) {
            nvshmemx_putmem_on_stream(buf, src, 8, 1, s);
            CK(cudaStreamSynchronize(s));
        }
        double t0 = now();
        for (int i = 0; i < np8; i++) {
            nvshmemx_putmem_on_stream(buf, src, 8, 1, s);
            CK(cudaStreamSynchronize(s));
        }
        printf("R nvshmem put8_sync_us 8 %.3f\n", (now() - t0) * 1e6 / np8);
        fflush(stdout);
    }
    CK(cudaStreamSynchronize(s));
    nvshmem_barrier_all();
    int nb = 500;
    for (int i = 0; i < 20; i++)
        nvshmemx_barrier_all_on_stream(s);
    CK(cudaStreamSynchronize(s));
    nvshmem_barrier_all();
    double t0 = now();
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < nb; i++)
        nvshmemx_barrier_all_on_stream(s);
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    double wall = (now() - t0) * 1e6 / nb;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (rank == 0)
        printf("R nvshmem barrier_all_on_stream_us 0 %.3f\nR nvshmem barrier_all_on_stream_wall_us "
               "0 %.3f\n",
               ms * 1e3 / nb, wall);
    int nh = 200;
    for (int i = 0; i < 10; i++)
        nvshmem_barrier_all();
    t0 = now();
    for (int i = 0; i < nh; i++)
        nvshmem_barrier_all();
    double hb = (now() - t0) * 1e6 / nh;
    if (rank == 0)
        printf("R nvshmem host_barrier_all_us 0 %.3f\n", hb);
    fflush(stdout);

    // alltoall and broadcast on a stream, every PE (as bench_ushmem.cu)
    const char *cm = getenv("COLL_MAX");
    size_t cmax = cm ? strtoull(cm, NULL, 0) : (size_t)16 << 20;
    if (cmax > maxsz / 2)
        cmax = maxsz / 2;
    for (int op = 0; op < 2 && cmax >= 8; op++) {
        for (size_t sz = 8; sz <= cmax; sz *= 2) {
            int it = sz < (1u << 20) ? 200 : 20;
            double us = 1e30;
            for (int rep = -1; rep < 3; rep++) { /* rep -1: warm-up */
                nvshmem_barrier_all();
                CK(cudaEventRecord(a, s));
                for (int i = 0; i < it; i++) {
                    int rc = op == 0 ? nvshmemx_alltoallmem_on_stream(NVSHMEM_TEAM_WORLD, buf, src,
                                                                      sz, s)
                                     : nvshmemx_broadcastmem_on_stream(NVSHMEM_TEAM_WORLD, buf, src,
                                                                       sz, 0, s);
                    if (rc) {
                        fprintf(stderr, "nvshmem PE %d: collective %d failed (%d)\n", rank, op, rc);
                        exit(1);
                    }
                }
                CK(cudaEventRecord(b, s));
                CK(cudaEventSynchronize(b));
                CK(cudaEventElapsedTime(&ms, a, b));
                if (rep >= 0 && ms * 1e3 / it < us)
                    us = ms * 1e3 / it;
            }
            if (rank == 0)
                printf("R nvshmem %s_us %zu %.3f\n", op == 0 ? "alltoall" : "broadcast", sz, us);
        }
        fflush(stdout);
    }
    CK(cudaStreamSynchronize(s));
    nvshmem_barrier_all();
    nvshmem_free(buf);
    nvshmem_free(src);
    nvshmem_finalize();
    return 0;
}

int main(int argc, char **argv)
{
    size_t maxsz = argc > 1 ? strtoull(argv[1], NULL, 0) : (1ull << 30);
    int p[2];
    if (pipe(p))
        return 1;
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    pid_t c = fork();
    if (c == 0) {
        if (read(p[0], &id, sizeof id) != (ssize_t)sizeof id)
            return 1;
        return run(1, 2, id, maxsz);
    }
    nvshmemx_get_uniqueid(&id);
    if (write(p[1], &id, sizeof id) != (ssize_t)sizeof id)
        return 1;
    int r = run(0, 2, id, maxsz), st = 0;
    wait(&st);
    return r ? r : (WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}
