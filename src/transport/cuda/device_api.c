/* Host side of the device API (include/shmemx_device.cuh): the handle kernels
 * receive, whether device-side waits are safe, and the collective launch.
 *
 * Device waits spin. With several PEs on one GPU that is only safe when the
 * spinning kernel cannot keep a peer's kernel off the GPU: without MPS the
 * contexts are time-sliced (correct, but each hand-off costs a slice, ~4.5 ms
 * measured on an H200), and under MPS a spinner that fills the GPU deadlocks a
 * peer that needs SMs. So waits are allowed when no GPU has two PEs, or when
 * every PE on a shared GPU runs under MPS and their SM shares sum to at most
 * the GPU's SMs; USHMEM_DEVICE_WAIT=timesliced allows them anyway. The verdict
 * is one per job: every PE computes it from the same exchanged cards. The
 * collective launch that starts such kernels is in launch.c. */
#include <stdlib.h>
#include <string.h>

#include "core/local.h"
#include "core/team.h"
#include "transport/cuda/cuda_priv.h"

/* The internal region of the device heap: [0, 64K) stream-sync counters,
 * [64K, 128K) the world peer table kernels read, then the device sync area
 * (with the stage buffers, about 4.4 MiB), from 5 MiB the ring's words. */
#define PEER_TABLE_OFF ((size_t)64 << 10)
_Static_assert(SHMEMX_DEV_SYNC_OFFSET >= PEER_TABLE_OFF + 8 * USHMEMI_CUDA_MAX_PES,
               "peer table overlaps the device sync area");
_Static_assert(SHMEMX_DEV_SYNC_OFFSET + SHMEMX_DEV_SYNC_SIZE <= USHMEMI_CUDA_INTERNAL_SIZE,
               "device sync area does not fit the internal region");
_Static_assert(SHMEMX_DEV_TEAM_SLOTS == USHMEMI_TEAM_SLOTS, "one device sync slot per team slot");
_Static_assert(SHMEMX_DEV_CMP_GE == SHMEM_CMP_GE && SHMEMX_DEV_CMP_LE == SHMEM_CMP_LE &&
                   SHMEMX_DEV_SIGNAL_ADD == SHMEM_SIGNAL_ADD,
               "device constants follow shmem.h");

/* The pinned host word kernels poll for the job's end (scratch page). */
#define ABORT_OFF 2048

/* The reverse-offload ring's words in device memory (internal region): head
 * and free_cache on lines of their own, then the descriptor kernels read. */
#define RING_OFF ((size_t)5 << 20)
_Static_assert(RING_OFF >= SHMEMX_DEV_SYNC_OFFSET + SHMEMX_DEV_SYNC_SIZE &&
                   RING_OFF + 128 + sizeof(ushmemi_dev_ring_t) <= USHMEMI_CUDA_INTERNAL_SIZE,
               "ring words overlap the internal region's other parts");

static struct {
    uint32_t flags;
    int reason;
    int gpu_pes, sm_sum, sm_total;
    int32_t pci[3];
    char why[400];
    uint64_t ring;          /* device address of the ring descriptor, 0: none */
    int near_first, near_n; /* the handle's copy of the peer table (shmemx_dev_t.near_base) */
    uint64_t near[SHMEMX_DEV_NEAR_MAX];
} dev;

/* Under MPS the device reports only this client's SMs (66 of an H200's 132 at
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50, measured), so the GPU's whole count is
 * estimated back from the percentage the client runs at (100 when unset). */
void ushmemi_cuda_dev_card(cuda_card_t *c)
{
    ushmemi_cuda_t *u = &ushmemi_cuda;
    int mps = 0, sms = 0;
    CUexecAffinityParam aff;
    ushmemi_cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, u->dev);
    if (ushmemi_cu.cuDeviceGetAttribute(&mps, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, u->dev) !=
        CUDA_SUCCESS) {
        const char *e = getenv("USHMEM_MPS"); /* older driver: trust ushrun --mps */
        mps = e && *e == '1';
    }
    c->mps = mps != 0;
    u->mps = c->mps;
    c->sm_ctx = sms;
    c->sm_total = sms;
    if (!mps)
        return;
    memset(&aff, 0, sizeof aff);
    if (ushmemi_cu.cuCtxGetExecAffinity(&aff, CU_EXEC_AFFINITY_TYPE_SM_COUNT) == CUDA_SUCCESS &&
        aff.param.smCount.val > 0 && (int)aff.param.smCount.val < sms)
        c->sm_ctx = (int32_t)aff.param.smCount.val;
    const char *p = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
    double pct = p && *p ? strtod(p, NULL) : 100.0;
    if (!(pct > 0 && pct <= 100))
        pct = 100.0;
    c->sm_total = (int32_t)(c->sm_ctx * 100.0 / pct + 0.5);
}

