/* Device collectives (shmemx_device_coll.cuh) against a host model.
 *
 * Every case launches one CTA per PE whose group (one thread, one warp, a CTA
 * of 256 threads, or of 100: not whole warps) runs ROUNDS collectives back to
 * back on the same buffers: each round it rewrites its source, calls the
 * collective and checks its dest in the kernel, at once (a peer already in the
 * next round must not have written into it yet). The host then checks every
 * byte of the dest buffer (the last round's data at a random offset, and the
 * poison (0) around it and in the gaps) against its own model of every PE's
 * data.
 *
 *  - alltoall, broadcast (a different root each round), fcollect, collect
 *    (each member its own count, 0 included), alltoallv (per-peer counts, 0
 *    included, and gaps on both sides), as mem forms, typed templates and
 *    type-named functions; random sizes and offsets.
 *  - reductions (and, or, xor, max, min, sum, prod over the types the spec
 *    allows, out of place and in place, below and above
 *    USHMEMI_DEV_REDUCE_PULL_MAX) and reduce_scatter.
 *  - on the world handle, on the team of PEs 1..N-1 and on the even PEs
 *    (shmemx_team_dev_get).
 *
 * The collectives wait on the device: where device waits are off the cases are
 * skipped (one line says why) and `dev_coll refuse` (dev_refuse.sh) checks the
 * refusal instead. USHMEM_TEST_QUICK=1: fewer cases. */
#include <type_traits>

#include "dev_test.cuh"

#define ROUNDS  3
#define BUF     ((size_t)4 << 20) /* bytes of each symmetric buffer */
#define GUARD   64                /* poison checked past the data */
#define MAX_OFF 256               /* random byte offsets below this */

enum { K_ALLTOALL, K_BROADCAST, K_FCOLLECT, K_COLLECT, K_ALLTOALLV, K_NMOVE };
static const char *const move_name[] = {"alltoall", "broadcast", "fcollect", "collect",
                                        "alltoallv"};
enum { O_AND, O_OR, O_XOR, O_MAX, O_MIN, O_SUM, O_PROD };
static const char *const op_name[] = {"and", "or", "xor", "max", "min", "sum", "prod"};
/* thread, warp, block of 256, block of 100 (the last two: the _block forms) */
static const unsigned form_threads[] = {1, 32, 256, 100};
static const char *const form_name[] = {"thread", "warp", "block", "block100"};

#define DEVH const SHMEMX_GRID_CONSTANT shmemx_dev_t

/* ---- the model: what every PE's data is, on the host and in kernels ---- */

/* Team PE pe's data in round r of a case keyed k0. */
__host__ __device__ static inline uint64_t tkey(uint64_t k0, int pe, int r)
{
    return dt_mix(k0 ^ (uint64_t)(pe + 1) * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(r + 1) << 48);
}
/* Byte b of pe's source in round r (never 0, the poison). */
__host__ __device__ static inline uint8_t sbyte(uint64_t k0, int pe, int r, size_t b)
{
    return dt_gen(tkey(k0, pe, r), b);
}

/* Element i of pe's reduction source: values whose op over up to 128 PEs is
 * exact (floats) or wraps the same in any order (integers). */
template <typename T>
__host__ __device__ static inline T rval(int op, uint64_t k0, int pe, int r, size_t i)
{
    uint64_t x = dt_mix(tkey(k0, pe, r) ^ (uint64_t)i * 0xd1b54a32d192ed03ULL);
    if (std::is_floating_point<T>::value) {
        if (op == O_PROD)
            return (T)((double)(x % 2 + 1) * ((x >> 8) & 1 ? -1.0 : 1.0));
        return (T)((double)(long long)(x % 2001) - 1000.0);
    }
    if (op == O_PROD) /* +-1..3 */
        return (T)((long long)(x % 3 + 1) * (std::is_signed<T>::value && ((x >> 8) & 1) ? -1 : 1));
    if (op == O_SUM && std::is_signed<T>::value)
        return (T)((long long)(x % 2001) - 1000);
    return (T)x; /* bit patterns: and/or/xor/min/max, unsigned sums */
}

template <typename T> __host__ __device__ static inline T fold(int op, T a, T b)
{
    if constexpr (std::is_integral<T>::value) {
        switch (op) {
        case O_AND: return (T)(a & b);
        case O_OR: return (T)(a | b);
        case O_XOR: return (T)(a ^ b);
        default: break;
        }
    }
    switch (op) {
    case O_MAX: return b > a ? b : a;
    case O_MIN: return b < a ? b : a;
    case O_SUM: return (T)(a + b);
    default: return (T)(a * b);
    }
}

