/* Every device API entry point instantiated once, for the compile-only tests
 * (nvcc with and without -rdc, NVRTC, clang): if one stops compiling in some
 * mode, or pulls in an external device symbol, these fail. Kernels: dev_all
 * (shmemx_device.cuh), dev_all_coll_* (collectives), dev_all_waits (vector
 * waits). */
#include <shmemx_device.cuh>

template <typename T> __device__ void dev_all_amos(const shmemx_dev_t &d, T *w, int pe)
{
    T v = shmemx_dev_atomic_fetch(d, w, pe);
    shmemx_dev_atomic_set(d, w, v, pe);
    v = shmemx_dev_atomic_swap(d, w, v, pe);
    v = shmemx_dev_atomic_compare_swap(d, w, v, (T)(v + 1), pe);
    v += shmemx_dev_atomic_fetch_add(d, w, (T)3, pe);
    shmemx_dev_atomic_add(d, w, v, pe);
    v += shmemx_dev_atomic_fetch_inc(d, w, pe);
    shmemx_dev_atomic_inc(d, w, pe);
    v += shmemx_dev_atomic_fetch_and(d, w, v, pe);
    shmemx_dev_atomic_and(d, w, v, pe);
    v += shmemx_dev_atomic_fetch_or(d, w, v, pe);
    shmemx_dev_atomic_or(d, w, v, pe);
    v += shmemx_dev_atomic_fetch_xor(d, w, v, pe);
    shmemx_dev_atomic_xor(d, w, v, pe);
    shmemx_dev_p(d, w, v, pe);
    v += shmemx_dev_g(d, w, pe);
    shmemx_dev_wait_until(d, w, SHMEMX_DEV_CMP_GE, v);
    if (shmemx_dev_test(d, w, SHMEMX_DEV_CMP_NE, v))
        shmemx_dev_p(d, w, v, pe);
}

/* The collectives (shmemx_device_coll.cuh): every call in each form, mem,
 * typed and type-named, and every reduction operator. One kernel per call:
 * ptxas takes minutes over one kernel holding them all (and each costs about a
 * second, so not every call in every form). */
#define DEV_ALL_COLL(name, ...)                                                                    \
    extern "C" __global__ void dev_all_coll_##name(const SHMEMX_GRID_CONSTANT shmemx_dev_t d,      \
                                                   char *buf, size_t *off, unsigned long long n)   \
    {                                                                                              \
        (void)off;                                                                                 \
        __VA_ARGS__;                                                                               \
    }
DEV_ALL_COLL(alltoallmem, shmemx_dev_alltoallmem(d, buf, buf + n, n))
DEV_ALL_COLL(alltoallmem_warp, shmemx_dev_alltoallmem_warp(d, buf, buf + n, n))
DEV_ALL_COLL(alltoallmem_block, shmemx_dev_alltoallmem_block(d, buf, buf + n, n))
DEV_ALL_COLL(broadcastmem_warp, shmemx_dev_broadcastmem_warp(d, buf, buf + n, n, 0))
DEV_ALL_COLL(fcollectmem_block, shmemx_dev_fcollectmem_block(d, buf, buf + n, n))
DEV_ALL_COLL(collectmem, shmemx_dev_collectmem(d, buf, buf + n, n))
DEV_ALL_COLL(alltoallvmem_block,
             shmemx_dev_alltoallvmem_block(d, buf, off, buf + n, off + 8, off + 16))
DEV_ALL_COLL(alltoall_block, shmemx_dev_alltoall_block(d, (int *)buf, (const int *)buf + n, n / 4))
DEV_ALL_COLL(broadcast, shmemx_dev_broadcast(d, (double *)buf, (const double *)buf + n, n / 8, 1))
DEV_ALL_COLL(fcollect_warp,
             shmemx_dev_fcollect_warp(d, (short *)buf, (const short *)buf + n, n / 2))
DEV_ALL_COLL(collect_block,
             shmemx_dev_collect_block(d, (float *)buf, (const float *)buf + n, n / 4))