/* Index of s in the NULL-terminated list, or -1. */
static int one_of(const char *s, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(s, list[i]))
            return i;
    return -1;
}

/* USHMEM_DEVICE_WAIT: 0 auto, 1 timesliced, 2 off, -1 unknown. */
static int mode_of(const char *s)
{
    static const char *const modes[] = {"auto", "timesliced", "off", NULL};
    return one_of(s, modes);
}

int ushmemi_cuda_dev_check_env(const char *call)
{
    static const char *const contexts[] = {"own", "primary", NULL};
    static const char *const colls[] = {"auto", "copy", "leader", "kernel", NULL};
    static const char *const barriers[] = {"auto", "rounds", "mesh", "kernel", NULL};
    static const char *const scopes[] = {"auto", "sys", NULL};
    if (one_of(ushmemi_env.device_scope, scopes) < 0) {
        ushmemi_error(call, "USHMEM_DEVICE_SCOPE='%s': use auto or sys", ushmemi_env.device_scope);
        return USHMEM_EINVAL;
    }
    if (mode_of(ushmemi_env.device_wait) < 0) {
        ushmemi_error(call, "USHMEM_DEVICE_WAIT='%s': use auto, timesliced or off",
                      ushmemi_env.device_wait);
        return USHMEM_EINVAL;
    }
    if (one_of(ushmemi_env.proxy_context, contexts) < 0) {
        ushmemi_error(call, "USHMEM_PROXY_CONTEXT='%s': use own or primary",
                      ushmemi_env.proxy_context);
        return USHMEM_EINVAL;
    }
    if (one_of(ushmemi_env.cuda_coll, colls) < 0) {
        ushmemi_error(call, "USHMEM_CUDA_COLL='%s': use auto, copy, leader or kernel",
                      ushmemi_env.cuda_coll);
        return USHMEM_EINVAL;
    }
    if (one_of(ushmemi_env.cuda_barrier, barriers) < 0) {
        ushmemi_error(call, "USHMEM_CUDA_BARRIER='%s': use auto, rounds, mesh or kernel",
                      ushmemi_env.cuda_barrier);
        return USHMEM_EINVAL;
    }
    if (ushmemi_env.device_wait_timeout < 0) {
        ushmemi_error(call, "USHMEM_DEVICE_WAIT_TIMEOUT=%ld: seconds, 0 for no limit",
                      ushmemi_env.device_wait_timeout);
        return USHMEM_EINVAL;
    }
    return 0;
}

/* The PEs of this host on GPU pci: describes them in dev (how many, their SM
 * shares, the GPU's SMs) and returns whether they may spin on it. */
static int judge_gpu(const cuda_card_t *cards, int n, const int32_t pci[3])
{
    int pes = 0, sum = 0, total = 0, all_mps = 1;
    for (int b = 0; b < n; b++) {
        if (cards[b].state != 1 || !ushmemi_same_machine(b) || memcmp(cards[b].pci, pci, 12))
            continue;
        pes++;
        sum += cards[b].sm_ctx;
        all_mps &= cards[b].mps != 0;
        if (cards[b].sm_total > total)
            total = cards[b].sm_total;
    }
    memcpy(dev.pci, pci, sizeof dev.pci);
    dev.gpu_pes = pes;
    dev.sm_sum = sum;
    dev.sm_total = total;
    if (pes > 1 && !all_mps)
        return SHMEMX_DEV_WAIT_SHARED_GPU;
    if (pes > 1 && sum > total)
        return SHMEMX_DEV_WAIT_MPS_SHARES;
    return SHMEMX_DEV_WAIT_SAFE;
}

/* Device waits are judged per machine (pretend hosts of one machine share its
 * GPUs), from the same cards on every PE: our
 * GPU's verdict, else the first other GPU that blocks them (dev then
 * describes that GPU; when all are safe, ours). */
