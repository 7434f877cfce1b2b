// Probe of the device-API rows where NVSHMEM is ahead (docs/device.md,
// "Measured"): put_signal ping-pong, remote fetch_add, putmem_nbi + quiet and
// putmem_nbi_block bandwidth. Each experiment isolates one suspected cause
// (the study's hypotheses H1-H6); ushmem side only, 2 PEs on one GPU under MPS
// (bench/cuda/probe_run.sh starts it). Run under ushrun -n 2 with
// USHMEM_DEVICE=0; E2 needs device waits (MPS, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50).
//
// PE 0 prints one line per number, then a short summary ("| " lines):
//   R <bench> <variant> <bytes> <value>
// value units: e1_* SM cycles (clock64); e2_*, e3_fadd, e3_stats, e4_*, e5_*, e8_lat_*, e9_* us
// (per round trip / per operation / per iteration); e6_*, e7_*, e8_bw_* GB/s; e3_smid an
// SM id; info_* as named. A variant whose data check fails prints
// "# FAILED: ..." and no R line.
//   E0 info      SMs this PE's kernels land on (under MPS), clock, peer offset
//   E1 e1_*      which operations invalidate L1: a peer-table word (ld.nc) and
//                a source word (ld) read again after each operation
//   E2 e2_sig_pingpong  8-byte put_signal ping-pong, variants v0..v5
//   E3 e3_*      remote fetch_add latency at 64 addresses 4 KiB apart, then
//                64 addresses 2 MiB apart (library call and raw atom), with %smid
//   E4 e4_fadd   library fetch_add against a raw atom on a pointer taken once
//                (and atomicAdd_system, the pointer taken on every call, and
//                two pieces of the route alone: the indexed near base, the
//                peer table through ld.global.nc), at E3's fastest and slowest
//                address
//   E5 e5_store_fence  one CTA of 512: thread T stores 8 B to the peer,
//                bar.sync, thread 0 fence.sc.sys, bar.sync
//   E6 e6_put_bw putmem_nbi_block over 132 CTAs (library / pointer once + the
//                library's copy / pointer once + plain int4 loop)
//   E7 e7_bw     TMA bulk copy (cp.async.bulk via shared memory, mbarriers) to
//                the peer against putmem_nbi_block and cudaMemcpyAsync
//   E8 e8_bw, e8_lat  a group put's fixed cost: putmem_nbi_block (library)
//                against the earlier path (route, sync, general copy, sync),
//                and a pointer taken once + the library's 16-byte-word copy
//                or a plain int4 loop; bandwidth
//                at 1 CTA (1-64 KiB) and 132 CTAs (64 KiB-4 MiB), put + quiet
//                latency for a warp and a block (64 B-4 KiB)
//   E9 e9_signal an 8-byte store to the peer then a signal or a fence, one
//                thread: the library's release signal against relaxed, GPU-scope
//                fence and release forms, and the quiet's fence.sc.sys against
//                fence.sc.gpu (us per iteration)
//   Ea, Eb       putmem_nbi_block's fixed cost piece by piece, and copies
//                larger than L2 (probe_put.cuh; e10_*, e11_* GB/s)
// usage: bench_dev_probe [MAX_BYTES (default 1 GiB; E7's and Eb's largest size)]
// env: PROBE_EXPS (default "0123456789ab": which experiments run)
#include <cuda_runtime.h>
#include <shmemx.h>
#include <shmemx_device.cuh>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#define BENCH_NAME                "bench_dev_probe"
#define BENCH_GLOBAL_EXIT(status) shmem_global_exit(status)
static void summary(void);
#define BENCH_ON_ERROR() summary()
#include "bench_util.cuh"
#include "bench_ushmem.cuh"

static const int kBlock = 512;       // threads of the block variants and of the bandwidth CTAs
static const int kReps = 5;          // timed launches per number (the median is printed)
static const double kTargetMs = 20;  // one timed launch lasts about this
static const int kPairIters = 10000; // iterations per launch of the ping-pongs
static const int kPairWarm = 1000;
static const int kCtrs = 64;        // E3: counters per spacing
static const int kFaddIters = 2000; // E3: fetch_adds per launch
static const int kFaddReps = 3;     // E3: launches per counter and form
static const int kE4Iters = 20000;  // E4: fetch_adds per launch
static const size_t kGuard = 256;   // bytes after a copy's end that must stay 0

#define DEVH const SHMEMX_GRID_CONSTANT shmemx_dev_t

// Control words (uint64_t indices into the symmetric ctl block), one 128-byte
// line each so no two share an L1 line.
enum {
    C_E1_FLAG = 0,   // E1: the word the loads and the library wait read (0)
    C_E1_SCR = 16,   // E1: stores and atomics
    C_E2_SIG = 32,   // E2: the signal word
    C_E2_DATA = 48,  // E2: the 8 bytes put
    C_E2_SRC = 64,   // E2: their source
    C_E2_ERR = 80,   // E2: set when a volatile poll gave up
    C_E5_WORD = 96,  // E5: the word stored on the peer
    C_AGREE = 112,   // 1 if this PE's peer mapping agrees with symmetric addresses mod 16
    C_E9_DATA = 128, // E9: the data word stored on the peer
    C_E9_SIG = 144,  // E9: the signal word
    C_WORDS = 1024
};

/* ---- PTX helpers ---- */

__device__ __forceinline__ uint64_t p_ld_nc(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.global.nc.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ uint64_t p_ld(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ unsigned p_smid(void)
{
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}
__device__ __forceinline__ uint64_t p_now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
// Only ALU work: lets an operation before it finish before a timed load.
__device__ __forceinline__ void p_spin_cycles(long long c)
{
    long long t0 = clock64();
    while (clock64() - t0 < c) {
    }
}

/* ---- helper kernels: fill, check, look ---- */

__global__ void k_fill(uint4 *p, size_t nw, uint32_t seed)
{
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < nw;
         j += (size_t)gridDim.x * blockDim.x)
        p[j] = make_uint4((uint32_t)j ^ seed, (uint32_t)(j >> 32) + seed, (uint32_t)j * 2654435761u,
                          seed);
}
__global__ void k_zero(uint4 *p, size_t nw)
{
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < nw;
         j += (size_t)gridDim.x * blockDim.x)
        p[j] = make_uint4(0, 0, 0, 0);
}
// bad += 16-byte words of a that differ from b (b NULL: from zero)
__global__ void k_cmp(const uint4 *a, const uint4 *b, size_t nw, unsigned long long *bad)
{
    unsigned long long n = 0;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < nw;
         j += (size_t)gridDim.x * blockDim.x) {
        uint4 x = a[j], y = b ? b[j] : make_uint4(0, 0, 0, 0);
        n += x.x != y.x || x.y != y.y || x.z != y.z || x.w != y.w;
    }
    if (n)
        atomicAdd(bad, n);
}
__global__ void k_peek(const uint64_t *p, size_t stride, int n, uint64_t *out)
{
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        out[i] = *(const volatile uint64_t *)(p + (size_t)i * stride);
}
// E0: which SMs this process's CTAs land on (bit per SM id)
__global__ void k_census(unsigned *mask, uint64_t spin_ns)
{
    if (threadIdx.x)
        return;
    unsigned s = p_smid();
    atomicOr(mask + (s / 32) % 8, 1u << (s % 32));
    uint64_t t0 = p_now_ns();
    while (p_now_ns() - t0 < spin_ns) {
    }
}

/* ---- E1: which operations clear L1 ----
 * One thread warms two lines, a peer-table entry (ld.global.nc, as
 * ushmemi_dev_base) and a source word (ld.global, as the copy), runs one
 * operation, then reads both again, the second load's address depending on
 * the first (as the put path after a wait). ~30-40 cycles: an L1 hit;
 * ~200+: L2. "cold" reads lines never touched: the miss reference. */
enum {
    OP_COLD,
    OP_NONE,
    OP_LD_VOLATILE,
    OP_LD_RELAXED_SYS,
    OP_LD_ACQUIRE_SYS,
    OP_LD_ACQUIRE_GPU,
    OP_FENCE_SC_SYS,
    OP_FENCE_ACQ_REL_SYS,
    OP_MEMBAR_SYS,
    OP_ST_RELEASE_SYS,
    OP_MEMBAR_GL,
    OP_ATOM_RELAXED_SYS,
    OP_RED_RELEASE_SYS,
    OP_LIB_SIGNAL_WAIT,
    OP_N
};
static const char *const e1_names[OP_N] = {"cold",
                                           "none",
                                           "ld.volatile",
                                           "ld.relaxed.sys",
                                           "ld.acquire.sys",
                                           "ld.acquire.gpu",
                                           "fence.sc.sys",
                                           "fence.acq_rel.sys",
                                           "membar.sys",
                                           "st.release.sys",
                                           "membar.gl",
                                           "atom.relaxed.sys",
                                           "red.release.sys",
                                           "lib_signal_wait"};

