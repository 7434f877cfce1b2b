/* The proxy's hands on the device (src/transport/proxy/hands.c, devring.c):
 * copies between bounce memory and the device heap, and other hosts' AMOs as
 * the one-thread AMO kernel, on streams of the proxy's own (non-blocking,
 * with their own lock). The proxy thread serves other hosts and the kernels'
 * ring while the application's threads use the internal stream, and a kernel
 * on the legacy default stream may be waiting for the very copy or atomic
 * asked for.
 *
 * Two lanes. The primary lane, a stream of the primary context, carries the
 * kernels' ring copies (any memory a kernel can address). The target lane
 * carries what other hosts write into this PE's device heap (puts, signals,
 * atomics, and reads for their gets) on a stream of a CUDA context of the
 * proxy's own (USHMEM_PROXY_CONTEXT=own, the default), so nothing of the
 * application's context (its work queues, which streams share, and
 * context-wide waits) can hold it up. On the H200 with PEs on pretend hosts,
 * on the primary context's stream the proxy's copies stalled behind the
 * application's stream waits (cuda_coll_stream at 4 PEs, with MPS and
 * without; cuda_heap at 8 PEs under MPS); on a context of its own in none of
 * those runs, at the same latency. The heap (one VMM mapping) and the
 * page-locked bounce and scratch pages (portable) are reachable from both
 * contexts. Both lanes are synchronized together (proxy_sync), and one
 * caller's requests stay on one lane, so their order holds.
 *
 * Every wait on a lane has a watchdog: after 5 s it says once what the lane
 * holds and what the primary context can still do (a probe on a fresh
 * stream), and at USHMEM_DEVICE_WAIT_TIMEOUT it ends the job with a line
 * instead of hanging it. */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "transport/cuda/cuda_priv.h"

/* The last operations enqueued on the proxy's stream (under proxy_lock), for
 * the stall report. */
enum { RECENT = 8 };
static struct {
    const char *what; /* "copy", "amo32", "amo64" */
    int op;           /* AMO code */
    size_t n;
    uintptr_t dst, src;
} recent[RECENT];
static unsigned n_recent;

static void note(const char *what, int op, uintptr_t dst, uintptr_t src, size_t n)
{
    unsigned i = n_recent++ % RECENT;
    recent[i].what = what;
    recent[i].op = op;
    recent[i].n = n;
    recent[i].dst = dst;
    recent[i].src = src;
}

/* The last stream operations the library enqueued on any stream (the
 * application's included), for the stall report: a lock-free ring, entries
 * may tear under races (diagnostics only). */
enum { TRACE = 32 };
static struct {
    CUstream s;
    const char *what;
    int pe;
    uint64_t value;
} trace[TRACE];
static unsigned long n_trace;

void ushmemi_cuda_trace(CUstream s, const char *what, int pe, uint64_t value)
{
    unsigned long i = __atomic_fetch_add(&n_trace, 1, __ATOMIC_RELAXED) % TRACE;
    trace[i].s = s;
    trace[i].what = what;
    trace[i].pe = pe;
    trace[i].value = value;
}

/* A lane: a context, the stream of it the proxy uses, and its kernels. */
typedef struct {
    CUcontext ctx;
    CUstream s;
    ushmemi_cuda_kset_t k; /* own lane only; the primary's come from cuda.c */
    int used;              /* work was ever enqueued here (proxy_sync waits for it) */
    const char *name;
} lane_t;
static lane_t primary = {.name = "primary"}, own = {.name = "own context"};
static int own_state; /* 0 not tried, 1 made, -1 not wanted or failed */

/* Makes l's context current on this thread (ushmemi_cuda_ctx for lanes). */
static void lane_current(const lane_t *l)
{
    CUcontext c = NULL;
    ushmemi_cu.cuCtxGetCurrent(&c);
    if (c != l->ctx)
        ushmemi_cu.cuCtxSetCurrent(l->ctx);
}

static int own_wanted(void)
{
    return strcmp(ushmemi_env.proxy_context, "primary") != 0;
}