/* The wanted result at element i (of the reduced range) for team PE me. */
template <typename T>
__host__ __device__ static inline T rwant(int op, uint64_t k0, int n, int r, size_t j)
{
    T acc = rval<T>(op, k0, 0, r, j);
    for (int p = 1; p < n; p++)
        acc = fold(op, acc, rval<T>(op, k0, p, r, j));
    return acc;
}

/* alltoallv and collect layouts, per round: c[p][q] elements from p to q at
 * soff[p][q] in p's source and doff[p][q] in q's dest (collect: c[p][0]). */
struct layout_t {
    size_t *c, *soff, *doff; /* [ROUNDS][n][n], host or device */
};

/* ---- kernels ---- */

struct err_t {
    unsigned long long bad, round, index, got, want;
};

__device__ static void report(err_t *e, int r, size_t i, unsigned long long got,
                              unsigned long long want)
{
    if (atomicAdd(&e->bad, 1ULL) == 0) {
        e->round = (unsigned long long)r;
        e->index = i;
        e->got = got;
        e->want = want;
    }
}

template <int FORM> struct form_group;
template <> struct form_group<0> {
    typedef shmemx_dev_thread_group type;
};
template <> struct form_group<1> {
    typedef shmemx_dev_warp_group type;
};
template <> struct form_group<2> {
    typedef shmemx_dev_block_group type;
};

/* The call by form: thread, _warp, _block. */
#define BY_FORM(rc, fn, ...)                                                                       \
    do {                                                                                           \
        if constexpr (FORM == 0)                                                                   \
            rc = fn(__VA_ARGS__);                                                                  \
        else if constexpr (FORM == 1)                                                              \
            rc = fn##_warp(__VA_ARGS__);                                                           \
        else                                                                                       \
            rc = fn##_block(__VA_ARGS__);                                                          \
    } while (0)

/* One data-movement collective: mem forms for T = char, type-named for int,
 * typed templates otherwise. Sizes in elements of T. */
template <int FORM, typename T>
__device__ static int call_move(const shmemx_dev_t &d, int kind, T *dest, const T *src, size_t ne,
                                int root, const size_t *doff, const size_t *soff, const size_t *c)
{
    int rc = -1;
    if constexpr (std::is_same<T, char>::value) {
        switch (kind) {
        case K_ALLTOALL: BY_FORM(rc, shmemx_dev_alltoallmem, d, dest, src, ne); break;
        case K_BROADCAST: BY_FORM(rc, shmemx_dev_broadcastmem, d, dest, src, ne, root); break;
        case K_FCOLLECT: BY_FORM(rc, shmemx_dev_fcollectmem, d, dest, src, ne); break;
        case K_COLLECT: BY_FORM(rc, shmemx_dev_collectmem, d, dest, src, ne); break;
        default: BY_FORM(rc, shmemx_dev_alltoallvmem, d, dest, doff, src, soff, c); break;
        }
    } else if constexpr (std::is_same<T, int>::value) {
        switch (kind) {
        case K_ALLTOALL: BY_FORM(rc, shmemx_dev_int_alltoall, d, dest, src, ne); break;
        case K_BROADCAST: BY_FORM(rc, shmemx_dev_int_broadcast, d, dest, src, ne, root); break;
        case K_FCOLLECT: BY_FORM(rc, shmemx_dev_int_fcollect, d, dest, src, ne); break;
        case K_COLLECT: BY_FORM(rc, shmemx_dev_int_collect, d, dest, src, ne); break;
        default: BY_FORM(rc, shmemx_dev_int_alltoallv, d, dest, doff, src, soff, c); break;
        }
    } else {
        switch (kind) {
        case K_ALLTOALL: BY_FORM(rc, shmemx_dev_alltoall, d, dest, src, ne); break;
        case K_BROADCAST: BY_FORM(rc, shmemx_dev_broadcast, d, dest, src, ne, root); break;
        case K_FCOLLECT: BY_FORM(rc, shmemx_dev_fcollect, d, dest, src, ne); break;
        case K_COLLECT: BY_FORM(rc, shmemx_dev_collect, d, dest, src, ne); break;
        default: BY_FORM(rc, shmemx_dev_alltoallv, d, dest, doff, src, soff, c); break;
        }
    }
    return rc;
}

__host__ __device__ static inline int root_of(int r, int rootbase, int n)
{
    return (rootbase + 7 * r) % n;
}

