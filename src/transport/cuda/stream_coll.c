/* Stream-ordered collectives on device memory (shmemx_*_on_stream: alltoall,
 * broadcast, fcollect, reductions) and the host API's collectives on the
 * device heap, which run them on the library's stream. Three ways, chosen per
 * call (coll_alg_of below): the copy path (every PE copies its part, between
 * stream barriers), the leader path (one PE's kernel does every copy), and the
 * kernel path (one kernel per PE that also synchronizes on the device). The
 * stream RMA, waits and barriers they build on are in stream.c. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "core/team.h"
#include "transport/cuda/cuda_priv.h"
#include "transport/cuda/stream_priv.h"

/* ---- collectives ---- */

/* Kinds of a collective's buffers; 1 when both are host memory (then the
 * host collective runs now, after the stream's earlier work). */
static int coll_host_path(shmem_team_t team, const void *dest, size_t dn, const void *src,
                          size_t sn, shmemx_stream_t stream, int *ddev, int *sdev, const char *call)
{
    USHMEMI_CHECK_INIT(call);
    if (!ushmemi_team_check(team, call))
        return -1;
    (void)ushmemi_stream_sym_peer(dest, dn, ushmemi_g.my_pe, ddev, "dest", call);
    (void)ushmemi_stream_sym_peer(src, sn, ushmemi_g.my_pe, sdev, "source", call);
    if (*ddev || *sdev) {
        ushmemi_stream_need_cuda(call);
        return 0;
    }
    if (stream) {
        ushmemi_stream_need_cuda(call);
        CU_CHECK(ushmemi_cu.cuStreamSynchronize((CUstream)stream), call);
    }
    return 1;
}

static char *member_copy(const void *sym, shmem_team_t team, int i, const char *call)
{
    char *p = ushmemi_xlate(sym, ushmemi_team_world_pe(team, i));
    if (!p)
        ushmemi_fatal(call,
                      "PE %d's memory is not mapped here: collectives need every team "
                      "member on this host",
                      ushmemi_team_world_pe(team, i));
    return p;
}

/* Member i's copy of [sym, sym+n) = [src, src+n), in stream order: a copy
 * when it is mapped here, else a put request to the proxy. */
static void member_put(void *sym, shmem_team_t team, int i, const void *src, int sdev, size_t n,
                       CUstream s, const char *call)
{
    int w = ushmemi_team_world_pe(team, i);
    char *p = ushmemi_xlate(sym, w);
    if (p)
        ushmemi_stream_copy(p, ushmemi_devheap_has(sym), src, sdev, n, s, call);
    else if (ushmemi_stream_team_proxied(team))
        ushmemi_stream_proxy_req(s, USHMEMI_REQ_PUT | USHMEMI_REQ_WAIT, 0, 0, w, sym, src, n, NULL,
                                 0, call);
    else
        (void)member_copy(sym, team, i, call); /* says why */
}

/* The end of a copy-path collective: the puts to other hosts complete, then
 * the members synchronize. */
static void coll_end(shmem_team_t team, CUstream s, const char *call)
{
    if (ushmemi_stream_team_proxied(team))
        ushmemi_stream_proxy_quiet(s, call);
    ushmemi_cuda_stream_sync(team, s, call);
}

static size_t mul(size_t a, size_t b, const char *call)
{
    if (b && a > SIZE_MAX / b)
        ushmemi_fatal(call, "%zu x %zu bytes overflow", a, b);
    return a * b;
}

/* ---- how a collective on device memory runs ----
 * copy:   every member enqueues its own copies between two stream barriers.
 * leader: one member (member 0, the root of a broadcast) waits on the stream
 *         for every other member's arrival, does every copy (or the whole
 *         reduction, written to every member's dest) in one launch and
 *         releases each member; the others enqueue one signal and one wait.
 *         Without MPS the GPU time-slices between contexts that have kernels
 *         in flight (a hand-off costs a slice), so one context doing all the
 *         work is what makes collectives of PEs sharing a GPU fast there.
 * kernel: every member launches one block that signals, waits, pushes its
 *         part and signals again on the device (ushmemi_k_coll_sync): one
 *         launch instead of two barriers and the copies; only where device
 *         waits are safe (MPS with fitting shares, or one PE per GPU).
 * auto: kernel for small collectives where device waits are safe, leader
 * when they are not and the whole team is on this PE's GPU, else copy.
 * Every input of the choice is the same on every member (sizes, symmetric
 * addresses, the job's verdict on device waits). */