/* Makes the proxy's own context (once, under proxy_lock): the embedded
 * module loaded there, a stream at its greatest priority. A failure is a
 * warning line, and the primary lane carries the target's work. */
static void own_make(const char *call)
{
    ushmemi_cuda_t *u = &ushmemi_cuda;
    const void *image = ushmemi_cuda_kernels_image();
    CUmodule mod = NULL;
    int least = 0, greatest = 0;
    own_state = -1;
    if (!own_wanted() || !image || u->ipc != CUDA_IPC_VMM)
        return;
    CUctxCreateParams plain = {0};
    CUresult r = ushmemi_cu.cuCtxCreate ? ushmemi_cu.cuCtxCreate(&own.ctx, &plain, 0, u->dev)
                                        : CUDA_ERROR_NOT_SUPPORTED;
    if (r != CUDA_SUCCESS) {
        ushmemi_error(call,
                      "warning: the proxy's own CUDA context cannot be made (%s%s): other hosts' "
                      "writes into this PE's device heap go through the application's context, "
                      "where they may wait behind its stream waits",
                      ushmemi_cu_errstr(r),
                      u->mps ? "; under MPS every context takes CUDA_DEVICE_MAX_CONNECTIONS work "
                               "queues from one pool per GPU: set it lower"
                             : "");
        own.ctx = NULL;
        return;
    }
    ushmemi_cu.cuCtxGetStreamPriorityRange(&least, &greatest);
    if (ushmemi_cu.cuModuleLoadData(&mod, image) != CUDA_SUCCESS ||
        ushmemi_cu.cuModuleGetFunction(&own.k.amo32, mod, "ushmemi_k_amo32") != CUDA_SUCCESS ||
        ushmemi_cu.cuModuleGetFunction(&own.k.amo64, mod, "ushmemi_k_amo64") != CUDA_SUCCESS ||
        ushmemi_cu.cuModuleGetFunction(&own.k.sigadd, mod, "ushmemi_k_sigadd") != CUDA_SUCCESS ||
        ushmemi_cu.cuMemHostGetDevicePointer(&own.k.scratch_d, u->scratch, 0) != CUDA_SUCCESS ||
        ushmemi_cu.cuStreamCreateWithPriority(&own.s, CU_STREAM_NON_BLOCKING, greatest) !=
            CUDA_SUCCESS) {
        ushmemi_error(call, "warning: the proxy's own CUDA context cannot load its kernels: "
                            "other hosts' writes go through the application's context");
        ushmemi_cu.cuCtxDestroy(own.ctx); /* its module and stream with it */
        own.ctx = NULL;
        ushmemi_cuda_ctx();
        return;
    }
    ushmemi_debug(call,
                  "the proxy writes other hosts' data into the device heap from a CUDA "
                  "context of its own%s",
                  u->mps ? " (MPS)" : "");
    own_state = 1;
}

/* The lane for this PE's own device heap and host memory (target), or for
 * memory of any kind (the kernels' ring), made current on this thread.
 * Caller holds proxy_lock. */
static lane_t *lane_enter(int target, const char *call)
{
    ushmemi_cuda_t *u = &ushmemi_cuda;
    if (target && !own_state)
        own_make(call);
    lane_t *l = target && own_state > 0 ? &own : &primary;
    if (l == &primary && primary.s != u->proxy_stream) {
        primary.ctx = u->ctx;
        primary.s = u->proxy_stream;
    }
    lane_current(l);
    __atomic_store_n(&l->used, 1, __ATOMIC_RELEASE);
    return l;
}

static const ushmemi_cuda_kset_t *kset(const lane_t *l)
{
    return l == &own ? &own.k : NULL;
}

void ushmemi_cuda_proxy_prepare(const char *call)
{
    pthread_mutex_lock(&ushmemi_cuda.proxy_lock);
    if (!own_state)
        own_make(call);
    pthread_mutex_unlock(&ushmemi_cuda.proxy_lock);
    ushmemi_cuda_ctx();
}

