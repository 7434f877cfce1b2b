// ushmem on one GPU shared by 2 PEs (run: ushrun -n 2, USHMEM_DEVICE=0): the
// measurements of NVSHMEM's perftests that bench_nvshmem.cu repeats, plus the
// raw copies they are compared with. One line per number:
//   R <impl> <metric> <bytes> <value>
// impl: ushmem (as shipped), ushmem_memcpy (copy kernel off: every size by
// cuMemcpyDtoDAsync), <label> for a second run (argv[2], e.g. USHMEM_CUDA_IPC=legacy), raw_map
// (cudaMemcpyAsync to the peer address ushmem maps, no library), raw_ipc
// (cudaMemcpyAsync to a legacy cudaIpc mapping: the anchor's raw CUDA IPC copy).
// Also alltoallmem/broadcastmem on a stream (metrics alltoall_us / broadcast_us,
// bytes per PE block), every PE taking part. Works with 2 PEs on one GPU
// (USHMEM_DEVICE=0) or on two (LOCAL_RANK binding, bench/cuda/multi_gpu.sh).
// Linked with the static library to reach the copy-kernel threshold.
#include <cuda_runtime.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C" size_t ushmemi_cuda_kcopy_max; // src/transport/cuda/cuda.c

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e = (x);                                                                       \
        if (e != cudaSuccess) {                                                                    \
            fprintf(stderr, "PE %d: %s:%d: %s\n", shmem_my_pe(), __FILE__, __LINE__,               \
                    cudaGetErrorString(e));                                                        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now()
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int iters(size_t sz)
{
    return sz < (1u << 20) ? 1000 : sz < (256u << 20) ? 100 : 10;
}

typedef void (*put_fn)(void *dst_sym, void *dst_peer, const void *src, size_t n, cudaStream_t s);
static void put_ushmem(void *d, void *, const void *src, size_t n, cudaStream_t s)
{
    shmemx_putmem_on_stream(d, src, n, 1, s);
}
static void put_raw(void *, void *p, const void *src, size_t n, cudaStream_t s)
{
    CK(cudaMemcpyAsync(p, src, n, cudaMemcpyDeviceToDevice, s));
}

static void put_sweep(const char *impl, put_fn f, void *dst, void *peer, const void *src,
                      size_t maxsz, cudaStream_t s)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (size_t sz = 8; sz <= maxsz; sz *= 2) {
        int it = iters(sz);
        double us = 1e30;
        for (int w = 0; w < 20; w++)
            f(dst, peer, src, sz, s);
        for (int rep = 0; rep < 3; rep++) { /* best of 3: the host's enqueue rate varies */
            CK(cudaEventRecord(a, s));
            for (int i = 0; i < it; i++)
                f(dst, peer, src, sz, s);
            CK(cudaEventRecord(b, s));
            CK(cudaEventSynchronize(b));
            float ms;
            CK(cudaEventElapsedTime(&ms, a, b));
            us = ms * 1e3 / it < us ? ms * 1e3 / it : us;
        }
        printf("R %s put_us %zu %.3f\nR %s put_GBps %zu %.2f\n", impl, sz, us, impl, sz,
               sz / us / 1e3);
    }
    fflush(stdout);
}

/* alltoallmem / broadcastmem on stream s, every PE: GPU time per collective,
 * best of 3, for block sizes 8 B .. maxblk (PE 0 prints). */
static void coll_sweep(char *dst, const char *src, size_t maxblk, cudaStream_t s)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int op = 0; op < 2; op++) {
        for (size_t sz = 8; sz <= maxblk; sz *= 2) {
            int it = sz < (1u << 20) ? 200 : 20;
            double us = 1e30;
            for (int rep = -1; rep < 3; rep++) { /* rep -1: warm-up */
                shmem_barrier_all();
                CK(cudaEventRecord(a, s));
                for (int i = 0; i < it; i++) {
                    int rc =
                        op == 0
                            ? shmemx_alltoallmem_on_stream(SHMEM_TEAM_WORLD, dst, src, sz, s)
                            : shmemx_broadcastmem_on_stream(SHMEM_TEAM_WORLD, dst, src, sz, 0, s);
                    if (rc) {
                        fprintf(stderr, "PE %d: collective %d failed (%d)\n", shmem_my_pe(), op,
                                rc);
                        exit(1);
                    }
                }
                CK(cudaEventRecord(b, s));
                CK(cudaEventSynchronize(b));
                float ms;
                CK(cudaEventElapsedTime(&ms, a, b));
                if (rep >= 0 && ms * 1e3 / it < us)
                    us = ms * 1e3 / it;
            }
            if (shmem_my_pe() == 0)
                printf("R ushmem %s_us %zu %.3f\n", op == 0 ? "alltoall" : "broadcast", sz, us);
        }
    }
    fflush(stdout);
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
}