/* Where PE p's part of a round lands in this PE's dest: len bytes of p's
 * source from byte from, at dest + at. c, so, dof: the round's layout
 * (collect: *off, the running offset, advances). The kernel's check and the
 * host model share it. */
struct part_t {
    size_t len, from, at;
};
__host__ __device__ static part_t part_of(int kind, int p, int me, int n, size_t ne, size_t es,
                                          int root, const size_t *c, const size_t *so,
                                          const size_t *dof, size_t *off)
{
    const size_t pn = (size_t)p * n;
    switch (kind) {
    case K_ALLTOALL: return {ne * es, (size_t)me * ne * es, (size_t)p * ne * es};
    case K_BROADCAST: return {p == root ? ne * es : 0, 0, 0};
    case K_FCOLLECT: return {ne * es, 0, (size_t)p * ne * es};
    case K_COLLECT: {
        const size_t at = *off;
        *off += c[pn] * es;
        return {c[pn] * es, 0, at};
    }
    default: return {c[pn + me] * es, so[pn + me] * es, dof[pn + me] * es};
    }
}

/* ROUNDS rounds of: fill the source, the collective, check the dest. ne:
 * elements per block (alltoall/broadcast/fcollect); lay: device layouts. */
template <int FORM, typename T>
__global__ void k_move(DEVH d, int kind, T *dest, T *src, size_t ne, int rootbase, uint64_t k0,
                       layout_t lay, err_t *err)
{
    typename form_group<FORM>::type g;
    const unsigned rank = g.rank(), size = g.size();
    const int me = d.my_pe, n = d.n_pes;
    const size_t es = sizeof(T), nn = (size_t)n * n;
    uint8_t *sb = (uint8_t *)src, *db = (uint8_t *)dest;
    for (int r = 0; r < ROUNDS; r++) {
        const size_t *c = lay.c + r * nn, *so = lay.soff + r * nn, *dof = lay.doff + r * nn;
        size_t slen = kind == K_ALLTOALL  ? (size_t)n * ne * es
                      : kind == K_COLLECT ? c[(size_t)me * n] * es
                      : kind == K_ALLTOALLV
                          ? (so[(size_t)me * n + n - 1] + c[(size_t)me * n + n - 1]) * es
                          : ne * es;
        for (size_t b = rank; b < slen; b += size)
            sb[b] = sbyte(k0, me, r, b);
        g.sync();
        int root = root_of(r, rootbase, n);
        int rc =
            call_move<FORM, T>(d, kind, dest, src, kind == K_COLLECT ? c[(size_t)me * n] : ne, root,
                               dof + (size_t)me * n, so + (size_t)me * n, c + (size_t)me * n);
        if (rc != 0 && rank == 0)
            report(err, r, ~0ULL, (unsigned long long)rc, 0);
        /* the dest, checked while peers may already run the next round */
        size_t off = 0;
        for (int p = 0; p < n; p++) {
            const part_t q = part_of(kind, p, me, n, ne, es, root, c, so, dof, &off);
            const size_t len = q.len, from = q.from, at = q.at;
            for (size_t b = rank; b < len; b += size) {
                uint8_t want = sbyte(k0, p, r, from + b), got = db[at + b];
                if (got != want)
                    report(err, r, at + b, got, want);
            }
        }
        g.sync();
    }
}

/* One reduction: type-named for int sum / double max / uint64 xor, templates
 * otherwise. */