void ushmemi_cuda_proxy_fini(void)
{
    if (own_state > 0)
        ushmemi_cu.cuCtxDestroy(own.ctx);
    own.ctx = primary.ctx = NULL;
    own.s = primary.s = NULL;
    own.used = primary.used = 0;
    own_state = 0;
    ushmemi_cuda_ctx();
}

static const char *stream_state(CUstream s)
{
    if (!s)
        return "none";
    CUresult r = ushmemi_cu.cuStreamQuery(s);
    return r == CUDA_SUCCESS ? "idle" : r == CUDA_ERROR_NOT_READY ? "busy" : "error";
}

/* Polls s for up to ms milliseconds: 1 when it completed. */
static int done_within(CUstream s, int ms)
{
    for (int i = 0; i < ms * 10; i++) {
        CUresult r = ushmemi_cu.cuStreamQuery(s);
        if (r != CUDA_ERROR_NOT_READY)
            return r == CUDA_SUCCESS;
        nanosleep(&(struct timespec){.tv_nsec = 100000}, NULL);
    }
    return 0;
}

/* What the lane holds, the state of the library's other streams, and
 * whether the same work completes on a fresh stream of the primary context
 * (a fetch of the last AMO's word, and a copy of it to host memory): tells a
 * lane held up by its own earlier work from a context that runs nothing.
 * Caller holds proxy_lock. */
