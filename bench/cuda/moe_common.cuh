// The MoE dispatch/combine benchmark's workload, shared by bench_moe_ushmem.cu
// and bench_moe_nvshmem.cu so that both libraries move the same rows to the
// same PEs and are checked against the same host model; only the kernels'
// library calls and the process setup differ between the two files.
// No library calls here: routing, row contents, options, the per-round check
// and the statistics line.
#ifndef MOE_COMMON_CUH
#define MOE_COMMON_CUH

#include <cuda_runtime.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#define MOE_MAX_PES     64
#define MOE_MAX_THREADS 512 // the kernels' launch bounds (more would cap them at 64 registers)

struct moe_cfg {
    int npes;
    int tokens;  // per PE
    int topk;    // destinations per token
    int hidden;  // floats per row (a multiple of 4: rows stay 16-byte aligned)
    int blocks;  // CTAs per PE of the dispatch and combine kernels
    int threads; // threads per CTA (whole warps)
    int rounds;  // timed rounds
    int warmup;  // untimed rounds before them (checked too)
    uint64_t seed;
};

__host__ __device__ static inline uint64_t moe_mix(uint64_t x) // splitmix64's finalizer
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Destination k of token t of PE src: a pseudo-random first PE, then the next
// ones (distinct for k < topk <= npes, as top-k experts on distinct PEs).
__host__ __device__ static inline int moe_dest(const moe_cfg &c, int src, int t, int k)
{
    uint64_t h = moe_mix(c.seed ^ ((uint64_t)src << 32) ^ (uint64_t)t);
    return (int)((h % (uint64_t)c.npes + (uint64_t)k) % (uint64_t)c.npes);
}

// Float i of the row (src, t, k) of round r. Floats 0-3 name it (src, t, k, r:
// small integers, exact as floats); the rest are multiples of 1/8 in
// [-125, 125], so the combine's sums are exact in any order.
__host__ __device__ static inline float moe_val(const moe_cfg &c, int src, int t, int k, int r,
                                                int i)
{
    switch (i) {
    case 0: return (float)src;
    case 1: return (float)t;
    case 2: return (float)k;
    case 3: return (float)r;
    default: break;
    }
    uint64_t h = moe_mix(c.seed ^ ((uint64_t)(src + 1) << 44) ^ ((uint64_t)t << 12) ^
                         ((uint64_t)k << 4) ^ 0x5a5aULL);
    return (float)((int)(moe_mix(h + (uint64_t)i) % 2001) - 1000) * 0.125f;
}

// This PE's token rows for round r: x[(t * topk + k) * hidden + i].
__global__ void moe_fill(moe_cfg c, int me, int r, float *x)
{
    size_t n = (size_t)c.tokens * c.topk * c.hidden;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x) {
        size_t row = e / (size_t)c.hidden;
        int i = (int)(e % (size_t)c.hidden);
        x[e] = moe_val(c, me, (int)(row / (size_t)c.topk), (int)(row % (size_t)c.topk), r, i);
    }
}

static void moe_usage(const char *prog, bool npes_opt)
{
    fprintf(stderr,
            "usage: %s%s [-t TOKENS (1024)] [-H HIDDEN floats per row (256 = 1 KiB)] "
            "[-k TOPK (2)] [-r ROUNDS (50)] [-w WARMUP (5)] [-b BLOCKS (16)] "
            "[-T THREADS per block (256)] [-s SEED]\n",
            prog, npes_opt ? " [-n PES (env NPES, 2)]" : "");
}

// Options; npes_opt: -n / NPES give the PE count (NVSHMEM forks its own PEs;
// ushmem's come from ushrun -n). false with a line on stderr when bad.
static bool moe_parse(int argc, char **argv, moe_cfg *c, bool npes_opt)
{
    const char *np = npes_opt ? getenv("NPES") : NULL;
    c->npes = np && *np ? atoi(np) : 2;
    c->tokens = 1024;
    c->topk = 2;
    c->hidden = 256;
    c->blocks = 16;
    c->threads = 256;
    c->rounds = 50;
    c->warmup = 5;
    c->seed = 0x30e0c0ffeeULL;
    int o;
    while ((o = getopt(argc, argv, npes_opt ? "n:t:H:k:r:w:b:T:s:" : "t:H:k:r:w:b:T:s:")) != -1) {
        switch (o) {
        case 'n': c->npes = atoi(optarg); break;
        case 't': c->tokens = atoi(optarg); break;
        case 'H': c->hidden = atoi(optarg); break;
        case 'k': c->topk = atoi(optarg); break;
        case 'r': c->rounds = atoi(optarg); break;
        case 'w': c->warmup = atoi(optarg); break;
        case 'b': c->blocks = atoi(optarg); break;
        case 'T': c->threads = atoi(optarg); break;
        case 's': c->seed = strtoull(optarg, NULL, 0); break;
        default: moe_usage(argv[0], npes_opt); return false;
        }
    }
    const char *bad = NULL;
    if (optind != argc)
        bad = "unexpected argument";
    else if (c->npes < 1 || c->npes > MOE_MAX_PES)
        bad = "PEs: 1 to 64";
    else if (c->tokens < 1 || c->tokens > (1 << 22))
        bad = "tokens: 1 to 4194304";
    else if (c->topk < 1 || c->topk > 16)
        bad = "top-k: 1 to 16";
    else if (c->hidden < 4 || c->hidden % 4 || c->hidden > (1 << 20))
        bad = "hidden: a multiple of 4 floats, 4 to 1048576";
    else if (c->rounds < 1 || c->warmup < 0)
        bad = "rounds at least 1, warm-up at least 0";
    else if (c->blocks < 1 || c->threads < 32 || c->threads > MOE_MAX_THREADS || c->threads % 32)
        bad = "blocks at least 1, threads a multiple of 32 up to 512";
    if (bad) {
        fprintf(stderr, "%s: %s\n", argv[0], bad);
        moe_usage(argv[0], npes_opt);
        return false;
    }
    return true;
}