static void judge_waits(const cuda_card_t *cards, int n)
{
    const int32_t *mine = cards[ushmemi_g.my_pe].pci;
    dev.reason = judge_gpu(cards, n, mine);
    for (int i = 0; i < n && dev.reason == SHMEMX_DEV_WAIT_SAFE; i++)
        if (cards[i].state == 1 && ushmemi_same_machine(i) && memcmp(cards[i].pci, mine, 12))
            dev.reason = judge_gpu(cards, n, cards[i].pci);
    if (dev.reason == SHMEMX_DEV_WAIT_SAFE)
        judge_gpu(cards, n, mine);
}

static void write_why(void)
{
    int mode = mode_of(ushmemi_env.device_wait);
    char gpu[32];
    snprintf(gpu, sizeof gpu, "%04x:%02x:%02x", (unsigned)dev.pci[0], (unsigned)dev.pci[1],
             (unsigned)dev.pci[2]);
    dev.why[0] = 0;
    if (mode == 2)
        snprintf(dev.why, sizeof dev.why, "USHMEM_DEVICE_WAIT=off turns device-side waits off");
    else if (dev.reason == SHMEMX_DEV_WAIT_SHARED_GPU)
        snprintf(dev.why, sizeof dev.why,
                 "%d PEs share GPU %s without MPS: a spinning kernel holds the GPU for its time "
                 "slice (~4.5 ms per hand-off); wait with shmemx_signal_wait_until_on_stream, "
                 "use one PE per GPU or MPS (ushrun --mps), or set USHMEM_DEVICE_WAIT=timesliced "
                 "(slow but correct)",
                 dev.gpu_pes, gpu);
    else if (dev.reason == SHMEMX_DEV_WAIT_MPS_SHARES)
        snprintf(dev.why, sizeof dev.why,
                 "under MPS the %d PEs on GPU %s may use %d SMs together, more than its %d: a "
                 "spinning kernel can starve a peer forever; set "
                 "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE <= %d (ushrun --mps does)",
                 dev.gpu_pes, gpu, dev.sm_sum, dev.sm_total,
                 dev.gpu_pes > 0 ? 100 / dev.gpu_pes : 100);
}

/* After the heaps are mapped (cuda_attach): the verdict on waits, the native
 * atomics flag and the world peer table in our device heap. */
int ushmemi_cuda_dev_attach(const cuda_card_t *cards, const char *call)
{
    ushmemi_cuda_t *u = &ushmemi_cuda;
    int n = ushmemi_g.n_pes, mode = mode_of(ushmemi_env.device_wait), atomics = 1;
    int one_gpu = !strcmp(ushmemi_env.device_scope, "auto");
    char **peer = ushmemi_g.seg[USHMEMI_SEG_DEVHEAP].peer;
    uint64_t *table = calloc((size_t)n, sizeof *table);
    if (!table)
        return USHMEM_ENOMEM;
    judge_waits(cards, n);
    ushmemi_cuda_launch_reset();
    for (int pe = 0; pe < n; pe++) {
        table[pe] = (uint64_t)(uintptr_t)peer[pe];
        int ord = u->peer_dev[pe], native = 0;
        one_gpu &= pe == ushmemi_g.my_pe || (peer[pe] && ord == u->device);
        if (!peer[pe] || pe == ushmemi_g.my_pe || ord == u->device || ord < 0)
            continue;
        CUdevice pd;
        if (ushmemi_cu.cuDeviceGet(&pd, ord) != CUDA_SUCCESS ||
            ushmemi_cu.cuDeviceGetP2PAttribute(&native,
                                               CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
                                               u->dev, pd) != CUDA_SUCCESS)
            native = 0;
        atomics &= native != 0;
    }
    dev.flags = atomics ? SHMEMX_DEV_F_PEER_ATOMICS : 0;
    if (one_gpu) /* every heap is this GPU's memory: barriers may order at GPU scope */
        dev.flags |= SHMEMX_DEV_F_ONE_GPU;
    if (mode == 1 || (mode == 0 && dev.reason == SHMEMX_DEV_WAIT_SAFE))
        dev.flags |= SHMEMX_DEV_F_WAIT_OK;
    if (mode == 1 && dev.reason != SHMEMX_DEV_WAIT_SAFE)
        dev.flags |= SHMEMX_DEV_F_TIMESLICED;
    write_why();
    /* The handle's own copy: SHMEMX_DEV_NEAR_MAX entries from the first mapped PE (a
     * host's PEs are usually consecutive world PEs). */
    dev.near_first = 0;
    while (dev.near_first < n - 1 && !table[dev.near_first])
        dev.near_first++;
    dev.near_n =
        n - dev.near_first < SHMEMX_DEV_NEAR_MAX ? n - dev.near_first : SHMEMX_DEV_NEAR_MAX;
    memcpy(dev.near, table + dev.near_first, (size_t)dev.near_n * sizeof *table);
    u->scratch[ABORT_OFF / 8] = 0;
    CUresult r =
        ushmemi_cu.cuMemcpy(u->base + PEER_TABLE_OFF, (CUdeviceptr)(uintptr_t)table, (size_t)n * 8);
    free(table);
    int rc = 0;
    if (r != CUDA_SUCCESS) {
        ushmemi_error(call, "cannot write the device peer table: %s", ushmemi_cu_errstr(r));
        rc = USHMEM_ESYS;
    }
    if (!rc && dev.why[0])
        ushmemi_debug(call, "device-side waits off: %s", dev.why);
    return rc;
}

