// ushmem as a torch symmetric-memory backend: symm_mem.set_backend("USHMEM").
//
// Built against the installed torch by ushmem/interop/torch_symm_mem.py (the
// interface is torch's alpha SymmetricMemory.hpp; it changes between
// releases, so the module is compiled per torch version and cached). It uses
// the library instance of the ushmem package through its capsule
// (ushmem_capi.h), handed over by the Python module before any allocation.
//
// Allocation is local: torch's allocator is not collective (it allocates when
// one rank's pool grows and frees from garbage collection), so a block comes
// from the local part of this PE's device heap (shmemx_malloc_local; every
// peer maps the whole heap) and peers learn its offset at rendezvous, through
// the group's c10d store. A free never waits for a peer: it is deferred until
// the work the current stream had queued on the block is done.
//
// Each block is [buffer | signal pad | sync words], the last two zeroed before
// the block is handed out. The pad is torch's (its kernels and users keep it
// zero between uses); barrier/put_signal/wait_signal use the sync words:
// counters, one per (channel, source PE), that a signal adds 1 to and a wait
// waits to reach the count of waits made so far, as ushmem stream operations
// (stream memory operations on mapped peers, the proxy for peers on other
// hosts). No spinning kernel, so several ranks per GPU work without MPS; no
// reset, so a fast peer's next signal is never lost to a reset of the last. A timeout (ms, 0 =
// none) is kept by a watchdog thread that ends the job with one line if the wait has not finished
// by then (torch's CUDA backend traps the kernel instead).
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <torch/csrc/distributed/c10d/GroupRegistry.hpp>
#include <torch/csrc/distributed/c10d/symm_mem/SymmetricMemory.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "_torch_symm_mem.h"

namespace ushmem_symm
{

using c10d::symmetric_memory::SymmetricMemory;
using c10d::symmetric_memory::SymmetricMemoryAllocator;

const ushmem_capi_t *capi = nullptr;

const ushmem_capi_t *api(const char *call)
{
    TORCH_CHECK(capi != nullptr, "ushmem symm_mem ", call,
                ": the backend was loaded without ushmem; import "
                "ushmem.interop.torch_symm_mem instead of loading the library by hand");
    TORCH_CHECK(capi->initialized(), "ushmem symm_mem ", call,
                ": ushmem is not initialized: call ushmem.interop.torch_symm_mem.enable() "
                "(or ushmem.init_with_torch()) on every rank before allocating");
    return capi;
}

void cuda_check(cudaError_t e, const char *what)
{
    TORCH_CHECK(e == cudaSuccess, "ushmem symm_mem: ", what, ": ", cudaGetErrorString(e));
}

static size_t round_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

// ---- the signal pad's size, across torch releases ----
// Newer torch has a free c10d::symmetric_memory::get_signal_pad_size() (the
// size set_signal_pad_size chose); older releases fix the size in a constant
// of the CUDA backend that is not in the installed headers. The template below
// stands in where the free function is missing: overload resolution prefers a
// non-template function, so torch's wins wherever it is declared. The build
// passes the older constant (torch's _SymmetricMemory.signal_pad_size, or the
// largest older default) as USHMEM_TORCH_PAD_SIZE.
#ifndef USHMEM_TORCH_PAD_SIZE
#define USHMEM_TORCH_PAD_SIZE 9216
#endif
#ifndef USHMEM_PAD_DTYPE // torch's pads are uint32 (a syntax check against an old c10 sets it)
#define USHMEM_PAD_DTYPE c10::ScalarType::UInt32
#endif
namespace pad_fallback
{
template <typename = void> size_t get_signal_pad_size()
{
    return USHMEM_TORCH_PAD_SIZE > 0 ? USHMEM_TORCH_PAD_SIZE : 9216;
}
} // namespace pad_fallback
namespace pad_pick
{
using namespace c10d::symmetric_memory;
using namespace pad_fallback;
static size_t signal_pad_size()
{
    return get_signal_pad_size();
}
} // namespace pad_pick

// ---- watchdog for timed waits ----

struct Watch {
    cudaEvent_t done;
    std::chrono::steady_clock::time_point deadline;
    std::string what;
    int device;
};

class Watchdog
{
  public:
    void add(cudaStream_t stream, int device, size_t timeout_ms, std::string what)
    {
        cudaEvent_t ev;
        cuda_check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
        cuda_check(cudaEventRecord(ev, stream), "cudaEventRecord");
        std::lock_guard<std::mutex> g(mu_);
        watches_.push_back(
            {ev, std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms),
             std::move(what), device});
        if (!thread_.joinable())
            thread_ = std::thread([this] { run(); });
        cv_.notify_one();
    }

