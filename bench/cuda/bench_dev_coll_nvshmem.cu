// NVSHMEM's device collectives, block form (nvshmemx_*_block), measured as
// bench_dev_coll.cu measures ushmem's and printed the same way (see there):
// alltoallmem, broadcastmem, fcollectmem, float sum reduce; NVSHMEM has no
// alltoallv, so its row is what an NVSHMEM kernel does instead: one
// putmem_nbi_block per peer, then barrier_block (NVSHMEM's own alltoall: puts,
// then a barrier). NPES PEs (env, default 2) all on GPU 0: this process forks
// NPES-1 children before touching CUDA and they start NVSHMEM with a unique id
// (as bench_coll_nvshmem.cu). Run under MPS (NVSHMEM's full MPG:
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE summing to <= 100), as dev_run.sh does.
// NVSHMEM's broadcast may leave the root's dest alone (OpenSHMEM 1.4's
// broadcast did): the check accepts that and says so once.
// A PE that fails kills the others (PR_SET_PDEATHSIG), so a failure ends the run.
// Build: nvcc -O2 -std=c++17 -arch=sm_90 -rdc=true -I$NVSHMEM/include bench_dev_coll_nvshmem.cu
//        -L$NVSHMEM/lib -l:libnvshmem_host.so.3 -lnvshmem_device
// Run: NPES=2 NVSHMEM_SYMMETRIC_SIZE=1G NVSHMEM_DISABLE_NVLS=1 bench_dev_coll_nvshmem
//      (env COLL_MAX, COLL_OPS as bench_dev_coll)
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#define BENCH_MAX_PES 64

static int g_me = -1, g_np = 0;
static pid_t g_children[BENCH_MAX_PES], g_parent;
struct bench_shared_t {
    long slot[BENCH_MAX_PES];
};
static bench_shared_t *g_sh;

static void die(const char *msg)
{
    fprintf(stderr, "bench_dev_coll_nvshmem PE %d: %s\n", g_me, msg);
    fflush(NULL);
    if (g_me == 0) {
        for (int r = 1; r < g_np; r++)
            if (g_children[r] > 0)
                kill(g_children[r], SIGKILL);
    } else if (getppid() == g_parent) {
        kill(g_parent, SIGKILL); // the other children follow it (PR_SET_PDEATHSIG)
    }
    _exit(1);
}

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            char m_[256];                                                                          \
            snprintf(m_, sizeof m_, "%s:%d: %s: %s", __FILE__, __LINE__, #x,                       \
                     cudaGetErrorString(e_));                                                      \
            die(m_);                                                                               \
        }                                                                                          \
    } while (0)

static const int kBlock = 512;
static const int kReps = 5;
static const double kTargetUs = 20000;

enum { C_ALLTOALL, C_BROADCAST, C_FCOLLECT, C_SUM, C_ALLTOALLV, C_COUNT };
static const char *const c_name[C_COUNT] = {"alltoall", "broadcast", "fcollect", "sum",
                                            "alltoallv"};

// (launch bounds: 512 threads fit an SM only at <= 128 registers a thread;
// NVSHMEM 3.4.5's broadcastmem_block takes no root in device code: the typed
// char form does). One kernel per collective, as in bench_dev_coll.cu.
template <int C>
__global__ void __launch_bounds__(kBlock) k_coll(char *dst, const char *src, size_t b, int iters)
{
    const int me = nvshmem_my_pe(), n = nvshmem_n_pes();
    for (int i = 0; i < iters; i++) {
        switch (C) {
        case C_ALLTOALL: nvshmemx_alltoallmem_block(NVSHMEM_TEAM_WORLD, dst, src, b); break;
        case C_BROADCAST: nvshmemx_char_broadcast_block(NVSHMEM_TEAM_WORLD, dst, src, b, 0); break;
        case C_FCOLLECT: nvshmemx_fcollectmem_block(NVSHMEM_TEAM_WORLD, dst, src, b); break;
        case C_SUM:
            nvshmemx_float_sum_reduce_block(NVSHMEM_TEAM_WORLD, (float *)dst, (const float *)src,
                                            b / 4);
            break;
        default:
            for (int k = 0; k < n; k++) {
                int p = (me + 1 + k) % n;
                nvshmemx_putmem_nbi_block(dst + (size_t)me * b, src + (size_t)p * b, b, p);
            }
            nvshmemx_barrier_block(NVSHMEM_TEAM_WORLD);
            break;
        }
    }
}

