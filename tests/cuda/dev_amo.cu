/* Device API atomics, and device-side waits where they are allowed.
 *
 *  A. Contention: every PE's kernel (8 CTAs x 128 threads, 32 AMOs each spread
 *     over 30 ms) fetch-adds 1 on one 64-bit and one 32-bit counter of PE 0
 *     while its host does the same with the host API (device-memory AMOs); PE 0
 *     then checks the final counts and that the fetched values are exactly
 *     0..total-1, each once.
 *  B. Single-writer sequences (set/fetch/swap/compare_swap, and for integers
 *     add/inc/and/or/xor, fetching and not) on int, unsigned, long, unsigned
 *     long, long long, unsigned long long, float and double, on the next PE
 *     and on the own PE, against a host computation.
 *  C. Only when shmemx_dev_why() is NULL (one PE per GPU, MPS with SM shares
 *     that fit, or USHMEM_DEVICE_WAIT=timesliced): a message-passing litmus
 *     test between PEs 0 and 1 (release signal / acquire wait, 100000 rounds,
 *     200 when only timesliced), and device barrier epochs on the world and on
 *     a split team, destroyed and split again.
 *
 * `dev_amo refuse` (run by dev_refuse.sh): where device waits are off, a
 * kernel calling shmemx_dev_signal_wait_until must print one line per PE and
 * trap; the program reports what cudaStreamSynchronize returned and exits 3.
 * `dev_amo badpe CALL` (run by dev_badpe.sh): PE 0's kernel names PE n_pes in
 * CALL (an AMO, fetching or not, p, putmem, signal_op), which must print the
 * out-of-range line and trap; PE 0 then exits 3 and the job stops.
 * USHMEM_TEST_LITMUS_ROUNDS and USHMEM_TEST_BARRIER_EPOCHS override the counts. */
#include <type_traits>

#include "dev_test.cuh"

/* ---- A: contended fetch-add ---- */

#define C_CTAS 8
#define C_TPB  128
#define C_PER  32
#define C_K    (C_CTAS * C_TPB * C_PER) /* device AMOs per PE and counter */
#define C_H    128                      /* host AMOs per PE and counter */
/* The kernel spreads its AMOs over 30 ms (wall clock), so the host's land among them. */
#define C_SPAN_NS 30000000ull

__device__ static uint64_t globaltimer_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void k_contend(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, uint64_t *c64, uint32_t *c32,
                          uint64_t *f64, uint32_t *f32, uint64_t seed, unsigned kper)
{
    unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
    uint64_t t0 = globaltimer_ns(), step = C_SPAN_NS / kper;
    for (unsigned i = 0; i < kper; i++) {
        unsigned j = idx * kper + i;
        f64[j] = shmemx_dev_atomic_fetch_add(d, c64, (uint64_t)1, 0);
        f32[j] = shmemx_dev_atomic_fetch_inc(d, c32, 0);
        /* Sleep until a random point of step i (a clock, not a peer: no device wait). */
        uint64_t until = t0 + i * step + dt_mix(seed ^ j) % step;
        while (globaltimer_ns() < until)
            __nanosleep(4000);
    }
}

/* values[total] must be 0..total-1, each once. */
template <typename T>
static void check_permutation(const T *values, size_t per_pe, size_t kernel_pe, int np,
                              const char *what)
{
    size_t total = per_pe * (size_t)np;
    unsigned char *seen = (unsigned char *)calloc(total, 1);
    DT_CHECK(seen != NULL, "calloc");
    for (size_t k = 0; k < total; k++) {
        unsigned long long v = (unsigned long long)values[k];
        int pe = (int)(k / per_pe);
        size_t i = k % per_pe;
        const char *by = i < kernel_pe ? "a kernel" : "the host";
        DT_CHECK(v < total, "%s: PE %d's fetched value %zu (by %s) is %llu, not below %zu", what,
                 pe, i, by, v, total);
        DT_CHECK(!seen[v], "%s: value %llu fetched twice (the second time by PE %d, %s, #%zu)",
                 what, v, pe, by, i);
        seen[v] = 1;
    }
    free(seen);
}

/* slow: PEs on other hosts (a fetching AMO there waits in the kernel for the
 * proxy's answer) and no MPS: every answer costs a GPU time slice (~4.5 ms),
 * so one CTA with one AMO per thread instead of C_K per PE. */
