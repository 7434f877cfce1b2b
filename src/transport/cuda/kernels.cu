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

// A stream operation on a PE this process does not map (another host): one
// thread hands the request to this PE's proxy through the ring, as a kernel
// of the device API would, and waits when it is one to wait for, so the
// stream gets past it once the proxy has carried it out.
extern "C" __global__ void ushmemi_k_proxy_req(const shmemx_dev_t d, const ushmemi_kreq_t r)
{
    uint64_t q[7];
    for (int i = 0; i < 7; i++)
        q[i] = r.w[i];
    (void)ushmemi_dev_ring_call(d, q, (int)(q[0] >> 32), "stream operation through the proxy");
}

// dst[0, n) = src[0, n) by threads tid of nthr: 16-byte words with four
// loads in flight per thread when both are 16-byte aligned, else bytes.
__device__ static void copy_part(char *dst, const char *src, unsigned long long n,
                                 unsigned long long tid, unsigned long long nthr)
{
    unsigned long long done = 0;
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

// Device-to-device copies up to ushmemi_cuda_kcopy_max: one launch enqueues
// faster than a driver memcpy.
extern "C" __global__ void ushmemi_k_copy(char *dst, const char *src, unsigned long long n)
{
    copy_part(dst, src, n, blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x,
              (unsigned long long)gridDim.x * blockDim.x);
}

// A collective's copies for the whole team, by one PE (kernels_abi.h).
extern "C" __global__ void ushmemi_k_coll_copy(const ushmemi_kcopy_args_t a)
{
    unsigned long long nb = a.nbytes, off_src = 0, off_dst = 0;
    int i = 0, j = (int)blockIdx.y;
    if (a.kind != USHMEMI_KCOLL_BROADCAST) {
        i = (int)blockIdx.y / a.npes;
        j = (int)blockIdx.y % a.npes;
        off_dst = (unsigned long long)i * nb;
        if (a.kind == USHMEMI_KCOLL_ALLTOALL)
            off_src = (unsigned long long)j * nb;
    } else {
        i = a.root;
    }
    copy_part((char *)a.dst[j] + off_dst, (const char *)a.src[i] + off_src, nb,
              blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x,
              (unsigned long long)gridDim.x * blockDim.x);
}

// ---- collectives that synchronize on the device (kernels_abi.h) ----

// Thread j < npes waits until this PE's recv slot for member j reaches e
// (wrap-safe); traps with a line when the job ends or the wait times out.
__device__ static void kcoll_wait(const ushmemi_kcoll_args_t &a, int j, unsigned long long e,
                                  const char *call)
{
    const unsigned long long *slot = (const unsigned long long *)a.heap_base + a.wpe[j];
    if ((long long)(ushmemi_dev_ld_acquire64(slot) - e) >= 0)
        return;
    shmemx_dev_t d = {};
    d.world_pe = a.world_pe;
    d.heap_base = a.heap_base;
    d.abort_flag = a.abort_flag;
    d.wait_timeout_ns = a.timeout_ns;
    uint64_t t0 = 0;
    for (unsigned polls = 1; (long long)(ushmemi_dev_ld_acquire64(slot) - e) < 0; polls++)
        ushmemi_dev_wait_tick(d, polls, &t0, slot, call);
}

// One round: stores (release), then waits (acquire), one thread per member;
// the whole block continues after it.
__device__ static void kcoll_round(const ushmemi_kcoll_args_t &a, int r, const char *call)
{
    int j = (int)threadIdx.x;
    /* Round 1 signals after the block barrier that follows the pushes: the
     * system-scope release is cumulative, so every thread's pushes are
     * visible before the signal to whoever acquires it. */
    if (j < a.npes && a.sent[r][j])
        ushmemi_dev_st_release64((void *)(uintptr_t)a.flag_out[j], a.sent[r][j]);
    if (j < a.npes && a.expect[r][j])
        kcoll_wait(a, j, a.expect[r][j], call);
    __syncthreads();
}

extern "C" __global__ void ushmemi_k_coll_sync(const ushmemi_kcoll_args_t a)
{
    static const char call[] = "collective or barrier on a stream (device-synchronized)";
    unsigned long long nb = a.nbytes;
    kcoll_round(a, 0, call);
    if (a.kind == USHMEMI_KCOLL_BARRIER) // a stream barrier: the one round
        return;
    if (a.kind != USHMEMI_KCOLL_BROADCAST || a.me == a.root)
        for (int k = 0; k < a.npes; k++) {
            int j = (a.me + k) % a.npes;
            const char *s = (const char *)a.src;
            if (a.kind == USHMEMI_KCOLL_ALLTOALL)
                s += (unsigned long long)j * nb;
            char *d = (char *)a.peer[j];
            if (a.kind != USHMEMI_KCOLL_BROADCAST)
                d += (unsigned long long)a.me * nb;
            copy_part(d, s, nb, threadIdx.x, blockDim.x);
        }
    __syncthreads();
    kcoll_round(a, 1, call);
}

template <typename T> struct op_and {
    __device__ static T f(T a, T b)
    {
        return a & b;
    }
};
template <typename T> struct op_or {
    __device__ static T f(T a, T b)
    {
        return a | b;
    }
};
template <typename T> struct op_xor {
    __device__ static T f(T a, T b)
    {
        return a ^ b;
    }
};
template <typename T> struct op_max {
    __device__ static T f(T a, T b)
    {
        return a > b ? a : b;
    }
};
template <typename T> struct op_min {
    __device__ static T f(T a, T b)
    {
        return a < b ? a : b;
    }
};
template <typename T> struct op_sum {
    __device__ static T f(T a, T b)
    {
        return a + b;
    }
};
template <typename T> struct op_prod {
    __device__ static T f(T a, T b)
    {
        return a * b;
    }
};

// Every result element is combined over all members in member order, so all
// PEs get bit-identical floating-point results, and written to each dest.
template <typename T, typename OP> __device__ static void reduce(const ushmemi_kred_args_t &a)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < a.nelems; i += (unsigned long long)gridDim.x * blockDim.x) {
        T acc = ((const T *)a.src[0])[i];
        for (int k = 1; k < a.npes; k++)
            acc = OP::f(acc, ((const T *)a.src[k])[i]);
        for (int k = 0; k < a.ndest; k++)
            ((T *)a.dest[k])[i] = acc;
    }
}

