/* ushmem device API: collectives inside kernels, on the handle's team (the
 * world handle: every PE; a shmemx_team_dev_get handle: that team's members).
 * docs/device.md ("Collectives") is the user guide; shmemx_device.cuh includes
 * this header, so a kernel needs only that one.
 *
 * Forms, as the rest of the device API: none = one thread per PE calls it;
 * _warp = the 32 lanes of one warp per PE; _block = every thread of one CTA
 * per PE. Typed forms are templates over the element type
 * (shmemx_dev_alltoall<T>, shmemx_dev_sum_reduce<T>, ...) and, for the
 * OpenSHMEM types, type-named functions (shmemx_dev_int_alltoall,
 * shmemx_dev_float_sum_reduce_block, ...); the mem forms count bytes.
 *
 * Synchronization: every call starts with a team sync (every member has
 * entered: its source is ready and its dest may be written) and ends with a
 * team barrier (quiet, then sync: every member's data has arrived, and nobody
 * reads or writes this PE's source or dest any more), both the device
 * barrier's round on the team's slot. So a PE may reuse source and dest on
 * return, and back-to-back calls on the same buffers need nothing between
 * them. Reductions in place or larger than USHMEMI_DEV_REDUCE_PULL_MAX bytes
 * add one sync between their two phases. Small alltoall, broadcast, fcollect
 * and reductions (every member's share fits a stage buffer, 8 KiB in all)
 * instead push into the team's stage buffers and need only the final barrier
 * (see "staged small collectives" below); the guarantees are the same.
 * Collectives wait on the device: where
 * device waits are off (PEs sharing a GPU without MPS, see shmemx_dev_why())
 * they refuse with the barriers' one line, then trap.
 *
 * Data: alltoall, alltoallv, fcollect, collect and the second phase of large
 * reductions push (stores through the peer's mapping; a peer whose heap is not
 * mapped here gets a put through the proxy, completed by the final barrier's
 * quiet); broadcast and the reductions' reads pull (loads through the mapping;
 * through the proxy, gets into this PE's dest, which is this PE's to use until
 * the result is written there). */
#ifndef SHMEMX_DEVICE_COLL_CUH
#define SHMEMX_DEVICE_COLL_CUH

#include "shmemx_device.cuh"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__) || (defined(__clang__) && defined(__CUDA__))

/* Out-of-place reductions up to this many bytes read every member's source
 * (one sync fewer); larger ones and in-place ones reduce a segment each, then
 * share the results. */
#define USHMEMI_DEV_REDUCE_PULL_MAX ((size_t)32 << 10)

typedef decltype((char *)0 - (char *)0) ushmemi_dev_ptrdiff_t; /* ptrdiff_t, NVRTC too */

/* ---- pieces ---- */

/* A part of a group for work that needs no sync (copies to mapped peers). */
struct ushmemi_dev_part {
    unsigned r, s;
    __device__ __forceinline__ unsigned rank() const
    {
        return r;
    }
    __device__ __forceinline__ unsigned size() const
    {
        return s;
    }
};

/* Split group g into *nparts parts that serve different peers at once; this
 * thread's part is *part (npeers: none). A thread or a warp is one part. */
template <typename G>
SHMEMX_DEV_FN ushmemi_dev_part ushmemi_dev_split(G g, int npeers, int *part, int *nparts)
{
    (void)npeers;
    *part = 0;
    *nparts = 1;
    return ushmemi_dev_part{g.rank(), g.size()};
}
/* A CTA: whole warps, min(warps, npeers) parts (one part when its size is not
 * a multiple of 32; spare warps sit out). */
SHMEMX_DEV_FN ushmemi_dev_part ushmemi_dev_split(shmemx_dev_block_group g, int npeers, int *part,
                                                 int *nparts)
{
    unsigned nt = g.size(), t = g.rank(), nw = nt / 32;
    if (nt % 32 || nw < 2 || npeers < 2) {
        *part = 0;
        *nparts = 1;
        return ushmemi_dev_part{t, nt};
    }
    unsigned parts = nw < (unsigned)npeers ? nw : (unsigned)npeers, per = nw / parts, w = t / 32;
    *nparts = (int)parts;
    if (w >= parts * per) {
        *part = npeers;
        return ushmemi_dev_part{0, 32};
    }
    *part = (int)(w % parts);
    return ushmemi_dev_part{(w / parts) * 32 + t % 32, per * 32};
}

/* The collective's entry (team sync: every member entered) and exit (after
 * pushes a barrier: quiet first). Both refuse where device waits are off. */
template <typename G>
SHMEMX_DEV_FN void ushmemi_dev_coll_enter(const shmemx_dev_t &d, G g, const char *call)
{
    ushmemi_dev_barrier(d, g, false, false, call);
}
template <typename G>
SHMEMX_DEV_FN void ushmemi_dev_coll_leave(const shmemx_dev_t &d, G g, bool pushed, const char *call)
{
    ushmemi_dev_barrier(d, g, pushed, false, call);
}

SHMEMX_DEV_FN bool ushmemi_dev_mapped(const shmemx_dev_t &d, int pe)
{
    int w = d.team_start + pe * d.team_stride;
    return w == d.world_pe || ushmemi_dev_base(d, w) != 0;
}

/* The group sends job's bytes to every member (itself last): job.at(pe, &dst,
 * &src, &n) names them (dst symmetric, src local). Mapped members are served
 * by parts of the group at once, with no sync; the others, if any, by the
 * whole group through the proxy (put_nbi: complete at the exit's quiet). */