enum { ALG_COPY, ALG_LEADER, ALG_KERNEL };

/* auto: most bytes one PE pushes (reductions: combines) in the device-
 * synchronized kernel of an n-PE team; beyond, its one block is slower than
 * the leader's launch, whose stream waits cost more with more PEs (measured
 * on an H200 under MPS: alltoall, broadcast, fcollect cross at 64 KiB per
 * block with 2 PEs and 128-256 KiB with 4; an int64 sum at 16-32 KiB with 2
 * and 128 KiB with 4). Larger teams keep the 4-PE limits (not measured). */
#define KCOLL_AUTO_MAX(n)                                                                          \
    ((n) <= 4 ? ((size_t)32 << 10) * (size_t)(n) * (size_t)(n) : (size_t)512 << 10)
#define KRED_AUTO_MAX(n)                                                                           \
    ((n) <= 4 ? ((size_t)4 << 10) * (size_t)(n) * (size_t)(n) : (size_t)64 << 10)
/* In-place reductions in that kernel stage the result in shared memory. */
#define KRED_STAGE_MAX ((size_t)48 << 10)
#define KCOLL_THREADS  512

static int team_on_my_gpu(shmem_team_t team)
{
    for (int i = 0; i < team->size; i++)
        if (ushmemi_cuda.peer_dev[ushmemi_team_world_pe(team, i)] != ushmemi_cuda.device)
            return 0;
    return 1;
}

/* SHMEM_DEBUG: one line the first time each path runs. */
static int coll_said(int alg, const char *call)
{
    static const char *const names[] = {"copy", "leader", "kernel"};
    static _Atomic int said[3];
    if (ushmemi_env.debug && !atomic_exchange(&said[alg], 1))
        ushmemi_debug(call, "collectives on device memory: %s path (USHMEM_CUDA_COLL=%s)",
                      names[alg], ushmemi_env.cuda_coll);
    return alg;
}

/* bytes: what one PE pushes (or reduces); red: a reduction; overlap: its
 * dest and source are the same (1) or partly overlap (2). */
static int coll_alg_of(shmem_team_t team, size_t bytes, int red, int overlap, const char *call)
{
    const char *m = ushmemi_env.cuda_coll;
    int n = team->size;
    /* members on other hosts: only the copy path reaches them */
    if (n <= 1 || !bytes || !ushmemi_cuda.mod || !strcmp(m, "copy") || n > USHMEMI_KRED_MAX_PES ||
        ushmemi_stream_team_proxied(team))
        return ALG_COPY;
    /* The leader writes every dest element right after reading that element
     * of every source, so dest == source is safe there; a partial overlap
     * (not allowed by OpenSHMEM) takes the copy path's temporary. */
    int lead = overlap == 2 ? ALG_COPY : ALG_LEADER;
    if (!strcmp(m, "leader"))
        return lead;
    int waits = ushmemi_cuda_dev_waits();
    int fits = n <= USHMEMI_KCOLL_MAX_PES && (!overlap || bytes <= KRED_STAGE_MAX);
    if (!strcmp(m, "kernel")) {
        if (!waits)
            ushmemi_fatal(call, "USHMEM_CUDA_COLL=kernel needs device-side waits: %s",
                          ushmemi_cuda_dev_waits_why());
        return fits ? ALG_KERNEL : ALG_COPY;
    }
    if (waits == 1 && fits && bytes <= (red ? KRED_AUTO_MAX(n) : KCOLL_AUTO_MAX(n)))
        return ALG_KERNEL;
    /* One context doing all copies also wins under MPS (measured: alltoall of
     * 256 KiB-4 MiB per PE 8.7-13.4 µs against 13.7-17.3 for every PE
     * copying), and without MPS it is what avoids time slices. */
    if (team_on_my_gpu(team))
        return lead;
    return ALG_COPY;
}