template <int OP>
__device__ __forceinline__ uint64_t e1_op(const shmemx_dev_t &d, uint64_t *flag, uint64_t *scr,
                                          uint64_t v)
{
    uint64_t x = 0;
    if constexpr (OP == OP_LD_VOLATILE)
        asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(x) : "l"(flag) : "memory");
    else if constexpr (OP == OP_LD_RELAXED_SYS)
        asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(x) : "l"(flag) : "memory");
    else if constexpr (OP == OP_LD_ACQUIRE_SYS)
        asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(x) : "l"(flag) : "memory");
    else if constexpr (OP == OP_LD_ACQUIRE_GPU)
        asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(x) : "l"(flag) : "memory");
    else if constexpr (OP == OP_FENCE_SC_SYS)
        asm volatile("fence.sc.sys;" ::: "memory");
    else if constexpr (OP == OP_FENCE_ACQ_REL_SYS)
        asm volatile("fence.acq_rel.sys;" ::: "memory");
    else if constexpr (OP == OP_MEMBAR_SYS)
        asm volatile("membar.sys;" ::: "memory"); // __threadfence_system, NVSHMEM's quiet
    else if constexpr (OP == OP_ST_RELEASE_SYS)
        asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(scr), "l"(v) : "memory");
    else if constexpr (OP == OP_MEMBAR_GL)
        asm volatile("membar.gl;" ::: "memory"); // __threadfence
    else if constexpr (OP == OP_ATOM_RELAXED_SYS)
        asm volatile("atom.relaxed.sys.global.add.u64 %0, [%1], 1;"
                     : "=l"(x)
                     : "l"(scr + 1)
                     : "memory");
    else if constexpr (OP == OP_RED_RELEASE_SYS)
        asm volatile("red.release.sys.global.add.u64 [%0], 1;" ::"l"(scr + 2) : "memory");
    else if constexpr (OP == OP_LIB_SIGNAL_WAIT)
        x = shmemx_dev_signal_wait_until(d, flag, SHMEMX_DEV_CMP_GE, 0); // satisfied at once
    return x;
}

// One shot: out[0] = cycles of the table read, out[1] = of the source read.
// zero is 0 at run time: it makes addresses depend on values without
// changing them, so the loads cannot start before what they depend on.
template <int OP>
__global__ void e1_single(DEVH d, const uint64_t *tbl, const uint64_t *src, uint64_t *flag,
                          uint64_t *scr, uint64_t zero, long long *out)
{
    __shared__ volatile uint64_t sh[4];
    uint64_t acc = 0;
    if constexpr (OP != OP_COLD) {
        acc = p_ld_nc(tbl) + p_ld(src);
        acc += p_ld_nc(tbl + (acc & zero)) + p_ld(src + (acc & zero));
    }
    sh[0] = acc; // the warm-up loads have landed before the operation
    uint64_t x = e1_op<OP>(d, flag + (acc & zero), scr + (acc & zero), acc);
    sh[1] = x;
    p_spin_cycles(20000); // a fence in flight finishes before the timed loads
    long long t0 = clock64();
    uint64_t a = p_ld_nc(tbl + ((acc ^ x) & zero));
    sh[2] = a;
    long long t1 = clock64();
    uint64_t b = p_ld(src + (a & zero));
    sh[3] = b;
    long long t2 = clock64();
    out[0] = t1 - t0;
    out[1] = t2 - t1;
    out[2] = (long long)(a + b + x);
}

// Loop form (no reliance on where clock reads land): iters x (operation, then
// the table and the dependent source read when RELOAD), each iteration's
// operation depending on the previous one's values; out[0] = total cycles.
template <int OP, bool RELOAD>
__global__ void e1_chain(DEVH d, const uint64_t *tbl, const uint64_t *src, uint64_t *flag,
                         uint64_t *scr, uint64_t zero, int iters, long long *out)
{
    __shared__ volatile uint64_t sh;
    uint64_t acc = p_ld_nc(tbl) + p_ld(src);
    sh = acc;
    long long t0 = clock64();
    for (int i = 0; i < iters; i++) {
        uint64_t x = e1_op<OP>(d, flag + (acc & zero), scr + (acc & zero), acc);
        if constexpr (RELOAD) {
            uint64_t a = p_ld_nc(tbl + ((acc ^ x) & zero));
            acc += p_ld(src + (a & zero)) + 1;
        } else {
            acc += x + 1;
        }
    }
    sh = acc;
    long long t1 = clock64();
    out[0] = t1 - t0;
    out[1] = (long long)acc;
}

/* ---- E2: put_signal ping-pong, 8 bytes, one thread per PE ----
 * v0 lib:                 shmemx_dev_putmem_signal_nbi (as bench_dev_ushmem)
 * v1 ptr_once:            peer pointers (data, signal) taken before the loop;
 *                         weak store of *src, st.release.sys; library wait
 * v2 ptr_once_src_early:  v1, the source read before the wait
 * v3 src_before_route:    H1a's small-size form: the 8 bytes read into a
 *                         register before the library's route; the route and
 *                         the signal (a second route) as shipped
 * v4 h1a_sym_align:       H1a as the study words it: the route as shipped, the
 *                         library's copy with its alignment decisions taken
 *                         from the symmetric address instead of the translated
 * v5 ref_volatile_poll:   v1 with NVSHMEM's wait (volatile polls, no acquire:
 *                         not a correct wait, a reference for the acquire cost) */
static const int kE2Variants = 6;
static const char *const e2_names[kE2Variants] = {
    "v0_lib",           "v1_ptr_once",         "v2_ptr_once_src_early", "v3_src_before_route",
    "v4_h1a_sym_align", "v5_ref_volatile_poll"};

// The library's copy pieces, every alignment decision on sym (which agrees
// with the store address r modulo 16: checked on the host).
__device__ __forceinline__ void h1a_pieces(char *r, uintptr_t sym, const char *src, size_t n,
                                           unsigned agree)
{
    while (n) {
        unsigned p = 8;
        while (p > 1 && (p > n || p > agree || (sym & (p - 1))))
            p >>= 1;
        switch (p) {
        case 8: *(unsigned long long *)r = *(const unsigned long long *)src; break;
        case 4: *(unsigned *)r = *(const unsigned *)src; break;
        case 2: *(unsigned short *)r = *(const unsigned short *)src; break;
        default: *r = *src; break;
        }
        r += p;
        src += p;
        sym += p;
        n -= p;
    }
}
template <typename W>
__device__ __forceinline__ void h1a_copy_w(char *r, uintptr_t sym, const char *src, size_t n)
{
    size_t head = (sizeof(W) - (sym & (sizeof(W) - 1))) & (sizeof(W) - 1);
    if (head > n)
        head = n;
    if (head)
        h1a_pieces(r, sym, src, head, sizeof(W));
    size_t nw = (n - head) / sizeof(W), tail = n - head - nw * sizeof(W);
    W *__restrict__ dw = (W *)(r + head);
    const W *__restrict__ sw = (const W *)(src + head);
    for (size_t i = 0; i < nw; i++)
        dw[i] = sw[i];
    if (tail)
        h1a_pieces((char *)(dw + nw), sym + head + nw * sizeof(W), (const char *)(sw + nw), tail,
                   sizeof(W));
}
__device__ __forceinline__ void h1a_copy(char *r, const void *sym, const char *src, size_t n)
{
    uintptr_t s = (uintptr_t)sym, x = s ^ (uintptr_t)src;
    if ((x & 15) == 0)
        h1a_copy_w<ushmemi_dev_v4>(r, s, src, n);
    else if ((x & 7) == 0)
        h1a_copy_w<unsigned long long>(r, s, src, n);
    else if ((x & 3) == 0)
        h1a_copy_w<unsigned>(r, s, src, n);
    else
        h1a_copy_w<unsigned char>(r, s, src, n);
}

template <int V>
__device__ __forceinline__ void e2_put(const shmemx_dev_t &d, char *data, const char *src,
                                       uint64_t *sig, uint64_t v, int peer, uint64_t *pd,
                                       uint64_t *ps, uint64_t early)
{
    if constexpr (V == 0) {
        shmemx_dev_putmem_signal_nbi(d, data, src, 8, sig, v, SHMEMX_DEV_SIGNAL_SET, peer);
    } else if constexpr (V == 1 || V == 5) {
        *pd = *(const uint64_t *)src;
        ushmemi_dev_st_release64(ps, v);
    } else if constexpr (V == 2) {
        *pd = early;
        ushmemi_dev_st_release64(ps, v);
    } else if constexpr (V == 3) {
        uint64_t val = p_ld((const uint64_t *)src);
        int w;
        char *r = ushmemi_dev_route(d, data, 8, peer, "e2_v3", &w);
        if (!r)
            ushmemi_dev_trap();
        *(uint64_t *)r = val;
        ushmemi_dev_signal(d, sig, v, SHMEMX_DEV_SIGNAL_SET, peer, false, "e2_v3");
    } else {
        int w;
        char *r = ushmemi_dev_route(d, data, 8, peer, "e2_v4", &w);
        if (!r)
            ushmemi_dev_trap();
        h1a_copy(r, data, src, 8);
        ushmemi_dev_signal(d, sig, v, SHMEMX_DEV_SIGNAL_SET, peer, false, "e2_v4");
    }
}
// false: gave up (v5's own 5 s limit; the library's waits trap on theirs)
template <int V>
__device__ __forceinline__ bool e2_wait(const shmemx_dev_t &d, uint64_t *sig, uint64_t v,
                                        uint64_t *err)
{
    if constexpr (V != 5) {
        shmemx_dev_signal_wait_until(d, sig, SHMEMX_DEV_CMP_GE, v);
        return true;
    } else {
        uint64_t t0 = 0;
        for (unsigned polls = 1; *(volatile uint64_t *)sig < v; polls++) {
            if ((polls & 1023) == 0) {
                uint64_t t = p_now_ns();
                if (t0 == 0)
                    t0 = t;
                else if (t - t0 > 5000000000ull) {
                    *(volatile uint64_t *)err = 1;
                    return false;
                }
            }
        }
        return true;
    }
}
template <int V>
__global__ void e2_pingpong(DEVH d, char *data, const char *src, uint64_t *sig, int me, int iters,
                            uint64_t base, uint64_t *err)
{
    const int peer = 1 - me;
    uint64_t *pd = 0, *ps = 0, early = 0;
    if constexpr (V == 1 || V == 2 || V == 5) {
        pd = (uint64_t *)shmemx_dev_ptr(d, data, peer);
        ps = (uint64_t *)shmemx_dev_ptr(d, sig, peer);
    }
    if constexpr (V == 2)
        early = p_ld((const uint64_t *)src);
    for (int i = 1; i <= iters; i++) {
        uint64_t v = base + (uint64_t)i;
        if (me == 1) {
            if constexpr (V == 2)
                early = p_ld((const uint64_t *)src);
            if (!e2_wait<V>(d, sig, v, err))
                return;
        }
        e2_put<V>(d, data, src, sig, v, peer, pd, ps, early);
        if (me == 0) {
            if constexpr (V == 2)
                early = p_ld((const uint64_t *)src);
            if (!e2_wait<V>(d, sig, v, err))
                return;
        }
    }
    shmemx_dev_quiet(d);
}