// rows[src * npes + dst]: how many rows PE src sends PE dst in a round (the
// same every round: routing does not depend on the round).
static std::vector<int> moe_routes(const moe_cfg &c)
{
    std::vector<int> m((size_t)c.npes * c.npes, 0);
    for (int src = 0; src < c.npes; src++)
        for (int t = 0; t < c.tokens; t++)
            for (int k = 0; k < c.topk; k++)
                m[(size_t)src * c.npes + moe_dest(c, src, t, k)]++;
    return m;
}

// The most rows any PE receives: the size of every PE's receive buffer.
static int moe_capacity(const moe_cfg &c, const std::vector<int> &routes)
{
    int cap = 1;
    for (int dst = 0; dst < c.npes; dst++) {
        int n = 0;
        for (int src = 0; src < c.npes; src++)
            n += routes[(size_t)src * c.npes + dst];
        cap = std::max(cap, n);
    }
    return cap;
}

// What one PE holds after round r, copied to the host.
struct moe_result {
    uint64_t counter;          // rows reserved here (the remote fetch_adds)
    std::vector<uint64_t> sig; // sig[src]: (blocks << 32) + rows from src (dispatch signals)
    uint64_t csig;             // rows back here (combine signals)
    std::vector<float> rows;   // rows received, counter of them, hidden floats each
    std::vector<float> back;   // back[(t * topk + k) * hidden + i]: my rows, returned
    std::vector<float> out;    // out[t * hidden + i]: the combined sums
};

// Whether v is a whole number in [0, n) (NaN is not).
static bool moe_index(float v, int n)
{
    return v >= 0 && v < (float)n && v == (float)(int)v;
}

static bool moe_same(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof(float)) == 0; // bit for bit (no NaN, no -0 here)
}

