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
 *   mesh:   one round: a signal to every member, then a wait on every member,
 *           all in one batch of stream memory operations (cuStreamBatchMemOp);
 *   kernel: one block of one warp that does the mesh round on the device
 *           (ushmemi_k_coll_sync with USHMEMI_KCOLL_BARRIER), where device
 *           waits are safe (MPS with fitting shares, or one PE per GPU).
 *
 * USHMEM_CUDA_BARRIER picks one (the same on every PE); auto takes the
 * kernel where device waits are safe and the team fits it, else the mesh
 * up to MESH_AUTO_MAX members, else rounds. Every input of that choice is
 * the same on every member (team size, the job's verdict on device waits,
 * whether some member is on another host). */
#include <string.h>

#include "core/team.h"
#include "transport/cuda/cuda_priv.h"
#include "transport/cuda/stream_priv.h"

/* auto: the largest team that synchronizes in one mesh round of memory
 * operations (2 (n - 1) of them per PE, one after another on the stream). */
#define MESH_AUTO_MAX 8
/* cuStreamBatchMemOp takes fewer than 256 operations per call. */
#define BATCH_MAX 254

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

/* The address and value of this PE's next signal to mapped PE w. */
static CUdeviceptr signal_slot(CUstream s, int w, uint64_t *v, const char *call)
{
    *v = ++ushmemi_cuda.sent[w];
    ushmemi_cuda_trace(s, "sync signal (write value)", w, *v);
    return ushmemi_stream_peer_heap(w, call) + (CUdeviceptr)ushmemi_g.my_pe * 8;
}

/* This PE's next signal to world PE w, and its wait for w's next signal, on
 * stream s (under sync_lock). */
void ushmemi_stream_sync_signal(CUstream s, int w, const char *call)
{
    if (via_proxy(w)) {
        /* another host: the proxy sets our word in w's recv[] */
        CUdeviceptr mine = ushmemi_cuda.base + (CUdeviceptr)ushmemi_g.my_pe * 8;
        ushmemi_stream_proxy_req(s, USHMEMI_REQ_AMO, 0, USHMEMI_AMO_SET | 8u << 8, w,
                                 (const void *)(uintptr_t)mine,
                                 (const void *)(uintptr_t)++ushmemi_cuda.sent[w], 0, NULL, 0, call);
        return;
    }
    uint64_t v;
    CUdeviceptr at = signal_slot(s, w, &v, call);
    CU_CHECK(ushmemi_cu.cuStreamWriteValue64(s, at, v, CU_STREAM_WRITE_VALUE_DEFAULT), call);
}

void ushmemi_stream_sync_wait(CUstream s, int w, const char *call)
{
    ushmemi_cuda_trace(s, "sync wait (wait value)", w, ushmemi_cuda.expected[w] + 1);
    CU_CHECK(ushmemi_cu.cuStreamWaitValue64(s, ushmemi_cuda.base + (CUdeviceptr)w * 8,
                                            ++ushmemi_cuda.expected[w], CU_STREAM_WAIT_VALUE_GEQ),
             call);
}

static void sync_rounds(shmem_team_t team, CUstream s, const char *call)
{
    int n = team->size, me = team->my_pe;
    for (int dist = 1; dist < n; dist <<= 1) {
        ushmemi_stream_sync_signal(s, ushmemi_team_world_pe(team, (me + dist) % n), call);
        ushmemi_stream_sync_wait(s, ushmemi_team_world_pe(team, (me + n - dist) % n), call);
    }
}

typedef struct {
    CUstreamBatchMemOpParams op[BATCH_MAX];
    unsigned n;
} batch_t;

static void batch_flush(batch_t *b, CUstream s, const char *call)
{
    if (b->n)
        CU_CHECK(ushmemi_cu.cuStreamBatchMemOp(s, b->n, b->op, 0), call);
    b->n = 0;
}

static void batch_add(batch_t *b, int kind, CUdeviceptr at, uint64_t v, unsigned flags, CUstream s,
                      const char *call)
{
    if (b->n == BATCH_MAX)
        batch_flush(b, s, call);
    CUstreamBatchMemOpParams *o = &b->op[b->n++];
    memset(o, 0, sizeof *o);
    o->value.operation = kind;
    o->value.address = at;
    o->value.value64 = v;
    o->value.flags = flags;
}

/* Members on other hosts get their signal through the proxy first (a
 * request kernel on s); the signals to mapped members and all the waits go
 * in one batch. Members are visited from me + 1 on, so that not every PE
 * signals member 0 first. */
static void sync_mesh(shmem_team_t team, CUstream s, const char *call)
{
    int n = team->size, me = team->my_pe;
    batch_t b;
    b.n = 0;
    for (int d = 1; d < n; d++) {
        int w = ushmemi_team_world_pe(team, (me + d) % n);
        if (via_proxy(w)) {
            ushmemi_stream_sync_signal(s, w, call);
            continue;
        }
        uint64_t v;
        CUdeviceptr at = signal_slot(s, w, &v, call);
        batch_add(&b, CU_STREAM_MEM_OP_WRITE_VALUE_64, at, v, CU_STREAM_WRITE_VALUE_DEFAULT, s,
                  call);
    }
    for (int d = 1; d < n; d++) {
        int w = ushmemi_team_world_pe(team, (me + n - d) % n);
        ushmemi_cuda_trace(s, "sync wait (wait value)", w, ushmemi_cuda.expected[w] + 1);
        batch_add(&b, CU_STREAM_MEM_OP_WAIT_VALUE_64, ushmemi_cuda.base + (CUdeviceptr)w * 8,
                  ++ushmemi_cuda.expected[w], CU_STREAM_WAIT_VALUE_GEQ, s, call);
    }
    batch_flush(&b, s, call);
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
    } else if (waits == 1 && fits) {
        return SYNC_KERNEL;
    }
    return n <= MESH_AUTO_MAX ? SYNC_MESH : SYNC_ROUNDS;
}

void ushmemi_cuda_stream_sync(shmem_team_t team, CUstream s, const char *call)
{
    if (team->size <= 1)
        return;
    int alg = sync_said(sync_alg_of(team, call), call);
    pthread_mutex_lock(&ushmemi_cuda.sync_lock);
    if (alg == SYNC_KERNEL)
        sync_kernel(team, s, call);
    else if (alg == SYNC_MESH)
        sync_mesh(team, s, call);
    else
        sync_rounds(team, s, call);
    pthread_mutex_unlock(&ushmemi_cuda.sync_lock);
}