static int coll_alg(shmem_team_t team, size_t bytes, int red, int overlap, const char *call)
{
    return coll_said(coll_alg_of(team, bytes, red, overlap, call), call);
}

/* Leader path, phase 0 (the others arrive) or 1 (the leader releases them),
 * under sync_lock. */
static void lead_sync(shmem_team_t team, int lead, int phase, CUstream s, const char *call)
{
    ushmemi_sync_batch_t b;
    ushmemi_sync_begin(&b, s, call);
    if (team->my_pe != lead) {
        int w = ushmemi_team_world_pe(team, lead);
        if (phase == 0)
            ushmemi_sync_signal(&b, w);
        else
            ushmemi_sync_wait(&b, w);
    } else {
        for (int j = 0; j < team->size; j++) {
            if (j == lead)
                continue;
            if (phase == 0)
                ushmemi_sync_wait(&b, ushmemi_team_world_pe(team, j));
            else
                ushmemi_sync_signal(&b, ushmemi_team_world_pe(team, j));
        }
    }
    ushmemi_sync_end(&b);
}

static void launch(CUfunction f, unsigned gx, unsigned gy, unsigned threads, unsigned shmem,
                   void *args, CUstream s, const char *call)
{
    void *params[] = {args};
    ushmemi_cuda_trace(s, "collective kernel", -1, (uint64_t)gx * gy);
    CU_CHECK(ushmemi_cu.cuLaunchKernel(f, gx, gy, 1, threads, 1, 1, shmem, s, params, NULL), call);
}

/* alltoall / fcollect / broadcast (kind) on the leader path. */
static void coll_leader(shmem_team_t team, int kind, void *dest, const void *source, size_t nb,
                        int root, CUstream s, const char *call)
{
    int n = team->size, lead = kind == USHMEMI_KCOLL_BROADCAST ? root : 0;
    ushmemi_kcopy_args_t a;
    pthread_mutex_lock(&ushmemi_cuda.sync_lock);
    lead_sync(team, lead, 0, s, call);
    if (team->my_pe == lead) {
        memset(&a, 0, sizeof a);
        a.nbytes = nb;
        a.npes = n;
        a.kind = kind;
        a.root = root;
        for (int j = 0; j < n; j++) {
            a.dst[j] = member_copy(dest, team, j, call);
            if (kind != USHMEMI_KCOLL_BROADCAST || j == root)
                a.src[j] = member_copy(source, team, j, call);
        }
        unsigned pairs = kind == USHMEMI_KCOLL_BROADCAST ? (unsigned)n : (unsigned)(n * n);
        size_t per = (nb + 65535) / 65536, most = 1056 / pairs ? 1056 / pairs : 1;
        launch(ushmemi_cuda_fixed(K_COLL_COPY, call), (unsigned)(per < most ? per : most), pairs,
               256, 0, &a, s, call);
    }
    lead_sync(team, lead, 1, s, call);
    pthread_mutex_unlock(&ushmemi_cuda.sync_lock);
}

/* The two rounds' signals and waits of the device-synchronized kernel, under
 * sync_lock: full mesh, or for a broadcast members -> root, then root ->
 * members; a barrier has the first round only. */