static void put_sync(const char *impl, put_fn f, void *dst, void *peer, const void *src,
                     cudaStream_t s)
{
    for (int i = 0; i < 200; i++) {
        f(dst, peer, src, 8, s);
        CK(cudaStreamSynchronize(s));
    }
    int n = 10000;
    double t0 = now();
    for (int i = 0; i < n; i++) {
        f(dst, peer, src, 8, s);
        CK(cudaStreamSynchronize(s));
    }
    printf("R %s put8_sync_us 8 %.3f\n", impl, (now() - t0) * 1e6 / n);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    size_t maxsz = argc > 1 ? strtoull(argv[1], NULL, 0) : (1ull << 30);
    const char *label = argc > 2 ? argv[2] : NULL; /* second run: puts only, under this name */
    shmem_init();
    int me = shmem_my_pe();
    if (shmem_n_pes() != 2) {
        fprintf(stderr, "run with 2 PEs\n");
        return 2;
    }
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    char *buf = (char *)shmem_malloc(maxsz), *src = (char *)shmem_malloc(maxsz);
    if (!buf || !src) {
        fprintf(stderr, "shmem_malloc of 2 x %zu bytes failed (USHMEM_DEVICE_HEAP_SIZE)\n", maxsz);
        return 1;
    }
    {
        int d = -1;
        CK(cudaGetDevice(&d));
        printf("# PE %d of %d: CUDA device %d\n", me, shmem_n_pes(), d);
        fflush(stdout);
    }
    CK(cudaMemset(src, 1, maxsz));
    CK(cudaMemset(buf, 0, maxsz));
    // Legacy IPC mapping of a plain cudaMalloc buffer of PE 1, for the raw baseline;
    // the handle travels through the host symmetric heap.
    cudaIpcMemHandle_t *h = (cudaIpcMemHandle_t *)shmem_malloc_with_hints(
        sizeof(cudaIpcMemHandle_t), SHMEMX_MALLOC_HOST);
    void *ipc_local = NULL, *ipc_peer = NULL;
    CK(cudaMalloc(&ipc_local, maxsz));
    if (me == 1)
        CK(cudaIpcGetMemHandle(h, ipc_local));
    shmem_barrier_all();
    if (me == 0) {
        cudaIpcMemHandle_t ph;
        shmem_getmem(&ph, h, sizeof ph, 1);
        CK(cudaIpcOpenMemHandle(&ipc_peer, ph, cudaIpcMemLazyEnablePeerAccess));
    }
    shmem_barrier_all();

    if (me == 0 && label) {
        put_sweep(label, put_ushmem, buf, NULL, src, maxsz, s);
        put_sync(label, put_ushmem, buf, NULL, src, s);
    } else if (me == 0) {
        void *peer = shmem_ptr(buf, 1);
        put_sweep("raw_ipc", put_raw, buf, ipc_peer, src, maxsz, s);
        put_sweep("raw_map", put_raw, buf, peer, src, maxsz, s);
        put_sweep("ushmem", put_ushmem, buf, peer, src, maxsz, s);
        put_sync("ushmem", put_ushmem, buf, peer, src, s);
        size_t kmax = ushmemi_cuda_kcopy_max;
        ushmemi_cuda_kcopy_max = 0;
        put_sweep("ushmem_memcpy", put_ushmem, buf, peer, src, maxsz, s);
        put_sync("ushmem_memcpy", put_ushmem, buf, peer, src, s);
        ushmemi_cuda_kcopy_max = ~(size_t)0;
        put_sweep("ushmem_kernel", put_ushmem, buf, peer, src, maxsz, s);
        ushmemi_cuda_kcopy_max = kmax;
        put_sync("raw_ipc", put_raw, buf, ipc_peer, src, s);
    }
    CK(cudaStreamSynchronize(s));
    shmem_barrier_all();
    if (!label) { // the second run measures puts only

        // barrier_all_on_stream: both PEs, event-timed
        cudaEvent_t a, b;
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
        for (int i = 0; i < 100; i++)
            shmemx_barrier_all_on_stream(s);
        CK(cudaStreamSynchronize(s));
        shmem_barrier_all();
        int nb = 2000;
        double t0 = now();
        CK(cudaEventRecord(a, s));
        for (int i = 0; i < nb; i++)
            shmemx_barrier_all_on_stream(s);
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        double wall = (now() - t0) * 1e6 / nb;
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (me == 0)
            printf(
                "R ushmem barrier_all_on_stream_us 0 %.3f\nR ushmem barrier_all_on_stream_wall_us "
                "0 %.3f\n",
                ms * 1e3 / nb, wall);
        shmem_barrier_all();

        // host barrier_all
        for (int i = 0; i < 10000; i++)
            shmem_barrier_all();
        int nh = 200000;
        t0 = now();
        for (int i = 0; i < nh; i++)
            shmem_barrier_all();
        double hb = (now() - t0) * 1e6 / nh;
        if (me == 0)
            printf("R ushmem host_barrier_all_us 0 %.3f\n", hb);

        // alltoall and broadcast on a stream (COLL_MAX bytes per block, default 16 MiB)
        const char *cm = getenv("COLL_MAX");
        size_t cmax = cm ? strtoull(cm, NULL, 0) : (size_t)16 << 20;
        if (cmax > maxsz / 2)
            cmax = maxsz / 2;
        if (cmax >= 8)
            coll_sweep(buf, src, cmax, s);
    }
    fflush(stdout);
    shmem_barrier_all();
    if (me == 0)
        CK(cudaIpcCloseMemHandle(ipc_peer));
    shmem_barrier_all();
    CK(cudaFree(ipc_local));
    shmem_free(h);
    shmem_free(src);
    shmem_free(buf);
    shmem_finalize();
    return 0;
}
