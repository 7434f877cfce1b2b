/* Staged proxy (part of libushmem_mpi.so): the device heaps of PEs this
 * process does not map (other hosts), over any MPI, CUDA-aware or not.
 *
 * Every PE runs one proxy thread. It keeps NRECV receives posted on a private
 * communicator, each into a bounce buffer (page-locked when CUDA is active),
 * and carries out what arrives on its own memory: a put is copied from the
 * bounce buffer into the device heap, a get copied out and sent back, an AMO
 * executed where the word lives (a GPU atomic on the device heap), so it
 * stays atomic with the AMOs of mapped peers and of kernels.
 *
 * Why messages and not RMA windows over the bounce memory: a message arrives
 * whole (a descriptor cannot be seen before its payload), and MPI does not
 * let two messages from one sender on one communicator and tag overtake each
 * other. The proxy handles receives in the order it posted them, so requests
 * from one PE are applied in the order that PE issued them: a signal is
 * applied after the data it follows, a get sees earlier puts, and fence costs
 * nothing. Completion: a put returns once its bytes are in MPI's hands
 * (OpenSHMEM asks no more of a blocking put); quiet sends a QUIET to every PE
 * with puts in flight and waits for the answers, which the proxy sends only
 * after every earlier request of that PE is in memory. Puts into the device
 * heap are enqueued on the proxy's stream and not waited for one by one:
 * their buffers are reposted after the next synchronization (a quiet, an
 * AMO, every buffer in use, or nothing else to do), and the signal of a put
 * with signal, gets and AMOs queue behind them on that stream. Large
 * transfers go as CHUNK-sized messages: while the GPU copies one into the
 * device heap, MPI fills the other posted buffers (the staging copies
 * pipeline with the transfer).
 *
 * Needs MPI_THREAD_MULTIPLE (the proxy thread and the application's threads
 * call MPI at once); ushmem asks for it when it initializes MPI. */
#ifdef USHMEM_MPI_MODULE /* only in libushmem_mpi.so; the core's source glob compiles nothing */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shmem.h"
#include "transport/mpi/mpi_priv.h"
#include "sync/stacks.h"
#include "transport/proxy/idle.h"
#include "transport/proxy/trace.h"
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* Open MPI: MPIX_Query_cuda_support; after mpi.h */
#endif

#define CALL       "proxy"
#define CHUNK      ((size_t)1 << 20) /* payload bytes per message */
#define NRECV      8                 /* receive buffers of the proxy */
#define INLINE_MAX ((size_t)8192)    /* smaller payloads are copied behind the header */

/* Tags: requests; answers (to the origin); the payloads of large puts (to
 * the target), in two ranges so that no answer matches a payload. All
 * below 32767, the least MPI_TAG_UB the standard allows. */
enum { TAG_REQ = 1, TAG_REPLY0 = 64, NREPLY_TAGS = 8192, TAG_PAYLOAD0 = TAG_REPLY0 + NREPLY_TAGS };
enum { OP_PUT = 1, OP_PUT_SIGNAL, OP_GET, OP_AMO, OP_QUIET };

typedef struct {
    uint32_t op, seg;     /* OP_*, segment of the target address */
    uint32_t reply_tag;   /* GET, AMO, QUIET: the tag the answer carries; PUT, PUT_SIGNAL:
                             the payload's own message (0: behind the header) */
    uint32_t dtype;       /* AMO */
    uint32_t amo_op;      /* AMO: ushmemi_amo_op_t; PUT_SIGNAL: the signal's */
    uint32_t sig_seg;     /* PUT_SIGNAL */
    uint64_t off, len;    /* target offset in the segment, payload bytes */
    uint64_t value, cond; /* AMO operands; PUT_SIGNAL: the signal value */
    uint64_t sig_off;     /* PUT_SIGNAL */
    int64_t sent_ns;      /* USHMEM_PROXY_TRACE: when the origin sent it */
} hdr_t;

#define CORE (*ushmemi_mpi_core)