int ushmemi_cuda_dev_waits(void)
{
    if (!(dev.flags & SHMEMX_DEV_F_WAIT_OK))
        return 0;
    return dev.reason == SHMEMX_DEV_WAIT_SAFE ? 1 : 2;
}

const char *ushmemi_cuda_dev_waits_why(void)
{
    return dev.why[0] ? dev.why : "device-side waits are off";
}

void ushmemi_cuda_dev_wait_limits(uint64_t *abort_flag, uint64_t *timeout_ns)
{
    *abort_flag = ushmemi_cuda.scratch_d + ABORT_OFF;
    *timeout_ns = (uint64_t)ushmemi_env.device_wait_timeout * 1000000000ull;
}

void ushmemi_cuda_dev_abort(void)
{
    if (ushmemi_cuda.scratch)
        __atomic_store_n((uint32_t *)&ushmemi_cuda.scratch[ABORT_OFF / 8], 1u, __ATOMIC_RELEASE);
}

/* A destroyed team's slot starts the next team at epoch 0 on every member
 * (team.c calls this after the team's final sync). */
void ushmemi_cuda_dev_team_reset(int slot)
{
    ushmemi_cuda_t *u = &ushmemi_cuda;
    CUdeviceptr sync = u->base + SHMEMX_DEV_SYNC_OFFSET;
    ushmemi_cuda_ctx();
    pthread_mutex_lock(&u->lock);
    CU_CHECK(
        ushmemi_cu.cuMemsetD8Async(sync + SHMEMX_DEV_EPOCH_OFF + 8 * (size_t)slot, 0, 8, u->stream),
        "shmem_team_destroy");
    CU_CHECK(ushmemi_cu.cuMemsetD8Async(sync + SHMEMX_DEV_INBOX_OFF +
                                            (size_t)slot * SHMEMX_DEV_BARRIER_MAX * 8,
                                        0, SHMEMX_DEV_BARRIER_MAX * 8, u->stream),
             "shmem_team_destroy");
    CU_CHECK(ushmemi_cu.cuStreamSynchronize(u->stream), "shmem_team_destroy");
    pthread_mutex_unlock(&u->lock);
}

uint64_t ushmemi_cuda_dev_ring_words(void)
{
    return ushmemi_g.cuda_active ? ushmemi_cuda.base + RING_OFF : 0;
}

/* head = 0, free_cache = cap (every slot of the first lap is free), then the
 * descriptor; handles filled from now on carry it. */