void ushmemi_kcoll_fill(ushmemi_kcoll_args_t *a, shmem_team_t team, int kind, int root,
                        const char *call)
{
    int n = team->size, me = team->my_pe, wme = ushmemi_g.my_pe;
    int full = kind != USHMEMI_KCOLL_BROADCAST, two = kind != USHMEMI_KCOLL_BARRIER;
    memset(a, 0, sizeof *a);
    a->npes = n;
    a->me = me;
    a->world_pe = wme;
    a->kind = kind;
    a->root = root;
    a->heap_base = ushmemi_cuda.base;
    uint64_t abort_flag, timeout_ns;
    ushmemi_cuda_dev_wait_limits(&abort_flag, &timeout_ns);
    a->abort_flag = abort_flag;
    a->timeout_ns = timeout_ns;
    for (int j = 0; j < n; j++) {
        int w = ushmemi_team_world_pe(team, j);
        a->wpe[j] = w;
        if (j == me)
            continue;
        a->flag_out[j] = ushmemi_stream_peer_heap(w, call) + (CUdeviceptr)wme * 8;
        int to_root = me != root && j == root;
        if (full || to_root)
            a->sent[0][j] = ++ushmemi_cuda.sent[w];
        if (full || me == root)
            a->expect[0][j] = ++ushmemi_cuda.expected[w];
        if (two && (full || me == root))
            a->sent[1][j] = ++ushmemi_cuda.sent[w];
        if (two && (full || to_root))
            a->expect[1][j] = ++ushmemi_cuda.expected[w];
    }
}

static void coll_kernel(shmem_team_t team, int kind, void *dest, const void *source, size_t nb,
                        int root, CUstream s, const char *call)
{
    ushmemi_kcoll_args_t a;
    pthread_mutex_lock(&ushmemi_cuda.sync_lock);
    ushmemi_kcoll_fill(&a, team, kind, root, call);
    a.src = source;
    a.nbytes = nb;
    if (kind != USHMEMI_KCOLL_BROADCAST || team->my_pe == root)
        for (int j = 0; j < team->size; j++)
            a.peer[j] = member_copy(dest, team, j, call);
    ushmemi_kcoll_launch(&a, KCOLL_THREADS, s, call);
    pthread_mutex_unlock(&ushmemi_cuda.sync_lock);
}

void ushmemi_kcoll_launch(ushmemi_kcoll_args_t *a, unsigned threads, CUstream s, const char *call)
{
    launch(ushmemi_cuda_fixed(K_COLL_SYNC, call), 1, 1, threads, 0, a, s, call);
}

/* The leader or kernel path when device buffers allow it and auto (or
 * USHMEM_CUDA_COLL) picks one: 1 when enqueued, 0 for the copy path. bytes:
 * what one PE pushes. */
static int coll_fast(shmem_team_t team, int kind, void *dest, const void *source, size_t nb,
                     int root, size_t bytes, int dev, CUstream s, const char *call)
{
    int alg = dev ? coll_alg(team, bytes, 0, 0, call) : ALG_COPY;
    if (alg == ALG_LEADER)
        coll_leader(team, kind, dest, source, nb, root, s, call);
    else if (alg == ALG_KERNEL)
        coll_kernel(team, kind, dest, source, nb, root, s, call);
    return alg != ALG_COPY;
}

/* alltoall (block j of the source goes to member j) and fcollect (the whole
 * source to every member): this PE's block lands at dest + me * nelems on
 * every member. */
static int push_on_stream(shmem_team_t team, int kind, void *dest, const void *source,
                          size_t nelems, shmemx_stream_t stream, const char *call)
{
    const int a2a = kind == USHMEMI_KCOLL_ALLTOALL;
    int ddev, sdev;
    if (!ushmemi_team_check(team, call))
        return -1;
    size_t total = mul((size_t)team->size, nelems, call);
    int h =
        coll_host_path(team, dest, total, source, a2a ? total : nelems, stream, &ddev, &sdev, call);
    if (h)
        return h < 0 ? -1
               : a2a ? ushmemi_alltoall(team, dest, source, nelems, call)
                     : ushmemi_fcollect(team, dest, source, nelems, call);
    CUstream s = (CUstream)stream;
    int n = team->size, me = team->my_pe;
    if (coll_fast(team, kind, dest, source, nelems, 0, total, ddev && sdev, s, call))
        return 0;
    ushmemi_cuda_stream_sync(team, s, call);
    for (int k = 0; k < n && nelems; k++) {
        int j = (me + k) % n; /* spread the traffic: everyone starts with a different peer */
        member_put((char *)dest + (size_t)me * nelems, team, j,
                   (const char *)source + (a2a ? (size_t)j * nelems : 0), sdev, nelems, s, call);
    }
    coll_end(team, s, call);
    return 0;
}

