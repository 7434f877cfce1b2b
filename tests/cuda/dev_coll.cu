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
 *    USHMEMI_DEV_REDUCE_PULL_MAX) and reduce_scatter: in dev_coll_reduce.cu,
 *    its own translation unit (nvcc compiles the two halves in parallel;
 *    dev_coll.cuh: what they share).
 *  - on the world handle, on the team of PEs 1..N-1 and on the even PEs
 *    (shmemx_team_dev_get).
 *
 * The collectives wait on the device: where device waits are off the cases are
 * skipped (one line says why) and `dev_coll refuse` (dev_refuse.sh) checks the
 * refusal instead. USHMEM_TEST_QUICK=1: fewer cases. */
#include "dev_coll.cuh"

enum { K_ALLTOALL, K_BROADCAST, K_FCOLLECT, K_COLLECT, K_ALLTOALLV, K_NMOVE };
static const char *const move_name[] = {"alltoall", "broadcast", "fcollect", "collect",
                                        "alltoallv"};

/* Byte b of pe's source in round r (never 0, the poison; tkey: the model). */
__host__ __device__ static inline uint8_t sbyte(uint64_t k0, int pe, int r, size_t b)
{
    return dt_gen(tkey(k0, pe, r), b);
}

/* alltoallv and collect layouts, per round: c[p][q] elements from p to q at
 * soff[p][q] in p's source and doff[p][q] in q's dest (collect: c[p][0]). */
struct layout_t {
    size_t *c, *soff, *doff; /* [ROUNDS][n][n], host or device */
};

/* ---- kernels ---- */

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

/* ---- host side ---- */

uint64_t g_rng;
cudaStream_t g_s;
err_t *g_err;
char *g_dst, *g_src; /* symmetric, BUF bytes each */
unsigned long long g_cases, g_bytes;

void launch_check(const char *what, const team_t *t, int form, void (*launch)(void *), void *arg)
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
void check_image(const char *what, const team_t *t, int form, const uint8_t *want, size_t span,
                 size_t lo, size_t hi)
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

void poison(void)
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
    dev_coll_reductions(t, reps); /* dev_coll_reduce.cu */
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