template <typename G, typename J>
SHMEMX_DEV_FN void ushmemi_dev_push(const shmemx_dev_t &d, G g, const J &job, const char *call)
{
    const int n = d.n_pes, me = d.my_pe;
    int part, nparts;
    ushmemi_dev_part sub = ushmemi_dev_split(g, n, &part, &nparts);
    for (int k = part; k < n; k += nparts) {
        int pe = me + 1 + k < n ? me + 1 + k : me + 1 + k - n;
        void *dst;
        const void *src;
        size_t nb;
        job.at(pe, &dst, &src, &nb);
        int w;
        char *r = nb ? ushmemi_dev_route(d, dst, nb, pe, call, &w) : 0;
        if (r)
            ushmemi_dev_copy<true>(sub, r, src, nb);
    }
    if (!d.proxy)
        return; /* every member is mapped (ushmemi_dev_route trapped otherwise) */
    for (int k = 0; k < n; k++) {
        int pe = me + 1 + k < n ? me + 1 + k : me + 1 + k - n;
        void *dst;
        const void *src;
        size_t nb;
        job.at(pe, &dst, &src, &nb);
        if (nb && !ushmemi_dev_mapped(d, pe))
            ushmemi_dev_proxy_put(d, g, dst, src, nb, d.team_start + pe * d.team_stride, true,
                                  call);
    }
}

/* The group copies [src, src+nb) of member pe (symmetric) into dest (local). */
template <typename G>
SHMEMX_DEV_FN void ushmemi_dev_pull(const shmemx_dev_t &d, G g, void *dest, const void *src,
                                    size_t nb, int pe, const char *call)
{
    if (!nb)
        return;
    int w;
    const char *r = ushmemi_dev_route(d, src, nb, pe, call, &w);
    if (!r)
        ushmemi_dev_proxy_get(d, g, dest, src, nb, w, call);
    else if (r != (const char *)dest)
        ushmemi_dev_copy<false>(g, dest, r, nb);
}

/* Traps when [a, a+na) and [b, b+nb) overlap: one line from the group's
 * first thread (the others wait for the trap: a trap while the line is being
 * printed loses it). */
template <typename G>
SHMEMX_DEV_FN void ushmemi_dev_no_overlap(const shmemx_dev_t &d, G g, const void *a, size_t na,
                                          const void *b, size_t nb, const char *what,
                                          const char *call)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    if (!(na && nb && x < y + nb && y < x + na))
        return;
    if (g.rank() == 0) {
        printf("ushmem: PE %d: %s: dest %p (%llu bytes) and source %p (%llu bytes) overlap%s\n",
               d.world_pe, call, a, (unsigned long long)na, b, (unsigned long long)nb, what);
        ushmemi_dev_trap();
    }
    g.sync();
    ushmemi_dev_trap();
}

/* ---- staged small collectives ----
 * Where every member's share fits a stage buffer (n_pes * bytes <=
 * SHMEMX_DEV_STAGE_BYTES), alltoall, fcollect, broadcast and the reductions
 * skip the entry sync: the members push into a stage buffer of the team's
 * slot in each other's sync area (never into dest), one barrier (quiet, then
 * sync) makes every push visible, and each PE copies or reduces its own stage
 * into its dest. Each slot has two buffers, picked by the parity of the
 * slot's barrier epoch at entry. A PE pushes into a peer's buffer b at entry
 * epoch e, having seen every member reach barrier e; the peer read buffer b
 * last in a call of entry epoch e - 2 or earlier, before it entered barrier
 * e - 1 or later, so no push overtakes a read. Every member takes the same
 * path (the team and the byte count are the same on every member), so the
 * epochs stay in step. */

/* This call's stage buffer (a symmetric address: the sync area is in the
 * heap), after the checks the barrier makes and a sync of g (the previous
 * barrier's epoch store, rank 0's after its last sync, is then seen by all). */
template <typename G>
SHMEMX_DEV_FN char *ushmemi_dev_stage(const shmemx_dev_t &d, G g, const char *call)
{
    ushmemi_dev_barrier_check(d, false, call);
    g.sync();
    uint64_t e = *ushmemi_dev_epoch(d);
    return (char *)(uintptr_t)(d.sync + SHMEMX_DEV_STAGE_OFF) +
           ((size_t)(unsigned)d.team_slot * 2 + (size_t)(e & 1)) * SHMEMX_DEV_STAGE_BYTES;
}

/* Whether shares blocks of nb bytes fit a stage buffer. */
SHMEMX_DEV_FN bool ushmemi_dev_staged(size_t nb, int shares)
{
    return nb <= SHMEMX_DEV_STAGE_BYTES / (unsigned)shares;
}

/* The rest of a staged move: the members' pushes (job) into the stage, the
 * exit barrier, then this PE's n bytes of its stage into dest. */
template <typename G, typename J>
SHMEMX_DEV_FN void ushmemi_dev_staged_move(const shmemx_dev_t &d, G g, const J &job, void *dest,
                                           const char *stage, size_t n, const char *call)
{
    ushmemi_dev_push(d, g, job, call);
    ushmemi_dev_barrier(d, g, true, false, call);
    ushmemi_dev_copy<false>(g, dest, stage, n);
    g.sync();
}

/* ---- data movement ---- */