static MPI_Comm pcomm = MPI_COMM_NULL;
static int have_comm, attached, serving; /* serving: the receiver runs */
static const char *mode = "staged";
static _Atomic unsigned next_tag;
static _Atomic unsigned char *dirty; /* [n_pes]: puts in flight since the last quiet */
static _Atomic int any_dirty;

static pthread_t thread;
static int thread_started;
static _Atomic int thread_run;
static char *rbuf[NRECV];
static MPI_Request rreq[NRECV];
/* Receives match messages in the order they were posted: order[] holds the
 * posted buffers from ohead on, in that order. A buffer whose payload is
 * still being copied into the device heap is held (not reposted) until the
 * next sync: when a quiet must be answered, when every buffer is held, or
 * when nothing arrives. */
static int order[NRECV], ohead, nposted;
static int held[NRECV], nheld;
static char *gbuf[2];         /* answers to gets, sent while the next part is copied */
static ushmemi_trace_t trace; /* the proxy thread's steps (USHMEM_PROXY_TRACE) */

static void stamp(hdr_t *h)
{
    h->sent_ns = ushmemi_trace_now(&trace);
}

static int fail(const char *what, int rc)
{
    return ushmemi_mpi_fail(CALL, what, rc);
}

/* A request this PE cannot carry out: one line, then the job ends (the
 * origin would otherwise wait for an answer forever). */
_Noreturn USHMEMI_PRINTF(1, 2) static void die(const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    MERR(CALL, "%s", line);
    MPI_Abort(pcomm != MPI_COMM_NULL ? pcomm : MPI_COMM_WORLD, 1);
    abort();
}

/* This PE's copy of [off, off+len) in segment seg, checked: the origin
 * checked against its own segment table, which is the same everywhere. */
static char *local_at(int from, uint32_t seg, uint64_t off, uint64_t len)
{
    if (seg >= USHMEMI_NSEG || off > G.seg[seg].size || len > G.seg[seg].size - off)
        die("request from PE %d outside the symmetric memory (segment %u, offset %llu, %llu "
            "bytes)",
            from, seg, (unsigned long long)off, (unsigned long long)len);
    return G.seg[seg].base + off;
}

/* Segment and offset of a symmetric address of this PE. */
static int locate(const void *addr, size_t n, uint32_t *seg, uint64_t *off)
{
    for (int s = 0; s < USHMEMI_NSEG; s++) {
        uintptr_t o = (uintptr_t)addr - (uintptr_t)G.seg[s].base;
        if (o < G.seg[s].size && n <= G.seg[s].size - o) {
            *seg = (uint32_t)s;
            *off = o;
            return 0;
        }
    }
    return USHMEM_EINVAL;
}

/* ---- the proxy thread: carries out what other PEs ask of this PE ---- */

static void serve_get(const hdr_t *h, int from)
{
    const char *src = local_at(from, h->seg, h->off, h->len);
    MPI_Request sreq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int k = 0;
    for (uint64_t done = 0; done < h->len; done += CHUNK, k ^= 1) {
        size_t c = h->len - done < CHUNK ? (size_t)(h->len - done) : CHUNK;
        int rc = ushmemi_mpi_wait(&sreq[k], MPI_STATUS_IGNORE); /* its buffer is free again */
        if (rc == MPI_SUCCESS) {
            CORE.local_copy(gbuf[k], src + done, c, CALL);
            USHMEMI_MPI_LOCKED(
                rc, MPI_Isend(gbuf[k], (int)c, MPI_BYTE, from, (int)h->reply_tag, pcomm, &sreq[k]));
        }
        if (rc != MPI_SUCCESS)
            die("answering a get of PE %d failed (MPI error %d)", from, rc);
    }
    ushmemi_mpi_waitall(2, sreq);
}

static void release_held(void);

