/* Reverse offload, host side: kernels' requests for PEs whose device heap
 * this process does not map (other hosts) come through a ring in pinned host
 * memory (ring.h; the producer is in include/shmemx_device.cuh) to one
 * consumer thread per PE, which carries each out with the transport that
 * reaches the peer (the staged proxy) and answers the requests the kernel
 * waits for.
 *
 * Order: the thread takes requests in ticket order and does one at a time,
 * and the staged proxy delivers one PE's requests to a target in the order
 * they were sent. A kernel thread takes its tickets in program order, so its
 * requests to one PE arrive in that order: a signal after its data, a get
 * after earlier puts; fence costs nothing. quiet is a request of its own:
 * the transport's quiet, after every earlier ticket; quiet_upto then tells
 * kernels which tickets are known complete, so a quiet with nothing new
 * since costs one read of that word.
 *
 * Without a GPU, with USHMEM_PROXY_HOST=1 (testing), the ring lives in
 * ordinary memory and host threads play the kernels through ring.h's host
 * producer (tests/mpi/devring_host.c): the same consumer and requests, on
 * host memory of other pretend hosts, in CI. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "shmemx_device_types.h"
#include "transport/cuda/devmem.h"
#include "transport/proxy/devring.h"
#include "transport/proxy/idle.h"
#include "transport/proxy/ring.h"
#include "transport/proxy/trace.h"
#include "transport/transport.h"

#define CALL     "device API (proxy)"
#define CAP      4096u             /* requests in flight; a full ring holds kernels back */
#define BOUNCE   ((size_t)4 << 20) /* staging for kernels' sources and destinations */
#define INFLIGHT 64                /* AMOs carried out at once (answered out of order) */

/* An AMO sent and not answered yet: its ticket, whether a kernel waits for
 * the value, and the transport's handle (amo_start / amo_test). */
typedef struct {
    uint64_t ticket;
    long long t0; /* USHMEM_PROXY_TRACE: when it was started */
    int wait;
    const ushmemi_transport_ops_t *t;
    void *handle;
} inflight_t;

_Static_assert(sizeof(ushmemi_ring_t) + 8 == sizeof(ushmemi_dev_ring_t) &&
                   offsetof(ushmemi_ring_t, cap) == offsetof(ushmemi_dev_ring_t, cap) &&
                   offsetof(ushmemi_ring_t, ret) == offsetof(ushmemi_dev_ring_t, ret),
               "the device ring descriptor follows ring.h's layout");

static struct {
    ushmemi_ring_consumer_t c;
    int host;             /* the ring in ordinary memory, no GPU (testing) */
    void *mem;            /* pinned: the ring, then the quiet word */
    uint64_t *quiet_upto; /* host view */
    char *bounce;         /* BOUNCE bytes of pinned memory */
    pthread_t thread;
    int started;
    int run; /* __atomic builtins */
    inflight_t inflight[INFLIGHT];
    int ninflight;
    ushmemi_trace_t trace;
    long long answered; /* USHMEM_PROXY_TRACE: when the last answer went to a kernel */
} R;

static const char *op_name(unsigned op)
{
    switch (op) {
    case USHMEMI_REQ_PUT:
    case USHMEMI_REQ_PUT_INLINE: return "put";
    case USHMEMI_REQ_GET:
    case USHMEMI_REQ_GET_SMALL: return "get";
    case USHMEMI_REQ_AMO: return "atomic";
    case USHMEMI_REQ_PUT_SIGNAL:
    case USHMEMI_REQ_PUT_SIGNAL_INLINE: return "put with signal";
    case USHMEMI_REQ_QUIET: return "quiet";
    }
    return "unknown request";
}

/* A kernel's source or destination may be any memory a kernel can address
 * (device, a stream-ordered pool, managed, mapped host): the proxy does not
 * ask which. It moves the bytes through its pinned bounce buffer with the
 * driver's copy (which tells the kinds apart) and hands the transport host
 * memory only, BOUNCE bytes at a time; the transport applies one PE's
 * requests in order, so the signal of a put with signal rides on the last
 * piece. start_copy starts copying n bytes; finish_copies waits for every
 * copy started. */
static void start_copy(void *dst, const void *src, size_t n)
{
    if (R.host)
        memcpy(dst, src, n);
    else
        ushmemi_cuda_proxy_copy_async(dst, src, n, CALL);
}

static void finish_copies(void)
{
    if (!R.host)
        ushmemi_cuda_proxy_sync(CALL);
}

static void copy_any(void *dst, const void *src, size_t n)
{
    start_copy(dst, src, n);
    finish_copies();
}

/* In halves of the bounce buffer: while MPI sends one half, the GPU copies
 * the next piece of the source into the other. */