template <int FORM, typename T, int OP, int SCATTER>
__device__ static int call_reduce(const shmemx_dev_t &d, T *dest, const T *src, size_t nr)
{
    int rc = -1;
    if constexpr (SCATTER) {
        if constexpr (OP == O_AND)
            BY_FORM(rc, shmemx_dev_and_reduce_scatter, d, dest, src, nr);
        else if constexpr (OP == O_OR)
            BY_FORM(rc, shmemx_dev_or_reduce_scatter, d, dest, src, nr);
        else if constexpr (OP == O_XOR)
            BY_FORM(rc, shmemx_dev_xor_reduce_scatter, d, dest, src, nr);
        else if constexpr (OP == O_MAX)
            BY_FORM(rc, shmemx_dev_max_reduce_scatter, d, dest, src, nr);
        else if constexpr (OP == O_MIN)
            BY_FORM(rc, shmemx_dev_min_reduce_scatter, d, dest, src, nr);
        else if constexpr (OP == O_SUM && std::is_same<T, int>::value)
            BY_FORM(rc, shmemx_dev_int_sum_reduce_scatter, d, dest, src, nr);
        else if constexpr (OP == O_SUM)
            BY_FORM(rc, shmemx_dev_sum_reduce_scatter, d, dest, src, nr);
        else
            BY_FORM(rc, shmemx_dev_prod_reduce_scatter, d, dest, src, nr);
        return rc;
    }
    if constexpr (OP == O_AND)
        BY_FORM(rc, shmemx_dev_and_reduce, d, dest, src, nr);
    else if constexpr (OP == O_OR)
        BY_FORM(rc, shmemx_dev_or_reduce, d, dest, src, nr);
    else if constexpr (OP == O_XOR && std::is_same<T, uint64_t>::value)
        BY_FORM(rc, shmemx_dev_uint64_xor_reduce, d, dest, src, nr);
    else if constexpr (OP == O_XOR)
        BY_FORM(rc, shmemx_dev_xor_reduce, d, dest, src, nr);
    else if constexpr (OP == O_MAX && std::is_same<T, double>::value)
        BY_FORM(rc, shmemx_dev_double_max_reduce, d, dest, src, nr);
    else if constexpr (OP == O_MAX)
        BY_FORM(rc, shmemx_dev_max_reduce, d, dest, src, nr);
    else if constexpr (OP == O_MIN)
        BY_FORM(rc, shmemx_dev_min_reduce, d, dest, src, nr);
    else if constexpr (OP == O_SUM && std::is_same<T, int>::value)
        BY_FORM(rc, shmemx_dev_int_sum_reduce, d, dest, src, nr);
    else if constexpr (OP == O_SUM)
        BY_FORM(rc, shmemx_dev_sum_reduce, d, dest, src, nr);
    else
        BY_FORM(rc, shmemx_dev_prod_reduce, d, dest, src, nr);
    return rc;
}

template <typename T> __device__ static unsigned long long bits_of(T v)
{
    unsigned long long b = 0;
    memcpy(&b, &v, sizeof v);
    return b;
}

/* ROUNDS rounds: fill the source, reduce (scatter: reduce_scatter; inplace:
 * dest is the source), check the result. */
template <int FORM, typename T, int OP, int SCATTER>
__global__ void k_reduce(DEVH d, T *dest, T *src, size_t nr, int inplace, uint64_t k0, err_t *err)
{
    const int scatter = SCATTER;
    typename form_group<FORM>::type g;
    const unsigned rank = g.rank(), size = g.size();
    const int me = d.my_pe, n = d.n_pes;
    const size_t nsrc = scatter ? (size_t)n * nr : nr;
    T *out = inplace ? src : dest;
    for (int r = 0; r < ROUNDS; r++) {
        for (size_t i = rank; i < nsrc; i += size)
            src[i] = rval<T>(OP, k0, me, r, i);
        g.sync();
        int rc = call_reduce<FORM, T, OP, SCATTER>(d, out, src, nr);
        if (rc != 0 && rank == 0)
            report(err, r, ~0ULL, (unsigned long long)rc, 0);
        for (size_t i = rank; i < nr; i += size) {
            T want = rwant<T>(OP, k0, n, r, scatter ? (size_t)me * nr + i : i), got = out[i];
            if (bits_of(got) != bits_of(want))
                report(err, r, i, bits_of(got), bits_of(want));
        }
        g.sync();
    }
}

/* ---- host side ---- */

typedef struct {
    const shmemx_dev_t *d; /* the handle (world or team) */
    shmem_team_t h;        /* the same team on the host: its syncs */
    const char *team;
    int n, me; /* team size and this PE's team number */
} team_t;

static uint64_t g_rng;
static cudaStream_t g_s;
static err_t *g_err;
static char *g_dst, *g_src; /* symmetric, BUF bytes each */
static unsigned long long g_cases, g_bytes;

static void launch_check(const char *what, const team_t *t, int form, void (*launch)(void *),
                         void *arg)
{
    CK(cudaMemsetAsync(g_err, 0, sizeof(err_t), g_s));
    launch(arg);
    CK_LAUNCH();
    CK(cudaStreamSynchronize(g_s));
    err_t e;
    CK(cudaMemcpy(&e, g_err, sizeof e, cudaMemcpyDeviceToHost));
    if (e.bad && e.index == ~0ULL)
        DT_FAIL("%s on %s (%s form, team PE %d of %d): round %llu returned %llu", what, t->team,
                form_name[form], t->me, t->n, e.round, e.got);
    if (e.bad)
        DT_FAIL("%s on %s (%s form, team PE %d of %d): %llu bad elements seen in the kernel; first "
                "in round %llu at %llu: got 0x%llx, want 0x%llx",
                what, t->team, form_name[form], t->me, t->n, e.bad, e.round, e.index, e.got,
                e.want);
}

