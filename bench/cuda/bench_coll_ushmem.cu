// Stream-ordered collectives on device memory (issue 13), ushmem side: every
// PE of the job on one GPU (ushrun -n N, USHMEM_DEVICE=0); bench_coll_nvshmem.cu
// measures the same with NVSHMEM, coll_run.sh runs both with and without MPS
// and coll_table.py joins them. PE 0 prints one line per number:
//   R <impl> <metric> <bytes> <value>
// impl: argv[1] (default "ushmem"; coll_run.sh passes ushmem_copy etc. when it
// sets USHMEM_CUDA_COLL). Metrics (µs):
//   barrier_all_on_stream_us 0   GPU time per barrier, back-to-back on a stream
//   host_barrier_all_us 0        shmem_barrier_all, host wall time per call
//   alltoall_us B / broadcast_us B / fcollect_us B / sum_i64_us B
//       GPU time per collective on a non-blocking stream (event-timed), B bytes
//       per PE (alltoall: per block; sum: B/8 int64 elements), B = 8 .. COLL_MAX
//       (env, default 4 MiB) doubling; 200 back-to-back calls below 1 MiB, 20
//       from there, one warm-up repetition then the best of 3, shmem_barrier_all
//       between repetitions (as bench_ushmem.cu's coll_sweep). A repetition that
//       would last longer than COLL_REP_MS (default 100) runs fewer calls (all
//       PEs agree on the count; PE 0 prints "# iters ..."), so that a slow mode
//       cannot stall the whole run.
// Before each op's sweep, the op runs once at the smallest and the largest size
// with random data and every PE checks what it received against the host's
// result; a mismatch prints one line (op, size, PE, index) and ends the job
// (exit 1). "# check <op> ok" on PE 0 otherwise. COLL_OPS (env, default
// "alltoall,broadcast,fcollect,sum") picks the ops.
// Build: nvcc -O2 -arch=sm_90 -Iinclude bench_coll_ushmem.cu BUILD/libushmem.a -ldl -lpthread
#include <cuda_runtime.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_NAME                "bench_coll_ushmem"
#define BENCH_GLOBAL_EXIT(status) shmem_global_exit(status)
#include "bench_util.cuh"

static int g_npes = 0;
static const char *g_impl = "ushmem";

static double now_us()
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

/* ---- agreement: every PE learns the largest of the PEs' values ---- */

static long *g_agree; // host symmetric heap, one slot per PE

static long agree_max(long v)
{
    for (int p = 0; p < g_npes; p++)
        shmem_long_p(&g_agree[g_me], v, p);
    shmem_barrier_all(); // completes the puts
    long m = g_agree[0];
    for (int p = 1; p < g_npes; p++)
        m = g_agree[p] > m ? g_agree[p] : m;
    shmem_barrier_all(); // nobody overwrites a slot before everyone has read it
    return m;
}

/* ---- the collectives ---- */

enum { COLL_ALLTOALL, COLL_BROADCAST, COLL_FCOLLECT, COLL_SUM, COLL_COUNT };
static const char *const op_name[COLL_COUNT] = {"alltoall", "broadcast", "fcollect", "sum"};
static const char *const op_metric[COLL_COUNT] = {"alltoall_us", "broadcast_us", "fcollect_us",
                                                  "sum_i64_us"};

static void run_op(int op, char *dst, const char *src, size_t bytes, cudaStream_t s)
{
    int rc = 0;
    switch (op) {
    case COLL_ALLTOALL:
        rc = shmemx_alltoallmem_on_stream(SHMEM_TEAM_WORLD, dst, src, bytes, s);
        break;
    case COLL_BROADCAST:
        rc = shmemx_broadcastmem_on_stream(SHMEM_TEAM_WORLD, dst, src, bytes, 0, s);
        break;
    case COLL_FCOLLECT:
        rc = shmemx_fcollectmem_on_stream(SHMEM_TEAM_WORLD, dst, src, bytes, s);
        break;
    case COLL_SUM:
        rc = shmemx_int64_sum_reduce_on_stream(SHMEM_TEAM_WORLD, (int64_t *)dst,
                                               (const int64_t *)src, bytes / 8, s);
        break;
    }
    if (rc != 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s at %zu bytes returned %d", op_name[op], bytes, rc);
        die(msg);
    }
}

/* ---- correctness: random data, every PE checks what it received ---- */

static uint64_t mix(uint64_t x) // splitmix64's finalizer
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Word k of PE pe's source for (op, bytes); seed from the time, agreed on.
static uint64_t g_seed;
static uint64_t word(int pe, int op, size_t bytes, size_t k)
{
    uint64_t w = mix(g_seed ^ mix(((uint64_t)pe << 40) ^ ((uint64_t)op << 32) ^ bytes) ^ k);
    if (op == COLL_SUM) // |value| < 2^39: the sum of up to 2^20 PEs cannot overflow
        w = (uint64_t)((int64_t)(w >> 24) - ((int64_t)1 << 39));
    return w;
}

