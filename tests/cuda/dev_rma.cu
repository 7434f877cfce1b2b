/* Device API RMA without device-side waits, so it runs on any GPU setup (a
 * shared GPU without MPS included): PE i's kernel puts to PE (i+1)%n with
 * putmem_signal (thread / warp / block, 1..8 CTAs, each unit of work signals
 * ADD 1), the receiver waits on its stream (shmemx_signal_wait_until_on_stream:
 * no kernel spins) and a kernel checks every byte and the poisoned guard bytes
 * around them; getmem of random ranges from the left neighbour; typed p/g and
 * put/get; shmemx_dev_ptr.
 *
 * Sizes 1 B .. 64 MiB (log-uniform, plus 1, 2, 3, 15, 16, 17, 4095, 4096,
 * 4097), source and destination offsets 0..63. USHMEM_TEST_SEED replays a run. */
#include "dev_test.cuh"

enum { V_THREAD, V_WARP, V_BLOCK };
static const char *const vname[] = {"thread", "warp", "block"};
/* Put modes: putmem_signal; putmem_signal_nbi; putmem then signal_op (the
 * release covers the group's stores); putmem_nbi, quiet, signal_op; putmem_nbi,
 * quiet, signal_op_relaxed (the quiet alone orders the data). */
enum { M_SIGNAL, M_SIGNAL_NBI, M_PUT_SIGOP, M_NBI_QUIET_SIGOP, M_NBI_QUIET_RELAXED, M_COUNT };
static const char *const mname[] = {"putmem_signal", "putmem_signal_nbi", "putmem+signal_op",
                                    "putmem_nbi+quiet+signal_op",
                                    "putmem_nbi+quiet+signal_op_relaxed"};

static const size_t MAXN = (size_t)64 << 20;
static const size_t MAXGET = (size_t)16 << 20;
static const size_t GUARD = 4096;
static const size_t SRC_SZ = MAXN + 64;
static const size_t DST_SZ = GUARD + 64 + MAXN + GUARD;
static const size_t PRIV_SZ = GUARD + 64 + MAXGET + GUARD;
static const size_t PER_THREAD = 32 << 10; /* bytes per thread at most: bounds the run time */
/* USHMEM_TEST_QUICK (PEs on pretend hosts, where every transfer to the other
 * host goes through the proxy): fewer transfers, the same sizes. */
static int NPUT = 140, NGET = 60;
static const size_t fixed_sizes[] = {1, 2, 3, 15, 16, 17, 4095, 4096, 4097};
static const int NFIXED = (int)(sizeof fixed_sizes / sizeof fixed_sizes[0]);

typedef struct {
    size_t n;
    unsigned soff, doff;
    int variant, mode, priv;
    unsigned nctas, bx, by;
    unsigned units; /* signals the receiver waits for */
    uint64_t seed;
} xfer_t;

/* The transfer PE pe starts in iteration it of a phase (0 put, 1 get); every PE
 * can compute any PE's. */