DEV_ALL_COLL(alltoallv_warp, shmemx_dev_alltoallv_warp(d, (long *)buf, off, (const long *)buf + n,
                                                       off + 8, off + 16))
DEV_ALL_COLL(int_alltoall, shmemx_dev_int_alltoall(d, (int *)buf, (const int *)buf + n, n / 4))
DEV_ALL_COLL(uint64_broadcast_block,
             shmemx_dev_uint64_broadcast_block(d, (uint64_t *)buf, (const uint64_t *)buf + n, n / 8,
                                               0))
DEV_ALL_COLL(char_fcollect, shmemx_dev_char_fcollect(d, buf, buf + n, n))
DEV_ALL_COLL(size_collect_warp,
             shmemx_dev_size_collect_warp(d, (size_t *)buf, (const size_t *)buf + n, n / 8))
DEV_ALL_COLL(float_alltoallv_block,
             shmemx_dev_float_alltoallv_block(d, (float *)buf, off, (const float *)buf + n, off + 8,
                                              off + 16))
DEV_ALL_COLL(sum_reduce_block,
             shmemx_dev_sum_reduce_block(d, (float *)buf, (const float *)buf + n, n / 4))
DEV_ALL_COLL(int_sum_reduce, shmemx_dev_int_sum_reduce(d, (int *)buf, (const int *)buf + n, n / 4))
DEV_ALL_COLL(sum_reduce_scatter_warp,
             shmemx_dev_sum_reduce_scatter_warp(d, (double *)buf, (const double *)buf + n, n / 8))
DEV_ALL_COLL(and_reduce_block,
             shmemx_dev_and_reduce_block(d, (unsigned *)buf, (const unsigned *)buf + n, n / 4))
DEV_ALL_COLL(or_reduce_warp, shmemx_dev_or_reduce_warp(d, (unsigned long long *)buf,
                                                       (const unsigned long long *)buf + n, n / 8))
DEV_ALL_COLL(uchar_xor_reduce, shmemx_dev_uchar_xor_reduce(d, (unsigned char *)buf,
                                                           (const unsigned char *)buf + n, n))
DEV_ALL_COLL(max_reduce_block,
             shmemx_dev_max_reduce_block(d, (short *)buf, (const short *)buf + n, n / 2))
DEV_ALL_COLL(ptrdiff_min_reduce_block,
             shmemx_dev_ptrdiff_min_reduce_block(d, (ushmemi_dev_ptrdiff_t *)buf,
                                                 (const ushmemi_dev_ptrdiff_t *)buf + n, n / 8))
DEV_ALL_COLL(prod_reduce_scatter_block,
             shmemx_dev_prod_reduce_scatter_block(d, (long long *)buf, (const long long *)buf + n,
                                                  n / 8))
#undef DEV_ALL_COLL

/* The vector waits (shmemx_device_wait.cuh), every call, templates and
 * type-named. */
template <typename T> __device__ void dev_all_waits_t(const shmemx_dev_t &d, T *w, size_t *idx)
{
    const int *st = (const int *)idx;
    const T *v = w + 8;
    shmemx_dev_wait_until_all(d, w, 4, st, SHMEMX_DEV_CMP_GE, (T)1);
    shmemx_dev_wait_until_all_vector(d, w, 4, st, SHMEMX_DEV_CMP_GE, v);
    idx[0] = shmemx_dev_wait_until_any(d, w, 4, st, SHMEMX_DEV_CMP_NE, (T)0);
    idx[1] = shmemx_dev_wait_until_any_vector(d, w, 4, st, SHMEMX_DEV_CMP_NE, v);
    idx[2] = shmemx_dev_wait_until_some(d, w, 4, idx + 8, st, SHMEMX_DEV_CMP_GT, (T)0);
    idx[3] = shmemx_dev_wait_until_some_vector(d, w, 4, idx + 8, st, SHMEMX_DEV_CMP_GT, v);
    idx[4] = (size_t)shmemx_dev_test_all(d, w, 4, st, SHMEMX_DEV_CMP_LT, (T)2);
    idx[5] = (size_t)shmemx_dev_test_all_vector(d, w, 4, st, SHMEMX_DEV_CMP_LT, v);
    idx[6] = shmemx_dev_test_any(d, w, 4, st, SHMEMX_DEV_CMP_LE, (T)2);
    idx[7] = shmemx_dev_test_any_vector(d, w, 4, st, SHMEMX_DEV_CMP_LE, v);
    idx[8] = shmemx_dev_test_some(d, w, 4, idx + 8, st, SHMEMX_DEV_CMP_EQ, (T)2);
    idx[9] = shmemx_dev_test_some_vector(d, w, 4, idx + 8, st, SHMEMX_DEV_CMP_EQ, v);
}

