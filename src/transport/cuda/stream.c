/* Stream-ordered API (shmemx_*_on_stream). Each call checks its arguments,
 * enqueues work on the caller's stream and returns.
 *
 * - Data moves with cuMemcpyAsync between mapped addresses (unified
 *   addressing), or with a one-block kernel for small device copies.
 * - Synchronization is stream memory operations on the device heaps' sync
 *   counters: PE a's k-th signal to PE b writes k into b's recv[a]; b's k-th
 *   wait on a lasts until recv[a] >= k (stream_sync.c, which also has the
 *   one-warp device barrier used where device waits are safe). Otherwise no
 *   kernel spins: with several PEs on one GPU and no MPS a spinning kernel
 *   holds the GPU for its time slice and the barrier costs milliseconds.
 * - Waits that memory operations cannot express (NE, LT, LE, and anything on
 *   host memory) are released by a host progress thread: the stream writes a
 *   "reached" word and waits on a "gate" word, both in pinned host memory;
 *   the thread sees "reached", evaluates the condition, opens the gate. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/team.h"
#include "transport/cuda/cuda_priv.h"
#include "transport/cuda/stream_priv.h"

/* ---- argument checks ---- */

void ushmemi_stream_need_cuda(const char *call)
{
    USHMEMI_CHECK_INIT(call);
    if (USHMEMI_UNLIKELY(!ushmemi_g.cuda_active))
        ushmemi_fatal(call, "a CUDA stream or device memory needs a bound CUDA device, and this "
                            "PE has none (set USHMEM_DEVICE, LOCAL_RANK or shmemx_init_attr's "
                            "device; USHMEM_TRANSPORTS, if set, must include cuda)");
    ushmemi_cuda_ctx();
}

/* The copy of symmetric [sym, sym+n) on pe as mapped here; *dev: device heap. */
char *ushmemi_stream_sym_peer(const void *sym, size_t n, int pe, int *dev, const char *what,
                              const char *call)
{
    USHMEMI_CHECK_INIT(call);
    if (pe < 0 || pe >= ushmemi_g.n_pes)
        ushmemi_fatal(call, "PE %d out of range (n_pes %d)", pe, ushmemi_g.n_pes);
    int s = ushmemi_seg_of(sym, n ? n : 1);
    if (s < 0)
        ushmemi_fatal(call,
                      "%s %p (%zu bytes) is not a symmetric address (allocate it with "
                      "shmem_malloc)",
                      what, sym, n);
    char *r = ushmemi_xlate(sym, pe);
    if (!r && ushmemi_g.seg[s].kind == USHMEMI_MEM_DEVICE && ushmemi_cuda_unmapped_why(pe))
        ushmemi_fatal(call, "%s", ushmemi_cuda_unmapped_why(pe));
    if (!r)
        ushmemi_fatal(call,
                      "PE %d's %s heap is not mapped in this process (another host, or "
                      "a GPU without peer access)",
                      pe, ushmemi_g.seg[s].kind == USHMEMI_MEM_DEVICE ? "device" : "host");
    *dev = ushmemi_g.seg[s].kind == USHMEMI_MEM_DEVICE;
    return r;
}

/* ushmemi_stream_sym_peer for the operations the proxy can carry: NULL when pe's copy is
 * not mapped here but a kernel's request reaches it (another host). */
static char *sym_route(const void *sym, size_t n, int pe, int *dev, const char *what,
                       const char *call)
{
    USHMEMI_CHECK_INIT(call);
    if (pe >= 0 && pe < ushmemi_g.n_pes) {
        int s = ushmemi_seg_of(sym, n ? n : 1);
        /* Unmapped but routed (another host): the ring when there is one;
         * without a GPU only host memory with no stream can come here, and
         * the caller's host-API path takes it (a stream is refused after). */
        if (s >= 0 && !ushmemi_xlate(sym, pe) && ushmemi_route(sym, pe) &&
            (ushmemi_cuda_dev_has_ring() ||
             (!ushmemi_g.cuda_active && ushmemi_g.seg[s].kind != USHMEMI_MEM_DEVICE))) {
            *dev = ushmemi_g.seg[s].kind == USHMEMI_MEM_DEVICE;
            return NULL;
        }
    }
    return ushmemi_stream_sym_peer(sym, n, pe, dev, what, call);
}