/* ---- E3 / E4: remote fetch_add, one thread, dependent loop (as bench_dev_ushmem) ----
 * F = 0 library; 1 raw atom.relaxed.sys.global on a pointer taken once;
 * 2 atomicAdd_system on that pointer (NVSHMEM's form: generic address);
 * 3 raw atom on a pointer taken with shmemx_dev_ptr on every call; 4 atom.relaxed.gpu
 * (GPU scope, where ours is .sys) on the pointer taken once. Pieces of the
 * route, recomputed on every call before the raw atom: 5 near_base[world PE -
 * near_first] (an indexed constant-bank load); 6 the device table
 * peer_base[world PE] through ld.global.nc (as NVSHMEM's peer-base table).
 * 7 and 8: 0 and 3 with the PE read from shared memory (volatile) on every
 * call, so that neither the compiler nor ptxas can hoist the translation out
 * of the loop (they do for 0, 3, 5 and 6 when nothing in the loop may write
 * the handle; an opaque register move was not enough: ptxas hoisted 3's
 * translation past it); 9: 1 with the same read feeding the pointer (+0), the
 * base to subtract: what one call pays where it is not in a loop, as the MoE
 * dispatch's fetch_adds. Candidate translations for one call, each with the
 * PE read the same way and a trap where the library would take its rare path:
 * 10 the library's fast half alone (ushmemi_dev_route_fast, no rare path in
 * the kernel); 11 the near index as one multiply-add, pe * stride + (start -
 * near_first), the constant part off the dependent chain; 12 a near table
 * indexed by team PE that holds this PE's own base too (emulated on the
 * world handle, where team and world PEs coincide: near_first 0 and stride 1
 * are checked on the host), so no own-heap select.
 * out[0] sum, out[1] the last value fetched, out[2] %smid. */
static const int kFaddForms = 13;
static const char *const fadd_names[kFaddForms] = {"lib",
                                                   "raw_ptr_once",
                                                   "atomicadd_sys_ptr_once",
                                                   "raw_ptr_per_call",
                                                   "raw_gpu_ptr_once",
                                                   "route_near_idx",
                                                   "route_ldg_table",
                                                   "lib_opaque_pe",
                                                   "raw_ptr_per_call_opaque_pe",
                                                   "raw_ptr_once_opaque_pe",
                                                   "fast_half_opaque_pe",
                                                   "fused_index_opaque_pe",
                                                   "team_table_opaque_pe"};
__device__ __forceinline__ uint64_t p_atom_add(uint64_t *p, uint64_t v)
{
    uint64_t old;
    asm volatile("atom.relaxed.sys.global.add.u64 %0, [%1], %2;"
                 : "=l"(old)
                 : "l"(p), "l"(v)
                 : "memory");
    return old;
}
template <int F> __global__ void k_fadd(DEVH d, uint64_t *ctr, int pe, int iters, uint64_t *out)
{
    uint64_t *p = 0;
    if constexpr (F == 1 || F == 2 || F == 4 || F == 9)
        p = (uint64_t *)shmemx_dev_ptr(d, ctr, pe);
    __shared__ int s_pe; /* F >= 7: the PE, read back on every call */
    s_pe = pe;
    __syncthreads();
    uint64_t inc = 1, acc = 0, old = 0;
    for (int i = 0; i < iters; i++) {
        if constexpr (F == 0)
            old = shmemx_dev_atomic_fetch_add(d, ctr, inc, pe);
        else if constexpr (F == 1)
            old = p_atom_add(p, inc);
        else if constexpr (F == 2)
            old = atomicAdd_system((unsigned long long *)p, (unsigned long long)inc);
        else if constexpr (F == 4)
            asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], %2;"
                         : "=l"(old)
                         : "l"(p), "l"(inc)
                         : "memory");
        else if constexpr (F == 3)
            old = p_atom_add((uint64_t *)shmemx_dev_ptr(d, ctr, pe), inc);
        else if constexpr (F == 7)
            old = shmemx_dev_atomic_fetch_add(d, ctr, inc, *(volatile int *)&s_pe);
        else if constexpr (F == 8)
            old = p_atom_add((uint64_t *)shmemx_dev_ptr(d, ctr, *(volatile int *)&s_pe), inc);
        else if constexpr (F == 9)
            old = p_atom_add(p + (*(volatile int *)&s_pe - pe), inc);
        else if constexpr (F >= 10) {
            const int q = *(volatile int *)&s_pe;
            uint64_t base;
            bool ok;
            if constexpr (F == 10) {
                int w;
                char *r;
                ok = ushmemi_dev_route_fast(d, ctr, 8, q, &w, true, &r);
                base = (uint64_t)(uintptr_t)r - ((uint64_t)(uintptr_t)ctr - d.heap_base);
            } else if constexpr (F == 11) {
                const unsigned i =
                    (unsigned)q * (unsigned)d.team_stride + (unsigned)(d.team_start - d.near_first);
                const int w = d.team_start + q * d.team_stride;
                const bool near = i < (unsigned)d.near_n, self = w == d.world_pe;
                const uint64_t nb = d.near_base[near ? i : 0];
                base = self ? d.heap_base : nb;
                ok = (near | self) & ((unsigned)q < (unsigned)d.n_pes) & (base != 0);
            } else {
                const bool in = (unsigned)q < (unsigned)d.near_n;
                base = d.near_base[in ? q : 0];
                ok = in & ((unsigned)q < (unsigned)d.n_pes) & (base != 0);
            }
            if (__builtin_expect(!ok, 0))
                ushmemi_dev_trap();
            old = p_atom_add(
                (uint64_t *)(uintptr_t)(base + ((uint64_t)(uintptr_t)ctr - d.heap_base)), inc);
        } else {
            const int wp = d.team_start + pe * d.team_stride;
            uint64_t base;
            if constexpr (F == 5)
                base = d.near_base[wp - d.near_first];
            else
                base = ushmemi_dev_ld_nc64((const uint64_t *)(uintptr_t)d.peer_base + wp);
            old = p_atom_add(
                (uint64_t *)(uintptr_t)(base + ((uint64_t)(uintptr_t)ctr - d.heap_base)), inc);
        }
        acc += old;
        inc = 1 + (old >> 63);
    }
    out[0] = acc;
    out[1] = old;
    out[2] = p_smid();
}

/* ---- E5: which thread's store a fence waits for (H4) ----
 * Thread T (-1: none) stores 8 bytes to the peer (pointer taken once),
 * bar.sync, thread 0 fence.sc.sys, bar.sync. */
__global__ void k_e5(DEVH d, uint64_t *word, int t, int iters, uint64_t seed)
{
    uint64_t *p = (uint64_t *)shmemx_dev_ptr(d, word, 1);
    for (int i = 0; i < iters; i++) {
        if ((int)threadIdx.x == t)
            *p = seed + (uint64_t)i;
        ushmemi_dev_bar_block();
        if (threadIdx.x == 0)
            ushmemi_dev_fence_sc();
        ushmemi_dev_bar_block();
    }
}

/* ---- E6: putmem_nbi_block bandwidth, 132 CTAs, each its own chunk ----
 * S = 0 library call (bench_dev_ushmem's k_bw); 1 pointer taken once, then
 * sync, the library's copy (ushmemi_dev_copy: dispatch, head/tail, 4-deep
 * loop), sync; 2 pointer once, sync, a plain strided int4 loop, sync. */
static const char *const e6_names[3] = {"lib", "ptr_once_libcopy", "ptr_once_plain"};
__device__ __forceinline__ void bw_chunk(size_t n, size_t *off, size_t *len)
{
    size_t nb = gridDim.x;
    size_t chunk = ((n + nb - 1) / nb + 15) & ~(size_t)15;
    *off = (size_t)blockIdx.x * chunk;
    *len = *off < n ? (n - *off < chunk ? n - *off : chunk) : 0;
}
template <int S>
__global__ void k_e6(DEVH d, char *dst, const char *src, size_t n, int pe, int iters)
{
    size_t off, len;
    bw_chunk(n, &off, &len);
    if (len) {
        if constexpr (S == 0) {
            for (int i = 0; i < iters; i++)
                shmemx_dev_putmem_nbi_block(d, dst + off, src + off, len, pe);
        } else {
            char *p = (char *)shmemx_dev_ptr(d, dst, pe);
            for (int i = 0; i < iters; i++) {
                ushmemi_dev_bar_block();
                if constexpr (S == 1) {
                    ushmemi_dev_copy<true>(shmemx_dev_block_group(), p + off, src + off, len);
                } else {
                    int4 *__restrict__ t = (int4 *)(p + off);
                    const int4 *__restrict__ s = (const int4 *)(src + off);
                    size_t nw = len / 16;
                    for (size_t j = threadIdx.x; j < nw; j += blockDim.x)
                        t[j] = s[j];
                }
                ushmemi_dev_bar_block();
            }
        }
    }
    shmemx_dev_quiet_block(d);
}

