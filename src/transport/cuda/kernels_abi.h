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
    void *dest;
    unsigned long long nelems;
    int npes;
} ushmemi_kred_args_t;

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

#endif
