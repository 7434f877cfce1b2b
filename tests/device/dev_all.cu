/* The translation unit the compile-only tests build (compile.sh): every device
 * entry point, from dev_all.cuh. */
#include <dev_all.cuh>

#ifdef DEV_ALL_HOST_LAUNCH
/* The host side of shmemx_device.cuh, instantiated: compiled by nvcc_nordc,
 * never linked (it calls into libushmem, which the rdc program goes without). */
int dev_all_launch(const shmemx_dev_t *d, char *buf, uint64_t *sig, unsigned long long n,
                   cudaStream_t stream)
{
    void *args[] = {(void *)d, &buf, &sig, &n};
    return shmemx_collective_launch(dev_all, dim3(4), dim3(128), args, 0, stream);
}
#endif