struct ushmemi_dev_job_alltoall {
    char *dest;
    const char *src;
    size_t nb;
    int me;
    __device__ __forceinline__ void at(int pe, void **d, const void **s, size_t *n) const
    {
        *d = dest + (size_t)me * nb;
        *s = src + (size_t)pe * nb;
        *n = nb;
    }
};
struct ushmemi_dev_job_one { /* the same bytes to every member (fcollect, collect) */
    char *dest;
    const char *src;
    size_t nb;
    __device__ __forceinline__ void at(int pe, void **d, const void **s, size_t *n) const
    {
        (void)pe;
        *d = dest;
        *s = src;
        *n = nb;
    }
};
struct ushmemi_dev_job_alltoallv {
    char *dest;
    const char *src;
    const size_t *doff, *soff, *count;
    size_t es;
    __device__ __forceinline__ void at(int pe, void **d, const void **s, size_t *n) const
    {
        *d = dest + doff[pe] * es;
        *s = src + soff[pe] * es;
        *n = count[pe] * es;
    }
};
struct ushmemi_dev_job_share { /* this PE's part of dest to the others (reductions) */
    char *part;
    size_t nb;
    int me;
    __device__ __forceinline__ void at(int pe, void **d, const void **s, size_t *n) const
    {
        *d = part;
        *s = part;
        *n = pe == me ? 0 : nb;
    }
};

/* dest[me * nb ...] on member p gets src[p * nb ...] of this PE. */
template <typename G>
SHMEMX_DEV_FN int ushmemi_dev_alltoall(const shmemx_dev_t &d, G g, void *dest, const void *src,
                                       size_t nb, const char *call)
{
    const size_t all = nb * (size_t)d.n_pes;
    if (ushmemi_dev_staged(nb, d.n_pes)) {
        char *stage = ushmemi_dev_stage(d, g, call);
        ushmemi_dev_no_overlap(d, g, dest, all, src, all, "", call);
        ushmemi_dev_staged_move(d, g,
                                ushmemi_dev_job_alltoall{stage, (const char *)src, nb, d.my_pe},
                                dest, stage, all, call);
        return 0;
    }
    ushmemi_dev_coll_enter(d, g, call);
    ushmemi_dev_no_overlap(d, g, dest, all, src, all, "", call);
    ushmemi_dev_push(d, g, ushmemi_dev_job_alltoall{(char *)dest, (const char *)src, nb, d.my_pe},
                     call);
    ushmemi_dev_coll_leave(d, g, true, call);
    return 0;
}

/* Every member's dest gets the root's source (the root's dest too). */
template <typename G>
SHMEMX_DEV_FN int ushmemi_dev_broadcast(const shmemx_dev_t &d, G g, void *dest, const void *src,
                                        size_t nb, int root, const char *call)
{
    (void)ushmemi_dev_world(d, root, call); /* in range */
    if (ushmemi_dev_staged(nb, 1)) {        /* the root pushes */
        char *stage = ushmemi_dev_stage(d, g, call);
        ushmemi_dev_staged_move(
            d, g, ushmemi_dev_job_one{stage, (const char *)src, d.my_pe == root ? nb : 0}, dest,
            stage, nb, call);
        return 0;
    }
    ushmemi_dev_coll_enter(d, g, call);
    ushmemi_dev_pull(d, g, dest, src, nb, root, call);
    ushmemi_dev_coll_leave(d, g, false, call);
    return 0;
}

/* dest[me * nb ...] on every member gets this PE's source. */
template <typename G>
SHMEMX_DEV_FN int ushmemi_dev_fcollect(const shmemx_dev_t &d, G g, void *dest, const void *src,
                                       size_t nb, const char *call)
{
    char *mine = (char *)dest + (size_t)d.my_pe * nb;
    if (ushmemi_dev_staged(nb, d.n_pes)) {
        char *stage = ushmemi_dev_stage(d, g, call);
        if ((const char *)src != mine)
            ushmemi_dev_no_overlap(d, g, dest, nb * (size_t)d.n_pes, src, nb, "", call);
        ushmemi_dev_staged_move(
            d, g, ushmemi_dev_job_one{stage + (size_t)d.my_pe * nb, (const char *)src, nb}, dest,
            stage, nb * (size_t)d.n_pes, call);
        return 0;
    }
    ushmemi_dev_coll_enter(d, g, call);
    if ((const char *)src != mine)
        ushmemi_dev_no_overlap(d, g, dest, nb * (size_t)d.n_pes, src, nb, "", call);
    ushmemi_dev_push(d, g, ushmemi_dev_job_one{mine, (const char *)src, nb}, call);
    ushmemi_dev_coll_leave(d, g, true, call);
    return 0;
}

/* The exclusive prefix sum of count over the team's members, in every thread
 * of g: a Hillis-Steele scan on the slot's cells, by the group's first thread.
 * A cell holds the partial sum + 1 and is emptied by its reader; its writer
 * writes again only after the next collect's entry, which the reader reaches
 * after emptying it, so cells are empty between collectives. */
template <typename G>
SHMEMX_DEV_FN size_t ushmemi_dev_scan(const shmemx_dev_t &d, G g, size_t count, const char *call)
{
    /* this PE's cells, also their symmetric address (the sync area is in the heap) */
    uint64_t *cells = (uint64_t *)(uintptr_t)(d.sync + SHMEMX_DEV_SCAN_OFF) +
                      (size_t)(unsigned)d.team_slot * SHMEMX_DEV_SCAN_WORDS;
    volatile uint64_t *result = cells + SHMEMX_DEV_SCAN_WORDS - 1;
    if (g.rank() == 0) {
        const int n = d.n_pes, me = d.my_pe;
        uint64_t val = count;
        for (int r = 0, dist = 1; dist < n; r++, dist <<= 1) {
            if (me + dist < n)
                ushmemi_dev_signal(d, cells + r, val + 1, SHMEMX_DEV_SIGNAL_SET, me + dist, false,
                                   call);
            if (me >= dist) {
                uint64_t t0 = 0, x;
                for (unsigned polls = 1; (x = ushmemi_dev_ld_acquire64(cells + r)) == 0; polls++)
                    ushmemi_dev_wait_tick(d, polls, &t0, cells + r, call);
                *(volatile uint64_t *)(cells + r) = 0;
                val += x - 1;
            }
        }
        *result = val - count;
    }
    g.sync();
    return (size_t)*result;
}