static xfer_t make_xfer(int phase, int it, int pe, int atomics)
{
    static const unsigned shapes[][2] = {{1, 1},    {33, 1}, {128, 1}, {256, 1},
                                         {1024, 1}, {32, 4}, {16, 7}};
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    const size_t maxn = phase ? MAXGET : MAXN;
    uint64_t st = dt_mix(dt_seed() ^ (phase ? 0x6e7ULL : 0x9a7ULL) ^ ((uint64_t)it << 16) ^
                         ((uint64_t)pe << 40));
    xfer_t x;
    memset(&x, 0, sizeof x);
    x.seed = dt_rand(&st) | 1;
    x.soff = (unsigned)(dt_rand(&st) % 64);
    x.doff = (unsigned)(dt_rand(&st) % 64);
    x.mode = (int)(dt_rand(&st) % M_COUNT);
    x.priv = (int)(dt_rand(&st) & 1);
    x.nctas = 1 + (unsigned)(dt_rand(&st) % 8);
    int fixed = it < 3 * NFIXED, biggest = it == 3 * NFIXED;
    x.variant = fixed ? it % 3 : biggest ? V_BLOCK : (int)(dt_rand(&st) % 3);
    if (x.variant == V_THREAD) {
        static const unsigned tpb[] = {1, 32, 64};
        x.bx = tpb[dt_rand(&st) % 3];
        x.by = 1;
    } else if (x.variant == V_WARP) {
        x.bx = 32u << (dt_rand(&st) % 4);
        x.by = 1;
    } else {
        int k = (int)(dt_rand(&st) % nshapes);
        x.bx = shapes[k][0];
        x.by = shapes[k][1];
    }
    if (biggest) {
        x.nctas = 8;
        x.bx = 1024;
        x.by = 1;
    }
    if (!atomics) { /* one unit, SIGNAL_SET: no device atomics on peers */
        x.nctas = 1;
        if (x.variant == V_THREAD)
            x.bx = 1;
        if (x.variant == V_WARP)
            x.bx = 32;
    }
    unsigned threads = x.bx * x.by;
    x.units = x.variant == V_THREAD ? x.nctas * threads
              : x.variant == V_WARP ? x.nctas * (threads / 32)
                                    : x.nctas;
    size_t cap = (size_t)x.nctas * threads * PER_THREAD;
    if (cap > maxn)
        cap = maxn;
    x.n = fixed ? fixed_sizes[it / 3] : biggest ? maxn : dt_log_uniform(&st, cap);
    return x;
}

static void describe(char *buf, size_t len, const char *what, int it, int from, int to,
                     const xfer_t *x)
{
    snprintf(buf, len,
             "%s iteration %d, PE %d -> PE %d: %zu bytes, src offset %u, dst offset %u%s, %s, %u "
             "CTAs of %ux%u, %s",
             what, it, from, to, x->n, x->soff, x->doff, x->priv ? " (private buffer)" : "",
             vname[x->variant], x->nctas, x->bx, x->by, mname[x->mode]);
}

/* This thread's unit of work and its byte range [lo, hi) of n. */
__device__ static void unit_range(int variant, size_t n, size_t *lo, size_t *hi)
{
    unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned nt = blockDim.x * blockDim.y * blockDim.z;
    unsigned long long unit, units;
    if (variant == V_THREAD) {
        unit = (unsigned long long)blockIdx.x * nt + tid;
        units = (unsigned long long)gridDim.x * nt;
    } else if (variant == V_WARP) {
        unit = (unsigned long long)blockIdx.x * (nt / 32) + tid / 32;
        units = (unsigned long long)gridDim.x * (nt / 32);
    } else {
        unit = blockIdx.x;
        units = gridDim.x;
    }
    *lo = (size_t)(n * unit / units);
    *hi = (size_t)(n * (unit + 1) / units);
}