/* The host's check of [0, span) of the dest buffer against want (same size). */
static void check_image(const char *what, const team_t *t, int form, const uint8_t *want,
                        size_t span, size_t lo, size_t hi)
{
    uint8_t *got = (uint8_t *)malloc(span ? span : 1);
    DT_CHECK(got != NULL, "malloc");
    CK(cudaMemcpy(got, g_dst, span, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < span; i++)
        if (got[i] != want[i])
            DT_FAIL("%s on %s (%s form, team PE %d of %d): dest byte %zu (data at [%zu, %zu)) is "
                    "0x%02x, want 0x%02x",
                    what, t->team, form_name[form], t->me, t->n, i, lo, hi, got[i], want[i]);
    free(got);
}

static void poison(void)
{
    CK(cudaMemsetAsync(g_dst, 0, BUF, g_s));
    CK(cudaMemsetAsync(g_src, 0, BUF, g_s));
    CK(cudaStreamSynchronize(g_s));
}

/* Random layouts of alltoallv (counts 0..maxe, gaps 0..3 elements) and collect. */
static void make_layout(layout_t *h, int n, size_t maxe, uint64_t *rng)
{
    size_t nn = (size_t)n * n;
    for (int r = 0; r < ROUNDS; r++) {
        size_t *c = h->c + r * nn, *so = h->soff + r * nn, *dof = h->doff + r * nn;
        for (size_t k = 0; k < nn; k++)
            c[k] = dt_rand(rng) % 5 == 0 ? 0 : dt_log_uniform(rng, maxe);
        for (int p = 0; p < n; p++) { /* p's source: blocks for q = 0.. in order, gaps between */
            size_t at = dt_rand(rng) % 4;
            for (int q = 0; q < n; q++) {
                so[(size_t)p * n + q] = at;
                at += c[(size_t)p * n + q] + dt_rand(rng) % 4;
            }
        }
        for (int q = 0; q < n; q++) { /* q's dest: blocks from p = 0.. in order, gaps between */
            size_t at = dt_rand(rng) % 4;
            for (int p = 0; p < n; p++) {
                dof[(size_t)p * n + q] = at;
                at += c[(size_t)p * n + q] + dt_rand(rng) % 4;
            }
        }
    }
}

struct move_arg_t {
    const team_t *t;
    int form, kind, rootbase;
    char *dest, *src;
    size_t ne;
    uint64_t k0;
    layout_t lay;
};

template <int FORM, typename T> static void launch_move(void *p)
{
    move_arg_t *a = (move_arg_t *)p;
    unsigned threads = form_threads[a->form];
    k_move<FORM, T><<<1, threads, 0, g_s>>>(*a->t->d, a->kind, (T *)a->dest, (T *)a->src, a->ne,
                                            a->rootbase, a->k0, a->lay, g_err);
}

/* The forms compiled per type (so that the test compiles in a minute): all
 * for char (mem forms), the _block form for int (type-named), thread and warp
 * for double (templates). */
template <typename T> static void (*move_launcher(int form))(void *)
{
    if constexpr (std::is_same<T, int>::value)
        return launch_move<2, T>;
    else if constexpr (std::is_same<T, double>::value)
        return form == 0 ? launch_move<0, T> : launch_move<1, T>;
    else
        return form == 0 ? launch_move<0, T> : form == 1 ? launch_move<1, T> : launch_move<2, T>;
}

/* One data-movement case on team t with elements of T. */
template <typename T>
static void move_case(const team_t *t, int kind, int form, size_t maxe, uint64_t case_key)
{
    const int n = t->n, me = t->me;
    const size_t es = sizeof(T), nn = (size_t)n * n;
    uint64_t rng = case_key;
    size_t ne = dt_rand(&rng) % 6 == 0 ? 0 : dt_log_uniform(&rng, maxe);
    size_t doff = (dt_rand(&rng) % (MAX_OFF / es)) * es,
           soff = (dt_rand(&rng) % (MAX_OFF / es)) * es;
    int rootbase = (int)(dt_rand(&rng) % (uint64_t)n);
    uint64_t k0 = dt_rand(&rng);
    layout_t h, dl;
    h.c = (size_t *)calloc(3 * ROUNDS * nn, sizeof(size_t));
    DT_CHECK(h.c != NULL, "calloc");
    h.soff = h.c + ROUNDS * nn;
    h.doff = h.soff + ROUNDS * nn;
    make_layout(&h, n, maxe, &rng);
    if (kind == K_COLLECT) /* collect's counts: c[p][0], 0..maxe */
        for (int r = 0; r < ROUNDS; r++)
            for (int p = 0; p < n; p++)
                h.c[r * nn + (size_t)p * n] =
                    dt_rand(&rng) % 5 == 0 ? 0 : dt_log_uniform(&rng, maxe);
    CK(cudaMalloc(&dl.c, 3 * ROUNDS * nn * sizeof(size_t)));
    dl.soff = dl.c + ROUNDS * nn;
    dl.doff = dl.soff + ROUNDS * nn;
    CK(cudaMemcpy(dl.c, h.c, 3 * ROUNDS * nn * sizeof(size_t), cudaMemcpyHostToDevice));

    /* the dest image after all rounds: each round's blocks over the earlier
     * rounds' (collect and alltoallv place them differently every round) */
    size_t hi = 0;
    for (int r = 0; r < ROUNDS; r++) {
        const size_t *c = h.c + r * nn, *dof = h.doff + r * nn;
        size_t tot = 0;
        for (int p = 0; p < n; p++) {
            size_t end = kind == K_ALLTOALL || kind == K_FCOLLECT ? (size_t)(p + 1) * ne
                         : kind == K_BROADCAST                    ? ne
                         : kind == K_COLLECT                      ? (tot += c[(size_t)p * n])
                                             : dof[(size_t)p * n + me] + c[(size_t)p * n + me];
            hi = end > hi ? end : hi;
        }
    }
    size_t span = doff + hi * es + GUARD;
    DT_CHECK(span <= BUF && soff + (size_t)n * (maxe + 4) * es <= BUF, "case too large");
    uint8_t *want = (uint8_t *)calloc(span, 1);
    DT_CHECK(want != NULL, "calloc");
    for (int r = 0; r < ROUNDS; r++) {
        const size_t *c = h.c + r * nn, *so = h.soff + r * nn, *dof = h.doff + r * nn;
        size_t off = 0;
        for (int p = 0; p < n; p++) {
            const part_t q =
                part_of(kind, p, me, n, ne, es, root_of(r, rootbase, n), c, so, dof, &off);
            for (size_t b = 0; b < q.len; b++)
                want[doff + q.at + b] = sbyte(k0, p, r, q.from + b);
        }
    }

    poison();
    shmem_team_sync(t->h); /* every member's buffers are poisoned before anyone writes */
    char what[96];
    snprintf(what, sizeof what, "%s of %zu x %zu-byte elements", move_name[kind], ne, es);
    move_arg_t a = {t, form, kind, rootbase, g_dst + doff, g_src + soff, ne, k0, dl};
    launch_check(what, t, form, move_launcher<T>(form), &a);
    check_image(what, t, form, want, span, doff, doff + hi * es);
    g_cases++;
    g_bytes += hi * es;
    free(want);
    free(h.c);
    CK(cudaFree(dl.c));
}

struct reduce_arg_t {
    const team_t *t;
    int form, scatter, inplace;
    char *dest, *src;
    size_t nr;
    uint64_t k0;
};

template <int FORM, typename T, int OP, int SCATTER> static void launch_reduce(void *p)
{
    reduce_arg_t *a = (reduce_arg_t *)p;
    k_reduce<FORM, T, OP, SCATTER><<<1, form_threads[a->form], 0, g_s>>>(
        *a->t->d, (T *)a->dest, (T *)a->src, a->nr, a->inplace, a->k0, g_err);
}

/* One reduction case (op OP on T) on team t. big: above the pull limit.
 * ALL: every form and reduce_scatter are compiled for this (T, OP) (else the
 * _block form of the reduction only: the test compiles in a minute). */
template <typename T, int OP, bool ALL>
static void reduce_case(const team_t *t, int form, int scatter, int inplace, int big,
                        uint64_t case_key, const char *tname)
{
    const int n = t->n, me = t->me;
    const size_t es = sizeof(T);
    uint64_t rng = case_key;
    size_t lim = ((size_t)32 << 10) / es;
    size_t nr = big ? lim + dt_log_uniform(&rng, 2 * lim) : dt_log_uniform(&rng, lim);
    if (dt_rand(&rng) % 8 == 0)
        nr = dt_rand(&rng) % 3; /* 0, 1, 2 */
    size_t doff = (dt_rand(&rng) % (MAX_OFF / es)) * es,
           soff = (dt_rand(&rng) % (MAX_OFF / es)) * es;
    uint64_t k0 = dt_rand(&rng);
    if (inplace)
        soff = doff;
    size_t nsrc = scatter ? (size_t)n * nr : nr;
    DT_CHECK(doff + nr * es + GUARD <= BUF && soff + nsrc * es <= BUF, "case too large");

    /* the dest image: the result, and in place the source's poison-free rest */
    size_t span = doff + (inplace ? nsrc : nr) * es + GUARD;
    uint8_t *want = (uint8_t *)calloc(span, 1);
    DT_CHECK(want != NULL, "calloc");
    for (size_t i = 0; i < nr; i++) {
        T v = rwant<T>(OP, k0, n, ROUNDS - 1, scatter ? (size_t)me * nr + i : i);
        memcpy(want + doff + i * es, &v, es);
    }
    poison();
    shmem_team_sync(t->h);
    char what[128];
    snprintf(what, sizeof what, "%s %s_reduce%s of %zu elements%s%s", tname, op_name[OP],
             scatter ? "_scatter" : "", nr, inplace ? ", in place" : "",
             nr * es > ((size_t)32 << 10) ? " (segments)" : "");
    reduce_arg_t a = {t,  form, scatter, inplace, g_dst + doff, (inplace ? g_dst : g_src) + soff,
                      nr, k0};
    void (*l)(void *) = launch_reduce<2, T, OP, 0>;
    if constexpr (ALL) {
        if (scatter)
            l = form == 0   ? launch_reduce<0, T, OP, 1>
                : form == 1 ? launch_reduce<1, T, OP, 1>
                            : launch_reduce<2, T, OP, 1>;
        else
            l = form == 0   ? launch_reduce<0, T, OP, 0>
                : form == 1 ? launch_reduce<1, T, OP, 0>
                            : launch_reduce<2, T, OP, 0>;
    }
    launch_check(what, t, form, l, &a);
    check_image(what, t, form, want, span, doff, doff + nr * es);
    g_cases++;
    g_bytes += nr * es;
    free(want);
}

/* Cases of one reduction with a random form and variant (ALL: see reduce_case). */
template <typename T, int OP, bool ALL = false>
static void reduce_cases(const team_t *t, int reps, const char *tname)
{
    for (int k = 0; k < reps; k++) {
        uint64_t key = dt_rand(&g_rng);
        int form = ALL ? (int)(key % 4) : 2 + (int)(key % 2);
        int variant = (int)((key >> 8) % (ALL ? 4 : 3));
        /* 0: small, 1: large, 2: in place, 3: reduce_scatter */
        reduce_case<T, OP, ALL>(t, form, variant == 3, variant == 2,
                                variant == 1 || (key >> 16) % 3 == 0, key, tname);
    }
}

static void run_team(const team_t *t, int quick)
{
    double t0 = dt_now();
    unsigned long long c0 = g_cases;
    int reps = quick ? 1 : 3;
    /* data movement: every kind, every form, as char (mem), int (named), double (template) */
    for (int kind = 0; kind < K_NMOVE; kind++)
        for (int form = 0; form < 4; form++)
            for (int k = 0; k < reps; k++) {
                uint64_t key = dt_rand(&g_rng);
                size_t maxb = form == 0 ? (8 << 10) : (32 << 10);
                if ((key >> 32) % 2 == 0)
                    move_case<char>(t, kind, form, maxb, key);
                else if (form >= 2)
                    move_case<int>(t, kind, form, maxb / 4, key);
                else
                    move_case<double>(t, kind, form, maxb / 8, key);
            }
    /* reductions: the OpenSHMEM table's kinds of types, each op */
    reduce_cases<int, O_SUM, true>(t, 4 * reps, "int");
    reduce_cases<float, O_SUM, true>(t, 4 * reps, "float");
    reduce_cases<unsigned, O_AND>(t, reps, "uint");
    reduce_cases<unsigned, O_OR>(t, reps, "uint");
    reduce_cases<uint64_t, O_XOR>(t, reps, "uint64");
    reduce_cases<unsigned char, O_XOR>(t, reps, "uchar");
    reduce_cases<int, O_MAX>(t, reps, "int");
    reduce_cases<long long, O_MIN>(t, reps, "longlong");
    reduce_cases<long long, O_PROD>(t, reps, "longlong");
    reduce_cases<short, O_SUM>(t, reps, "short");
    reduce_cases<signed char, O_PROD>(t, reps, "schar");
    reduce_cases<unsigned short, O_MAX>(t, reps, "ushort");
    reduce_cases<uint64_t, O_SUM>(t, reps, "uint64");
    reduce_cases<float, O_MIN>(t, reps, "float");
    reduce_cases<double, O_MAX>(t, reps, "double");
    reduce_cases<double, O_PROD>(t, reps, "double");
    printf("PE %d: PASS device collectives on %s (team PE %d of %d): %llu cases, %.2f s\n",
           shmem_my_pe(), t->team, t->me, t->n, g_cases - c0, dt_now() - t0);
    fflush(stdout);
}

/* The cases on the team of start/stride/size (its device handle), on its
 * members; the others wait in the world barrier after. Every PE continues
 * with the same random sequence. */
static void on_team(const char *name, int start, int stride, int size, int quick)
{
    int me = shmem_my_pe();
    shmem_team_t team = SHMEM_TEAM_INVALID;
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, start, stride, size, NULL, 0, &team);
    DT_CHECK(rc == 0, "shmem_team_split_strided(%d, %d, %d) returned %d", start, stride, size, rc);
    uint64_t saved = g_rng;
    if (team != SHMEM_TEAM_INVALID) {
        shmemx_dev_t td;
        memset(&td, 0, sizeof td);
        DT_CHECK(shmemx_team_dev_get(team, &td) == 0, "shmemx_team_dev_get");
        DT_CHECK(td.n_pes == size && td.my_pe == (me - start) / stride,
                 "team handle: my_pe %d n_pes %d", td.my_pe, td.n_pes);
        team_t t = {&td, team, name, td.n_pes, td.my_pe};
        run_team(&t, quick);
        shmem_team_destroy(team);
    }
    g_rng = saved;
}

