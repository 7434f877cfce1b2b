/* test_any / wait_until_any and their _vector forms are fair: OpenSHMEM 1.5
 * asks that repeated calls eventually return every index that satisfies the
 * condition. With several indices satisfied (and staying so), repeated calls
 * must return each of them, never an excluded or unsatisfied one; a scan that
 * always starts at index 0 returns the lowest forever (issue 22, item 17).
 * Then the spec's shmem_test_any example loop without the status array: every
 * PE sets flags[me] on every PE and polls until it has seen every index
 * (it hung at 2 and 4 PEs before); bounded here, so it fails instead.
 * USHMEM_TEST_NPES: 1 2 4 */
#include <time.h>

#include "test_util.h"

#define NV    8
#define CALLS (4 * NV)

static int iv[NV];       /* symmetric (global) */
static long long lv[NV]; /* symmetric (global) */
static const int sat[NV] = {0, 1, 0, 1, 1, 0, 1, 0};

enum { F_TEST, F_WAIT, F_TEST_VEC, F_WAIT_VEC, F_LL_TEST, F_GENERIC_WAIT, NFORM };
static const char *const form_name[NFORM] = {
    "shmem_int_test_any",        "shmem_int_wait_until_any",
    "shmem_int_test_any_vector", "shmem_int_wait_until_any_vector",
    "shmem_longlong_test_any",   "shmem_wait_until_any"};

static size_t call_form(int form, const int *status)
{
    int cmpv[NV];
    for (int i = 0; i < NV; i++)
        cmpv[i] = 1;
    switch (form) {
    case F_TEST: return shmem_int_test_any(iv, NV, status, SHMEM_CMP_EQ, 1);
    case F_WAIT: return shmem_int_wait_until_any(iv, NV, status, SHMEM_CMP_EQ, 1);
    case F_TEST_VEC: return shmem_int_test_any_vector(iv, NV, status, SHMEM_CMP_EQ, cmpv);
    case F_WAIT_VEC: return shmem_int_wait_until_any_vector(iv, NV, status, SHMEM_CMP_EQ, cmpv);
    case F_LL_TEST: return shmem_longlong_test_any(lv, NV, status, SHMEM_CMP_NE, 0);
    default: return shmem_wait_until_any(iv, NV, status, SHMEM_CMP_GT, 0);
    }
}

/* Every included satisfied index comes back within CALLS calls; nothing else ever. */
static void check_form(int form, const int *status)
{
    int seen[NV] = {0}, want = 0, got = 0;
    for (int i = 0; i < NV; i++)
        want += sat[i] && (!status || !status[i]);
    for (int c = 0; c < CALLS && got < want; c++) {
        size_t i = call_form(form, status);
        CHECK(i < NV && sat[i] && (!status || !status[i]), "%s returned %zu", form_name[form], i);
        got += !seen[i];
        seen[i] = 1;
    }
    CHECK(got == want, "%s: %d calls returned only %d of the %d satisfied indices%s",
          form_name[form], CALLS, got, want, status ? " (with status)" : "");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    for (int i = 0; i < NV; i++) {
        iv[i] = sat[i];
        lv[i] = sat[i] ? -5 - i : 0;
    }
    int status[NV] = {0};
    status[3] = 1; /* excluded, although satisfied */
    for (int form = 0; form < NFORM; form++) {
        check_form(form, NULL);
        check_form(form, status);
    }

    /* The spec example's loop, relying on fairness instead of the status array. */
    int *flags = shmem_calloc((size_t)npes, sizeof(int));
    int *seen = calloc((size_t)npes, sizeof(int));
    shmem_barrier_all();
    for (int pe = 0; pe < npes; pe++)
        shmem_atomic_set(&flags[me], 1, pe);
    int ncompleted = 0;
    double t0 = now_s();
    while (ncompleted < npes) {
        size_t idx = shmem_test_any(flags, (size_t)npes, NULL, SHMEM_CMP_EQ, 1);
        if (idx != SIZE_MAX) {
            CHECK(idx < (size_t)npes, "test_any returned %zu", idx);
            ncompleted += !seen[idx];
            seen[idx] = 1;
        }
        CHECK(now_s() - t0 < 10, "after 10 s test_any has returned only %d of %d indices",
              ncompleted, npes);
    }
    shmem_barrier_all();
    free(seen);
    shmem_free(flags);
    shmem_finalize();
    return 0;
}
