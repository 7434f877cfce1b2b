/* Stream-ordered barriers: the sync signals and waits between PEs that the
 * stream barriers (stream.c) and the collectives' copy and leader paths
 * (stream_coll.c) are made of, and the three ways a whole team synchronizes.
 *
 * PE a's k-th signal to PE b writes k into b's recv[a] (the first words of
 * b's device heap); b's k-th wait on a lasts until recv[a] >= k. The counts
 * are kept on the host in enqueue order (ushmemi_cuda.sent / expected, under
 * sync_lock), so barriers on any team and any stream share one set of
 * counters, and every algorithm below keeps them matched: in each barrier a
 * member signals exactly the members that wait on it.
 *
 *   rounds: dissemination, ceil(log2 n) rounds of one signal to member
 *           me + 2^r and one wait on member me - 2^r (stream memory
 *           operations);
 *   mesh:   one round: a signal to every member, then a wait on every member;
 *   kernel: one block of one warp that does the mesh round on the device
 *           (ushmemi_k_coll_sync with USHMEMI_KCOLL_BARRIER), where device
 *           waits are safe (MPS with fitting shares, or one PE per GPU).
 *
 * USHMEM_CUDA_BARRIER picks one (the same on every PE); auto takes the
 * kernel for 3 or more members where device waits are safe and the team fits
 * it, else rounds; the mesh only when asked for (one step instead of log2 n
 * might pay where each step is slow, PEs on different GPUs; not measured).
 * Every input of that choice is the same on every member (team size, the
 * job's verdict on device waits, whether some member is on another host).
 * The memory operations of a barrier go in one batch (ushmemi_sync_begin ..
 * end). */
#include <string.h>

#include "core/team.h"
#include "transport/cuda/cuda_priv.h"
#include "transport/cuda/stream_priv.h"

/* auto: the smallest team that takes the kernel where device waits are
 * safe. Measured on an H100, PEs sharing GPU 0, GPU µs per barrier, NVSHMEM
 * 3.4.5 in the same run (bench/cuda/results/stream_barrier_h100_2026-12-06.md):
 *   under MPS,   2 / 4 PEs: kernel 5.10 / 7.96, rounds 2.75 / 10.8, mesh
 *                3.68 / 11.8 (2 PEs: the same two operations); NVSHMEM 5.74 /
 *                9.46; 3 PEs (first form): kernel 6.82, mesh 8.20, NVSHMEM 8.07;
 *   without MPS, 2 / 4 PEs: rounds 5.31 / 18.1, mesh 5.52 / 20.8 (NVSHMEM 287 /
 *                859).
 * The batched rounds beat the mesh: a stream's memory operations run one
 * after another, and the mesh has 2 (n - 1) of them against 2 log2(n). */
#define KERNEL_AUTO_MIN 3
_Static_assert(sizeof(CUstreamBatchMemOpParams) == 48, "CUstreamBatchMemOpParams is 48 bytes");

/* World PE w's device heap as mapped here, or fatal. */
CUdeviceptr ushmemi_stream_peer_heap(int w, const char *call)
{
    char *p = ushmemi_g.seg[USHMEMI_SEG_DEVHEAP].peer[w];
    if (!p && ushmemi_cuda_unmapped_why(w))
        ushmemi_fatal(call, "%s", ushmemi_cuda_unmapped_why(w));
    if (!p)
        ushmemi_fatal(call,
                      "PE %d's device heap is not mapped here: stream-ordered "
                      "synchronization needs every team member on this host",
                      w);
    return (CUdeviceptr)(uintptr_t)p;
}

/* PE w's heap is reached through the proxy (another host). */
static int via_proxy(int w)
{
    return !ushmemi_g.seg[USHMEMI_SEG_DEVHEAP].peer[w] && ushmemi_cuda_dev_has_ring();
}

/* Some member's device heap is reached through the proxy: the same answer on
 * every member (each sees the others of other hosts). */
int ushmemi_stream_team_proxied(shmem_team_t team)
{
    for (int i = 0; i < team->size; i++)
        if (via_proxy(ushmemi_team_world_pe(team, i)))
            return 1;
    return 0;
}

void ushmemi_sync_begin(ushmemi_sync_batch_t *b, CUstream s, const char *call)
{
    b->n = 0;
    b->s = s;
    b->call = call;
}

void ushmemi_sync_end(ushmemi_sync_batch_t *b)
{
    if (b->n)
        CU_CHECK(ushmemi_cu.cuStreamBatchMemOp(b->s, b->n, b->op, 0), b->call);
    b->n = 0;
}

static void batch_add(ushmemi_sync_batch_t *b, int kind, CUdeviceptr at, uint64_t v, unsigned flags)
{
    if (b->n == USHMEMI_SYNC_BATCH_MAX)
        ushmemi_sync_end(b);
    CUstreamBatchMemOpParams *o = &b->op[b->n++];
    memset(o, 0, sizeof *o);
    o->value.operation = kind;
    o->value.address = at;
    o->value.value64 = v;
    o->value.flags = flags;
}

