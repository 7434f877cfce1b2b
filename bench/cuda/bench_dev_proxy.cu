// Device API to one peer, timed inside the kernels (issue 20): run it with
// PE 1 on another (pretend) host to measure the reverse-offload path, and
// without to measure a mapped peer, in the same job script
// (bench/cuda/proxy_gpu_run.sh, stage devbench). 2 PEs; PE 0 issues, PE 1
// answers the ping-pong. Rows (one line each, "row<TAB>bytes<TAB>value"):
//   p_quiet      one thread: shmemx_dev_p of 8 B + shmemx_dev_quiet, us
//   fetch_add    one thread: 64-bit fetch_add on the peer, us
//   pingpong     putmem_signal 8 B there and back, device waits, us per round trip
//   put_bw       putmem_nbi_block (1 CTA) of n bytes, then quiet, GB/s
// Device waits need MPS (or one PE per GPU): without, pingpong is skipped.
// usage: bench_dev_proxy [MAX_BYTES [ROWS]]   ROWS: some of p_quiet,fetch_add,
// put_bw,pingpong (default all; one row alone gives a clean USHMEM_PROXY_TRACE).
#include <cuda_runtime.h>
#include <shmem.h>
#include <shmemx.h>
#include <shmemx_device.cuh>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

__device__ static unsigned long long now_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void k_p_quiet(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, long long *x, int iters,
                          unsigned long long *ns)
{
    unsigned long long t0 = now_ns();
    for (int i = 0; i < iters; i++) {
        shmemx_dev_p(d, x, (long long)i, 1);
        shmemx_dev_quiet(d);
    }
    *ns = now_ns() - t0;
}

__global__ void k_fadd(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, unsigned long long *c, int iters,
                       unsigned long long *ns)
{
    unsigned long long t0 = now_ns(), sum = 0;
    for (int i = 0; i < iters; i++)
        sum += shmemx_dev_atomic_fetch_add(d, c, 1ULL, 1);
    *ns = now_ns() - t0;
    if (sum == 42)
        *ns |= 1; /* keep the loop */
}

__global__ void k_pingpong(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, long long *buf,
                           const long long *src, uint64_t *sig, int iters, int me,
                           unsigned long long *ns)
{
    unsigned long long t0 = now_ns();
    for (int i = 1; i <= iters; i++) {
        if (me == 0) {
            shmemx_dev_putmem_signal(d, buf, src, 8, sig, (uint64_t)i, SHMEMX_DEV_SIGNAL_SET, 1);
            shmemx_dev_signal_wait_until(d, sig, SHMEMX_DEV_CMP_GE, (uint64_t)i);
        } else {
            shmemx_dev_signal_wait_until(d, sig, SHMEMX_DEV_CMP_GE, (uint64_t)i);
            shmemx_dev_putmem_signal(d, buf, src, 8, sig, (uint64_t)i, SHMEMX_DEV_SIGNAL_SET, 0);
        }
    }
    *ns = now_ns() - t0;
}

__global__ void k_put_bw(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, char *dst, const char *src,
                         size_t n, int iters, unsigned long long *ns)
{
    unsigned long long t0 = now_ns();
    for (int i = 0; i < iters; i++)
        shmemx_dev_putmem_nbi_block(d, dst, src, n, 1);
    shmemx_dev_quiet_block(d);
    if (threadIdx.x == 0)
        *ns = now_ns() - t0;
}

static unsigned long long run_ns(unsigned long long *dns)
{
    unsigned long long h;
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(&h, dns, 8, cudaMemcpyDeviceToHost));
    return h;
}

int main(int argc, char **argv)
{
    size_t maxn = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)64 << 20;
    const char *rows = argc > 2 ? argv[2] : "p_quiet,fetch_add,put_bw,pingpong";
#define ROW(name) (strstr(rows, name) != NULL)
    shmem_init();
    int me = shmem_my_pe();
    if (shmem_n_pes() != 2) {
        if (me == 0)
            fprintf(stderr, "bench_dev_proxy: run with 2 PEs\n");
        shmem_finalize();
        return 1;
    }
    shmemx_dev_t d;
    if (shmemx_dev_get(&d)) {
        fprintf(stderr, "bench_dev_proxy: no device heap (set USHMEM_DEVICE=0)\n");
        shmem_finalize();
        return 1;
    }
    char *dst = (char *)shmem_malloc(maxn), *src = (char *)shmem_malloc(maxn);
    long long *x = (long long *)shmem_calloc(2, 8);
    unsigned long long *ctr = (unsigned long long *)shmem_calloc(1, 8);
    uint64_t *sig = (uint64_t *)shmem_calloc(1, 8);
    unsigned long long *dns;
    CK(cudaMalloc(&dns, 8));
    CK(cudaMemset(src, 7, maxn));
    const char *where = shmem_ptr(dst, 1 - me) ? "mapped" : "proxy";
    shmem_barrier_all();
    if (me == 0) {
        int it = 2000;
        if (ROW("p_quiet")) {
            k_p_quiet<<<1, 1>>>(d, x, 20, dns); /* warm-up */
            run_ns(dns);
            k_p_quiet<<<1, 1>>>(d, x, it, dns);
            printf("%s\tp_quiet\t8\t%.2f\n", where, run_ns(dns) / 1e3 / it);
        }
        if (ROW("fetch_add")) {
            k_fadd<<<1, 1>>>(d, ctr, 20, dns);
            run_ns(dns);
            k_fadd<<<1, 1>>>(d, ctr, it, dns);
            printf("%s\tfetch_add\t8\t%.2f\n", where, run_ns(dns) / 1e3 / it);
        }
        for (size_t n = 8; ROW("put_bw") && n <= maxn; n *= 8) {
            int iters = n <= 65536 ? 200 : n <= ((size_t)4 << 20) ? 20 : 4;
            k_put_bw<<<1, 512>>>(d, dst, src, n, 2, dns);
            run_ns(dns);
            k_put_bw<<<1, 512>>>(d, dst, src, n, iters, dns);
            double ns = (double)run_ns(dns);
            printf("%s\tput_bw\t%zu\t%.3f\n", where, n, (double)n * iters / ns);
        }
        fflush(stdout);
    }
    shmem_barrier_all();
    if (ROW("pingpong") && shmemx_dev_why() == NULL) {
        int it = 1000;
        k_pingpong<<<1, 1>>>(d, x, x + 1, sig, it, me, dns);
        unsigned long long ns = run_ns(dns);
        if (me == 0)
            printf("%s\tpingpong\t8\t%.2f\n", where, ns / 1e3 / it);
    } else if (ROW("pingpong") && me == 0) {
        printf("%s\tpingpong\t8\tskipped (device waits off: %s)\n", where, shmemx_dev_why());
    }
    fflush(stdout);
    shmem_barrier_all();
    CK(cudaFree(dns));
    shmem_free(sig);
    shmem_free(ctr);
    shmem_free(x);
    shmem_free(src);
    shmem_free(dst);
    shmem_finalize();
    return 0;
}