/* Hands a request (USHMEMI_REQ_*) to this PE's proxy when the stream gets
 * there: a one-thread kernel on the ring, waiting for the answer when the
 * request says so, so later work on the stream comes after it. */
void ushmemi_stream_proxy_req(CUstream s, unsigned op, unsigned len, unsigned aux, int pe,
                              const void *a1, const void *a2, uint64_t a3, const void *a4,
                              uint64_t a5, const char *call)
{
    shmemx_dev_t d;
    ushmemi_kreq_t r = {{USHMEMI_REQ_W0(op, len, aux, pe), (uint64_t)(uintptr_t)a1,
                         (uint64_t)(uintptr_t)a2, a3, (uint64_t)(uintptr_t)a4, a5, 0}};
    ushmemi_cuda_dev_world(&d);
    ushmemi_cuda_trace(s, op & USHMEMI_REQ_WAIT ? "proxy request (waits)" : "proxy request", pe,
                       op & 0xff);
    void *params[] = {&d, &r};
    CU_CHECK(ushmemi_cu.cuLaunchKernel(ushmemi_cuda_fixed(K_PROXY_REQ, call), 1, 1, 1, 1, 1, 1, 0,
                                       s, params, NULL),
             call);
}

/* Every request handed to the proxy before is complete at its target. */
void ushmemi_stream_proxy_quiet(CUstream s, const char *call)
{
    if (ushmemi_cuda_dev_has_ring())
        ushmemi_stream_proxy_req(s, USHMEMI_REQ_QUIET | USHMEMI_REQ_WAIT, 0, 0, ushmemi_g.my_pe,
                                 NULL, NULL, 0, NULL, 0, call);
}

static int local_is_dev(const void *p)
{
    return ushmemi_g.cuda_active && ushmemi_cuda_is_device(p);
}

/* ---- stream-ordered host work ---- */

typedef struct {
    void *d;
    const void *s;
    size_t n;
    uint64_t *sig;
    uint64_t value;
    int sig_op;
} host_op_t;

static void host_op_fn(void *p)
{
    host_op_t *op = p;
    if (op->n)
        memcpy(op->d, op->s, op->n);
    atomic_thread_fence(memory_order_seq_cst);
    if (op->sig) {
        if (op->sig_op == SHMEM_SIGNAL_ADD)
            __atomic_fetch_add(op->sig, op->value, __ATOMIC_RELEASE);
        else
            __atomic_store_n(op->sig, op->value, __ATOMIC_RELEASE);
    }
    free(op);
}

static void enqueue_host_op(CUstream s, void *d, const void *src, size_t n, uint64_t *sig,
                            uint64_t value, int sig_op, const char *call)
{
    host_op_t *op = malloc(sizeof *op);
    if (!op)
        ushmemi_fatal(call, "out of memory");
    *op = (host_op_t){d, src, n, sig, value, sig_op};
    ushmemi_cuda_trace(s, "host function", -1, n);
    CU_CHECK(ushmemi_cu.cuLaunchHostFunc(s, host_op_fn, op), call);
}