/* 1 when msg's payload is still being copied (the buffer is held). */
static int serve(const char *msg, int bytes, int from)
{
    hdr_t h;
    if (bytes < (int)sizeof h)
        die("short request (%d bytes) from PE %d", bytes, from);
    memcpy(&h, msg, sizeof h);
    const char *payload = msg + sizeof h;
    static const char *const what[] = {"serving a request",
                                       "serving a put: enqueuing its copy",
                                       "serving a put with signal: its copy",
                                       "serving a get",
                                       "serving an atomic",
                                       "serving a quiet: waiting for earlier copies"};
    CORE.activity(USHMEMI_ACT_STAGED, what[h.op < 6 ? h.op : 0], from);
    ushmemi_trace_add(&trace, 0, "message: sent until taken", h.sent_ns);
    long long t0 = ushmemi_trace_now(&trace);
    uint64_t result = 0;
    switch (h.op) {
    case OP_PUT:
    case OP_PUT_SIGNAL: {
        if ((uint64_t)bytes - sizeof h != h.len)
            die("put from PE %d: %llu bytes announced, %d arrived", from, (unsigned long long)h.len,
                bytes - (int)sizeof h);
        /* Enqueued behind the earlier copies, the signal behind its data;
         * neither waited for: the buffer is held until the next sync. */
        int kept = CORE.local_put(local_at(from, h.seg, h.off, h.len), payload, h.len, CALL);
        ushmemi_trace_add(&trace, 1, "put: copy enqueued", t0);
        if (h.op == OP_PUT_SIGNAL) {
            CORE.activity(USHMEMI_ACT_STAGED, "serving a put with signal: the signal", from);
            /* the value from the received message: page-locked, held with it */
            kept |=
                CORE.local_signal(local_at(from, h.sig_seg, h.sig_off, 8),
                                  (const uint64_t *)(const void *)(msg + offsetof(hdr_t, value)),
                                  h.amo_op == USHMEMI_AMO_ADD, CALL);
            ushmemi_trace_add(&trace, 2, "put with signal: data and signal enqueued", t0);
        }
        return kept;
    }
    case OP_GET: /* its copies queue behind held puts */
        serve_get(&h, from);
        ushmemi_trace_add(&trace, 3, "get: answered", t0);
        return 0;
    case OP_AMO:
        release_held(); /* fence: the word may live in host memory, off the copies' stream */
        result = CORE.local_amo((ushmemi_amo_op_t)h.amo_op, (int)h.dtype,
                                local_at(from, h.seg, h.off, USHMEMI_DT_SIZE(h.dtype)), h.value,
                                h.cond, CALL);
        ushmemi_trace_add(&trace, 4, "atomic: executed", t0);
        ushmemi_mpi_send(&result, 8, from, (int)h.reply_tag, pcomm);
        return 0;
    case OP_QUIET: /* every earlier request of this PE is in memory */
        CORE.local_sync(CALL);
        ushmemi_mpi_send(NULL, 0, from, (int)h.reply_tag, pcomm);
        ushmemi_trace_add(&trace, 5, "quiet: synchronized and answered", t0);
        return 0;
    default: die("unknown request %u from PE %d", h.op, from);
    }
    return 0;
}

static int post(int i)
{
    int rc;
    order[(ohead + nposted++) % NRECV] = i;
    USHMEMI_MPI_LOCKED(rc, MPI_Irecv(rbuf[i], (int)(sizeof(hdr_t) + CHUNK), MPI_BYTE,
                                     MPI_ANY_SOURCE, TAG_REQ, pcomm, &rreq[i]));
    return rc;
}

/* The held buffers' copies are done: post them again. */
static void release_held(void)
{
    if (!nheld)
        return;
    CORE.activity(USHMEMI_ACT_STAGED, "waiting for its copies into the device heap", -1);
    long long t0 = ushmemi_trace_now(&trace);
    CORE.local_sync(CALL);
    ushmemi_trace_add(&trace, 6, "held copies: synchronized", t0);
    for (int k = 0; k < nheld; k++)
        if (post(held[k]) != MPI_SUCCESS)
            die("reposting a receive failed");
    nheld = 0;
}

/* A large put's header came alone: its payload follows from the same PE
 * with the tag the header names, received behind the header (the buffer
 * has room for CHUNK). Returns the bytes of header and payload. */