static void stall_report(const lane_t *l, const char *call, double secs)
{
    ushmemi_cuda_t *u = &ushmemi_cuda;
    char ops[640] = "";
    size_t len = 0;
    uintptr_t word = 0;
    size_t wsize = 8;
    unsigned first = n_recent > RECENT ? n_recent - RECENT : 0;
    for (unsigned k = first; k < n_recent && len < sizeof ops - 80; k++) {
        unsigned i = k % RECENT;
        len += (size_t)snprintf(ops + len, sizeof ops - len, "%s%s", k > first ? "; " : "",
                                recent[i].what);
        if (recent[i].what[0] == 'a') {
            len += (size_t)snprintf(ops + len, sizeof ops - len, " op %d at %#lx", recent[i].op,
                                    (unsigned long)recent[i].dst);
            word = recent[i].dst;
            wsize = recent[i].n;
        } else {
            len += (size_t)snprintf(ops + len, sizeof ops - len, " %zu B %#lx <- %#lx", recent[i].n,
                                    (unsigned long)recent[i].dst, (unsigned long)recent[i].src);
        }
    }
    ushmemi_error(call,
                  "the proxy's stream (%s) has not completed in %.0f s; the proxy's last "
                  "operations (oldest first): %s; library stream %s, poll stream %s",
                  l->name, secs, ops[0] ? ops : "nothing noted", stream_state(u->stream),
                  stream_state(u->poll_stream));
    unsigned long nt = __atomic_load_n(&n_trace, __ATOMIC_RELAXED);
    ushmemi_cuda_ctx();
    for (unsigned long k = nt > TRACE ? nt - TRACE : 0; k < nt; k++) {
        unsigned long i = k % TRACE;
        ushmemi_error(call, "stream op %lu: stream %p (%s now): %s, PE %d, value %llu", k,
                      (void *)trace[i].s, stream_state(trace[i].s), trace[i].what, trace[i].pe,
                      (unsigned long long)trace[i].value);
    }
    CUstream t = NULL;
    if (ushmemi_cu.cuStreamCreate(&t, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        ushmemi_error(call, "stall probe: cannot create a stream");
        return;
    }
    enum { PROBE_OUT = 2048, PROBE_COPY = 3072 };
    int amo_ok = -1, copy_ok = -1;
    uint64_t fetched = 0, copied = 0;
    if (word) {
        u->scratch[PROBE_OUT / 8] = ~0ull;
        ushmemi_cuda_amo_launch(NULL, t, PROBE_OUT, USHMEMI_AMO_FETCH, wsize, (void *)word, 0, 0,
                                call);
        amo_ok = done_within(t, 2000);
        fetched = ushmemi_cuda_amo_result(PROBE_OUT, wsize);
        if (amo_ok) {
            u->scratch[PROBE_COPY / 8] = ~0ull;
            copy_ok = ushmemi_cu.cuMemcpyAsync(u->scratch_d + PROBE_COPY, (CUdeviceptr)word, wsize,
                                               t) == CUDA_SUCCESS &&
                      done_within(t, 2000);
            copied = u->scratch[PROBE_COPY / 8];
        }
    }
    ushmemi_error(call,
                  "stall probe on a fresh stream of the primary context: an AMO fetch of the "
                  "last AMO's word %s (value %#llx), a copy of it to host memory %s (%#llx)",
                  amo_ok < 0 ? "not tried"
                  : amo_ok   ? "completes"
                             : "does not complete in 2 s",
                  (unsigned long long)fetched,
                  copy_ok < 0 ? "not tried"
                  : copy_ok   ? "completes"
                              : "does not complete in 2 s",
                  (unsigned long long)copied);
    if (done_within(t, 1)) /* a stream with stuck work is left alone */
        ushmemi_cu.cuStreamDestroy(t);
    lane_current(l);
}

/* Waits for everything enqueued on lane l, with the watchdog; held: the
 * caller holds proxy_lock (else another thread may enqueue meanwhile). */
static void lane_wait(lane_t *l, const char *call, int held)
{
    ushmemi_cuda_t *u = &ushmemi_cuda;
    CUresult r;
    unsigned spins = 0;
    int told = 0;
    int64_t t0 = 0, limit = (int64_t)ushmemi_env.device_wait_timeout * 1000000000;
    while ((r = ushmemi_cu.cuStreamQuery(l->s)) == CUDA_ERROR_NOT_READY) {
        if (++spins < 4096)
            continue;
        if (!t0)
            t0 = ushmemi_now_ns();
        int64_t el = ushmemi_now_ns() - t0;
        if (!told && el > 5000000000) {
            told = 1;
            if (!held)
                pthread_mutex_lock(&u->proxy_lock);
            stall_report(l, call, (double)el / 1e9);
            if (!held)
                pthread_mutex_unlock(&u->proxy_lock);
        }
        if (limit > 0 && el > limit)
            ushmemi_fatal(call,
                          "the proxy's stream (%s) has not completed in %ld s "
                          "(USHMEM_DEVICE_WAIT_TIMEOUT): a copy or atomic for another host "
                          "cannot run on this GPU",
                          l->name, (long)(el / 1000000000));
        if (spins < 65536)
            sched_yield();
        else
            nanosleep(&(struct timespec){.tv_nsec = 20000}, NULL);
    }
    CU_CHECK(r, call);
}

/* This PE's device heap, or memory no context owns (host memory): what the
 * target lane may touch. */
static int target_mem(const void *p, int device)
{
    return !device || ushmemi_devheap_has(p);
}

static void copy_on(lane_t *l, const char *what, void *dst, const void *src, size_t n,
                    const char *call)
{
    note(what, 0, (uintptr_t)dst, (uintptr_t)src, n);
    CU_CHECK(
        ushmemi_cu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n, l->s),
        call);
}

/* A copy for other hosts (a get's read, a host-API put's data): on the
 * target lane when both sides are this PE's heap or host memory. */
int ushmemi_cuda_proxy_copy(void *dst, const void *src, size_t n, const char *call)
{
    int dd = ushmemi_cuda_is_device(dst), sd = ushmemi_cuda_is_device(src);
    if (!dd && !sd)
        return 0;
    pthread_mutex_lock(&ushmemi_cuda.proxy_lock);
    lane_t *l = lane_enter(target_mem(dst, dd) && target_mem(src, sd), call);
    copy_on(l, "copy", dst, src, n, call);
    lane_wait(l, call, 1);
    pthread_mutex_unlock(&ushmemi_cuda.proxy_lock);
    return 1;
}