USHMEMI_API int shmemx_alltoallmem_on_stream(shmem_team_t team, void *dest, const void *source,
                                             size_t nelems, shmemx_stream_t stream)
{
    return push_on_stream(team, USHMEMI_KCOLL_ALLTOALL, dest, source, nelems, stream,
                          "shmemx_alltoallmem_on_stream");
}

USHMEMI_API int shmemx_broadcastmem_on_stream(shmem_team_t team, void *dest, const void *source,
                                              size_t nelems, int PE_root, shmemx_stream_t stream)
{
    static const char call[] = "shmemx_broadcastmem_on_stream";
    int ddev, sdev;
    if (!ushmemi_team_check(team, call))
        return -1;
    if (PE_root < 0 || PE_root >= team->size)
        ushmemi_fatal(call, "PE_root %d out of range (team size %d)", PE_root, team->size);
    int h = coll_host_path(team, dest, nelems, source, nelems, stream, &ddev, &sdev, call);
    if (h)
        return h < 0 ? -1 : ushmemi_broadcast(team, dest, source, nelems, PE_root, call);
    CUstream s = (CUstream)stream;
    if (coll_fast(team, USHMEMI_KCOLL_BROADCAST, dest, source, nelems, PE_root,
                  mul((size_t)team->size, nelems, call), ddev && sdev, s, call))
        return 0;
    ushmemi_cuda_stream_sync(team, s, call);
    if (team->my_pe == PE_root)
        for (int j = 0; j < team->size && nelems; j++)
            member_put(dest, team, j, source, sdev, nelems, s, call);
    coll_end(team, s, call);
    return 0;
}

USHMEMI_API int shmemx_fcollectmem_on_stream(shmem_team_t team, void *dest, const void *source,
                                             size_t nelems, shmemx_stream_t stream)
{
    return push_on_stream(team, USHMEMI_KCOLL_FCOLLECT, dest, source, nelems, stream,
                          "shmemx_fcollectmem_on_stream");
}

/* ---- reductions ---- */

/* ---- scratch buffers of reductions on a stream ----
 * The gather buffer into which the proxy fetches the sources of members on
 * other hosts, and the temporary of an in-place reduction. Plain device
 * allocations, never stream-ordered ones (cuMemAllocAsync): the proxy's copy
 * into a pool address crashed in the driver, which took it for host memory,
 * and with a pool in use nothing new ran in the context while a stream
 * waited for another host (pretend hosts, USHMEM_CUDA_COLL=copy: the proxy's
 * atomic and a probe kernel on a fresh stream never started; the pool's
 * trim at a synchronize waits for the whole context). A buffer is free again
 * once its stream has passed the reduction (a host function marks it). No
 * cuMemFree before finalize (it waits for the device, where a stream may be
 * waiting for another PE): a buffer traded for a larger one is retired and
 * freed at finalize. */
enum { NGATHER = 32 };
static struct {
    pthread_mutex_t mu;
    struct {
        CUdeviceptr p;
        size_t size;
        _Atomic int busy;
    } b[NGATHER];
    CUdeviceptr *retired;
    size_t n_retired;
} gpool = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void gather_done(void *busy)
{
    atomic_store_explicit((_Atomic int *)busy, 0, memory_order_release);
}

