// Stream-ordered collectives on device memory (issue 13), NVSHMEM side: the
// measurements of bench_coll_ushmem.cu, printed the same way (impl "nvshmem",
// or argv[1]). NPES PEs (env, default 2) all on GPU 0: this process forks
// NPES-1 children before touching CUDA and they start NVSHMEM with a unique id
// (as bench_nvshmem.cu). PE 0 prints:
//   R nvshmem barrier_all_on_stream_us 0 <µs>   (and _wall_us)
//   R nvshmem host_barrier_all_us 0 <µs>
//   R nvshmem alltoall_us|broadcast_us|fcollect_us|sum_i64_us <bytes per PE> <µs>
// Same sizes, iteration counts, repetitions, COLL_MAX / COLL_REP_MS / COLL_OPS
// and correctness checks as bench_coll_ushmem.cu. NVSHMEM's broadcast may leave
// the root's dest alone (OpenSHMEM 1.4 broadcast did): there the root accepts
// its dest untouched too, and says so once.
// A PE that fails kills the others (children die with their parent:
// PR_SET_PDEATHSIG), so a failure ends the run instead of hanging it.
// Build: nvcc -O2 -arch=sm_90 -rdc=true -I$NVSHMEM/include bench_coll_nvshmem.cu
//        -L$NVSHMEM/lib -l:libnvshmem_host.so.3 -lnvshmem_device; run with NVSHMEM_DISABLE_NVLS=1.
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
#include <time.h>
#include <unistd.h>

#define BENCH_MAX_PES 64

static int g_me = -1, g_npes = 0;
static const char *g_impl = "nvshmem";
static pid_t g_children[BENCH_MAX_PES], g_parent;

// Shared by the PEs (mapped before the fork): the agreement slots.
struct bench_shared_t {
    long slot[BENCH_MAX_PES];
};
static bench_shared_t *g_sh;