/* Every member's dest gets the members' sources one after the other, in team
 * order (each member's count may differ). */
template <typename G>
SHMEMX_DEV_FN int ushmemi_dev_collect(const shmemx_dev_t &d, G g, void *dest, const void *src,
                                      size_t nelems, size_t es, const char *call)
{
    ushmemi_dev_coll_enter(d, g, call);
    size_t off = ushmemi_dev_scan(d, g, nelems, call) * es;
    if ((const char *)src != (char *)dest + off)
        ushmemi_dev_no_overlap(d, g, (char *)dest + off, nelems * es, src, nelems * es, "", call);
    ushmemi_dev_push(d, g, ushmemi_dev_job_one{(char *)dest + off, (const char *)src, nelems * es},
                     call);
    ushmemi_dev_coll_leave(d, g, true, call);
    return 0;
}

/* Member p's dest[doff[p] ...] gets count[p] elements of es bytes from this
 * PE's source[soff[p] ...]. */
template <typename G>
SHMEMX_DEV_FN int ushmemi_dev_alltoallv(const shmemx_dev_t &d, G g, void *dest, const size_t *doff,
                                        const void *src, const size_t *soff, const size_t *count,
                                        size_t es, const char *call)
{
    ushmemi_dev_coll_enter(d, g, call);
    ushmemi_dev_push(
        d, g, ushmemi_dev_job_alltoallv{(char *)dest, (const char *)src, doff, soff, count, es},
        call);
    ushmemi_dev_coll_leave(d, g, true, call);
    return 0;
}

/* ---- reductions ---- */

/* enums, not static members: those would be device globals under NVRTC */
template <typename T> struct ushmemi_dev_integer {
    enum { ok = 0 };
};
template <typename T> struct ushmemi_dev_arith {
    enum { ok = 0 };
};
#define USHMEMI_DEV_INTEGER(T)                                                                     \
    template <> struct ushmemi_dev_integer<T> {                                                    \
        enum { ok = 1 };                                                                           \
    };                                                                                             \
    template <> struct ushmemi_dev_arith<T> {                                                      \
        enum { ok = 1 };                                                                           \
    };
USHMEMI_DEV_INTEGER(char)
USHMEMI_DEV_INTEGER(signed char)
USHMEMI_DEV_INTEGER(unsigned char)
USHMEMI_DEV_INTEGER(short)
USHMEMI_DEV_INTEGER(unsigned short)
USHMEMI_DEV_INTEGER(int)
USHMEMI_DEV_INTEGER(unsigned int)
USHMEMI_DEV_INTEGER(long)
USHMEMI_DEV_INTEGER(unsigned long)
USHMEMI_DEV_INTEGER(long long)
USHMEMI_DEV_INTEGER(unsigned long long)
#undef USHMEMI_DEV_INTEGER
template <> struct ushmemi_dev_arith<float> {
    enum { ok = 1 };
};
template <> struct ushmemi_dev_arith<double> {
    enum { ok = 1 };
};

/* The operators: apply(a, b) in T (narrow integers wrap as the host's do). */
/* (the formatter takes `a & b` for a declaration) */
/* clang-format off */
#define USHMEMI_DEV_OP(name, bitwise_, expr)                                                       \
    struct ushmemi_dev_op_##name {                                                                 \
        enum { bitwise = bitwise_ };                                                               \
        template <typename T> static __device__ __forceinline__ T apply(T a, T b)                  \
        {                                                                                          \
            return (T)(expr);                                                                      \
        }                                                                                          \
    };
USHMEMI_DEV_OP(and, 1, a & b)
USHMEMI_DEV_OP(or, 1, a | b)
USHMEMI_DEV_OP(xor, 1, a ^ b)
USHMEMI_DEV_OP(max, 0, b > a ? b : a)
USHMEMI_DEV_OP(min, 0, b < a ? b : a)
USHMEMI_DEV_OP(sum, 0, a + b)
USHMEMI_DEV_OP(prod, 0, a * b)
#undef USHMEMI_DEV_OP
/* clang-format on */

template <typename T, int V> struct alignas(sizeof(T) * V) ushmemi_dev_vec {
    T e[V];
};

/* dest[i] = op over the members of their src[i], for nunits units of V
 * elements; src symmetric, dest this PE's (it may be src itself). Each thread
 * holds K units of the running result at a time; a member reached through the
 * proxy is fetched into dest's units of the round first (the group's, until
 * the results are written there). Not inlined: the ends and the body call it,
 * and a kernel compiles it once per unit width. */