static void check_op(int op, size_t bytes, char *dst, char *src, size_t cap, cudaStream_t s)
{
    size_t nw = bytes / 8, src_words = op == COLL_ALLTOALL ? nw * g_npes : nw;
    size_t dst_words = op == COLL_ALLTOALL || op == COLL_FCOLLECT ? nw * g_npes : nw;
    uint64_t *h = (uint64_t *)malloc((src_words > dst_words ? src_words : dst_words) * 8);
    if (!h)
        die("malloc failed");
    for (size_t k = 0; k < src_words; k++)
        h[k] = word(g_me, op, bytes, k);
    CK(cudaMemcpy(src, h, src_words * 8, cudaMemcpyHostToDevice));
    CK(cudaMemset(dst, 0xa5, cap));
    CK(cudaDeviceSynchronize());
    shmem_barrier_all();
    run_op(op, dst, src, bytes, s);
    CK(cudaStreamSynchronize(s)); // the collective is complete here: no host barrier first
    CK(cudaMemcpy(h, dst, dst_words * 8, cudaMemcpyDeviceToHost));
    for (size_t k = 0; k < dst_words; k++) {
        uint64_t want = 0;
        size_t blk = k / nw, off = k % nw;
        switch (op) {
        case COLL_ALLTOALL: want = word((int)blk, op, bytes, (size_t)g_me * nw + off); break;
        case COLL_BROADCAST: want = word(0, op, bytes, k); break;
        case COLL_FCOLLECT: want = word((int)blk, op, bytes, off); break;
        case COLL_SUM:
            for (int p = 0; p < g_npes; p++)
                want += word(p, op, bytes, k);
            break;
        }
        if (h[k] != want) {
            fprintf(stderr,
                    "bench_coll_ushmem PE %d: check %s at %zu bytes per PE failed (%s, %d PEs): "
                    "word %zu is %016llx, expected %016llx\n",
                    g_me, op_name[op], bytes, g_impl, g_npes, k, (unsigned long long)h[k],
                    (unsigned long long)want);
            fflush(NULL);
            shmem_global_exit(1);
            exit(1);
        }
    }
    free(h);
    shmem_barrier_all(); // a PE that failed has ended the job before this returns
}

/* ---- timing ---- */

static double g_rep_us = 100e3; // longest repetition (COLL_REP_MS)

// Calls per repetition: base, fewer when a call takes longer than g_rep_us / base
// (per_call_ns: the slowest PE's probe).
static int pick_iters(int base, long per_call_ns, int least)
{
    double fit = g_rep_us * 1e3 / (per_call_ns > 0 ? per_call_ns : 1);
    return fit >= base ? base : fit < least ? least : (int)fit;
}

static double elapsed_us(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(&ms, a, b));
    return ms * 1e3;
}

static void sweep(int op, char *dst, char *src, size_t maxblk, cudaStream_t s)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (size_t sz = 8; sz <= maxblk; sz *= 2) {
        int base = sz < (1u << 20) ? 200 : 20;
        // probe: 5 calls, to bound a repetition of a slow mode
        shmem_barrier_all();
        CK(cudaEventRecord(a, s));
        for (int i = 0; i < 5; i++)
            run_op(op, dst, src, sz, s);
        CK(cudaEventRecord(b, s));
        int it = pick_iters(base, agree_max((long)(elapsed_us(a, b) / 5 * 1e3)), 5);
        double us = 1e30;
        for (int rep = -1; rep < 3; rep++) { /* rep -1: warm-up */
            shmem_barrier_all();
            CK(cudaEventRecord(a, s));
            for (int i = 0; i < it; i++)
                run_op(op, dst, src, sz, s);
            CK(cudaEventRecord(b, s));
            double t = elapsed_us(a, b) / it;
            if (rep >= 0 && t < us)
                us = t;
        }
        if (g_me == 0) {
            printf("R %s %s %zu %.3f\n", g_impl, op_metric[op], sz, us);
            if (it < base)
                printf("# iters %s %zu: %d calls per repetition (not %d; COLL_REP_MS)\n",
                       op_name[op], sz, it, base);
            fflush(stdout);
        }
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
}