__global__ void k_put(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, int variant, int mode, char *dst,
                      const char *src, size_t n, uint64_t *sig, int sig_op, int pe)
{
    size_t lo, hi;
    unit_range(variant, n, &lo, &hi);
    char *dd = dst + lo;
    const char *ss = src + lo;
    size_t m = hi - lo;
    unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    if (variant == V_THREAD) {
        switch (mode) {
        case M_SIGNAL: shmemx_dev_putmem_signal(d, dd, ss, m, sig, 1, sig_op, pe); break;
        case M_SIGNAL_NBI: shmemx_dev_putmem_signal_nbi(d, dd, ss, m, sig, 1, sig_op, pe); break;
        case M_PUT_SIGOP:
            shmemx_dev_putmem(d, dd, ss, m, pe);
            shmemx_dev_signal_op(d, sig, 1, sig_op, pe);
            break;
        default:
            shmemx_dev_putmem_nbi(d, dd, ss, m, pe);
            shmemx_dev_quiet(d);
            if (mode == M_NBI_QUIET_RELAXED)
                shmemx_dev_signal_op_relaxed(d, sig, 1, sig_op, pe);
            else
                shmemx_dev_signal_op(d, sig, 1, sig_op, pe);
            break;
        }
    } else if (variant == V_WARP) {
        switch (mode) {
        case M_SIGNAL: shmemx_dev_putmem_signal_warp(d, dd, ss, m, sig, 1, sig_op, pe); break;
        case M_SIGNAL_NBI:
            shmemx_dev_putmem_signal_nbi_warp(d, dd, ss, m, sig, 1, sig_op, pe);
            break;
        case M_PUT_SIGOP:
            shmemx_dev_putmem_warp(d, dd, ss, m, pe);
            if (tid % 32 == 0)
                shmemx_dev_signal_op(d, sig, 1, sig_op, pe);
            break;
        default:
            shmemx_dev_putmem_nbi_warp(d, dd, ss, m, pe);
            shmemx_dev_quiet_warp(d);
            if (tid % 32 == 0 && mode == M_NBI_QUIET_RELAXED)
                shmemx_dev_signal_op_relaxed(d, sig, 1, sig_op, pe);
            else if (tid % 32 == 0)
                shmemx_dev_signal_op(d, sig, 1, sig_op, pe);
            break;
        }
    } else {
        switch (mode) {
        case M_SIGNAL: shmemx_dev_putmem_signal_block(d, dd, ss, m, sig, 1, sig_op, pe); break;
        case M_SIGNAL_NBI:
            shmemx_dev_putmem_signal_nbi_block(d, dd, ss, m, sig, 1, sig_op, pe);
            break;
        case M_PUT_SIGOP:
            shmemx_dev_putmem_block(d, dd, ss, m, pe);
            if (tid == 0)
                shmemx_dev_signal_op(d, sig, 1, sig_op, pe);
            break;
        default:
            shmemx_dev_putmem_nbi_block(d, dd, ss, m, pe);
            shmemx_dev_quiet_block(d);
            /* the last thread, not the one that fenced: any thread of the group may signal */
            if (tid == blockDim.x * blockDim.y * blockDim.z - 1 && mode == M_NBI_QUIET_RELAXED)
                shmemx_dev_signal_op_relaxed(d, sig, 1, sig_op, pe);
            else if (tid == 0 && mode != M_NBI_QUIET_RELAXED)
                shmemx_dev_signal_op(d, sig, 1, sig_op, pe);
            break;
        }
    }
}

__global__ void k_get(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, int variant, int nbi, char *dst,
                      const char *src, size_t n, int pe)
{
    size_t lo, hi;
    unit_range(variant, n, &lo, &hi);
    char *dd = dst + lo;
    const char *ss = src + lo;
    size_t m = hi - lo;
    if (variant == V_THREAD) {
        if (nbi) {
            shmemx_dev_getmem_nbi(d, dd, ss, m, pe);
            shmemx_dev_quiet(d);
        } else
            shmemx_dev_getmem(d, dd, ss, m, pe);
    } else if (variant == V_WARP) {
        if (nbi) {
            shmemx_dev_getmem_nbi_warp(d, dd, ss, m, pe);
            shmemx_dev_quiet_warp(d);
        } else
            shmemx_dev_getmem_warp(d, dd, ss, m, pe);
    } else {
        if (nbi) {
            shmemx_dev_getmem_nbi_block(d, dd, ss, m, pe);
            shmemx_dev_quiet_block(d);
        } else
            shmemx_dev_getmem_block(d, dd, ss, m, pe);
    }
}