template <typename Op, typename T, int V, typename G>
static __attribute__((noinline)) __device__ void
ushmemi_dev_reduce_units(const shmemx_dev_t &d, G g, T *dest, const T *src, size_t nunits,
                         const char *call)
{
    typedef ushmemi_dev_vec<T, V> U;
    enum { K = 4 };
    const unsigned r = g.rank(), s = g.size();
    const size_t round = (size_t)K * s;
    const int n = d.n_pes, me = d.my_pe;
    U *du = (U *)dest;
    const U *su = (const U *)src;
    for (size_t base = 0; base < nunits; base += round) {
        size_t m = nunits - base < round ? nunits - base : round;
        U acc[K];
#pragma unroll
        for (int k = 0; k < K; k++)
            if (k * s + r < m)
                acc[k] = su[base + k * s + r];
        for (int q = 1; q < n; q++) {
            int pe = me + q < n ? me + q : me + q - n, w;
            const U *pu = (const U *)ushmemi_dev_route(d, su + base, m * sizeof(U), pe, call, &w);
            if (!pu) {
                ushmemi_dev_proxy_get(d, g, du + base, su + base, m * sizeof(U), w, call);
                pu = du + base;
            }
#pragma unroll
            for (int k = 0; k < K; k++)
                if (k * s + r < m) {
                    U b = pu[k * s + r];
#pragma unroll
                    for (int v = 0; v < V; v++)
                        acc[k].e[v] = Op::apply(acc[k].e[v], b.e[v]);
                }
        }
#pragma unroll
        for (int k = 0; k < K; k++)
            if (k * s + r < m)
                du[base + k * s + r] = acc[k];
    }
}

/* The same for nelems elements: 16-byte units where dest and src agree
 * modulo 16, single elements for the ends and otherwise. */
template <typename Op, typename T, typename G>
SHMEMX_DEV_FN void ushmemi_dev_reduce_span(const shmemx_dev_t &d, G g, T *dest, const T *src,
                                           size_t nelems, const char *call)
{
    enum { V = 16 % sizeof(T) == 0 ? 16 / sizeof(T) : 1 };
    uintptr_t a = (uintptr_t)src;
    if (V > 1 && ((a ^ (uintptr_t)dest) & 15) == 0 && a % sizeof(T) == 0) {
        size_t head = ((16 - (a & 15)) & 15) / sizeof(T);
        if (head > nelems)
            head = nelems;
        size_t units = (nelems - head) / V, body = units * V;
        if (head)
            ushmemi_dev_reduce_units<Op, T, 1>(d, g, dest, src, head, call);
        if (units)
            ushmemi_dev_reduce_units<Op, T, V>(d, g, dest + head, src + head, units, call);
        if (nelems - head - body)
            ushmemi_dev_reduce_units<Op, T, 1>(d, g, dest + head + body, src + head + body,
                                               nelems - head - body, call);
    } else if (nelems) {
        ushmemi_dev_reduce_units<Op, T, 1>(d, g, dest, src, nelems, call);
    }
}

/* dest[i] = op over j of stage[j * nelems + i] (member j's share, in team
 * order: every member gets the same result, floating point included). */
template <typename Op, typename T, typename G>
SHMEMX_DEV_FN void ushmemi_dev_reduce_stage(G g, T *dest, const T *stage, size_t nelems, int n)
{
    for (size_t i = g.rank(); i < nelems; i += g.size()) {
        T acc = stage[i];
        for (int j = 1; j < n; j++)
            acc = Op::apply(acc, stage[(size_t)j * nelems + i]);
        dest[i] = acc;
    }
}

/* The staged reductions: the members' shares (job) into the stage, a barrier,
 * then this PE's nelems results from it. */
template <typename Op, typename T, typename G, typename J>
SHMEMX_DEV_FN void ushmemi_dev_reduce_staged(const shmemx_dev_t &d, G g, char *stage, T *dest,
                                             size_t nelems, const J &job, const char *call)
{
    ushmemi_dev_push(d, g, job, call);
    ushmemi_dev_barrier(d, g, true, false, call);
    ushmemi_dev_reduce_stage<Op>(g, dest, (const T *)stage, nelems, d.n_pes);
    g.sync();
}

template <typename Op, typename T> SHMEMX_DEV_FN void ushmemi_dev_reduce_types(void)
{
    static_assert(ushmemi_dev_arith<T>::ok,
                  "device reductions take the OpenSHMEM integer types, float and double");
    static_assert(!Op::bitwise || ushmemi_dev_integer<T>::ok,
                  "and/or/xor reductions take integer types");
}

/* dest[i] = op over the members of source[i]. Out of place and small: every
 * member reads every member's source (loads through the mapping). In place or
 * large: member j reduces segment j (whose source only j reads, so in place
 * is safe), a sync, then each pushes its segment to the others. */
template <typename Op, typename T, typename G>
SHMEMX_DEV_FN int ushmemi_dev_reduce(const shmemx_dev_t &d, G g, T *dest, const T *src,
                                     size_t nreduce, const char *call)
{
    ushmemi_dev_reduce_types<Op, T>();
    size_t nb = nreduce * sizeof(T);
    if (ushmemi_dev_staged(nb, d.n_pes)) {
        char *stage = ushmemi_dev_stage(d, g, call);
        if (dest != src)
            ushmemi_dev_no_overlap(d, g, dest, nb, src, nb, " (they may only be the same array)",
                                   call);
        ushmemi_dev_reduce_staged<Op>(
            d, g, stage, dest, nreduce,
            ushmemi_dev_job_one{stage + (size_t)d.my_pe * nb, (const char *)src, nb}, call);
        return 0;
    }
    ushmemi_dev_coll_enter(d, g, call);
    if (dest != src)
        ushmemi_dev_no_overlap(d, g, dest, nb, src, nb, " (they may only be the same array)", call);
    const bool pull = dest != src && nb <= USHMEMI_DEV_REDUCE_PULL_MAX;
    size_t lo = 0, len = nreduce;
    if (!pull) {
        const size_t n = (size_t)d.n_pes, me = (size_t)d.my_pe;
        size_t seg = ((nreduce + n - 1) / n + 15) & ~(size_t)15; /* keeps 16-byte agreement */
        lo = me * seg < nreduce ? me * seg : nreduce;
        len = nreduce - lo < seg ? nreduce - lo : seg;
    }
    ushmemi_dev_reduce_span<Op>(d, g, dest + lo, src + lo, len, call);
    if (!pull) {
        ushmemi_dev_barrier(d, g, false, false, call); /* every segment reduced, source read */
        ushmemi_dev_push(d, g, ushmemi_dev_job_share{(char *)(dest + lo), len * sizeof(T), d.my_pe},
                         call);
    }
    ushmemi_dev_coll_leave(d, g, !pull, call);
    return 0;
}