/* dst/src: addresses valid here; ddev/sdev: device memory. */
void ushmemi_stream_copy(void *dst, int ddev, const void *src, int sdev, size_t n, CUstream s,
                         const char *call)
{
    if (!ddev && !sdev) {
        enqueue_host_op(s, dst, src, n, NULL, 0, 0, call);
    } else if (ddev && sdev && n <= ushmemi_cuda_kcopy_max && ushmemi_cuda.mod) {
        unsigned long long nn = n;
        size_t blocks = (n + 16383) / 16384; /* 256 threads x 4 x 16 bytes */
        void *params[] = {&dst, &src, &nn};
        CU_CHECK(ushmemi_cu.cuLaunchKernel(ushmemi_cuda.fixed[K_COPY],
                                           blocks > 528 ? 528 : (unsigned)blocks, 1, 1, 256, 1, 1,
                                           0, s, params, NULL),
                 call);
    } else if (ddev && sdev) {
        /* Device to device said explicitly: cheaper to enqueue than letting the
         * driver classify both addresses (measured, docs/cuda.md). */
        CU_CHECK(ushmemi_cu.cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)dst,
                                              (CUdeviceptr)(uintptr_t)src, n, s),
                 call);
    } else {
        CU_CHECK(ushmemi_cu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src,
                                          n, s),
                 call);
    }
}

/* ---- RMA and signals ---- */

USHMEMI_API void shmemx_putmem_on_stream(void *dest, const void *source, size_t nelems, int pe,
                                         shmemx_stream_t stream)
{
    static const char call[] = "shmemx_putmem_on_stream";
    int ddev;
    if (nelems == 0) {
        USHMEMI_CHECK_INIT(call);
        return;
    }
    char *r = sym_route(dest, nelems, pe, &ddev, "dest", call);
    int sdev = local_is_dev(source);
    if (!stream && !ddev && !sdev) {
        ushmemi_put(SHMEM_CTX_DEFAULT, dest, source, nelems, pe, call);
        return;
    }
    ushmemi_stream_need_cuda(call);
    if (!r) /* another host: the source is free once the stream gets past it */
        ushmemi_stream_proxy_req((CUstream)stream, USHMEMI_REQ_PUT | USHMEMI_REQ_WAIT, 0, 0, pe,
                                 dest, source, nelems, NULL, 0, call);
    else
        ushmemi_stream_copy(r, ddev, source, sdev, nelems, (CUstream)stream, call);
}

USHMEMI_API void shmemx_getmem_on_stream(void *dest, const void *source, size_t nelems, int pe,
                                         shmemx_stream_t stream)
{
    static const char call[] = "shmemx_getmem_on_stream";
    int sdev;
    if (nelems == 0) {
        USHMEMI_CHECK_INIT(call);
        return;
    }
    char *r = sym_route(source, nelems, pe, &sdev, "source", call);
    int ddev = local_is_dev(dest);
    if (!stream && !ddev && !sdev) {
        ushmemi_get(SHMEM_CTX_DEFAULT, dest, source, nelems, pe, call);
        return;
    }
    ushmemi_stream_need_cuda(call);
    if (!r)
        ushmemi_stream_proxy_req((CUstream)stream, USHMEMI_REQ_GET | USHMEMI_REQ_WAIT, 0, 0, pe,
                                 source, dest, nelems, NULL, 0, call);
    else
        ushmemi_stream_copy(dest, ddev, r, sdev, nelems, (CUstream)stream, call);
}

/* The argument checks of both signal calls. */
static void signal_check(const uint64_t *sig_addr, int sig_op, const char *call)
{
    if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)
        ushmemi_fatal(call, "unknown signal operator %d", sig_op);
    if ((uintptr_t)sig_addr % 8)
        ushmemi_fatal(call, "sig_addr %p is not 8-byte aligned", (const void *)sig_addr);
}

/* The signal update in stream order: on rsig (sig_addr's copy on pe as
 * mapped here), or when rsig is NULL a request to the proxy, after the
 * stream's earlier requests to pe (the proxy's order). */