static int staged_put(const ushmemi_transport_ops_t *t, char *sym, const char *src, size_t n,
                      uint64_t *sig, uint64_t signal, int sig_op, int pe)
{
    const size_t piece = BOUNCE / 2;
    char *half[2] = {R.bounce, R.bounce + piece};
    size_t c = n < piece ? n : piece;
    copy_any(half[0], src, c);
    for (size_t done = 0, k = 0; k == 0 || done < n; k++) { /* once at least: a bare signal */
        size_t next = done + c, cn = n - next < piece ? n - next : piece;
        if (cn)
            start_copy(half[(k + 1) & 1], src + next, cn);
        int rc = sig && next == n
                     ? t->put_signal(sym + done, half[k & 1], c, sig, signal, sig_op, pe)
                     : t->put(sym + done, half[k & 1], c, pe, 0);
        if (cn)
            finish_copies();
        if (rc)
            return rc;
        done = next;
        c = cn;
    }
    return 0;
}

static int staged_get(const ushmemi_transport_ops_t *t, char *dest, const char *sym, size_t n,
                      int pe)
{
    for (size_t done = 0; done < n;) {
        size_t c = n - done < BOUNCE ? n - done : BOUNCE;
        int rc = t->get(R.bounce, sym + done, c, pe, 0);
        if (rc)
            return rc;
        copy_any(dest + done, R.bounce, c);
        done += c;
    }
    return 0;
}

/* Answers that came for AMOs in flight go to their kernels. */
static void inflight_progress(void)
{
    for (int i = 0; i < R.ninflight;) {
        inflight_t *f = &R.inflight[i];
        uint64_t v = 0;
        int rc = f->t->amo_test(f->handle, &v);
        if (rc < 0)
            ushmemi_fatal(CALL, "a kernel's atomic failed: %s", ushmemi_strerror(rc));
        if (rc == 0) {
            i++;
            continue;
        }
        ushmemi_ring_complete(&R.c, f->ticket, f->wait, v);
        ushmemi_trace_add(&R.trace, 3, "atomic: sent until answered", f->t0);
        R.answered = ushmemi_trace_now(&R.trace);
        *f = R.inflight[--R.ninflight];
    }
}

static void inflight_drain(void)
{
    while (R.ninflight)
        inflight_progress();
}

/* One request; the result for those the kernel waits on. Errors end the job
 * (the kernel would wait forever), with the PE, the operation and why.
 * Returns 0 when the request stays in flight (an AMO: completed by
 * inflight_progress), else 1. */