static void run_puts(const shmemx_dev_t &d, cudaStream_t s, char *src, char *dst, uint64_t *sig,
                     dt_result_t *res, int atomics, double *bytes)
{
    int me = shmem_my_pe(), np = shmem_n_pes();
    int next = (me + 1) % np, prev = (me + np - 1) % np;
    char what[320];
    for (int it = 0; it < NPUT; it++) {
        xfer_t P = make_xfer(0, it, me, atomics), Q = make_xfer(0, it, prev, atomics);
        /* Before the barrier: our source for P, our destination poisoned for Q. */
        size_t span = GUARD + Q.doff + Q.n + GUARD;
        if (span > DST_SZ)
            span = DST_SZ;
        dt_fill(s, src + P.soff, P.n, P.seed, 0);
        CK(cudaMemsetAsync(dst, DT_POISON, span, s));
        CK(cudaStreamSynchronize(s));
        shmem_barrier_all();
        k_put<<<P.nctas, dim3(P.bx, P.by), 0, s>>>(
            d, P.variant, P.mode, dst + GUARD + P.doff, src + P.soff, P.n, &sig[it],
            atomics ? SHMEM_SIGNAL_ADD : SHMEM_SIGNAL_SET, next);
        CK_LAUNCH();
        /* The _nbi modes' sources may be read after the kernel ends (by the proxy, for a
         * PE on another host): complete them before the next iteration refills them. */
        shmemx_quiet_on_stream(s);
        /* Our stream waits for prev's units: a stream memory operation, no spinning kernel. */
        shmemx_signal_wait_until_on_stream(&sig[it], SHMEM_CMP_GE, Q.units, s);
        describe(what, sizeof what, "put", it, prev, me, &Q);
        dt_verify(s, res, dst, span, GUARD + Q.doff, Q.n, Q.seed, 0, what);
        uint64_t sv = 0;
        CK(cudaMemcpy(&sv, &sig[it], 8, cudaMemcpyDeviceToHost));
        DT_CHECK(sv == Q.units, "%s: signal is %llu, want %u (one %s per unit)", what,
                 (unsigned long long)sv, Q.units, atomics ? "ADD 1" : "SET 1");
        *bytes += (double)P.n;
    }
    shmem_barrier_all();
}

static void run_gets(const shmemx_dev_t &d, cudaStream_t s, char *src, char *dst, char *priv,
                     dt_result_t *res, double *bytes)
{
    int me = shmem_my_pe(), np = shmem_n_pes();
    int next = (me + 1) % np, prev = (me + np - 1) % np;
    char what[320];
    for (int it = 0; it < NGET; it++) {
        /* G: what we read from prev's source; N: what next reads from ours. */
        xfer_t G = make_xfer(1, it, me, 1), N = make_xfer(1, it, next, 1);
        uint64_t my_seed = make_xfer(1, it, me, 1).seed ^ 0x5555;
        uint64_t prev_seed = make_xfer(1, it, prev, 1).seed ^ 0x5555;
        char *dbuf = G.priv ? priv : dst;
        size_t span = GUARD + G.doff + G.n + GUARD;
        dt_fill(s, src, N.soff + N.n, my_seed, 0);
        CK(cudaMemsetAsync(dbuf, DT_POISON, span, s));
        CK(cudaStreamSynchronize(s));
        shmem_barrier_all();
        k_get<<<G.nctas, dim3(G.bx, G.by), 0, s>>>(d, G.variant, G.mode & 1, dbuf + GUARD + G.doff,
                                                   src + G.soff, G.n, prev);
        CK_LAUNCH();
        describe(what, sizeof what, "get", it, prev, me, &G);
        dt_verify(s, res, dbuf, span, GUARD + G.doff, G.n, prev_seed, G.soff, what);
        *bytes += (double)G.n;
        shmem_barrier_all(); /* prev refills its source only after we read it */
    }
}

/* ---- typed p/g and put/get ---- */

#define NTYPED 256

typedef struct {
    int i[NTYPED];
    long long l[NTYPED];
    float f[NTYPED];
    double d[NTYPED];
} typed_t;