  private:
    void run()
    {
        std::unique_lock<std::mutex> g(mu_);
        for (;;) {
            cv_.wait(g, [this] { return !watches_.empty(); });
            auto now = std::chrono::steady_clock::now();
            for (auto it = watches_.begin(); it != watches_.end();) {
                cudaSetDevice(it->device);
                cudaError_t q = cudaEventQuery(it->done);
                if (q == cudaSuccess) {
                    cudaEventDestroy(it->done);
                    it = watches_.erase(it);
                } else if (q == cudaErrorNotReady && now < it->deadline) {
                    ++it;
                } else {
                    std::fprintf(stderr, "ushmem: PE %d: %s\n", capi ? capi->my_pe() : -1,
                                 q == cudaErrorNotReady ? it->what.c_str() : cudaGetErrorString(q));
                    std::fflush(stderr);
                    if (capi)
                        capi->global_exit(1);
                    std::_Exit(1);
                }
            }
            g.unlock();
            std::this_thread::sleep_for(std::chrono::microseconds(500));
            g.lock();
        }
    }

    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Watch> watches_;
    std::thread thread_;
};

static Watchdog *watchdog()
{
    static Watchdog *w = new Watchdog(); // never destroyed: its thread lives to the end
    return w;
}

// ---- allocations ----

// Sync words per block: channel * n_pes + source PE must stay below this.
constexpr size_t kSyncWords = 8192;

struct Block {
    void *ptr;
    size_t size;    // what torch asked for
    size_t pad_off; // signal pad: ptr + pad_off, pad_size bytes, zeroed
    size_t pad_size;
    size_t sync_off; // sync words: ptr + sync_off, kSyncWords uint64, zeroed
    int device;
    std::optional<std::string> group; // alloc's group: rendezvous's default
};

// How many waits each block's sync words have seen (by word): what the next
// wait waits for. Dropped when the block is freed.
class WaitCounts
{
  public:
    uint64_t next(void *block, size_t word)
    {
        std::lock_guard<std::mutex> g(mu_);
        auto &v = counts_[block];
        if (v.empty())
            v.resize(kSyncWords);
        return ++v[word];
    }
    void drop(void *block)
    {
        std::lock_guard<std::mutex> g(mu_);
        counts_.erase(block);
    }

  private:
    std::mutex mu_;
    std::unordered_map<void *, std::vector<uint64_t>> counts_;
};

static WaitCounts wait_counts;

// What every group member publishes at rendezvous.
struct Card {
    int32_t pe;
    int32_t device;
    uint64_t buf_off; // offset in the device heap
    uint64_t size;
    uint64_t pad_off;  // of the pad, in the device heap
    uint64_t sync_off; // of the sync words, in the device heap
};