static void stream_signal(uint64_t *sig_addr, uint64_t *rsig, int sdev, uint64_t value, int sig_op,
                          int pe, CUstream s, const char *call)
{
    if (!rsig) {
        ushmemi_stream_proxy_req(s, USHMEMI_REQ_AMO, 0,
                                 (sig_op == SHMEM_SIGNAL_ADD ? USHMEMI_AMO_ADD : USHMEMI_AMO_SET) |
                                     8u << 8,
                                 pe, sig_addr, (const void *)(uintptr_t)value, 0, NULL, 0, call);
    } else if (!sdev) {
        enqueue_host_op(s, NULL, NULL, 0, rsig, value, sig_op, call);
    } else if (sig_op == SHMEM_SIGNAL_SET) {
        /* The default flags put a system-wide fence before the write: the
         * data copied earlier in the stream is visible before the signal. */
        CU_CHECK(ushmemi_cu.cuStreamWriteValue64(s, (CUdeviceptr)(uintptr_t)rsig, value,
                                                 CU_STREAM_WRITE_VALUE_DEFAULT),
                 call);
    } else {
        ushmemi_cuda_sigadd_launch(NULL, s, rsig, value, call);
    }
}

USHMEMI_API void shmemx_putmem_signal_on_stream(void *dest, const void *source, size_t nelems,
                                                uint64_t *sig_addr, uint64_t signal, int sig_op,
                                                int pe, shmemx_stream_t stream)
{
    static const char call[] = "shmemx_putmem_signal_on_stream";
    int ddev = 0, sigdev;
    char *r = NULL;
    signal_check(sig_addr, sig_op, call);
    if (nelems)
        r = sym_route(dest, nelems, pe, &ddev, "dest", call);
    uint64_t *rsig = (uint64_t *)sym_route(sig_addr, 8, pe, &sigdev, "sig_addr", call);
    int sdev = nelems ? local_is_dev(source) : 0;
    int via_proxy = (nelems && !r) || !rsig;
    /* (without a GPU, "via the proxy" is host memory of another host: the
     * host API's; with one, the ring keeps the stream's order) */
    if (!stream && !ddev && !sdev && !sigdev && (!via_proxy || !ushmemi_g.cuda_active)) {
        ushmemi_put_signal(SHMEM_CTX_DEFAULT, dest, source, nelems, sig_addr, signal, sig_op, pe, 0,
                           call);
        return;
    }
    ushmemi_stream_need_cuda(call);
    CUstream s = (CUstream)stream;
    if (nelems && !r && !rsig) { /* one request: the proxy signals after the data */
        ushmemi_stream_proxy_req(s, USHMEMI_REQ_PUT_SIGNAL | USHMEMI_REQ_WAIT, 0, (unsigned)sig_op,
                                 pe, dest, source, nelems, sig_addr, signal, call);
        return;
    }
    if (nelems && !r) {
        ushmemi_stream_proxy_req(s, USHMEMI_REQ_PUT | USHMEMI_REQ_WAIT, 0, 0, pe, dest, source,
                                 nelems, NULL, 0, call);
        ushmemi_stream_proxy_quiet(s, call); /* the data is there before the signal */
    } else if (nelems) {
        ushmemi_stream_copy(r, ddev, source, sdev, nelems, s, call);
    }
    stream_signal(sig_addr, rsig, sigdev, signal, sig_op, pe, s, call);
}

/* The signal alone: release semantics in stream order (the stream's earlier
 * copies are visible at pe before the update). */
USHMEMI_API void shmemx_signal_op_on_stream(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                                            shmemx_stream_t stream)
{
    static const char call[] = "shmemx_signal_op_on_stream";
    int sigdev;
    signal_check(sig_addr, sig_op, call);
    uint64_t *rsig = (uint64_t *)sym_route(sig_addr, 8, pe, &sigdev, "sig_addr", call);
    if (!stream && !sigdev) { /* host memory, now: the host API (any route, MPI included) */
        ushmemi_signal_op(SHMEM_CTX_DEFAULT, sig_addr, signal, sig_op, pe, call);
        return;
    }
    ushmemi_stream_need_cuda(call);
    stream_signal(sig_addr, rsig, sigdev, signal, sig_op, pe, (CUstream)stream, call);
}