extern "C" __global__ void dev_all_waits(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, uint64_t *w,
                                         size_t *idx)
{
    dev_all_waits_t(d, (short *)w, idx);
    dev_all_waits_t(d, (unsigned *)w, idx);
    dev_all_waits_t(d, (long long *)w, idx);
    dev_all_waits_t(d, w, idx);
    const int *st = (const int *)idx;
    shmemx_dev_int_wait_until_all(d, (int *)w, 4, st, SHMEMX_DEV_CMP_GE, 1);
    shmemx_dev_uint64_wait_until_all_vector(d, w, 4, st, SHMEMX_DEV_CMP_GE, w + 8);
    idx[0] = shmemx_dev_short_wait_until_any(d, (short *)w, 4, st, SHMEMX_DEV_CMP_NE, 0);
    idx[1] = shmemx_dev_ushort_wait_until_any_vector(d, (unsigned short *)w, 4, st,
                                                     SHMEMX_DEV_CMP_NE, (unsigned short *)w + 8);
    idx[2] = shmemx_dev_long_wait_until_some(d, (long *)w, 4, idx + 8, st, SHMEMX_DEV_CMP_GT, 0);
    idx[3] = shmemx_dev_size_wait_until_some_vector(d, (size_t *)w, 4, idx + 8, st,
                                                    SHMEMX_DEV_CMP_GT, (size_t *)w + 8);
    idx[4] = (size_t)shmemx_dev_int32_test_all(d, (int32_t *)w, 4, st, SHMEMX_DEV_CMP_LT, 2);
    idx[5] = (size_t)shmemx_dev_int64_test_all_vector(d, (int64_t *)w, 4, st, SHMEMX_DEV_CMP_LT,
                                                      (int64_t *)w + 8);
    idx[6] = shmemx_dev_uint32_test_any(d, (uint32_t *)w, 4, st, SHMEMX_DEV_CMP_LE, 2u);
    idx[7] = shmemx_dev_ulonglong_test_any_vector(d, (unsigned long long *)w, 4, st,
                                                  SHMEMX_DEV_CMP_LE, (unsigned long long *)w + 8);
    idx[8] = shmemx_dev_longlong_test_some(d, (long long *)w, 4, idx + 8, st, SHMEMX_DEV_CMP_EQ, 2);
    idx[9] = shmemx_dev_ptrdiff_test_some_vector(d, (ushmemi_dev_ptrdiff_t *)w, 4, idx + 8, st,
                                                 SHMEMX_DEV_CMP_EQ, (ushmemi_dev_ptrdiff_t *)w + 8);
}

