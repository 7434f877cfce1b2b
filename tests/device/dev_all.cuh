/* Every device API entry point instantiated once, for the compile-only tests
 * (nvcc with and without -rdc, NVRTC, clang): if one stops compiling in some
 * mode, or pulls in an external device symbol, these fail. */
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
