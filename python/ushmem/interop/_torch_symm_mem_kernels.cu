// Kernels of the torch symmetric-memory backend (_torch_symm_mem.cpp), in a file
// of their own without torch headers: nvcc compiles it quickly, and the C++ side
// (built with the host compiler against torch) calls the launchers below.
//
// all_to_all_vdev, pull form. Rows are the first dimension of the tensors; splits
// count rows. out_splits_offsets (2 x world int64, symmetric): row 0 = rows this
// rank receives from each source, row 1 = on entry to the pull, where in the
// source's input they start; on return, where in this rank's output they landed.
//  1. exchange: this rank writes in_splits[j] and its exclusive prefix (its rows
//     for j start there in its input) into row 0 / row 1, column `me`, of rank j's
//     out_splits_offsets (a store through the peer's mapping);
//  2. (the caller's stream barrier)
//  3. pull: block (p, y) copies its share of source p's rows from p's input,
//     mapped here, to this rank's output after the rows of sources < p;
//  4. offsets: row 1 becomes the output offsets (after the pull has read it).
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

namespace
{

constexpr int kMaxWorld = 1024;

__global__ void a2av_exchange(const int64_t *in_splits, int64_t *const *peer_oso, size_t oso_off,
                              int me, int world, int64_t in_rows)
{
    __shared__ int64_t scan[kMaxWorld];
    int j = threadIdx.x;
    int64_t s = j < world ? in_splits[j] : 0;
    scan[j] = s;
    __syncthreads();
    if (j == 0) {
        int64_t acc = 0;
        for (int k = 0; k < world; k++) {
            int64_t t = scan[k];
            if (t < 0) {
                printf("ushmem all_to_all_vdev: in_splits[%d] = %lld is negative\n", k,
                       (long long)t);
                __trap();
            }
            scan[k] = acc;
            acc += t;
        }
        if (acc > in_rows) {
            printf("ushmem all_to_all_vdev: in_splits sum to %lld rows, the input has %lld\n",
                   (long long)acc, (long long)in_rows);
            __trap();
        }
    }
    __syncthreads();
    if (j < world) {
        int64_t *oso = reinterpret_cast<int64_t *>(reinterpret_cast<char *>(peer_oso[j]) + oso_off);
        oso[me] = s;
        oso[world + me] = scan[j];
    }
    __threadfence_system();
}

__global__ void a2av_pull(const int64_t *oso, char *const *peer_in, size_t in_off, char *out,
                          size_t row_bytes, int world, int64_t out_rows)
{
    int p = blockIdx.x;
    __shared__ int64_t off;
    if (threadIdx.x == 0) {
        int64_t a = 0;
        for (int q = 0; q < p; q++)
            a += oso[q];
        off = a;
    }
    __syncthreads();
    int64_t rows = oso[p], src_row = oso[world + p];
    if (off + rows > out_rows) {
        if (threadIdx.x == 0 && blockIdx.y == 0)
            printf("ushmem all_to_all_vdev: %lld rows arrive, the output has %lld\n",
                   (long long)(off + rows), (long long)out_rows);
        __trap();
    }
    const char *src = peer_in[p] + in_off + (size_t)src_row * row_bytes;
    char *dst = out + (size_t)off * row_bytes;
    size_t n = (size_t)rows * row_bytes;
    size_t first = (size_t)blockIdx.y * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.y * blockDim.x;
    if ((((uintptr_t)src | (uintptr_t)dst | n) & 15) == 0) {
        const uint4 *s4 = reinterpret_cast<const uint4 *>(src);
        uint4 *d4 = reinterpret_cast<uint4 *>(dst);
        for (size_t i = first; i < n / 16; i += stride)
            d4[i] = s4[i];
    } else {
        for (size_t i = first; i < n; i += stride)
            dst[i] = src[i];
    }
}

__global__ void a2av_offsets(int64_t *oso, int world)
{
    if (threadIdx.x == 0) {
        int64_t acc = 0;
        for (int q = 0; q < world; q++) {
            oso[world + q] = acc;
            acc += oso[q];
        }
    }
}

} // namespace

// 0, or a CUDA error code (launch failures), or -1 for a world too large.
extern "C" int ushmem_a2av_exchange(const int64_t *in_splits, int64_t *const *peer_oso_dev,
                                    size_t oso_off, int me, int world, int64_t in_rows,
                                    cudaStream_t stream)
{
    if (world < 1 || world > kMaxWorld)
        return -1;
    a2av_exchange<<<1, kMaxWorld, 0, stream>>>(in_splits, peer_oso_dev, oso_off, me, world,
                                               in_rows);
    return (int)cudaGetLastError();
}

extern "C" int ushmem_a2av_pull(int64_t *oso, char *const *peer_in_dev, size_t in_off, char *out,
                                size_t row_bytes, int world, int64_t out_rows, int blocks_per_peer,
                                cudaStream_t stream)
{
    if (world < 1 || world > kMaxWorld)
        return -1;
    dim3 grid((unsigned)world, (unsigned)(blocks_per_peer > 0 ? blocks_per_peer : 1));
    a2av_pull<<<grid, 512, 0, stream>>>(oso, peer_in_dev, in_off, out, row_bytes, world, out_rows);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return (int)e;
    a2av_offsets<<<1, 32, 0, stream>>>(oso, world);
    return (int)cudaGetLastError();
}