/* ---- waits ---- */

static int cmp_u64(uint64_t a, int cmp, uint64_t b)
{
    switch (cmp) {
    case SHMEM_CMP_EQ: return a == b;
    case SHMEM_CMP_NE: return a != b;
    case SHMEM_CMP_GT: return a > b;
    case SHMEM_CMP_GE: return a >= b;
    case SHMEM_CMP_LT: return a < b;
    default: return a <= b;
    }
}

#define NGATES 256
typedef struct {
    _Atomic uint64_t reach; /* written by the stream: it got here */
    _Atomic uint64_t gate;  /* written by the thread: go on */
} gate_t;

typedef struct {
    int busy;
    int dev;
    int cmp;
    uint64_t ticket;
    uint64_t value;
    const uint64_t *addr;
} waiter_t;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int running, stop;
    gate_t *gates; /* pinned, device-mapped */
    CUdeviceptr gates_d;
    uint64_t next_ticket;
    waiter_t w[NGATES];
} prog = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *progress_main(void *arg)
{
    (void)arg;
    CUstream s = NULL;
    uint64_t *tmp = NULL;
    CUdeviceptr tmp_d = 0;
    unsigned idle = 0;
    ushmemi_cu.cuCtxSetCurrent(ushmemi_cuda.ctx);
    if (ushmemi_cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
        ushmemi_cu.cuMemHostAlloc((void **)&tmp, 64, CU_MEMHOSTALLOC_DEVICEMAP) ||
        ushmemi_cu.cuMemHostGetDevicePointer(&tmp_d, tmp, 0))
        ushmemi_fatal("shmemx_signal_wait_until_on_stream", "cannot start the progress thread");
    pthread_mutex_lock(&prog.mu);
    while (!prog.stop) {
        int any = 0, progressed = 0;
        for (int i = 0; i < NGATES; i++) {
            waiter_t *w = &prog.w[i];
            if (!w->busy)
                continue;
            any = 1;
            if (atomic_load_explicit(&prog.gates[i].reach, memory_order_acquire) < w->ticket)
                continue;
            uint64_t v;
            if (w->dev) {
                pthread_mutex_unlock(&prog.mu);
                CU_CHECK(ushmemi_cu.cuMemcpyAsync(tmp_d, (CUdeviceptr)(uintptr_t)w->addr, 8, s),
                         "shmemx_signal_wait_until_on_stream");
                CU_CHECK(ushmemi_cu.cuStreamSynchronize(s), "shmemx_signal_wait_until_on_stream");
                v = __atomic_load_n(tmp, __ATOMIC_ACQUIRE);
                pthread_mutex_lock(&prog.mu);
            } else {
                v = __atomic_load_n(w->addr, __ATOMIC_ACQUIRE);
            }
            if (cmp_u64(v, w->cmp, w->value)) {
                atomic_store_explicit(&prog.gates[i].gate, w->ticket, memory_order_release);
                atomic_thread_fence(memory_order_seq_cst);
                w->busy = 0;
                progressed = 1;
            }
        }
        if (!any) {
            idle = 0;
            pthread_cond_wait(&prog.cv, &prog.mu);
        } else if (!progressed) {
            pthread_mutex_unlock(&prog.mu);
            if (++idle < 64)
                sched_yield();
            else
                nanosleep(&(struct timespec){0, 20000}, NULL);
            pthread_mutex_lock(&prog.mu);
        } else {
            idle = 0;
        }
    }
    pthread_mutex_unlock(&prog.mu);
    ushmemi_cu.cuStreamDestroy(s);
    ushmemi_cu.cuMemFreeHost(tmp);
    return NULL;
}