static void run_contention(const shmemx_dev_t &d, cudaStream_t s, int slow)
{
    int me = shmem_my_pe(), np = shmem_n_pes();
    const unsigned ctas = slow ? 1 : C_CTAS, kper = slow ? 1 : C_PER;
    const size_t kn = (size_t)ctas * C_TPB * kper, per = kn + C_H;
    uint64_t *c64 = (uint64_t *)shmem_calloc(1, sizeof(uint64_t));
    uint32_t *c32 = (uint32_t *)shmem_calloc(1, sizeof(uint32_t));
    uint64_t *f64 = (uint64_t *)shmem_malloc(per * sizeof(uint64_t));
    uint32_t *f32 = (uint32_t *)shmem_malloc(per * sizeof(uint32_t));
    DT_CHECK(c64 && c32 && f64 && f32, "shmem_malloc");
    uint64_t h64[C_H];
    uint32_t h32[C_H];
    /* Adding 0 loads the library's AMO kernels before ours runs (lazy module
     * loading), so that the timed host AMOs below are only AMOs. */
    (void)shmem_uint64_atomic_fetch_add(c64, 0, 0);
    (void)shmem_uint32_atomic_fetch_add(c32, 0, 0);
    shmem_barrier_all(); /* PE 0's counters are zero */

    double t0 = dt_now();
    k_contend<<<ctas, C_TPB, 0, s>>>(d, c64, c32, f64, f32, dt_seed() ^ (uint64_t)me << 32, kper);
    CK_LAUNCH();
    int overlap = 0;
    for (int h = 0; h < C_H; h++) {
        cudaError_t q = cudaStreamQuery(s);
        DT_CHECK(q == cudaSuccess || q == cudaErrorNotReady, "cudaStreamQuery: %s",
                 cudaGetErrorName(q));
        overlap += q == cudaErrorNotReady;
        h64[h] = shmem_uint64_atomic_fetch_add(c64, 1, 0);
        h32[h] = shmem_uint32_atomic_fetch_inc(c32, 0);
    }
    cudaError_t q = cudaGetLastError(); /* a cudaErrorNotReady from the queries, if recorded */
    DT_CHECK(q == cudaSuccess || q == cudaErrorNotReady, "%s", cudaGetErrorName(q));
    CK(cudaStreamSynchronize(s));
    double t1 = dt_now();
    CK(cudaMemcpy(f64 + kn, h64, sizeof h64, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(f32 + kn, h32, sizeof h32, cudaMemcpyHostToDevice));
    printf("PE %d: contention: %d device + %d host fetch-adds per counter in %.1f ms (%d of the "
           "host's issued while the kernel ran)\n",
           me, (int)kn, C_H, (t1 - t0) * 1e3, overlap);
    fflush(stdout);
    shmem_barrier_all();

    uint64_t total = (uint64_t)per * (uint64_t)np;
    /* The host API reads the same words (device-memory AMO fetch). */
    uint64_t v64 = shmem_uint64_atomic_fetch(c64, 0);
    uint32_t v32 = shmem_uint32_atomic_fetch(c32, 0);
    DT_CHECK(v64 == total, "64-bit counter on PE 0 is %llu, want %llu = %d PEs x (%d + %d)",
             (unsigned long long)v64, (unsigned long long)total, np, (int)kn, C_H);
    DT_CHECK(v32 == (uint32_t)total, "32-bit counter on PE 0 is %u, want %llu", v32,
             (unsigned long long)total);
    if (me == 0) {
        uint64_t *a64 = (uint64_t *)malloc(per * np * sizeof(uint64_t));
        uint32_t *a32 = (uint32_t *)malloc(per * np * sizeof(uint32_t));
        DT_CHECK(a64 && a32, "malloc");
        for (int pe = 0; pe < np; pe++) {
            shmem_getmem(a64 + per * pe, f64, per * sizeof(uint64_t), pe);
            shmem_getmem(a32 + per * pe, f32, per * sizeof(uint32_t), pe);
        }
        check_permutation(a64, per, kn, np, "64-bit fetch_add");
        check_permutation(a32, per, kn, np, "32-bit fetch_inc");
        free(a64);
        free(a32);
        printf("PE 0: PASS contention: counters = %llu, fetched values are a permutation of "
               "0..%llu (64- and 32-bit, device and host AMOs mixed)\n",
               (unsigned long long)total, (unsigned long long)total - 1);
        fflush(stdout);
    }
    shmem_barrier_all();
    shmem_free(f32);
    shmem_free(f64);
    shmem_free(c32);
    shmem_free(c64);
}

/* ---- B: single-writer sequences ---- */

#define NV 11
template <typename T> struct amo_vals {
    T v[NV];
};

template <typename T> static unsigned long long bits(T x)
{
    unsigned long long b = 0;
    memcpy(&b, &x, sizeof x);
    return b;
}
template <typename T> static bool same_bits(T a, T b)
{
    return memcmp(&a, &b, sizeof(T)) == 0;
}
template <typename T> static T bump(T x)
{
    if constexpr (std::is_integral<T>::value)
        return (T)((typename std::make_unsigned<T>::type)x + 1u);
    else
        return x + (T)1;
}

template <typename T> static amo_vals<T> make_vals(int pe, int slot, int tag)
{
    amo_vals<T> a;
    uint64_t st = dt_mix(dt_seed() ^ 0xa770ULL ^ ((uint64_t)tag << 8) ^ ((uint64_t)slot << 16) ^
                         ((uint64_t)pe << 24));
    for (int i = 0; i < NV; i++) {
        uint64_t r = dt_rand(&st);
        if constexpr (std::is_integral<T>::value)
            a.v[i] = (T)r;
        else /* exact in float: |x| <= 2^20 / 8 */
            a.v[i] = (T)((int64_t)(r % 2000001) - 1000000) / (T)8;
    }
    while (same_bits(a.v[1], a.v[0]))
        a.v[1] = bump(a.v[1]);
    while (same_bits(a.v[2], a.v[0]) || same_bits(a.v[2], a.v[1]))
        a.v[2] = bump(a.v[2]);
    return a;
}

static const char *const op_int[] = {"fetch after set",
                                     "swap",
                                     "compare_swap, no match",
                                     "compare_swap, match",
                                     "fetch_add",
                                     "fetch_inc after add",
                                     "fetch_and after inc",
                                     "fetch_or after and",
                                     "fetch_xor after or",
                                     "fetch after xor"};
static const char *const op_flt[] = {"fetch after set", "swap", "compare_swap, no match",
                                     "compare_swap, match", "fetch at the end"};

template <typename T>
__global__ void k_seq(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, T *w, int pe, amo_vals<T> a,
                      T *out)
{
    if (threadIdx.x != 0 || blockIdx.x != 0)
        return;
    const T *v = a.v;
    int k = 0;
    shmemx_dev_atomic_set(d, w, v[0], pe);
    out[k++] = shmemx_dev_atomic_fetch(d, (const T *)w, pe);
    out[k++] = shmemx_dev_atomic_swap(d, w, v[1], pe);
    out[k++] = shmemx_dev_atomic_compare_swap(d, w, v[0], v[2], pe); /* holds v[1]: no swap */
    out[k++] = shmemx_dev_atomic_compare_swap(d, w, v[1], v[2], pe);
    if constexpr (std::is_integral<T>::value) {
        out[k++] = shmemx_dev_atomic_fetch_add(d, w, v[3], pe);
        shmemx_dev_atomic_add(d, w, v[4], pe);
        out[k++] = shmemx_dev_atomic_fetch_inc(d, w, pe);
        shmemx_dev_atomic_inc(d, w, pe);
        out[k++] = shmemx_dev_atomic_fetch_and(d, w, v[5], pe);
        shmemx_dev_atomic_and(d, w, v[6], pe);
        out[k++] = shmemx_dev_atomic_fetch_or(d, w, v[7], pe);
        shmemx_dev_atomic_or(d, w, v[8], pe);
        out[k++] = shmemx_dev_atomic_fetch_xor(d, w, v[9], pe);
        shmemx_dev_atomic_xor(d, w, v[10], pe);
    }
    out[k++] = shmemx_dev_atomic_fetch(d, (const T *)w, pe);
}

/* What k_seq fetches, and the word's final value. */
template <typename T> static int amo_sim(const amo_vals<T> &a, T *out, T *fin)
{
    const T *v = a.v;
    T w = v[0];
    int k = 0;
    out[k++] = w;
    out[k++] = w;
    w = v[1];
    out[k++] = w;
    if (same_bits(w, v[0]))
        w = v[2];
    out[k++] = w;
    if (same_bits(w, v[1]))
        w = v[2];
    if constexpr (std::is_integral<T>::value) {
        typedef typename std::make_unsigned<T>::type U;
        U u = (U)w;
        out[k++] = (T)u;
        u += (U)v[3];
        u += (U)v[4];
        out[k++] = (T)u;
        u += 2u;
        out[k++] = (T)u;
        u &= (U)v[5];
        u &= (U)v[6];
        out[k++] = (T)u;
        u |= (U)v[7];
        u |= (U)v[8];
        out[k++] = (T)u;
        u ^= (U)v[9];
        u ^= (U)v[10];
        w = (T)u;
    }
    out[k++] = w;
    *fin = w;
    return k;
}

template <typename T>
static void seq_test(const shmemx_dev_t &d, cudaStream_t s, const char *tname, int tag,
                     T (*host_fetch)(const T *, int), int remote)
{
    int me = shmem_my_pe(), np = shmem_n_pes();
    int next = (me + 1) % np, prev = (me + np - 1) % np;
    T *w = (T *)shmem_calloc(2, sizeof(T)); /* [0]: written by prev, [1]: by this PE */
    T *out_d;
    DT_CHECK(w != NULL, "shmem_calloc");
    CK(cudaMalloc(&out_d, 16 * sizeof(T)));
    for (int slot = remote ? 0 : 1; slot < 2; slot++) {
        int target = slot == 0 ? next : me;
        amo_vals<T> a = make_vals<T>(me, slot, tag);
        T want[16], got[16], fin;
        int k = amo_sim(a, want, &fin);
        k_seq<T><<<1, 32, 0, s>>>(d, &w[slot], target, a, out_d);
        CK_LAUNCH();
        CK(cudaStreamSynchronize(s));
        CK(cudaMemcpy(got, out_d, (size_t)k * sizeof(T), cudaMemcpyDeviceToHost));
        const char *const *names = std::is_integral<T>::value ? op_int : op_flt;
        for (int i = 0; i < k; i++)
            DT_CHECK(same_bits(got[i], want[i]),
                     "%s AMO on PE %d: step %d (%s) returned bits 0x%llx, want 0x%llx", tname,
                     target, i, names[i], bits(got[i]), bits(want[i]));
        T h = host_fetch(&w[slot], target);
        DT_CHECK(same_bits(h, fin),
                 "%s: host atomic_fetch on PE %d after the device AMOs: 0x%llx, "
                 "want 0x%llx",
                 tname, target, bits(h), bits(fin));
    }
    shmem_barrier_all();
    T mine[2], want0, want1, scratch[16];
    CK(cudaMemcpy(mine, w, sizeof mine, cudaMemcpyDeviceToHost));
    amo_sim(make_vals<T>(prev, 0, tag), scratch, &want0);
    amo_sim(make_vals<T>(me, 1, tag), scratch, &want1);
    if (remote)
        DT_CHECK(same_bits(mine[0], want0), "%s word written by PE %d's AMOs: 0x%llx, want 0x%llx",
                 tname, prev, bits(mine[0]), bits(want0));
    DT_CHECK(same_bits(mine[1], want1), "%s word of own AMOs: 0x%llx, want 0x%llx", tname,
             bits(mine[1]), bits(want1));
    shmem_barrier_all();
    CK(cudaFree(out_d));
    shmem_free(w);
}

static void run_sequences(const shmemx_dev_t &d, cudaStream_t s, int remote)
{
    seq_test<int>(d, s, "int", 1, shmem_int_atomic_fetch, remote);
    seq_test<unsigned int>(d, s, "unsigned int", 2, shmem_uint_atomic_fetch, remote);
    seq_test<long>(d, s, "long", 3, shmem_long_atomic_fetch, remote);
    seq_test<unsigned long>(d, s, "unsigned long", 4, shmem_ulong_atomic_fetch, remote);
    seq_test<long long>(d, s, "long long", 5, shmem_longlong_atomic_fetch, remote);
    seq_test<unsigned long long>(d, s, "unsigned long long", 6, shmem_ulonglong_atomic_fetch,
                                 remote);
    seq_test<float>(d, s, "float", 7, shmem_float_atomic_fetch, remote);
    seq_test<double>(d, s, "double", 8, shmem_double_atomic_fetch, remote);
    printf("PE %d: PASS AMO sequences (set/fetch/swap/compare_swap/add/inc/and/or/xor; int, "
           "unsigned, long, unsigned long, long long, unsigned long long, float, double; %s)\n",
           shmem_my_pe(), remote ? "next PE and own PE" : "own PE only");
    fflush(stdout);
}

/* ---- C: device-side waits ---- */

#define MP_WORDS 64

/* PE 0: round r writes MP_WORDS words = r into the reader's data and publishes
 * r, then waits for the ack. By r % 3: putmem_block from a staging buffer and
 * a release signal; plain stores through shmemx_dev_ptr and a release signal;
 * putmem_nbi_block, quiet_block and a relaxed signal from the block's last
 * thread (not the one whose fence the quiet ran). */
__global__ void k_mp_writer(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, uint64_t *data,
                            uint64_t *stage, uint64_t *sig, uint64_t *ack, long long rounds,
                            int reader)
{
    unsigned t = threadIdx.x; /* blockDim.x == MP_WORDS */
    uint64_t *peer = (uint64_t *)shmemx_dev_ptr(d, data, reader);
    for (long long r = 1; r <= rounds; r++) {
        const int mode = (int)(r % 3);
        if (mode == 2) {
            stage[t] = (uint64_t)r;
            shmemx_dev_putmem_nbi_block(d, data, stage, MP_WORDS * sizeof(uint64_t), reader);
            shmemx_dev_quiet_block(d);
            if (t == MP_WORDS - 1)
                shmemx_dev_signal_op_relaxed(d, sig, (uint64_t)r, SHMEMX_DEV_SIGNAL_SET, reader);
        } else {
            if (mode == 0 || !peer) {
                stage[t] = (uint64_t)r;
                shmemx_dev_putmem_block(d, data, stage, MP_WORDS * sizeof(uint64_t), reader);
            } else {
                peer[t] = (uint64_t)r;
                __syncthreads();
            }
            if (t == 0)
                shmemx_dev_signal_op(d, sig, (uint64_t)r, SHMEMX_DEV_SIGNAL_SET, reader);
        }
        if (t == 0)
            shmemx_dev_signal_wait_until(d, ack, SHMEMX_DEV_CMP_GE, (uint64_t)r);
        __syncthreads();
    }
}

/* PE 1: wait (acquire) for r, check every word, acknowledge. err: count, round,
 * word, value of the first error. */
__global__ void k_mp_reader(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, const uint64_t *data,
                            uint64_t *sig, uint64_t *ack, long long rounds, int writer,
                            unsigned long long *err)
{
    __shared__ uint64_t seen;
    unsigned t = threadIdx.x;
    for (long long r = 1; r <= rounds; r++) {
        if (t == 0)
            seen = shmemx_dev_signal_wait_until(d, sig, SHMEMX_DEV_CMP_GE, (uint64_t)r);
        __syncthreads();
        uint64_t v = data[t];
        int bad = v != (uint64_t)r, badsig = t == 0 && seen != (uint64_t)r;
        if ((bad || badsig) && atomicAdd(&err[0], 1ULL) == 0) {
            err[1] = (unsigned long long)r;
            err[2] = badsig ? ~0ULL : t;
            err[3] = badsig ? seen : v;
        }
        __syncthreads(); /* every word read before the writer may overwrite them */
        if (t == 0)
            shmemx_dev_signal_op(d, ack, (uint64_t)r, SHMEMX_DEV_SIGNAL_SET, writer);
    }
}

static long long env_count(const char *name, long long dflt)
{
    const char *s = getenv(name);
    long long v = s ? atoll(s) : 0;
    return v > 0 ? v : dflt;
}

static void run_litmus(const shmemx_dev_t &d, cudaStream_t s, long long rounds)
{
    int me = shmem_my_pe();
    uint64_t *data = (uint64_t *)shmem_calloc(MP_WORDS, sizeof(uint64_t));
    uint64_t *sig = (uint64_t *)shmem_calloc(2, sizeof(uint64_t));
    DT_CHECK(data && sig, "shmem_calloc");
    uint64_t *ack = sig + 1;
    uint64_t *stage;
    unsigned long long *err, herr[4];
    CK(cudaMalloc(&stage, MP_WORDS * sizeof(uint64_t)));
    CK(cudaMalloc(&err, sizeof herr));
    CK(cudaMemset(err, 0, sizeof herr));
    shmem_barrier_all();
    double t0 = dt_now();
    if (me == 0)
        k_mp_writer<<<1, MP_WORDS, 0, s>>>(d, data, stage, sig, ack, rounds, 1);
    else if (me == 1)
        k_mp_reader<<<1, MP_WORDS, 0, s>>>(d, data, sig, ack, rounds, 0, err);
    CK_LAUNCH();
    CK(cudaStreamSynchronize(s));
    double t1 = dt_now();
    CK(cudaMemcpy(herr, err, sizeof herr, cudaMemcpyDeviceToHost));
    if (me == 1) {
        if (herr[2] == ~0ULL)
            DT_CHECK(herr[0] == 0,
                     "litmus: %llu errors; first in round %llu: the signal wait "
                     "returned %llu",
                     herr[0], herr[1], herr[3]);
        DT_CHECK(herr[0] == 0,
                 "litmus: %llu stale words seen after the acquire; first in round "
                 "%llu: word %llu = %llu",
                 herr[0], herr[1], herr[2], herr[3]);
        uint64_t last[MP_WORDS];
        CK(cudaMemcpy(last, data, sizeof last, cudaMemcpyDeviceToHost));
        for (int i = 0; i < MP_WORDS; i++)
            DT_CHECK(last[i] == (uint64_t)rounds, "litmus: word %d ends as %llu, want %lld", i,
                     (unsigned long long)last[i], rounds);
    }
    if (me <= 1)
        printf("PE %d: PASS litmus (%s): %lld rounds of 64 words + release signal (or quiet + "
               "relaxed signal) / acquire wait + ack, %.2f us per round\n",
               me, me == 0 ? "writer" : "reader", rounds, (t1 - t0) * 1e6 / (double)rounds);
    fflush(stdout);
    shmem_barrier_all();
    CK(cudaFree(err));
    CK(cudaFree(stage));
    shmem_free(sig);
    shmem_free(data);
}

/* One CTA per PE: E epochs of { my epoch into my slot on every member; barrier;
 * every slot here == the epoch; sync }. err: count, epoch, slot, value. */
__global__ void k_barrier(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, uint64_t *slots,
                          long long epochs, int team_form, unsigned long long *err)
{
    int me = shmemx_dev_my_pe(d), n = shmemx_dev_n_pes(d);
    for (long long e = 1; e <= epochs; e++) {
        for (int j = (int)threadIdx.x; j < n; j += (int)blockDim.x)
            shmemx_dev_p(d, &slots[me], (uint64_t)e, j);
        if (team_form)
            shmemx_dev_barrier_block(d);
        else
            shmemx_dev_barrier_all_block(d);
        for (int j = (int)threadIdx.x; j < n; j += (int)blockDim.x) {
            uint64_t v = slots[j];
            if (v != (uint64_t)e && atomicAdd(&err[0], 1ULL) == 0) {
                err[1] = (unsigned long long)e;
                err[2] = (unsigned long long)j;
                err[3] = v;
            }
        }
        if (team_form)
            shmemx_dev_team_sync_block(d);
        else
            shmemx_dev_sync_all_block(d);
    }
}

/* The handle's team epoch in this PE's device sync area (shmemx_device_types.h layout). */
static uint64_t read_epoch(const shmemx_dev_t &d)
{
    uint64_t e = 0;
    const void *p = (const void *)(uintptr_t)(d.sync + SHMEMX_DEV_EPOCH_OFF +
                                              8 * (uint64_t)(unsigned)d.team_slot);
    CK(cudaMemcpy(&e, p, 8, cudaMemcpyDeviceToHost));
    return e;
}

/* Runs k_barrier with handle h (its team's members only); returns seconds. */
static double barrier_epochs(const shmemx_dev_t &h, cudaStream_t s, uint64_t *slots,
                             long long epochs, int team_form, const char *what)
{
    shmemx_dev_t hd = h;
    unsigned long long *err, herr[4];
    CK(cudaMalloc(&err, sizeof herr));
    CK(cudaMemset(err, 0, sizeof herr));
    uint64_t e0 = read_epoch(hd);
    void *args[] = {&hd, &slots, &epochs, &team_form, &err};
    double t0 = dt_now();
    int rc = shmemx_collective_launch(k_barrier, dim3(1), dim3(128), args, 0, s);
    DT_CHECK(rc == 0, "%s: shmemx_collective_launch of 1 CTA x 128 threads returned %d", what, rc);
    CK(cudaStreamSynchronize(s));
    double dt = dt_now() - t0;
    CK(cudaMemcpy(herr, err, sizeof herr, cudaMemcpyDeviceToHost));
    DT_CHECK(herr[0] == 0,
             "%s: %llu stale slots after the barrier; first at epoch %llu: slot of "
             "team PE %llu holds %llu",
             what, herr[0], herr[1], herr[2], herr[3]);
    uint64_t e1 = read_epoch(hd);
    DT_CHECK(e1 - e0 == 2 * (uint64_t)epochs,
             "%s: team slot %d's epoch went from %llu to %llu, "
             "want +%lld (a barrier and a sync per round)",
             what, hd.team_slot, (unsigned long long)e0, (unsigned long long)e1, 2 * epochs);
    CK(cudaFree(err));
    return dt;
}

static void run_barriers(const shmemx_dev_t &d, cudaStream_t s, long long epochs)
{
    int me = shmem_my_pe(), np = shmem_n_pes();
    uint64_t *slots = (uint64_t *)shmem_calloc(SHMEMX_DEV_BARRIER_MAX, sizeof(uint64_t));
    uint64_t *tslots = (uint64_t *)shmem_calloc(SHMEMX_DEV_BARRIER_MAX, sizeof(uint64_t));
    DT_CHECK(slots && tslots, "shmem_calloc");
    shmem_barrier_all();
    double dt = barrier_epochs(d, s, slots, epochs, 0, "barrier_all_block/sync_all_block");
    printf("PE %d: PASS device barrier_all_block + sync_all_block: %lld epochs, %d PEs, %.2f us "
           "per barrier\n",
           me, epochs, np, dt * 1e6 / (2.0 * (double)epochs));
    fflush(stdout);
    shmem_barrier_all();

    /* The even PEs; destroyed and split again: the slot starts from epoch 0. */
    int tsize = (np + 1) / 2;
    int prev_slot = -1;
    for (int round = 0; round < 2; round++) {
        shmem_team_t even = SHMEM_TEAM_INVALID;
        int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, tsize, NULL, 0, &even);
        DT_CHECK(rc == 0, "shmem_team_split_strided(0, 2, %d) returned %d", tsize, rc);
        DT_CHECK((me % 2 == 0) == (even != SHMEM_TEAM_INVALID), "PE %d is%s in the even team", me,
                 even != SHMEM_TEAM_INVALID ? "" : " not");
        if (even != SHMEM_TEAM_INVALID) {
            shmemx_dev_t td;
            memset(&td, 0, sizeof td);
            rc = shmemx_team_dev_get(even, &td);
            DT_CHECK(rc == 0, "shmemx_team_dev_get returned %d", rc);
            DT_CHECK(td.n_pes == tsize && td.my_pe == me / 2 && td.world_pe == me &&
                         !(td.flags & SHMEMX_DEV_F_WORLD) && td.team_slot != d.team_slot,
                     "team handle: my_pe %d n_pes %d world_pe %d flags 0x%x slot %d (world "
                     "slot %d)",
                     td.my_pe, td.n_pes, td.world_pe, td.flags, td.team_slot, d.team_slot);
            uint64_t e0 = read_epoch(td);
            DT_CHECK(e0 == 0, "a new team (split %d) starts at epoch %llu on slot %d%s", round,
                     (unsigned long long)e0, td.team_slot,
                     td.team_slot == prev_slot ? ", the destroyed team's slot" : "");
            char what[96];
            snprintf(what, sizeof what, "team barrier_block/team_sync_block (split %d, slot %d)",
                     round, td.team_slot);
            dt = barrier_epochs(td, s, tslots, epochs, 1, what);
            printf("PE %d: PASS device team barrier_block + team_sync_block, split %d (slot %d%s): "
                   "%lld epochs, %d PEs, %.2f us per barrier\n",
                   me, round, td.team_slot, round && td.team_slot == prev_slot ? ", reused" : "",
                   epochs, tsize, dt * 1e6 / (2.0 * (double)epochs));
            fflush(stdout);
            prev_slot = td.team_slot;
            shmem_team_destroy(even);
        }
        shmem_barrier_all();
    }
    shmem_free(tslots);
    shmem_free(slots);
}

