/* Device vector and multi-word waits (shmemx_device_wait.cuh).
 *
 *  A. Tests (no peer, no spinning; run everywhere): test_all, test_any,
 *     test_some and their _vector forms on short, int (the type-named forms),
 *     long long and uint64_t words holding random values, with random status
 *     masks and comparisons, against a host model; test_any's fair start (the
 *     device sync area's any_next word) is modelled exactly, so repeated calls
 *     must return the satisfied indices round-robin.
 *  B. Waits (where device waits are allowed): each PE's CTA 0 waits on words
 *     that every PE's CTA 1 sets (shmemx_dev_p) at random moments:
 *     wait_until_all, _any until every included index came back once (each
 *     then left out through status), _some likewise, and their _vector forms,
 *     for 2-, 4- and 8-byte words; a last call with nothing left returns
 *     SIZE_MAX (any) or 0 (some).
 *
 * `dev_wait timeout` (dev_wait_timeout.sh, USHMEM_DEVICE_WAIT_TIMEOUT=1): a
 * wait_until_any on words nobody sets must trap after the timeout with one
 * line naming the PE and the call; the program reports and exits 3. */
#include <type_traits>

#include "dev_test.cuh"

#define DEVH      const SHMEMX_GRID_CONSTANT shmemx_dev_t
#define NTEST     37 /* words of the test cases (not a power of two) */
#define REPS      12 /* test_any calls in a row */
#define SIZE_MAX_ ((size_t) ~(size_t)0)

static const char *const cmp_name[] = {"EQ", "NE", "GT", "GE", "LT", "LE"};

template <typename T> static bool cmp_host(T a, int cmp, T b)
{
    switch (cmp) {
    case SHMEM_CMP_EQ: return a == b;
    case SHMEM_CMP_NE: return a != b;
    case SHMEM_CMP_GT: return a > b;
    case SHMEM_CMP_GE: return a >= b;
    case SHMEM_CMP_LT: return a < b;
    default: return a <= b;
    }
}

/* ---- A: tests ---- */

/* out: [0] test_all, [1] test_all_vector, [2, 2+REPS) test_any,
 * [2+REPS, 2+2*REPS) test_any_vector, then test_some's count and indices,
 * then test_some_vector's count and indices. */
template <typename T>
__global__ void k_tests(DEVH d, T *w, size_t n, const int *status, int cmp, T value,
                        const T *values, size_t *out)
{
    size_t *o = out;
    if constexpr (std::is_same<T, int>::value) {
        *o++ = (size_t)shmemx_dev_int_test_all(d, w, n, status, cmp, value);
        *o++ = (size_t)shmemx_dev_int_test_all_vector(d, w, n, status, cmp, values);
        for (int k = 0; k < REPS; k++)
            *o++ = shmemx_dev_int_test_any(d, w, n, status, cmp, value);
        for (int k = 0; k < REPS; k++)
            *o++ = shmemx_dev_int_test_any_vector(d, w, n, status, cmp, values);
        size_t c = shmemx_dev_int_test_some(d, w, n, o + 1, status, cmp, value);
        *o = c;
        o += 1 + n;
        *o = shmemx_dev_int_test_some_vector(d, w, n, o + 1, status, cmp, values);
    } else {
        *o++ = (size_t)shmemx_dev_test_all(d, w, n, status, cmp, value);
        *o++ = (size_t)shmemx_dev_test_all_vector(d, w, n, status, cmp, values);
        for (int k = 0; k < REPS; k++)
            *o++ = shmemx_dev_test_any(d, w, n, status, cmp, value);
        for (int k = 0; k < REPS; k++)
            *o++ = shmemx_dev_test_any_vector(d, w, n, status, cmp, values);
        size_t c = shmemx_dev_test_some(d, w, n, o + 1, status, cmp, value);
        *o = c;
        o += 1 + n;
        *o = shmemx_dev_test_some_vector(d, w, n, o + 1, status, cmp, values);
    }
}

