/* Contract between the embedded kernels (kernels.cu, built by nvcc) and the
 * C code that launches them (cuda.c, stream.c): names and operation codes. */
#ifndef USHMEM_CUDA_KERNELS_ABI_H
#define USHMEM_CUDA_KERNELS_ABI_H

/* AMO codes: the values of ushmemi_amo_op_t (core/state.h). */
#define USHMEMI_KAMO_FETCH 0
#define USHMEMI_KAMO_SET   1
#define USHMEMI_KAMO_SWAP  2
#define USHMEMI_KAMO_CSWAP 3
#define USHMEMI_KAMO_ADD   4
#define USHMEMI_KAMO_AND   5
#define USHMEMI_KAMO_OR    6
#define USHMEMI_KAMO_XOR   7

/* Reductions read every member's source directly (peer heaps are mapped into
 * this context) and write this PE's result: one launch, no staging. */
#define USHMEMI_KRED_MAX_PES 128
typedef struct {
    const void *src[USHMEMI_KRED_MAX_PES];
    void *dest[USHMEMI_KRED_MAX_PES]; /* every result goes to each of these (the leader's
                                         launch writes all members' dests; else one) */
    unsigned long long nelems;
    int npes, ndest;
} ushmemi_kred_args_t;

/* Collective kinds of the two collective kernels below. */
#define USHMEMI_KCOLL_ALLTOALL  0
#define USHMEMI_KCOLL_FCOLLECT  1
#define USHMEMI_KCOLL_BROADCAST 2
#define USHMEMI_KCOLL_REDUCE    3
#define USHMEMI_KCOLL_BARRIER   4 /* ushmemi_k_coll_sync: the first round only */

/* ushmemi_k_coll_copy: every copy of a collective in one launch, by one PE
 * for the whole team (the leader). blockIdx.y is the pair (i, j): member i's
 * data to member j (broadcast: blockIdx.y is j, the data is src[root]);
 * blockIdx.x splits each copy. src/dst are the members' buffers as mapped in
 * the leader's context. */
typedef struct {
    const void *src[USHMEMI_KRED_MAX_PES];
    void *dst[USHMEMI_KRED_MAX_PES];
    unsigned long long nbytes; /* per PE block */
    int npes, kind, root;
} ushmemi_kcopy_args_t;

/* ushmemi_k_coll_sync and ushmemi_k_redsync_<type>_<op>: one block per PE
 * that synchronizes on the device, for small collectives where device waits
 * are safe. Two rounds on the stream-sync counters (recv[] at the start of
 * every device heap, the same counts the stream barriers use): round r stores
 * sent[r][j] into member j's recv slot for this PE (release) and waits until
 * this PE's slot for member j reaches expect[r][j] (acquire); 0: no store / no
 * wait. Between the rounds this PE pushes its part into the members' buffers
 * (peer[j]: member j's dest, or for reductions member j's source, as mapped
 * here) or, for reductions, combines every member's source into its dest. */
#define USHMEMI_KCOLL_MAX_PES 32
typedef struct {
    unsigned long long flag_out[USHMEMI_KCOLL_MAX_PES]; /* member j's recv slot for this PE */
    unsigned long long sent[2][USHMEMI_KCOLL_MAX_PES];
    unsigned long long expect[2][USHMEMI_KCOLL_MAX_PES];
    void *peer[USHMEMI_KCOLL_MAX_PES];
    int wpe[USHMEMI_KCOLL_MAX_PES]; /* member j's world PE: its slot here is recv[wpe[j]] */
    const void *src;
    void *dest;
    unsigned long long nbytes;     /* per PE block (reductions: elements) */
    unsigned long long heap_base;  /* this PE's device heap (recv[] at its start) */
    unsigned long long abort_flag; /* device address of the job-ending word */
    unsigned long long timeout_ns; /* USHMEM_DEVICE_WAIT_TIMEOUT; 0: none */
    int npes, me, world_pe, kind, root, staged;
} ushmemi_kcoll_args_t;

/* Reduction kernels are named ushmemi_k_red_<type>_<op>; these lists give
 * the names (X(type suffix, C type)) and must match ushmemi_redop_t order. */
#define USHMEMI_KRED_TYPES(X)                                                                      \
    X(i32, int)                                                                                    \
    X(i64, long long)                                                                              \
    X(u32, unsigned int)                                                                           \
    X(u64, unsigned long long)                                                                     \
    X(f32, float)                                                                                  \
    X(f64, double)
#define USHMEMI_KRED_OPS(X) X(and) X(or) X(xor) X(max) X(min) X(sum) X(prod)

/* A stream operation on a PE this process does not map: the request words
 * of the reverse-offload ring (shmemx_device_types.h, USHMEMI_REQ_*). */
typedef struct {
    unsigned long long w[7];
} ushmemi_kreq_t;

#endif