/* source holds n_pes blocks of nreduce elements; dest on member j gets the
 * reduction of block j over the members (NVSHMEM's reducescatter). dest and
 * source must not overlap. */
template <typename Op, typename T, typename G>
SHMEMX_DEV_FN int ushmemi_dev_reduce_scatter(const shmemx_dev_t &d, G g, T *dest, const T *src,
                                             size_t nreduce, const char *call)
{
    ushmemi_dev_reduce_types<Op, T>();
    const size_t nb = nreduce * sizeof(T);
    if (ushmemi_dev_staged(nb, d.n_pes)) { /* member j's block j into its stage */
        char *stage = ushmemi_dev_stage(d, g, call);
        ushmemi_dev_no_overlap(d, g, dest, nb, src, nb * (size_t)d.n_pes, "", call);
        ushmemi_dev_reduce_staged<Op>(
            d, g, stage, dest, nreduce,
            ushmemi_dev_job_alltoall{stage, (const char *)src, nb, d.my_pe}, call);
        return 0;
    }
    ushmemi_dev_coll_enter(d, g, call);
    ushmemi_dev_no_overlap(d, g, dest, nb, src, nb * (size_t)d.n_pes, "", call);
    ushmemi_dev_reduce_span<Op>(d, g, dest, src + (size_t)d.my_pe * nreduce, nreduce, call);
    ushmemi_dev_coll_leave(d, g, false, call);
    return 0;
}

/* ---- the API ---- */

/* The three forms of one call: NAME (thread), NAME_warp, NAME_block. */
#define USHMEMI_DEV_FORMS(X)                                                                       \
    X(, shmemx_dev_thread_group)                                                                   \
    X(_warp, shmemx_dev_warp_group)                                                                \
    X(_block, shmemx_dev_block_group)

/* mem forms (bytes) and typed templates (elements of T). Every call returns 0
 * (errors trap with one line naming the PE and the call). */