static void typed_values(typed_t *v, int pe)
{
    for (int t = 0; t < NTYPED; t++) {
        uint64_t r = dt_mix(dt_seed() ^ 0x7e1ULL ^ ((uint64_t)pe << 32) ^ (uint64_t)t);
        v->i[t] = (int)(uint32_t)r;
        v->l[t] = (long long)dt_mix(r);
        v->f[t] = (float)(int32_t)(r >> 40) / 64.0f;
        v->d[t] = (double)(int64_t)(r >> 8) / 1024.0 + 0.5;
    }
}

/* Every PE: p of its values into next's arrays (one element per thread), put_block of
 * its doubles into next's dput. */
__global__ void k_p(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, typed_t *sym, double *dput,
                    const typed_t *vals, int pe)
{
    int t = threadIdx.x;
    shmemx_dev_p(d, &sym->i[t], vals->i[t], pe);
    shmemx_dev_p(d, &sym->l[t], vals->l[t], pe);
    shmemx_dev_p(d, &sym->f[t], vals->f[t], pe);
    shmemx_dev_p(d, &sym->d[t], vals->d[t], pe);
    shmemx_dev_put_block(d, dput, vals->d, NTYPED, pe);
    shmemx_dev_quiet(d);
}

/* g of next's arrays (which hold our values) into out, one element per thread;
 * warp 0 also gets next's long longs with get_warp into lget. */
__global__ void k_g(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, const typed_t *sym, typed_t *out,
                    long long *lget, int pe)
{
    int t = threadIdx.x;
    out->i[t] = shmemx_dev_g(d, &sym->i[t], pe);
    out->l[t] = shmemx_dev_g(d, &sym->l[t], pe);
    out->f[t] = shmemx_dev_g(d, &sym->f[t], pe);
    out->d[t] = shmemx_dev_g(d, &sym->d[t], pe);
    if (t < 32)
        shmemx_dev_get_warp(d, lget, sym->l, NTYPED, pe);
}

static void compare_typed(const typed_t *got, const typed_t *want, const char *what, int from)
{
    for (int t = 0; t < NTYPED; t++) {
        DT_CHECK(got->i[t] == want->i[t], "%s int[%d] from PE %d: got %d want %d", what, t, from,
                 got->i[t], want->i[t]);
        DT_CHECK(got->l[t] == want->l[t], "%s long long[%d] from PE %d: got %lld want %lld", what,
                 t, from, got->l[t], want->l[t]);
        DT_CHECK(memcmp(&got->f[t], &want->f[t], sizeof(float)) == 0,
                 "%s float[%d] from PE %d: got %a want %a", what, t, from, (double)got->f[t],
                 (double)want->f[t]);
        DT_CHECK(memcmp(&got->d[t], &want->d[t], sizeof(double)) == 0,
                 "%s double[%d] from PE %d: got %a want %a", what, t, from, got->d[t], want->d[t]);
    }
}