/* A free buffer of at least size bytes (its slot in *slot). */
static CUdeviceptr gather_take(size_t size, int *slot, const char *call)
{
    size_t want = 64 << 10;
    while (want < size)
        want *= 2;
    for (;;) {
        int fit = -1, empty = -1, small = -1;
        pthread_mutex_lock(&gpool.mu);
        for (int i = 0; i < NGATHER && fit < 0; i++) {
            if (atomic_load_explicit(&gpool.b[i].busy, memory_order_acquire))
                continue;
            if (!gpool.b[i].p)
                empty = empty < 0 ? i : empty;
            else if (gpool.b[i].size >= size)
                fit = i;
            else
                small = i;
        }
        if (fit < 0 && empty < 0 && small >= 0) { /* rare: trade a small one for a larger one */
            CUdeviceptr *r = realloc(gpool.retired, (gpool.n_retired + 1) * sizeof *r);
            if (!r)
                ushmemi_fatal(call, "out of memory");
            gpool.retired = r;
            r[gpool.n_retired++] = gpool.b[small].p;
            gpool.b[small].p = 0;
            empty = small;
        }
        if (fit < 0 && empty >= 0) {
            CU_CHECK(ushmemi_cu.cuMemAlloc(&gpool.b[empty].p, want), call);
            gpool.b[empty].size = want;
            fit = empty;
        }
        if (fit >= 0) {
            atomic_store_explicit(&gpool.b[fit].busy, 1, memory_order_relaxed);
            pthread_mutex_unlock(&gpool.mu);
            *slot = fit;
            return gpool.b[fit].p;
        }
        pthread_mutex_unlock(&gpool.mu);
        sched_yield(); /* every buffer is in use: streams will pass their reductions */
    }
}

/* The buffer is free once stream s gets here. */
static void gather_give(int slot, CUstream s, const char *call)
{
    ushmemi_cuda_trace(s, "gather buffer free (host function)", -1, (uint64_t)slot);
    CU_CHECK(ushmemi_cu.cuLaunchHostFunc(s, gather_done, (void *)&gpool.b[slot].busy), call);
}

void ushmemi_stream_scratch_fini(void)
{
    for (int i = 0; i < NGATHER; i++)
        if (gpool.b[i].p && !atomic_load(&gpool.b[i].busy)) {
            ushmemi_cu.cuMemFree(gpool.b[i].p);
            gpool.b[i].p = 0;
        }
    for (size_t i = 0; i < gpool.n_retired; i++)
        ushmemi_cu.cuMemFree(gpool.retired[i]);
    free(gpool.retired);
    gpool.retired = NULL;
    gpool.n_retired = 0;
}