static void barriers(cudaStream_t s)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    // barrier_all_on_stream: 2000 back-to-back (fewer if one takes > 0.5 ms)
    shmem_barrier_all();
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < 20; i++)
        shmemx_barrier_all_on_stream(s);
    CK(cudaEventRecord(b, s));
    double save = g_rep_us;
    g_rep_us = 1e6;
    int nb = pick_iters(2000, agree_max((long)(elapsed_us(a, b) / 20 * 1e3)), 20);
    for (int i = 0; i < 100 && i < nb; i++)
        shmemx_barrier_all_on_stream(s);
    CK(cudaStreamSynchronize(s));
    shmem_barrier_all();
    double t0 = now_us();
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < nb; i++)
        shmemx_barrier_all_on_stream(s);
    CK(cudaEventRecord(b, s));
    double gpu = elapsed_us(a, b) / nb, wall = (now_us() - t0) / nb;
    if (g_me == 0)
        printf("R %s barrier_all_on_stream_us 0 %.3f\nR %s barrier_all_on_stream_wall_us 0 %.3f\n",
               g_impl, gpu, g_impl, wall);
    fflush(stdout);

    // host barrier_all: 200000 (fewer if one takes > 5 µs)
    shmem_barrier_all();
    t0 = now_us();
    for (int i = 0; i < 1000; i++)
        shmem_barrier_all();
    int nh = pick_iters(200000, agree_max((long)((now_us() - t0) / 1000 * 1e3)), 200);
    for (int i = 0; i < nh / 20; i++)
        shmem_barrier_all();
    t0 = now_us();
    for (int i = 0; i < nh; i++)
        shmem_barrier_all();
    double hb = (now_us() - t0) / nh;
    if (g_me == 0)
        printf("R %s host_barrier_all_us 0 %.3f\n", g_impl, hb);
    fflush(stdout);
    g_rep_us = save;
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
}

static int op_wanted(const char *list, int op)
{
    const char *p = list;
    size_t n = strlen(op_name[op]);
    while ((p = strstr(p, op_name[op])) != NULL) {
        if ((p == list || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return 1;
        p += n;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        g_impl = argv[1];
    const char *cm = getenv("COLL_MAX"), *rm = getenv("COLL_REP_MS"), *ops = getenv("COLL_OPS");
    size_t cmax = cm && *cm ? strtoull(cm, NULL, 0) : (size_t)4 << 20;
    if (rm && *rm)
        g_rep_us = atof(rm) * 1e3;
    if (!ops || !*ops)
        ops = "alltoall,broadcast,fcollect,sum";
    if (cmax < 8) {
        fprintf(stderr, "COLL_MAX must be at least 8\n");
        return 2;
    }
    size_t maxblk = 8;
    while (maxblk * 2 <= cmax)
        maxblk *= 2;

    shmem_init();
    g_me = shmem_my_pe();
    g_npes = shmem_n_pes();
    g_agree = (long *)shmem_malloc_with_hints(sizeof(long) * g_npes, SHMEMX_MALLOC_HOST);
    if (!g_agree)
        die("shmem_malloc_with_hints(SHMEMX_MALLOC_HOST) failed");
    size_t cap = maxblk * g_npes; // alltoall / fcollect: one block per PE
    char *dst = (char *)shmem_malloc(cap), *src = (char *)shmem_malloc(cap);
    if (!dst || !src) {
        char msg[160];
        snprintf(msg, sizeof msg, "shmem_malloc of 2 x %zu bytes failed (USHMEM_DEVICE_HEAP_SIZE)",
                 cap);
        die(msg);
    }
    cudaPointerAttributes pa;
    memset(&pa, 0, sizeof pa);
    CK(cudaPointerGetAttributes(&pa, dst));
    if (pa.type != cudaMemoryTypeDevice) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "shmem_malloc returned memory of type %d, not device memory (USHMEM_DEVICE?)",
                 (int)pa.type);
        die(msg);
    }
    int dev = pa.device;
    CK(cudaSetDevice(dev)); // the runtime on the device the heap lives on
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    g_seed = (uint64_t)agree_max(g_me == 0 ? (long)(now_us() * 1e3) & 0x7fffffffffffL : 0);

    if (g_me == 0) {
        const char *coll = getenv("USHMEM_CUDA_COLL"), *bar = getenv("USHMEM_CUDA_BARRIER"),
                   *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
        const char *why = shmemx_dev_why();
        printf("# mode impl=%s npes=%d device=%d USHMEM_CUDA_COLL=%s USHMEM_CUDA_BARRIER=%s "
               "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s COLL_MAX=%zu dev_why=%s\n",
               g_impl, g_npes, dev, coll ? coll : "(unset)", bar ? bar : "(unset)",
               pct ? pct : "(unset)", maxblk, why ? why : "NULL (device waits allowed)");
        fflush(stdout);
    }

    barriers(s);
    for (int op = 0; op < COLL_COUNT; op++) {
        if (!op_wanted(ops, op))
            continue;
        check_op(op, 8, dst, src, cap, s);
        check_op(op, maxblk, dst, src, cap, s);
        if (g_me == 0) {
            printf("# check %s ok (8 and %zu bytes per PE)\n", op_name[op], maxblk);
            fflush(stdout);
        }
        sweep(op, dst, src, maxblk, s);
    }

    CK(cudaStreamSynchronize(s));
    shmem_barrier_all();
    CK(cudaStreamDestroy(s));
    shmem_free(src);
    shmem_free(dst);
    shmem_free(g_agree);
    shmem_finalize();
    return 0;
}