/* ---- refuse mode ---- */

__global__ void k_refuse(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, uint64_t *sig)
{
    (void)shmemx_dev_signal_wait_until(d, sig, SHMEMX_DEV_CMP_GE, 1);
}

static int run_refuse(const shmemx_dev_t &d, cudaStream_t s)
{
    int me = shmem_my_pe();
    if (dt_waits_allowed(d)) {
        printf("PE %d: SKIP refuse: device-side waits are allowed here, nothing to refuse\n", me);
        fflush(stdout);
        shmem_finalize();
        return 77;
    }
    uint64_t *sig = (uint64_t *)shmem_calloc(1, sizeof(uint64_t));
    DT_CHECK(sig != NULL, "shmem_calloc");
    /* The gate prints only while this PE's "reported" word is 0 (shmemx_device_types.h). */
    uint64_t reported = ~0ULL;
    CK(cudaMemcpy(&reported, (const void *)(uintptr_t)(d.sync + SHMEMX_DEV_REPORTED_OFF), 8,
                  cudaMemcpyDeviceToHost));
    DT_CHECK(reported == 0, "the device sync area's reported word is %llu before any refusal",
             (unsigned long long)reported);
    shmem_barrier_all();
    /* Every thread of both CTAs reaches the gate; one line per PE is printed. */
    k_refuse<<<2, 64, 0, s>>>(d, sig);
    CK_LAUNCH();
    cudaError_t e = cudaStreamSynchronize(s);
    if (e == cudaSuccess)
        DT_FAIL("a kernel calling shmemx_dev_signal_wait_until completed although device waits "
                "are refused");
    printf("PE %d: REFUSED: cudaStreamSynchronize returned %s (%s)\n", me, cudaGetErrorName(e),
           cudaGetErrorString(e));
    fflush(stdout);
    shmem_barrier_all(); /* no PE exits (and stops the job) before every PE got here */
    return 3;
}

