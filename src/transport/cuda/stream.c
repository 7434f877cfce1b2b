/* Stream-ordered API (shmemx_*_on_stream). Each call checks its arguments,
 * enqueues work on the caller's stream and returns.
 *
 * - Data moves with cuMemcpyAsync between mapped addresses (unified
 *   addressing), or with a one-block kernel for small device copies.
 * - Synchronization is stream memory operations on the device heaps' sync
 *   counters: PE a's k-th signal to PE b is cuStreamWriteValue64(k) into
 *   b's recv[a]; b's k-th wait on a is cuStreamWaitValue64(recv[a] >= k).
 *   The counts are kept on the host in enqueue order, so barriers on any
 *   team and any stream share one set of counters and nothing is reset. No
 *   kernel spins: with several PEs on one GPU a spinning kernel holds the GPU
 *   for its time slice and the barrier costs milliseconds.
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

/* ---- argument checks ---- */

static void need_cuda(const char *call)
{
    USHMEMI_CHECK_INIT(call);
    if (USHMEMI_UNLIKELY(!ushmemi_g.cuda_active))
        ushmemi_fatal(call, "a CUDA stream or device memory needs a bound CUDA device, and this "
                            "PE has none (set USHMEM_DEVICE, LOCAL_RANK or shmemx_init_attr's "
                            "device; USHMEM_TRANSPORTS, if set, must include cuda)");
    ushmemi_cuda_ctx();
}