static int carry_out(const ushmemi_ring_desc_t *q, uint64_t *result)
{
    uint64_t w0 = q->w[0];
    unsigned op = (unsigned)(w0 & 0x7f), len = (unsigned)((w0 >> 8) & 0xff);
    unsigned aux = (unsigned)((w0 >> 16) & 0xffff);
    int pe = (int)(uint32_t)(w0 >> 32);
    void *sym = (void *)(uintptr_t)q->w[1];
    uint64_t value = 0;
    int rc = 0;
    if (op == USHMEMI_REQ_QUIET) {
        inflight_drain(); /* AMOs are complete when answered */
        rc = ushmemi_proxy_tl ? ushmemi_proxy_tl->quiet() : 0;
        if (!rc)
            __atomic_store_n(R.quiet_upto, q->seq, __ATOMIC_RELEASE); /* ticket + 1 */
        R.answered = ushmemi_trace_now(&R.trace);
        goto done;
    }
    if (pe < 0 || pe >= ushmemi_g.n_pes)
        ushmemi_fatal(CALL, "a kernel's %s names PE %d (n_pes %d)", op_name(op), pe,
                      ushmemi_g.n_pes);
    const ushmemi_transport_ops_t *t = ushmemi_route(sym, pe);
    if (!t || !t->put)
        ushmemi_fatal(CALL, "a kernel's %s to PE %d at %p: no transport reaches that memory",
                      op_name(op), pe, sym);
    switch (op) {
    case USHMEMI_REQ_PUT:
        rc = staged_put(t, sym, (const char *)(uintptr_t)q->w[2], (size_t)q->w[3], NULL, 0, 0, pe);
        break;
    case USHMEMI_REQ_PUT_INLINE:
        rc = len <= USHMEMI_REQ_INLINE_MAX ? t->put(sym, &q->w[2], len, pe, 0) : USHMEM_EINVAL;
        break;
    case USHMEMI_REQ_GET:
        rc = staged_get(t, (char *)(uintptr_t)q->w[2], sym, (size_t)q->w[3], pe);
        break;
    case USHMEMI_REQ_GET_SMALL:
        rc = len <= 8 ? t->get(&value, sym, len, pe, 0) : USHMEM_EINVAL;
        break;
    case USHMEMI_REQ_AMO: {
        size_t size = (aux >> 8) & 0xff;
        ushmemi_amo_desc_t a;
        memset(&a, 0, sizeof a);
        a.op = (ushmemi_amo_op_t)(aux & 0xff);
        a.dtype = USHMEMI_DT(USHMEMI_KIND_UINT, (int)size);
        a.remote = sym;
        a.value = q->w[2];
        a.cond = q->w[3];
        a.pe = pe;
        if ((size != 4 && size != 8) || a.op > USHMEMI_AMO_XOR || !t->amo) {
            rc = USHMEM_EINVAL;
        } else if (t->amo_start && t->amo_test) {
            void *handle = NULL;
            while (R.ninflight == INFLIGHT)
                inflight_progress();
            rc = t->amo_start(&a, &handle);
            if (!rc && handle) {
                R.inflight[R.ninflight++] = (inflight_t){q->seq - 1, ushmemi_trace_now(&R.trace),
                                                         (w0 & USHMEMI_REQ_WAIT) != 0, t, handle};
                return 0;
            }
        } else {
            rc = t->amo(&a);
        }
        value = a.result;
        break;
    }
    case USHMEMI_REQ_PUT_SIGNAL:
    case USHMEMI_REQ_PUT_SIGNAL_INLINE: {
        int in = op == USHMEMI_REQ_PUT_SIGNAL_INLINE;
        uint64_t *sig = (uint64_t *)(uintptr_t)q->w[4];
        if ((in && len > USHMEMI_REQ_SIGNAL_INLINE_MAX) || !t->put_signal)
            rc = USHMEM_EINVAL;
        else if (ushmemi_route(sig, pe) != t)
            rc = USHMEM_EUNSUPPORTED;
        else if (in)
            rc = t->put_signal(sym, &q->w[2], len, sig, q->w[5], (int)aux, pe);
        else
            rc = staged_put(t, sym, (const char *)(uintptr_t)q->w[2], (size_t)q->w[3], sig, q->w[5],
                            (int)aux, pe);
        break;
    }
    default: rc = USHMEM_EINVAL; break;
    }
done:
    if (rc)
        ushmemi_fatal(CALL, "a kernel's %s to PE %d at %p failed: %s", op_name(op), pe, sym,
                      rc == USHMEM_EINVAL ? "not a symmetric device-heap address, or a bad request"
                                          : ushmemi_strerror(rc));
    *result = value;
    return 1;
}

/* USHMEM_PROXY_TRACE: how long carry_out took, by kind of request. */
static void trace_step(unsigned op, long long t0)
{
    if (op == USHMEMI_REQ_QUIET)
        ushmemi_trace_add(&R.trace, 2, "quiet: carried out", t0);
    else if (op == USHMEMI_REQ_PUT_INLINE)
        ushmemi_trace_add(&R.trace, 1, "small put: handed to MPI", t0);
    else if (op == USHMEMI_REQ_AMO)
        ushmemi_trace_add(&R.trace, 4, "atomic: sent", t0);
    else
        ushmemi_trace_add(&R.trace, 5, "other requests: carried out", t0);
}

/* Spins while busy; when nothing came for a while, naps, doubling up to
 * USHMEM_PROXY_IDLE_US, so idle PEs leave the CPU to the application. */
static void *consumer_main(void *arg)
{
    (void)arg;
    ushmemi_proxy_idle_t wait;
    ushmemi_proxy_idle_init(&wait, ushmemi_env.proxy_idle_us * 1000L,
                            ushmemi_env.proxy_spin_us * 1000L,
                            ushmemi_g.proxy_awake ? 0L : -1L); /* polls memory */
    if (R.host && wait.max_ns) /* testing: keep idle PEs' CPU for the rest of the job */
        wait.max_ns = 999999, wait.spin_ns = 100000;
    ushmemi_ring_desc_t q;
    while (__atomic_load_n(&R.run, __ATOMIC_ACQUIRE)) {
        if (R.ninflight)
            inflight_progress();
        if (!ushmemi_ring_poll(&R.c, &q)) {
            if (R.ninflight) { /* answers are coming: keep polling, MPI_Test with pauses */
                ushmemi_proxy_busy(&wait);
                if (ushmemi_g.proxy_awake)
                    ushmemi_proxy_pause(300);
            } else
                ushmemi_proxy_idle(&wait);
            continue;
        }
        ushmemi_proxy_busy(&wait);
        unsigned op = (unsigned)(q.w[0] & 0x7f);
        ushmemi_activity(USHMEMI_ACT_DEVRING, op_name(op), (int)(uint32_t)(q.w[0] >> 32));
        uint64_t v = 0;
        long long t0 = ushmemi_trace_now(&R.trace);
        ushmemi_trace_add(&R.trace, 0, "request seen, after the last answer", R.answered);
        R.answered = 0;
        if (carry_out(&q, &v)) {
            ushmemi_ring_complete(&R.c, q.seq - 1, (q.w[0] & USHMEMI_REQ_WAIT) != 0, v);
            if (q.w[0] & USHMEMI_REQ_WAIT)
                R.answered = ushmemi_trace_now(&R.trace);
        }
        trace_step(op, t0);
        ushmemi_activity(USHMEMI_ACT_DEVRING, NULL, 0);
    }
    /* Stopping: the ring is shut (waiting kernels trap); AMOs still in
     * flight are waited for only while their targets answer (finalize is
     * collective: every target's proxy still runs), for at most 2 s. */
    uint64_t t0 = ushmemi_ring_now_ns();
    while (R.ninflight && ushmemi_ring_now_ns() - t0 < 2000000000ull)
        inflight_progress();
    return NULL;
}