/* ---- refuse mode ---- */

__global__ void k_refuse(DEVH d, char *dest, const char *src)
{
    (void)shmemx_dev_alltoallmem_block(d, dest, src, 8);
}

static int run_refuse(const shmemx_dev_t &d)
{
    int me = shmem_my_pe();
    if (dt_waits_allowed(d)) {
        printf("PE %d: SKIP refuse: device-side waits are allowed here, nothing to refuse\n", me);
        fflush(stdout);
        shmem_finalize();
        return 77;
    }
    shmem_barrier_all();
    k_refuse<<<2, 64, 0, g_s>>>(d, g_dst, g_src);
    CK_LAUNCH();
    cudaError_t e = cudaStreamSynchronize(g_s);
    if (e == cudaSuccess)
        DT_FAIL("a kernel calling shmemx_dev_alltoallmem_block completed although device waits "
                "are refused");
    printf("PE %d: REFUSED: cudaStreamSynchronize returned %s (%s)\n", me, cudaGetErrorName(e),
           cudaGetErrorString(e));
    fflush(stdout);
    shmem_barrier_all();
    return 3;
}

int main(int argc, char **argv)
{
    int refuse = argc > 1 && strcmp(argv[1], "refuse") == 0;
    shmemx_dev_t d = dt_init();
    g_s = dt_stream();
    int me = shmem_my_pe(), np = shmem_n_pes();
    g_dst = (char *)shmem_malloc(BUF);
    g_src = (char *)shmem_malloc(BUF);
    DT_CHECK(g_dst && g_src, "shmem_malloc(%zu) x 2", (size_t)BUF);
    CK(cudaMalloc(&g_err, sizeof(err_t)));
    if (refuse)
        return run_refuse(d);
    double t0 = dt_now();
    if (!dt_waits_allowed(d)) {
        printf("PE %d: SKIP device collectives: %s\n", me, shmemx_dev_why());
        fflush(stdout);
        shmem_finalize();
        return 0;
    }
    const char *q = getenv("USHMEM_TEST_QUICK");
    int quick = q && *q == '1';
    g_rng = dt_seed() ^ 0xc011ec7ULL;

    team_t world = {&d, SHMEM_TEAM_WORLD, "the world", np, me};
    run_team(&world, quick);
    shmem_barrier_all();
    /* PEs 1..np-1 (a team that does not start at 0), then the even PEs (stride 2) */
    if (np > 1)
        on_team("team 1..N-1", 1, 1, np - 1, quick);
    shmem_barrier_all();
    on_team("the even PEs", 0, 2, (np + 1) / 2, quick);
    shmem_barrier_all();

    CK(cudaFree(g_err));
    shmem_free(g_src);
    shmem_free(g_dst);
    CK(cudaStreamDestroy(g_s));
    printf("PE %d: PASS dev_coll (%llu cases, %.1f MiB checked, %.2f s)\n", me, g_cases,
           (double)g_bytes / 1048576.0, dt_now() - t0);
    fflush(stdout);
    shmem_finalize();
    return 0;
}
