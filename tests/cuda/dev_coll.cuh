/* What the two halves of dev_coll share (dev_coll.cu: the data movement, the
 * teams and main; dev_coll_reduce.cu: the reductions): the case sizes, the
 * forms, the kernels' error report and the host's buffers and checks. Two
 * translation units only so that nvcc builds them in parallel; see
 * dev_coll.cu for what the test does. */
#ifndef USHMEM_DEV_COLL_CUH
#define USHMEM_DEV_COLL_CUH

#include <type_traits>

#include "dev_test.cuh"

#define ROUNDS  3
#define BUF     ((size_t)4 << 20) /* bytes of each symmetric buffer */
#define GUARD   64                /* poison checked past the data */
#define MAX_OFF 256               /* random byte offsets below this */

/* thread, warp, block of 256, block of 100 (the last two: the _block forms) */
static const unsigned form_threads[] = {1, 32, 256, 100};
static const char *const form_name[] = {"thread", "warp", "block", "block100"};

#define DEVH const SHMEMX_GRID_CONSTANT shmemx_dev_t

/* The model of every PE's data (host and kernels): team PE pe's in round r of
 * a case keyed k0. */
__host__ __device__ static inline uint64_t tkey(uint64_t k0, int pe, int r)
{
    return dt_mix(k0 ^ (uint64_t)(pe + 1) * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(r + 1) << 48);
}

/* ---- kernels ---- */

struct err_t {
    unsigned long long bad, round, index, got, want;
};

__device__ static inline void report(err_t *e, int r, size_t i, unsigned long long got,
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

/* ---- host side ---- */

typedef struct {
    const shmemx_dev_t *d; /* the handle (world or team) */
    shmem_team_t h;        /* the same team on the host: its syncs */
    const char *team;
    int n, me; /* team size and this PE's team number */
} team_t;

/* the case sequence, the stream, the kernels' report, the buffers, the counts (dev_coll.cu) */
extern uint64_t g_rng;
extern cudaStream_t g_s;
extern err_t *g_err;
extern char *g_dst, *g_src; /* symmetric, BUF bytes each */
extern unsigned long long g_cases, g_bytes;

/* The host's checks (dev_coll.cu): a launch and the kernel's error report,
 * the dest buffer against its wanted image, and the poison before a case. */
void launch_check(const char *what, const team_t *t, int form, void (*launch)(void *), void *arg);
void check_image(const char *what, const team_t *t, int form, const uint8_t *want, size_t span,
                 size_t lo, size_t hi);
void poison(void);

/* run_team's reduction cases (dev_coll_reduce.cu) */
void dev_coll_reductions(const team_t *t, int reps);

#endif