#define USHMEMI_DEV_COLL_MOVE(sfx, grp)                                                            \
    SHMEMX_DEV_FN int shmemx_dev_alltoallmem##sfx(const shmemx_dev_t &d, void *dest,               \
                                                  const void *source, size_t nbytes)               \
    {                                                                                              \
        return ushmemi_dev_alltoall(d, grp(), dest, source, nbytes,                                \
                                    "shmemx_dev_alltoallmem" #sfx);                                \
    }                                                                                              \
    SHMEMX_DEV_FN int shmemx_dev_broadcastmem##sfx(const shmemx_dev_t &d, void *dest,              \
                                                   const void *source, size_t nbytes, int PE_root) \
    {                                                                                              \
        return ushmemi_dev_broadcast(d, grp(), dest, source, nbytes, PE_root,                      \
                                     "shmemx_dev_broadcastmem" #sfx);                              \
    }                                                                                              \
    SHMEMX_DEV_FN int shmemx_dev_fcollectmem##sfx(const shmemx_dev_t &d, void *dest,               \
                                                  const void *source, size_t nbytes)               \
    {                                                                                              \
        return ushmemi_dev_fcollect(d, grp(), dest, source, nbytes,                                \
                                    "shmemx_dev_fcollectmem" #sfx);                                \
    }                                                                                              \
    SHMEMX_DEV_FN int shmemx_dev_collectmem##sfx(const shmemx_dev_t &d, void *dest,                \
                                                 const void *source, size_t nbytes)                \
    {                                                                                              \
        return ushmemi_dev_collect(d, grp(), dest, source, nbytes, 1,                              \
                                   "shmemx_dev_collectmem" #sfx);                                  \
    }                                                                                              \
    SHMEMX_DEV_FN int shmemx_dev_alltoallvmem##sfx(                                                \
        const shmemx_dev_t &d, void *dest, const size_t *dest_offsets, const void *source,         \
        const size_t *source_offsets, const size_t *nbytes)                                        \
    {                                                                                              \
        return ushmemi_dev_alltoallv(d, grp(), dest, dest_offsets, source, source_offsets, nbytes, \
                                     1, "shmemx_dev_alltoallvmem" #sfx);                           \
    }                                                                                              \
    template <typename T>                                                                          \
    SHMEMX_DEV_FN int shmemx_dev_alltoall##sfx(const shmemx_dev_t &d, T *dest, const T *source,    \
                                               size_t nelems)                                      \
    {                                                                                              \
        return ushmemi_dev_alltoall(d, grp(), dest, source, nelems * sizeof(T),                    \
                                    "shmemx_dev_alltoall" #sfx);                                   \
    }                                                                                              \
    template <typename T>                                                                          \
    SHMEMX_DEV_FN int shmemx_dev_broadcast##sfx(const shmemx_dev_t &d, T *dest, const T *source,   \
                                                size_t nelems, int PE_root)                        \
    {                                                                                              \
        return ushmemi_dev_broadcast(d, grp(), dest, source, nelems * sizeof(T), PE_root,          \
                                     "shmemx_dev_broadcast" #sfx);                                 \
    }                                                                                              \
    template <typename T>                                                                          \
    SHMEMX_DEV_FN int shmemx_dev_fcollect##sfx(const shmemx_dev_t &d, T *dest, const T *source,    \
                                               size_t nelems)                                      \
    {                                                                                              \
        return ushmemi_dev_fcollect(d, grp(), dest, source, nelems * sizeof(T),                    \
                                    "shmemx_dev_fcollect" #sfx);                                   \
    }                                                                                              \
    template <typename T>                                                                          \
    SHMEMX_DEV_FN int shmemx_dev_collect##sfx(const shmemx_dev_t &d, T *dest, const T *source,     \
                                              size_t nelems)                                       \
    {                                                                                              \
        return ushmemi_dev_collect(d, grp(), dest, source, nelems, sizeof(T),                      \
                                   "shmemx_dev_collect" #sfx);                                     \
    }                                                                                              \
    template <typename T>                                                                          \
    SHMEMX_DEV_FN int shmemx_dev_alltoallv##sfx(                                                   \
        const shmemx_dev_t &d, T *dest, const size_t *dest_offsets, const T *source,               \
        const size_t *source_offsets, const size_t *nelems)                                        \
    {                                                                                              \
        return ushmemi_dev_alltoallv(d, grp(), dest, dest_offsets, source, source_offsets, nelems, \
                                     sizeof(T), "shmemx_dev_alltoallv" #sfx);                      \
    }
USHMEMI_DEV_FORMS(USHMEMI_DEV_COLL_MOVE)
#undef USHMEMI_DEV_COLL_MOVE

/* Reductions: shmemx_dev_OP_reduce{,_warp,_block}<T>(d, dest, source,
 * nreduce) and shmemx_dev_OP_reduce_scatter{,_warp,_block}<T>. */
#define USHMEMI_DEV_REDUCE_FORM(sfx, grp, op)                                                      \
    template <typename T>                                                                          \
    SHMEMX_DEV_FN int shmemx_dev_##op##_reduce##sfx(const shmemx_dev_t &d, T *dest,                \
                                                    const T *source, size_t nreduce)               \
    {                                                                                              \
        return ushmemi_dev_reduce<ushmemi_dev_op_##op>(d, grp(), dest, source, nreduce,            \
                                                       "shmemx_dev_" #op "_reduce" #sfx);          \
    }                                                                                              \
    template <typename T>                                                                          \
    SHMEMX_DEV_FN int shmemx_dev_##op##_reduce_scatter##sfx(const shmemx_dev_t &d, T *dest,        \
                                                            const T *source, size_t nreduce)       \
    {                                                                                              \
        return ushmemi_dev_reduce_scatter<ushmemi_dev_op_##op>(                                    \
            d, grp(), dest, source, nreduce, "shmemx_dev_" #op "_reduce_scatter" #sfx);            \
    }
#define USHMEMI_DEV_REDUCE_OP(op)                                                                  \
    USHMEMI_DEV_REDUCE_FORM(, shmemx_dev_thread_group, op)                                         \
    USHMEMI_DEV_REDUCE_FORM(_warp, shmemx_dev_warp_group, op)                                      \
    USHMEMI_DEV_REDUCE_FORM(_block, shmemx_dev_block_group, op)
USHMEMI_DEV_REDUCE_OP(and)
USHMEMI_DEV_REDUCE_OP(or)
USHMEMI_DEV_REDUCE_OP(xor)
USHMEMI_DEV_REDUCE_OP(max)
USHMEMI_DEV_REDUCE_OP(min)
USHMEMI_DEV_REDUCE_OP(sum)
USHMEMI_DEV_REDUCE_OP(prod)
#undef USHMEMI_DEV_REDUCE_OP
#undef USHMEMI_DEV_REDUCE_FORM

/* ---- type-named forms (OpenSHMEM 1.5's TYPENAME tables, long double and
 * the complex types left out) ----
 * shmemx_dev_TYPENAME_{alltoall,broadcast,fcollect,collect,alltoallv}{,_warp,_block}
 * shmemx_dev_TYPENAME_OP_{reduce,reduce_scatter}{,_warp,_block}
 * Function templates with nothing to deduce (`template <int = 0>`), so that a
 * program pays only for the ones it calls. */

/* clang-format off */
/* the standard RMA types (Table 5) */
#define USHMEMI_DEV_RMA_TYPES(X)                                                                   \
    X(float, float)                                                                                \
    X(double, double)                                                                              \
    X(char, char)                                                                                  \
    X(signed char, schar)                                                                          \
    X(short, short)                                                                                \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(unsigned char, uchar)                                                                        \
    X(unsigned short, ushort)                                                                      \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(signed char, int8)                                                                           \
    X(short, int16)                                                                                \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(unsigned char, uint8)                                                                        \
    X(unsigned short, uint16)                                                                      \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(ushmemi_dev_ptrdiff_t, ptrdiff)
/* and/or/xor (Table 10) */
#define USHMEMI_DEV_BITWISE_TYPES(X)                                                               \
    X(unsigned char, uchar)                                                                        \
    X(unsigned short, ushort)                                                                      \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(signed char, int8)                                                                           \
    X(short, int16)                                                                                \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(unsigned char, uint8)                                                                        \
    X(unsigned short, uint16)                                                                      \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)