class UshmemPeerInfo : public c10::intrusive_ptr_target
{
  public:
    UshmemPeerInfo(const Block &b, const std::string &group_name)
        : device_(b.device), size_(b.size), pad_size_(b.pad_size), block_(b.ptr)
    {
        const ushmem_capi_t *u = api("rendezvous");
        c10::cuda::CUDAGuard guard(device_);
        auto group = c10d::resolve_process_group(group_name);
        rank_ = group->getRank();
        world_ = group->getSize();
        auto store = group->getStore();
        size_t boff = 0;
        TORCH_CHECK(u->heap_offset(b.ptr, &boff) == USHMEM_CAPI_MALLOC_DEVICE,
                    "ushmem symm_mem rendezvous: the block is not on the device heap");
        Card mine{u->my_pe(), device_, boff, b.size, boff + b.pad_off, boff + b.sync_off};
        uint64_t seq = next_seq(group_name);
        auto key = [&](uint64_t s, int r) {
            return "ushmem_symm/" + group_name + "/" + std::to_string(s) + "/" + std::to_string(r);
        };
        const uint8_t *mp = reinterpret_cast<const uint8_t *>(&mine);
        store->set(key(seq, rank_), std::vector<uint8_t>(mp, mp + sizeof mine));
        cards_.resize(world_);
        for (int r = 0; r < world_; r++) {
            if (r == rank_) {
                cards_[r] = mine;
                continue;
            }
            store->wait({key(seq, r)});
            auto v = store->get(key(seq, r));
            TORCH_CHECK(v.size() == sizeof(Card), "ushmem symm_mem rendezvous: rank ", r,
                        " published a record of ", v.size(), " bytes (another ushmem version?)");
            std::memcpy(&cards_[r], v.data(), sizeof(Card));
            TORCH_CHECK(cards_[r].size == b.size, "ushmem symm_mem rendezvous: rank ", r, " has a ",
                        cards_[r].size, "-byte buffer, this rank ", b.size,
                        ": symmetric tensors must be the same size on every rank");
        }
        // Everyone has read every record of rendezvous seq - 1 by now (they all
        // published seq), so this rank's older record can go.
        if (seq >= 1)
            store->deleteKey(key(seq - 1, rank_));
        direct_ = true;
        for (int r = 0; r < world_; r++) {
            ranks_.push_back(cards_[r].pe);
            if (r == rank_) {
                buffers_.push_back(b.ptr);
                pads_.push_back(static_cast<char *>(b.ptr) + b.pad_off);
                continue;
            }
            void *bp =
                u->ptr(u->heap_addr(cards_[r].buf_off, USHMEM_CAPI_MALLOC_DEVICE), cards_[r].pe);
            void *pp =
                u->ptr(u->heap_addr(cards_[r].pad_off, USHMEM_CAPI_MALLOC_DEVICE), cards_[r].pe);
            direct_ = direct_ && bp && pp;
            buffers_.push_back(bp); // NULL: a peer on another host (the proxy reaches it)
            pads_.push_back(pp);
        }
        size_t n = sizeof(void *) * world_;
        buffers_dev_ = static_cast<void **>(c10::cuda::CUDACachingAllocator::raw_alloc(n));
        pads_dev_ = static_cast<void **>(c10::cuda::CUDACachingAllocator::raw_alloc(n));
        ranks_dev_ =
            static_cast<int *>(c10::cuda::CUDACachingAllocator::raw_alloc(sizeof(int) * world_));
        cuda_check(cudaMemcpy(buffers_dev_, buffers_.data(), n, cudaMemcpyHostToDevice), "copy");
        cuda_check(cudaMemcpy(pads_dev_, pads_.data(), n, cudaMemcpyHostToDevice), "copy");
        cuda_check(
            cudaMemcpy(ranks_dev_, ranks_.data(), sizeof(int) * world_, cudaMemcpyHostToDevice),
            "copy");
    }

    ~UshmemPeerInfo() override
    {
        if (c10d::symmetric_memory::is_finalizing())
            return;
        c10::cuda::CUDACachingAllocator::raw_delete(buffers_dev_);
        c10::cuda::CUDACachingAllocator::raw_delete(pads_dev_);
        c10::cuda::CUDACachingAllocator::raw_delete(ranks_dev_);
    }

