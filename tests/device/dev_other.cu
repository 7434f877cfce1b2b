/* The second translation unit of the nvcc_rdc program, and its main: the
 * header's functions instantiated here too (compile.sh builds this TU with
 * SHMEMX_DEVICE_CHECKS when dev_all.cu is without, and the other way round),
 * a kernel of the other TU launched from here; the device link must find
 * neither a duplicate nor an unresolved symbol. Linked, never run. */
#include <shmemx_device.cuh>

extern "C" __global__ void dev_other(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, char *buf,
                                     uint64_t *sig, unsigned long long n)
{
    int pe = (shmemx_dev_my_pe(d) + 1) % shmemx_dev_n_pes(d);
    if (char *p = (char *)shmemx_dev_ptr(d, buf, pe))
        p[1] = 2;
    shmemx_dev_putmem_block(d, buf, buf + n, n, pe);
    shmemx_dev_getmem_warp(d, buf, buf + n, n, pe);
    shmemx_dev_put(d, (int *)buf, (const int *)buf + n, n / 4, pe);
    shmemx_dev_putmem_signal_block(d, buf, buf + n, n, sig, 1, SHMEMX_DEV_SIGNAL_ADD, pe);
    uint64_t s = shmemx_dev_signal_wait_until(d, sig, SHMEMX_DEV_CMP_GE, (uint64_t)1);
    s += shmemx_dev_atomic_fetch_add(d, sig + 1, s, pe);
    s += (uint64_t)shmemx_dev_atomic_compare_swap(d, (double *)sig + 2, 0.0, 1.0, pe);
    shmemx_dev_wait_until(d, (int *)sig + 6, SHMEMX_DEV_CMP_NE, 0);
    shmemx_dev_quiet_block(d);
    shmemx_dev_barrier_all_block(d);
    shmemx_dev_team_sync_warp(d);
    /* collectives and vector waits the other TU instantiates too */
    shmemx_dev_alltoallmem_block(d, buf, buf + n, n);
    shmemx_dev_sum_reduce_block(d, (float *)buf, (const float *)buf + n, n / 4);
    shmemx_dev_int_collect(d, (int *)buf, (const int *)buf + n, n / 4);
    s += shmemx_dev_wait_until_any(d, sig + 8, 4, (const int *)0, SHMEMX_DEV_CMP_NE, (uint64_t)0);
    sig[3] = s;
}

/* Defined in dev_all.cuh (the other TU). */
extern "C" __global__ void dev_all(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, char *buf,
                                   uint64_t *sig, unsigned long long n);

int main(int argc, char **argv)
{
    (void)argv;
    if (argc < 0) { /* never: the program is only linked */
        shmemx_dev_t d = {};
        dev_other<<<1, 64>>>(d, 0, 0, 0);
        dev_all<<<1, 64>>>(d, 0, 0, 0);
    }
    return 0;
}