/* ---- badpe mode ---- */

static const char *const badpe_calls[] = {"shmemx_dev_atomic_fetch_add",
                                          "shmemx_dev_atomic_add",
                                          "shmemx_dev_atomic_compare_swap",
                                          "shmemx_dev_p",
                                          "shmemx_dev_putmem",
                                          "shmemx_dev_signal_op"};
enum { BADPE_CALLS = sizeof(badpe_calls) / sizeof(badpe_calls[0]) };

__global__ void k_badpe(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, int which, uint64_t *w, int pe,
                        uint64_t *out)
{
    uint64_t v = 0;
    switch (which) {
    case 0: v = shmemx_dev_atomic_fetch_add(d, w, (uint64_t)1, pe); break;
    case 1: shmemx_dev_atomic_add(d, w, (uint64_t)1, pe); break;
    case 2: v = shmemx_dev_atomic_compare_swap(d, w, (uint64_t)0, (uint64_t)1, pe); break;
    case 3: shmemx_dev_p(d, w, (uint64_t)1, pe); break;
    case 4: shmemx_dev_putmem(d, w + 1, w, 8, pe); break;
    default: shmemx_dev_signal_op(d, w, 1, SHMEMX_DEV_SIGNAL_ADD, pe); break;
    }
    *out = v;
}