    // The address, in this PE's heap, of group rank r's sync word `word`: what
    // ushmem's calls take with r's PE number.
    uint64_t *sync_word(int r, size_t word) const
    {
        return static_cast<uint64_t *>(
            capi->heap_addr(cards_[r].sync_off + word * 8, USHMEM_CAPI_MALLOC_DEVICE));
    }

    int device_, rank_ = 0, world_ = 0;
    size_t size_, pad_size_;
    void *block_;
    bool direct_ = false;
    std::vector<Card> cards_;
    std::vector<int> ranks_;
    std::vector<void *> buffers_, pads_;
    void **buffers_dev_ = nullptr, **pads_dev_ = nullptr;
    int *ranks_dev_ = nullptr;

  private:
    static uint64_t next_seq(const std::string &group)
    {
        static std::mutex mu;
        static std::unordered_map<std::string, uint64_t> seqs;
        std::lock_guard<std::mutex> g(mu);
        return seqs[group]++;
    }
};

class UshmemSymmetricMemory : public SymmetricMemory
{
  public:
    UshmemSymmetricMemory(c10::intrusive_ptr<UshmemPeerInfo> info, size_t offset)
        : info_(std::move(info)), offset_(offset)
    {
    }

    // Without `override`: torch releases add and drop these (get_offset,
    // get_signal_pad_size, get_device, rank maps, world_within_direct_access); they override where
    // the installed header declares them and are plain methods elsewhere.
    std::vector<void *> get_buffer_ptrs() override
    {
        return info_->buffers_;
    }
    std::vector<void *> get_signal_pad_ptrs() override
    {
        return info_->pads_;
    }
    void **get_buffer_ptrs_dev() override
    {
        return info_->buffers_dev_;
    }
    void **get_signal_pad_ptrs_dev() override
    {
        return info_->pads_dev_;
    }
    size_t get_buffer_size() override
    {
        return info_->size_;
    }
    // A pure virtual in some releases, a plain method (torch's global size) in
    // others: this block's pad, as it was allocated.
    size_t get_signal_pad_size()
    {
        return info_->pad_size_;
    }
    size_t get_offset()
    {
        return offset_;
    }
    // Pure virtuals in older releases, torch's own methods (over the pointers
    // above) in newer ones, where these only hide them.
    at::Tensor get_buffer(int rank, c10::IntArrayRef sizes, c10::ScalarType dtype,
                          int64_t storage_offset)
    {
        return view(info_->buffers_, info_->size_, "get_buffer", rank, sizes, dtype,
                    storage_offset);
    }
    at::Tensor get_signal_pad(int rank, c10::IntArrayRef sizes,
                              std::optional<c10::ScalarType> dtype = std::nullopt,
                              int64_t storage_offset = 0)
    {
        c10::ScalarType t = dtype.value_or(USHMEM_PAD_DTYPE);
        std::vector<int64_t> whole;
        if (sizes.empty()) // the whole pad
            whole.push_back(static_cast<int64_t>(info_->pad_size_ / c10::elementSize(t)) -
                            storage_offset);
        return view(info_->pads_, info_->pad_size_, "get_signal_pad", rank,
                    sizes.empty() ? c10::IntArrayRef(whole) : sizes, t, storage_offset);
    }
    bool has_multicast_support() override
    {
        return false;
    }
    void *get_multicast_ptr() override
    {
        return nullptr;
    }
    int get_rank() override
    {
        return info_->rank_;
    }
    int get_world_size() override
    {
        return info_->world_;
    }
    c10::Device get_device()
    {
        return c10::Device(c10::DeviceType::CUDA, info_->device_);
    }
    const std::vector<int> &get_rank_to_global_rank()
    {
        return info_->ranks_;
    }
    int *get_rank_to_global_rank_dev()
    {
        return info_->ranks_dev_;
    }
    bool world_within_direct_access()
    {
        return info_->direct_;
    }
    const c10::intrusive_ptr<UshmemPeerInfo> &info() const
    {
        return info_;
    }
    // Group rank r's copy of this handle's tensor, plus byte off, as an address
    // of this PE's heap (for ushmem's calls with r's PE number), and that PE.
    void *peer_heap_addr(int r, size_t off) const
    {
        return capi->heap_addr(info_->cards_[r].buf_off + offset_ + off, USHMEM_CAPI_MALLOC_DEVICE);
    }
    int pe_of(int r) const
    {
        return info_->cards_[r].pe;
    }