static void progress_wait(CUstream s, const uint64_t *addr, int dev, int cmp, uint64_t value,
                          const char *call)
{
    int slot = -1;
    uint64_t ticket;
    pthread_mutex_lock(&prog.mu);
    if (!prog.gates) {
        CU_CHECK(ushmemi_cu.cuMemHostAlloc((void **)&prog.gates, NGATES * sizeof(gate_t),
                                           CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
                 call);
        CU_CHECK(ushmemi_cu.cuMemHostGetDevicePointer(&prog.gates_d, prog.gates, 0), call);
        memset((void *)prog.gates, 0, NGATES * sizeof(gate_t));
    }
    if (!prog.running) {
        prog.stop = 0;
        if (pthread_create(&prog.thread, NULL, progress_main, NULL) != 0)
            ushmemi_fatal(call, "cannot create the progress thread");
        prog.running = 1;
    }
    for (;;) {
        for (int i = 0; i < NGATES && slot < 0; i++)
            if (!prog.w[i].busy)
                slot = i;
        if (slot >= 0)
            break;
        /* All gates taken by waits whose streams have not got there yet. */
        pthread_mutex_unlock(&prog.mu);
        sched_yield();
        pthread_mutex_lock(&prog.mu);
    }
    ticket = ++prog.next_ticket;
    prog.w[slot] = (waiter_t){1, dev, cmp, ticket, value, addr};
    ushmemi_cuda_trace(s, "gate wait (wait value, host word)", -1, ticket);
    CU_CHECK(ushmemi_cu.cuStreamWriteValue64(s, prog.gates_d + (CUdeviceptr)slot * sizeof(gate_t),
                                             ticket, CU_STREAM_WRITE_VALUE_DEFAULT),
             call);
    CU_CHECK(ushmemi_cu.cuStreamWaitValue64(s,
                                            prog.gates_d + (CUdeviceptr)slot * sizeof(gate_t) + 8,
                                            ticket, CU_STREAM_WAIT_VALUE_GEQ),
             call);
    pthread_cond_signal(&prog.cv);
    pthread_mutex_unlock(&prog.mu);
}

void ushmemi_cuda_progress_fini(void)
{
    pthread_mutex_lock(&prog.mu);
    int running = prog.running, pending = 0;
    prog.stop = 1;
    pthread_cond_signal(&prog.cv);
    pthread_mutex_unlock(&prog.mu);
    if (running)
        pthread_join(prog.thread, NULL);
    prog.running = 0;
    ushmemi_stream_scratch_fini();
    /* Release streams still parked at a gate, so none hangs after finalize. */
    for (int i = 0; i < NGATES; i++)
        if (prog.w[i].busy) {
            atomic_store(&prog.gates[i].gate, prog.w[i].ticket);
            prog.w[i].busy = 0;
            pending = 1;
        }
    if (pending)
        ushmemi_debug("shmem_finalize", "stream waits still pending at finalize were released");
    /* The gates stay allocated if a stream may still read them. */
    if (prog.gates && !pending) {
        ushmemi_cu.cuMemFreeHost(prog.gates);
        prog.gates = NULL;
    }
}

USHMEMI_API void shmemx_signal_wait_until_on_stream(uint64_t *sig_addr, int cmp, uint64_t cmp_value,
                                                    shmemx_stream_t stream)
{
    static const char call[] = "shmemx_signal_wait_until_on_stream";
    int dev;
    if (cmp < SHMEM_CMP_EQ || cmp > SHMEM_CMP_LE)
        ushmemi_fatal(call, "unknown comparison operator %d", cmp);
    if ((uintptr_t)sig_addr % 8)
        ushmemi_fatal(call, "sig_addr %p is not 8-byte aligned", (void *)sig_addr);
    (void)ushmemi_stream_sym_peer(sig_addr, 8, ushmemi_g.my_pe, &dev, "sig_addr", call);
    if (!stream && !dev) {
        (void)shmem_signal_wait_until(sig_addr, cmp, cmp_value);
        return;
    }
    ushmemi_stream_need_cuda(call);
    CUstream s = (CUstream)stream;
    CUdeviceptr a = (CUdeviceptr)(uintptr_t)sig_addr;
    /* GEQ is "(int64_t)(*addr - value) >= 0": the unsigned comparison as
     * long as the two values are less than 2^63 apart. */
    if (dev && cmp == SHMEM_CMP_EQ)
        CU_CHECK(ushmemi_cu.cuStreamWaitValue64(s, a, cmp_value, CU_STREAM_WAIT_VALUE_EQ), call);
    else if (dev && cmp == SHMEM_CMP_GE)
        CU_CHECK(ushmemi_cu.cuStreamWaitValue64(s, a, cmp_value, CU_STREAM_WAIT_VALUE_GEQ), call);
    else if (dev && cmp == SHMEM_CMP_GT && cmp_value != UINT64_MAX)
        CU_CHECK(ushmemi_cu.cuStreamWaitValue64(s, a, cmp_value + 1, CU_STREAM_WAIT_VALUE_GEQ),
                 call);
    else
        progress_wait(s, sig_addr, dev, cmp, cmp_value, call);
}

/* ---- stream-ordered barriers ---- */

/* No device bound: only a NULL stream makes sense, and means "now". */
static int host_only(shmemx_stream_t stream, const char *call)
{
    USHMEMI_CHECK_INIT(call);
    if (ushmemi_g.cuda_active)
        return 0;
    if (stream)
        ushmemi_stream_need_cuda(call); /* reports */
    return 1;
}

static void team_sync_on_stream(shmem_team_t team, shmemx_stream_t stream, int quiet,
                                const char *call)
{
    if (!ushmemi_team_check(team, call))
        ushmemi_fatal(call, "invalid team");
    if (host_only(stream, call)) {
        if (quiet)
            ushmemi_quiet(SHMEM_CTX_DEFAULT);
        ushmemi_team_sync(team, call);
        return;
    }
    ushmemi_cuda_ctx();
    if (quiet) {
        ushmemi_quiet(SHMEM_CTX_DEFAULT); /* the host API's nbi work */
        ushmemi_stream_proxy_quiet((CUstream)stream,
                                   call); /* the stream's requests to other hosts */
    }
    ushmemi_cuda_stream_sync(team, (CUstream)stream, call);
}

/* Stream work on mapped peers is complete when the stream gets past it, and
 * the signals' and barriers' memory operations fence before writing: nothing
 * to add for them; the host API's nbi copies are completed here, and requests
 * to other hosts by a QUIET request in stream order. */
USHMEMI_API void shmemx_quiet_on_stream(shmemx_stream_t stream)
{
    USHMEMI_CHECK_INIT("shmemx_quiet_on_stream");
    ushmemi_quiet(SHMEM_CTX_DEFAULT);
    if (ushmemi_g.cuda_active) { /* requests to other hosts complete in stream order */
        ushmemi_cuda_ctx();
        ushmemi_stream_proxy_quiet((CUstream)stream, "shmemx_quiet_on_stream");
    }
}

USHMEMI_API void shmemx_barrier_all_on_stream(shmemx_stream_t stream)
{
    team_sync_on_stream(SHMEM_TEAM_WORLD, stream, 1, "shmemx_barrier_all_on_stream");
}

USHMEMI_API void shmemx_sync_all_on_stream(shmemx_stream_t stream)
{
    team_sync_on_stream(SHMEM_TEAM_WORLD, stream, 0, "shmemx_sync_all_on_stream");
}

USHMEMI_API void shmemx_barrier_on_stream(shmem_team_t team, shmemx_stream_t stream)
{
    team_sync_on_stream(team, stream, 1, "shmemx_barrier_on_stream");
}

USHMEMI_API void shmemx_team_sync_on_stream(shmem_team_t team, shmemx_stream_t stream)
{
    team_sync_on_stream(team, stream, 0, "shmemx_team_sync_on_stream");
}