// Small reduction that synchronizes on the device: after round 0 every
// member's source (peer[j]) is ready; this PE combines into its dest, or into
// shared memory when its dest is its source (peers may still be reading it),
// copied out after round 1 (everyone has read everything).
template <typename T, typename OP> __device__ static void redsync(const ushmemi_kcoll_args_t &a)
{
    static const char call[] = "reduction on a stream (device-synchronized)";
    extern __shared__ unsigned long long stage_words[];
    T *stage = (T *)stage_words, *d = (T *)a.dest;
    unsigned long long n = a.nbytes;
    kcoll_round(a, 0, call);
    for (unsigned long long i = threadIdx.x; i < n; i += blockDim.x) {
        T acc = ((const T *)a.peer[0])[i];
        for (int k = 1; k < a.npes; k++)
            acc = OP::f(acc, ((const T *)a.peer[k])[i]);
        if (a.staged)
            stage[i] = acc;
        else
            d[i] = acc;
    }
    __syncthreads();
    kcoll_round(a, 1, call);
    if (a.staged)
        for (unsigned long long i = threadIdx.x; i < n; i += blockDim.x)
            d[i] = stage[i];
}

#define RED_KERNEL(sfx, T, opn)                                                                    \
    extern "C" __global__ void ushmemi_k_red_##sfx##_##opn(const ushmemi_kred_args_t a)            \
    {                                                                                              \
        reduce<T, op_##opn<T>>(a);                                                                 \
    }                                                                                              \
    extern "C" __global__ void ushmemi_k_redsync_##sfx##_##opn(const ushmemi_kcoll_args_t a)       \
    {                                                                                              \
        redsync<T, op_##opn<T>>(a);                                                                \
    }
/* clang-format off: it reflows these macro lists differently on every pass */
#define RED_INT(sfx, T)                                                                            \
    RED_KERNEL(sfx, T, and)                                                                        \
    RED_KERNEL(sfx, T, or)                                                                         \
    RED_KERNEL(sfx, T, xor)                                                                        \
    RED_KERNEL(sfx, T, max)                                                                        \
    RED_KERNEL(sfx, T, min)                                                                        \
    RED_KERNEL(sfx, T, sum)                                                                        \
    RED_KERNEL(sfx, T, prod)
#define RED_FLOAT(sfx, T)                                                                          \
    RED_KERNEL(sfx, T, max)                                                                        \
    RED_KERNEL(sfx, T, min)                                                                        \
    RED_KERNEL(sfx, T, sum)                                                                        \
    RED_KERNEL(sfx, T, prod)
/* clang-format on */

RED_INT(i32, int)
RED_INT(i64, long long)
RED_INT(u32, unsigned int)
RED_INT(u64, unsigned long long)
RED_FLOAT(f32, float)
RED_FLOAT(f64, double)