    // Channel c's counter for source PE s: sync word c * n_pes + s, s the
    // source's ushmem PE (so groups that share a block never share a word).
    void put_signal(int dst_rank, int channel, size_t timeout_ms) override
    {
        (void)timeout_ms; // a signal never waits
        check(dst_rank, channel, "put_signal");
        c10::cuda::CUDAGuard guard(info_->device_);
        auto stream =
            reinterpret_cast<ushmem_capi_stream_t>(at::cuda::getCurrentCUDAStream().stream());
        size_t w = word(channel, info_->cards_[info_->rank_].pe);
        capi->signal_op_on_stream(info_->sync_word(dst_rank, w), 1, USHMEM_CAPI_SIGNAL_ADD,
                                  info_->cards_[dst_rank].pe, stream);
    }

    void wait_signal(int src_rank, int channel, size_t timeout_ms) override
    {
        check(src_rank, channel, "wait_signal");
        c10::cuda::CUDAGuard guard(info_->device_);
        cudaStream_t cs = at::cuda::getCurrentCUDAStream().stream();
        auto stream = reinterpret_cast<ushmem_capi_stream_t>(cs);
        int me = info_->rank_;
        size_t w = word(channel, info_->cards_[src_rank].pe);
        uint64_t count = wait_counts.next(info_->block_, w);
        capi->signal_wait_until_on_stream(info_->sync_word(me, w), USHMEM_CAPI_CMP_GE, count,
                                          stream);
        if (timeout_ms)
            watchdog()->add(cs, info_->device_, timeout_ms,
                            "symm_mem wait_signal: no signal from rank " +
                                std::to_string(src_rank) + " on channel " +
                                std::to_string(channel) + " within " + std::to_string(timeout_ms) +
                                " ms (rank " + std::to_string(me) + " of " +
                                std::to_string(info_->world_) + "); ending the job");
    }

    void barrier(int channel, size_t timeout_ms) override
    {
        int me = info_->rank_, n = info_->world_;
        for (int r = 0; r < n; r++)
            if (r != me)
                put_signal(r, channel, timeout_ms);
        for (int r = 0; r < n; r++)
            if (r != me)
                wait_signal(r, channel, timeout_ms);
    }

  private:
    static size_t word(int channel, int pe)
    {
        return static_cast<size_t>(channel) * static_cast<size_t>(capi->n_pes()) +
               static_cast<size_t>(pe);
    }

    void check(int rank, int channel, const char *call) const
    {
        api(call);
        TORCH_CHECK(rank >= 0 && rank < info_->world_, "ushmem symm_mem ", call, ": rank ", rank,
                    " is not in [0, ", info_->world_, ")");
        TORCH_CHECK(rank != info_->rank_, "ushmem symm_mem ", call, ": rank ", rank,
                    " is this rank");
        TORCH_CHECK(channel >= 0, "ushmem symm_mem ", call, ": channel ", channel, " is negative");
        TORCH_CHECK(word(channel, capi->n_pes() - 1) < kSyncWords, "ushmem symm_mem ", call,
                    ": channel ", channel, " is too large: channels times ", capi->n_pes(),
                    " PEs must stay below ", kSyncWords);
    }

    c10::intrusive_ptr<UshmemPeerInfo> info_;
    size_t offset_;

