// torch.ops.ushmem: what torch ties to NVSHMEM (put, get, put_signal,
// wait_signal, all_to_all_vdev), on blocks of the USHMEM backend
// (_torch_symm_mem.cpp). Compiled into the backend's extension by
// torch_symm_mem.py.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "_torch_symm_mem.h"

// _torch_symm_mem_kernels.cu (compiled by nvcc, linked in).
extern "C" int ushmem_a2av_exchange(const int64_t *in_splits, int64_t *const *peer_oso_dev,
                                    size_t oso_off, int me, int world, int64_t in_rows,
                                    cudaStream_t stream);
extern "C" int ushmem_a2av_pull(int64_t *oso, char *const *peer_in_dev, size_t in_off, char *out,
                                size_t row_bytes, int world, int64_t out_rows, int blocks_per_peer,
                                cudaStream_t stream);

namespace
{

// PE numbers are ushmem's (the world ranks when enable() started ushmem over the
// world group). All run on the current stream; peers on other hosts go through
// ushmem's proxy.

using ushmem_symm::api;
using ushmem_symm::SymmetricMemory;

ushmem_capi_stream_t cur_stream()
{
    return reinterpret_cast<ushmem_capi_stream_t>(at::cuda::getCurrentCUDAStream().stream());
}

void check_tensor(const at::Tensor &t, const char *call)
{
    TORCH_CHECK(t.is_cuda() && t.is_contiguous(), "ushmem.", call,
                ": needs a contiguous CUDA tensor of the USHMEM backend");
}

// This rank's tensor into the same place of PE peer's copy.
void op_put(const at::Tensor &tensor, int64_t peer)
{
    const ushmem_capi_t *u = api("put");
    check_tensor(tensor, "put");
    size_t n = tensor.nbytes();
    void *dst = ushmem_symm::peer_addr(tensor.data_ptr(), n, static_cast<int>(peer), "put");
    u->putmem_on_stream(dst, tensor.data_ptr(), n, static_cast<int>(peer), cur_stream());
}

// PE peer's copy of tensor into this rank's tensor.
void op_get(at::Tensor &tensor, int64_t peer)
{
    const ushmem_capi_t *u = api("get");
    check_tensor(tensor, "get");
    size_t n = tensor.nbytes();
    void *src = ushmem_symm::peer_addr(tensor.data_ptr(), n, static_cast<int>(peer), "get");
    u->getmem_on_stream(tensor.data_ptr(), src, n, static_cast<int>(peer), cur_stream());
}

uint64_t *signal_word(const at::Tensor &signal, const char *call)
{
    check_tensor(signal, call);
    TORCH_CHECK(signal.numel() == 1 && signal.element_size() == 8, "ushmem.", call,
                ": the signal is a one-element 64-bit tensor of the USHMEM backend");
    return static_cast<uint64_t *>(signal.data_ptr());
}

// put, then set PE peer's copy of signal to value once the data is there.
void op_put_signal(const at::Tensor &tensor, const at::Tensor &signal, int64_t value, int64_t peer)
{
    const ushmem_capi_t *u = api("put_signal");
    check_tensor(tensor, "put_signal");
    uint64_t *sig = signal_word(signal, "put_signal");
    int pe = static_cast<int>(peer);
    size_t n = tensor.nbytes();
    void *dst = ushmem_symm::peer_addr(tensor.data_ptr(), n, pe, "put_signal");
    void *psig = ushmem_symm::peer_addr(sig, 8, pe, "put_signal");
    u->putmem_signal_on_stream(dst, tensor.data_ptr(), n, static_cast<uint64_t *>(psig),
                               static_cast<uint64_t>(value), USHMEM_CAPI_SIGNAL_SET, pe,
                               cur_stream());
}

// The stream waits until this rank's signal equals value.
void op_wait_signal(const at::Tensor &signal, int64_t value)
{
    const ushmem_capi_t *u = api("wait_signal");
    u->signal_wait_until_on_stream(signal_word(signal, "wait_signal"), USHMEM_CAPI_CMP_EQ,
                                   static_cast<uint64_t>(value), cur_stream());
}

// all_to_all_vdev where some group member is on another host (not mapped here):
// the host reads the splits (two stream syncs), the splits and offsets travel as
// ushmem stream puts, and each source's rows come with a stream get (the proxy
// carries both to other hosts). Correct everywhere; the kernel path is the
// fast one.
void a2av_host(SymmetricMemory &hin, SymmetricMemory &hoso, const at::Tensor &input,
               at::Tensor &out, const at::Tensor &in_splits, at::Tensor &oso, size_t row_bytes,
               cudaStream_t cs)
{
    const ushmem_capi_t *u = ushmem_symm::capi;
    auto stream = reinterpret_cast<ushmem_capi_stream_t>(cs);
    int world = hoso.get_world_size(), me = hoso.get_rank();
    at::Tensor hs = in_splits.cpu(); // syncs the stream: the splits are final
    std::vector<int64_t> sp(hs.data_ptr<int64_t>(), hs.data_ptr<int64_t>() + world);
    std::vector<int64_t> vals(2 * world);
    int64_t acc = 0;
    for (int j = 0; j < world; j++) {
        TORCH_CHECK(sp[j] >= 0, "ushmem.all_to_all_vdev: in_splits[", j, "] = ", sp[j],
                    " is negative");
        vals[j] = sp[j];
        vals[world + j] = acc;
        acc += sp[j];
    }
    TORCH_CHECK(acc <= input.size(0), "ushmem.all_to_all_vdev: in_splits sum to ", acc,
                " rows, the input has ", input.size(0));
    at::Tensor dv = at::empty({2 * world}, in_splits.options());
    dv.copy_(at::from_blob(vals.data(), {2 * world}, at::kLong), /*non_blocking=*/false);
    hoso.barrier(0, 0); // peers are done with this rank's splits and input of the last call
    for (int j = 0; j < world; j++) {
        u->putmem_on_stream(ushmem_symm::handle_peer_addr(hoso, j, 8 * me),
                            dv.data_ptr<int64_t>() + j, 8, ushmem_symm::handle_pe(hoso, j), stream);
        u->putmem_on_stream(ushmem_symm::handle_peer_addr(hoso, j, 8 * (world + me)),
                            dv.data_ptr<int64_t>() + world + j, 8, ushmem_symm::handle_pe(hoso, j),
                            stream);
    }
    hoso.barrier(0, 0); // every source's splits and offsets are here
    std::vector<int64_t> mine(2 * world);
    at::Tensor host = oso.cpu(); // syncs the stream
    std::memcpy(mine.data(), host.data_ptr<int64_t>(), sizeof(int64_t) * 2 * world);
    std::vector<int64_t> offs(world);
    int64_t off = 0;
    char *dst = static_cast<char *>(out.data_ptr());
    for (int p = 0; p < world; p++) {
        int64_t rows = mine[p];
        TORCH_CHECK(off + rows <= out.size(0), "ushmem.all_to_all_vdev: ", off + rows,
                    " rows arrive, the output has ", out.size(0));
        if (rows)
            u->getmem_on_stream(dst + off * row_bytes,
                                ushmem_symm::handle_peer_addr(
                                    hin, p, static_cast<size_t>(mine[world + p]) * row_bytes),
                                static_cast<size_t>(rows) * row_bytes,
                                ushmem_symm::handle_pe(hin, p), stream);
        offs[p] = off;
        off += rows;
    }
    oso[1].copy_(at::from_blob(offs.data(), {world}, at::kLong), /*non_blocking=*/false);
    hoso.barrier(0, 0); // every rank has pulled from this rank's input
}

// all_to_all_vdev as torch's NVSHMEM op: rows (first dimension) of input go to
// each group rank by in_splits (int64, world entries, on the device); this
// rank's output gets every source's rows in rank order; out_splits_offsets
// (int64, 2 x world, symmetric) returns the rows received from each source and
// where they start in out. Pulls through the peers' mappings: every group
// member must be mapped here (one host). Collective over the group.
void op_all_to_all_vdev(const at::Tensor &input, at::Tensor &out, const at::Tensor &in_splits,
                        at::Tensor &out_splits_offsets, std::string group_name)
{
    api("all_to_all_vdev");
    for (const at::Tensor *t :
         std::initializer_list<const at::Tensor *>{&input, &out, &in_splits, &out_splits_offsets})
        check_tensor(*t, "all_to_all_vdev");
    TORCH_CHECK(input.dim() >= 1 && out.dim() >= 1 && input.dtype() == out.dtype(),
                "ushmem.all_to_all_vdev: input and out must have the same dtype and a first "
                "dimension");
    int64_t in_rows = input.size(0), out_rows = out.size(0);
    size_t row_bytes = in_rows ? input.nbytes() / in_rows : 0;
    TORCH_CHECK(!out_rows || out.nbytes() / out_rows == row_bytes || !in_rows,
                "ushmem.all_to_all_vdev: input and out rows differ in size");
    auto hin = ushmem_symm::handle_of(input.data_ptr(), group_name);
    auto hoso = ushmem_symm::handle_of(out_splits_offsets.data_ptr(), group_name);
    int world = hoso->get_world_size(), me = hoso->get_rank();
    TORCH_CHECK(in_splits.scalar_type() == at::kLong && in_splits.numel() == world,
                "ushmem.all_to_all_vdev: in_splits must be int64 with ", world, " entries");
    TORCH_CHECK(
        out_splits_offsets.scalar_type() == at::kLong && out_splits_offsets.numel() == 2 * world,
        "ushmem.all_to_all_vdev: out_splits_offsets must be int64 of shape (2, ", world, ")");
    c10::cuda::CUDAGuard guard(input.device());
    cudaStream_t stream = at::cuda::getCurrentCUDAStream().stream();
    const char *path = std::getenv("USHMEM_SYMM_A2AV"); // "host": that path on one host too
    if (!ushmem_symm::handle_direct(*hin) || !ushmem_symm::handle_direct(*hoso) ||
        (path && std::string(path) == "host")) {
        a2av_host(*hin, *hoso, input, out, in_splits, out_splits_offsets, row_bytes, stream);
        return;
    }
    hoso->barrier(0, 0); // peers are done with this rank's splits and input of the last call
    int rc = ushmem_a2av_exchange(in_splits.data_ptr<int64_t>(),
                                  reinterpret_cast<int64_t *const *>(hoso->get_buffer_ptrs_dev()),
                                  ushmem_symm::handle_offset(*hoso), me, world, in_rows, stream);
    TORCH_CHECK(rc == 0, "ushmem.all_to_all_vdev: exchange kernel: ",
                rc < 0 ? "group larger than 1024 ranks" : cudaGetErrorString((cudaError_t)rc));
    hoso->barrier(0, 0); // every source's splits and offsets are here
    int blocks = static_cast<int>(std::min<int64_t>(
        64, std::max<int64_t>(1, static_cast<int64_t>(row_bytes) * in_rows / world / 65536)));
    rc = ushmem_a2av_pull(out_splits_offsets.data_ptr<int64_t>(),
                          reinterpret_cast<char *const *>(hin->get_buffer_ptrs_dev()),
                          ushmem_symm::handle_offset(*hin), static_cast<char *>(out.data_ptr()),
                          row_bytes, world, out_rows, blocks, stream);
    TORCH_CHECK(rc == 0, "ushmem.all_to_all_vdev: pull kernel: ",
                rc < 0 ? "group larger than 1024 ranks" : cudaGetErrorString((cudaError_t)rc));
    hoso->barrier(0, 0); // every rank has pulled from this rank's input
}

} // namespace

TORCH_LIBRARY(ushmem, m)
{
    m.def("put(Tensor tensor, int peer) -> ()");
    m.def("get(Tensor(a!) tensor, int peer) -> ()");
    m.def("put_signal(Tensor tensor, Tensor(a!) signal, int value, int peer) -> ()");
    m.def("wait_signal(Tensor signal, int value) -> ()");
    m.def("all_to_all_vdev(Tensor input, Tensor(a!) out, Tensor in_splits, "
          "Tensor(a!) out_splits_offsets, str group_name) -> ()");
}

TORCH_LIBRARY_IMPL(ushmem, CUDA, m)
{
    m.impl("put", op_put);
    m.impl("get", op_get);
    m.impl("put_signal", op_put_signal);
    m.impl("wait_signal", op_wait_signal);
    m.impl("all_to_all_vdev", op_all_to_all_vdev);
}