/* ---- E7: TMA bulk copy to the peer (H6) ----
 * One thread per CTA drives a ring of `stages` shared-memory buffers of
 * `stage` bytes: cp.async.bulk global->shared completing on the stage's
 * mbarrier, then cp.async.bulk shared->global (bulk group) to the peer
 * pointer; a stage is refilled once its store has read it (wait_group.read).
 * The iterations form one stream of chunks; the CTA drains once at the end. */
__device__ __forceinline__ unsigned smem_u32(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void tma_load(void *sbuf, const void *g, unsigned bytes, uint64_t *bar)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
                 "r"(bytes)
                 : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
            "r"(smem_u32(sbuf)),
        "l"(g), "r"(bytes), "r"(smem_u32(bar))
        : "memory");
}
__device__ __forceinline__ void tma_wait(uint64_t *bar, unsigned parity)
{
    asm volatile("{\n\t.reg .pred p;\n"
                 "PROBE_TMA_WAIT:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra PROBE_TMA_WAIT;\n}" ::"r"(smem_u32(bar)),
                 "r"(parity)
                 : "memory");
}
__device__ __forceinline__ void tma_store(void *g, const void *sbuf, unsigned bytes)
{
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(g),
                 "r"(smem_u32(sbuf)), "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
__global__ void __launch_bounds__(32)
    k_e7_tma(char *dst, const char *src, size_t n, int iters, unsigned stage, unsigned stages)
{
    extern __shared__ __align__(128) unsigned char e7_smem[];
    size_t off, len;
    bw_chunk(n, &off, &len);
    if (threadIdx.x != 0 || len == 0)
        return;
    uint64_t *bar = (uint64_t *)e7_smem;
    unsigned char *buf = e7_smem + 128;
    for (unsigned s = 0; s < stages; s++)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(bar + s)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    const uint64_t nk = (len + stage - 1) / stage, total = nk * (uint64_t)iters;
    auto piece = [&](uint64_t c, size_t *o) {
        *o = (size_t)(c % nk) * stage;
        return (unsigned)(len - *o < stage ? len - *o : stage);
    };
    auto load = [&](uint64_t c) {
        size_t o;
        unsigned b = piece(c, &o);
        unsigned s = (unsigned)(c % stages);
        tma_load(buf + (size_t)s * stage, src + off + o, b, bar + s);
    };
    for (uint64_t c = 0; c < stages && c < total; c++)
        load(c);
    for (uint64_t c = 0; c < total; c++) {
        unsigned s = (unsigned)(c % stages);
        tma_wait(bar + s, (unsigned)((c / stages) & 1));
        size_t o;
        unsigned b = piece(c, &o);
        tma_store(dst + off + o, buf + (size_t)s * stage, b);
        if (c >= 1 && c - 1 + stages < total) {
            // chunk c-1's store has read its stage (only chunk c's may still read)
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
            load(c - 1 + stages);
        }
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    asm volatile("fence.proxy.async.global;" ::: "memory");
    ushmemi_dev_fence_sc();
}

/* ---- E8: a group put's fixed cost ----
 * V = 0 library (putmem_nbi_block / _warp); 1 the earlier library path:
 * route in every thread, sync, the general copy (ushmemi_dev_copy), sync; 2 a
 * pointer taken once, sync, the library's 16-byte-word copy
 * (ushmemi_dev_copy16), sync; 3 a pointer taken once, sync, a plain strided
 * int4 loop (one load in flight per thread), sync. */
static const char *const e8_names[4] = {"lib", "route_sync_copy", "ptr_once_copy16",
                                        "ptr_once_plain"};
template <int V, typename G>
__device__ __forceinline__ void e8_put(const shmemx_dev_t &d, G g, char *dst, const char *src,
                                       size_t n, int pe, char *once)
{
    if constexpr (V == 0) {
        ushmemi_dev_put(d, g, dst, src, n, pe, true, "e8");
    } else if constexpr (V == 1) {
        int w;
        char *r = ushmemi_dev_route(d, dst, n, pe, "e8", &w);
        g.sync();
        ushmemi_dev_copy<true>(g, r, src, n);
        g.sync();
    } else {
        g.sync();
        if constexpr (V == 2) {
            ushmemi_dev_copy16<true>(g, once, src, (unsigned)(n / 16));
        } else {
            int4 *__restrict__ t = (int4 *)once;
            const int4 *__restrict__ s = (const int4 *)src;
            for (size_t j = g.rank(); j < n / 16; j += g.size())
                t[j] = s[j];
        }
        g.sync();
    }
}
template <int V>
__global__ void k_e8_bw(DEVH d, char *dst, const char *src, size_t n, int pe, int iters)
{
    size_t off, len;
    bw_chunk(n, &off, &len);
    char *once = (char *)shmemx_dev_ptr(d, dst + off, pe);
    if (len)
        for (int i = 0; i < iters; i++)
            e8_put<V>(d, shmemx_dev_block_group(), dst + off, src + off, len, pe, once);
    shmemx_dev_quiet_block(d);
}
template <int V, bool WARP>
__global__ void k_e8_lat(DEVH d, char *dst, const char *src, size_t n, int pe, int iters)
{
    char *once = (char *)shmemx_dev_ptr(d, dst, pe);
    for (int i = 0; i < iters; i++) {
        if constexpr (WARP) {
            e8_put<V>(d, shmemx_dev_warp_group(), dst, src, n, pe, once);
            shmemx_dev_quiet_warp(d);
        } else {
            e8_put<V>(d, shmemx_dev_block_group(), dst, src, n, pe, once);
            shmemx_dev_quiet_block(d);
        }
    }
}

/* ---- E9: what a signal and a quiet cost, by fence scope ----
 * One thread, per iteration: an 8-byte store to the peer's data word, then
 * V = 0 the library's signal_op (ADD: red.release.sys); 1 red.relaxed.sys
 * (no ordering: NVSHMEM's signal_op); 2 fence.acq_rel.gpu + red.relaxed.sys;
 * 3 red.release.gpu; 4 fence.sc.sys (the library's quiet) alone; 5
 * fence.sc.gpu alone. GPU scope orders the store for every thread of this GPU
 * (the PEs of this run share it), not for other GPUs or the host. */
static const char *const e9_names[6] = {"lib_signal",      "red_relaxed_sys", "acq_rel_gpu_red",
                                        "red_release_gpu", "fence_sc_sys",    "fence_sc_gpu"};
template <int V>
__global__ void k_e9(DEVH d, uint64_t *data, uint64_t *sig, int iters, uint64_t seed)
{
    uint64_t *pd = (uint64_t *)shmemx_dev_ptr(d, data, 1);
    uint64_t *ps = (uint64_t *)shmemx_dev_ptr(d, sig, 1);
    for (int i = 0; i < iters; i++) {
        *(volatile uint64_t *)pd = seed + (uint64_t)i;
        if constexpr (V == 0)
            shmemx_dev_signal_op(d, sig, 1, SHMEMX_DEV_SIGNAL_ADD, 1);
        else if constexpr (V == 1)
            asm volatile("red.relaxed.sys.global.add.u64 [%0], 1;" ::"l"(ps) : "memory");
        else if constexpr (V == 2)
            asm volatile("fence.acq_rel.gpu;\n\tred.relaxed.sys.global.add.u64 [%0], 1;" ::"l"(ps)
                         : "memory");
        else if constexpr (V == 3)
            asm volatile("red.release.gpu.global.add.u64 [%0], 1;" ::"l"(ps) : "memory");
        else if constexpr (V == 4)
            asm volatile("fence.sc.sys;" ::: "memory");
        else
            asm volatile("fence.sc.gpu;" ::: "memory");
    }
}

/* ---- host: results ---- */

struct result {
    std::string bench, variant;
    size_t bytes;
    double v;
};
static std::vector<result> g_res;

static void row(const char *bench, const char *variant, size_t bytes, double v)
{
    if (g_me != 0)
        return;
    g_res.push_back({bench, variant, bytes, v});
    printf("R %s %s %zu %.3f\n", bench, variant, bytes, v);
    fflush(stdout);
}

static void failed(const char *what)
{
    if (g_me != 0)
        return;
    printf("# FAILED: %s\n", what);
    fflush(stdout);
    g_res.push_back({"FAILED", what, 0, 0});
}

// The value of a row, or -1 when it was not measured.
static double val(const char *bench, const char *variant, size_t bytes)
{
    for (const result &r : g_res)
        if (r.bench == bench && r.variant == variant && r.bytes == bytes)
            return r.v;
    return -1;
}

/* ---- host: shared state ---- */

struct probe {
    shmemx_dev_t d;
    bool waits;
    size_t max;      // E7's largest size; dst and src hold max + 2 MiB
    char *dst, *src; // symmetric
    uint64_t *ctl;   // symmetric, C_WORDS words
    char *ctrs;      // symmetric: E3's counters
    char *pdst;      // the other PE's dst as mapped here
    bool agree16;    // on both PEs, symmetric and translated addresses agree mod 16 (H1a)
    uint64_t *out;   // cudaMalloc: kernel outputs
    unsigned long long *bad;
    std::vector<uint64_t> ctr_expect; // E3/E4: fetch_adds done on each counter
};

static const size_t kS4k = 4096, kS2m = (size_t)2 << 20;
static size_t ctr_off(int set, int i) // set 0: 4 KiB apart; 1: 2 MiB apart
{
    return set == 0 ? (size_t)i * kS4k : kS2m + (size_t)i * kS2m;
}
static const size_t kCtrBytes = kS2m + kCtrs * kS2m;

static uint64_t peek(probe &p, const void *addr)
{
    k_peek<<<1, 1, 0, g_s>>>((const uint64_t *)addr, 1, 1, p.out + 15);
    CK(cudaGetLastError());
    uint64_t v = 0;
    CK(cudaMemcpyAsync(&v, p.out + 15, 8, cudaMemcpyDeviceToHost, g_s));
    CK(cudaStreamSynchronize(g_s));
    return v;
}

static int grid_for(size_t nw)
{
    size_t g = (nw + 255) / 256;
    return (int)std::max((size_t)1, std::min(g, (size_t)1056));
}

// src[0, n) gets a pattern (seed), the peer's dst[0, n + kGuard) zeros.
static void prepare_copy(probe &p, size_t n, uint32_t seed)
{
    k_fill<<<grid_for(n / 16), 256, 0, g_s>>>((uint4 *)p.src, n / 16, seed);
    CK(cudaGetLastError());
    k_zero<<<grid_for((n + kGuard) / 16), 256, 0, g_s>>>((uint4 *)p.pdst, (n + kGuard) / 16);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(g_s));
}

// 16-byte words of the peer's dst[0, n) that differ from src, plus non-zero
// words in the kGuard bytes after it.
static unsigned long long check_copy(probe &p, size_t n)
{
    CK(cudaMemsetAsync(p.bad, 0, sizeof *p.bad, g_s));
    k_cmp<<<grid_for(n / 16), 256, 0, g_s>>>((const uint4 *)p.pdst, (const uint4 *)p.src, n / 16,
                                             p.bad);
    CK(cudaGetLastError());
    k_cmp<<<1, 256, 0, g_s>>>((const uint4 *)(p.pdst + n), NULL, kGuard / 16, p.bad);
    CK(cudaGetLastError());
    unsigned long long b = 0;
    CK(cudaMemcpyAsync(&b, p.bad, sizeof b, cudaMemcpyDeviceToHost, g_s));
    CK(cudaStreamSynchronize(g_s));
    return b;
}

// A copy variant (PE 0): run it once on fresh data and check; if right, time
// it (GB/s) and check again. launch(iters) copies src to the peer's dst.
template <typename F>
static void copy_row(probe &p, const char *bench, const char *variant, size_t n, uint32_t seed,
                     F launch)
{
    char what[160];
    prepare_copy(p, n, seed);
    launch(1);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(g_s));
    unsigned long long b = check_copy(p, n);
    if (b == 0) {
        double us = measure_us(
            [&](int it) {
                launch(it);
                CK(cudaGetLastError());
            },
            kReps, kTargetMs);
        b = check_copy(p, n);
        if (b == 0) {
            row(bench, variant, n, (double)n / us / 1e3);
            return;
        }
    }
    snprintf(what, sizeof what, "%s %s %zu: %llu wrong 16-byte words at the peer", bench, variant,
             n, b);
    failed(what);
}