static int take_payload(char *msg, int bytes, int from)
{
    hdr_t h;
    if (bytes != (int)sizeof h)
        return bytes;
    memcpy(&h, msg, sizeof h);
    if ((h.op != OP_PUT && h.op != OP_PUT_SIGNAL) || !h.reply_tag || !h.len)
        return bytes;
    if (h.len > CHUNK || h.reply_tag < TAG_PAYLOAD0 || h.reply_tag >= TAG_PAYLOAD0 + NREPLY_TAGS)
        die("put from PE %d: bad payload announcement (%llu bytes, tag %u)", from,
            (unsigned long long)h.len, h.reply_tag);
    CORE.activity(USHMEMI_ACT_STAGED, "receiving a put's payload", from);
    MPI_Status st;
    int got = 0;
    int rc = ushmemi_mpi_recv(msg + sizeof h, (int)h.len, from, (int)h.reply_tag, pcomm, &st);
    if (rc != MPI_SUCCESS)
        die("receiving a put's payload from PE %d failed (MPI error %d)", from, rc);
    MPI_Get_count(&st, MPI_BYTE, &got);
    return bytes + got;
}

/* Spins while busy; when nothing came for a while, sleeps, doubling up to
 * USHMEM_PROXY_IDLE_US, so idle PEs leave the CPU to the application. */
static void *proxy_main(void *arg)
{
    (void)arg;
    ushmemi_proxy_idle_t wait;
    ushmemi_proxy_idle_init(&wait, ENV.proxy_idle_us * 1000L, ENV.proxy_spin_us * 1000L,
                            G.proxy_awake ? 1000L : -1L); /* MPI_Test: a pause between */
    while (atomic_load_explicit(&thread_run, memory_order_acquire)) {
        int flag = 0, bytes = 0, next = order[ohead], rc;
        MPI_Status st;
        if (nposted == 0) {
            release_held();
            continue;
        }
        USHMEMI_MPI_LOCKED(rc, MPI_Test(&rreq[next], &flag, &st));
        if (rc != MPI_SUCCESS)
            die("polling the proxy's receives failed (MPI error %d)", rc);
        if (!flag) {
            if (nheld)
                release_held(); /* nothing else to do: let the puts land */
            else
                ushmemi_proxy_idle(&wait);
            continue;
        }
        ushmemi_proxy_busy(&wait);
        ohead = (ohead + 1) % NRECV;
        nposted--;
        MPI_Get_count(&st, MPI_BYTE, &bytes);
        bytes = take_payload(rbuf[next], bytes, st.MPI_SOURCE);
        int held_now = serve(rbuf[next], bytes, st.MPI_SOURCE);
        CORE.activity(USHMEMI_ACT_STAGED, NULL, 0);
        if (held_now)
            held[nheld++] = next;
        else if (post(next) != MPI_SUCCESS)
            die("reposting a receive failed");
    }
    release_held();
    while (nposted) {
        int i = order[ohead];
        ushmemi_mpi_cancel(&rreq[i]);
        ohead = (ohead + 1) % NRECV;
        nposted--;
    }
    return NULL;
}

/* ---- the origin: called by the application's threads ---- */

static _Atomic unsigned next_payload_tag;

/* The next tag of a range (answers: next_tag from TAG_REPLY0; payloads:
 * next_payload_tag from TAG_PAYLOAD0), NREPLY_TAGS of them in turn. */
static int tag_in(_Atomic unsigned *next, int base)
{
    return base + (int)(atomic_fetch_add_explicit(next, 1, memory_order_relaxed) % NREPLY_TAGS);
}

static int new_tag(void)
{
    return tag_in(&next_tag, TAG_REPLY0);
}

/* One request: the header and c payload bytes. A small payload, or one in
 * device memory (staged through host memory first), goes in one message
 * behind the header; a large host payload goes without a copy, as a message
 * of its own after the header (take_payload receives it). */