  private:
    at::Tensor view(const std::vector<void *> &ptrs, size_t bytes, const char *call, int rank,
                    c10::IntArrayRef sizes, c10::ScalarType dtype, int64_t storage_offset)
    {
        TORCH_CHECK(rank >= 0 && rank < info_->world_, "ushmem symm_mem ", call, ": rank ", rank,
                    " is not in [0, ", info_->world_, ")");
        TORCH_CHECK(ptrs[rank] != nullptr, "ushmem symm_mem ", call, ": rank ", rank,
                    " is on another host (no mapping; use torch.ops.ushmem.put/get)");
        int64_t n = c10::multiply_integers(sizes);
        size_t es = c10::elementSize(dtype);
        TORCH_CHECK(storage_offset >= 0 && n >= 0 &&
                        (static_cast<size_t>(storage_offset) + static_cast<size_t>(n)) * es <=
                            bytes,
                    "ushmem symm_mem ", call, ": ", n, " elements of ", es, " bytes at offset ",
                    storage_offset, " run past the ", bytes, "-byte region");
        auto opts = at::TensorOptions().dtype(dtype).device(at::kCUDA, info_->device_);
        return at::from_blob(static_cast<char *>(ptrs[rank]) + storage_offset * es, sizes, opts);
    }
};

class UshmemAllocator : public SymmetricMemoryAllocator
{
  public:
    void *alloc(size_t size, int device_idx, const std::optional<std::string> &group_name) override
    {
        const ushmem_capi_t *u = api("alloc");
        check_device(device_idx);
        c10::cuda::CUDAGuard guard(device_idx);
        std::lock_guard<std::mutex> g(mu_);
        reap(false);
        size_t pad = pad_pick::signal_pad_size();
        size_t pad_off = round_up(size ? size : 1, 256);
        size_t sync_off = round_up(pad_off + pad, 256);
        size_t total = sync_off + kSyncWords * 8;
        void *p = u->malloc_local(total, 256, USHMEM_CAPI_MALLOC_DEVICE);
        if (!p && !pending_.empty()) { // blocks still waiting for their streams
            reap(true);
            p = u->malloc_local(total, 256, USHMEM_CAPI_MALLOC_DEVICE);
        }
        TORCH_CHECK(p != nullptr, "ushmem symm_mem alloc: no room for ", size,
                    " bytes in the local part of the device heap (its line above says why; "
                    "raise USHMEM_DEVICE_LOCAL_HEAP_SIZE / USHMEM_DEVICE_HEAP_SIZE before "
                    "enable())");
        cudaStream_t side = zero_stream();
        cuda_check(cudaMemsetAsync(static_cast<char *>(p) + pad_off, 0, total - pad_off, side),
                   "memset");
        cuda_check(cudaStreamSynchronize(side), "memset");
        blocks_[p] = Block{p, size, pad_off, pad, sync_off, device_idx, group_name};
        return p;
    }

    // Never waits for a peer (torch frees from garbage collection): the block
    // goes back once the work queued on the current stream is done.
    void free(void *ptr) override
    {
        if (c10d::symmetric_memory::is_finalizing() || !capi || !capi->initialized())
            return;
        std::lock_guard<std::mutex> g(mu_);
        auto it = blocks_.find(ptr);
        if (it == blocks_.end())
            return;
        c10::cuda::CUDAGuard guard(it->second.device);
        cudaEvent_t ev;
        cuda_check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
        cuda_check(cudaEventRecord(ev, at::cuda::getCurrentCUDAStream().stream()),
                   "cudaEventRecord");
        pending_.push_back({ptr, ev});
        wait_counts.drop(ptr);
        for (auto s = handles_.begin(); s != handles_.end();)
            s = s->first.first == ptr ? handles_.erase(s) : std::next(s);
        blocks_.erase(it);
        reap(false);
    }

    size_t get_alloc_size(void *ptr) override
    {
        std::lock_guard<std::mutex> g(mu_);
        auto it = blocks_.find(ptr);
        TORCH_CHECK(it != blocks_.end(), "ushmem symm_mem: ", ptr,
                    " was not allocated by the USHMEM backend");
        return it->second.size;
    }