void ushmemi_sync_signal(ushmemi_sync_batch_t *b, int w)
{
    uint64_t v = ++ushmemi_cuda.sent[w];
    int proxy = via_proxy(w);
    ushmemi_cuda_trace(b->s, proxy ? "sync signal (proxy)" : "sync signal (write value)", w, v);
    if (proxy) {
        /* another host: the proxy sets our word in w's recv[], after what
         * is gathered so far */
        CUdeviceptr mine = ushmemi_cuda.base + (CUdeviceptr)ushmemi_g.my_pe * 8;
        ushmemi_sync_end(b);
        ushmemi_stream_proxy_req(b->s, USHMEMI_REQ_AMO, 0, USHMEMI_AMO_SET | 8u << 8, w,
                                 (const void *)(uintptr_t)mine, (const void *)(uintptr_t)v, 0, NULL,
                                 0, b->call);
        return;
    }
    batch_add(b, CU_STREAM_MEM_OP_WRITE_VALUE_64,
              ushmemi_stream_peer_heap(w, b->call) + (CUdeviceptr)ushmemi_g.my_pe * 8, v,
              CU_STREAM_WRITE_VALUE_DEFAULT);
}

void ushmemi_sync_wait(ushmemi_sync_batch_t *b, int w)
{
    uint64_t v = ++ushmemi_cuda.expected[w];
    ushmemi_cuda_trace(b->s, "sync wait (wait value)", w, v);
    batch_add(b, CU_STREAM_MEM_OP_WAIT_VALUE_64, ushmemi_cuda.base + (CUdeviceptr)w * 8, v,
              CU_STREAM_WAIT_VALUE_GEQ);
}

static void sync_rounds(shmem_team_t team, ushmemi_sync_batch_t *b)
{
    int n = team->size, me = team->my_pe;
    for (int dist = 1; dist < n; dist <<= 1) {
        ushmemi_sync_signal(b, ushmemi_team_world_pe(team, (me + dist) % n));
        ushmemi_sync_wait(b, ushmemi_team_world_pe(team, (me + n - dist) % n));
    }
}

/* Members are visited from me + 1 on, so that not every PE signals member 0
 * first. */
static void sync_mesh(shmem_team_t team, ushmemi_sync_batch_t *b)
{
    int n = team->size, me = team->my_pe;
    for (int d = 1; d < n; d++)
        ushmemi_sync_signal(b, ushmemi_team_world_pe(team, (me + d) % n));
    for (int d = 1; d < n; d++)
        ushmemi_sync_wait(b, ushmemi_team_world_pe(team, (me + n - d) % n));
}

static void sync_kernel(shmem_team_t team, CUstream s, const char *call)
{
    ushmemi_kcoll_args_t a;
    ushmemi_kcoll_fill(&a, team, USHMEMI_KCOLL_BARRIER, 0, call);
    ushmemi_kcoll_launch(&a, 32, s, call);
}

enum { SYNC_ROUNDS, SYNC_MESH, SYNC_KERNEL };

/* SHMEM_DEBUG: one line the first time each algorithm runs. */
static int sync_said(int alg, const char *call)
{
    static const char *const names[] = {"rounds", "mesh", "kernel"};
    static _Atomic int said[3];
    if (ushmemi_env.debug && !atomic_exchange(&said[alg], 1))
        ushmemi_debug(call, "stream barrier: %s (USHMEM_CUDA_BARRIER=%s)", names[alg],
                      ushmemi_env.cuda_barrier);
    return alg;
}

static int sync_alg_of(shmem_team_t team, const char *call)
{
    const char *m = ushmemi_env.cuda_barrier;
    int n = team->size;
    if (!strcmp(m, "rounds"))
        return SYNC_ROUNDS;
    if (!strcmp(m, "mesh"))
        return SYNC_MESH;
    int waits = ushmemi_cuda_dev_waits();
    int fits = ushmemi_cuda.mod && n <= USHMEMI_KCOLL_MAX_PES && !ushmemi_stream_team_proxied(team);
    if (!strcmp(m, "kernel")) {
        if (!waits)
            ushmemi_fatal(call, "USHMEM_CUDA_BARRIER=kernel needs device-side waits: %s",
                          ushmemi_cuda_dev_waits_why());
        if (fits)
            return SYNC_KERNEL;
    } else if (waits == 1 && fits && n >= KERNEL_AUTO_MIN) {
        return SYNC_KERNEL;
    }
    return SYNC_ROUNDS;
}

void ushmemi_cuda_stream_sync(shmem_team_t team, CUstream s, const char *call)
{
    if (team->size <= 1)
        return;
    int alg = sync_said(sync_alg_of(team, call), call);
    pthread_mutex_lock(&ushmemi_cuda.sync_lock);
    if (alg == SYNC_KERNEL) {
        sync_kernel(team, s, call);
    } else {
        ushmemi_sync_batch_t b;
        ushmemi_sync_begin(&b, s, call);
        if (alg == SYNC_MESH)
            sync_mesh(team, &b);
        else
            sync_rounds(team, &b);
        ushmemi_sync_end(&b);
    }
    pthread_mutex_unlock(&ushmemi_cuda.sync_lock);
}
