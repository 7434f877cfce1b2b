// Kernels of the cuda transport, compiled by nvcc at build time into a
// fatbin (sm_90 SASS + PTX) that the library embeds and loads with the driver
// API. Each is tiny: the data path is copies and stream memory operations;
// kernels only do what those cannot (atomics, reductions, small copies).
#include "kernels_abi.h"
#include "shmemx_device.cuh"

// The host API's device AMOs and the device API's are one implementation.
static_assert(USHMEMI_KAMO_FETCH == USHMEMI_DEV_AMO_FETCH &&
                  USHMEMI_KAMO_SET == USHMEMI_DEV_AMO_SET &&
                  USHMEMI_KAMO_SWAP == USHMEMI_DEV_AMO_SWAP &&
                  USHMEMI_KAMO_CSWAP == USHMEMI_DEV_AMO_CSWAP &&
                  USHMEMI_KAMO_ADD == USHMEMI_DEV_AMO_ADD &&
                  USHMEMI_KAMO_AND == USHMEMI_DEV_AMO_AND &&
                  USHMEMI_KAMO_OR == USHMEMI_DEV_AMO_OR && USHMEMI_KAMO_XOR == USHMEMI_DEV_AMO_XOR,
              "AMO codes of kernels_abi.h and shmemx_device.cuh");

// AMOs on device memory, one thread: the device API's relaxed system-scope
// atomics (shmemx_device.cuh), so host-initiated and kernel-initiated AMOs on
// one word are atomic with each other. The fetched value goes to pinned host
// memory that the caller reads after synchronizing.
extern "C" __global__ void ushmemi_k_amo32(unsigned int *p, int op, unsigned int v, unsigned int c,
                                           unsigned long long *out)
{
    unsigned int old = ushmemi_dev_amo32(p, op, v, c);
    ushmemi_dev_fence_sc();
    *out = old;
}

extern "C" __global__ void ushmemi_k_amo64(unsigned long long *p, int op, unsigned long long v,
                                           unsigned long long c, unsigned long long *out)
{
    unsigned long long old = ushmemi_dev_amo64(p, op, v, c);
    ushmemi_dev_fence_sc();
    *out = old;
}

// Signal ADD in stream order (stream memory operations can only write): the
// data copied earlier in the stream is visible before the signal.
extern "C" __global__ void ushmemi_k_sigadd(unsigned long long *p, unsigned long long v)
{
    ushmemi_dev_red_release_add64(p, v);
}

// Device-to-device copies up to ushmemi_cuda_kcopy_max: one launch enqueues
// faster than a driver memcpy. 16-byte words, four loads in flight per thread.
extern "C" __global__ void ushmemi_k_copy(char *dst, const char *src, unsigned long long n)
{
    unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned long long nthr = (unsigned long long)gridDim.x * blockDim.x, done = 0;
    if ((((unsigned long long)dst | (unsigned long long)src) & 15) == 0) {
        const int4 *s = (const int4 *)src;
        int4 *d = (int4 *)dst;
        unsigned long long n16 = n / 16, k = tid;
        for (; k + 3 * nthr < n16; k += 4 * nthr) {
            int4 a = s[k], b = s[k + nthr], c = s[k + 2 * nthr], e = s[k + 3 * nthr];
            d[k] = a;
            d[k + nthr] = b;
            d[k + 2 * nthr] = c;
            d[k + 3 * nthr] = e;
        }
        for (; k < n16; k += nthr)
            d[k] = s[k];
        done = n16 * 16;
    }
    for (unsigned long long k = done + tid; k < n; k += nthr)
        dst[k] = src[k];
}

template <typename T> struct op_and { __device__ static T f(T a, T b) { return a & b; } };
template <typename T> struct op_or { __device__ static T f(T a, T b) { return a | b; } };
template <typename T> struct op_xor { __device__ static T f(T a, T b) { return a ^ b; } };
template <typename T> struct op_max { __device__ static T f(T a, T b) { return a > b ? a : b; } };
template <typename T> struct op_min { __device__ static T f(T a, T b) { return a < b ? a : b; } };
template <typename T> struct op_sum { __device__ static T f(T a, T b) { return a + b; } };
template <typename T> struct op_prod { __device__ static T f(T a, T b) { return a * b; } };

// Every PE reduces the whole vector over all members, in member order, so all
// PEs get bit-identical floating-point results.
template <typename T, typename OP> __device__ static void reduce(const ushmemi_kred_args_t &a)
{
    T *d = (T *)a.dest;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < a.nelems; i += (unsigned long long)gridDim.x * blockDim.x) {
        T acc = ((const T *)a.src[0])[i];
        for (int k = 1; k < a.npes; k++)
            acc = OP::f(acc, ((const T *)a.src[k])[i]);
        d[i] = acc;
    }
}

#define RED_KERNEL(sfx, T, opn)                                                         \
    extern "C" __global__ void ushmemi_k_red_##sfx##_##opn(const ushmemi_kred_args_t a) \
    {                                                                                   \
        reduce<T, op_##opn<T>>(a);                                                      \
    }
#define RED_INT(sfx, T)                                                                 \
    RED_KERNEL(sfx, T, and)                                                             \
    RED_KERNEL(sfx, T, or) RED_KERNEL(sfx, T, xor) RED_KERNEL(sfx, T, max)            \
        RED_KERNEL(sfx, T, min) RED_KERNEL(sfx, T, sum) RED_KERNEL(sfx, T, prod)
#define RED_FLOAT(sfx, T)                                                               \
    RED_KERNEL(sfx, T, max)                                                             \
    RED_KERNEL(sfx, T, min) RED_KERNEL(sfx, T, sum) RED_KERNEL(sfx, T, prod)

RED_INT(i32, int)
RED_INT(i64, long long)
RED_INT(u32, unsigned int)
RED_INT(u64, unsigned long long)
RED_FLOAT(f32, float)
RED_FLOAT(f64, double)