static int send_req(hdr_t *h, const char *payload, size_t c, int pe)
{
    int rc;
    int dev = CORE.is_device(payload); /* once: each asks the driver */
    if (c <= INLINE_MAX || dev) {
        size_t total = sizeof *h + c;
        char small[sizeof(hdr_t) + INLINE_MAX];
        char *buf = total <= sizeof small ? small : malloc(total);
        if (!buf)
            return USHMEM_ENOMEM;
        memcpy(buf, h, sizeof *h);
        stamp((hdr_t *)(void *)buf);
        if (dev)
            CORE.local_copy(buf + sizeof *h, payload, c, CALL);
        else
            memcpy(buf + sizeof *h, payload, c);
        rc = ushmemi_mpi_send(buf, (int)total, pe, TAG_REQ, pcomm);
        if (buf != small)
            free(buf);
    } else {
        /* The header, then the payload as a message of its own, contiguous
         * in the caller's (page-locked) buffer: Open MPI packed a header +
         * payload struct type at 7.7 GB/s where two plain sends made 11.0
         * (1 MiB, vader, 2-core Debian host). The tag is this payload's own,
         * so requests of several threads to one PE cannot swap payloads. */
        h->reply_tag = (uint32_t)tag_in(&next_payload_tag, TAG_PAYLOAD0);
        stamp(h);
        rc = ushmemi_mpi_send(h, (int)sizeof *h, pe, TAG_REQ, pcomm);
        if (rc == MPI_SUCCESS)
            rc = ushmemi_mpi_send(payload, (int)c, pe, (int)h->reply_tag, pcomm);
    }
    return rc == MPI_SUCCESS ? 0 : fail("sending a request to the proxy", rc);
}

static void mark_dirty(int pe)
{
    atomic_store_explicit(&dirty[pe], 1, memory_order_relaxed);
    atomic_store_explicit(&any_dirty, 1, memory_order_release);
}

/* Puts (and a put-with-signal when sig is set: its last part carries it). */
static int do_put(void *remote, const void *src, size_t n, int pe, const void *sig, uint64_t signal,
                  int sig_op)
{
    hdr_t h;
    memset(&h, 0, sizeof h);
    if (locate(remote, n, &h.seg, &h.off))
        return USHMEM_EINVAL;
    if (sig) {
        uint64_t soff;
        if (locate(sig, 8, &h.sig_seg, &soff))
            return USHMEM_EINVAL;
        h.sig_off = soff;
        h.amo_op = sig_op == SHMEM_SIGNAL_ADD ? USHMEMI_AMO_ADD : USHMEMI_AMO_SET;
        h.value = signal;
    }
    uint64_t base = h.off;
    size_t done = 0;
    do {
        size_t c = n - done < CHUNK ? n - done : CHUNK;
        h.op = sig && done + c == n ? OP_PUT_SIGNAL : OP_PUT;
        h.off = base + done;
        h.len = c;
        int rc = send_req(&h, (const char *)src + done, c, pe);
        if (rc)
            return rc;
        done += c;
    } while (done < n);
    mark_dirty(pe);
    return 0;
}

static int t_put(void *remote, const void *src, size_t n, int pe, int nbi)
{
    (void)nbi; /* complete locally either way; remotely at quiet */
    return do_put(remote, src, n, pe, NULL, 0, 0);
}

static int t_put_signal(void *remote, const void *src, size_t n, uint64_t *sig, uint64_t signal,
                        int sig_op, int pe)
{
    return do_put(remote, src, n, pe, sig, signal, sig_op);
}

/* Gets complete before returning (the _nbi form too: allowed, and simpler).
 * Host destinations receive in place; device ones through two bounce halves. */