static int reduce_on_stream(shmem_team_t team, void *dest, const void *source, size_t nreduce,
                            int dtype, ushmemi_redop_t op, const char *kname,
                            shmemx_stream_t stream, const char *call)
{
    int ddev, sdev;
    if (!ushmemi_team_check(team, call))
        return -1;
    size_t esize = USHMEMI_DT_SIZE(dtype), nbytes = mul(nreduce, esize, call);
    int h = coll_host_path(team, dest, nbytes, source, nbytes, stream, &ddev, &sdev, call);
    if (h)
        return h < 0 ? -1 : ushmemi_reduce(team, dest, source, nreduce, dtype, op, call);
    if (!ddev || !sdev)
        ushmemi_fatal(call, "dest and source must both be device memory (or both host memory)");
    if (team->size > USHMEMI_KRED_MAX_PES)
        ushmemi_fatal(call, "reductions on a stream support teams of up to %d PEs",
                      USHMEMI_KRED_MAX_PES);
    CUstream s = (CUstream)stream;
    int n = team->size;
    uintptr_t d = (uintptr_t)dest, sp = (uintptr_t)source;
    int inplace = d < sp + nbytes && sp < d + nbytes;
    int alg = coll_alg(team, nbytes, 1, inplace ? (d == sp ? 1 : 2) : 0, call);
    if (alg == ALG_KERNEL) {
        char sname[48];
        snprintf(sname, sizeof sname, "ushmemi_k_redsync_%s", kname + strlen("ushmemi_k_red_"));
        CUfunction f = ushmemi_cuda_kernel(sname, call);
        ushmemi_kcoll_args_t a;
        pthread_mutex_lock(&ushmemi_cuda.sync_lock);
        ushmemi_kcoll_fill(&a, team, USHMEMI_KCOLL_REDUCE, 0, call);
        for (int j = 0; j < n; j++)
            a.peer[j] = member_copy(source, team, j, call);
        a.dest = dest;
        a.nbytes = nreduce;
        a.staged = inplace;
        launch(f, 1, 1, KCOLL_THREADS, inplace ? (unsigned)nbytes : 0, &a, s, call);
        pthread_mutex_unlock(&ushmemi_cuda.sync_lock);
        return 0;
    }
    CUfunction f = ushmemi_cuda_kernel(kname, call);
    ushmemi_kred_args_t args;
    memset(&args, 0, sizeof args);
    args.npes = n;
    args.nelems = nreduce;
    /* Members on other hosts: their sources are fetched through the proxy
     * into a local gather buffer first (after the opening sync, below). */
    CUdeviceptr gather = 0;
    int proxied = ushmemi_stream_team_proxied(team), gslot = -1;
    if (proxied)
        gather = gather_take(mul((size_t)n, nbytes ? nbytes : 1, call), &gslot, call);
    for (int j = 0; j < n; j++) {
        char *p = ushmemi_xlate(source, ushmemi_team_world_pe(team, j));
        args.src[j] = p || !proxied ? member_copy(source, team, j, call)
                                    : (void *)(uintptr_t)(gather + (size_t)j * nbytes);
    }
    unsigned long long blocks = (nreduce + 255) / 256;
    unsigned grid = blocks < 1056 ? (unsigned)(blocks ? blocks : 1) : 1056;
    if (alg == ALG_LEADER) {
        pthread_mutex_lock(&ushmemi_cuda.sync_lock);
        lead_sync(team, 0, 0, s, call);
        if (team->my_pe == 0) {
            args.ndest = n;
            for (int j = 0; j < n; j++)
                args.dest[j] = member_copy(dest, team, j, call);
            launch(f, grid, 1, 256, 0, &args, s, call);
        }
        lead_sync(team, 0, 1, s, call);
        pthread_mutex_unlock(&ushmemi_cuda.sync_lock);
        return 0;
    }
    CUdeviceptr tmp = 0;
    int tslot = -1;
    if (inplace)
        tmp = gather_take(nbytes ? nbytes : 1, &tslot, call);
    args.ndest = 1;
    args.dest[0] = inplace ? (void *)(uintptr_t)tmp : dest;
    ushmemi_cuda_stream_sync(team, s, call);
    for (int j = 0; proxied && nbytes && j < n; j++)
        if (!ushmemi_xlate(source, ushmemi_team_world_pe(team, j)))
            ushmemi_stream_proxy_req(s, USHMEMI_REQ_GET | USHMEMI_REQ_WAIT, 0, 0,
                                     ushmemi_team_world_pe(team, j), source, args.src[j], nbytes,
                                     NULL, 0, call);
    if (nreduce)
        launch(f, grid, 1, 256, 0, &args, s, call);
    if (gather)
        gather_give(gslot, s, call);
    if (inplace) {
        /* Everyone has read every source before anyone overwrites its own. */
        ushmemi_cuda_stream_sync(team, s, call);
        if (nbytes)
            CU_CHECK(ushmemi_cu.cuMemcpyAsync((CUdeviceptr)d, tmp, nbytes, s), call);
        gather_give(tslot, s, call);
    }
    ushmemi_cuda_stream_sync(team, s, call);
    return 0;
}

#define DT_OF(T, IS_SIGNED)                                                                        \
    USHMEMI_DT((T)0.5 != 0   ? USHMEMI_KIND_FLOAT                                                  \
               : (IS_SIGNED) ? USHMEMI_KIND_SINT                                                   \
                             : USHMEMI_KIND_UINT,                                                  \
               sizeof(T))

static const char *red_kernel_name(int dtype, const char *op, char *buf, size_t len)
{
    const char *sfx = "";
    switch (dtype) {
    case USHMEMI_DT(USHMEMI_KIND_SINT, 4): sfx = "i32"; break;
    case USHMEMI_DT(USHMEMI_KIND_SINT, 8): sfx = "i64"; break;
    case USHMEMI_DT(USHMEMI_KIND_UINT, 4): sfx = "u32"; break;
    case USHMEMI_DT(USHMEMI_KIND_UINT, 8): sfx = "u64"; break;
    case USHMEMI_DT(USHMEMI_KIND_FLOAT, 4): sfx = "f32"; break;
    case USHMEMI_DT(USHMEMI_KIND_FLOAT, 8): sfx = "f64"; break;
    }
    snprintf(buf, len, "ushmemi_k_red_%s_%s", sfx, op);
    return buf;
}