#include "probe_put.cuh"

/* ---- E0: the machine ---- */

static void e0(probe &p)
{
    if (g_me != 0)
        return;
    int dev = 0, clk = 0;
    CK(cudaGetDevice(&dev));
    (void)cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev);
    (void)cudaGetLastError();
    unsigned *mask = NULL, h[8];
    CK(cudaMalloc(&mask, sizeof h));
    int seen = 0;
    for (int r = 0; r < 3; r++) { // SMs seen over 3 launches of 4096 short CTAs
        CK(cudaMemsetAsync(mask, 0, sizeof h, g_s));
        k_census<<<4096, 32, 0, g_s>>>(mask, 5000);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(h, mask, sizeof h, cudaMemcpyDeviceToHost, g_s));
        CK(cudaStreamSynchronize(g_s));
        int n = 0;
        for (unsigned w : h)
            n += __builtin_popcount(w);
        seen = std::max(seen, n);
    }
    CK(cudaFree(mask));
    row("info_sms_used", "census", 0, seen);
    row("info_clock_khz", "peak", 0, clk);
    // H1a's premise: a symmetric address and its translation agree modulo 16
    uintptr_t delta = (uintptr_t)p.pdst - (uintptr_t)p.dst;
    row("info_peer_delta_mod256", "dst", 0, (double)(delta % 256));
}

/* ---- E1 ---- */

struct e1_args {
    const uint64_t *tbl, *src;
    uint64_t *flag, *scr;
};
typedef void (*e1_single_fn)(const shmemx_dev_t &, const e1_args &, long long *);
typedef void (*e1_chain_fn)(const shmemx_dev_t &, const e1_args &, int, long long *);
template <int OP>
static void e1_single_launch(const shmemx_dev_t &d, const e1_args &a, long long *o)
{
    e1_single<OP><<<1, 1, 0, g_s>>>(d, a.tbl, a.src, a.flag, a.scr, 0, o);
}
template <int OP, bool R>
static void e1_chain_launch(const shmemx_dev_t &d, const e1_args &a, int iters, long long *o)
{
    e1_chain<OP, R><<<1, 1, 0, g_s>>>(d, a.tbl, a.src, a.flag, a.scr, 0, iters, o);
}
#define E1_TABLE(F)                                                                                \
    {                                                                                              \
        F<0>, F<1>, F<2>, F<3>, F<4>, F<5>, F<6>, F<7>, F<8>, F<9>, F<10>, F<11>, F<12>, F<13>     \
    }
#define E1_CHAIN_TABLE(R)                                                                          \
    {                                                                                              \
        e1_chain_launch<0, R>, e1_chain_launch<1, R>, e1_chain_launch<2, R>,                       \
            e1_chain_launch<3, R>, e1_chain_launch<4, R>, e1_chain_launch<5, R>,                   \
            e1_chain_launch<6, R>, e1_chain_launch<7, R>, e1_chain_launch<8, R>,                   \
            e1_chain_launch<9, R>, e1_chain_launch<10, R>, e1_chain_launch<11, R>,                 \
            e1_chain_launch<12, R>, e1_chain_launch<13, R>                                         \
    }
static_assert(OP_N == 14, "E1's tables list every operation");

static void e1(probe &p)
{
    if (g_me != 0)
        return;
    static const e1_single_fn single[OP_N] = E1_TABLE(e1_single_launch);
    static const e1_chain_fn chain[OP_N] = E1_CHAIN_TABLE(true);
    static const e1_chain_fn oponly[OP_N] = E1_CHAIN_TABLE(false);
    // the real words: world PE 1's peer-table entry, a source word in the heap
    e1_args a = {(const uint64_t *)(uintptr_t)p.d.peer_base + 1, (const uint64_t *)p.src,
                 p.ctl + C_E1_FLAG, p.ctl + C_E1_SCR};
    long long *o = (long long *)p.out, h[3];
    const int shots = 20, chain_iters = 1000;
    for (int op = 0; op < OP_N; op++) {
        if (op == OP_LIB_SIGNAL_WAIT && !p.waits) {
            printf("# e1 %s skipped: device waits are off\n", e1_names[op]);
            continue;
        }
        std::vector<double> t, s;
        for (int r = 0; r < shots; r++) {
            e1_args b = a;
            if (op == OP_COLD) { // lines no kernel read before: beyond every copy's end
                const char *cold = p.dst + p.max + ((size_t)1 << 20) + (size_t)r * 1024;
                b.tbl = (const uint64_t *)cold;
                b.src = (const uint64_t *)(cold + 512);
            }
            single[op](p.d, b, o);
            CK(cudaGetLastError());
            CK(cudaMemcpyAsync(h, o, sizeof h, cudaMemcpyDeviceToHost, g_s));
            CK(cudaStreamSynchronize(g_s));
            t.push_back((double)h[0]);
            s.push_back((double)h[1]);
        }
        row("e1_tbl", e1_names[op], 0, *std::min_element(t.begin(), t.end()));
        row("e1_src", e1_names[op], 0, *std::min_element(s.begin(), s.end()));
        row("e1_tbl_med", e1_names[op], 0, median(t));
        row("e1_src_med", e1_names[op], 0, median(s));
        if (op == OP_COLD)
            continue;
        double best[2] = {1e30, 1e30};
        for (int r = 0; r < kReps; r++) {
            for (int k = 0; k < 2; k++) {
                (k == 0 ? chain : oponly)[op](p.d, a, chain_iters, o);
                CK(cudaGetLastError());
                CK(cudaMemcpyAsync(h, o, sizeof h, cudaMemcpyDeviceToHost, g_s));
                CK(cudaStreamSynchronize(g_s));
                best[k] = std::min(best[k], (double)h[0] / chain_iters);
            }
        }
        row("e1_chain", e1_names[op], 0, best[0]);
        row("e1_oponly", e1_names[op], 0, best[1]);
        row("e1_reload", e1_names[op], 0, best[0] - best[1]);
    }
}

/* ---- E2 (both PEs) ---- */