static void run_typed(const shmemx_dev_t &d, cudaStream_t s)
{
    int me = shmem_my_pe(), np = shmem_n_pes();
    int next = (me + 1) % np, prev = (me + np - 1) % np;
    typed_t *sym = (typed_t *)shmem_calloc(1, sizeof(typed_t));
    double *dput = (double *)shmem_calloc(NTYPED, sizeof(double));
    DT_CHECK(sym && dput, "shmem_calloc");
    typed_t *vals_d, *out_d;
    long long *lget_d;
    CK(cudaMalloc(&vals_d, sizeof(typed_t)));
    CK(cudaMalloc(&out_d, sizeof(typed_t)));
    CK(cudaMalloc(&lget_d, NTYPED * sizeof(long long)));
    typed_t *mine = (typed_t *)malloc(sizeof(typed_t)),
            *theirs = (typed_t *)malloc(sizeof(typed_t));
    typed_t *got = (typed_t *)malloc(sizeof(typed_t));
    DT_CHECK(mine && theirs && got, "malloc");
    typed_values(mine, me);
    typed_values(theirs, prev);
    CK(cudaMemcpy(vals_d, mine, sizeof(typed_t), cudaMemcpyHostToDevice));

    k_p<<<1, NTYPED, 0, s>>>(d, sym, dput, vals_d, next);
    CK_LAUNCH();
    CK(cudaStreamSynchronize(s));
    shmem_barrier_all();
    CK(cudaMemcpy(got, sym, sizeof(typed_t), cudaMemcpyDeviceToHost));
    compare_typed(got, theirs, "shmemx_dev_p", prev);
    double dgot[NTYPED];
    CK(cudaMemcpy(dgot, dput, sizeof dgot, cudaMemcpyDeviceToHost));
    for (int t = 0; t < NTYPED; t++)
        DT_CHECK(memcmp(&dgot[t], &theirs->d[t], 8) == 0,
                 "shmemx_dev_put_block<double>[%d] from PE %d: got %a want %a", t, prev, dgot[t],
                 theirs->d[t]);

    k_g<<<1, NTYPED, 0, s>>>(d, sym, out_d, lget_d, next);
    CK_LAUNCH();
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(got, out_d, sizeof(typed_t), cudaMemcpyDeviceToHost));
    compare_typed(got, mine, "shmemx_dev_g", next);
    long long lgot[NTYPED];
    CK(cudaMemcpy(lgot, lget_d, sizeof lgot, cudaMemcpyDeviceToHost));
    for (int t = 0; t < NTYPED; t++)
        DT_CHECK(lgot[t] == mine->l[t],
                 "shmemx_dev_get_warp<long long>[%d] from PE %d: got %lld "
                 "want %lld",
                 t, next, lgot[t], mine->l[t]);
    shmem_barrier_all();
    CK(cudaFree(vals_d));
    CK(cudaFree(out_d));
    CK(cudaFree(lget_d));
    free(mine);
    free(theirs);
    free(got);
    shmem_free(dput);
    shmem_free(sym);
}

/* ---- shmemx_dev_ptr ---- */

__global__ void k_ptr(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, uint64_t *buf, int next,
                      uint64_t seed, unsigned long long *res)
{
    unsigned t = threadIdx.x;
    void *self = shmemx_dev_ptr(d, buf, shmemx_dev_my_pe(d));
    uint64_t *peer = (uint64_t *)shmemx_dev_ptr(d, buf, next);
    if (t == 0) {
        res[0] = self == (void *)buf;
        res[1] = (unsigned long long)(uintptr_t)peer;
        res[2] = (unsigned long long)shmemx_dev_my_pe(d);
        res[3] = (unsigned long long)shmemx_dev_n_pes(d);
    }
    if (peer)
        peer[t] = dt_mix(seed ^ t);
    shmemx_dev_quiet(d);
}

static void run_ptr(const shmemx_dev_t &d, cudaStream_t s)
{
    int me = shmem_my_pe(), np = shmem_n_pes();
    int next = (me + 1) % np, prev = (me + np - 1) % np;
    const int N = 64;
    uint64_t *buf = (uint64_t *)shmem_calloc(N, 8);
    unsigned long long *res_d, res[4];
    DT_CHECK(buf != NULL, "shmem_calloc");
    CK(cudaMalloc(&res_d, sizeof res));
    uint64_t seed_me = dt_seed() ^ 0x9771ULL ^ ((uint64_t)me << 20);
    uint64_t seed_prev = dt_seed() ^ 0x9771ULL ^ ((uint64_t)prev << 20);
    k_ptr<<<1, N, 0, s>>>(d, buf, next, seed_me, res_d);
    CK_LAUNCH();
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(res, res_d, sizeof res, cudaMemcpyDeviceToHost));
    DT_CHECK(res[0] == 1, "shmemx_dev_ptr(buf, my_pe) is not buf");
    /* NULL exactly for a PE of another host (USHMEM_FAKE_HOSTS): shmem_ptr says which */
    int mapped_next = shmem_ptr(buf, next) != NULL, mapped_prev = shmem_ptr(buf, prev) != NULL;
    DT_CHECK(res[1] != 0 || !mapped_next, "shmemx_dev_ptr(buf, PE %d) is NULL on one host", next);
    DT_CHECK(res[1] == (unsigned long long)(uintptr_t)shmem_ptr(buf, next),
             "shmemx_dev_ptr(buf, PE %d) = 0x%llx but shmem_ptr gives %p", next, res[1],
             shmem_ptr(buf, next));
    DT_CHECK(res[2] == (unsigned long long)me && res[3] == (unsigned long long)np,
             "shmemx_dev_my_pe/n_pes in a kernel: %llu/%llu", res[2], res[3]);
    shmem_barrier_all();
    uint64_t got[N];
    CK(cudaMemcpy(got, buf, sizeof got, cudaMemcpyDeviceToHost));
    for (int t = 0; t < N; t++)
        DT_CHECK(got[t] == (mapped_prev ? dt_mix(seed_prev ^ (uint64_t)t) : 0),
                 "store through shmemx_dev_ptr by PE %d: word %d is 0x%llx, want 0x%llx", prev, t,
                 (unsigned long long)got[t],
                 (unsigned long long)(mapped_prev ? dt_mix(seed_prev ^ (uint64_t)t) : 0));
    shmem_barrier_all();
    CK(cudaFree(res_d));
    shmem_free(buf);
}