    // For torch.ops.ushmem: where PE pe's copy of [ptr, ptr + nbytes) is, as an
    // address of this PE's heap (what ushmem's calls take with pe), from any
    // rendezvous of ptr's block that includes pe.
    void *peer_addr(const void *ptr, size_t nbytes, int pe, const char *call)
    {
        std::lock_guard<std::mutex> g(mu_);
        const Block *b = find(const_cast<void *>(ptr));
        TORCH_CHECK(b != nullptr, "ushmem.", call,
                    ": the tensor is not in a block of the "
                    "USHMEM backend (symm_mem.empty after enable())");
        size_t off = static_cast<const char *>(ptr) - static_cast<const char *>(b->ptr);
        TORCH_CHECK(off + nbytes <= b->size, "ushmem.", call, ": ", nbytes, " bytes at offset ",
                    off, " run past the ", b->size, "-byte block");
        for (auto &h : handles_) {
            if (h.first.first != b->ptr)
                continue;
            for (int r = 0; r < h.second->get_world_size(); r++)
                if (h.second->pe_of(r) == pe)
                    return h.second->peer_heap_addr(r, off);
        }
        TORCH_CHECK(false, "ushmem.", call, ": PE ", pe,
                    " is in no rendezvous of this tensor "
                    "(symm_mem.rendezvous it on a group holding that rank first)");
        return nullptr; // not reached (older TORCH_CHECKs are not noreturn)
    }

    bool has_allocation(void *ptr)
    {
        std::lock_guard<std::mutex> g(mu_);
        return find(ptr) != nullptr;
    }

    c10::intrusive_ptr<SymmetricMemory>
    rendezvous(void *ptr, const std::optional<std::string> &group_name) override
    {
        return handle(ptr, group_name);
    }

    // rendezvous with the backend's own type (the ops read the peers' records).
    c10::intrusive_ptr<UshmemSymmetricMemory> handle(void *ptr,
                                                     const std::optional<std::string> &group_name)
    {
        api("rendezvous");
        std::unique_lock<std::mutex> g(mu_);
        const Block *b = find(ptr);
        TORCH_CHECK(b != nullptr, "ushmem symm_mem rendezvous: ", ptr,
                    " is not in a block of the USHMEM backend");
        Block blk = *b;
        // torch passes no group when the tensor was made for one (empty(group=...))
        std::string group = group_name ? *group_name : blk.group.value_or("");
        TORCH_CHECK(!group.empty(), "ushmem symm_mem rendezvous: no group: name one here or "
                                    "when allocating");
        auto key = std::make_pair(blk.ptr, group);
        auto it = handles_.find(key);
        c10::intrusive_ptr<UshmemSymmetricMemory> base;
        if (it != handles_.end()) {
            base = it->second;
        } else {
            g.unlock(); // the exchange waits for peers: not under the lock
            auto info = c10::make_intrusive<UshmemPeerInfo>(blk, group);
            base = c10::make_intrusive<UshmemSymmetricMemory>(info, 0);
            g.lock();
            handles_[key] = base;
        }
        size_t off = static_cast<char *>(ptr) - static_cast<char *>(blk.ptr);
        if (off == 0)
            return base;
        return c10::make_intrusive<UshmemSymmetricMemory>(base->info(), off);
    }

    bool has_multicast_support(int device_idx) override
    {
        (void)device_idx;
        return false;
    }
    c10::DeviceType supported_device_type() override
    {
        return c10::DeviceType::CUDA;
    }
    std::string name() override
    {
        return "USHMEM";
    }

  private:
    struct Pending {
        void *ptr;
        cudaEvent_t done;
    };