static void e2(probe &p)
{
    if (!p.waits) {
        if (g_me == 0)
            printf("# e2 skipped: %s\n", shmemx_dev_why());
        return;
    }
    const int me = g_me;
    char *data = (char *)(p.ctl + C_E2_DATA), *src = (char *)(p.ctl + C_E2_SRC);
    uint64_t *sig = p.ctl + C_E2_SIG, *err = p.ctl + C_E2_ERR;
    uint64_t base = 0;
    for (int v = 0; v < kE2Variants; v++) {
        if (v == 4 && !p.agree16) { // the same decision on both PEs (the heaps are alike)
            if (me == 0)
                printf("# e2 %s skipped: peer mappings do not agree with the symmetric "
                       "addresses modulo 16\n",
                       e2_names[v]);
            continue;
        }
        // this variant's payload: a value of its own per PE; data words cleared
        uint64_t mine = 0x5eed000000000000ull | (uint64_t)v << 8 | (uint64_t)me, zero = 0;
        CK(cudaMemcpy(src, &mine, 8, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(data, &zero, 8, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(err, &zero, 8, cudaMemcpyHostToDevice));
        CK(cudaDeviceSynchronize());
        int iters_arg = 0, me_arg = me;
        uint64_t base_arg = 0;
        double us = measure_pair_us(
            [&](int it, uint64_t b) {
                iters_arg = it;
                base_arg = b;
                void *args[] = {(void *)&p.d,      (void *)&data,   (void *)&src,
                                (void *)&sig,      (void *)&me_arg, (void *)&iters_arg,
                                (void *)&base_arg, (void *)&err};
                switch (v) {
                case 0: launch_waiting(e2_pingpong<0>, 1, args); break;
                case 1: launch_waiting(e2_pingpong<1>, 1, args); break;
                case 2: launch_waiting(e2_pingpong<2>, 1, args); break;
                case 3: launch_waiting(e2_pingpong<3>, 1, args); break;
                case 4: launch_waiting(e2_pingpong<4>, 1, args); break;
                default: launch_waiting(e2_pingpong<5>, 1, args); break;
                }
            },
            &base, kPairWarm, kPairIters, kReps);
        if (me == 0) { // both directions: each data word holds the other PE's payload
            uint64_t want0 = (mine & ~(uint64_t)0xff) | 1, want1 = mine;
            uint64_t got0 = peek(p, data), got1 = peek(p, shmem_ptr(data, 1));
            uint64_t s0 = peek(p, sig), s1 = peek(p, shmem_ptr(sig, 1));
            uint64_t e0v = peek(p, err), e1v = peek(p, shmem_ptr(err, 1));
            if (got0 != want0 || got1 != want1 || s0 != base || s1 != base || e0v || e1v) {
                char what[200];
                snprintf(what, sizeof what,
                         "e2_sig_pingpong %s: data 0x%llx/0x%llx (want 0x%llx/0x%llx), signals "
                         "%llu/%llu (want %llu), gave up %llu/%llu",
                         e2_names[v], (unsigned long long)got0, (unsigned long long)got1,
                         (unsigned long long)want0, (unsigned long long)want1,
                         (unsigned long long)s0, (unsigned long long)s1, (unsigned long long)base,
                         (unsigned long long)e0v, (unsigned long long)e1v);
                failed(what);
            } else {
                row("e2_sig_pingpong", e2_names[v], 8, us);
            }
        }
        shmem_barrier_all();
    }
}

/* ---- E3 / E4 (PE 0 on PE 1's counters) ---- */

typedef void (*fadd_fn)(const shmemx_dev_t &, uint64_t *, int, uint64_t *);
template <int F> static void fadd_launch(const shmemx_dev_t &d, uint64_t *c, int it, uint64_t *o)
{
    k_fadd<F><<<1, 1, 0, g_s>>>(d, c, 1, it, o);
}
static const fadd_fn fadd_fns[kFaddForms] = {
    fadd_launch<0>,  fadd_launch<1>,  fadd_launch<2>, fadd_launch<3>, fadd_launch<4>,
    fadd_launch<5>,  fadd_launch<6>,  fadd_launch<7>, fadd_launch<8>, fadd_launch<9>,
    fadd_launch<10>, fadd_launch<11>, fadd_launch<12>};

// One launch of form f on counter idx (set*kCtrs + i): us per fetch_add; *sm
// where it ran; false when the values fetched were not the expected ones.
static bool fadd_once(probe &p, int f, int idx, int iters, double *us, unsigned *sm)
{
    uint64_t *c = (uint64_t *)(p.ctrs + ctr_off(idx / kCtrs, idx % kCtrs));
    uint64_t h[3];
    double ms = timed_ms([&] {
        fadd_fns[f](p.d, c, iters, p.out);
        CK(cudaGetLastError());
    });
    CK(cudaMemcpyAsync(h, p.out, sizeof h, cudaMemcpyDeviceToHost, g_s));
    CK(cudaStreamSynchronize(g_s));
    uint64_t before = p.ctr_expect[idx];
    p.ctr_expect[idx] += (uint64_t)iters;
    *us = ms * 1e3 / iters;
    *sm = (unsigned)h[2];
    // fetched before + 0 .. before + iters - 1, in order
    uint64_t want_sum = before * iters + (uint64_t)iters * (iters - 1) / 2;
    return h[1] == before + iters - 1 && h[0] == want_sum;
}

static void e3_e4(probe &p)
{
    if (g_me != 0)
        return;
    static const char *const set_names[2] = {"s4k", "s2m"};
    std::vector<double> lib_med(2 * kCtrs, -1);
    for (int set = 0; set < 2; set++) {
        for (int f = 0; f < 2; f++) {
            std::vector<double> meds;
            std::vector<unsigned> sms;
            for (int i = 0; i < kCtrs; i++) {
                int idx = set * kCtrs + i;
                double us;
                unsigned sm;
                bool ok = fadd_once(p, f, idx, 200, &us, &sm); // warm-up
                std::vector<std::pair<double, unsigned>> v;
                for (int r = 0; r < kFaddReps; r++) {
                    ok = fadd_once(p, f, idx, kFaddIters, &us, &sm) && ok;
                    v.push_back({us, sm});
                }
                char var[64];
                snprintf(var, sizeof var, "%s_%s_%02d", fadd_names[f], set_names[set], i);
                if (!ok) {
                    char what[120];
                    snprintf(what, sizeof what, "e3_fadd %s: wrong values fetched", var);
                    failed(what);
                    continue;
                }
                std::sort(v.begin(), v.end());
                row("e3_fadd", var, 8, v[v.size() / 2].first);
                row("e3_smid", var, 0, v[v.size() / 2].second);
                meds.push_back(v[v.size() / 2].first);
                sms.push_back(v[v.size() / 2].second);
                if (f == 0)
                    lib_med[idx] = v[v.size() / 2].first;
            }
            if (meds.empty())
                continue;
            std::vector<double> sorted = meds;
            std::sort(sorted.begin(), sorted.end());
            std::sort(sms.begin(), sms.end());
            char var[64];
            const char *fn = f == 0 ? "lib" : "raw";
            snprintf(var, sizeof var, "%s_%s_min", fn, set_names[set]);
            row("e3_stats", var, 8, sorted.front());
            snprintf(var, sizeof var, "%s_%s_med", fn, set_names[set]);
            row("e3_stats", var, 8, sorted[sorted.size() / 2]);
            snprintf(var, sizeof var, "%s_%s_max", fn, set_names[set]);
            row("e3_stats", var, 8, sorted.back());
            snprintf(var, sizeof var, "%s_%s_nsm", fn, set_names[set]);
            row("e3_stats", var, 0, (double)(std::unique(sms.begin(), sms.end()) - sms.begin()));
        }
    }

    // E4 at E3's fastest and slowest library address
    int fast = -1, slow = -1;
    for (int idx = 0; idx < 2 * kCtrs; idx++) {
        if (lib_med[idx] < 0)
            continue;
        if (fast < 0 || lib_med[idx] < lib_med[fast])
            fast = idx;
        if (slow < 0 || lib_med[idx] > lib_med[slow])
            slow = idx;
    }
    if (fast < 0) {
        failed("e4_fadd: no address of E3 worked");
    } else {
        const int where[2] = {fast, slow};
        static const char *const wname[2] = {"fast", "slow"};
        for (int k = 0; k < 2; k++) {
            printf("# e4 %s address: %s_%02d (E3 library median %.3f us)\n", wname[k],
                   set_names[where[k] / kCtrs], where[k] % kCtrs, lib_med[where[k]]);
            for (int f = 0; f < kFaddForms; f++) {
                if (f == 12 &&
                    (p.d.near_first != 0 || p.d.team_start != 0 || p.d.team_stride != 1)) {
                    printf("# e4 %s: skipped (the world handle's near table does not start at "
                           "PE 0)\n",
                           fadd_names[f]);
                    continue;
                }
                double us;
                unsigned sm;
                bool ok = fadd_once(p, f, where[k], 1000, &us, &sm);
                std::vector<double> v;
                for (int r = 0; r < kReps; r++) {
                    ok = fadd_once(p, f, where[k], kE4Iters, &us, &sm) && ok;
                    v.push_back(us);
                }
                char var[64];
                snprintf(var, sizeof var, "%s_%s", fadd_names[f], wname[k]);
                if (ok) {
                    row("e4_fadd", var, 8, median(v));
                } else {
                    char what[120];
                    snprintf(what, sizeof what, "e4_fadd %s: wrong values fetched", var);
                    failed(what);
                }
            }
        }
    }

    // every counter holds the number of fetch_adds done on it
    int wrong = 0;
    for (int set = 0; set < 2; set++) {
        const uint64_t *first = (const uint64_t *)shmem_ptr(p.ctrs + ctr_off(set, 0), 1);
        size_t stride = (set == 0 ? kS4k : kS2m) / 8;
        std::vector<uint64_t> h(kCtrs);
        k_peek<<<1, kCtrs, 0, g_s>>>(first, stride, kCtrs, p.out);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(h.data(), p.out, 8 * kCtrs, cudaMemcpyDeviceToHost, g_s));
        CK(cudaStreamSynchronize(g_s));
        for (int i = 0; i < kCtrs; i++)
            wrong += h[i] != p.ctr_expect[set * kCtrs + i];
    }
    if (wrong) {
        char what[120];
        snprintf(what, sizeof what, "e3/e4 counters: %d of %d hold the wrong total", wrong,
                 2 * kCtrs);
        failed(what);
    } else {
        printf("# e3/e4: all %d counters hold their totals\n", 2 * kCtrs);
    }
}

/* ---- E5 ---- */

static void e5(probe &p)
{
    if (g_me != 0)
        return;
    static const int ts[] = {-1, 0, 31, 32, 511};
    uint64_t *word = p.ctl + C_E5_WORD;
    const uint64_t *peer = (const uint64_t *)shmem_ptr(word, 1);
    for (int t : ts) {
        uint64_t seed = (uint64_t)(t + 2) << 40;
        int last = 0;
        double us = measure_us(
            [&](int it) {
                k_e5<<<1, kBlock, 0, g_s>>>(p.d, word, t, it, seed);
                CK(cudaGetLastError());
                last = it;
            },
            kReps, kTargetMs);
        char var[16];
        if (t < 0)
            snprintf(var, sizeof var, "none");
        else
            snprintf(var, sizeof var, "T%d", t);
        uint64_t got = peek(p, peer);
        if (t >= 0 && got != seed + (uint64_t)last - 1) {
            char what[120];
            snprintf(what, sizeof what, "e5_store_fence %s: the peer's word is 0x%llx", var,
                     (unsigned long long)got);
            failed(what);
            continue;
        }
        row("e5_store_fence", var, 8, us);
    }
}

/* ---- E6 ---- */

static void e6(probe &p)
{
    if (g_me != 0)
        return;
    static const size_t sizes[] = {1024, 65536, (size_t)1 << 20, (size_t)4 << 20};
    uint32_t seed = 0x6000;
    for (size_t n : sizes) {
        if (n > p.max)
            continue;
        for (int s = 0; s < 3; s++) {
            copy_row(p, "e6_put_bw", e6_names[s], n, ++seed, [&](int it) {
                if (s == 0)
                    k_e6<0><<<132, kBlock, 0, g_s>>>(p.d, p.dst, p.src, n, 1, it);
                else if (s == 1)
                    k_e6<1><<<132, kBlock, 0, g_s>>>(p.d, p.dst, p.src, n, 1, it);
                else
                    k_e6<2><<<132, kBlock, 0, g_s>>>(p.d, p.dst, p.src, n, 1, it);
            });
        }
    }
}

/* ---- E7 ---- */

static void e7(probe &p)
{
    if (g_me != 0)
        return;
    static const size_t sizes[] = {(size_t)256 << 20, (size_t)1 << 30};
    static const unsigned cfg[][2] = {{4, 16384}, {4, 32768}, {3, 65536}}; // stages, bytes
    static const int ctas[] = {66, 132};
    size_t smem_max = 0;
    for (const auto &c : cfg)
        smem_max = std::max(smem_max, 128 + (size_t)c[0] * c[1]);
    bool tma = cudaFuncSetAttribute(k_e7_tma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)smem_max) == cudaSuccess;
    if (!tma) {
        (void)cudaGetLastError();
        printf("# e7: %zu bytes of shared memory per CTA refused: TMA rows skipped\n", smem_max);
    }
    uint32_t seed = 0x7000;
    for (size_t n : sizes) {
        if (n > p.max) {
            printf("# e7 %zu skipped: above MAX_BYTES %zu\n", n, p.max);
            continue;
        }
        for (int nc : ctas) {
            char var[48];
            snprintf(var, sizeof var, "lib_cta%d", nc);
            copy_row(p, "e7_bw", var, n, ++seed,
                     [&](int it) { k_e6<0><<<nc, kBlock, 0, g_s>>>(p.d, p.dst, p.src, n, 1, it); });
        }
        copy_row(p, "e7_bw", "memcpy", n, ++seed, [&](int it) {
            for (int i = 0; i < it; i++)
                CK(cudaMemcpyAsync(p.pdst, p.src, n, cudaMemcpyDeviceToDevice, g_s));
        });
        if (!tma)
            continue;
        for (const auto &c : cfg) {
            for (int nc : ctas) {
                char var[48];
                snprintf(var, sizeof var, "tma_s%ux%uk_cta%d", c[0], c[1] / 1024, nc);
                size_t smem = 128 + (size_t)c[0] * c[1];
                copy_row(p, "e7_bw", var, n, ++seed, [&](int it) {
                    k_e7_tma<<<nc, 32, smem, g_s>>>(p.pdst, p.src, n, it, c[1], c[0]);
                });
            }
        }
    }
}