/* The driver tells the kinds apart (unified addressing): kernels hand over
 * addresses of any memory (device, stream-ordered pools, managed, mapped
 * host), where asking the kind first is not reliable: the primary lane. */
void ushmemi_cuda_proxy_copy_any(void *dst, const void *src, size_t n, const char *call)
{
    ushmemi_cuda_proxy_copy_async(dst, src, n, call);
    ushmemi_cuda_proxy_sync(call);
}

/* Enqueued only: the caller keeps src (page-locked) until proxy_sync. */
void ushmemi_cuda_proxy_copy_async(void *dst, const void *src, size_t n, const char *call)
{
    pthread_mutex_lock(&ushmemi_cuda.proxy_lock);
    copy_on(lane_enter(0, call), "copy", dst, src, n, call);
    pthread_mutex_unlock(&ushmemi_cuda.proxy_lock);
}

/* Another host's put into this PE's heap from a receive buffer (host
 * memory), enqueued only, on the target lane. */
void ushmemi_cuda_proxy_put_async(void *sym, const void *src, size_t n, const char *call)
{
    pthread_mutex_lock(&ushmemi_cuda.proxy_lock);
    copy_on(lane_enter(1, call), "copy", sym, src, n, call);
    pthread_mutex_unlock(&ushmemi_cuda.proxy_lock);
}

void ushmemi_cuda_proxy_sync(const char *call)
{
    lane_t *ls[2] = {&own, &primary};
    for (int i = 0; i < 2; i++) {
        lane_t *l = ls[i];
        if (!__atomic_load_n(&l->used, __ATOMIC_ACQUIRE))
            continue;
        lane_current(l);
        lane_wait(l, call, 0);
    }
}

/* Every operation, a set included, is the one-thread AMO kernel. A set as a
 * stream memory operation (cuStreamWriteValue64) never completed on the
 * H200 while another stream of this context waited (cuStreamWaitValue64)
 * for that very word: a stream barrier with members on other hosts waits
 * for the set the proxy carries in (pretend hosts, with and without MPS,
 * whatever CUDA_DEVICE_MAX_CONNECTIONS; found with USHMEM_HANG_STACKS). */
uint64_t ushmemi_cuda_proxy_amo(ushmemi_amo_op_t op, size_t size, void *remote, uint64_t value,
                                uint64_t cond, const char *call)
{
    ushmemi_cuda_t *u = &ushmemi_cuda;
    enum { OUT = 1024 }; /* scratch byte offset of the result (the internal stream uses 0) */
    if (size != 4 && size != 8)
        ushmemi_fatal(call, "unsupported AMO size %zu", size);
    pthread_mutex_lock(&u->proxy_lock);
    lane_t *l = lane_enter(1, call);
    note(size == 4 ? "amo32" : "amo64", (int)op, (uintptr_t)remote, 0, size);
    ushmemi_cuda_amo_launch(kset(l), l->s, OUT, op, size, remote, value, cond, call);
    lane_wait(l, call, 1);
    uint64_t old = ushmemi_cuda_amo_result(OUT, size);
    pthread_mutex_unlock(&u->proxy_lock);
    return old;
}

/* A signal from another host, enqueued only, behind the copies before it on
 * the target lane (done by the next proxy_sync): a set is an 8-byte copy
 * from *value, which must be page-locked and stay put until then (a copy
 * needs no kernel, so it waits for no compute work); an add is the
 * signal-add kernel. */
void ushmemi_cuda_proxy_signal_async(uint64_t *remote, const uint64_t *value, int add,
                                     const char *call)
{
    ushmemi_cuda_t *u = &ushmemi_cuda;
    pthread_mutex_lock(&u->proxy_lock);
    lane_t *l = lane_enter(1, call);
    if (add) {
        note("signal add", 0, (uintptr_t)remote, (uintptr_t)value, 8);
        ushmemi_cuda_sigadd_launch(kset(l), l->s, remote, *value, call);
    } else {
        copy_on(l, "signal set", remote, value, 8, call);
    }
    pthread_mutex_unlock(&u->proxy_lock);
}