/* The copy of symmetric [sym, sym+n) on pe as mapped here; *dev: device heap. */
static char *sym_peer(const void *sym, size_t n, int pe, int *dev, const char *what,
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

/* sym_peer for the operations the proxy can carry: NULL when pe's copy is
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
    return sym_peer(sym, n, pe, dev, what, call);
}

/* Hands a request (USHMEMI_REQ_*) to this PE's proxy when the stream gets
 * there: a one-thread kernel on the ring, waiting for the answer when the
 * request says so, so later work on the stream comes after it. */
static void proxy_on_stream(CUstream s, unsigned op, unsigned len, unsigned aux, int pe,
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
static void proxy_quiet_on_stream(CUstream s, const char *call)
{
    if (ushmemi_cuda_dev_has_ring())
        proxy_on_stream(s, USHMEMI_REQ_QUIET | USHMEMI_REQ_WAIT, 0, 0, ushmemi_g.my_pe, NULL, NULL,
                        0, NULL, 0, call);
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
static void stream_copy(void *dst, int ddev, const void *src, int sdev, size_t n, CUstream s,
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
    need_cuda(call);
    if (!r) /* another host: the source is free once the stream gets past it */
        proxy_on_stream((CUstream)stream, USHMEMI_REQ_PUT | USHMEMI_REQ_WAIT, 0, 0, pe, dest,
                        source, nelems, NULL, 0, call);
    else
        stream_copy(r, ddev, source, sdev, nelems, (CUstream)stream, call);
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
    need_cuda(call);
    if (!r)
        proxy_on_stream((CUstream)stream, USHMEMI_REQ_GET | USHMEMI_REQ_WAIT, 0, 0, pe, source,
                        dest, nelems, NULL, 0, call);
    else
        stream_copy(dest, ddev, r, sdev, nelems, (CUstream)stream, call);
}

static void stream_signal(uint64_t *rsig, int sdev, uint64_t value, int sig_op, CUstream s,
                          const char *call)
{
    if (!sdev) {
        enqueue_host_op(s, NULL, NULL, 0, rsig, value, sig_op, call);
    } else if (sig_op == SHMEM_SIGNAL_SET) {
        /* The default flags put a system-wide fence before the write: the
         * data copied earlier in the stream is visible before the signal. */
        CU_CHECK(ushmemi_cu.cuStreamWriteValue64(s, (CUdeviceptr)(uintptr_t)rsig, value,
                                                 CU_STREAM_WRITE_VALUE_DEFAULT),
                 call);
    } else {
        CUfunction f = ushmemi_cuda_fixed(K_SIGADD, call);
        unsigned long long v = value;
        void *params[] = {&rsig, &v};
        CU_CHECK(ushmemi_cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL), call);
    }
}

USHMEMI_API void shmemx_putmem_signal_on_stream(void *dest, const void *source, size_t nelems,
                                                uint64_t *sig_addr, uint64_t signal, int sig_op,
                                                int pe, shmemx_stream_t stream)
{
    static const char call[] = "shmemx_putmem_signal_on_stream";
    int ddev = 0, sigdev;
    char *r = NULL;
    if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)
        ushmemi_fatal(call, "unknown signal operator %d", sig_op);
    if ((uintptr_t)sig_addr % 8)
        ushmemi_fatal(call, "sig_addr %p is not 8-byte aligned", (void *)sig_addr);
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
    need_cuda(call);
    CUstream s = (CUstream)stream;
    if (nelems && !r && !rsig) { /* one request: the proxy signals after the data */
        proxy_on_stream(s, USHMEMI_REQ_PUT_SIGNAL | USHMEMI_REQ_WAIT, 0, (unsigned)sig_op, pe, dest,
                        source, nelems, sig_addr, signal, call);
        return;
    }
    if (nelems && !r) {
        proxy_on_stream(s, USHMEMI_REQ_PUT | USHMEMI_REQ_WAIT, 0, 0, pe, dest, source, nelems, NULL,
                        0, call);
        proxy_quiet_on_stream(s, call); /* the data is there before the signal */
    } else if (nelems) {
        stream_copy(r, ddev, source, sdev, nelems, s, call);
    }
    if (!rsig)
        proxy_on_stream(s, USHMEMI_REQ_AMO, 0,
                        (sig_op == SHMEM_SIGNAL_ADD ? USHMEMI_AMO_ADD : USHMEMI_AMO_SET) | 8u << 8,
                        pe, sig_addr, (const void *)(uintptr_t)signal, 0, NULL, 0, call);
    else
        stream_signal(rsig, sigdev, signal, sig_op, s, call);
}

/* The signal alone: release semantics in stream order (the stream's earlier
 * copies are visible at pe before the update). */
USHMEMI_API void shmemx_signal_op_on_stream(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                                            shmemx_stream_t stream)
{
    static const char call[] = "shmemx_signal_op_on_stream";
    int sigdev;
    if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)
        ushmemi_fatal(call, "unknown signal operator %d", sig_op);
    if ((uintptr_t)sig_addr % 8)
        ushmemi_fatal(call, "sig_addr %p is not 8-byte aligned", (void *)sig_addr);
    uint64_t *rsig = (uint64_t *)sym_route(sig_addr, 8, pe, &sigdev, "sig_addr", call);
    if (!stream && !sigdev) { /* host memory, now: the host API (any route, MPI included) */
        ushmemi_signal_op(SHMEM_CTX_DEFAULT, sig_addr, signal, sig_op, pe, call);
        return;
    }
    need_cuda(call);
    CUstream s = (CUstream)stream;
    if (!rsig) /* another host: after the stream's earlier requests to pe (the proxy's order) */
        proxy_on_stream(s, USHMEMI_REQ_AMO, 0,
                        (sig_op == SHMEM_SIGNAL_ADD ? USHMEMI_AMO_ADD : USHMEMI_AMO_SET) | 8u << 8,
                        pe, sig_addr, (const void *)(uintptr_t)signal, 0, NULL, 0, call);
    else
        stream_signal(rsig, sigdev, signal, sig_op, s, call);
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

static void gather_fini(void);

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
    gather_fini();
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
    (void)sym_peer(sig_addr, 8, ushmemi_g.my_pe, &dev, "sig_addr", call);
    if (!stream && !dev) {
        (void)shmem_signal_wait_until(sig_addr, cmp, cmp_value);
        return;
    }
    need_cuda(call);
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

/* World PE w's device heap as mapped here, or fatal. */
static CUdeviceptr peer_heap(int w, const char *call)
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

/* This PE's next signal to world PE w, and its wait for w's next signal, on
 * stream s (under sync_lock). */
static void sync_signal(CUstream s, int w, const char *call)
{
    CUdeviceptr mine = ushmemi_cuda.base + (CUdeviceptr)ushmemi_g.my_pe * 8;
    if (!ushmemi_g.seg[USHMEMI_SEG_DEVHEAP].peer[w] && ushmemi_cuda_dev_has_ring()) {
        /* another host: the proxy sets our word in w's recv[] */
        proxy_on_stream(s, USHMEMI_REQ_AMO, 0, USHMEMI_AMO_SET | 8u << 8, w,
                        (const void *)(uintptr_t)mine,
                        (const void *)(uintptr_t)++ushmemi_cuda.sent[w], 0, NULL, 0, call);
        return;
    }
    ushmemi_cuda_trace(s, "sync signal (write value)", w, ushmemi_cuda.sent[w] + 1);
    CU_CHECK(ushmemi_cu.cuStreamWriteValue64(s,
                                             peer_heap(w, call) + (CUdeviceptr)ushmemi_g.my_pe * 8,
                                             ++ushmemi_cuda.sent[w], CU_STREAM_WRITE_VALUE_DEFAULT),
             call);
}

static void sync_wait(CUstream s, int w, const char *call)
{
    ushmemi_cuda_trace(s, "sync wait (wait value)", w, ushmemi_cuda.expected[w] + 1);
    CU_CHECK(ushmemi_cu.cuStreamWaitValue64(s, ushmemi_cuda.base + (CUdeviceptr)w * 8,
                                            ++ushmemi_cuda.expected[w], CU_STREAM_WAIT_VALUE_GEQ),
             call);
}

void ushmemi_cuda_stream_sync(shmem_team_t team, CUstream s, const char *call)
{
    int n = team->size, me = team->my_pe;
    if (n <= 1)
        return;
    pthread_mutex_lock(&ushmemi_cuda.sync_lock);
    for (int dist = 1; dist < n; dist <<= 1) {
        sync_signal(s, ushmemi_team_world_pe(team, (me + dist) % n), call);
        sync_wait(s, ushmemi_team_world_pe(team, (me + n - dist) % n), call);
    }
    pthread_mutex_unlock(&ushmemi_cuda.sync_lock);
}

/* No device bound: only a NULL stream makes sense, and means "now". */
static int host_only(shmemx_stream_t stream, const char *call)
{
    USHMEMI_CHECK_INIT(call);
    if (ushmemi_g.cuda_active)
        return 0;
    if (stream)
        need_cuda(call); /* reports */
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
        ushmemi_quiet(SHMEM_CTX_DEFAULT);              /* the host API's nbi work */
        proxy_quiet_on_stream((CUstream)stream, call); /* the stream's requests to other hosts */
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
        proxy_quiet_on_stream((CUstream)stream, "shmemx_quiet_on_stream");
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

/* ---- collectives ---- */

/* Kinds of a collective's buffers; 1 when both are host memory (then the
 * host collective runs now, after the stream's earlier work). */
static int coll_host_path(shmem_team_t team, const void *dest, size_t dn, const void *src,
                          size_t sn, shmemx_stream_t stream, int *ddev, int *sdev, const char *call)
{
    USHMEMI_CHECK_INIT(call);
    if (!ushmemi_team_check(team, call))
        return -1;
    (void)sym_peer(dest, dn, ushmemi_g.my_pe, ddev, "dest", call);
    (void)sym_peer(src, sn, ushmemi_g.my_pe, sdev, "source", call);
    if (*ddev || *sdev) {
        need_cuda(call);
        return 0;
    }
    if (stream) {
        need_cuda(call);
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

/* Some member's device heap is reached through the proxy (another host):
 * the same answer on every member (each sees the others of other hosts). */
static int team_proxied(shmem_team_t team)
{
    if (!ushmemi_cuda_dev_has_ring())
        return 0;
    for (int i = 0; i < team->size; i++)
        if (!ushmemi_g.seg[USHMEMI_SEG_DEVHEAP].peer[ushmemi_team_world_pe(team, i)])
            return 1;
    return 0;
}

/* Member i's copy of [sym, sym+n) = [src, src+n), in stream order: a copy
 * when it is mapped here, else a put request to the proxy. */
static void member_put(void *sym, shmem_team_t team, int i, const void *src, int sdev, size_t n,
                       CUstream s, const char *call)
{
    int w = ushmemi_team_world_pe(team, i);
    char *p = ushmemi_xlate(sym, w);
    if (p)
        stream_copy(p, ushmemi_cuda_is_sym(sym), src, sdev, n, s, call);
    else if (team_proxied(team))
        proxy_on_stream(s, USHMEMI_REQ_PUT | USHMEMI_REQ_WAIT, 0, 0, w, sym, src, n, NULL, 0, call);
    else
        (void)member_copy(sym, team, i, call); /* says why */
}

/* The end of a copy-path collective: the puts to other hosts complete, then
 * the members synchronize. */
static void coll_end(shmem_team_t team, CUstream s, const char *call)
{
    if (team_proxied(team))
        proxy_quiet_on_stream(s, call);
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
    if (n <= 1 || !bytes || !ushmemi_cuda.mod || !strcmp(m, "copy") || n > USHMEMI_KRED_MAX_PES ||
        team_proxied(team)) /* members on other hosts: only the copy path reaches them */
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
    if (team->my_pe != lead) {
        int w = ushmemi_team_world_pe(team, lead);
        if (phase == 0)
            sync_signal(s, w, call);
        else
            sync_wait(s, w, call);
        return;
    }
    for (int j = 0; j < team->size; j++) {
        if (j == lead)
            continue;
        if (phase == 0)
            sync_wait(s, ushmemi_team_world_pe(team, j), call);
        else
            sync_signal(s, ushmemi_team_world_pe(team, j), call);
    }
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
 * sync_lock: full mesh, or for a broadcast members -> root, then root -> members. */
static void kcoll_fill(ushmemi_kcoll_args_t *a, shmem_team_t team, int kind, int root,
                       const char *call)
{
    int n = team->size, me = team->my_pe, wme = ushmemi_g.my_pe;
    int full = kind != USHMEMI_KCOLL_BROADCAST;
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
        a->flag_out[j] = peer_heap(w, call) + (CUdeviceptr)wme * 8;
        int to_root = me != root && j == root;
        if (full || to_root)
            a->sent[0][j] = ++ushmemi_cuda.sent[w];
        if (full || me == root)
            a->expect[0][j] = ++ushmemi_cuda.expected[w];
        if (full || me == root)
            a->sent[1][j] = ++ushmemi_cuda.sent[w];
        if (full || to_root)
            a->expect[1][j] = ++ushmemi_cuda.expected[w];
    }
}

static void coll_kernel(shmem_team_t team, int kind, void *dest, const void *source, size_t nb,
                        int root, CUstream s, const char *call)
{
    ushmemi_kcoll_args_t a;
    pthread_mutex_lock(&ushmemi_cuda.sync_lock);
    kcoll_fill(&a, team, kind, root, call);
    a.src = source;
    a.nbytes = nb;
    if (kind != USHMEMI_KCOLL_BROADCAST || team->my_pe == root)
        for (int j = 0; j < team->size; j++)
            a.peer[j] = member_copy(dest, team, j, call);
    launch(ushmemi_cuda_fixed(K_COLL_SYNC, call), 1, 1, KCOLL_THREADS, 0, &a, s, call);
    pthread_mutex_unlock(&ushmemi_cuda.sync_lock);
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

USHMEMI_API int shmemx_alltoallmem_on_stream(shmem_team_t team, void *dest, const void *source,
                                             size_t nelems, shmemx_stream_t stream)
{
    static const char call[] = "shmemx_alltoallmem_on_stream";
    int ddev, sdev;
    if (!ushmemi_team_check(team, call))
        return -1;
    size_t total = mul((size_t)team->size, nelems, call);
    int h = coll_host_path(team, dest, total, source, total, stream, &ddev, &sdev, call);
    if (h)
        return h < 0 ? -1 : ushmemi_alltoall(team, dest, source, nelems, call);
    CUstream s = (CUstream)stream;
    int n = team->size, me = team->my_pe;
    if (coll_fast(team, USHMEMI_KCOLL_ALLTOALL, dest, source, nelems, 0, total, ddev && sdev, s,
                  call))
        return 0;
    ushmemi_cuda_stream_sync(team, s, call);
    for (int k = 0; k < n && nelems; k++) {
        int j = (me + k) % n; /* spread the traffic: everyone starts with a different peer */
        member_put((char *)dest + (size_t)me * nelems, team, j,
                   (const char *)source + (size_t)j * nelems, sdev, nelems, s, call);
    }
    coll_end(team, s, call);
    return 0;
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
    static const char call[] = "shmemx_fcollectmem_on_stream";
    int ddev, sdev;
    if (!ushmemi_team_check(team, call))
        return -1;
    size_t total = mul((size_t)team->size, nelems, call);
    int h = coll_host_path(team, dest, total, source, nelems, stream, &ddev, &sdev, call);
    if (h)
        return h < 0 ? -1 : ushmemi_fcollect(team, dest, source, nelems, call);
    CUstream s = (CUstream)stream;
    int n = team->size, me = team->my_pe;
    if (coll_fast(team, USHMEMI_KCOLL_FCOLLECT, dest, source, nelems, 0, total, ddev && sdev, s,
                  call))
        return 0;
    ushmemi_cuda_stream_sync(team, s, call);
    for (int k = 0; k < n && nelems; k++) {
        int j = (me + k) % n;
        member_put((char *)dest + (size_t)me * nelems, team, j, source, sdev, nelems, s, call);
    }
    coll_end(team, s, call);
    return 0;
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

static void gather_fini(void)
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
        kcoll_fill(&a, team, USHMEMI_KCOLL_REDUCE, 0, call);
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
    int proxied = team_proxied(team), gslot = -1;
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
            proxy_on_stream(s, USHMEMI_REQ_GET | USHMEMI_REQ_WAIT, 0, 0,
                            ushmemi_team_world_pe(team, j), source, args.src[j], nbytes, NULL, 0,
                            call);
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