static int run_badpe(const shmemx_dev_t &d, cudaStream_t s, const char *call)
{
    int me = shmem_my_pe(), np = shmem_n_pes(), which = 0;
    while (which < BADPE_CALLS && strcmp(badpe_calls[which], call) != 0)
        which++;
    DT_CHECK(which < BADPE_CALLS, "badpe: unknown call '%s'", call);
    uint64_t *w = (uint64_t *)shmem_calloc(2, sizeof(uint64_t));
    uint64_t *out = NULL;
    DT_CHECK(w != NULL, "shmem_calloc");
    CK(cudaMalloc(&out, sizeof(uint64_t)));
    shmem_barrier_all();
    if (me == 0) {
        k_badpe<<<1, 1, 0, s>>>(d, which, w, np, out);
        CK_LAUNCH();
        cudaError_t e = cudaStreamSynchronize(s);
        if (e == cudaSuccess)
            DT_FAIL("a kernel calling %s on PE %d of %d completed", call, np, np);
        printf("PE 0: TRAPPED: cudaStreamSynchronize returned %s\n", cudaGetErrorName(e));
        fflush(stdout);
        return 3; /* the launcher stops the job */
    }
    shmem_barrier_all(); /* PE 0 never gets here */
    return 0;
}

int main(int argc, char **argv)
{
    int refuse = argc > 1 && strcmp(argv[1], "refuse") == 0;
    int badpe = argc > 2 && strcmp(argv[1], "badpe") == 0;
    shmemx_dev_t d = dt_init();
    cudaStream_t s = dt_stream();
    if (refuse)
        return run_refuse(d, s);
    if (badpe)
        return run_badpe(d, s, argv[2]);
    int me = shmem_my_pe(), np = shmem_n_pes();
    double t0 = dt_now();
    int waits = dt_waits_allowed(d);
    /* The verdict is one per job: a PE that disagreed would trap or hang. */
    int *v = (int *)shmem_malloc_with_hints(3 * sizeof(int), SHMEMX_MALLOC_HOST);
    DT_CHECK(v != NULL, "shmem_malloc_with_hints");
    v[0] = waits;
    shmem_barrier_all();
    shmem_int_min_reduce(SHMEM_TEAM_WORLD, &v[1], &v[0], 1);
    shmem_int_max_reduce(SHMEM_TEAM_WORLD, &v[2], &v[0], 1);
    DT_CHECK(v[1] == v[2], "PEs disagree on whether device waits are allowed (this PE: %d)", waits);
    shmem_free(v);

    int atomics = (d.flags & SHMEMX_DEV_F_PEER_ATOMICS) != 0;
    int proxied = 0;
    for (int pe = 0; pe < np; pe++)
        proxied |= shmemx_device_route(pe) == SHMEMX_ROUTE_PROXY;
    /* GPU-scope barriers exactly where every PE is on this GPU, mapped here */
    const char *scope = getenv("USHMEM_DEVICE_SCOPE");
    int one_gpu = !(scope && strcmp(scope, "sys") == 0) && d.gpu_pes == np && !proxied;
    DT_CHECK(((d.flags & SHMEMX_DEV_F_ONE_GPU) != 0) == one_gpu,
             "the handle's ONE_GPU flag is %d, want %d (%d of %d PEs on this GPU, proxied %d, "
             "USHMEM_DEVICE_SCOPE=%s)",
             (d.flags & SHMEMX_DEV_F_ONE_GPU) != 0, one_gpu, d.gpu_pes, np, proxied,
             scope ? scope : "");
    printf("PE %d: device barriers at %s scope\n", me, one_gpu ? "GPU" : "system");
    if (atomics)
        run_contention(d, s, proxied && !waits);
    else
        printf("PE %d: SKIP contention: no native peer atomics between the GPUs\n", me);
    run_sequences(d, s, atomics);

    if (waits) {
        int ts = (d.flags & SHMEMX_DEV_F_TIMESLICED) != 0;
        long long rounds = env_count("USHMEM_TEST_LITMUS_ROUNDS", ts ? 200 : 100000);
        long long epochs = env_count("USHMEM_TEST_BARRIER_EPOCHS", ts ? 20 : 2000);
        if (np >= 2)
            run_litmus(d, s, rounds);
        else
            printf("PE 0: SKIP litmus: needs 2 PEs\n");
        run_barriers(d, s, epochs);
    } else {
        printf("PE %d: SKIP device-wait tests (litmus, device barriers): %s\n", me,
               shmemx_dev_why());
    }
    CK(cudaStreamDestroy(s));
    printf("PE %d: PASS dev_amo (%.2f s)\n", me, dt_now() - t0);
    fflush(stdout);
    shmem_finalize();
    return 0;
}