/* ---- E8 ---- */

template <int V> static void e8_bw_launch(probe &p, int ctas, size_t n, int it)
{
    k_e8_bw<V><<<ctas, kBlock, 0, g_s>>>(p.d, p.dst, p.src, n, 1, it);
}
template <int V> static void e8_lat_launch(probe &p, bool warp, size_t n, int it)
{
    if (warp)
        k_e8_lat<V, true><<<1, 32, 0, g_s>>>(p.d, p.dst, p.src, n, 1, it);
    else
        k_e8_lat<V, false><<<1, kBlock, 0, g_s>>>(p.d, p.dst, p.src, n, 1, it);
}
typedef void (*e8_bw_fn)(probe &, int, size_t, int);
typedef void (*e8_lat_fn)(probe &, bool, size_t, int);
static const e8_bw_fn e8_bw_fns[4] = {e8_bw_launch<0>, e8_bw_launch<1>, e8_bw_launch<2>,
                                      e8_bw_launch<3>};
static const e8_lat_fn e8_lat_fns[4] = {e8_lat_launch<0>, e8_lat_launch<1>, e8_lat_launch<2>,
                                        e8_lat_launch<3>};

static void e8(probe &p)
{
    if (g_me != 0)
        return;
    static const struct {
        int ctas;
        size_t n;
    } bw[] = {{1, 1024},
              {1, 4096},
              {1, 16384},
              {1, 65536},
              {132, 65536},
              {132, 262144},
              {132, (size_t)1 << 20},
              {132, (size_t)4 << 20}};
    uint32_t seed = 0x8000;
    for (const auto &c : bw) {
        for (int v = 0; v < 4; v++) {
            char bench[32];
            snprintf(bench, sizeof bench, "e8_bw_cta%d", c.ctas);
            copy_row(p, bench, e8_names[v], c.n, ++seed,
                     [&](int it) { e8_bw_fns[v](p, c.ctas, c.n, it); });
        }
    }
    static const size_t lat[] = {64, 1024, 4096};
    for (int warp = 1; warp >= 0; warp--) {
        for (size_t n : lat) {
            for (int v = 0; v < 4; v++) {
                prepare_copy(p, n, ++seed);
                double us = measure_us(
                    [&](int it) {
                        e8_lat_fns[v](p, warp != 0, n, it);
                        CK(cudaGetLastError());
                    },
                    kReps, kTargetMs);
                unsigned long long b = check_copy(p, n);
                char what[120];
                if (b) {
                    snprintf(what, sizeof what, "e8_lat %s %s %zu: %llu wrong 16-byte words",
                             warp ? "warp" : "block", e8_names[v], n, b);
                    failed(what);
                    continue;
                }
                row(warp ? "e8_lat_warp" : "e8_lat_block", e8_names[v], n, us);
            }
        }
    }
}

/* ---- E9 ---- */

template <int V> static void e9_launch(probe &p, int it, uint64_t seed)
{
    k_e9<V><<<1, 1, 0, g_s>>>(p.d, p.ctl + C_E9_DATA, p.ctl + C_E9_SIG, it, seed);
}
typedef void (*e9_fn)(probe &, int, uint64_t);
static const e9_fn e9_fns[6] = {e9_launch<0>, e9_launch<1>, e9_launch<2>,
                                e9_launch<3>, e9_launch<4>, e9_launch<5>};

static void e9(probe &p)
{
    if (g_me != 0)
        return;
    const uint64_t *peer = (const uint64_t *)shmem_ptr(p.ctl + C_E9_DATA, 1);
    for (int v = 0; v < 6; v++) {
        uint64_t seed = (uint64_t)(v + 1) << 44;
        int last = 0;
        double us = measure_us(
            [&](int it) {
                e9_fns[v](p, it, seed);
                CK(cudaGetLastError());
                last = it;
            },
            kReps, kTargetMs);
        uint64_t got = peek(p, peer);
        if (got != seed + (uint64_t)last - 1) {
            char what[120];
            snprintf(what, sizeof what, "e9_signal %s: the peer's word is 0x%llx", e9_names[v],
                     (unsigned long long)got);
            failed(what);
            continue;
        }
        row("e9_signal", e9_names[v], 8, us);
    }
}

/* ---- summary (PE 0): one line per bench and size, variants side by side ---- */