int ushmemi_cuda_dev_ring_install(const void *desc, size_t n, uint32_t cap, const char *call)
{
    ushmemi_cuda_t *u = &ushmemi_cuda;
    uint64_t words[16] = {0};
    if (n != sizeof(ushmemi_dev_ring_t))
        return USHMEM_EINVAL;
    words[8] = cap;
    ushmemi_cuda_ctx();
    CUresult r =
        ushmemi_cu.cuMemcpy(u->base + RING_OFF, (CUdeviceptr)(uintptr_t)words, sizeof words);
    if (r == CUDA_SUCCESS)
        r = ushmemi_cu.cuMemcpy(u->base + RING_OFF + 128, (CUdeviceptr)(uintptr_t)desc, n);
    if (r != CUDA_SUCCESS) {
        ushmemi_error(call, "cannot write the device request ring: %s", ushmemi_cu_errstr(r));
        return USHMEM_ESYS;
    }
    dev.ring = u->base + RING_OFF + 128;
    return 0;
}

void ushmemi_cuda_dev_ring_remove(void)
{
    dev.ring = 0;
}

int ushmemi_cuda_dev_has_ring(void)
{
    return dev.ring != 0;
}

static int dev_fill(shmem_team_t team, shmemx_dev_t *out, const char *call);
void ushmemi_cuda_dev_world(shmemx_dev_t *d)
{
    if (dev_fill(SHMEM_TEAM_WORLD, d, "stream operation"))
        ushmemi_fatal("stream operation", "no device handle for the proxy's requests");
}

/* ---- public ---- */

static int dev_fill(shmem_team_t team, shmemx_dev_t *out, const char *call)
{
    ushmemi_cuda_t *u = &ushmemi_cuda;
    if (!out) {
        ushmemi_error(call, "out is NULL");
        return SHMEMX_ERR_INVALID;
    }
    if (!ushmemi_g.initialized) {
        ushmemi_error(call, "called before shmem_init");
        return SHMEMX_ERR_STATE;
    }
    if (!ushmemi_g.cuda_active) {
        ushmemi_error(call, "this PE has no device heap (bind a GPU: USHMEM_DEVICE, LOCAL_RANK or "
                            "shmemx_init_attr's device)");
        return SHMEMX_ERR_STATE;
    }
    if (team == SHMEM_TEAM_INVALID || !ushmemi_team_check(team, call))
        return SHMEMX_ERR_INVALID;
    shmemx_dev_t d;
    memset(&d, 0, sizeof d);
    d.magic = SHMEMX_DEV_MAGIC;
    d.version = SHMEMX_DEV_VERSION;
    d.my_pe = team->my_pe;
    d.n_pes = team->size;
    d.team_start = team->start;
    d.team_stride = team->stride;
    d.world_pe = ushmemi_g.my_pe;
    d.world_n_pes = ushmemi_g.n_pes;
    d.team_slot = team->slot;
    d.flags = dev.flags | (team == SHMEM_TEAM_WORLD ? SHMEMX_DEV_F_WORLD : 0);
    d.wait_reason = dev.reason;
    d.gpu_pes = dev.gpu_pes;
    d.sm_sum = dev.sm_sum;
    d.sm_total = dev.sm_total;
    memcpy(d.gpu_pci, dev.pci, sizeof d.gpu_pci);
    d.heap_base = u->base;
    d.heap_size = u->size;
    d.peer_base = u->base + PEER_TABLE_OFF;
    d.sync = u->base + SHMEMX_DEV_SYNC_OFFSET;
    ushmemi_cuda_dev_wait_limits(&d.abort_flag, &d.wait_timeout_ns);
    d.proxy = dev.ring;
    if (d.proxy) /* the proxy's host thread writes heaps: system scope */
        d.flags &= ~SHMEMX_DEV_F_ONE_GPU;
    d.near_first = dev.near_first;
    d.near_n = dev.near_n;
    memcpy(d.near_base, dev.near, sizeof d.near_base);
    *out = d;
    return 0;
}

USHMEMI_API int shmemx_dev_get(shmemx_dev_t *out)
{
    return dev_fill(SHMEM_TEAM_WORLD, out, "shmemx_dev_get");
}

USHMEMI_API int shmemx_team_dev_get(shmem_team_t team, shmemx_dev_t *out)
{
    return dev_fill(team, out, "shmemx_team_dev_get");
}

USHMEMI_API const char *shmemx_dev_why(void)
{
    if (!ushmemi_g.initialized)
        return "ushmem is not initialized";
    if (!ushmemi_g.cuda_active)
        return "this PE has no device heap (no GPU bound)";
    return dev.flags & SHMEMX_DEV_F_WAIT_OK ? NULL : dev.why;
}