// The same patterns as bench_dev_coll.cu.
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

static cudaStream_t g_s;
static cudaEvent_t g_a, g_b;
static bool g_root_untouched_said;

static void launch(int c, char *dst, const char *src, size_t b, int iters)
{
    void *args[] = {&dst, &src, &b, &iters};
    static const void *const kernels[C_COUNT] = {
        (const void *)k_coll<C_ALLTOALL>, (const void *)k_coll<C_BROADCAST>,
        (const void *)k_coll<C_FCOLLECT>, (const void *)k_coll<C_SUM>,
        (const void *)k_coll<C_ALLTOALLV>};
    int rc = nvshmemx_collective_launch(kernels[c], dim3(1), dim3(kBlock), args, 0, g_s);
    if (rc != 0)
        die("nvshmemx_collective_launch failed");
}

// Every PE: the largest of the PEs' v (the shared slots, mapped before the fork).
static long agree_max(long v)
{
    __atomic_store_n(&g_sh->slot[g_me], v, __ATOMIC_SEQ_CST);
    nvshmem_barrier_all();
    long m = v;
    for (int p = 0; p < g_np; p++) {
        long x = __atomic_load_n(&g_sh->slot[p], __ATOMIC_SEQ_CST);
        m = x > m ? x : m;
    }
    nvshmem_barrier_all(); // nobody overwrites a slot before everyone has read it
    return m;
}

static size_t src_bytes(int c, size_t b)
{
    return c == C_ALLTOALL || c == C_ALLTOALLV ? b * (size_t)g_np : b;
}
static size_t dst_bytes(int c, size_t b)
{
    return c == C_BROADCAST || c == C_SUM ? b : b * (size_t)g_np;
}

static void check(int c, char *dst, char *src, size_t b)
{
    k_fill<<<64, 256, 0, g_s>>>(src, src_bytes(c, b), g_me, c);
    CK(cudaGetLastError());
    CK(cudaMemsetAsync(dst, 0, dst_bytes(c, b), g_s));
    CK(cudaStreamSynchronize(g_s));
    nvshmem_barrier_all();
    launch(c, dst, src, b, 1);
    CK(cudaStreamSynchronize(g_s));
    std::vector<char> h(dst_bytes(c, b));
    CK(cudaMemcpy(h.data(), dst, h.size(), cudaMemcpyDeviceToHost));
    bool root_untouched = c == C_BROADCAST && g_me == 0 && h[0] == 0;
    size_t bad = 0, first = ~(size_t)0;
    for (size_t k = 0; k < h.size() && !root_untouched; k++) {
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
    if (root_untouched && !g_root_untouched_said) {
        printf("# note: NVSHMEM's broadcast leaves the root's dest alone\n");
        fflush(stdout);
        g_root_untouched_said = true;
    }
    if (bad) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s of %zu bytes per PE: %zu bad bytes, the first at %zu",
                 c_name[c], b, bad, first);
        die(msg);
    }
    nvshmem_barrier_all();
}