template <typename T> static T rnd_val(uint64_t *st)
{
    /* few distinct values, so that EQ and NE both happen */
    return (T)(dt_rand(st) % 7) - (std::is_signed<T>::value ? (T)3 : (T)0);
}

/* The device's any_next word (where the next test_any scan starts). */
static size_t read_any_next(const shmemx_dev_t &d)
{
    size_t v = 0;
    CK(cudaMemcpy(&v, (const void *)(uintptr_t)(d.sync + SHMEMX_DEV_ANY_OFF), sizeof v,
                  cudaMemcpyDeviceToHost));
    return v;
}

template <typename T>
static void test_case(const shmemx_dev_t &d, cudaStream_t s, T *w, int *st_d, T *vals_d,
                      size_t *out_d, uint64_t *rng, const char *tname)
{
    const size_t n = 1 + dt_rand(rng) % NTEST;
    T hw[NTEST], hv[NTEST];
    int hs[NTEST];
    int use_status = dt_rand(rng) % 4 != 0;
    for (size_t i = 0; i < n; i++) {
        hw[i] = rnd_val<T>(rng);
        hv[i] = rnd_val<T>(rng);
        hs[i] = use_status && dt_rand(rng) % 3 == 0 ? 1 + (int)(dt_rand(rng) % 5) : 0;
    }
    int cmp = (int)(dt_rand(rng) % 6);
    T value = rnd_val<T>(rng);
    CK(cudaMemcpy(w, hw, n * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(vals_d, hv, n * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(st_d, hs, n * sizeof(int), cudaMemcpyHostToDevice));
    size_t next = read_any_next(d);
    k_tests<T><<<1, 1, 0, s>>>(d, w, n, use_status ? st_d : NULL, cmp, value, vals_d, out_d);
    CK_LAUNCH();
    CK(cudaStreamSynchronize(s));
    size_t out[2 + 2 * REPS + 2 * (NTEST + 1)];
    CK(cudaMemcpy(out, out_d, sizeof out, cudaMemcpyDeviceToHost));

    /* the model */
    bool sat[NTEST], satv[NTEST];
    int all = 1, allv = 1;
    for (size_t i = 0; i < n; i++) {
        bool in = hs[i] == 0;
        sat[i] = in && cmp_host(hw[i], cmp, value);
        satv[i] = in && cmp_host(hw[i], cmp, hv[i]);
        all &= !in || sat[i];
        allv &= !in || satv[i];
    }
    const char *c = cmp_name[cmp];
    DT_CHECK(out[0] == (size_t)all, "%s test_all (%zu words, %s): %zu, want %d", tname, n, c,
             out[0], all);
    DT_CHECK(out[1] == (size_t)allv, "%s test_all_vector (%zu words, %s): %zu, want %d", tname, n,
             c, out[1], allv);
    for (int v = 0; v < 2; v++) {
        const bool *sa = v ? satv : sat;
        for (int k = 0; k < REPS; k++) {
            size_t want = SIZE_MAX_;
            for (size_t j = 0, i = next % n; j < n; j++, i = i + 1 == n ? 0 : i + 1)
                if (sa[i]) {
                    want = i;
                    break;
                }
            if (want != SIZE_MAX_)
                next = want + 1;
            size_t got = out[2 + v * REPS + k];
            DT_CHECK(got == want,
                     "%s test_any%s (%zu words, %s), call %d of a row: %zu, want %zu (the scan "
                     "starts past the index returned last)",
                     tname, v ? "_vector" : "", n, c, k, got, want);
        }
    }
    for (int v = 0; v < 2; v++) {
        const bool *sa = v ? satv : sat;
        const size_t *o = out + 2 + 2 * REPS + (size_t)v * (n + 1);
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (sa[i]) {
                DT_CHECK(k < o[0] && o[1 + k] == i, "%s test_some%s (%zu words, %s): index %zu %s",
                         tname, v ? "_vector" : "", n, c, i,
                         k < o[0] ? "not next in indices[]" : "missing");
                k++;
            }
        DT_CHECK(o[0] == k, "%s test_some%s (%zu words, %s): %zu, want %zu", tname,
                 v ? "_vector" : "", n, c, o[0], k);
    }
}

static void run_tests(const shmemx_dev_t &d, cudaStream_t s, int quick)
{
    int me = shmem_my_pe();
    double t0 = dt_now();
    void *w = shmem_malloc(NTEST * 8);
    DT_CHECK(w != NULL, "shmem_malloc");
    int *st_d;
    void *vals_d;
    size_t *out_d;
    CK(cudaMalloc(&st_d, NTEST * sizeof(int)));
    CK(cudaMalloc(&vals_d, NTEST * 8));
    CK(cudaMalloc(&out_d, (2 + 2 * REPS + 2 * (NTEST + 1)) * sizeof(size_t)));
    uint64_t rng = dt_seed() ^ 0x7e57ULL ^ (uint64_t)me << 40;
    int cases = quick ? 50 : 400;
    for (int k = 0; k < cases; k++) {
        switch (k % 4) {
        case 0:
            test_case<short>(d, s, (short *)w, st_d, (short *)vals_d, out_d, &rng, "short");
            break;
        case 1: test_case<int>(d, s, (int *)w, st_d, (int *)vals_d, out_d, &rng, "int"); break;
        case 2:
            test_case<long long>(d, s, (long long *)w, st_d, (long long *)vals_d, out_d, &rng,
                                 "longlong");
            break;
        default:
            test_case<uint64_t>(d, s, (uint64_t *)w, st_d, (uint64_t *)vals_d, out_d, &rng,
                                "uint64");
            break;
        }
    }
    CK(cudaFree(st_d));
    CK(cudaFree(vals_d));
    CK(cudaFree(out_d));
    shmem_barrier_all();
    shmem_free(w);
    printf("PE %d: PASS device test_all/any/some (+_vector): %d cases, %.2f s\n", me, cases,
           dt_now() - t0);
    fflush(stdout);
}

/* ---- B: waits ---- */

enum { W_ALL, W_ANY, W_SOME, W_NMODES };
static const char *const mode_name[] = {"wait_until_all", "wait_until_any", "wait_until_some"};

struct werr_t {
    unsigned long long bad, what, index, got;
};

__device__ static void wreport(werr_t *e, unsigned long long what, size_t i, unsigned long long got)
{
    if (atomicAdd(&e->bad, 1ULL) == 0) {
        e->what = what;
        e->index = i;
        e->got = got;
    }
}

/* CTA 1: the words of every PE this PE sets (index i: PE i % n), in a random
 * order with random pauses. CTA 0: the wait of the mode, on this PE's words,
 * for the value round + 1 (GE; the _vector forms: round + 1 or less).
 * status: this PE's mask (changed here); idx: room for nw indices. */
template <typename T>
__global__ void k_waits(DEVH d, T *w, size_t nw, int mode, int vec, int round, int *status,
                        const T *vals, size_t *idx, uint64_t key, werr_t *err)
{
    if (threadIdx.x != 0)
        return;
    const int me = d.my_pe, n = d.n_pes;
    const T want = (T)(round + 1);
    if (blockIdx.x == 1) {
        for (size_t k = 0; k < nw; k++) {
            size_t i = (k * 7 + (size_t)(key % nw)) % nw; /* 7 and nw are coprime (nw % 7 != 0) */
            if ((int)(i % (size_t)n) != me)
                continue;
            for (int t = 0; t < n; t++) {
                __nanosleep((unsigned)(dt_mix(key ^ (i * 131 + (size_t)t)) % 20000));
                shmemx_dev_p(d, w + i, want, t);
            }
            shmemx_dev_quiet(d);
        }
        return;
    }
    size_t included = 0, seen = 0;
    for (size_t i = 0; i < nw; i++)
        included += status[i] == 0;
    if (mode == W_ALL) {
        if (vec)
            shmemx_dev_wait_until_all_vector(d, w, nw, status, SHMEMX_DEV_CMP_GE, vals);
        else if constexpr (std::is_same<T, int>::value)
            shmemx_dev_int_wait_until_all(d, w, nw, status, SHMEMX_DEV_CMP_GE, want);
        else
            shmemx_dev_wait_until_all(d, w, nw, status, SHMEMX_DEV_CMP_GE, want);
        for (size_t i = 0; i < nw; i++) {
            T v = *(volatile T *)(w + i);
            if (status[i] == 0 && v < (vec ? vals[i] : want))
                wreport(err, 1, i, (unsigned long long)v);
        }
        return;
    }
    while (seen < included) {
        size_t got = 0;
        if (mode == W_ANY) {
            size_t i =
                vec ? shmemx_dev_wait_until_any_vector(d, w, nw, status, SHMEMX_DEV_CMP_GE, vals)
                    : shmemx_dev_wait_until_any(d, w, nw, status, SHMEMX_DEV_CMP_GE, want);
            idx[0] = i;
            got = 1;
        } else {
            got = vec ? shmemx_dev_wait_until_some_vector(d, w, nw, idx, status, SHMEMX_DEV_CMP_GE,
                                                          vals)
                      : shmemx_dev_wait_until_some(d, w, nw, idx, status, SHMEMX_DEV_CMP_GE, want);
            if (got == 0) {
                wreport(err, 2, 0, 0);
                return;
            }
        }
        for (size_t k = 0; k < got; k++) {
            size_t i = idx[k];
            if (i >= nw || status[i] != 0) {
                wreport(err, 3, i, i < nw ? (unsigned long long)status[i] : ~0ULL);
                return;
            }
            T v = *(volatile T *)(w + i);
            if (v < (vec ? vals[i] : want))
                wreport(err, 4, i, (unsigned long long)v);
            status[i] = 1; /* left out from now on */
            seen++;
        }
    }
    /* nothing left */
    size_t last = mode == W_ANY
                      ? shmemx_dev_wait_until_any(d, w, nw, status, SHMEMX_DEV_CMP_GE, want)
                      : shmemx_dev_wait_until_some(d, w, nw, idx, status, SHMEMX_DEV_CMP_GE, want);
    if (last != (mode == W_ANY ? SIZE_MAX_ : 0))
        wreport(err, 5, 0, (unsigned long long)last);
}

static const char *const werr_what[] = {
    "",
    "an included word is below the value after wait_until_all returned",
    "wait_until_some returned 0 with indices still included",
    "a returned index is out of range or was left out",
    "a returned index's word does not satisfy the condition",
    "with every index left out, the wait did not return SIZE_MAX (any) / 0 (some)",
};

template <typename T>
static void wait_cases(const shmemx_dev_t &d, cudaStream_t s, int rounds, const char *tname)
{
    int me = shmem_my_pe(), np = shmem_n_pes();
    size_t nw = (size_t)np * 5 + 3; /* not a multiple of 7 for np <= 128 */
    if (nw % 7 == 0)
        nw++;
    T *w = (T *)shmem_calloc(nw, sizeof(T));
    DT_CHECK(w != NULL, "shmem_calloc");
    int *status;
    T *vals;
    size_t *idx;
    werr_t *err;
    CK(cudaMalloc(&status, nw * sizeof(int)));
    CK(cudaMalloc(&vals, nw * sizeof(T)));
    CK(cudaMalloc(&idx, nw * sizeof(size_t)));
    CK(cudaMalloc(&err, sizeof(werr_t)));
    int *hs = (int *)malloc(nw * sizeof(int));
    T *hv = (T *)malloc(nw * sizeof(T));
    DT_CHECK(hs && hv, "malloc");
    uint64_t rng = dt_seed() ^ 0x3a17ULL ^ (uint64_t)me << 40;
    shmem_barrier_all(); /* the words are 0 everywhere */
    int r = 0;
    for (int mode = 0; mode < W_NMODES; mode++)
        for (int vec = 0; vec < 2; vec++)
            for (int k = 0; k < rounds; k++, r++) {
                for (size_t i = 0; i < nw; i++) {
                    hs[i] = dt_rand(&rng) % 4 == 0 ? 1 : 0;
                    hv[i] = (T)(r + 1 - (int)(dt_rand(&rng) % 2)); /* r + 1 or r: all reached */
                }
                CK(cudaMemcpy(status, hs, nw * sizeof(int), cudaMemcpyHostToDevice));
                CK(cudaMemcpy(vals, hv, nw * sizeof(T), cudaMemcpyHostToDevice));
                CK(cudaMemset(err, 0, sizeof(werr_t)));
                shmem_barrier_all(); /* everyone's masks are in place */
                k_waits<T><<<2, 32, 0, s>>>(d, w, nw, mode, vec, r, status, vals, idx,
                                            dt_seed() ^ (uint64_t)r * 0x9e37ULL, err);
                CK_LAUNCH();
                CK(cudaStreamSynchronize(s));
                werr_t e;
                CK(cudaMemcpy(&e, err, sizeof e, cudaMemcpyDeviceToHost));
                DT_CHECK(e.bad == 0, "%s %s%s, round %d (%zu words): %s (index %llu, value %llu)",
                         tname, mode_name[mode], vec ? "_vector" : "", r, nw,
                         werr_what[e.what < 6 ? e.what : 0], e.index, e.got);
            }
    shmem_barrier_all();
    printf("PE %d: PASS device %s waits (all/any/some, + _vector): %d rounds of %zu words\n", me,
           tname, r, nw);
    fflush(stdout);
    free(hs);
    free(hv);
    CK(cudaFree(status));
    CK(cudaFree(vals));
    CK(cudaFree(idx));
    CK(cudaFree(err));
    shmem_free(w);
}

/* ---- timeout mode ---- */

__global__ void k_timeout(DEVH d, uint64_t *w)
{
    (void)shmemx_dev_wait_until_any(d, w, 4, (const int *)0, SHMEMX_DEV_CMP_NE, (uint64_t)0);
}

static int run_timeout(const shmemx_dev_t &d, cudaStream_t s)
{
    int me = shmem_my_pe();
    if (!dt_waits_allowed(d)) {
        printf("PE %d: SKIP timeout: device waits are off here (%s)\n", me, shmemx_dev_why());
        fflush(stdout);
        shmem_finalize();
        return 77;
    }
    uint64_t *w = (uint64_t *)shmem_calloc(4, sizeof(uint64_t));
    DT_CHECK(w != NULL, "shmem_calloc");
    shmem_barrier_all();
    double t0 = dt_now();
    k_timeout<<<1, 1, 0, s>>>(d, w);
    CK_LAUNCH();
    cudaError_t e = cudaStreamSynchronize(s);
    if (e == cudaSuccess)
        DT_FAIL("a wait_until_any on words nobody sets returned");
    printf("PE %d: TIMEOUT: cudaStreamSynchronize returned %s after %.1f s\n", me,
           cudaGetErrorName(e), dt_now() - t0);
    fflush(stdout);
    shmem_barrier_all();
    return 3;
}

int main(int argc, char **argv)
{
    int timeout = argc > 1 && strcmp(argv[1], "timeout") == 0;
    shmemx_dev_t d = dt_init();
    cudaStream_t s = dt_stream();
    if (timeout)
        return run_timeout(d, s);
    int me = shmem_my_pe();
    double t0 = dt_now();
    const char *q = getenv("USHMEM_TEST_QUICK");
    int quick = q && *q == '1';
    run_tests(d, s, quick);
    if (dt_waits_allowed(d)) {
        int ts = (d.flags & SHMEMX_DEV_F_TIMESLICED) != 0;
        int rounds = ts ? 1 : quick ? 2 : 6;
        wait_cases<short>(d, s, rounds, "short");
        wait_cases<int>(d, s, rounds, "int");
        wait_cases<unsigned long long>(d, s, rounds, "ulonglong");
    } else {
        printf("PE %d: SKIP device waits (wait_until_all/any/some): %s\n", me, shmemx_dev_why());
    }
    CK(cudaStreamDestroy(s));
    printf("PE %d: PASS dev_wait (%.2f s)\n", me, dt_now() - t0);
    fflush(stdout);
    shmem_finalize();
    return 0;
}
