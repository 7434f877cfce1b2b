/* The proxy's hands on the device (src/transport/proxy/hands.c, devring.c):
 * copies between bounce memory and the device heap, and other hosts' AMOs as
 * the one-thread AMO kernel, all on the proxy's own non-blocking stream with
 * its own lock. The proxy thread serves other hosts and the kernels' ring
 * while the application's threads use the internal stream, and a kernel on
 * the legacy default stream may be waiting for the very copy or atomic asked
 * for.
 *
 * Every wait on that stream has a watchdog: after 5 s it says once what the
 * stream holds and what the context can still do (a probe on a fresh stream),
 * and at USHMEM_DEVICE_WAIT_TIMEOUT it ends the job with a line instead of
 * hanging it. */
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

/* What the proxy's stream holds, the state of the library's other streams, and
 * whether the same work completes on a fresh stream (a fetch of the last AMO's
 * word, and a copy of it to host memory): tells a stream held up by its own
 * earlier work from a context that runs nothing. Caller holds proxy_lock. */
static void stall_report(const char *call, double secs)
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
                  "the proxy's stream has not completed in %.0f s; it holds (oldest first): %s; "
                  "library stream %s, poll stream %s",
                  secs, ops[0] ? ops : "nothing noted", stream_state(u->stream),
                  stream_state(u->poll_stream));
    unsigned long nt = __atomic_load_n(&n_trace, __ATOMIC_RELAXED);
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
        ushmemi_cuda_amo_launch(t, PROBE_OUT, USHMEMI_AMO_FETCH, wsize, (void *)word, 0, 0, call);
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
                  "stall probe on a fresh stream: an AMO fetch of the last AMO's word %s "
                  "(value %#llx), a copy of it to host memory %s (%#llx); proxy stream now %s",
                  amo_ok < 0 ? "not tried"
                  : amo_ok   ? "completes"
                             : "does not complete in 2 s",
                  (unsigned long long)fetched,
                  copy_ok < 0 ? "not tried"
                  : copy_ok   ? "completes"
                              : "does not complete in 2 s",
                  (unsigned long long)copied, stream_state(u->proxy_stream));
    if (done_within(t, 1)) /* a stream with stuck work is left alone */
        ushmemi_cu.cuStreamDestroy(t);
}

/* cuStreamSynchronize on the proxy's stream, with the watchdog; held: the
 * caller holds proxy_lock (else another thread may enqueue meanwhile). */
static void proxy_wait(const char *call, int held)
{
    ushmemi_cuda_t *u = &ushmemi_cuda;
    CUresult r;
    unsigned spins = 0;
    int told = 0;
    int64_t t0 = 0, limit = (int64_t)ushmemi_env.device_wait_timeout * 1000000000;
    while ((r = ushmemi_cu.cuStreamQuery(u->proxy_stream)) == CUDA_ERROR_NOT_READY) {
        if (++spins < 4096)
            continue;
        if (!t0)
            t0 = ushmemi_now_ns();
        int64_t el = ushmemi_now_ns() - t0;
        if (!told && el > 5000000000) {
            told = 1;
            if (!held)
                pthread_mutex_lock(&u->proxy_lock);
            stall_report(call, (double)el / 1e9);
            if (!held)
                pthread_mutex_unlock(&u->proxy_lock);
        }
        if (limit > 0 && el > limit)
            ushmemi_fatal(call,
                          "the proxy's stream has not completed in %ld s "
                          "(USHMEM_DEVICE_WAIT_TIMEOUT): a copy or atomic for another host "
                          "cannot run on this GPU",
                          (long)(el / 1000000000));
        if (spins < 65536)
            sched_yield();
        else
            nanosleep(&(struct timespec){.tv_nsec = 20000}, NULL);
    }
    CU_CHECK(r, call);
}

int ushmemi_cuda_proxy_copy(void *dst, const void *src, size_t n, const char *call)
{
    if (!ushmemi_cuda_is_device(dst) && !ushmemi_cuda_is_device(src))
        return 0;
    ushmemi_cuda_proxy_copy_any(dst, src, n, call);
    return 1;
}

/* The driver tells the kinds apart (unified addressing): kernels hand over
 * addresses of any memory (device, stream-ordered pools, managed, mapped
 * host), where asking the kind first is not reliable. */
void ushmemi_cuda_proxy_copy_any(void *dst, const void *src, size_t n, const char *call)
{
    ushmemi_cuda_proxy_copy_async(dst, src, n, call);
    ushmemi_cuda_proxy_sync(call);
}

/* Enqueued only: the caller keeps src (page-locked) until proxy_sync. */
void ushmemi_cuda_proxy_copy_async(void *dst, const void *src, size_t n, const char *call)
{
    ushmemi_cuda_t *u = &ushmemi_cuda;
    ushmemi_cuda_ctx();
    pthread_mutex_lock(&u->proxy_lock);
    note("copy", 0, (uintptr_t)dst, (uintptr_t)src, n);
    CU_CHECK(ushmemi_cu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n,
                                      u->proxy_stream),
             call);
    pthread_mutex_unlock(&u->proxy_lock);
}

void ushmemi_cuda_proxy_sync(const char *call)
{
    ushmemi_cuda_ctx();
    proxy_wait(call, 0);
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
    ushmemi_cuda_ctx();
    pthread_mutex_lock(&u->proxy_lock);
    note(size == 4 ? "amo32" : "amo64", (int)op, (uintptr_t)remote, 0, size);
    ushmemi_cuda_amo_launch(u->proxy_stream, OUT, op, size, remote, value, cond, call);
    proxy_wait(call, 1);
    uint64_t old = ushmemi_cuda_amo_result(OUT, size);
    pthread_mutex_unlock(&u->proxy_lock);
    return old;
}

/* A signal from another host, enqueued only, behind the copies before it
 * (done by the next proxy_sync): a set is an 8-byte copy from *value, which
 * must be page-locked and stay put until then (a copy needs no kernel, so it
 * waits for no compute work); an add is the signal-add kernel. */
void ushmemi_cuda_proxy_signal_async(uint64_t *remote, const uint64_t *value, int add,
                                     const char *call)
{
    ushmemi_cuda_t *u = &ushmemi_cuda;
    ushmemi_cuda_ctx();
    pthread_mutex_lock(&u->proxy_lock);
    note(add ? "signal add" : "signal set", 0, (uintptr_t)remote, (uintptr_t)value, 8);
    if (add) {
        ushmemi_cuda_sigadd_launch(u->proxy_stream, remote, *value, call);
    } else {
        CU_CHECK(ushmemi_cu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)remote,
                                          (CUdeviceptr)(uintptr_t)value, 8, u->proxy_stream),
                 call);
    }
    pthread_mutex_unlock(&u->proxy_lock);
}