extern "C" __global__ void dev_all(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, char *buf,
                                   uint64_t *sig, unsigned long long n)
{
    int pe = (shmemx_dev_my_pe(d) + 1) % shmemx_dev_n_pes(d);
    char *p = (char *)shmemx_dev_ptr(d, buf, pe);
    if (p)
        p[0] = 1;
    shmemx_dev_putmem(d, buf, buf + n, n, pe);
    shmemx_dev_putmem_warp(d, buf, buf + n, n, pe);
    shmemx_dev_putmem_block(d, buf, buf + n, n, pe);
    shmemx_dev_putmem_nbi(d, buf, buf + n, n, pe);
    shmemx_dev_putmem_nbi_warp(d, buf, buf + n, n, pe);
    shmemx_dev_putmem_nbi_block(d, buf, buf + n, n, pe);
    shmemx_dev_getmem(d, buf, buf + n, n, pe);
    shmemx_dev_getmem_warp(d, buf, buf + n, n, pe);
    shmemx_dev_getmem_block(d, buf, buf + n, n, pe);
    shmemx_dev_getmem_nbi(d, buf, buf + n, n, pe);
    shmemx_dev_getmem_nbi_warp(d, buf, buf + n, n, pe);
    shmemx_dev_getmem_nbi_block(d, buf, buf + n, n, pe);
    shmemx_dev_put(d, (float *)buf, (const float *)buf + n, n / 4, pe);
    shmemx_dev_put_warp(d, (double *)buf, (const double *)buf + n, n / 8, pe);
    shmemx_dev_put_block(d, (int *)buf, (const int *)buf + n, n / 4, pe);
    shmemx_dev_get(d, (float *)buf, (const float *)buf + n, n / 4, pe);
    shmemx_dev_get_warp(d, (double *)buf, (const double *)buf + n, n / 8, pe);
    shmemx_dev_get_block(d, (int *)buf, (const int *)buf + n, n / 4, pe);
    shmemx_dev_putmem_signal(d, buf, buf + n, n, sig, 1, SHMEMX_DEV_SIGNAL_SET, pe);
    shmemx_dev_putmem_signal_warp(d, buf, buf + n, n, sig, 1, SHMEMX_DEV_SIGNAL_ADD, pe);
    shmemx_dev_putmem_signal_block(d, buf, buf + n, n, sig, 1, SHMEMX_DEV_SIGNAL_SET, pe);
    shmemx_dev_putmem_signal_nbi(d, buf, buf + n, n, sig, 1, SHMEMX_DEV_SIGNAL_SET, pe);
    shmemx_dev_putmem_signal_nbi_warp(d, buf, buf + n, n, sig, 1, SHMEMX_DEV_SIGNAL_ADD, pe);
    shmemx_dev_putmem_signal_nbi_block(d, buf, buf + n, n, sig, 1, SHMEMX_DEV_SIGNAL_SET, pe);
    shmemx_dev_signal_op(d, sig, 2, SHMEMX_DEV_SIGNAL_ADD, pe);
    uint64_t s = shmemx_dev_signal_fetch(d, sig);
    s = shmemx_dev_signal_wait_until(d, sig, SHMEMX_DEV_CMP_GE, s);
    shmemx_dev_quiet(d);
    shmemx_dev_quiet_warp(d);
    shmemx_dev_quiet_block(d);
    shmemx_dev_fence(d);
    dev_all_amos(d, (int *)sig, pe);
    dev_all_amos(d, (unsigned int *)sig, pe);
    dev_all_amos(d, (long *)sig, pe);
    dev_all_amos(d, (unsigned long *)sig, pe);
    dev_all_amos(d, (long long *)sig, pe);
    dev_all_amos(d, (unsigned long long *)sig, pe);
    float f = shmemx_dev_atomic_fetch(d, (float *)sig, pe);
    f = shmemx_dev_atomic_swap(d, (float *)sig, f, pe);
    double g = shmemx_dev_atomic_compare_swap(d, (double *)sig, 1.0, (double)f, pe);
    shmemx_dev_atomic_set(d, (double *)sig, g, pe);
    shmemx_dev_barrier_all(d);
    shmemx_dev_barrier_all_warp(d);
    shmemx_dev_barrier_all_block(d);
    shmemx_dev_sync_all(d);
    shmemx_dev_sync_all_warp(d);
    shmemx_dev_sync_all_block(d);
    shmemx_dev_barrier(d);
    shmemx_dev_barrier_warp(d);
    shmemx_dev_barrier_block(d);
    shmemx_dev_team_sync(d);
    shmemx_dev_team_sync_warp(d);
    shmemx_dev_team_sync_block(d);
    sig[1] = s;
}
