// A ring in one kernel per PE: each PE puts a block of data into its right
// neighbour's buffer and signals it; the neighbour's kernel waits for the
// signal and checks the data. Build with plain nvcc (no -rdc, no device
// library):
//   nvcc -O2 -arch=sm_90 -I<prefix>/include ring_device.cu -o ring_device \
//        -L<prefix>/lib -lushmem
// Run: ushrun --mps -n 2 ./ring_device     (several PEs on one GPU: MPS lets
// device-side waits spin safely; one PE per GPU needs no --mps)
#include <shmem.h>
#include <shmemx.h>
#include <shmemx_device.cuh>
#include <stdio.h>

__global__ void ring(const SHMEMX_GRID_CONSTANT shmemx_dev_t d, int *dst, const int *src, int n,
                     uint64_t *sig, int *errors)
{
    int me = shmemx_dev_my_pe(d), npes = shmemx_dev_n_pes(d);
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    // The block copies src into dst on the right neighbour, then one thread
    // releases the signal: the data is visible there before the signal is.
    shmemx_dev_putmem_signal_block(d, dst, src, n * sizeof(int), sig, 1, SHMEM_SIGNAL_SET, right);
    if (threadIdx.x == 0)
        shmemx_dev_signal_wait_until(d, sig, SHMEM_CMP_EQ, 1); // acquire: left's data is here
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        if (dst[i] != left * 1000 + i)
            atomicAdd(errors, 1);
}

__global__ void fill(int *p, int n, int me)
{
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        p[i] = me * 1000 + i;
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = 4096;
    shmemx_dev_t d;
    if (shmemx_dev_get(&d) != 0) // needs a GPU: USHMEM_DEVICE, LOCAL_RANK or shmemx_init_attr
        shmem_global_exit(1);
    if (shmemx_dev_why()) { // device-side waits not allowed here: say why and stop
        if (me == 0)
            fprintf(stderr, "ring_device: %s\n", shmemx_dev_why());
        shmem_finalize();
        return 0;
    }
    int *src = (int *)shmem_malloc(n * sizeof(int)); // device memory (a GPU is bound)
    int *dst = (int *)shmem_malloc(n * sizeof(int));
    uint64_t *sig = (uint64_t *)shmem_calloc(1, sizeof(uint64_t));
    int *errors;
    cudaMallocManaged(&errors, sizeof(int));
    *errors = 0;
    fill<<<1, 256>>>(src, n, me);
    cudaDeviceSynchronize();
    shmem_barrier_all(); // every PE's sig is zero before anyone signals
    ring<<<1, 256>>>(d, dst, src, n, sig, errors);
    cudaError_t e = cudaDeviceSynchronize();
    printf("PE %d: %s, %d wrong values\n", me, cudaGetErrorString(e), *errors);
    shmem_barrier_all();
    shmem_free(sig);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return e != cudaSuccess || *errors != 0;
}