static void release_mem(void)
{
    if (R.host) {
        free(R.bounce);
        free(R.mem);
    } else {
        ushmemi_cuda_host_free(R.bounce);
        ushmemi_cuda_host_free(R.mem);
    }
    R.mem = R.bounce = NULL;
}

int ushmemi_devring_start(const char *call)
{
    uint64_t dmem = 0;
    size_t bytes = ushmemi_ring_bytes(CAP), total = bytes + 64;
    if (R.started)
        return 0;
    R.host = !ushmemi_g.cuda_active;
    if (!R.host && !ushmemi_cuda_dev_ring_words())
        return 0;
    R.mem = R.host ? aligned_alloc(64, (total + 63) / 64 * 64)
                   : ushmemi_cuda_host_alloc_mapped(total, &dmem);
    R.bounce = R.host ? malloc(BOUNCE) : ushmemi_cuda_host_alloc(BOUNCE);
    if (!R.mem || !R.bounce || ushmemi_ring_init(&R.c, R.mem, bytes, CAP)) {
        int rc = R.mem && R.bounce ? USHMEM_EINVAL : USHMEM_ENOMEM;
        ushmemi_error(call, "cannot set up the device request ring (%zu + %zu bytes)", total,
                      BOUNCE);
        release_mem();
        return rc;
    }
    R.quiet_upto = (uint64_t *)((char *)R.mem + bytes);
    R.trace = (ushmemi_trace_t){.on = ushmemi_env.proxy_trace, .who = "device requests"};
    *R.quiet_upto = 0;
    /* The kernels' view: host words at their device addresses. */
    const ushmemi_ring_t *h = &R.c.ring;
    uint64_t words = ushmemi_cuda_dev_ring_words();
#define DEV(p) (dmem + (uint64_t)((const char *)(p) - (const char *)R.mem))
    ushmemi_dev_ring_t d = {
        .head = words,
        .free_cache = words + 64,
        .free_upto = DEV(h->free_upto),
        .abort_word = DEV(h->abort_word),
        .slots = DEV(h->slots),
        .ret = DEV(h->ret),
        .mask = h->mask,
        .cap = h->cap,
        .quiet_upto = DEV(R.quiet_upto),
    };
#undef DEV
    int rc = R.host ? 0 : ushmemi_cuda_dev_ring_install(&d, sizeof d, CAP, call);
    if (!rc) {
        __atomic_store_n(&R.run, 1, __ATOMIC_RELEASE);
        rc = pthread_create(&R.thread, NULL, consumer_main, NULL) ? USHMEM_ESYS : 0;
        if (rc) {
            ushmemi_error(call, "cannot start the device request thread");
            if (!R.host)
                ushmemi_cuda_dev_ring_remove();
        }
    }
    if (rc) {
        release_mem();
        return rc;
    }
    R.started = 1;
    ushmemi_debug(call, "device API: kernels reach unmapped PEs through a ring of %u requests",
                  CAP);
    return 0;
}

/* Kernels still waiting on the ring see its abort word and trap with a line;
 * the thread finishes the request it is carrying out. */
void ushmemi_devring_stop(void)
{
    if (!R.started)
        return;
    ushmemi_ring_shutdown(&R.c);
    __atomic_store_n(&R.run, 0, __ATOMIC_RELEASE);
    pthread_join(R.thread, NULL);
    ushmemi_trace_print(&R.trace, ushmemi_g.my_pe);
    if (!R.host)
        ushmemi_cuda_dev_ring_remove();
    release_mem();
    R.started = 0;
}

const ushmemi_ring_t *ushmemi_devring_host_ring(uint64_t **quiet_upto)
{
    if (!R.started || !R.host)
        return NULL;
    *quiet_upto = R.quiet_upto;
    return &R.c.ring;
}