    const Block *find(void *ptr)
    {
        auto it = blocks_.upper_bound(ptr);
        if (it == blocks_.begin())
            return nullptr;
        --it;
        auto p = reinterpret_cast<uintptr_t>(ptr), b = reinterpret_cast<uintptr_t>(it->first);
        return p < b + it->second.size ? &it->second : nullptr;
    }

    // Give back deferred blocks whose streams are done (all of them: wait).
    void reap(bool wait)
    {
        for (auto it = pending_.begin(); it != pending_.end();) {
            if (wait)
                cudaEventSynchronize(it->done);
            if (cudaEventQuery(it->done) == cudaSuccess) {
                cudaEventDestroy(it->done);
                capi->free_local(it->ptr);
                it = pending_.erase(it);
            } else {
                ++it;
            }
        }
    }

    void check_device(int device_idx)
    {
        if (heap_device_ < 0) {
            void *base = capi->heap_addr(0, USHMEM_CAPI_MALLOC_DEVICE);
            TORCH_CHECK(base != nullptr, "ushmem symm_mem alloc: this PE has no device heap "
                                         "(no CUDA device was bound at ushmem's init)");
            cudaPointerAttributes a{};
            cuda_check(cudaPointerGetAttributes(&a, base), "cudaPointerGetAttributes");
            heap_device_ = a.device;
        }
        TORCH_CHECK(device_idx == heap_device_, "ushmem symm_mem alloc: cuda:", device_idx,
                    " asked for, but this PE's device heap is on cuda:", heap_device_);
    }

    cudaStream_t zero_stream()
    {
        if (!zero_)
            cuda_check(cudaStreamCreateWithFlags(&zero_, cudaStreamNonBlocking), "stream");
        return zero_;
    }

    std::mutex mu_;
    std::map<void *, Block> blocks_;
    std::deque<Pending> pending_;
    std::map<std::pair<void *, std::string>, c10::intrusive_ptr<UshmemSymmetricMemory>> handles_;
    int heap_device_ = -1;
    cudaStream_t zero_ = nullptr;
};

// ---- what torch.ops.ushmem uses (_torch_symm_mem.h) ----

static c10::intrusive_ptr<UshmemAllocator> &allocator()
{
    static auto *a =
        new c10::intrusive_ptr<UshmemAllocator>(c10::make_intrusive<UshmemAllocator>());
    return *a;
}

void *peer_addr(const void *ptr, size_t nbytes, int pe, const char *call)
{
    return allocator()->peer_addr(ptr, nbytes, pe, call);
}

c10::intrusive_ptr<SymmetricMemory> handle_of(void *ptr, const std::string &group)
{
    return allocator()->handle(ptr, group);
}

// Every handle of this backend is an UshmemSymmetricMemory (handle_of makes them).
static UshmemSymmetricMemory &ours(SymmetricMemory &h)
{
    return static_cast<UshmemSymmetricMemory &>(h);
}
size_t handle_offset(SymmetricMemory &h)
{
    return ours(h).get_offset();
}
bool handle_direct(SymmetricMemory &h)
{
    return ours(h).world_within_direct_access();
}
int handle_pe(SymmetricMemory &h, int r)
{
    return ours(h).pe_of(r);
}
void *handle_peer_addr(SymmetricMemory &h, int r, size_t off)
{
    return ours(h).peer_heap_addr(r, off);
}

} // namespace ushmem_symm

// The Python module hands the package's capsule table over before use.
extern "C" __attribute__((visibility("default"))) int ushmem_symm_mem_set_capi(const void *table)
{
    auto t = static_cast<const ushmem_capi_t *>(table);
    if (!t || t->version < 1 || t->size < sizeof(ushmem_capi_t))
        return -1;
    ushmem_symm::capi = t;
    return 0;
}

namespace
{
// "USHMEM" is registered when the extension is loaded, as torch's backends are.
struct Register {
    Register()
    {
        c10d::symmetric_memory::register_availability("USHMEM", ushmem_symm::allocator());
    }
};
Register register_ushmem;
} // namespace
