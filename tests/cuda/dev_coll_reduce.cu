/* dev_coll's reductions (see dev_coll.cu): and, or, xor, max, min, sum, prod
 * and reduce_scatter against the host model, in their own translation unit so
 * that nvcc compiles them beside the data movement. */
#include "dev_coll.cuh"

enum { O_AND, O_OR, O_XOR, O_MAX, O_MIN, O_SUM, O_PROD };
static const char *const op_name[] = {"and", "or", "xor", "max", "min", "sum", "prod"};

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

/* ---- kernels ---- */

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

/* The reductions of run_team: the OpenSHMEM table's kinds of types, each op,
 * in this order (the cases follow g_rng). */
void dev_coll_reductions(const team_t *t, int reps)
{
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
}