/* max/min/sum/prod (Table 10) */
#define USHMEMI_DEV_ARITH_TYPES(X)                                                                 \
    X(char, char)                                                                                  \
    X(signed char, schar)                                                                          \
    X(short, short)                                                                                \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(ushmemi_dev_ptrdiff_t, ptrdiff)                                                              \
    X(unsigned char, uchar)                                                                        \
    X(unsigned short, ushort)                                                                      \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(signed char, int8)                                                                           \
    X(short, int16)                                                                                \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(unsigned char, uint8)                                                                        \
    X(unsigned short, uint16)                                                                      \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(float, float)                                                                                \
    X(double, double)
/* clang-format on */

#define USHMEMI_DEV_TYPED_MOVE_FORM(T, N, sfx)                                                     \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN int shmemx_dev_##N##_alltoall##sfx(const shmemx_dev_t &d, T *dest,               \
                                                     const T *source, size_t nelems)               \
    {                                                                                              \
        return shmemx_dev_alltoall##sfx<T>(d, dest, source, nelems);                               \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN int shmemx_dev_##N##_broadcast##sfx(const shmemx_dev_t &d, T *dest,              \
                                                      const T *source, size_t nelems, int PE_root) \
    {                                                                                              \
        return shmemx_dev_broadcast##sfx<T>(d, dest, source, nelems, PE_root);                     \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN int shmemx_dev_##N##_fcollect##sfx(const shmemx_dev_t &d, T *dest,               \
                                                     const T *source, size_t nelems)               \
    {                                                                                              \
        return shmemx_dev_fcollect##sfx<T>(d, dest, source, nelems);                               \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN int shmemx_dev_##N##_collect##sfx(const shmemx_dev_t &d, T *dest,                \
                                                    const T *source, size_t nelems)                \
    {                                                                                              \
        return shmemx_dev_collect##sfx<T>(d, dest, source, nelems);                                \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN int shmemx_dev_##N##_alltoallv##sfx(                                             \
        const shmemx_dev_t &d, T *dest, const size_t *dest_offsets, const T *source,               \
        const size_t *source_offsets, const size_t *nelems)                                        \
    {                                                                                              \
        return shmemx_dev_alltoallv##sfx<T>(d, dest, dest_offsets, source, source_offsets,         \
                                            nelems);                                               \
    }
#define USHMEMI_DEV_TYPED_MOVE(T, N)                                                               \
    USHMEMI_DEV_TYPED_MOVE_FORM(T, N, )                                                            \
    USHMEMI_DEV_TYPED_MOVE_FORM(T, N, _warp)                                                       \
    USHMEMI_DEV_TYPED_MOVE_FORM(T, N, _block)
USHMEMI_DEV_RMA_TYPES(USHMEMI_DEV_TYPED_MOVE)
#undef USHMEMI_DEV_TYPED_MOVE
#undef USHMEMI_DEV_TYPED_MOVE_FORM

#define USHMEMI_DEV_TYPED_REDUCE_FORM(T, N, op, sfx)                                               \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN int shmemx_dev_##N##_##op##_reduce##sfx(const shmemx_dev_t &d, T *dest,          \
                                                          const T *source, size_t nreduce)         \
    {                                                                                              \
        return shmemx_dev_##op##_reduce##sfx<T>(d, dest, source, nreduce);                         \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN int shmemx_dev_##N##_##op##_reduce_scatter##sfx(const shmemx_dev_t &d, T *dest,  \
                                                                  const T *source, size_t nreduce) \
    {                                                                                              \
        return shmemx_dev_##op##_reduce_scatter##sfx<T>(d, dest, source, nreduce);                 \
    }
#define USHMEMI_DEV_TYPED_REDUCE(T, N, op)                                                         \
    USHMEMI_DEV_TYPED_REDUCE_FORM(T, N, op, )                                                      \
    USHMEMI_DEV_TYPED_REDUCE_FORM(T, N, op, _warp)                                                 \
    USHMEMI_DEV_TYPED_REDUCE_FORM(T, N, op, _block)
#define USHMEMI_DEV_TYPED_BITWISE(T, N)                                                            \
    USHMEMI_DEV_TYPED_REDUCE(T, N, and)                                                            \
    USHMEMI_DEV_TYPED_REDUCE(T, N, or)                                                             \
    USHMEMI_DEV_TYPED_REDUCE(T, N, xor)
#define USHMEMI_DEV_TYPED_ARITH(T, N)                                                              \
    USHMEMI_DEV_TYPED_REDUCE(T, N, max)                                                            \
    USHMEMI_DEV_TYPED_REDUCE(T, N, min)                                                            \
    USHMEMI_DEV_TYPED_REDUCE(T, N, sum)                                                            \
    USHMEMI_DEV_TYPED_REDUCE(T, N, prod)
USHMEMI_DEV_BITWISE_TYPES(USHMEMI_DEV_TYPED_BITWISE)
USHMEMI_DEV_ARITH_TYPES(USHMEMI_DEV_TYPED_ARITH)
#undef USHMEMI_DEV_TYPED_ARITH
#undef USHMEMI_DEV_TYPED_BITWISE
#undef USHMEMI_DEV_TYPED_REDUCE
#undef USHMEMI_DEV_TYPED_REDUCE_FORM

#undef USHMEMI_DEV_FORMS

#endif /* device compilation */

#endif /* SHMEMX_DEVICE_COLL_CUH */
