/* ushmem device API: CUDA kernels put, get, signal, wait and synchronize on the
 * device symmetric heap themselves. docs/device.md is the user guide.
 *
 * Header only, with no device globals: every function is static and inline,
 * and everything a kernel needs comes in the handle (shmemx_dev_t, filled on
 * the host by shmemx_dev_get or shmemx_team_dev_get and passed by value:
 * `__global__ void k(const __grid_constant__ shmemx_dev_t d, ...)`). So it
 * compiles with nvcc with and without -rdc, with NVRTC and with clang CUDA, and
 * works in modules loaded with cuModuleLoad with nothing to register.
 *
 * PE numbers are relative to the handle's team (the world handle: world PEs).
 * Suffixes: none = one thread; _warp = all 32 lanes of a warp call it together;
 * _block = every thread of the CTA calls it together.
 *
 * Memory model (docs/device.md): data moves with plain (weak) loads and stores
 * through the peer's mapping; putmem_signal syncs the group and one thread
 * publishes the signal with a system-scope release; waits are system-scope
 * acquire loads of the caller's own memory; quiet is a system-scope fence.
 * System scope is used for every peer, the same GPU included, except in
 * barriers and collectives where the whole job is on this GPU (GPU scope: see
 * the barrier). AMOs are relaxed system-scope
 * atomics, the same instructions the host API uses on device memory, so the
 * two are atomic with each other.
 *
 * Device-side waits (wait_until, signal_wait_until, barriers) need every
 * waiting PE's peers to make progress while it spins. They are allowed when no
 * two PEs share a GPU, or under MPS when the SM shares on each GPU sum to at
 * most the GPU; otherwise the first such wait prints one line and traps
 * (shmemx_dev_why() gives the reason on the host; USHMEM_DEVICE_WAIT=timesliced
 * allows them, slow but correct). RMA, AMOs and signals are always allowed.
 *
 * Define SHMEMX_DEVICE_CHECKS before including to check that every symmetric
 * address lies in the device heap (a trap with a message if not). */
#ifndef SHMEMX_DEVICE_CUH
#define SHMEMX_DEVICE_CUH

#include "shmemx_device_types.h"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__) || (defined(__clang__) && defined(__CUDA__))

#if defined(__clang__) && defined(__CUDA__) && !defined(__CUDACC__) && !defined(__device__)
/* clang -nocudainc: no CUDA headers, so the attributes by hand. */
#define __device__      __attribute__((device))
#define __global__      __attribute__((global))
#define __forceinline__ __inline__ __attribute__((always_inline))
extern "C" __device__ int printf(const char *, ...);
#endif

#if !defined(__CUDACC_RTC__)
#include <stddef.h>
#include <stdio.h> /* device printf (NVRTC has it built in) */
#endif

#define SHMEMX_DEV_FN static __forceinline__ __device__

/* For the handle parameter: `const SHMEMX_GRID_CONSTANT shmemx_dev_t d` (no
 * copy to local memory when a function takes its address), where supported. */
#if defined(__grid_constant__) || defined(__CUDACC_RTC__)
#define SHMEMX_GRID_CONSTANT __grid_constant__
#else
#define SHMEMX_GRID_CONSTANT
#endif

/* ---- primitives: inline PTX, one place to audit ---- */