int main(void)
{
    shmemx_dev_t d = dt_init();
    int me = shmem_my_pe(), np = shmem_n_pes();
    if (getenv("USHMEM_TEST_QUICK") && atoi(getenv("USHMEM_TEST_QUICK")) > 0) {
        NPUT = 40;
        NGET = 20;
    }
    (void)dt_waits_allowed(d); /* informative: nothing here waits on the device */
    int atomics = (d.flags & SHMEMX_DEV_F_PEER_ATOMICS) != 0;
    if (!atomics && me == 0)
        printf("PE 0: note: no native peer atomics: one unit per transfer, SIGNAL_SET\n");
    cudaStream_t s = dt_stream();

    char *src = (char *)shmem_malloc(SRC_SZ);
    char *dst = (char *)shmem_malloc(DST_SZ);
    uint64_t *sig = (uint64_t *)shmem_calloc(NPUT, sizeof(uint64_t));
    DT_CHECK(src && dst && sig, "shmem_malloc of %zu + %zu bytes (USHMEM_DEVICE_HEAP_SIZE >= 256M)",
             SRC_SZ, DST_SZ);
    char *priv;
    dt_result_t *res;
    CK(cudaMalloc(&priv, PRIV_SZ));
    CK(cudaMalloc(&res, sizeof(dt_result_t)));

    double t0 = dt_now(), put_bytes = 0, get_bytes = 0;
    run_puts(d, s, src, dst, sig, res, atomics, &put_bytes);
    double t1 = dt_now();
    printf("PE %d: PASS put: %d putmem_signal transfers to PE %d (%.1f MiB, %.2f s)\n", me, NPUT,
           (me + 1) % np, put_bytes / 1048576.0, t1 - t0);
    fflush(stdout);
    run_gets(d, s, src, dst, priv, res, &get_bytes);
    double t2 = dt_now();
    printf("PE %d: PASS get: %d getmem transfers from PE %d (%.1f MiB, %.2f s)\n", me, NGET,
           (me + np - 1) % np, get_bytes / 1048576.0, t2 - t1);
    fflush(stdout);
    run_typed(d, s);
    printf("PE %d: PASS typed p/g (int, long long, float, double), put_block, get_warp\n", me);
    run_ptr(d, s);
    printf("PE %d: PASS shmemx_dev_ptr (self, peer, store seen by the peer)\n", me);

    CK(cudaFree(res));
    CK(cudaFree(priv));
    shmem_free(sig);
    shmem_free(dst);
    shmem_free(src);
    CK(cudaStreamDestroy(s));
    printf("PE %d: PASS dev_rma (%.2f s)\n", me, dt_now() - t0);
    fflush(stdout);
    shmem_finalize();
    return 0;
}