static int t_get(void *dest, const void *remote, size_t n, int pe, int nbi)
{
    (void)nbi;
    hdr_t h;
    memset(&h, 0, sizeof h);
    if (locate(remote, n, &h.seg, &h.off))
        return USHMEM_EINVAL;
    h.op = OP_GET;
    h.len = n;
    h.reply_tag = (uint32_t)new_tag();
    size_t nparts = (n + CHUNK - 1) / CHUNK;
    int dev = CORE.is_device(dest), rc = MPI_SUCCESS;
    char *stage = dev ? malloc(n < CHUNK ? n : CHUNK) : NULL;
    MPI_Request *req = dev ? NULL : malloc(nparts * sizeof *req);
    if (dev ? !stage : !req) {
        free(stage);
        return USHMEM_ENOMEM;
    }
    for (size_t i = 0; !dev && i < nparts && rc == MPI_SUCCESS; i++) {
        size_t c = n - i * CHUNK < CHUNK ? n - i * CHUNK : CHUNK;
        USHMEMI_MPI_LOCKED(rc, MPI_Irecv((char *)dest + i * CHUNK, (int)c, MPI_BYTE, pe,
                                         (int)h.reply_tag, pcomm, &req[i]));
    }
    stamp(&h);
    if (rc == MPI_SUCCESS)
        rc = ushmemi_mpi_send(&h, (int)sizeof h, pe, TAG_REQ, pcomm);
    if (rc == MPI_SUCCESS && !dev)
        rc = ushmemi_mpi_waitall((int)nparts, req);
    for (size_t i = 0; dev && i < nparts && rc == MPI_SUCCESS; i++) {
        size_t c = n - i * CHUNK < CHUNK ? n - i * CHUNK : CHUNK;
        rc = ushmemi_mpi_recv(stage, (int)c, pe, (int)h.reply_tag, pcomm, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS)
            CORE.local_copy((char *)dest + i * CHUNK, stage, c, CALL);
    }
    free(stage);
    free(req);
    return rc == MPI_SUCCESS ? 0 : fail("get through the proxy", rc);
}

/* Mapped targets (and this PE) are done here, where the word lives; the
 * others by their proxy: either way the same atomic instructions. Started
 * here and answered later (amo_test): the kernels' request thread keeps
 * several in flight instead of one round trip at a time. */
typedef struct {
    MPI_Request req;
    uint64_t result;
    size_t size;
} amo_op_t;

static int t_amo_start(ushmemi_amo_desc_t *d, void **handle)
{
    size_t size = USHMEMI_DT_SIZE(d->dtype);
    hdr_t h;
    memset(&h, 0, sizeof h);
    *handle = NULL;
    if (locate(d->remote, size, &h.seg, &h.off))
        return USHMEM_EINVAL;
    char *mapped = G.seg[h.seg].peer ? G.seg[h.seg].peer[d->pe] : NULL;
    if (mapped) {
        d->result = CORE.local_amo(d->op, d->dtype, mapped + h.off, d->value, d->cond, CALL);
        return 0;
    }
    amo_op_t *a = malloc(sizeof *a);
    if (!a)
        return USHMEM_ENOMEM;
    a->result = 0;
    a->size = size;
    h.op = OP_AMO;
    h.amo_op = (uint32_t)d->op;
    h.dtype = (uint32_t)d->dtype;
    h.value = d->value;
    h.cond = d->cond;
    h.reply_tag = (uint32_t)new_tag();
    stamp(&h);
    int rc;
    USHMEMI_MPI_LOCKED(rc,
                       MPI_Irecv(&a->result, 8, MPI_BYTE, d->pe, (int)h.reply_tag, pcomm, &a->req));
    if (rc == MPI_SUCCESS && (rc = ushmemi_mpi_send(&h, (int)sizeof h, d->pe, TAG_REQ, pcomm))) {
        ushmemi_mpi_cancel(&a->req);
    }
    if (rc != MPI_SUCCESS) {
        free(a);
        return fail("atomic through the proxy", rc);
    }
    *handle = a;
    return 0;
}

static int t_amo_test(void *handle, uint64_t *result)
{
    amo_op_t *a = handle;
    int flag = 0, rc;
    USHMEMI_MPI_LOCKED(rc, MPI_Test(&a->req, &flag, MPI_STATUS_IGNORE));
    if (rc != MPI_SUCCESS)
        return fail("atomic through the proxy", rc);
    if (!flag)
        return 0;
    *result = a->size == 4 ? (uint32_t)a->result : a->result;
    free(a);
    return 1;
}

static int t_amo(ushmemi_amo_desc_t *d)
{
    void *handle;
    int rc = t_amo_start(d, &handle);
    if (rc || !handle)
        return rc;
    amo_op_t *a = handle;
    rc = ushmemi_mpi_wait(&a->req, MPI_STATUS_IGNORE);
    d->result = a->size == 4 ? (uint32_t)a->result : a->result;
    free(a);
    return rc == MPI_SUCCESS ? 0 : fail("atomic through the proxy", rc);
}