static double timed_us(int c, char *dst, const char *src, size_t b, int iters)
{
    nvshmem_barrier_all();
    CK(cudaEventRecord(g_a, g_s));
    launch(c, dst, src, b, iters);
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

static int run(int rank, nvshmemx_uniqueid_t id, size_t cmax, const char *ops)
{
    g_me = rank;
    CK(cudaSetDevice(0));
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (nvshmemx_set_attr_uniqueid_args(rank, g_np, &id, &attr) != 0)
        die("nvshmemx_set_attr_uniqueid_args failed");
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0)
        die("nvshmemx_init_attr failed");
    if (nvshmem_my_pe() != rank || nvshmem_n_pes() != g_np)
        die("NVSHMEM's PE numbering differs from the unique-id ranks");
    if (rank == 0) {
        cudaDeviceProp prop;
        CK(cudaGetDeviceProperties(&prop, 0));
        const char *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
        printf("# bench_dev_coll_nvshmem: %d PEs, CUDA device 0 (%s), "
               "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s, 1 CTA x %d threads per PE, COLL_MAX=%zu\n",
               g_np, prop.name, pct ? pct : "unset", kBlock, cmax);
        printf("# note: NVSHMEM has no alltoallv: its row is putmem_nbi_block per peer + "
               "barrier_block\n");
        fflush(stdout);
    }
    CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
    CK(cudaEventCreate(&g_a));
    CK(cudaEventCreate(&g_b));
    size_t cap = cmax * (size_t)g_np;
    char *dst = (char *)nvshmem_malloc(cap), *src = (char *)nvshmem_malloc(cap);
    if (!dst || !src)
        die("nvshmem_malloc failed (NVSHMEM_SYMMETRIC_SIZE: 2 x COLL_MAX x NPES, plus room)");

    std::vector<size_t> sizes;
    for (size_t b = 8; b <= cmax; b *= 4)
        sizes.push_back(b);
    if (sizes.back() != cmax)
        sizes.push_back(cmax);
    for (int c = 0; c < C_COUNT; c++) {
        if (!wanted(ops, c))
            continue;
        for (size_t b : sizes) {
            if (c == C_SUM && b % 4)
                continue;
            check(c, dst, src, b);
            double one = timed_us(c, dst, src, b, 4) / 4;
            int iters = (int)agree_max((long)std::max(3.0, std::min(2000.0, kTargetUs / one)));
            std::vector<double> v;
            for (int r = 0; r < kReps; r++)
                v.push_back(timed_us(c, dst, src, b, iters) / iters);
            std::sort(v.begin(), v.end());
            if (rank == 0) {
                printf("R coll_%s block%d %zu %.3f\n", c_name[c], g_np, b, v[kReps / 2]);
                fflush(stdout);
            }
        }
    }
    CK(cudaStreamSynchronize(g_s));
    nvshmem_barrier_all();
    if (rank == 0)
        printf("# done\n");
    nvshmem_free(src);
    nvshmem_free(dst);
    nvshmem_finalize();
    return 0;
}

int main(void)
{
    const char *cm = getenv("COLL_MAX"), *ops = getenv("COLL_OPS"), *np = getenv("NPES");
    size_t cmax = cm && *cm ? strtoull(cm, NULL, 0) : (size_t)4 << 20;
    int n = np && *np ? atoi(np) : 2;
    if (!ops || !*ops)
        ops = "alltoall,broadcast,fcollect,sum,alltoallv";
    if (cmax < 8 || n < 1 || n > BENCH_MAX_PES) {
        fprintf(stderr, "COLL_MAX must be at least 8 and NPES 1..%d\n", BENCH_MAX_PES);
        return 2;
    }
    g_np = n;
    g_sh = (bench_shared_t *)mmap(NULL, sizeof(bench_shared_t), PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_sh == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    // Fork first, CUDA and NVSHMEM after (neither survives a fork).
    g_parent = getpid();
    int pipes[BENCH_MAX_PES][2];
    fflush(NULL);
    for (int r = 1; r < n; r++) {
        if (pipe(pipes[r]) != 0) {
            perror("pipe");
            die("pipe failed");
        }
        pid_t c = fork();
        if (c < 0) {
            perror("fork");
            die("fork failed");
        }
        if (c == 0) {
            g_me = r;
            if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != g_parent)
                _exit(1);
            nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
            if (read(pipes[r][0], &id, sizeof id) != (ssize_t)sizeof id)
                die("reading the unique id failed");
            return run(r, id, cmax, ops);
        }
        g_children[r] = c;
    }
    g_me = 0;
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (nvshmemx_get_uniqueid(&id) != 0)
        die("nvshmemx_get_uniqueid failed");
    for (int r = 1; r < n; r++)
        if (write(pipes[r][1], &id, sizeof id) != (ssize_t)sizeof id)
            die("writing the unique id failed");
    int rc = run(0, id, cmax, ops);
    for (int r = 1; r < n; r++) {
        int st = 0;
        if (waitpid(g_children[r], &st, 0) != g_children[r] || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0) {
            fprintf(stderr, "bench_dev_coll_nvshmem: PE %d failed (status 0x%x)\n", r, st);
            rc = 1;
        }
    }
    return rc;
}