// Checks PE me's result of round r against the model: every received row is a
// row routed here this round, each once, every byte right; the counter and the
// dispatch signals count them; every row came back to its slot unchanged; the
// sums are right. 0, or 1 with one line (no newline) in msg.
static int moe_check(const moe_cfg &c, int me, int r, const std::vector<int> &routes,
                     const moe_result &g, char *msg, size_t msgsz)
{
    const size_t H = (size_t)c.hidden;
    int expect = 0;
    for (int src = 0; src < c.npes; src++) {
        int n = routes[(size_t)src * c.npes + me];
        expect += n;
        uint64_t want = ((uint64_t)c.blocks << 32) | (uint64_t)n;
        if (g.sig[src] != want) {
            snprintf(msg, msgsz,
                     "round %d: dispatch signal from PE %d is %llu blocks + %llu rows, want %d "
                     "blocks + %d rows",
                     r, src, (unsigned long long)(g.sig[src] >> 32),
                     (unsigned long long)(g.sig[src] & 0xffffffffu), c.blocks, n);
            return 1;
        }
    }
    if (g.counter != (uint64_t)expect) {
        snprintf(msg, msgsz, "round %d: counter %llu, want %d rows routed here", r,
                 (unsigned long long)g.counter, expect);
        return 1;
    }
    std::vector<unsigned char> seen((size_t)c.npes * c.tokens * c.topk, 0);
    std::vector<float> want(H);
    for (int s = 0; s < expect; s++) {
        const float *row = &g.rows[(size_t)s * H];
        bool named = moe_index(row[0], c.npes) && moe_index(row[1], c.tokens) &&
                     moe_index(row[2], c.topk) && row[3] == (float)r;
        int src = named ? (int)row[0] : 0, t = named ? (int)row[1] : 0, k = named ? (int)row[2] : 0;
        if (!named || moe_dest(c, src, t, k) != me) {
            snprintf(msg, msgsz,
                     "round %d: received row %d names PE %g token %g k %g round %g: not a row "
                     "routed here this round",
                     r, s, row[0], row[1], row[2], row[3]);
            return 1;
        }
        size_t id = ((size_t)src * c.tokens + t) * c.topk + k;
        if (seen[id]++) {
            snprintf(msg, msgsz, "round %d: token %d of PE %d (k %d) arrived twice", r, t, src, k);
            return 1;
        }
        for (size_t i = 0; i < H; i++)
            want[i] = moe_val(c, src, t, k, r, (int)i);
        if (!moe_same(row, want.data(), H)) {
            size_t i = 0;
            while (i < H && row[i] == want[i])
                i++;
            snprintf(msg, msgsz,
                     "round %d: received row %d (PE %d token %d k %d) float %zu is %g, want %g", r,
                     s, src, t, k, i, i < H ? row[i] : 0.0f, i < H ? want[i] : 0.0f);
            return 1;
        }
    }
    if (g.csig != (uint64_t)c.tokens * c.topk) {
        snprintf(msg, msgsz, "round %d: combine signal %llu, want %d rows back", r,
                 (unsigned long long)g.csig, c.tokens * c.topk);
        return 1;
    }
    std::vector<float> sum(H);
    for (int t = 0; t < c.tokens; t++) {
        std::fill(sum.begin(), sum.end(), 0.0f);
        for (int k = 0; k < c.topk; k++) {
            for (size_t i = 0; i < H; i++) {
                want[i] = moe_val(c, me, t, k, r, (int)i);
                sum[i] += want[i];
            }
            const float *got = &g.back[((size_t)t * c.topk + k) * H];
            if (!moe_same(got, want.data(), H)) {
                size_t i = 0;
                while (i < H && got[i] == want[i])
                    i++;
                snprintf(msg, msgsz,
                         "round %d: token %d's row back from PE %d (k %d): float %zu is %g, "
                         "want %g",
                         r, t, moe_dest(c, me, t, k), k, i, i < H ? got[i] : 0.0f,
                         i < H ? want[i] : 0.0f);
                return 1;
            }
        }
        const float *o = &g.out[(size_t)t * H];
        if (!moe_same(o, sum.data(), H)) {
            size_t i = 0;
            while (i < H && o[i] == sum[i])
                i++;
            snprintf(msg, msgsz, "round %d: token %d's combined float %zu is %g, want %g", r, t, i,
                     i < H ? o[i] : 0.0f, i < H ? sum[i] : 0.0f);
            return 1;
        }
    }
    return 0;
}

// One line per phase (PE 0): v holds each timed round's time (µs), already the
// largest over the PEs.
//   R moe_<phase> np<N> best <µs> mean <µs> median <µs> p90 <µs> max <µs>
static void moe_print(const char *phase, int npes, std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    double mean = 0;
    for (double x : v)
        mean += x;
    mean /= (double)n;
    double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    size_t p90 = (n * 9 + 9) / 10; // nearest rank: ceil(0.9 n)
    printf("R moe_%s np%d best %.3f mean %.3f median %.3f p90 %.3f max %.3f\n", phase, npes, v[0],
           mean, median, v[p90 - 1], v[n - 1]);
    fflush(stdout);
}

/* ---- where a round's time goes: phase stamps ----
 * Thread 0 of each CTA writes MOE_ST words per round with %globaltimer (ns;
 * one clock for every process on the GPU, so PEs compare): the CTA's start of
 * the dispatch, when its last warp finished issuing (fetch_adds and puts),
 * after its quiet, after its signals, (CTA 0) when every PE's signals were in;
 * the CTA's start of the combine, its last warp's last put, and when every row
 * was back. No barrier is added for them: each warp writes its end time into
 * shared memory, read after a barrier the kernel has anyway. The device
 * barrier kernel before the dispatch stamps its end into CTA 0's MOE_ST_B_END
 * (where the start skew comes from: the barrier's release, or the gap from
 * its end to the dispatch's start). */
enum {
    MOE_ST_B_END,
    MOE_ST_D_START,
    MOE_ST_D_ISSUED,
    MOE_ST_D_QUIET,
    MOE_ST_D_SIGNALLED,
    MOE_ST_D_RECEIVED,
    MOE_ST_C_START,
    MOE_ST_C_SENT,
    MOE_ST_C_BACK,
    MOE_ST
};

__device__ __forceinline__ uint64_t moe_now(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Thread 0: this CTA's stamp `which` (st: the round's array, MOE_ST words per CTA).
__device__ __forceinline__ void moe_stamp(uint64_t *st, int which, uint64_t t)
{
    st[(size_t)blockIdx.x * MOE_ST + which] = t;
}