static void die(const char *msg)
{
    fprintf(stderr, "bench_coll_nvshmem PE %d: %s\n", g_me, msg);
    fflush(NULL);
    if (g_me == 0) {
        for (int r = 1; r < g_npes; r++)
            if (g_children[r] > 0)
                kill(g_children[r], SIGKILL);
    } else if (getppid() == g_parent) {
        // (once the parent is gone, getppid() names a reaper, never to be killed)
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

static double now_us()
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

/* ---- agreement: every PE learns the largest of the PEs' values ---- */

static long agree_max(long v)
{
    __atomic_store_n(&g_sh->slot[g_me], v, __ATOMIC_SEQ_CST);
    nvshmem_barrier_all();
    long m = __atomic_load_n(&g_sh->slot[0], __ATOMIC_SEQ_CST);
    for (int p = 1; p < g_npes; p++) {
        long x = __atomic_load_n(&g_sh->slot[p], __ATOMIC_SEQ_CST);
        m = x > m ? x : m;
    }
    nvshmem_barrier_all(); // nobody overwrites a slot before everyone has read it
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
        rc = nvshmemx_alltoallmem_on_stream(NVSHMEM_TEAM_WORLD, dst, src, bytes, s);
        break;
    case COLL_BROADCAST:
        rc = nvshmemx_broadcastmem_on_stream(NVSHMEM_TEAM_WORLD, dst, src, bytes, 0, s);
        break;
    case COLL_FCOLLECT:
        rc = nvshmemx_fcollectmem_on_stream(NVSHMEM_TEAM_WORLD, dst, src, bytes, s);
        break;
    case COLL_SUM:
        rc = nvshmemx_int64_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, (int64_t *)dst,
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

static uint64_t g_seed;
static uint64_t word(int pe, int op, size_t bytes, size_t k)
{
    uint64_t w = mix(g_seed ^ mix(((uint64_t)pe << 40) ^ ((uint64_t)op << 32) ^ bytes) ^ k);
    if (op == COLL_SUM) // |value| < 2^39: sums cannot overflow
        w = (uint64_t)((int64_t)(w >> 24) - ((int64_t)1 << 39));
    return w;
}

static void check_op(int op, size_t bytes, char *dst, char *src, size_t cap, cudaStream_t s)
{
    static int said_root;
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
    nvshmem_barrier_all();
    run_op(op, dst, src, bytes, s);
    CK(cudaStreamSynchronize(s)); // the collective is complete here: no host barrier first
    CK(cudaMemcpy(h, dst, dst_words * 8, cudaMemcpyDeviceToHost));
    int root_untouched = op == COLL_BROADCAST && g_me == 0;
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
        if (root_untouched && h[k] != 0xa5a5a5a5a5a5a5a5ull)
            root_untouched = 0;
        if (h[k] != want && !root_untouched) {
            char msg[256];
            snprintf(msg, sizeof msg,
                     "check %s at %zu bytes per PE failed (%s, %d PEs): word %zu is %016llx, "
                     "expected %016llx",
                     op_name[op], bytes, g_impl, g_npes, k, (unsigned long long)h[k],
                     (unsigned long long)want);
            die(msg);
        }
    }
    if (root_untouched && !said_root) {
        printf("# note: NVSHMEM's broadcast leaves the root's dest unchanged\n");
        said_root = 1;
    }
    free(h);
    nvshmem_barrier_all(); // a PE that failed has ended the run before this returns
}

/* ---- timing ---- */

static double g_rep_us = 100e3; // longest repetition (COLL_REP_MS)

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
        nvshmem_barrier_all();
        CK(cudaEventRecord(a, s));
        for (int i = 0; i < 5; i++)
            run_op(op, dst, src, sz, s);
        CK(cudaEventRecord(b, s));
        int it = pick_iters(base, agree_max((long)(elapsed_us(a, b) / 5 * 1e3)), 5);
        double us = 1e30;
        for (int rep = -1; rep < 3; rep++) { /* rep -1: warm-up */
            nvshmem_barrier_all();
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
    nvshmem_barrier_all();
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < 20; i++)
        nvshmemx_barrier_all_on_stream(s);
    CK(cudaEventRecord(b, s));
    double save = g_rep_us;
    g_rep_us = 1e6;
    int nb = pick_iters(2000, agree_max((long)(elapsed_us(a, b) / 20 * 1e3)), 20);
    for (int i = 0; i < 100 && i < nb; i++)
        nvshmemx_barrier_all_on_stream(s);
    CK(cudaStreamSynchronize(s));
    nvshmem_barrier_all();
    double t0 = now_us();
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < nb; i++)
        nvshmemx_barrier_all_on_stream(s);
    CK(cudaEventRecord(b, s));
    double gpu = elapsed_us(a, b) / nb, wall = (now_us() - t0) / nb;
    if (g_me == 0)
        printf("R %s barrier_all_on_stream_us 0 %.3f\nR %s barrier_all_on_stream_wall_us 0 %.3f\n",
               g_impl, gpu, g_impl, wall);
    fflush(stdout);

    // host barrier_all: 200000 (fewer if one takes > 5 µs; NVSHMEM's: µs to ms)
    nvshmem_barrier_all();
    t0 = now_us();
    for (int i = 0; i < 20; i++)
        nvshmem_barrier_all();
    int nh = pick_iters(200000, agree_max((long)((now_us() - t0) / 20 * 1e3)), 100);
    for (int i = 0; i < nh / 20; i++)
        nvshmem_barrier_all();
    t0 = now_us();
    for (int i = 0; i < nh; i++)
        nvshmem_barrier_all();
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

static int run(int rank, int n, nvshmemx_uniqueid_t id, size_t maxblk, const char *ops)
{
    g_me = rank;
    g_npes = n;
    CK(cudaSetDevice(0)); // every PE on GPU 0 (of those CUDA_VISIBLE_DEVICES shows)
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (nvshmemx_set_attr_uniqueid_args(rank, n, &id, &attr) != 0)
        die("nvshmemx_set_attr_uniqueid_args failed");
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0)
        die("nvshmemx_init_attr failed");
    if (nvshmem_my_pe() != rank || nvshmem_n_pes() != n)
        die("NVSHMEM's PE numbering differs from the unique-id ranks");
    size_t cap = maxblk * n;
    char *dst = (char *)nvshmem_malloc(cap), *src = (char *)nvshmem_malloc(cap);
    if (!dst || !src) {
        char msg[160];
        snprintf(msg, sizeof msg, "nvshmem_malloc of 2 x %zu bytes failed (NVSHMEM_SYMMETRIC_SIZE)",
                 cap);
        die(msg);
    }
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    g_seed = (uint64_t)agree_max(rank == 0 ? (long)(now_us() * 1e3) & 0x7fffffffffffL : 0);
    if (rank == 0) {
        const char *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
#ifdef NVSHMEM_VENDOR_MAJOR_VERSION
        printf("# mode impl=%s npes=%d device=0 NVSHMEM %d.%d.%d "
               "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s COLL_MAX=%zu\n",
               g_impl, n, (int)NVSHMEM_VENDOR_MAJOR_VERSION, (int)NVSHMEM_VENDOR_MINOR_VERSION,
               (int)NVSHMEM_VENDOR_PATCH_VERSION, pct ? pct : "(unset)", maxblk);
#else
        printf(
            "# mode impl=%s npes=%d device=0 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s COLL_MAX=%zu\n",
            g_impl, n, pct ? pct : "(unset)", maxblk);
#endif
        fflush(stdout);
    }

    barriers(s);
    for (int op = 0; op < COLL_COUNT; op++) {
        if (!op_wanted(ops, op))
            continue;
        check_op(op, 8, dst, src, cap, s);
        check_op(op, maxblk, dst, src, cap, s);
        if (rank == 0) {
            printf("# check %s ok (8 and %zu bytes per PE)\n", op_name[op], maxblk);
            fflush(stdout);
        }
        sweep(op, dst, src, maxblk, s);
    }

    CK(cudaStreamSynchronize(s));
    nvshmem_barrier_all();
    CK(cudaStreamDestroy(s));
    nvshmem_free(src);
    nvshmem_free(dst);
    nvshmem_finalize();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        g_impl = argv[1];
    const char *cm = getenv("COLL_MAX"), *rm = getenv("COLL_REP_MS"), *ops = getenv("COLL_OPS");
    const char *np = getenv("NPES");
    size_t cmax = cm && *cm ? strtoull(cm, NULL, 0) : (size_t)4 << 20;
    int n = np && *np ? atoi(np) : 2;
    if (rm && *rm)
        g_rep_us = atof(rm) * 1e3;
    if (!ops || !*ops)
        ops = "alltoall,broadcast,fcollect,sum";
    if (cmax < 8 || n < 1 || n > BENCH_MAX_PES) {
        fprintf(stderr, "COLL_MAX must be at least 8 and NPES 1..%d\n", BENCH_MAX_PES);
        return 2;
    }
    size_t maxblk = 8;
    while (maxblk * 2 <= cmax)
        maxblk *= 2;
    g_npes = n;
    g_sh = (bench_shared_t *)mmap(NULL, sizeof(bench_shared_t), PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_sh == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    // Fork first, CUDA and NVSHMEM after (neither survives a fork).
    g_parent = getpid();
    int pipes[BENCH_MAX_PES][2];
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
            return run(r, n, id, maxblk, ops);
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
    int rc = run(0, n, id, maxblk, ops);
    for (int r = 1; r < n; r++) {
        int st = 0;
        if (waitpid(g_children[r], &st, 0) != g_children[r] || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0) {
            fprintf(stderr, "bench_coll_nvshmem: PE %d failed (status 0x%x)\n", r, st);
            rc = 1;
        }
    }
    return rc;
}