#define RED_DEF(T, N, OP, OPENUM)                                                                  \
    USHMEMI_API int shmemx_##N##_##OP##_reduce_on_stream(                                          \
        shmem_team_t team, T *dest, const T *source, size_t nreduce, shmemx_stream_t stream)       \
    {                                                                                              \
        char kname[48];                                                                            \
        const int dt = DT_OF(T, !(((T)0 - 1) > 0));                                                \
        return reduce_on_stream(team, dest, source, nreduce, dt, OPENUM,                           \
                                red_kernel_name(dt, #OP, kname, sizeof kname), stream,             \
                                "shmemx_" #N "_" #OP "_reduce_on_stream");                         \
    }
#define RED_BITS(T, N)                                                                             \
    RED_DEF(T, N, and, USHMEMI_OP_AND)                                                             \
    RED_DEF(T, N, or, USHMEMI_OP_OR) RED_DEF(T, N, xor, USHMEMI_OP_XOR)
#define RED_ARITH(T, N)                                                                            \
    RED_DEF(T, N, max, USHMEMI_OP_MAX)                                                             \
    RED_DEF(T, N, min, USHMEMI_OP_MIN)                                                             \
    RED_DEF(T, N, sum, USHMEMI_OP_SUM) RED_DEF(T, N, prod, USHMEMI_OP_PROD)

SHMEMX_REDUCE_ON_STREAM_INT(RED_BITS)
SHMEMX_REDUCE_ON_STREAM_INT(RED_ARITH)
SHMEMX_REDUCE_ON_STREAM_FLOAT(RED_ARITH)

/* ---- host API collectives on device memory ----
 * For src/coll: when dest or source is in the device heap, the blocking
 * collective is the stream version on the internal stream, waited for. */

static int internal_wait(int rc, const char *call)
{
    CU_CHECK(ushmemi_cu.cuStreamSynchronize(ushmemi_cuda.stream), call);
    return rc;
}

int ushmemi_cuda_broadcast(shmem_team_t team, void *dest, const void *src, size_t nbytes, int root,
                           const char *call)
{
    (void)call;
    ushmemi_cuda_ctx();
    return internal_wait(
        shmemx_broadcastmem_on_stream(team, dest, src, nbytes, root, ushmemi_cuda.stream), call);
}

int ushmemi_cuda_fcollect(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                          const char *call)
{
    ushmemi_cuda_ctx();
    return internal_wait(shmemx_fcollectmem_on_stream(team, dest, src, nbytes, ushmemi_cuda.stream),
                         call);
}

int ushmemi_cuda_alltoall(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                          const char *call)
{
    ushmemi_cuda_ctx();
    return internal_wait(shmemx_alltoallmem_on_stream(team, dest, src, nbytes, ushmemi_cuda.stream),
                         call);
}

int ushmemi_cuda_reduce(shmem_team_t team, void *dest, const void *src, size_t nelems, int dtype,
                        ushmemi_redop_t op, const char *call)
{
    static const char *const names[] = {"and", "or", "xor", "max", "min", "sum", "prod"};
    char kname[48];
    if ((unsigned)op >= sizeof names / sizeof names[0] ||
        (USHMEMI_DT_SIZE(dtype) != 4 && USHMEMI_DT_SIZE(dtype) != 8) ||
        USHMEMI_DT_KIND(dtype) == USHMEMI_KIND_COMPLEX)
        ushmemi_fatal(call, "this reduction is not available on device memory (4- and 8-byte "
                            "integer and floating-point types only)");
    ushmemi_cuda_ctx();
    return internal_wait(reduce_on_stream(team, dest, src, nelems, dtype, op,
                                          red_kernel_name(dtype, names[op], kname, sizeof kname),
                                          ushmemi_cuda.stream, call),
                         call);
}