/* A marked PE is unmarked before its QUIET goes out: a put issued by another
 * thread meanwhile either precedes the QUIET or marks the PE again. Quiets
 * take turns (the kernels' request thread and the application's threads
 * quiet at once): one that finds nothing marked while another's QUIETs are
 * out must still wait for their answers, which cover its puts too. */
static pthread_mutex_t quiet_lock = PTHREAD_MUTEX_INITIALIZER;
static int quiet_locked(void);
static int t_quiet(void)
{
    if (!attached)
        return 0;
    pthread_mutex_lock(&quiet_lock);
    int rc = quiet_locked();
    pthread_mutex_unlock(&quiet_lock);
    return rc;
}

static int quiet_locked(void)
{
    if (!atomic_exchange_explicit(&any_dirty, 0, memory_order_acq_rel))
        return 0;
    int n = G.n_pes, rc = MPI_SUCCESS, nreq = 0;
    MPI_Request *req = malloc((size_t)n * sizeof *req);
    if (!req)
        return USHMEM_ENOMEM;
    hdr_t h;
    memset(&h, 0, sizeof h);
    h.op = OP_QUIET;
    for (int pe = 0; pe < n && rc == MPI_SUCCESS; pe++) {
        if (!atomic_exchange_explicit(&dirty[pe], 0, memory_order_acq_rel))
            continue;
        h.reply_tag = (uint32_t)new_tag();
        USHMEMI_MPI_LOCKED(rc,
                           MPI_Irecv(NULL, 0, MPI_BYTE, pe, (int)h.reply_tag, pcomm, &req[nreq]));
        if (rc == MPI_SUCCESS) {
            nreq++;
            stamp(&h);
            rc = ushmemi_mpi_send(&h, (int)sizeof h, pe, TAG_REQ, pcomm);
        }
    }
    int wrc = ushmemi_mpi_waitall(nreq, req);
    free(req);
    if (rc == MPI_SUCCESS)
        rc = wrc;
    return rc == MPI_SUCCESS ? 0 : fail("quiet through the proxy", rc);
}

static void t_progress(void) {}

/* ---- setup ---- */

static const char *cuda_aware(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    if (MPIX_Query_cuda_support())
        return "staged (the MPI reports CUDA support; GPU-aware windows are not built yet)";
#endif
    return "staged (the MPI is not CUDA-aware)";
}

static int t_init(void)
{
    int rc = ushmemi_mpi_comm_setup(G.my_pe, G.n_pes, "shmem_init");
    have_comm = rc == 0;
    mode = cuda_aware();
    return rc;
}

static void t_fini(void)
{
    if (have_comm)
        ushmemi_mpi_comm_release();
    have_comm = 0;
}

static int t_reachable(int pe, ushmemi_mem_kind_t kind)
{
    (void)pe;
    return attached && (kind == USHMEMI_MEM_DEVICE || ENV.proxy_host || ushmemi_mpi_no_rma());
}

static void t_detach(void)
{
    if (thread_started) {
        atomic_store_explicit(&thread_run, 0, memory_order_release);
        pthread_join(thread, NULL);
        thread_started = 0;
    }
    ushmemi_trace_print(&trace, G.my_pe);
    for (int i = 0; i < NRECV; i++) {
        CORE.bounce_free(rbuf[i]);
        rbuf[i] = NULL;
    }
    for (int i = 0; i < 2; i++) {
        CORE.bounce_free(gbuf[i]);
        gbuf[i] = NULL;
    }
    free((void *)dirty);
    dirty = NULL;
    ushmemi_mpi_comm_free(&pcomm);
    attached = 0;
}

/* Whether any request can come to this PE: peers reach its device heap
 * through the proxy, and its host memory only where the MPI made no windows
 * (or USHMEM_PROXY_HOST). Where neither, no receiver thread: on a host-only
 * job it would poll MPI for nothing and, on a PE bound to one core, take
 * that core from the application (2 PEs over MPI bound to a core each:
 * 8-byte put 4.3 us with it, see docs/mpi.md). */