// Lane 0 of each warp: its end time, into the CTA's shared slots.
__device__ __forceinline__ void moe_warp_end(uint64_t *slots)
{
    if ((threadIdx.x & 31) == 0)
        slots[threadIdx.x >> 5] = moe_now();
}

// After a barrier: the latest warp end of this CTA.
__device__ __forceinline__ uint64_t moe_last_warp(const uint64_t *slots)
{
    uint64_t m = 0;
    for (unsigned w = 0; w < (blockDim.x + 31) / 32; w++)
        m = slots[w] > m ? slots[w] : m;
    return m;
}

// One PE's record of a round from its CTAs' stamps: the dispatch start (the
// earliest CTA's), then each milestone's absolute time (the latest CTA's;
// the signals-in milestone is CTA 0's, the combine start the earliest CTA's),
// then the barrier kernel's end.
#define MOE_MILESTONES 7
#define MOE_REC        (MOE_MILESTONES + 2)
static const char *const moe_milestones[MOE_MILESTONES] = {
    "issued", "quieted", "signalled", "all_in", "combine_start", "combine_sent", "combine_back"};
static void moe_record(const uint64_t *st, int blocks, uint64_t rec[MOE_REC])
{
    uint64_t d0 = UINT64_MAX, c0 = UINT64_MAX;
    uint64_t mx[MOE_ST] = {0};
    for (int b = 0; b < blocks; b++) {
        const uint64_t *s = st + (size_t)b * MOE_ST;
        d0 = std::min(d0, s[MOE_ST_D_START]);
        c0 = std::min(c0, s[MOE_ST_C_START]);
        for (int i = 0; i < MOE_ST; i++)
            mx[i] = std::max(mx[i], s[i]);
    }
    rec[0] = d0;
    rec[1] = mx[MOE_ST_D_ISSUED];
    rec[2] = mx[MOE_ST_D_QUIET];
    rec[3] = mx[MOE_ST_D_SIGNALLED];
    rec[4] = st[MOE_ST_D_RECEIVED]; // CTA 0's
    rec[5] = c0;
    rec[6] = mx[MOE_ST_C_SENT];
    rec[7] = mx[MOE_ST_C_BACK];
    rec[MOE_MILESTONES + 1] = st[MOE_ST_B_END]; // the barrier kernel's (CTA 0's slot)
}

// PE 0, from every PE's records (recs[(pe * rounds + i) * MOE_REC + j]): per
// round, the barrier's release skew (latest PE's barrier end - earliest's),
// the launch gap (the largest over the PEs of its dispatch start - its own
// barrier end), the start skew (latest PE's dispatch start - earliest's) and
// each milestone of the slowest PE, counted from the earliest PE's start, in
// µs; one moe_print line each ("R moe_barrier_skew ...", "R moe_launch_gap
// ...", "R moe_start_skew ...", "R moe_at_<milestone> ...").
static void moe_print_profile(int npes, int rounds, const uint64_t *recs)
{
    std::vector<double> skew((size_t)rounds), bskew((size_t)rounds), gap((size_t)rounds);
    std::vector<std::vector<double>> at(MOE_MILESTONES, std::vector<double>((size_t)rounds));
    for (int i = 0; i < rounds; i++) {
        uint64_t lo = UINT64_MAX, hi = 0, blo = UINT64_MAX, bhi = 0, g = 0;
        uint64_t m[MOE_MILESTONES + 1] = {0};
        for (int pe = 0; pe < npes; pe++) {
            const uint64_t *r = recs + ((size_t)pe * rounds + i) * MOE_REC;
            const uint64_t b = r[MOE_MILESTONES + 1];
            lo = std::min(lo, r[0]);
            hi = std::max(hi, r[0]);
            blo = std::min(blo, b);
            bhi = std::max(bhi, b);
            g = std::max(g, r[0] >= b ? r[0] - b : 0);
            for (int j = 1; j <= MOE_MILESTONES; j++)
                m[j] = std::max(m[j], r[j]);
        }
        skew[(size_t)i] = (double)(hi - lo) / 1e3;
        bskew[(size_t)i] = (double)(bhi - blo) / 1e3;
        gap[(size_t)i] = (double)g / 1e3;
        for (int j = 1; j <= MOE_MILESTONES; j++)
            at[(size_t)j - 1][(size_t)i] = m[j] >= lo ? (double)(m[j] - lo) / 1e3 : 0.0;
    }
    moe_print("barrier_skew", npes, bskew);
    moe_print("launch_gap", npes, gap);
    moe_print("start_skew", npes, skew);
    for (int j = 0; j < MOE_MILESTONES; j++) {
        char name[48];
        snprintf(name, sizeof name, "at_%s", moe_milestones[j]);
        moe_print(name, npes, at[(size_t)j]);
    }
}

#endif /* MOE_COMMON_CUH */