static void summary(void)
{
    static bool done = false;
    if (g_me != 0 || done)
        return;
    done = true;
    printf("\n| bench | bytes | variant value ... |\n|---|---|---|\n");
    std::vector<std::pair<std::string, size_t>> keys;
    for (const result &r : g_res) {
        if (r.bench == "e3_fadd" || r.bench == "e3_smid" || r.bench == "FAILED")
            continue; // per address: in the R lines
        std::pair<std::string, size_t> k(r.bench, r.bytes);
        if (std::find(keys.begin(), keys.end(), k) == keys.end())
            keys.push_back(k);
    }
    for (const auto &k : keys) {
        printf("| %s | %zu |", k.first.c_str(), k.second);
        for (const result &r : g_res)
            if (r.bench == k.first && r.bytes == k.second)
                printf(" %s %.3f", r.variant.c_str(), r.v);
        printf(" |\n");
    }
    // the differences each hypothesis turns on (-1 in an operand: not measured)
    printf("\n");
    printf("| E1 (H1) | table read after ld.acquire.sys %.0f cy, after ld.volatile %.0f, after "
           "membar.sys %.0f; L1 hit (none) %.0f, miss (cold) %.0f |\n",
           val("e1_tbl", "ld.acquire.sys", 0), val("e1_tbl", "ld.volatile", 0),
           val("e1_tbl", "membar.sys", 0), val("e1_tbl", "none", 0), val("e1_tbl", "cold", 0));
    double v0 = val("e2_sig_pingpong", "v0_lib", 8), v1 = val("e2_sig_pingpong", "v1_ptr_once", 8);
    double v2 = val("e2_sig_pingpong", "v2_ptr_once_src_early", 8);
    double v3 = val("e2_sig_pingpong", "v3_src_before_route", 8);
    double v4 = val("e2_sig_pingpong", "v4_h1a_sym_align", 8);
    double v5 = val("e2_sig_pingpong", "v5_ref_volatile_poll", 8);
    if (v0 > 0)
        printf("| E2 (H1) | per-call path v0-v1 %.3f us, source miss v1-v2 %.3f, payload before "
               "route v0-v3 %.3f, sym alignment v0-v4 %.3f, acquire v1-v5 %.3f |\n",
               v0 - v1, v1 - v2, v0 - v3, v0 - v4, v1 - v5);
    if (val("e3_stats", "lib_s4k_min", 8) > 0)
        printf("| E3 (H2) | library fetch_add 4 KiB apart %.3f..%.3f us, 2 MiB apart %.3f..%.3f; "
               "raw %.3f..%.3f / %.3f..%.3f |\n",
               val("e3_stats", "lib_s4k_min", 8), val("e3_stats", "lib_s4k_max", 8),
               val("e3_stats", "lib_s2m_min", 8), val("e3_stats", "lib_s2m_max", 8),
               val("e3_stats", "raw_s4k_min", 8), val("e3_stats", "raw_s4k_max", 8),
               val("e3_stats", "raw_s2m_min", 8), val("e3_stats", "raw_s2m_max", 8));
    if (val("e4_fadd", "lib_fast", 8) > 0)
        printf("| E4 (H3) | library - raw atom: %.3f us (fast address), %.3f (slow); raw - "
               "atomicAdd_system: %.3f / %.3f |\n",
               val("e4_fadd", "lib_fast", 8) - val("e4_fadd", "raw_ptr_once_fast", 8),
               val("e4_fadd", "lib_slow", 8) - val("e4_fadd", "raw_ptr_once_slow", 8),
               val("e4_fadd", "raw_ptr_once_fast", 8) -
                   val("e4_fadd", "atomicadd_sys_ptr_once_fast", 8),
               val("e4_fadd", "raw_ptr_once_slow", 8) -
                   val("e4_fadd", "atomicadd_sys_ptr_once_slow", 8));
    if (val("e4_fadd", "lib_opaque_pe_fast", 8) > 0)
        printf("| E4 (H3) | one call's translation (PE read on every call): library - raw "
               "atom %.3f us, shmemx_dev_ptr + raw atom - raw atom %.3f (fast address) |\n",
               val("e4_fadd", "lib_opaque_pe_fast", 8) -
                   val("e4_fadd", "raw_ptr_once_opaque_pe_fast", 8),
               val("e4_fadd", "raw_ptr_per_call_opaque_pe_fast", 8) -
                   val("e4_fadd", "raw_ptr_once_opaque_pe_fast", 8));
    if (val("e5_store_fence", "T0", 8) > 0)
        printf("| E5 (H4) | T511 - T0: %.3f us per iteration (T0 %.3f, no store %.3f) |\n",
               val("e5_store_fence", "T511", 8) - val("e5_store_fence", "T0", 8),
               val("e5_store_fence", "T0", 8), val("e5_store_fence", "none", 8));
    e10_e11_summary();
    int fails = 0;
    for (const result &r : g_res)
        fails += r.bench == "FAILED";
    printf("| checks | %d variant(s) FAILED their data check |\n", fails);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    size_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : ((size_t)1 << 30);
    max = std::max(max, (size_t)4 << 20) & ~(size_t)4095;
    const char *exps = getenv("PROBE_EXPS") ? getenv("PROBE_EXPS") : "0123456789ab";
    shmem_init();
    g_me = shmem_my_pe();
    if (shmem_n_pes() != 2)
        die("run with 2 PEs (ushrun -n 2)");
    probe p;
    if (shmemx_dev_get(&p.d) != 0)
        die("shmemx_dev_get failed (no device heap? set USHMEM_DEVICE=0)");
    p.waits = shmemx_dev_why() == NULL;
    p.max = max;
    int dev = -1, mps = -1;
    CK(cudaGetDevice(&dev));
    if (cudaDeviceGetAttribute(&mps, (cudaDeviceAttr)133, dev) != cudaSuccess) {
        mps = -1; // cudaDevAttrMpsEnabled unknown to this runtime
        (void)cudaGetLastError();
    }
    if (g_me == 0) {
        cudaDeviceProp prop;
        CK(cudaGetDeviceProperties(&prop, dev));
        const char *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
        printf("# bench_dev_probe: 2 PEs, CUDA device %d (%s, %d SMs), MPS %d, "
               "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s, device waits %s, MAX_BYTES %zu, "
               "experiments %s\n",
               dev, prop.name, prop.multiProcessorCount, mps, pct ? pct : "unset",
               p.waits ? "allowed" : "off", max, exps);
        printf(
            "# units: e1_* cycles; e2_*, e3_fadd, e3_stats, e4_*, e5_*, e8_lat_*, e9_* us; e6_*, "
            "e7_*, e8_bw_*, e10_*, e11_* GB/s\n");
        fflush(stdout);
    }
    CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
    CK(cudaEventCreate(&g_a));
    CK(cudaEventCreate(&g_b));

    const size_t buf = max + ((size_t)2 << 20);
    p.dst = (char *)shmem_malloc(buf);
    p.src = (char *)shmem_malloc(buf);
    p.ctl = (uint64_t *)shmem_malloc(C_WORDS * 8);
    p.ctrs = (char *)shmem_malloc(kCtrBytes);
    if (!p.dst || !p.src || !p.ctl || !p.ctrs)
        die("shmem_malloc failed (USHMEM_DEVICE_HEAP_SIZE: 2 x MAX_BYTES + 1G)");
    CK(cudaMemset(p.dst, 0, buf));
    CK(cudaMemset(p.src, 0, buf));
    CK(cudaMemset(p.ctl, 0, C_WORDS * 8));
    CK(cudaMemset(p.ctrs, 0, kCtrBytes));
    CK(cudaMalloc(&p.out, 16 * 64 * 8));
    CK(cudaMalloc(&p.bad, sizeof *p.bad));
    CK(cudaDeviceSynchronize());
    p.ctr_expect.assign(2 * kCtrs, 0);
    p.pdst = (char *)shmem_ptr(p.dst, 1 - g_me);
    if (!p.pdst || !shmem_ptr(p.ctl, 1 - g_me) || !shmem_ptr(p.ctrs, 1 - g_me))
        die("shmem_ptr(..., other PE) is NULL: its device heap is not mapped here");
    // H1a's premise, on both PEs (each PE's word in its ctl, read by both)
    uint64_t agree = ((uintptr_t)p.pdst - (uintptr_t)p.dst) % 16 == 0;
    CK(cudaMemcpy(p.ctl + C_AGREE, &agree, 8, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
    shmem_barrier_all();
    p.agree16 = agree && peek(p, (uint64_t *)shmem_ptr(p.ctl, 1 - g_me) + C_AGREE);
    shmem_barrier_all();

    struct {
        char id;
        void (*fn)(probe &);
    } steps[] = {{'0', e0}, {'1', e1}, {'2', e2}, {'3', e3_e4}, {'5', e5}, {'6', e6},
                 {'7', e7}, {'8', e8}, {'9', e9}, {'a', e10},   {'b', e11}};
    for (const auto &s : steps) {
        // E4 runs with E3 (it measures at E3's fastest and slowest address)
        if (!strchr(exps, s.id) && !(s.id == '3' && strchr(exps, '4')))
            continue;
        auto t0 = std::chrono::steady_clock::now();
        s.fn(p);
        CK(cudaDeviceSynchronize());
        shmem_barrier_all();
        if (g_me == 0) {
            std::chrono::duration<double> t = std::chrono::steady_clock::now() - t0;
            printf("# e%c done: %.1f s\n", s.id, t.count());
            fflush(stdout);
        }
    }
    summary();
    if (g_me == 0) {
        printf("# done\n");
        fflush(stdout);
    }
    CK(cudaFree(p.bad));
    CK(cudaFree(p.out));
    shmem_free(p.ctrs);
    shmem_free(p.ctl);
    shmem_free(p.src);
    shmem_free(p.dst);
    shmem_finalize();
    return 0;
}