static int receives_something(void)
{
    return G.seg[USHMEMI_SEG_DEVHEAP].size || ENV.proxy_host || ushmemi_mpi_no_rma();
}

/* Collective (the communicator). */
static int t_attach(void)
{
    static const char call[] = "shmem_init";
    int level = MPI_THREAD_SINGLE, rc;
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_MULTIPLE) {
        MERR(call,
             "the staged proxy (device memory of PEs on other hosts) needs "
             "MPI_THREAD_MULTIPLE; this MPI was initialized with thread level %d",
             level);
        return USHMEM_EUNSUPPORTED;
    }
    USHMEMI_MPI_LOCKED(rc, MPI_Comm_dup(ushmemi_mpi_comm, &pcomm));
    if (rc != MPI_SUCCESS)
        return fail("MPI_Comm_dup for the proxy", rc);
    MPI_Comm_set_errhandler(pcomm, MPI_ERRORS_RETURN);
    dirty = calloc((size_t)G.n_pes, 1);
    rc = dirty ? 0 : USHMEM_ENOMEM;
    serving = receives_something(); /* the receiver's buffers only where it runs */
    for (int i = 0; i < NRECV && !rc && serving; i++)
        rc = (rbuf[i] = CORE.bounce_alloc(sizeof(hdr_t) + CHUNK)) ? 0 : USHMEM_ENOMEM;
    for (int i = 0; i < 2 && !rc && serving; i++)
        rc = (gbuf[i] = CORE.bounce_alloc(CHUNK)) ? 0 : USHMEM_ENOMEM;
    ohead = nposted = nheld = 0;
    trace = (ushmemi_trace_t){.on = ENV.proxy_trace, .who = "proxy thread"};
    for (int i = 0; i < NRECV && !rc && serving; i++)
        if ((rc = post(i)) != MPI_SUCCESS)
            rc = fail("posting the proxy's receives", rc);
    if (!rc && serving) {
        sigset_t all, old;
        ushmemi_helper_thread_mask(&all, ENV.hang_stacks);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        atomic_store(&thread_run, 1);
        thread_started = pthread_create(&thread, NULL, proxy_main, NULL) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (!thread_started) {
            MERR(call, "cannot start the proxy thread");
            rc = USHMEM_ESYS;
        }
    }
    if (rc) {
        t_detach();
        return rc;
    }
    attached = 1;
    if (serving)
        MDEBUG(call, "proxy: %s; %d receives of %zu KiB posted", mode, NRECV, CHUNK >> 10);
    else
        MDEBUG(call, "proxy: %s; no receiver (no device heap here, host memory through windows)",
               mode);
    return 0;
}

static const char *t_unusable_reason(void)
{
    return NULL;
}

static const char *t_describe(void)
{
    static char buf[MPI_MAX_ERROR_STRING + 256];
    const char *why = ushmemi_mpi_no_rma();
    snprintf(buf, sizeof buf, "%s%s%s%s", mode,
             why || ENV.proxy_host ? "; also host memory of unmapped PEs (" : "",
             why              ? why
             : ENV.proxy_host ? "USHMEM_PROXY_HOST"
                              : "",
             why || ENV.proxy_host ? ")" : "");
    return buf;
}

const ushmemi_transport_ops_t ushmemi_proxy_transport_ops = {
    .name = "proxy",
    .caps = USHMEMI_CAP_DEVICE,
    .unusable_reason = t_unusable_reason,
    .describe = t_describe,
    .init = t_init,
    .fini = t_fini,
    .reachable = t_reachable,
    .attach = t_attach,
    .detach = t_detach,
    .put = t_put,
    .get = t_get,
    .amo = t_amo,
    .put_signal = t_put_signal,
    .amo_start = t_amo_start,
    .amo_test = t_amo_test,
    .fence = t_quiet,
    .quiet = t_quiet,
    .progress = t_progress,
};

#endif /* USHMEM_MPI_MODULE */