SHMEMX_DEV_FN unsigned ushmemi_dev_tid(void)
{
    unsigned x, y, z, nx, ny;
    asm("mov.u32 %0, %%tid.x;" : "=r"(x));
    asm("mov.u32 %0, %%tid.y;" : "=r"(y));
    asm("mov.u32 %0, %%tid.z;" : "=r"(z));
    asm("mov.u32 %0, %%ntid.x;" : "=r"(nx));
    asm("mov.u32 %0, %%ntid.y;" : "=r"(ny));
    return x + nx * (y + ny * z);
}
SHMEMX_DEV_FN unsigned ushmemi_dev_ntid(void)
{
    unsigned x, y, z;
    asm("mov.u32 %0, %%ntid.x;" : "=r"(x));
    asm("mov.u32 %0, %%ntid.y;" : "=r"(y));
    asm("mov.u32 %0, %%ntid.z;" : "=r"(z));
    return x * y * z;
}
SHMEMX_DEV_FN unsigned ushmemi_dev_lane(void)
{
    unsigned l;
    asm("mov.u32 %0, %%laneid;" : "=r"(l));
    return l;
}
SHMEMX_DEV_FN uint64_t ushmemi_dev_clock_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
SHMEMX_DEV_FN void ushmemi_dev_trap(void)
{
    asm volatile("trap;" ::: "memory");
    __builtin_unreachable();
}
SHMEMX_DEV_FN void ushmemi_dev_nanosleep(unsigned ns)
{
    asm volatile("nanosleep.u32 %0;" ::"r"(ns));
}
SHMEMX_DEV_FN void ushmemi_dev_fence_sc(void)
{
    asm volatile("fence.sc.sys;" ::: "memory");
}
SHMEMX_DEV_FN void ushmemi_dev_fence_acq_rel(void)
{
    asm volatile("fence.acq_rel.sys;" ::: "memory");
}
SHMEMX_DEV_FN void ushmemi_dev_bar_block(void)
{
    asm volatile("bar.sync 0;" ::: "memory");
}
SHMEMX_DEV_FN void ushmemi_dev_bar_warp(void)
{
    asm volatile("bar.warp.sync 0xffffffff;" ::: "memory");
}
/* GPU scope, for barriers whose every PE is on this GPU (SHMEMX_DEV_F_ONE_GPU) */
SHMEMX_DEV_FN void ushmemi_dev_fence_sc_gpu(void)
{
    asm volatile("fence.sc.gpu;" ::: "memory");
}
SHMEMX_DEV_FN void ushmemi_dev_fence_acq_rel_gpu(void)
{
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
}
SHMEMX_DEV_FN uint64_t ushmemi_dev_ld_acquire64_gpu(const volatile void *p)
{
    uint64_t v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
SHMEMX_DEV_FN uint64_t ushmemi_dev_ld_acquire64(const volatile void *p)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
/* The barriers' acquire: GPU scope where gpu (SHMEMX_DEV_F_ONE_GPU), else system. */
SHMEMX_DEV_FN uint64_t ushmemi_dev_ld_acquire64_scoped(const volatile void *p, bool gpu)
{
    return gpu ? ushmemi_dev_ld_acquire64_gpu(p) : ushmemi_dev_ld_acquire64(p);
}
SHMEMX_DEV_FN uint32_t ushmemi_dev_ld_acquire32(const volatile void *p)
{
    uint32_t v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
SHMEMX_DEV_FN uint64_t ushmemi_dev_ld_relaxed64(const volatile void *p)
{
    uint64_t v;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
SHMEMX_DEV_FN uint32_t ushmemi_dev_ld_relaxed32(const volatile void *p)
{
    uint32_t v;
    asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
SHMEMX_DEV_FN void ushmemi_dev_st_release64(volatile void *p, uint64_t v)
{
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
SHMEMX_DEV_FN void ushmemi_dev_st_relaxed64(volatile void *p, uint64_t v)
{
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
SHMEMX_DEV_FN void ushmemi_dev_red_release_add64(volatile void *p, uint64_t v)
{
    asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
SHMEMX_DEV_FN void ushmemi_dev_red_relaxed_add64(volatile void *p, uint64_t v)
{
    asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
/* volatile: NVVM takes a non-volatile asm for a pure function it may execute
 * ahead of its branch. This load is on the rare path, after the PE's range
 * check; hoisted out of a loop of puts it read the table at a bad PE's index
 * before the check could trap (PTX, 2026-12-06). */
SHMEMX_DEV_FN uint64_t ushmemi_dev_ld_nc64(const void *p)
{
    uint64_t v;
    asm volatile("ld.global.nc.u64 %0, [%1];" : "=l"(v) : "l"(p));
    return v;
}

/* AMO codes; the host API's device-memory AMOs (src/transport/cuda/kernels.cu)
 * use this same function with the same codes (USHMEMI_KAMO_*). */
enum {
    USHMEMI_DEV_AMO_FETCH = 0,
    USHMEMI_DEV_AMO_SET = 1,
    USHMEMI_DEV_AMO_SWAP = 2,
    USHMEMI_DEV_AMO_CSWAP = 3,
    USHMEMI_DEV_AMO_ADD = 4,
    USHMEMI_DEV_AMO_AND = 5,
    USHMEMI_DEV_AMO_OR = 6,
    USHMEMI_DEV_AMO_XOR = 7,
};

/* One relaxed system-scope atomic on a 4- or 8-byte word (bit patterns);
 * returns the old value (FETCH: the value; SET: 0). */
SHMEMX_DEV_FN uint32_t ushmemi_dev_amo32(void *p, int op, uint32_t v, uint32_t c)
{
    uint32_t old = 0;
    switch (op) {
    case USHMEMI_DEV_AMO_FETCH: old = ushmemi_dev_ld_relaxed32(p); break;
    case USHMEMI_DEV_AMO_SET:
        asm volatile("st.relaxed.sys.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
        break;
    case USHMEMI_DEV_AMO_SWAP:
        asm volatile("atom.relaxed.sys.global.exch.b32 %0, [%1], %2;"
                     : "=r"(old)
                     : "l"(p), "r"(v)
                     : "memory");
        break;
    case USHMEMI_DEV_AMO_CSWAP:
        asm volatile("atom.relaxed.sys.global.cas.b32 %0, [%1], %2, %3;"
                     : "=r"(old)
                     : "l"(p), "r"(c), "r"(v)
                     : "memory");
        break;
    case USHMEMI_DEV_AMO_ADD:
        asm volatile("atom.relaxed.sys.global.add.u32 %0, [%1], %2;"
                     : "=r"(old)
                     : "l"(p), "r"(v)
                     : "memory");
        break;
    case USHMEMI_DEV_AMO_AND:
        asm volatile("atom.relaxed.sys.global.and.b32 %0, [%1], %2;"
                     : "=r"(old)
                     : "l"(p), "r"(v)
                     : "memory");
        break;
    case USHMEMI_DEV_AMO_OR:
        asm volatile("atom.relaxed.sys.global.or.b32 %0, [%1], %2;"
                     : "=r"(old)
                     : "l"(p), "r"(v)
                     : "memory");
        break;
    case USHMEMI_DEV_AMO_XOR:
        asm volatile("atom.relaxed.sys.global.xor.b32 %0, [%1], %2;"
                     : "=r"(old)
                     : "l"(p), "r"(v)
                     : "memory");
        break;
    }
    return old;
}

SHMEMX_DEV_FN uint64_t ushmemi_dev_amo64(void *p, int op, uint64_t v, uint64_t c)
{
    uint64_t old = 0;
    switch (op) {
    case USHMEMI_DEV_AMO_FETCH: old = ushmemi_dev_ld_relaxed64(p); break;
    case USHMEMI_DEV_AMO_SET: ushmemi_dev_st_relaxed64(p, v); break;
    case USHMEMI_DEV_AMO_SWAP:
        asm volatile("atom.relaxed.sys.global.exch.b64 %0, [%1], %2;"
                     : "=l"(old)
                     : "l"(p), "l"(v)
                     : "memory");
        break;
    case USHMEMI_DEV_AMO_CSWAP:
        asm volatile("atom.relaxed.sys.global.cas.b64 %0, [%1], %2, %3;"
                     : "=l"(old)
                     : "l"(p), "l"(c), "l"(v)
                     : "memory");
        break;
    case USHMEMI_DEV_AMO_ADD:
        asm volatile("atom.relaxed.sys.global.add.u64 %0, [%1], %2;"
                     : "=l"(old)
                     : "l"(p), "l"(v)
                     : "memory");
        break;
    case USHMEMI_DEV_AMO_AND:
        asm volatile("atom.relaxed.sys.global.and.b64 %0, [%1], %2;"
                     : "=l"(old)
                     : "l"(p), "l"(v)
                     : "memory");
        break;
    case USHMEMI_DEV_AMO_OR:
        asm volatile("atom.relaxed.sys.global.or.b64 %0, [%1], %2;"
                     : "=l"(old)
                     : "l"(p), "l"(v)
                     : "memory");
        break;
    case USHMEMI_DEV_AMO_XOR:
        asm volatile("atom.relaxed.sys.global.xor.b64 %0, [%1], %2;"
                     : "=l"(old)
                     : "l"(p), "l"(v)
                     : "memory");
        break;
    }
    return old;
}

/* ---- thread groups ---- */

struct shmemx_dev_thread_group {
    __device__ __forceinline__ unsigned rank() const
    {
        return 0;
    }
    __device__ __forceinline__ unsigned size() const
    {
        return 1;
    }
    __device__ __forceinline__ void sync() const {}
};
struct shmemx_dev_warp_group {
    __device__ __forceinline__ unsigned rank() const
    {
        return ushmemi_dev_lane();
    }
    __device__ __forceinline__ unsigned size() const
    {
        return 32;
    }
    __device__ __forceinline__ void sync() const
    {
        ushmemi_dev_bar_warp();
    }
};
struct shmemx_dev_block_group {
    __device__ __forceinline__ unsigned rank() const
    {
        return ushmemi_dev_tid();
    }
    __device__ __forceinline__ unsigned size() const
    {
        return ushmemi_dev_ntid();
    }
    __device__ __forceinline__ void sync() const
    {
        ushmemi_dev_bar_block();
    }
};
/* A group of one thread (its sync is nothing): the put takes another order.
 * Functions, not a trait's static member: NVRTC would emit that as a global. */
template <typename G> SHMEMX_DEV_FN constexpr bool ushmemi_dev_one(G)
{
    return false;
}
SHMEMX_DEV_FN constexpr bool ushmemi_dev_one(shmemx_dev_thread_group)
{
    return true;
}

/* ---- handle checks and address translation ---- */

SHMEMX_DEV_FN void ushmemi_dev_check_handle(const shmemx_dev_t &d, const char *call)
{
    if (d.magic != SHMEMX_DEV_MAGIC || d.version != SHMEMX_DEV_VERSION) {
        printf("ushmem: %s: the device handle is not valid (magic 0x%x, version %u; this header "
               "is version %u): pass the shmemx_dev_t filled by shmemx_dev_get()\n",
               call, d.magic, d.version, SHMEMX_DEV_VERSION);
        ushmemi_dev_trap();
    }
}

SHMEMX_DEV_FN void ushmemi_dev_check_sym(const shmemx_dev_t &d, const void *sym, size_t n,
                                         const char *call)
{
#ifdef SHMEMX_DEVICE_CHECKS
    uint64_t off = (uint64_t)(uintptr_t)sym - d.heap_base;
    if (off >= d.heap_size || n > d.heap_size - off) {
        printf("ushmem: PE %d: %s: %p (%llu bytes) is not a symmetric device-heap address "
               "(heap [0x%llx, +%llu))\n",
               d.world_pe, call, sym, (unsigned long long)n, (unsigned long long)d.heap_base,
               (unsigned long long)d.heap_size);
        ushmemi_dev_trap();
    }
#else
    (void)d, (void)sym, (void)n, (void)call;
#endif
}

/* World PE of team PE pe, after a range check. */
SHMEMX_DEV_FN int ushmemi_dev_world(const shmemx_dev_t &d, int pe, const char *call)
{
    if ((unsigned)pe >= (unsigned)d.n_pes) {
        ushmemi_dev_check_handle(d, call);
        printf("ushmem: PE %d: %s: PE %d is out of range (the team has %d PEs)\n", d.world_pe, call,
               pe, d.n_pes);
        ushmemi_dev_trap();
    }
    return d.team_start + pe * d.team_stride;
}

/* Base of world PE w's device heap as mapped here, 0 when it is not mapped:
 * from the handle's own copy where it holds w (the constant bank when the
 * handle is a __grid_constant__ parameter), else from the table. */
SHMEMX_DEV_FN uint64_t ushmemi_dev_base(const shmemx_dev_t &d, int w)
{
    if (w == d.world_pe)
        return d.heap_base; /* the own heap, never a second mapping of it */
    unsigned i = (unsigned)(w - d.near_first);
    if (i < (unsigned)d.near_n)
        return d.near_base[i];
    return ushmemi_dev_ld_nc64((const uint64_t *)(uintptr_t)d.peer_base + w);
}

SHMEMX_DEV_FN void ushmemi_dev_need_atomics(const shmemx_dev_t &d, int pe, const char *call)
{
    if (!(d.flags & SHMEMX_DEV_F_PEER_ATOMICS) && d.team_start + pe * d.team_stride != d.world_pe) {
        printf("ushmem: PE %d: %s: the GPUs of this job lack native peer-to-peer atomics, so "
               "device atomics on other PEs are off (use the host API's atomics)\n",
               d.world_pe, call);
        ushmemi_dev_trap();
    }
}

/* The hot half of every translation: world PE *wp of team PE pe and, when the
 * handle itself holds it (the own heap, or near_base: the constant bank when
 * the handle is a __grid_constant__ parameter), the base of its heap here.
 * Selects only: every handle word is read up front (independent loads) and the
 * one indexed load is the only step the base waits for. False (pe out of
 * range, beyond near_base, or not mapped) sends the caller to its rare path;
 * *base is then meaningless. */
SHMEMX_DEV_FN bool ushmemi_dev_base_fast(const shmemx_dev_t &d, int pe, int *wp, uint64_t *base)
{
    const int w = d.team_start + pe * d.team_stride;
    const unsigned i = (unsigned)(w - d.near_first);
    const bool near = i < (unsigned)d.near_n, self = w == d.world_pe;
    const uint64_t nb = d.near_base[near ? i : 0], hb = d.heap_base;
    const uint64_t b = self ? hb : nb;
    *wp = w;
    *base = b;
    /* & on purpose: && would be branches */
    return (self | near) & ((unsigned)pe < (unsigned)d.n_pes) & (b != 0);
}

/* The rare path of ushmemi_dev_route: traps for a bad PE, a bad address (with
 * SHMEMX_DEVICE_CHECKS) or a refused atomic, the base from the device table
 * beyond near_base, NULL for a PE the proxy reaches. */
SHMEMX_DEV_FN char *ushmemi_dev_route_rare(const shmemx_dev_t &d, const void *sym, size_t n, int pe,
                                           const char *call, int wp, bool amo)
{
    (void)ushmemi_dev_world(d, pe, call); /* traps with the range message */
    ushmemi_dev_check_sym(d, sym, n, call);
    const uint64_t base = ushmemi_dev_base(d, wp);
    if (base == 0) {
        if (d.proxy != 0)
            return 0;
        ushmemi_dev_check_handle(d, call);
        printf("ushmem: PE %d: %s: PE %d's device heap is not mapped on this GPU (no peer access "
               "between the GPUs); use the host or stream API for it\n",
               d.world_pe, call, wp);
        ushmemi_dev_trap();
    }
    if (amo)
        ushmemi_dev_need_atomics(d, pe, call);
    return (char *)(uintptr_t)(base + ((uint64_t)(uintptr_t)sym - d.heap_base));
}

/* The hot path of a translation: true and *r, the peer's copy of sym, when
 * ushmemi_dev_base_fast finds pe's heap and nothing else is in question; false
 * sends the caller to ushmemi_dev_route_rare. *w: pe as a world PE. amo: the
 * caller updates the word atomically (refused on GPUs without peer atomics). */
SHMEMX_DEV_FN bool ushmemi_dev_route_fast(const shmemx_dev_t &d, const void *sym, size_t n, int pe,
                                          int *w, bool amo, char **r)
{
    uint64_t base;
    const uint64_t off = (uint64_t)(uintptr_t)sym - d.heap_base;
    bool ok = ushmemi_dev_base_fast(d, pe, w, &base);
    if (amo)
        ok &= (*w == d.world_pe) | ((d.flags & SHMEMX_DEV_F_PEER_ATOMICS) != 0);
#ifdef SHMEMX_DEVICE_CHECKS
    ok &= (off < d.heap_size) & (n <= d.heap_size - off);
#else
    (void)n;
#endif
    *r = (char *)(uintptr_t)(base + off);
    return ok;
}

/* The peer's copy of [sym, sym+n); NULL when pe's heap is not mapped here but
 * the proxy reaches it (another host: the caller hands the operation to the
 * ring); a trap naming the call when neither. *w: pe as a world PE.
 * The hot path is ushmemi_dev_route_fast and one rarely taken branch: a
 * one-thread call (an AMO, a signal) waits for the indexed near_base load and
 * a few integer steps; the rare cases (the table beyond near_base, the proxy,
 * the traps) lie off that path (bench_dev_probe E4). Calls where one thread's
 * latency is the cost (AMOs, signals, p, g) take the two halves themselves,
 * so that the proxy's branch is off the hot path too. */
SHMEMX_DEV_FN char *ushmemi_dev_route(const shmemx_dev_t &d, const void *sym, size_t n, int pe,
                                      const char *call, int *w, bool amo = false)
{
    char *r;
    if (__builtin_expect(ushmemi_dev_route_fast(d, sym, n, pe, w, amo, &r), 1))
        return r;
    return ushmemi_dev_route_rare(d, sym, n, pe, call, *w, amo);
}

/* ---- reverse offload: the request ring (ushmemi_dev_ring_t) ----
 * A request for an unmapped PE goes to this PE's proxy thread, which carries
 * it out over MPI; the thread takes requests in ticket order, so one thread's
 * requests to one PE are applied in its program order. */

SHMEMX_DEV_FN const ushmemi_dev_ring_t *ushmemi_dev_ring(const shmemx_dev_t &d)
{
    return (const ushmemi_dev_ring_t *)(uintptr_t)d.proxy;
}

SHMEMX_DEV_FN uint64_t ushmemi_dev_req(unsigned op, size_t len, unsigned aux, int w)
{
    return USHMEMI_REQ_W0(op, len, aux, w);
}

/* While a request waits (for room in the ring, or for its answer): every
 * ~10 ms the proxy's and the job's abort words, and the wait timeout. */
SHMEMX_DEV_FN void ushmemi_dev_ring_tick(const shmemx_dev_t &d, const ushmemi_dev_ring_t *r,
                                         uint64_t *t0, uint64_t *polled, int w, const char *call)
{
    uint64_t now = ushmemi_dev_clock_ns();
    if (*t0 == 0) {
        *t0 = *polled = now;
        return;
    }
    if (now - *polled < 10000000ull)
        return;
    *polled = now;
    int why = ushmemi_dev_ld_relaxed64((const void *)(uintptr_t)r->abort_word)                  ? 1
              : d.abort_flag && ushmemi_dev_ld_relaxed32((const void *)(uintptr_t)d.abort_flag) ? 2
              : d.wait_timeout_ns && now - *t0 > d.wait_timeout_ns                              ? 3
                                                                                                : 0;
    if (!why)
        return;
    printf("ushmem: PE %d: %s: request for PE %d abandoned: %s\n", d.world_pe, call, w,
           why == 1   ? "the proxy thread stopped (finalize, or the job is ending)"
           : why == 2 ? "the job is ending (finalize or global_exit)"
                      : "no answer from the proxy within USHMEM_DEVICE_WAIT_TIMEOUT");
    ushmemi_dev_trap();
}

/* A request's 7 payload words as named fields, not an array: a request built
 * in place (the quiet's) then stays in registers; an array, even indexed with
 * constants only, was kept in local memory and zeroed on every quiet before
 * its proxy check. */
struct ushmemi_dev_req_words {
    uint64_t w0, w1, w2, w3, w4, w5, w6;
};

/* Takes a ticket, waits for its slot's previous lap to be released (only the
 * thread whose ticket equals free_cache reads free_upto over the bus and
 * raises free_cache for those behind it), fills the slot, then its seq. */
SHMEMX_DEV_FN uint64_t ushmemi_dev_ring_send(const shmemx_dev_t &d, const ushmemi_dev_req_words &q,
                                             int w, const char *call)
{
    const ushmemi_dev_ring_t *r = ushmemi_dev_ring(d);
    uint64_t *head = (uint64_t *)(uintptr_t)r->head;
    uint64_t *free_cache = (uint64_t *)(uintptr_t)r->free_cache;
    uint64_t t, t0 = 0, polled = 0;
    unsigned ns = 32;
    asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], 1;" : "=l"(t) : "l"(head) : "memory");
    for (;;) {
        uint64_t cached;
        asm volatile("ld.acquire.gpu.global.u64 %0, [%1];"
                     : "=l"(cached)
                     : "l"(free_cache)
                     : "memory");
        if (t < cached)
            break;
        if (t == cached) {
            uint64_t limit = ushmemi_dev_ld_acquire64((const void *)(uintptr_t)r->free_upto);
            if (t < limit) {
                asm volatile("red.release.gpu.global.max.u64 [%0], %1;" ::"l"(free_cache),
                             "l"(limit)
                             : "memory");
                break;
            }
        }
        ushmemi_dev_ring_tick(d, r, &t0, &polled, w, call);
        ushmemi_dev_nanosleep(ns);
        if (ns < 1024)
            ns *= 2;
    }
    /* Stores through asm, not plain ones: a plain store might write the
     * handle as far as the compiler knows, which keeps every caller's
     * translation from being hoisted out of its loops. */
    uint64_t *slot = (uint64_t *)(uintptr_t)(r->slots + (t & r->mask) * 64);
    ushmemi_dev_st_relaxed64(slot + 0, q.w0);
    ushmemi_dev_st_relaxed64(slot + 1, q.w1);
    ushmemi_dev_st_relaxed64(slot + 2, q.w2);
    ushmemi_dev_st_relaxed64(slot + 3, q.w3);
    ushmemi_dev_st_relaxed64(slot + 4, q.w4);
    ushmemi_dev_st_relaxed64(slot + 5, q.w5);
    ushmemi_dev_st_relaxed64(slot + 6, q.w6);
    ushmemi_dev_st_release64(slot + 7, t + 1);
    if (!(q.w0 & USHMEMI_REQ_WAIT))
        return 0;
    /* The answer: value, then seq; the ack lets the proxy reuse the slot. */
    uint64_t *ret = (uint64_t *)(uintptr_t)(r->ret + (t & r->mask) * 32);
    t0 = polled = 0;
    ns = 32;
    for (;;) {
        if (ushmemi_dev_ld_acquire64(ret + 1) == t + 1) {
            uint64_t v = ushmemi_dev_ld_relaxed64(ret);
            ushmemi_dev_st_release64(ret + 2, t + 1);
            return v;
        }
        ushmemi_dev_ring_tick(d, r, &t0, &polled, w, call);
        ushmemi_dev_nanosleep(ns);
        if (ns < 256)
            ns *= 2;
    }
}

/* The same from an array of 7 words, for requests whose payload is packed in
 * (ushmemi_dev_pack indexes the array); requests of fixed words are built as
 * an ushmemi_dev_req_words and sent with ushmemi_dev_ring_send. */
SHMEMX_DEV_FN uint64_t ushmemi_dev_ring_call(const shmemx_dev_t &d, const uint64_t q[7], int w,
                                             const char *call)
{
    const ushmemi_dev_req_words r = {q[0], q[1], q[2], q[3], q[4], q[5], q[6]};
    return ushmemi_dev_ring_send(d, r, w, call);
}

/* n (<= 40) bytes from any address into request words. */
SHMEMX_DEV_FN void ushmemi_dev_pack(uint64_t *q, const void *src, size_t n)
{
    if (((uintptr_t)src & 7) == 0 && (n & 7) == 0)
        for (size_t i = 0; i < n / 8; i++)
            q[i] = ((const uint64_t *)src)[i];
    else
        for (size_t i = 0; i < n; i++)
            ((char *)q)[i] = ((const char *)src)[i];
}

/* Every request this PE's kernels handed to the proxy before is complete at
 * its target: nothing to do when no ticket was taken since the last quiet
 * the proxy did (one read of quiet_upto), else a QUIET request, waited for. */
SHMEMX_DEV_FN void ushmemi_dev_proxy_quiet(const shmemx_dev_t &d, const char *call)
{
    const ushmemi_dev_ring_t *r = ushmemi_dev_ring(d);
    if (!r)
        return;
    uint64_t head;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(head) : "l"(r->head) : "memory");
    if (head == ushmemi_dev_ld_acquire64((const void *)(uintptr_t)r->quiet_upto))
        return;
    const ushmemi_dev_req_words q = {
        ushmemi_dev_req(USHMEMI_REQ_QUIET | USHMEMI_REQ_WAIT, 0, 0, d.world_pe), 0, 0, 0, 0, 0, 0};
    (void)ushmemi_dev_ring_send(d, q, d.world_pe, call);
}

/* An atomic op (USHMEMI_DEV_AMO_*) of size bytes on the word at addr of world
 * PE w, through the proxy (another host): a GPU atomic there, after this
 * thread's earlier requests to w (the proxy keeps their order). wait: for the
 * old value, which it returns (0 otherwise: the request completes at quiet). */
SHMEMX_DEV_FN uint64_t ushmemi_dev_proxy_amo(const shmemx_dev_t &d, int w, unsigned op,
                                             unsigned size, uint64_t addr, uint64_t v, uint64_t c,
                                             bool wait, const char *call)
{
    const ushmemi_dev_req_words q = {
        ushmemi_dev_req(USHMEMI_REQ_AMO | (wait ? USHMEMI_REQ_WAIT : 0), 0, op | size << 8, w),
        addr,
        v,
        c,
        0,
        0,
        0};
    return ushmemi_dev_ring_send(d, q, w, call);
}

/* ---- queries ---- */

SHMEMX_DEV_FN int shmemx_dev_my_pe(const shmemx_dev_t &d)
{
    return d.my_pe;
}
SHMEMX_DEV_FN int shmemx_dev_n_pes(const shmemx_dev_t &d)
{
    return d.n_pes;
}

/* The address of sym on pe, usable with plain loads and stores in this
 * kernel; sym itself for the calling PE; NULL when pe's heap is not mapped. */
SHMEMX_DEV_FN void *shmemx_dev_ptr(const shmemx_dev_t &d, const void *sym, int pe)
{
    int w;
    uint64_t base;
    const uint64_t off = (uint64_t)(uintptr_t)sym - d.heap_base;
    bool ok = ushmemi_dev_base_fast(d, pe, &w, &base);
#ifdef SHMEMX_DEVICE_CHECKS
    ok &= off < d.heap_size;
#endif
    if (__builtin_expect(!ok, 0)) {
        (void)ushmemi_dev_world(d, pe, "shmemx_dev_ptr");
        ushmemi_dev_check_sym(d, sym, 1, "shmemx_dev_ptr");
        base = ushmemi_dev_base(d, w);
        if (base == 0)
            return 0;
    }
    return (void *)(uintptr_t)(base + off);
}

/* ---- copies ---- */

struct alignas(16) ushmemi_dev_v4 {
    unsigned x, y, z, w;
};

/* Stores to a peer's copy (a heap: global memory) go through asm, as the
 * ring's do. The compiler cannot tell a plain store through a translated
 * pointer from the handle's own memory (a kernel parameter), so one plain
 * store in a loop keeps every handle word and the translation built on them
 * inside the loop; past an asm store (memory clobber and all) it takes them
 * out: a loop of shmemx_dev_p, putmem_warp or putmem_block to one PE
 * translates once (PTX, 2026-12-06; the group puts also need
 * ushmemi_dev_copy_pieces' offset cursor). Peer: dst is a peer's copy;
 * else local memory of any kind (a get's destination may be shared memory),
 * stored plainly. */
SHMEMX_DEV_FN void ushmemi_dev_st_peer(ushmemi_dev_v4 *p, const ushmemi_dev_v4 &v)
{
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
                 "r"(v.w)
                 : "memory");
}
/* The 1/2/4/8-byte stores: NAME with PTX qualifier Q (ushmemi_dev_st_vol,
 * volatile, is shmemx_dev_p's: each call one store, none merged or dropped). */
#define USHMEMI_DEV_ST_WORDS(NAME, Q)                                                              \
    SHMEMX_DEV_FN void NAME(unsigned char *p, unsigned char v)                                     \
    {                                                                                              \
        asm volatile("st" Q ".global.u8 [%0], %1;" ::"l"(p), "h"((unsigned short)v) : "memory");   \
    }                                                                                              \
    SHMEMX_DEV_FN void NAME(unsigned short *p, unsigned short v)                                   \
    {                                                                                              \
        asm volatile("st" Q ".global.u16 [%0], %1;" ::"l"(p), "h"(v) : "memory");                  \
    }                                                                                              \
    SHMEMX_DEV_FN void NAME(unsigned *p, unsigned v)                                               \
    {                                                                                              \
        asm volatile("st" Q ".global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");                  \
    }                                                                                              \
    SHMEMX_DEV_FN void NAME(unsigned long long *p, unsigned long long v)                           \
    {                                                                                              \
        asm volatile("st" Q ".global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");                  \
    }
USHMEMI_DEV_ST_WORDS(ushmemi_dev_st_peer, "")
USHMEMI_DEV_ST_WORDS(ushmemi_dev_st_vol, ".volatile")
#undef USHMEMI_DEV_ST_WORDS
/* shmemx_dev_p's value as the unsigned word of its size (any 1/2/4/8-byte type). */
template <int S> struct ushmemi_dev_word;
template <> struct ushmemi_dev_word<1> {
    typedef unsigned char t;
};
template <> struct ushmemi_dev_word<2> {
    typedef unsigned short t;
};
template <> struct ushmemi_dev_word<4> {
    typedef unsigned t;
};
template <> struct ushmemi_dev_word<8> {
    typedef unsigned long long t;
};
template <typename T> SHMEMX_DEV_FN void ushmemi_dev_p_store(void *p, const T &v)
{
    typedef typename ushmemi_dev_word<sizeof(T)>::t B;
    union {
        T t;
        B b;
    } u;
    u.t = v;
    ushmemi_dev_st_vol((B *)p, u.b);
}
template <bool Peer, typename W> SHMEMX_DEV_FN void ushmemi_dev_st(W *p, const W &v)
{
    if (Peer)
        ushmemi_dev_st_peer(p, v);
    else
        *p = v;
}

/* One thread copies n bytes in the widest pieces (8/4/2/1) that the
 * destination's alignment and n allow; dst and src agree modulo agree (a power
 * of two), so src is as aligned as dst for every piece up to that size. Used
 * for the unaligned head and the short tail of a copy: a few stores, not n.
 * The cursor is an offset from dst and src, not two advancing pointers: with
 * pointers NVVM kept the handle's words and the whole translation inside a
 * caller's loop of puts (loads through a pointer that a loop advances by a
 * varying step), with the offset it takes them out (PTX, 2026-12-06; same
 * run on an H100: block puts from 1-132 CTAs 1.14-1.25x the bandwidth at
 * 1-256 KiB, putmem_nbi + quiet 0.88-0.93x the time for warps and blocks up
 * to 4 KiB). */
template <bool Peer>
SHMEMX_DEV_FN void ushmemi_dev_copy_pieces(char *dst, const char *src, size_t n, unsigned agree)
{
    const unsigned m = (unsigned)n, x = (unsigned)(uintptr_t)dst;
    for (unsigned o = 0; o < m;) {
        unsigned p = 8;
        while (p > 1 && (p > m - o || p > agree || ((x + o) & (p - 1))))
            p >>= 1;
        switch (p) {
        case 8:
            ushmemi_dev_st<Peer>((unsigned long long *)(dst + o),
                                 *(const unsigned long long *)(src + o));
            break;
        case 4: ushmemi_dev_st<Peer>((unsigned *)(dst + o), *(const unsigned *)(src + o)); break;
        case 2:
            ushmemi_dev_st<Peer>((unsigned short *)(dst + o), *(const unsigned short *)(src + o));
            break;
        default:
            ushmemi_dev_st<Peer>((unsigned char *)(dst + o), *(const unsigned char *)(src + o));
            break;
        }
        o += p;
    }
}

/* Words [0, nw) of sw to dw by member r of s: four loads in flight per
 * thread, then the last up to three words loaded together before they are
 * stored. I: the index type (32-bit where nw < 2^31, so i + 3 * s cannot wrap). */
template <bool Peer, typename W, typename I>
SHMEMX_DEV_FN void ushmemi_dev_copy_words(unsigned r, unsigned s, W *__restrict__ dw,
                                          const W *__restrict__ sw, I nw)
{
    const I s1 = s, s2 = 2 * (I)s, s3 = 3 * (I)s;
    I i = r;
    for (; i + s3 < nw; i += 4 * (I)s) {
        W a = sw[i], b = sw[i + s1], c = sw[i + s2], e = sw[i + s3];
        ushmemi_dev_st<Peer>(dw + i, a);
        ushmemi_dev_st<Peer>(dw + i + s1, b);
        ushmemi_dev_st<Peer>(dw + i + s2, c);
        ushmemi_dev_st<Peer>(dw + i + s3, e);
    }
    if (i < nw) {
        const bool pb = i + s1 < nw, pc = i + s2 < nw;
        W a = sw[i], b = a, c = a;
        if (pb)
            b = sw[i + s1];
        if (pc)
            c = sw[i + s2];
        ushmemi_dev_st<Peer>(dw + i, a);
        if (pb)
            ushmemi_dev_st<Peer>(dw + i + s1, b);
        if (pc)
            ushmemi_dev_st<Peer>(dw + i + s2, c);
    }
}

/* The group copies n bytes: the head up to W alignment and the tail in pieces,
 * the body in words of W bytes (dst and src agree modulo W), four loads in
 * flight per thread. */
template <bool Peer, typename W, typename G>
SHMEMX_DEV_FN void ushmemi_dev_copy_w(G g, char *dst, const char *src, size_t n)
{
    const unsigned r = g.rank(), s = g.size();
    size_t head = (sizeof(W) - ((uintptr_t)dst & (sizeof(W) - 1))) & (sizeof(W) - 1);
    if (head > n)
        head = n;
    if (head && r == 0)
        ushmemi_dev_copy_pieces<Peer>(dst, src, head, sizeof(W));
    size_t nw = (n - head) / sizeof(W), tail = n - head - nw * sizeof(W);
    W *__restrict__ dw = (W *)(dst + head);
    const W *__restrict__ sw = (const W *)(src + head);
    ushmemi_dev_copy_words<Peer, W, size_t>(r, s, dw, sw, nw);
    if (tail && r == s - 1)
        ushmemi_dev_copy_pieces<Peer>((char *)(dw + nw), (const char *)(sw + nw), tail, sizeof(W));
}

template <bool Peer, typename G>
SHMEMX_DEV_FN void ushmemi_dev_copy(G g, void *dst, const void *src, size_t n)
{
    uintptr_t x = (uintptr_t)dst ^ (uintptr_t)src;
    char *d = (char *)dst;
    const char *s = (const char *)src;
    if ((x & 15) == 0)
        ushmemi_dev_copy_w<Peer, ushmemi_dev_v4>(g, d, s, n);
    else if ((x & 7) == 0)
        ushmemi_dev_copy_w<Peer, unsigned long long>(g, d, s, n);
    else if ((x & 3) == 0)
        ushmemi_dev_copy_w<Peer, unsigned>(g, d, s, n);
    else
        ushmemi_dev_copy_w<Peer, unsigned char>(g, d, s, n);
}

/* Through the proxy: one thread of the group hands over the request. Up to
 * 40 bytes travel inside it (the source may be any memory, registers and
 * shared memory included, and is free at once); larger sources are read by
 * the proxy's copy from global memory: a blocking put waits until it has
 * read them, an _nbi put leaves them to the next quiet. */
template <typename G>
SHMEMX_DEV_FN void ushmemi_dev_proxy_put(const shmemx_dev_t &d, G g, void *dest, const void *src,
                                         size_t n, int w, bool nbi, const char *call)
{
    g.sync();
    if (g.rank() == 0 && n) {
        uint64_t q[7] = {0, (uint64_t)(uintptr_t)dest, 0, 0, 0, 0, 0};
        if (n <= USHMEMI_REQ_INLINE_MAX) {
            q[0] = ushmemi_dev_req(USHMEMI_REQ_PUT_INLINE, n, 0, w);
            ushmemi_dev_pack(q + 2, src, n);
        } else {
            ushmemi_dev_fence_sc(); /* the group's stores to src, before the proxy's copy */
            q[0] = ushmemi_dev_req(USHMEMI_REQ_PUT | (nbi ? 0 : USHMEMI_REQ_WAIT), 0, 0, w);
            q[2] = (uint64_t)(uintptr_t)src;
            q[3] = n;
        }
        (void)ushmemi_dev_ring_call(d, q, w, call);
    }
    g.sync();
}

/* Gets through the proxy complete before returning (_nbi too); up to 8 bytes
 * come back in the answer, more are copied into dest by the proxy. */
template <typename G>
SHMEMX_DEV_FN void ushmemi_dev_proxy_get(const shmemx_dev_t &d, G g, void *dest, const void *src,
                                         size_t n, int w, const char *call)
{
    g.sync();
    if (g.rank() == 0 && n) {
        uint64_t q[7] = {0, (uint64_t)(uintptr_t)src, 0, 0, 0, 0, 0};
        if (n <= 8) {
            q[0] = ushmemi_dev_req(USHMEMI_REQ_GET_SMALL | USHMEMI_REQ_WAIT, n, 0, w);
            uint64_t v = ushmemi_dev_ring_call(d, q, w, call);
            for (size_t i = 0; i < n; i++)
                ((char *)dest)[i] = ((const char *)&v)[i];
        } else {
            q[0] = ushmemi_dev_req(USHMEMI_REQ_GET | USHMEMI_REQ_WAIT, 0, 0, w);
            q[2] = (uint64_t)(uintptr_t)dest;
            q[3] = n;
            (void)ushmemi_dev_ring_call(d, q, w, call);
        }
    }
    g.sync();
}

/* Payloads of up to 16 bytes in 8-byte words (dest, source and size all
 * multiples of 8) are moved by rank 0 of the group alone, as one or two words. */
SHMEMX_DEV_FN bool ushmemi_dev_small(const void *dest, const void *src, size_t n)
{
    return n <= 16 && (((uintptr_t)dest | (uintptr_t)src | n) & 7) == 0;
}

/* The group's route for a put or get, after the group's opening sync (its
 * stores to the source first). Every member translates for itself: handing
 * one thread's result over through shared memory was measured slower for a
 * block (the route's latency, a store, the barrier and a load in series:
 * bench_dev_probe E8, 2026-12-05). */
template <typename G>
SHMEMX_DEV_FN char *ushmemi_dev_group_route(const shmemx_dev_t &d, G g, const void *sym, size_t n,
                                            int pe, const char *call, int *w)
{
    g.sync();
    return ushmemi_dev_route(d, sym, n, pe, call, w);
}

/* The group copies n bytes that start 16-byte aligned at both ends and are a
 * whole number of 16-byte words, fewer than 2^31 (no 32-bit index wraps): no
 * head or tail, 32-bit indices; at most one word per thread is one guarded
 * load and store (the fewest instructions: a block's 16 warps issue them all
 * on one SM), more go four loads in flight per thread, the last up to three
 * words loaded together before they are stored. The short path of a group put
 * or get. */
template <bool Peer, typename G>
SHMEMX_DEV_FN void ushmemi_dev_copy16(G g, void *dst, const void *src, unsigned nw)
{
    const unsigned r = g.rank(), s = g.size();
    ushmemi_dev_v4 *__restrict__ dw = (ushmemi_dev_v4 *)dst;
    const ushmemi_dev_v4 *__restrict__ sw = (const ushmemi_dev_v4 *)src;
    if (nw <= s) {
        if (r < nw)
            ushmemi_dev_st<Peer>(dw + r, sw[r]);
        return;
    }
    ushmemi_dev_copy_words<Peer, ushmemi_dev_v4, unsigned>(r, s, dw, sw, nw);
}

SHMEMX_DEV_FN bool ushmemi_dev_whole16(const void *a, const void *b, size_t n)
{
    return (((uintptr_t)a | (uintptr_t)b | n) & 15) == 0 && (n >> 35) == 0;
}

/* The group copies n bytes from src to dst (one of them the peer's copy): the
 * short path when both are 16-byte words (w16: ushmemi_dev_whole16), else the
 * general copy. */
template <bool Peer, typename G>
SHMEMX_DEV_FN void ushmemi_dev_copy_as(G g, void *dst, const void *src, size_t n, bool w16)
{
    if (w16)
        ushmemi_dev_copy16<Peer>(g, dst, src, (unsigned)(n >> 4));
    else
        ushmemi_dev_copy<Peer>(g, dst, src, n);
}
template <bool Peer, typename G>
SHMEMX_DEV_FN void ushmemi_dev_copy_to(G g, void *dst, const void *src, size_t n)
{
    ushmemi_dev_copy_as<Peer>(g, dst, src, n, ushmemi_dev_whole16(dst, src, n));
}

/* A put's data to the peer's copy of dest (the group not synced after).
 * Returns NULL with nothing stored when the proxy carries the put. *w: pe as a
 * world PE.
 * - A warp or block translates first, before its opening sync and before the
 *   short-payload test: one block that runs on every call, so that where pe
 *   and dest stay the same in a loop the translation runs in uniform
 *   registers ahead of the sync (same run on an H100, 132 CTAs: block puts
 *   of 1 KiB 1.20x, 4-256 KiB 1.07-1.08x the bandwidth of translating after
 *   the sync).
 * - A thread (no sync) loads a payload of up to 16 bytes before it
 *   translates, so that the load (often a miss: a wait's acquire empties L1)
 *   overlaps the translation (putmem_signal ping-pong 2.32 us, 2.51 when it
 *   translated first).
 * Payloads of up to 16 bytes go in 8-byte words from the group's rank 0;
 * longer ones through the group's copy, picked by alignment. */
template <typename G>
SHMEMX_DEV_FN char *ushmemi_dev_put_data(const shmemx_dev_t &d, G g, void *dest, const void *src,
                                         size_t n, int pe, const char *call, int *w)
{
    const bool one = ushmemi_dev_one(g);
    char *r = one ? NULL : ushmemi_dev_route(d, dest, n, pe, call, w);
    if (ushmemi_dev_small(dest, src, n)) {
        uint64_t v0 = 0, v1 = 0;
        g.sync(); /* the group's stores to src first */
        if (g.rank() == 0 && n) {
            v0 = ((const uint64_t *)src)[0];
            if (n > 8)
                v1 = ((const uint64_t *)src)[1];
        }
        if (one)
            r = ushmemi_dev_route(d, dest, n, pe, call, w);
        if (r && g.rank() == 0 && n) {
            ushmemi_dev_st_peer((unsigned long long *)r, (unsigned long long)v0);
            if (n > 8)
                ushmemi_dev_st_peer((unsigned long long *)r + 1, (unsigned long long)v1);
        }
        return r;
    }
    if (one)
        r = ushmemi_dev_route(d, dest, n, pe, call, w);
    const bool w16 = ushmemi_dev_whole16(r, src, n);
    g.sync(); /* the group's stores to src first */
    if (r)
        ushmemi_dev_copy_as<true>(g, r, src, n, w16);
    return r;
}

template <typename G>
SHMEMX_DEV_FN void ushmemi_dev_put(const shmemx_dev_t &d, G g, void *dest, const void *src,
                                   size_t n, int pe, bool nbi, const char *call)
{
    int w;
    if (!ushmemi_dev_put_data(d, g, dest, src, n, pe, call, &w)) {
        ushmemi_dev_proxy_put(d, g, dest, src, n, w, nbi, call);
        return;
    }
    g.sync();
}

template <typename G>
SHMEMX_DEV_FN void ushmemi_dev_get(const shmemx_dev_t &d, G g, void *dest, const void *src,
                                   size_t n, int pe, bool nbi, const char *call)
{
    int w;
    (void)nbi;
    const char *r = ushmemi_dev_group_route(d, g, src, n, pe, call, &w);
    if (!r) {
        ushmemi_dev_proxy_get(d, g, dest, src, n, w, call);
        return;
    }
    ushmemi_dev_copy_to<false>(g, dest, r, n);
    g.sync();
}

/* Blocking put: the source may be reused on return; the data is visible to pe
 * after a quiet, or to whoever observes a signal released after it. On mapped
 * peers the _nbi forms are the same stores (completion at quiet either way). */
#define USHMEMI_DEV_RMA(name, fn, grp, nbi)                                                        \
    SHMEMX_DEV_FN void shmemx_dev_##name(const shmemx_dev_t &d, void *dest, const void *source,    \
                                         size_t nbytes, int pe)                                    \
    {                                                                                              \
        fn(d, grp(), dest, source, nbytes, pe, nbi, "shmemx_dev_" #name);                          \
    }
USHMEMI_DEV_RMA(putmem, ushmemi_dev_put, shmemx_dev_thread_group, false)
USHMEMI_DEV_RMA(putmem_warp, ushmemi_dev_put, shmemx_dev_warp_group, false)
USHMEMI_DEV_RMA(putmem_block, ushmemi_dev_put, shmemx_dev_block_group, false)
USHMEMI_DEV_RMA(putmem_nbi, ushmemi_dev_put, shmemx_dev_thread_group, true)
USHMEMI_DEV_RMA(putmem_nbi_warp, ushmemi_dev_put, shmemx_dev_warp_group, true)
USHMEMI_DEV_RMA(putmem_nbi_block, ushmemi_dev_put, shmemx_dev_block_group, true)
USHMEMI_DEV_RMA(getmem, ushmemi_dev_get, shmemx_dev_thread_group, false)
USHMEMI_DEV_RMA(getmem_warp, ushmemi_dev_get, shmemx_dev_warp_group, false)
USHMEMI_DEV_RMA(getmem_block, ushmemi_dev_get, shmemx_dev_block_group, false)
USHMEMI_DEV_RMA(getmem_nbi, ushmemi_dev_get, shmemx_dev_thread_group, true)
USHMEMI_DEV_RMA(getmem_nbi_warp, ushmemi_dev_get, shmemx_dev_warp_group, true)
USHMEMI_DEV_RMA(getmem_nbi_block, ushmemi_dev_get, shmemx_dev_block_group, true)
#undef USHMEMI_DEV_RMA

/* Typed forms: nelems elements of T. */
template <typename T>
SHMEMX_DEV_FN void shmemx_dev_put(const shmemx_dev_t &d, T *dest, const T *source, size_t nelems,
                                  int pe)
{
    shmemx_dev_putmem(d, dest, source, nelems * sizeof(T), pe);
}
template <typename T>
SHMEMX_DEV_FN void shmemx_dev_put_warp(const shmemx_dev_t &d, T *dest, const T *source,
                                       size_t nelems, int pe)
{
    shmemx_dev_putmem_warp(d, dest, source, nelems * sizeof(T), pe);
}
template <typename T>
SHMEMX_DEV_FN void shmemx_dev_put_block(const shmemx_dev_t &d, T *dest, const T *source,
                                        size_t nelems, int pe)
{
    shmemx_dev_putmem_block(d, dest, source, nelems * sizeof(T), pe);
}
template <typename T>
SHMEMX_DEV_FN void shmemx_dev_get(const shmemx_dev_t &d, T *dest, const T *source, size_t nelems,
                                  int pe)
{
    shmemx_dev_getmem(d, dest, source, nelems * sizeof(T), pe);
}
template <typename T>
SHMEMX_DEV_FN void shmemx_dev_get_warp(const shmemx_dev_t &d, T *dest, const T *source,
                                       size_t nelems, int pe)
{
    shmemx_dev_getmem_warp(d, dest, source, nelems * sizeof(T), pe);
}
template <typename T>
SHMEMX_DEV_FN void shmemx_dev_get_block(const shmemx_dev_t &d, T *dest, const T *source,
                                        size_t nelems, int pe)
{
    shmemx_dev_getmem_block(d, dest, source, nelems * sizeof(T), pe);
}

/* Single elements: one store / one load through the peer mapping. */
template <typename T>
SHMEMX_DEV_FN void shmemx_dev_p(const shmemx_dev_t &d, T *dest, T value, int pe)
{
    int w;
    char *r;
    if (__builtin_expect(!ushmemi_dev_route_fast(d, dest, sizeof(T), pe, &w, false, &r), 0)) {
        r = ushmemi_dev_route_rare(d, dest, sizeof(T), pe, "shmemx_dev_p", w, false);
        if (!r) {
            ushmemi_dev_proxy_put(d, shmemx_dev_thread_group(), dest, &value, sizeof(T), w, true,
                                  "shmemx_dev_p");
            return;
        }
    }
    ushmemi_dev_p_store(r, value);
}
template <typename T> SHMEMX_DEV_FN T shmemx_dev_g(const shmemx_dev_t &d, const T *source, int pe)
{
    int w;
    char *r;
    if (__builtin_expect(!ushmemi_dev_route_fast(d, source, sizeof(T), pe, &w, false, &r), 0)) {
        r = ushmemi_dev_route_rare(d, source, sizeof(T), pe, "shmemx_dev_g", w, false);
        if (!r) {
            T v;
            ushmemi_dev_proxy_get(d, shmemx_dev_thread_group(), &v, source, sizeof(T), w,
                                  "shmemx_dev_g");
            return v;
        }
    }
    return *(const volatile T *)r;
}

/* ---- ordering ---- */

/* Every put, AMO and signal this thread (group) issued before is complete and
 * visible to every PE. */
template <typename G>
SHMEMX_DEV_FN void ushmemi_dev_quiet(const shmemx_dev_t &d, G g, const char *call)
{
    g.sync();
    if (g.rank() == 0) {
        ushmemi_dev_fence_sc();
        ushmemi_dev_proxy_quiet(d, call);
    }
    g.sync();
}
SHMEMX_DEV_FN void shmemx_dev_quiet(const shmemx_dev_t &d)
{
    ushmemi_dev_fence_sc();
    ushmemi_dev_proxy_quiet(d, "shmemx_dev_quiet");
}
SHMEMX_DEV_FN void shmemx_dev_quiet_warp(const shmemx_dev_t &d)
{
    ushmemi_dev_quiet(d, shmemx_dev_warp_group(), "shmemx_dev_quiet_warp");
}
SHMEMX_DEV_FN void shmemx_dev_quiet_block(const shmemx_dev_t &d)
{
    ushmemi_dev_quiet(d, shmemx_dev_block_group(), "shmemx_dev_quiet_block");
}
/* Puts to one PE before the fence are delivered before those after it (the
 * proxy applies one PE's requests to a target in order: nothing to add). */
SHMEMX_DEV_FN void shmemx_dev_fence(const shmemx_dev_t &d)
{
    (void)d;
    ushmemi_dev_fence_acq_rel();
}

/* ---- signals ---- */

/* relaxed: a plain atomic update, ordered after earlier data only by the
 * caller's quiet or fence; otherwise a release. */
SHMEMX_DEV_FN void ushmemi_dev_signal(const shmemx_dev_t &d, uint64_t *sig, uint64_t value,
                                      int sig_op, int pe, bool relaxed, const char *call)
{
    int w;
    char *r;
    const bool add = sig_op == SHMEMX_DEV_SIGNAL_ADD, set = sig_op == SHMEMX_DEV_SIGNAL_SET;
    if (__builtin_expect(!ushmemi_dev_route_fast(d, sig, 8, pe, &w, add, &r), 0)) {
        r = ushmemi_dev_route_rare(d, sig, 8, pe, call, w, add);
        if (!r && (add || set)) {
            (void)ushmemi_dev_proxy_amo(d, w, add ? USHMEMI_DEV_AMO_ADD : USHMEMI_DEV_AMO_SET, 8,
                                        (uint64_t)(uintptr_t)sig, value, 0, false, call);
            return;
        }
    }
    if (add) {
        if (relaxed)
            ushmemi_dev_red_relaxed_add64(r, value);
        else
            ushmemi_dev_red_release_add64(r, value);
    } else if (set) {
        if (relaxed)
            ushmemi_dev_st_relaxed64(r, value);
        else
            ushmemi_dev_st_release64(r, value);
    } else {
        printf("ushmem: PE %d: %s: unknown signal operator %d (SHMEM_SIGNAL_SET or _ADD)\n",
               d.world_pe, call, sig_op);
        ushmemi_dev_trap();
    }
}

/* Update pe's signal word with release semantics: everything this thread
 * stored before (and what its group synced before) is visible first. */
SHMEMX_DEV_FN void shmemx_dev_signal_op(const shmemx_dev_t &d, uint64_t *sig_addr, uint64_t signal,
                                        int sig_op, int pe)
{
    ushmemi_dev_signal(d, sig_addr, signal, sig_op, pe, false, "shmemx_dev_signal_op");
}

/* The same update with no ordering of its own, as NVSHMEM's nvshmemx_signal_op
 * and OpenSHMEM's shmem_signal_op: what it announces must be complete first,
 * by a quiet the signalling thread took part in (shmemx_dev_quiet in it, or a
 * _warp/_block quiet of its group), or, for earlier puts to the same PE, by
 * shmemx_dev_fence. One relaxed system-scope atomic: about 0.01 us where the
 * release form waits 0.7 us for the thread's stores (probe E9); for several
 * signals after one quiet (a dispatch announcing rows to every PE). Through
 * the proxy it is applied after this thread's earlier requests to pe. */
SHMEMX_DEV_FN void shmemx_dev_signal_op_relaxed(const shmemx_dev_t &d, uint64_t *sig_addr,
                                                uint64_t signal, int sig_op, int pe)
{
    ushmemi_dev_signal(d, sig_addr, signal, sig_op, pe, true, "shmemx_dev_signal_op_relaxed");
}

/* This PE's signal word, with acquire semantics. */
SHMEMX_DEV_FN uint64_t shmemx_dev_signal_fetch(const shmemx_dev_t &d, const uint64_t *sig_addr)
{
    ushmemi_dev_check_sym(d, sig_addr, 8, "shmemx_dev_signal_fetch");
    return ushmemi_dev_ld_acquire64(sig_addr);
}

template <typename G>
SHMEMX_DEV_FN void ushmemi_dev_put_signal(const shmemx_dev_t &d, G g, void *dest,
                                          const void *source, size_t nbytes, uint64_t *sig_addr,
                                          uint64_t signal, int sig_op, int pe, bool nbi,
                                          const char *call)
{
    int w;
    /* through the proxy: one request, which applies the signal after the data */
    if (!ushmemi_dev_put_data(d, g, dest, source, nbytes, pe, call, &w)) {
        if (sig_op != SHMEMX_DEV_SIGNAL_ADD && sig_op != SHMEMX_DEV_SIGNAL_SET)
            ushmemi_dev_signal(d, sig_addr, signal, sig_op, pe, false, call); /* says what */
        ushmemi_dev_check_sym(d, sig_addr, 8, call);
        g.sync();
        if (g.rank() == 0) {
            uint64_t q[7] = {
                0, (uint64_t)(uintptr_t)dest, 0, 0, (uint64_t)(uintptr_t)sig_addr, signal, 0};
            if (nbytes <= USHMEMI_REQ_SIGNAL_INLINE_MAX) {
                q[0] = ushmemi_dev_req(USHMEMI_REQ_PUT_SIGNAL_INLINE, nbytes, (unsigned)sig_op, w);
                ushmemi_dev_pack(q + 2, source, nbytes);
            } else {
                ushmemi_dev_fence_sc();
                q[0] = ushmemi_dev_req(USHMEMI_REQ_PUT_SIGNAL | (nbi ? 0 : USHMEMI_REQ_WAIT), 0,
                                       (unsigned)sig_op, w);
                q[2] = (uint64_t)(uintptr_t)source;
                q[3] = nbytes;
            }
            (void)ushmemi_dev_ring_call(d, q, w, call);
        }
        g.sync();
        return;
    }
    /* the group's stores, then one release covers them all (a small payload:
     * rank 0 stored it all, and its release covers its own stores) */
    if (!ushmemi_dev_small(dest, source, nbytes))
        g.sync();
    if (g.rank() == 0)
        ushmemi_dev_signal(d, sig_addr, signal, sig_op, pe, false, call);
    g.sync();
}

/* Put, then update pe's signal word once the data is visible there. */
#define USHMEMI_DEV_PUT_SIGNAL(name, grp, nbi)                                                     \
    SHMEMX_DEV_FN void shmemx_dev_##name(const shmemx_dev_t &d, void *dest, const void *source,    \
                                         size_t nbytes, uint64_t *sig_addr, uint64_t signal,       \
                                         int sig_op, int pe)                                       \
    {                                                                                              \
        ushmemi_dev_put_signal(d, grp(), dest, source, nbytes, sig_addr, signal, sig_op, pe, nbi,  \
                               "shmemx_dev_" #name);                                               \
    }
USHMEMI_DEV_PUT_SIGNAL(putmem_signal, shmemx_dev_thread_group, false)
USHMEMI_DEV_PUT_SIGNAL(putmem_signal_warp, shmemx_dev_warp_group, false)
USHMEMI_DEV_PUT_SIGNAL(putmem_signal_block, shmemx_dev_block_group, false)
USHMEMI_DEV_PUT_SIGNAL(putmem_signal_nbi, shmemx_dev_thread_group, true)
USHMEMI_DEV_PUT_SIGNAL(putmem_signal_nbi_warp, shmemx_dev_warp_group, true)
USHMEMI_DEV_PUT_SIGNAL(putmem_signal_nbi_block, shmemx_dev_block_group, true)
#undef USHMEMI_DEV_PUT_SIGNAL

/* ---- atomics ---- */

/* enums, not static members: those would be device globals under NVRTC */
template <typename T> struct ushmemi_dev_int {
    enum { ok = 0 };
};
#define USHMEMI_DEV_INT(T)                                                                         \
    template <> struct ushmemi_dev_int<T> {                                                        \
        enum { ok = sizeof(T) == 4 || sizeof(T) == 8 };                                            \
    };
USHMEMI_DEV_INT(int)
USHMEMI_DEV_INT(unsigned int)
USHMEMI_DEV_INT(long)
USHMEMI_DEV_INT(unsigned long)
USHMEMI_DEV_INT(long long)
USHMEMI_DEV_INT(unsigned long long)
#undef USHMEMI_DEV_INT

/* Bit patterns in and out of a 4- or 8-byte T. */
template <typename T> SHMEMX_DEV_FN uint64_t ushmemi_dev_bits(T v)
{
    union {
        T t;
        uint32_t u32;
        uint64_t u64;
    } u;
    u.u64 = 0;
    u.t = v;
    return sizeof(T) == 4 ? u.u32 : u.u64;
}
template <typename T> SHMEMX_DEV_FN T ushmemi_dev_from_bits(uint64_t b)
{
    union {
        T t;
        uint32_t u32;
        uint64_t u64;
    } u;
    if (sizeof(T) == 4)
        u.u32 = (uint32_t)b;
    else
        u.u64 = b;
    return u.t;
}

/* One AMO on the word r points to (this GPU's mapping of it), as bits. */
template <typename T>
SHMEMX_DEV_FN uint64_t ushmemi_dev_amo_at(char *r, int op, uint64_t v, uint64_t c)
{
    return sizeof(T) == 4 ? ushmemi_dev_amo32(r, op, (uint32_t)v, (uint32_t)c)
                          : ushmemi_dev_amo64(r, op, v, c);
}

/* The rare path of ushmemi_dev_amo (the traps, the table beyond near_base,
 * the proxy), out of line. Inlined, it cost a one-call fetch_add 0.04-0.05 us
 * (probe E4, PE read on every call: 0.258 us, then 0.206-0.216 on H100s) and
 * it kept a dependent loop's atom behind two taken branches (now one). The
 * caller passes a local copy of the handle: were the handle's own address
 * handed to a call, the compiler could no longer take the translation out of
 * a caller's loop. Only the AMOs: the signals' rare path out of line took
 * tests/cuda/dev_rma.cu's k_put from 56 to 78 registers (device/regs_1024). */
template <typename T>
static __attribute__((noinline)) __device__ uint64_t
ushmemi_dev_amo_rare(const shmemx_dev_t &d, const void *dest, int op, uint64_t v, uint64_t c,
                     int pe, int w, bool fetching, const char *call)
{
    char *r = ushmemi_dev_route_rare(d, dest, sizeof(T), pe, call, w, op != USHMEMI_DEV_AMO_FETCH);
    if (r)
        return ushmemi_dev_amo_at<T>(r, op, v, c);
    /* the proxy carries it to the owner */
    return ushmemi_dev_proxy_amo(d, w, (unsigned)op, (unsigned)sizeof(T), (uint64_t)(uintptr_t)dest,
                                 v, c, fetching, call);
}

/* fetching: the caller wants the old value (through the proxy it then waits
 * for the answer; otherwise the request completes at quiet). */
template <typename T>
SHMEMX_DEV_FN T ushmemi_dev_amo(const shmemx_dev_t &d, const T *dest, int op, T value, T cond,
                                int pe, bool fetching, const char *call)
{
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "device AMOs take 4- or 8-byte types");
    int w;
    char *r;
    const uint64_t v = ushmemi_dev_bits(value), c = ushmemi_dev_bits(cond);
    const bool amo = op != USHMEMI_DEV_AMO_FETCH;
    if (__builtin_expect(!ushmemi_dev_route_fast(d, dest, sizeof(T), pe, &w, amo, &r), 0)) {
        const shmemx_dev_t h = d; /* a copy: d itself stays unescaped */
        return ushmemi_dev_from_bits<T>(
            ushmemi_dev_amo_rare<T>(h, dest, op, v, c, pe, w, fetching, call));
    }
    return ushmemi_dev_from_bits<T>(ushmemi_dev_amo_at<T>(r, op, v, c));
}

/* Fetch, set, swap and compare_swap take any 4- or 8-byte type (float and
 * double too); the arithmetic and bitwise AMOs take integers. */
template <typename T>
SHMEMX_DEV_FN T shmemx_dev_atomic_fetch(const shmemx_dev_t &d, const T *source, int pe)
{
    return ushmemi_dev_amo(d, source, USHMEMI_DEV_AMO_FETCH, T(), T(), pe, true,
                           "shmemx_dev_atomic_fetch");
}
template <typename T>
SHMEMX_DEV_FN void shmemx_dev_atomic_set(const shmemx_dev_t &d, T *dest, T value, int pe)
{
    (void)ushmemi_dev_amo(d, dest, USHMEMI_DEV_AMO_SET, value, T(), pe, false,
                          "shmemx_dev_atomic_set");
}
template <typename T>
SHMEMX_DEV_FN T shmemx_dev_atomic_swap(const shmemx_dev_t &d, T *dest, T value, int pe)
{
    return ushmemi_dev_amo(d, dest, USHMEMI_DEV_AMO_SWAP, value, T(), pe, true,
                           "shmemx_dev_atomic_swap");
}
template <typename T>
SHMEMX_DEV_FN T shmemx_dev_atomic_compare_swap(const shmemx_dev_t &d, T *dest, T cond, T value,
                                               int pe)
{
    return ushmemi_dev_amo(d, dest, USHMEMI_DEV_AMO_CSWAP, value, cond, pe, true,
                           "shmemx_dev_atomic_compare_swap");
}

#define USHMEMI_DEV_AMO_INT(name, op, value_expr)                                                  \
    template <typename T>                                                                          \
    SHMEMX_DEV_FN T shmemx_dev_atomic_fetch_##name(const shmemx_dev_t &d, T *dest,                 \
                                                   USHMEMI_DEV_AMO_PARAM_##name int pe)            \
    {                                                                                              \
        static_assert(ushmemi_dev_int<T>::ok, "this device AMO takes 32/64-bit integers");         \
        return ushmemi_dev_amo(d, dest, op, (T)(value_expr), T(), pe, true,                        \
                               "shmemx_dev_atomic_fetch_" #name);                                  \
    }                                                                                              \
    template <typename T>                                                                          \
    SHMEMX_DEV_FN void shmemx_dev_atomic_##name(const shmemx_dev_t &d, T *dest,                    \
                                                USHMEMI_DEV_AMO_PARAM_##name int pe)               \
    {                                                                                              \
        static_assert(ushmemi_dev_int<T>::ok, "this device AMO takes 32/64-bit integers");         \
        (void)ushmemi_dev_amo(d, dest, op, (T)(value_expr), T(), pe, false,                        \
                              "shmemx_dev_atomic_" #name);                                         \
    }
#define USHMEMI_DEV_AMO_PARAM_add T value,
#define USHMEMI_DEV_AMO_PARAM_inc
#define USHMEMI_DEV_AMO_PARAM_and T value,
#define USHMEMI_DEV_AMO_PARAM_or  T value,
#define USHMEMI_DEV_AMO_PARAM_xor T value,
USHMEMI_DEV_AMO_INT(add, USHMEMI_DEV_AMO_ADD, value)
USHMEMI_DEV_AMO_INT(inc, USHMEMI_DEV_AMO_ADD, 1)
USHMEMI_DEV_AMO_INT(and, USHMEMI_DEV_AMO_AND, value)
USHMEMI_DEV_AMO_INT(or, USHMEMI_DEV_AMO_OR, value)
USHMEMI_DEV_AMO_INT(xor, USHMEMI_DEV_AMO_XOR, value)
#undef USHMEMI_DEV_AMO_INT
#undef USHMEMI_DEV_AMO_PARAM_add
#undef USHMEMI_DEV_AMO_PARAM_inc
#undef USHMEMI_DEV_AMO_PARAM_and
#undef USHMEMI_DEV_AMO_PARAM_or
#undef USHMEMI_DEV_AMO_PARAM_xor

/* ---- waits ---- */

/* Whether this PE may spin on the device; if not, one line per PE, then a trap. */
SHMEMX_DEV_FN void ushmemi_dev_wait_gate(const shmemx_dev_t &d, const char *call)
{
    if (d.flags & SHMEMX_DEV_F_WAIT_OK)
        return;
    ushmemi_dev_check_handle(d, call);
    uint64_t *reported = (uint64_t *)(uintptr_t)(d.sync + SHMEMX_DEV_REPORTED_OFF);
    /* One thread prints (0 -> 1), then marks the line done (2); the others
     * wait for that before trapping: a trap by another thread while the
     * line is being printed loses it (seen with 128 threads per PE). */
    uint64_t prev = ushmemi_dev_amo64(reported, USHMEMI_DEV_AMO_CSWAP, 1, 0);
    if (prev != 0) {
        uint64_t t0 = ushmemi_dev_clock_ns();
        while (ushmemi_dev_ld_relaxed64(reported) != 2 &&
               ushmemi_dev_clock_ns() - t0 < 2000000000ull)
            ushmemi_dev_nanosleep(1000);
        ushmemi_dev_trap();
    }
    if (d.wait_reason == SHMEMX_DEV_WAIT_MPS_SHARES)
        printf("ushmem: PE %d: %s: device-side waits are off: under MPS the %d PEs on GPU "
               "%04x:%02x:%02x may use %d SMs together, more than its %d, so a spinning "
               "kernel can starve a peer forever; set CUDA_MPS_ACTIVE_THREAD_PERCENTAGE <= "
               "%d (ushrun --mps does), or wait with shmemx_signal_wait_until_on_stream\n",
               d.world_pe, call, d.gpu_pes, d.gpu_pci[0], d.gpu_pci[1], d.gpu_pci[2], d.sm_sum,
               d.sm_total, d.gpu_pes > 0 ? 100 / d.gpu_pes : 100);
    else if (d.wait_reason == SHMEMX_DEV_WAIT_SHARED_GPU)
        printf("ushmem: PE %d: %s: device-side waits are off: %d PEs share GPU "
               "%04x:%02x:%02x without MPS (each hand-off waits for a time slice, ~4.5 ms); "
               "wait with shmemx_signal_wait_until_on_stream, use one PE per GPU, or run "
               "under MPS (ushrun --mps); USHMEM_DEVICE_WAIT=timesliced allows it, slow but "
               "correct\n",
               d.world_pe, call, d.gpu_pes, d.gpu_pci[0], d.gpu_pci[1], d.gpu_pci[2]);
    else
        printf("ushmem: PE %d: %s: device-side waits are off for this handle (reason %d; "
               "shmemx_dev_why() says more)\n",
               d.world_pe, call, d.wait_reason);
    ushmemi_dev_fence_sc();
    ushmemi_dev_st_relaxed64(reported, 2);
    ushmemi_dev_trap();
}

/* Every 1024 polls: the job's end (abort word) and the wait timeout. */
SHMEMX_DEV_FN void ushmemi_dev_wait_tick(const shmemx_dev_t &d, unsigned polls, uint64_t *t0,
                                         const void *addr, const char *call)
{
    if (polls & 1023)
        return;
    if (d.abort_flag && ushmemi_dev_ld_relaxed32((const void *)(uintptr_t)d.abort_flag)) {
        printf("ushmem: PE %d: %s: the job is ending (finalize or global_exit); wait on %p "
               "abandoned\n",
               d.world_pe, call, addr);
        ushmemi_dev_trap();
    }
    uint64_t now = ushmemi_dev_clock_ns();
    if (*t0 == 0)
        *t0 = now;
    else if (d.wait_timeout_ns && now - *t0 > d.wait_timeout_ns) {
        printf("ushmem: PE %d: %s: waited more than %llu s on %p (heap offset 0x%llx) "
               "(USHMEM_DEVICE_WAIT_TIMEOUT)\n",
               d.world_pe, call, (unsigned long long)(d.wait_timeout_ns / 1000000000ull), addr,
               (unsigned long long)((uint64_t)(uintptr_t)addr - d.heap_base));
        ushmemi_dev_trap();
    }
    if (polls >= 16384)
        ushmemi_dev_nanosleep(256);
}

template <typename T> SHMEMX_DEV_FN bool ushmemi_dev_cmp(T v, int cmp, T value)
{
    switch (cmp) {
    case SHMEMX_DEV_CMP_EQ: return v == value;
    case SHMEMX_DEV_CMP_NE: return v != value;
    case SHMEMX_DEV_CMP_GT: return v > value;
    case SHMEMX_DEV_CMP_GE: return v >= value;
    case SHMEMX_DEV_CMP_LT: return v < value;
    case SHMEMX_DEV_CMP_LE: return v <= value;
    }
    return false;
}

template <typename T> SHMEMX_DEV_FN T ushmemi_dev_load_acquire(const T *p)
{
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "device waits take 4- or 8-byte types");
    return ushmemi_dev_from_bits<T>(sizeof(T) == 4 ? ushmemi_dev_ld_acquire32(p)
                                                   : ushmemi_dev_ld_acquire64(p));
}

SHMEMX_DEV_FN void ushmemi_dev_check_cmp(const shmemx_dev_t &d, int cmp, const char *call)
{
    if (cmp < SHMEMX_DEV_CMP_EQ || cmp > SHMEMX_DEV_CMP_LE) {
        printf("ushmem: PE %d: %s: unknown comparison %d (SHMEM_CMP_*)\n", d.world_pe, call, cmp);
        ushmemi_dev_trap();
    }
}

template <typename T>
SHMEMX_DEV_FN T ushmemi_dev_wait(const shmemx_dev_t &d, const T *ivar, int cmp, T value,
                                 const char *call)
{
    ushmemi_dev_wait_gate(d, call);
    ushmemi_dev_check_sym(d, ivar, sizeof(T), call);
    ushmemi_dev_check_cmp(d, cmp, call);
    uint64_t t0 = 0;
    for (unsigned polls = 1;; polls++) {
        T v = ushmemi_dev_load_acquire(ivar);
        if (ushmemi_dev_cmp(v, cmp, value))
            return v;
        ushmemi_dev_wait_tick(d, polls, &t0, ivar, call);
    }
}

/* Wait until this PE's *ivar satisfies cmp value (SHMEM_CMP_*); acquire:
 * what was released before the satisfying write is visible after. */
template <typename T>
SHMEMX_DEV_FN void shmemx_dev_wait_until(const shmemx_dev_t &d, T *ivar, int cmp, T value)
{
    (void)ushmemi_dev_wait(d, ivar, cmp, value, "shmemx_dev_wait_until");
}
/* The same on a signal word; returns the value that satisfied it. */
SHMEMX_DEV_FN uint64_t shmemx_dev_signal_wait_until(const shmemx_dev_t &d, uint64_t *sig_addr,
                                                    int cmp, uint64_t value)
{
    return ushmemi_dev_wait(d, sig_addr, cmp, value, "shmemx_dev_signal_wait_until");
}
/* 1 if this PE's *ivar satisfies cmp value now (acquire), else 0. Never spins. */
template <typename T>
SHMEMX_DEV_FN int shmemx_dev_test(const shmemx_dev_t &d, T *ivar, int cmp, T value)
{
    ushmemi_dev_check_sym(d, ivar, sizeof(T), "shmemx_dev_test");
    ushmemi_dev_check_cmp(d, cmp, "shmemx_dev_test");
    return ushmemi_dev_cmp(ushmemi_dev_load_acquire(ivar), cmp, value) ? 1 : 0;
}

/* ---- barriers ---- */

/* Traps (one line) unless this PE may run a device barrier on the handle's team:
 * device waits allowed, the world handle where world is asked for, a valid slot. */
SHMEMX_DEV_FN void ushmemi_dev_barrier_check(const shmemx_dev_t &d, bool world, const char *call)
{
    ushmemi_dev_wait_gate(d, call);
    if ((world && !(d.flags & SHMEMX_DEV_F_WORLD)) || d.n_pes > SHMEMX_DEV_BARRIER_MAX ||
        d.team_slot < 0 || d.team_slot >= SHMEMX_DEV_TEAM_SLOTS) {
        ushmemi_dev_check_handle(d, call);
        printf("ushmem: PE %d: %s: %s\n", d.world_pe, call,
               world && !(d.flags & SHMEMX_DEV_F_WORLD)
                   ? "needs the world handle (shmemx_dev_get); use the team form for team handles"
               : d.n_pes > SHMEMX_DEV_BARRIER_MAX
                   ? "the team is too large for a device barrier (at most 128 PEs)"
                   : "the handle's team slot is invalid (pass a handle from shmemx_team_dev_get)");
        ushmemi_dev_trap();
    }
}

/* This PE's epoch word of the handle's team slot: its completed device
 * barriers there (written by the group's rank 0 after a barrier's last sync). */
SHMEMX_DEV_FN volatile uint64_t *ushmemi_dev_epoch(const shmemx_dev_t &d)
{
    return (volatile uint64_t *)(uintptr_t)(d.sync + SHMEMX_DEV_EPOCH_OFF) + (unsigned)d.team_slot;
}

/* One round: every member stores its new epoch into each peer's inbox slot
 * for it, then waits until its own inbox shows every peer's (acquire). The
 * group's rank 0 makes the stores, after one fence of its own that follows
 * the group's sync: fence.sc.sys where the barrier quiets, fence.acq_rel.sys
 * where it only syncs. That fence and its relaxed stores are a release of
 * everything the group did before the sync (the fence is cumulative over
 * what the sync made rank 0 observe), as NVSHMEM's barrier does it; a release
 * store per peer cost one more fence per store in the thread form (n - 1 per
 * barrier) and a second one after the quiet's in the group forms.
 * Where every PE of the job is on this GPU and mapped here (SHMEMX_DEV_F_ONE_GPU,
 * set by the host unless USHMEM_DEVICE_SCOPE=sys), the fence and the polls are
 * GPU-scope: every store any PE can have made to the heap lands in this GPU's
 * L2, where the .gpu fence orders it (CUDA's __threadfence: "observed by all
 * threads in the device"), and a .sys fence cost 1.5-1.7 us at 4 PEs under MPS.
 * The epoch only grows (wrap-safe compare), so nothing is reset between
 * barriers or CUDA graph replays. One group per PE takes part in each call. */
template <typename G>
SHMEMX_DEV_FN void ushmemi_dev_barrier(const shmemx_dev_t &d, G g, bool quiet, bool world,
                                       const char *call)
{
    ushmemi_dev_barrier_check(d, world, call);
    g.sync();
    volatile uint64_t *epoch = ushmemi_dev_epoch(d);
    const uint64_t e = *epoch + 1;
    uint64_t inbox_off = SHMEMX_DEV_SYNC_OFFSET + SHMEMX_DEV_INBOX_OFF +
                         ((uint64_t)(unsigned)d.team_slot * SHMEMX_DEV_BARRIER_MAX) * 8;
    const uint64_t slot = inbox_off + 8 * (uint64_t)d.my_pe; /* ours in every peer's inbox */
    const bool one_gpu = (d.flags & SHMEMX_DEV_F_ONE_GPU) != 0;
    if (g.rank() == 0) {
        if (quiet && one_gpu) {
            ushmemi_dev_fence_sc_gpu();
        } else if (quiet) {
            ushmemi_dev_fence_sc();
            ushmemi_dev_proxy_quiet(d, call);
        } else if (one_gpu) {
            ushmemi_dev_fence_acq_rel_gpu();
        } else {
            ushmemi_dev_fence_acq_rel();
        }
        for (int j = 0; j < d.n_pes; j++) {
            if (j == d.my_pe)
                continue;
            int w = d.team_start + j * d.team_stride;
            uint64_t base = ushmemi_dev_base(d, w);
            if (base == 0 && d.proxy != 0) { /* another host: the proxy sets the word there */
                (void)ushmemi_dev_proxy_amo(d, w, USHMEMI_DEV_AMO_SET, 8, d.heap_base + slot, e, 0,
                                            false, call);
                continue;
            }
            if (base == 0) {
                printf("ushmem: PE %d: %s: team PE %d's device heap is not mapped on this GPU\n",
                       d.world_pe, call, j);
                ushmemi_dev_trap();
            }
            ushmemi_dev_st_relaxed64((void *)(uintptr_t)(base + slot), e);
        }
    }
    const uint64_t *mine = (const uint64_t *)(uintptr_t)(d.heap_base + inbox_off);
    for (int j = (int)g.rank(); j < d.n_pes; j += (int)g.size()) {
        if (j == d.my_pe)
            continue;
        uint64_t t0 = 0;
        for (unsigned polls = 1;
             (int64_t)(ushmemi_dev_ld_acquire64_scoped(mine + j, one_gpu) - e) < 0; polls++)
            ushmemi_dev_wait_tick(d, polls, &t0, mine + j, call);
    }
    g.sync();
    if (g.rank() == 0)
        *epoch = e;
}

/* All PEs (world handle): quiet, then wait until every PE arrived. */
SHMEMX_DEV_FN void shmemx_dev_barrier_all(const shmemx_dev_t &d)
{
    ushmemi_dev_barrier(d, shmemx_dev_thread_group(), true, true, "shmemx_dev_barrier_all");
}
SHMEMX_DEV_FN void shmemx_dev_barrier_all_warp(const shmemx_dev_t &d)
{
    ushmemi_dev_barrier(d, shmemx_dev_warp_group(), true, true, "shmemx_dev_barrier_all_warp");
}
SHMEMX_DEV_FN void shmemx_dev_barrier_all_block(const shmemx_dev_t &d)
{
    ushmemi_dev_barrier(d, shmemx_dev_block_group(), true, true, "shmemx_dev_barrier_all_block");
}
/* Synchronization only (no quiet of earlier puts). */
SHMEMX_DEV_FN void shmemx_dev_sync_all(const shmemx_dev_t &d)
{
    ushmemi_dev_barrier(d, shmemx_dev_thread_group(), false, true, "shmemx_dev_sync_all");
}
SHMEMX_DEV_FN void shmemx_dev_sync_all_warp(const shmemx_dev_t &d)
{
    ushmemi_dev_barrier(d, shmemx_dev_warp_group(), false, true, "shmemx_dev_sync_all_warp");
}
SHMEMX_DEV_FN void shmemx_dev_sync_all_block(const shmemx_dev_t &d)
{
    ushmemi_dev_barrier(d, shmemx_dev_block_group(), false, true, "shmemx_dev_sync_all_block");
}
/* Team forms: the members of the handle's team (shmemx_team_dev_get). */
SHMEMX_DEV_FN void shmemx_dev_barrier(const shmemx_dev_t &d)
{
    ushmemi_dev_barrier(d, shmemx_dev_thread_group(), true, false, "shmemx_dev_barrier");
}
SHMEMX_DEV_FN void shmemx_dev_barrier_warp(const shmemx_dev_t &d)
{
    ushmemi_dev_barrier(d, shmemx_dev_warp_group(), true, false, "shmemx_dev_barrier_warp");
}
SHMEMX_DEV_FN void shmemx_dev_barrier_block(const shmemx_dev_t &d)
{
    ushmemi_dev_barrier(d, shmemx_dev_block_group(), true, false, "shmemx_dev_barrier_block");
}
SHMEMX_DEV_FN void shmemx_dev_team_sync(const shmemx_dev_t &d)
{
    ushmemi_dev_barrier(d, shmemx_dev_thread_group(), false, false, "shmemx_dev_team_sync");
}
SHMEMX_DEV_FN void shmemx_dev_team_sync_warp(const shmemx_dev_t &d)
{
    ushmemi_dev_barrier(d, shmemx_dev_warp_group(), false, false, "shmemx_dev_team_sync_warp");
}
SHMEMX_DEV_FN void shmemx_dev_team_sync_block(const shmemx_dev_t &d)
{
    ushmemi_dev_barrier(d, shmemx_dev_block_group(), false, false, "shmemx_dev_team_sync_block");
}

#endif /* device compilation */

/* ---- host side, in CUDA translation units compiled by nvcc ---- */
#if defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#include <shmemx.h>
/* Cooperative launch of a kernel that synchronizes across PEs (all its CTAs
 * must be resident at once): checks the grid against the occupancy the GPU
 * (or this PE's MPS share) allows. 0, or a negative SHMEMX_ERR_* with one line
 * on stderr. The kernel is the __global__ function itself. */
template <typename K>
static inline int shmemx_collective_launch(K *kernel, dim3 grid, dim3 block, void **args,
                                           size_t shared_bytes, cudaStream_t stream)
{
    cudaFunction_t f = 0;
    if (cudaGetFuncBySymbol(&f, (const void *)kernel) != cudaSuccess) {
        fprintf(stderr, "ushmem: shmemx_collective_launch: not a kernel of this program\n");
        return SHMEMX_ERR_INVALID;
    }
    return shmemx_collective_launch_cu((void *)f, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                       args, shared_bytes, (shmemx_stream_t)stream);
}
#endif

#include "shmemx_device_coll.cuh" /* collectives */
#include "shmemx_device_wait.cuh" /* vector waits */

#endif /* SHMEMX_DEVICE_CUH */
