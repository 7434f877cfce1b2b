/* The bootstrap star: rank 0 listens, the others connect and authenticate with
 * the job secret, and rank 0 relays every collective (gather to root, then send
 * the result to all). Setup only, a few small messages: a star is simple to
 * reason about and its failures are easy to name.
 *
 * Wire format: every message is a frame {u32 type, u32 tag, u64 len}, big
 * endian, followed by len bytes. A non-root PE never has more than one request
 * outstanding (it sends its part, then waits for root's answer before it can
 * send again), so anything root reads from a PE that has already sent its part
 * can only be an ABORT or the end of the stream.
 *
 * Threads: the main thread holds st.lock for a whole operation and watches
 * every connection while it waits, so it notices a dead peer itself. The
 * liveness monitor only polls for hangups (never POLLIN) and takes st.lock
 * before it reads anything, so it never steals a collective's bytes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/star.h"
#include "core/core.h"
#include "core/mac.h"
#include "core/state.h"

#define BS_MAGIC   0x55534842u /* "USHB" */
#define BS_VERSION 2u
enum { MSG_HELLO = 1, MSG_STATUS = 2, MSG_DATA = 3, MSG_ABORT = 4, MSG_CHALLENGE = 5 };
enum { OP_ALLGATHER = 1, OP_BCAST = 2, OP_BARRIER = 3, OP_HOSTS = 4 };
#define HDR_BYTES       16
#define NONCE_BYTES     16
#define CHALLENGE_BYTES (8 + NONCE_BYTES)
#define HELLO_BYTES     (16 + NONCE_BYTES + USHMEMI_MAC_BYTES)
#define STATUS_MAX      256
#define ABORT_MSG_MAX   200
/* A connection that says nothing this long after the challenge is not one of
 * ours (a PE answers at once); it is dropped. Connections are read together,
 * so a silent one holds up nobody meanwhile. */
#define HANDSHAKE_MS 2000
/* Connections waiting for their hello, per source (IP; pid on unix sockets)
 * and in all: past these the oldest silent one is dropped for the newcomer. */
#define PENDING_PER_SOURCE 16
#define PENDING_MAX        256
/* Non-root PEs wait this much longer than root for the end of init, so root's
 * message (which PE never joined) comes first and theirs just point to it. */
#define JOIN_GRACE_MS 5000
#define IO_EOF        1 /* peer closed or reset the connection */

static struct {
    int rank, nranks;
    int connected; /* init succeeded, fini not yet called */
    int failed;    /* an operation failed: the streams may be out of step */
    int *fd;       /* [nranks]; root: fd[k] talks to PE k; others: fd[0] to root */
    int listen_fd;
    char unlink_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int local_rank, local_size; /* from the host-id exchange */
    int64_t timeout_ms;         /* <= 0: no limit */
    const char *call;           /* API call named in error lines */
    pthread_mutex_t lock;       /* held for a whole operation; see top */
    int mon_started;
    pthread_t mon;
    int wake_fd;
    struct pollfd *mon_pfd;
    int *mon_who;
    _Atomic int mon_active; /* between monitor_start and monitor_stop */
    _Atomic int aborting;   /* this PE sent an ABORT and is about to exit */
    _Atomic int abort_status;
} st = {
    .listen_fd = -1,
    .wake_fd = -1,
    .call = "shmem_init",
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

#define BS_ERR(...) ushmemi_bootstrap_error(st.call, __VA_ARGS__)

/* Peers this PE talks to, [peer_lo, peer_hi): root all others, the others root alone. */
static int peer_lo(void)
{
    return st.rank ? 0 : 1;
}

static int peer_hi(void)
{
    return st.rank ? 1 : st.nranks;
}

void ushmemi_bootstrap_error(const char *call, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* After init the call is "bootstrap" itself: do not say it twice. */
    const char *prefix = strcmp(call, "bootstrap") ? "bootstrap: " : "";
    if (ushmemi_g.n_pes == 0 && st.nranks > 1)
        ushmemi_error(call, "%sPE %d of %d: %s", prefix, st.rank, st.nranks, msg);
    else
        ushmemi_error(call, "%s%s", prefix, msg);
}

/* One line straight to stderr with write(2): the monitor thread uses it while
 * the main thread may be anywhere, including inside stdio. */
static void say(const char *fmt, ...) USHMEMI_PRINTF(1, 2);
static void say(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}

static _Noreturn void exit_now(int status)
{
    /* Keep what the program printed, unless the main thread holds stdout. */
    if (ftrylockfile(stdout) == 0) {
        fflush_unlocked(stdout);
        funlockfile(stdout);
    }
    int code = status & 0xff;
    _exit(status != 0 && code == 0 ? 1 : code);
}

/* ---- time ---- */
static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t deadline_in(int64_t ms)
{
    return ms <= 0 ? INT64_MAX : now_ms() + ms;
}

/* Milliseconds left for poll(): -1 without a deadline, 0 once it passed. */
static int ms_left(int64_t dl)
{
    if (dl == INT64_MAX)
        return -1;
    int64_t left = dl - now_ms();
    return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

static long timeout_s(void)
{
    return (long)(st.timeout_ms / 1000);
}

/* ---- byte order ---- */
static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (24 - 8 * i));
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put64(unsigned char *p, uint64_t v)
{
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* ---- blocking I/O on non-blocking sockets, bounded by a deadline ---- */
static int wait_fd(int fd, short events, int64_t dl)
{
    for (;;) {
        struct pollfd p = {fd, events, 0};
        int n = poll(&p, 1, ms_left(dl));
        if (n > 0)
            return 0; /* ready, or hung up: the next recv/send says which */
        if (n == 0)
            return USHMEM_ETIMEOUT;
        if (errno != EINTR)
            return USHMEM_ESYS;
    }
}

/* 0, IO_EOF, USHMEM_ETIMEOUT or USHMEM_ESYS (errno set). */
static int io_read(int fd, void *buf, size_t len, int64_t dl)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0 || errno == ECONNRESET)
            return IO_EOF;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return USHMEM_ESYS;
        int rc = wait_fd(fd, POLLIN, dl);
        if (rc)
            return rc;
    }
    return 0;
}

static int io_skip(int fd, uint64_t len, int64_t dl)
{
    char junk[4096];
    while (len > 0) {
        size_t n = len < sizeof junk ? (size_t)len : sizeof junk;
        int rc = io_read(fd, junk, n, dl);
        if (rc)
            return rc;
        len -= n;
    }
    return 0;
}

static int io_writev(int fd, struct iovec *iov, int cnt, int64_t dl)
{
    while (cnt > 0) {
        if (iov->iov_len == 0) {
            iov++;
            cnt--;
            continue;
        }
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
        /* MSG_NOSIGNAL: a dead peer is an error code here, never a SIGPIPE. */
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EPIPE || errno == ECONNRESET)
                return IO_EOF;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return USHMEM_ESYS;
            int rc = wait_fd(fd, POLLOUT, dl);
            if (rc)
                return rc;
            continue;
        }
        size_t done = (size_t)n;
        while (cnt > 0 && done >= iov->iov_len) {
            done -= iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov->iov_base = (char *)iov->iov_base + done;
            iov->iov_len -= done;
        }
    }
    return 0;
}

static int frame_send(int fd, uint32_t type, uint32_t tag, const void *buf, size_t len, int64_t dl)
{
    unsigned char h[HDR_BYTES];
    put32(h, type);
    put32(h + 4, tag);
    put64(h + 8, len);
    struct iovec iov[2] = {{h, sizeof h}, {(void *)(uintptr_t)buf, len}};
    return io_writev(fd, iov, len ? 2 : 1, dl);
}

static int frame_recv_hdr(int fd, uint32_t *type, uint32_t *tag, uint64_t *len, int64_t dl)
{
    unsigned char h[HDR_BYTES];
    int rc = io_read(fd, h, sizeof h, dl);
    if (rc)
        return rc;
    *type = get32(h);
    *tag = get32(h + 4);
    *len = get64(h + 8);
    return 0;
}

static int read_abort(int fd, uint64_t len, int64_t dl, int *status, char *msg)
{
    unsigned char p[4 + ABORT_MSG_MAX];
    if (len < 4 || len > sizeof p)
        return USHMEM_EBOOTSTRAP;
    int rc = io_read(fd, p, (size_t)len, dl);
    if (rc)
        return rc;
    *status = (int)get32(p);
    memcpy(msg, p + 4, (size_t)len - 4);
    msg[len - 4] = '\0';
    return 0;
}

static void send_abort(int fd, int status, const char *msg, int64_t dl)
{
    unsigned char p[4 + ABORT_MSG_MAX];
    size_t m = msg ? strnlen(msg, ABORT_MSG_MAX) : 0;
    put32(p, (uint32_t)status);
    if (m)
        memcpy(p + 4, msg, m);
    (void)frame_send(fd, MSG_ABORT, 0, p, 4 + m, dl);
}

/* Read and drop what a peer sent, so that closing the socket sends a FIN and
 * not a reset (a reset can make the peer lose the ABORT we just sent it). */
static void discard_unread(int fd)
{
    char junk[4096];
    for (int i = 0; i < 256; i++)
        if (recv(fd, junk, sizeof junk, MSG_DONTWAIT) <= 0)
            break;
}

/* ---- bringing the job down ---- */

/* Root: tell every PE but `from` to exit with status, then exit. */
static _Noreturn void root_job_down(int from, int status, const char *msg)
{
    atomic_store(&st.abort_status, status);
    atomic_store(&st.aborting, 1);
    int64_t dl = deadline_in(1000);
    for (int k = 1; k < st.nranks; k++)
        if (k != from && st.fd[k] >= 0)
            send_abort(st.fd[k], status, msg, dl);
    for (int k = 1; k < st.nranks; k++)
        if (st.fd[k] >= 0)
            discard_unread(st.fd[k]);
    exit_now(status);
}

/* PE k sent ABORT{status, msg}: the job ends. Called with st.lock held. */
static _Noreturn void got_abort(int k, int status, const char *msg)
{
    if (st.rank != 0)
        exit_now(status); /* root already printed why */
    char self[24];
    int n = snprintf(self, sizeof self, "PE %d ", k);
    if (!msg[0])
        say("ushmem: PE %d called shmem_global_exit(%d); stopping all PEs", k, status);
    else if (!strncmp(msg, self, (size_t)n)) /* the message names the PE itself */
        say("ushmem: %s; stopping all PEs", msg);
    else
        say("ushmem: PE %d: %s (exit status %d); stopping all PEs", k, msg, status);
    root_job_down(k, status, msg);
}

/* PE k's connection dropped while the monitor was on. Called with st.lock held. */
static _Noreturn void peer_lost(int k)
{
    if (atomic_load(&st.aborting))
        exit_now(atomic_load(&st.abort_status)); /* we caused it */
    if (st.rank == 0) {
        say("ushmem: PE %d left the job without shmem_finalize (exited or killed); "
            "stopping all PEs",
            k);
        root_job_down(k, 1, "");
    }
    say("ushmem: PE %d: PE 0 left the job without shmem_finalize (exited or killed); stopping",
        st.rank);
    exit_now(1);
}

/* Peer k's stream ended or broke; it may have sent an ABORT first, which is
 * then the reason. Only valid where the stream from k is at a frame boundary. */
static void look_for_abort(int k)
{
    int64_t dl = deadline_in(200);
    uint32_t type, tag;
    uint64_t len;
    while (frame_recv_hdr(st.fd[k], &type, &tag, &len, dl) == 0) {
        if (type == MSG_ABORT) {
            int status;
            char msg[ABORT_MSG_MAX + 1];
            if (read_abort(st.fd[k], len, dl, &status, msg) == 0)
                got_abort(k, status, msg);
            return;
        }
        if (io_skip(st.fd[k], len, dl))
            return;
    }
}

/* Main thread, inside an operation: peer k's stream ended. at_boundary: no
 * frame from k is half read (so an ABORT behind it can still be found). */
static int peer_gone(int k, const char *during, int at_boundary)
{
    if (at_boundary)
        look_for_abort(k);
    if (atomic_load(&st.mon_active))
        peer_lost(k);
    if (k == 0 && st.rank != 0)
        BS_ERR("%s: PE 0 (root) closed its connection (it exited or failed; see its message)",
               during);
    else
        BS_ERR("%s: PE %d closed its connection (it exited or failed; see its message)", during, k);
    return USHMEM_EBOOTSTRAP;
}

/* ---- collectives ---- */
static uint32_t make_tag(int op, int root)
{
    return (uint32_t)op << 24 | ((uint32_t)root & 0xffffffu);
}

static void describe(char *buf, size_t size, uint32_t tag, uint64_t len)
{
    int root = (int)(tag & 0xffffffu);
    switch (tag >> 24) {
    case OP_ALLGATHER:
        snprintf(buf, size, "an allgather of %llu bytes", (unsigned long long)len);
        break;
    case OP_BCAST:
        snprintf(buf, size, "a bcast of %llu bytes from PE %d", (unsigned long long)len, root);
        break;
    case OP_BARRIER: snprintf(buf, size, "a barrier"); break;
    case OP_HOSTS: snprintf(buf, size, "the host exchange of init"); break;
    default: snprintf(buf, size, "an unknown operation (tag %#x)", (unsigned)tag); break;
    }
}

/* Per-PE length of a frame: root's answers to allgathers carry every PE's part. */
static uint64_t per_pe_len(int from_root, uint32_t tag, uint64_t len)
{
    int op = (int)(tag >> 24);
    if (from_root && (op == OP_ALLGATHER || op == OP_HOSTS))
        return len / (uint64_t)st.nranks;
    return len;
}

static void format_ranks(char *buf, size_t size, const unsigned char *set, int n, int *count)
{
    size_t used = 0;
    int shown = 0;
    *count = 0;
    buf[0] = '\0';
    for (int k = 0; k < n; k++) {
        if (!set[k])
            continue;
        if (shown < 8 && used < size) {
            int w = snprintf(buf + used, size - used, "%s%d", shown ? ", " : "", k);
            used += w > 0 ? (size_t)w : 0;
            shown++;
        }
        (*count)++;
    }
    if (*count > shown && used < size)
        snprintf(buf + used, size - used, " and %d more", *count - shown);
}

/* Receive one DATA frame of len bytes from peer k into dst. wanted = 0: k has
 * already sent its part, so only an ABORT (or the end) may come. */
static int recv_frame(int k, uint32_t want_tag, void *dst, size_t len, int wanted, int64_t dl)
{
    char mine[96], theirs[96];
    uint32_t type, tag;
    uint64_t flen;
    int fd = st.fd[k];
    int from_root = k == 0 && st.rank != 0;
    describe(mine, sizeof mine, want_tag, per_pe_len(from_root, want_tag, len));
    int rc = frame_recv_hdr(fd, &type, &tag, &flen, dl);
    if (rc == 0 && type == MSG_ABORT) {
        int status;
        char msg[ABORT_MSG_MAX + 1];
        rc = read_abort(fd, flen, dl, &status, msg);
        if (rc == 0)
            got_abort(k, status, msg);
    }
    if (rc == IO_EOF)
        return peer_gone(k, mine, 1);
    if (rc == USHMEM_ETIMEOUT) {
        if (k == 0 && st.rank != 0)
            BS_ERR("%s: no answer from root (PE 0) within %ld s", mine, timeout_s());
        else
            BS_ERR("%s: PE %d stopped in the middle of a message for %ld s", mine, k, timeout_s());
        return rc;
    }
    if (rc == USHMEM_ESYS) {
        BS_ERR("%s: receiving from PE %d: %s", mine, k, strerror(errno));
        return rc;
    }
    if (rc) {
        BS_ERR("%s: PE %d sent a malformed message", mine, k);
        return USHMEM_EBOOTSTRAP;
    }
    if (type != MSG_DATA || !wanted || tag != want_tag || flen != len) {
        if (type != MSG_DATA)
            snprintf(theirs, sizeof theirs, "a message of type %u", (unsigned)type);
        else
            describe(theirs, sizeof theirs, tag, per_pe_len(from_root, tag, flen));
        BS_ERR("PE %d is in %s while PE %d is in %s%s: every PE must make the same bootstrap "
               "calls in the same order",
               k, theirs, st.rank, wanted ? "" : "the rest of ", mine);
        return USHMEM_EBOOTSTRAP;
    }
    rc = io_read(fd, dst, len, dl);
    if (rc == IO_EOF)
        return peer_gone(k, mine, 0);
    if (rc == USHMEM_ETIMEOUT)
        BS_ERR("%s: PE %d stopped in the middle of a message for %ld s", mine, k, timeout_s());
    else if (rc)
        BS_ERR("%s: receiving from PE %d: %s", mine, k, strerror(errno));
    return rc;
}

static int send_frame_to(int k, uint32_t tag, const void *buf, size_t len, int64_t dl)
{
    int rc = frame_send(st.fd[k], MSG_DATA, tag, buf, len, dl);
    if (rc == 0)
        return 0;
    char what[96];
    describe(what, sizeof what, tag, per_pe_len(st.rank == 0, tag, len));
    if (rc == IO_EOF)
        return peer_gone(k, what, 1);
    if (rc == USHMEM_ETIMEOUT)
        BS_ERR("%s: PE %d took nothing for %ld s", what, k, timeout_s());
    else
        BS_ERR("%s: sending to PE %d: %s", what, k, strerror(errno));
    return rc;
}

/* Root: one DATA frame of len bytes from each wanted PE (all, or only `only`)
 * into base + k * stride, watching every connection for ABORT or hangup. */
static int root_gather(uint32_t tag, char *base, size_t stride, size_t len, int only, int64_t dl)
{
    int n = st.nranks, npeer = n - 1, left = 0, rc = 0;
    struct pollfd *pfd = calloc((size_t)npeer, sizeof *pfd);
    unsigned char *want = calloc((size_t)n, 1);
    if (!pfd || !want) {
        BS_ERR("out of memory");
        rc = USHMEM_ENOMEM;
        goto out;
    }
    for (int k = 1; k < n; k++) {
        pfd[k - 1] = (struct pollfd){st.fd[k], POLLIN, 0};
        want[k] = only < 0 || only == k;
        left += want[k];
    }
    while (left > 0 && rc == 0) {
        int r = poll(pfd, (nfds_t)npeer, ms_left(dl));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            BS_ERR("poll: %s", strerror(errno));
            rc = USHMEM_ESYS;
            break;
        }
        if (r == 0) {
            char what[96], list[96];
            int cnt;
            describe(what, sizeof what, tag, len);
            format_ranks(list, sizeof list, want, n, &cnt);
            BS_ERR("%s: PE%s %s did not arrive within %ld s", what, cnt > 1 ? "s" : "", list,
                   timeout_s());
            rc = USHMEM_ETIMEOUT;
            break;
        }
        for (int i = 0; i < npeer && rc == 0; i++) {
            if (!pfd[i].revents)
                continue;
            int k = i + 1;
            rc = recv_frame(k, tag, len ? base + stride * (size_t)k : NULL, len, want[k], dl);
            if (rc == 0 && want[k]) {
                want[k] = 0;
                left--;
            }
        }
    }
out:
    free(pfd);
    free(want);
    return rc;
}

static int root_send_all(uint32_t tag, const void *buf, size_t len, int64_t dl)
{
    for (int k = 1; k < st.nranks; k++) {
        int rc = send_frame_to(k, tag, buf, len, dl);
        if (rc)
            return rc;
    }
    return 0;
}

static int do_allgather(int op, const void *in, void *out, size_t len, int64_t dl)
{
    size_t n = (size_t)st.nranks;
    uint32_t tag = make_tag(op, 0);
    if (len && n > SIZE_MAX / len) {
        BS_ERR("allgather of %zu bytes from %zu PEs overflows", len, n);
        return USHMEM_EINVAL;
    }
    if (st.rank == 0 && len && out != in)
        memmove(out, in, len);
    if (n == 1)
        return 0;
    if (st.rank == 0) {
        int rc = root_gather(tag, out, len, len, -1, dl);
        return rc ? rc : root_send_all(tag, out, n * len, dl);
    }
    int rc = send_frame_to(0, tag, in, len, dl);
    return rc ? rc : recv_frame(0, tag, out, n * len, 1, dl);
}

static int do_bcast(void *buf, size_t len, int root, int64_t dl)
{
    uint32_t tag = make_tag(OP_BCAST, root);
    if (root < 0 || root >= st.nranks) {
        BS_ERR("bcast from PE %d: no such PE (%d PEs)", root, st.nranks);
        return USHMEM_EINVAL;
    }
    if (st.nranks == 1)
        return 0;
    if (st.rank == 0) {
        int rc = root != 0 ? root_gather(tag, buf, 0, len, root, dl) : 0;
        /* PE `root` gets its data back: that is its acknowledgement, so it
         * cannot run ahead into the next collective while root still relays. */
        return rc ? rc : root_send_all(tag, buf, len, dl);
    }
    int rc = st.rank == root ? send_frame_to(0, tag, buf, len, dl) : 0;
    return rc ? rc : recv_frame(0, tag, buf, len, 1, dl);
}

static int op_enter(const char *what)
{
    pthread_mutex_lock(&st.lock);
    if (!st.connected) {
        pthread_mutex_unlock(&st.lock);
        ushmemi_error("bootstrap", "%s called before init or after fini", what);
        return USHMEM_ESTATE;
    }
    if (st.failed) {
        pthread_mutex_unlock(&st.lock);
        BS_ERR("%s: an earlier bootstrap operation failed; the PEs are out of step", what);
        return USHMEM_EBOOTSTRAP;
    }
    return 0;
}

static int op_leave(int rc)
{
    if (rc)
        st.failed = 1;
    pthread_mutex_unlock(&st.lock);
    return rc;
}

static int bs_allgather(const void *in, void *out, size_t len)
{
    int rc = op_enter("allgather");
    if (rc)
        return rc;
    return op_leave(do_allgather(OP_ALLGATHER, in, out, len, deadline_in(st.timeout_ms)));
}

static int bs_bcast(void *buf, size_t len, int root)
{
    int rc = op_enter("bcast");
    if (rc)
        return rc;
    return op_leave(do_bcast(buf, len, root, deadline_in(st.timeout_ms)));
}

static int bs_barrier(void)
{
    int rc = op_enter("barrier");
    if (rc)
        return rc;
    return op_leave(do_allgather(OP_BARRIER, NULL, NULL, 0, deadline_in(st.timeout_ms)));
}

/* Called with st.lock held, or before anything else runs. */
static void close_all(void)
{
    if (st.fd) {
        for (int k = 0; k < st.nranks; k++)
            if (st.fd[k] >= 0)
                close(st.fd[k]);
        free(st.fd);
        st.fd = NULL;
    }
    if (st.listen_fd >= 0) {
        close(st.listen_fd);
        st.listen_fd = -1;
    }
    if (st.unlink_path[0]) {
        unlink(st.unlink_path);
        st.unlink_path[0] = '\0';
    }
}

static void bs_fini(void)
{
    ushmemi_bootstrap_monitor_stop();
    pthread_mutex_lock(&st.lock);
    close_all();
    st.connected = 0;
    st.failed = 0;
    st.nranks = 0;
    st.call = "shmem_init";
    pthread_mutex_unlock(&st.lock);
}

static const ushmemi_bootstrap_ops_t star_ops[] = {
    [USHMEMI_BS_SINGLE] = {"single", bs_allgather, bs_bcast, bs_barrier, bs_fini, NULL},
    [USHMEMI_BS_LAUNCHER] = {"launcher", bs_allgather, bs_bcast, bs_barrier, bs_fini, NULL},
    [USHMEMI_BS_TORCHRUN] = {"torchrun", bs_allgather, bs_bcast, bs_barrier, bs_fini, NULL},
    [USHMEMI_BS_UID] = {"uid", bs_allgather, bs_bcast, bs_barrier, bs_fini, NULL},
};

/* ---- addresses and sockets ---- */
void ushmemi_bootstrap_hash(uint8_t out[16], const char *const *parts, int nparts)
{
    __extension__ typedef unsigned __int128 u128;
    u128 h = (u128)0x6c62272e07bb0142ULL << 64 | 0x62b821756295c58dULL;
    const u128 prime = (u128)0x0000000001000000ULL << 64 | 0x000000000000013bULL;
    for (int i = 0; i < nparts; i++) {
        const unsigned char *p = (const unsigned char *)(parts[i] ? parts[i] : "");
        do {
            h ^= *p;
            h *= prime;
        } while (*p++);
    }
    for (int i = 0; i < 16; i++)
        out[i] = (uint8_t)(h >> (8 * (15 - i)));
}

int ushmemi_bootstrap_addr_tcp(const char *host, long port, const char *what,
                               ushmemi_bs_addr_t *out)
{
    if (port < 1 || port > 65535) {
        BS_ERR("%s: port %ld is out of range (1..65535)", what, port);
        return USHMEM_EINVAL;
    }
    char ps[8];
    snprintf(ps, sizeof ps, "%ld", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int e = getaddrinfo(host, ps, &hints, &res);
    if (e) {
        BS_ERR("%s: cannot resolve host '%s': %s", what, host,
               e == EAI_SYSTEM ? strerror(errno) : gai_strerror(e));
        return USHMEM_EBOOTSTRAP;
    }
    const struct addrinfo *pick = NULL; /* the first IPv4 address, else the first IPv6 */
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET) {
            pick = ai;
            break;
        }
        if (ai->ai_family == AF_INET6 && !pick)
            pick = ai;
    }
    if (!pick || pick->ai_addrlen > sizeof out->sa) {
        freeaddrinfo(res);
        BS_ERR("%s: host '%s' has no IPv4 or IPv6 address", what, host);
        return USHMEM_EBOOTSTRAP;
    }
    memset(out, 0, sizeof *out);
    memcpy(&out->sa, pick->ai_addr, pick->ai_addrlen);
    out->len = pick->ai_addrlen;
    char ip[INET6_ADDRSTRLEN] = "?";
    const void *a = pick->ai_family == AF_INET
                        ? (const void *)&((const struct sockaddr_in *)pick->ai_addr)->sin_addr
                        : (const void *)&((const struct sockaddr_in6 *)pick->ai_addr)->sin6_addr;
    int v6 = pick->ai_family == AF_INET6;
    inet_ntop(pick->ai_family, a, ip, sizeof ip);
    freeaddrinfo(res);
    if (!strcmp(ip, host))
        snprintf(out->desc, sizeof out->desc, "tcp:%s%s%s:%ld", v6 ? "[" : "", ip, v6 ? "]" : "",
                 port);
    else
        snprintf(out->desc, sizeof out->desc, "tcp:%.64s:%ld (%s)", host, port, ip);
    return 0;
}

int ushmemi_bootstrap_addr_parse(const char *spec, const char *what, ushmemi_bs_addr_t *out)
{
    if (!strncmp(spec, "unix:", 5)) {
        const char *name = spec + 5;
        size_t nl = strlen(name);
        memset(out, 0, sizeof *out);
        struct sockaddr_un *un = (struct sockaddr_un *)&out->sa;
        un->sun_family = AF_UNIX;
        if (nl < 2 || nl > sizeof un->sun_path - (name[0] == '@' ? 0 : 1)) {
            BS_ERR("%s='%s': the socket name is empty or longer than %zu bytes", what, spec,
                   sizeof un->sun_path - 1);
            return USHMEM_EINVAL;
        }
        if (name[0] == '@') { /* Linux abstract socket: leading NUL, no file */
            memcpy(un->sun_path + 1, name + 1, nl - 1);
            out->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + nl);
        } else {
            memcpy(un->sun_path, name, nl + 1);
            out->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + nl + 1);
        }
        snprintf(out->desc, sizeof out->desc, "%.150s", spec);
        return 0;
    }
    if (!strncmp(spec, "tcp:", 4)) {
        const char *hp = spec + 4, *hend, *port;
        if (hp[0] == '[') {
            hend = strchr(hp, ']');
            port = hend && hend[1] == ':' ? hend + 2 : NULL;
            hp++;
        } else {
            hend = strrchr(hp, ':');
            port = hend ? hend + 1 : NULL;
        }
        char host[256], *end;
        if (!port || hend == hp || (size_t)(hend - hp) >= sizeof host) {
            BS_ERR("%s='%s' is not tcp:host:port", what, spec);
            return USHMEM_EINVAL;
        }
        memcpy(host, hp, (size_t)(hend - hp));
        host[hend - hp] = '\0';
        errno = 0;
        long p = strtol(port, &end, 10);
        if (errno || end == port || *end) {
            BS_ERR("%s='%s': '%s' is not a port number", what, spec, port);
            return USHMEM_EINVAL;
        }
        return ushmemi_bootstrap_addr_tcp(host, p, what, out);
    }
    BS_ERR("%s='%s' is not an address (expected unix:@name, unix:/path or tcp:host:port)", what,
           spec);
    return USHMEM_EINVAL;
}

static int is_inet(int family)
{
    return family == AF_INET || family == AF_INET6;
}

static void tune_socket(int fd, int family)
{
    if (!is_inet(family))
        return;
    int one = 1, idle = 30, intvl = 5, cnt = 6;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* A host that dies sends no FIN; keepalive turns its silence into a
     * hangup the monitor sees (after about a minute). */
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

/* A filesystem socket left behind by a dead job: nobody accepts on it. */
static int unix_path_is_stale(const struct sockaddr_un *un, socklen_t len)
{
    struct stat sb;
    if (un->sun_path[0] == '\0' || lstat(un->sun_path, &sb) != 0 || !S_ISSOCK(sb.st_mode))
        return 0;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return 0;
    int stale = connect(fd, (const struct sockaddr *)un, len) != 0 && errno == ECONNREFUSED;
    close(fd);
    return stale;
}

/* Where a TCP root listens: the address its peers dial (so a job on loopback
 * is not reachable from the network), all interfaces with
 * USHMEM_BOOTSTRAP_BIND=any, or the IP that variable names. */
static int bind_address(struct sockaddr_storage *sa)
{
    const char *b = ushmemi_env.bootstrap_bind;
    if (!b || !*b)
        return 0;
    if (sa->ss_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)sa;
        if (!strcmp(b, "any"))
            in->sin_addr.s_addr = htonl(INADDR_ANY);
        else if (inet_pton(AF_INET, b, &in->sin_addr) != 1)
            return -EINVAL;
    } else if (sa->ss_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
        if (!strcmp(b, "any"))
            in6->sin6_addr = in6addr_any;
        else if (inet_pton(AF_INET6, b, &in6->sin6_addr) != 1)
            return -EINVAL;
    }
    return 0;
}

int ushmemi_bootstrap_listen(const ushmemi_bs_addr_t *addr, int backlog)
{
    struct sockaddr_storage sa = addr->sa;
    int family = sa.ss_family, one = 1;
    if (is_inet(family) && bind_address(&sa) != 0)
        return -EINVAL; /* USHMEM_BOOTSTRAP_BIND is not an address of this family */
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    if (is_inet(family))
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc = bind(fd, (struct sockaddr *)&sa, addr->len);
    if (rc != 0 && errno == EADDRINUSE && family == AF_UNIX &&
        unix_path_is_stale((const struct sockaddr_un *)&sa, addr->len)) {
        unlink(((const struct sockaddr_un *)&sa)->sun_path);
        rc = bind(fd, (struct sockaddr *)&sa, addr->len);
    }
    if (rc != 0 || listen(fd, backlog) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

static void peer_name(int fd, const struct sockaddr_storage *sa, char *buf, size_t size)
{
    if (sa->ss_family == AF_INET || sa->ss_family == AF_INET6) {
        char ip[INET6_ADDRSTRLEN] = "?";
        int v6 = sa->ss_family == AF_INET6;
        const void *a = v6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
                           : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;
        unsigned port = ntohs(v6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
                                 : ((const struct sockaddr_in *)sa)->sin_port);
        inet_ntop(sa->ss_family, a, ip, sizeof ip);
        snprintf(buf, size, "%s%s%s:%u", v6 ? "[" : "", ip, v6 ? "]" : "", port);
        return;
    }
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0)
        snprintf(buf, size, "local pid %d (uid %u)", (int)cr.pid, (unsigned)cr.uid);
    else
        snprintf(buf, size, "a local process");
}

/* ---- joining: challenge, hello, status ----
 *
 * Root sends CHALLENGE{magic, version, nonce_r} on accept. The PE answers
 * HELLO{magic, version, rank, nranks, nonce_p, mac} with mac = MAC(secret,
 * "hello", nonce_r, nonce_p, rank, nranks); root answers STATUS{0, mac'} with
 * mac' = MAC(secret, "root", nonce_r, nonce_p, rank), or STATUS{1, reason}.
 * The secret never travels, a hello is good for one challenge only (no
 * replay), and a PE knows it reached its own root, not whoever holds the port. */
static void join_mac(uint8_t out[USHMEMI_MAC_BYTES], const uint8_t *secret, const char *role,
                     const uint8_t *nonce_r, const uint8_t *nonce_p, uint32_t rank, uint32_t nranks)
{
    unsigned char m[8 + 2 * NONCE_BYTES + 8];
    memset(m, 0, sizeof m);
    memcpy(m, role, strnlen(role, 8));
    memcpy(m + 8, nonce_r, NONCE_BYTES);
    memcpy(m + 8 + NONCE_BYTES, nonce_p, NONCE_BYTES);
    put32(m + 8 + 2 * NONCE_BYTES, rank);
    put32(m + 12 + 2 * NONCE_BYTES, nranks);
    ushmemi_mac(out, secret, m, sizeof m);
}

static int fill_random(void *buf, size_t len)
{
    return getrandom(buf, len, 0) == (ssize_t)len ? 0 : USHMEM_ESYS;
}

/* A connection root accepted that has not said who it is yet. */
typedef struct {
    int fd;
    int64_t dl;
    uint64_t seq; /* accept order: the lowest is the oldest */
    size_t got;   /* bytes of hdr + hello read so far */
    unsigned char in[HDR_BYTES + HELLO_BYTES];
    uint8_t nonce[NONCE_BYTES];
    char from[96];
    char src[96]; /* what the per-source cap counts: IP, or pid */
} pending_t;

/* One line per refused connection, up to REFUSALS_LOGGED in a join; past
 * that they are counted and root_join says how many (a stranger connecting
 * in a loop must not fill the job's log). */
#define REFUSALS_LOGGED 100
static int refusals;

static void refused(const char *from, const char *fmt, ...) USHMEMI_PRINTF(2, 3);
static void refused(const char *from, const char *fmt, ...)
{
    if (++refusals > REFUSALS_LOGGED)
        return;
    char why[STATUS_MAX + 32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    BS_ERR("refused a connection from %s: %s%s", from, why,
           refusals == REFUSALS_LOGGED ? " (further refusals are only counted)" : "");
}

static void pending_drop(pending_t *p, int *np, int i, const char *why)
{
    if (why)
        refused(p[i].from, "%s", why);
    close(p[i].fd);
    p[i] = p[--*np];
}

/* Root: a whole hello arrived on p; admit (rank) or refuse (-1, logged). */
static int root_judge(const pending_t *p, const uint8_t *secret)
{
    char reason[STATUS_MAX];
    const unsigned char *h = p->in + HDR_BYTES;
    uint32_t type = get32(p->in), len = (uint32_t)get64(p->in + 8);
    int rank = -1;
    if (type != MSG_HELLO || len != HELLO_BYTES || get32(h) != BS_MAGIC) {
        refused(p->from, "not a ushmem bootstrap hello");
        return -1;
    }
    uint32_t version = get32(h + 4);
    int r = (int)get32(h + 8), n = (int)get32(h + 12);
    uint8_t want[USHMEMI_MAC_BYTES];
    join_mac(want, secret, "hello", p->nonce, h + 16, (uint32_t)r, (uint32_t)n);
    if (version != BS_VERSION)
        snprintf(reason, sizeof reason,
                 "protocol version %u, root speaks %u (mixed ushmem installations?)",
                 (unsigned)version, BS_VERSION);
    else if (!ushmemi_mac_equal(want, h + 16 + NONCE_BYTES, sizeof want))
        snprintf(reason, sizeof reason, "wrong secret");
    else if (n != st.nranks)
        snprintf(reason, sizeof reason,
                 "job size mismatch: the PE was started for %d PEs, root for %d", n, st.nranks);
    else if (r < 1 || r >= st.nranks)
        snprintf(reason, sizeof reason, "rank %d is out of range 1..%d", r, st.nranks - 1);
    else if (st.fd[r] >= 0)
        snprintf(reason, sizeof reason, "rank %d has already joined (two PEs claim it)", r);
    else
        rank = r;

    unsigned char reply[STATUS_MAX + 1];
    size_t rlen = 1;
    reply[0] = rank < 0;
    if (rank < 0) {
        rlen += strlen(reason);
        memcpy(reply + 1, reason, rlen - 1);
    } else {
        join_mac(reply + 1, secret, "root", p->nonce, h + 16, (uint32_t)r, 0);
        rlen += USHMEMI_MAC_BYTES;
    }
    /* A few dozen bytes into an empty socket buffer: never waits. */
    int rc = frame_send(p->fd, MSG_STATUS, 0, reply, rlen, deadline_in(1000));
    if (rank < 0) {
        refused(p->from, "%s", reason);
        return -1;
    }
    return rc ? -1 : rank; /* it left: it will fail, or retry, on its side */
}

/* Root: a new connection. Refuse another user's at once (unix sockets say
 * who connects; for TCP from this host the kernel's socket table does, and a
 * local connection whose owner cannot be learned counts as another user's);
 * send the challenge; make room under the caps by dropping the oldest silent
 * connection (a PE that loses its place connects again). The caps count this
 * user's local connections apart from every remote source, so strangers never
 * take the places of the job's own PEs. */
static void root_accepted(int fd, const struct sockaddr_storage *sa, pending_t *p, int *np)
{
    static uint64_t accepted;
    pending_t c = {.fd = fd, .dl = now_ms() + HANDSHAKE_MS, .seq = ++accepted};
    tune_socket(fd, sa->ss_family);
    peer_name(fd, sa, c.from, sizeof c.from);
    if (sa->ss_family == AF_UNIX) {
        struct ucred cr = {0, (uid_t)-1, (gid_t)-1};
        socklen_t l = sizeof cr;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) != 0 || cr.uid != geteuid()) {
            refused(c.from, "another user");
            close(fd);
            return;
        }
        snprintf(c.src, sizeof c.src, "pid %d", (int)cr.pid);
    } else {
        uid_t u = (uid_t)-1;
        int where = ushmemi_bootstrap_tcp_owner(fd, sa, &u);
        if (where < 0 || (where == 0 && u != geteuid())) {
            if (where < 0)
                refused(c.from, "another user (owner unknown: the socket is closed already)");
            else
                refused(c.from, "another user (uid %u)", (unsigned)u);
            close(fd);
            return;
        }
        if (where == 0) {
            snprintf(c.src, sizeof c.src, "this host");
        } else {
            snprintf(c.src, sizeof c.src, "%s", c.from);
            char *colon = strrchr(c.src, ':'); /* the IP without the port */
            if (colon)
                *colon = '\0';
        }
    }
    unsigned char ch[CHALLENGE_BYTES];
    put32(ch, BS_MAGIC);
    put32(ch + 4, BS_VERSION);
    if (fill_random(c.nonce, sizeof c.nonce)) {
        close(fd);
        return;
    }
    memcpy(ch + 8, c.nonce, NONCE_BYTES);
    if (frame_send(fd, MSG_CHALLENGE, 0, ch, sizeof ch, deadline_in(1000))) {
        close(fd);
        return;
    }
    int same = 0, oldest_same = -1, oldest = -1;
    for (int i = 0; i < *np; i++) {
        if (oldest < 0 || p[i].seq < p[oldest].seq)
            oldest = i;
        if (strcmp(p[i].src, c.src))
            continue;
        same++;
        if (oldest_same < 0 || p[i].seq < p[oldest_same].seq)
            oldest_same = i;
    }
    if (same >= PENDING_PER_SOURCE)
        pending_drop(p, np, oldest_same, "too many connections from there say nothing");
    else if (*np >= PENDING_MAX)
        pending_drop(p, np, oldest, "too many connections say nothing");
    p[(*np)++] = c;
}

static void report_missing(int missing)
{
    unsigned char *set = calloc((size_t)st.nranks, 1);
    char list[96] = "?";
    int cnt = missing;
    if (set) {
        for (int k = 1; k < st.nranks; k++)
            set[k] = st.fd[k] < 0;
        format_ranks(list, sizeof list, set, st.nranks, &cnt);
        free(set);
    }
    BS_ERR("PE%s %s never joined (%ld s)", cnt > 1 ? "s" : "", list, timeout_s());
}

/* Root: admit nranks - 1 PEs. Every connection is read as its bytes come
 * (one poll over all), each gets HANDSHAKE_MS for its hello, and what is not
 * a PE of this job is refused with one line: a silent or slow stranger costs
 * the job nothing. */
static int root_join(const uint8_t *secret, int64_t dl)
{
    int missing = st.nranks - 1, np = 0, rc = 0;
    pending_t *p = malloc(PENDING_MAX * sizeof *p);
    refusals = 0;
    struct pollfd *pfd = malloc((PENDING_MAX + 1) * sizeof *pfd);
    if (!p || !pfd) {
        free(p);
        free(pfd);
        BS_ERR("out of memory");
        return USHMEM_ENOMEM;
    }
    while (missing > 0) {
        int64_t wake = dl, t = now_ms();
        for (int i = 0; i < np;) {
            if (p[i].dl <= t) {
                pending_drop(p, &np, i, "it sent no hello within 2 s");
                continue;
            }
            if (p[i].dl < wake)
                wake = p[i].dl;
            i++;
        }
        if (ms_left(dl) == 0) {
            report_missing(missing);
            rc = USHMEM_ETIMEOUT;
            break;
        }
        pfd[0] = (struct pollfd){st.listen_fd, POLLIN, 0};
        for (int i = 0; i < np; i++)
            pfd[i + 1] = (struct pollfd){p[i].fd, POLLIN, 0};
        int r = poll(pfd, (nfds_t)np + 1, ms_left(wake));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            BS_ERR("poll: %s", strerror(errno));
            rc = USHMEM_ESYS;
            break;
        }
        /* Pending connections first (from the end: a drop moves the last one in). */
        for (int i = np - 1; i >= 0 && r > 0; i--) {
            if (!pfd[i + 1].revents)
                continue;
            ssize_t n = recv(p[i].fd, p[i].in + p[i].got, sizeof p[i].in - p[i].got, MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                continue;
            if (n <= 0) {
                pending_drop(p, &np, i, NULL); /* a port probe, or a PE that gave up */
                continue;
            }
            p[i].got += (size_t)n;
            if (p[i].got >= HDR_BYTES &&
                (get32(p[i].in) != MSG_HELLO || get64(p[i].in + 8) != HELLO_BYTES)) {
                pending_drop(p, &np, i, "not a ushmem bootstrap hello");
                continue;
            }
            if (p[i].got < sizeof p[i].in)
                continue;
            int k = root_judge(&p[i], secret);
            if (k > 0) {
                st.fd[k] = p[i].fd;
                p[i] = p[--np];
                missing--;
            } else {
                pending_drop(p, &np, i, NULL);
            }
        }
        if (!(pfd[0].revents & POLLIN))
            continue;
        for (int burst = 0; burst < 64; burst++) {
            struct sockaddr_storage sa;
            socklen_t salen = sizeof sa;
            int fd =
                accept4(st.listen_fd, (struct sockaddr *)&sa, &salen, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd >= 0) {
                root_accepted(fd, &sa, p, &np);
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
                errno == ECONNABORTED || errno == EPROTO)
                break;
            BS_ERR("accept: %s", strerror(errno));
            rc = USHMEM_ESYS;
            break;
        }
        if (rc)
            break;
    }
    /* Everyone is in: whoever else still talks to us is not of this job. */
    while (np > 0)
        pending_drop(p, &np, np - 1, missing ? NULL : "the job is complete");
    ushmemi_bootstrap_owner_done();
    if (refusals > REFUSALS_LOGGED)
        BS_ERR("refused %d more connections (not logged one by one)", refusals - REFUSALS_LOGGED);
    free(p);
    free(pfd);
    return rc;
}

static int retryable(int err)
{
    /* Root not there yet, or its backlog is full: try again. */
    return err == ECONNREFUSED || err == ENOENT || err == EAGAIN || err == ETIMEDOUT ||
           err == EINTR || err == ECONNRESET || err == EHOSTUNREACH || err == ENETUNREACH ||
           err == ECONNABORTED;
}

/* A unix socket's listener must be this user's: the kernel says whose it is. */
static int check_unix_root(int fd, const ushmemi_bs_addr_t *a)
{
    if (a->sa.ss_family != AF_UNIX)
        return 0;
    struct ucred cr = {0, (uid_t)-1, (gid_t)-1};
    socklen_t l = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) == 0 && cr.uid == geteuid())
        return 0;
    BS_ERR("%s is held by pid %d of uid %d, not by this user's root: not joining", a->desc,
           (int)cr.pid, (int)cr.uid);
    return USHMEM_EDENIED;
}

static int connect_root(const ushmemi_bs_addr_t *a, int64_t dl, int *out)
{
    int delay = 10;
    for (;;) {
        int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            BS_ERR("socket: %s", strerror(errno));
            return USHMEM_ESYS;
        }
        int rc = connect(fd, (const struct sockaddr *)&a->sa, a->len), err = errno;
        if (rc != 0 && err == EINPROGRESS) {
            struct pollfd p = {fd, POLLOUT, 0};
            int left = ms_left(dl);
            int r = poll(&p, 1, left < 0 || left > 2000 ? 2000 : left);
            socklen_t l = sizeof err;
            if (r > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) == 0)
                rc = err ? -1 : 0;
            else
                err = r == 0 ? ETIMEDOUT : errno;
        }
        if (rc == 0) {
            rc = check_unix_root(fd, a);
            if (rc) {
                close(fd);
                return rc;
            }
            tune_socket(fd, a->sa.ss_family);
            *out = fd;
            return 0;
        }
        close(fd);
        if (!retryable(err)) {
            BS_ERR("cannot connect to %s: %s", a->desc, strerror(err));
            return USHMEM_EBOOTSTRAP;
        }
        int left = ms_left(dl);
        if (left == 0) {
            if (err == ECONNREFUSED || err == ENOENT || err == EAGAIN)
                BS_ERR("nobody listening at %s after %ld s", a->desc, timeout_s());
            else
                BS_ERR("nobody listening at %s after %ld s (last error: %s)", a->desc, timeout_s(),
                       strerror(err));
            return USHMEM_ETIMEOUT;
        }
        poll(NULL, 0, left >= 0 && left < delay ? left : delay);
        delay = delay < 125 ? delay * 2 : 250;
    }
}

/* 0, IO_EOF (root dropped us before answering: connect again), or an error
 * after one line. */
static int handshake(int fd, const ushmemi_bs_config_t *cfg, int64_t dl)
{
    unsigned char ch[CHALLENGE_BYTES], h[HELLO_BYTES], reply[STATUS_MAX + 1];
    uint8_t nonce[NONCE_BYTES], want[USHMEMI_MAC_BYTES];
    uint32_t type = 0, tag;
    uint64_t len = 0;
    int rc = frame_recv_hdr(fd, &type, &tag, &len, dl);
    if (rc == 0 && (type != MSG_CHALLENGE || len != CHALLENGE_BYTES))
        rc = USHMEM_EBOOTSTRAP;
    if (rc == 0)
        rc = io_read(fd, ch, sizeof ch, dl);
    if (rc == 0 && get32(ch) != BS_MAGIC)
        rc = USHMEM_EBOOTSTRAP;
    if (rc == IO_EOF)
        return rc;
    if (rc == 0 && get32(ch + 4) != BS_VERSION) {
        BS_ERR("root at %s speaks bootstrap protocol %u, this PE %u (mixed ushmem "
               "installations?)",
               cfg->addr.desc, (unsigned)get32(ch + 4), BS_VERSION);
        return USHMEM_EBOOTSTRAP;
    }
    if (rc == USHMEM_EBOOTSTRAP) {
        BS_ERR("%s answered, but not as a ushmem bootstrap root (another program on that "
               "port?)",
               cfg->addr.desc);
        return rc;
    }
    if (rc == 0)
        rc = fill_random(nonce, sizeof nonce);
    if (rc == 0) {
        put32(h, BS_MAGIC);
        put32(h + 4, BS_VERSION);
        put32(h + 8, (uint32_t)cfg->rank);
        put32(h + 12, (uint32_t)cfg->nranks);
        memcpy(h + 16, nonce, NONCE_BYTES);
        join_mac(h + 16 + NONCE_BYTES, cfg->secret, "hello", ch + 8, nonce, (uint32_t)cfg->rank,
                 (uint32_t)cfg->nranks);
        rc = frame_send(fd, MSG_HELLO, 0, h, sizeof h, dl);
    }
    if (rc == 0)
        rc = frame_recv_hdr(fd, &type, &tag, &len, dl);
    if (rc == 0 && (type != MSG_STATUS || len < 1 || len > STATUS_MAX)) {
        BS_ERR("%s answered, but not as a ushmem bootstrap root (another program on that "
               "port?)",
               cfg->addr.desc);
        return USHMEM_EBOOTSTRAP;
    }
    if (rc == 0)
        rc = io_read(fd, reply, (size_t)len, dl);
    if (rc == IO_EOF)
        return rc;
    if (rc == USHMEM_ETIMEOUT) {
        BS_ERR("no answer from %s within %ld s (is a ushmem job listening there?)", cfg->addr.desc,
               timeout_s());
        return rc;
    }
    if (rc) {
        BS_ERR("handshake with %s: %s", cfg->addr.desc, strerror(errno));
        return rc;
    }
    if (reply[0] != 0) {
        reply[len] = '\0';
        BS_ERR("root refused this PE: %s", (const char *)reply + 1);
        return USHMEM_EDENIED;
    }
    join_mac(want, cfg->secret, "root", ch + 8, nonce, (uint32_t)cfg->rank, 0);
    if (len != 1 + USHMEMI_MAC_BYTES || !ushmemi_mac_equal(want, reply + 1, sizeof want)) {
        BS_ERR("%s admitted this PE without proving it knows the job secret: not joining",
               cfg->addr.desc);
        return USHMEM_EDENIED;
    }
    return 0;
}

/* Connect and be admitted. Root drops a connection that waits too long (or
 * makes room for newer ones); that is no refusal: connect again. */
static int join_root(const ushmemi_bs_config_t *cfg, int64_t dl)
{
    for (;;) {
        int rc = connect_root(&cfg->addr, dl, &st.fd[0]);
        if (rc == 0)
            rc = handshake(st.fd[0], cfg, dl);
        if (rc != IO_EOF)
            return rc;
        close(st.fd[0]);
        st.fd[0] = -1;
        if (ms_left(dl) == 0) {
            BS_ERR("root at %s closed the connection during the handshake", cfg->addr.desc);
            return USHMEM_EBOOTSTRAP;
        }
        poll(NULL, 0, 20);
    }
}

/* Which PEs share this host: hostname plus kernel boot id (containers with
 * their own hostname count as separate hosts). */
static int exchange_hosts(int64_t dl)
{
    char host[256] = "", boot[64] = "";
    gethostname(host, sizeof host - 1);
    int bfd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (bfd >= 0) {
        ssize_t n = read(bfd, boot, sizeof boot - 1);
        boot[n > 0 ? n : 0] = '\0';
        close(bfd);
    }
    const char *parts[] = {host, boot};
    uint8_t id[16];
    ushmemi_bootstrap_hash(id, parts, 2);
    uint8_t *all = malloc((size_t)st.nranks * sizeof id);
    if (!all) {
        BS_ERR("out of memory");
        return USHMEM_ENOMEM;
    }
    int rc = do_allgather(OP_HOSTS, id, all, sizeof id, dl);
    if (rc == 0) {
        st.local_rank = 0;
        st.local_size = 0;
        for (int k = 0; k < st.nranks; k++) {
            if (memcmp(all + (size_t)k * sizeof id, id, sizeof id))
                continue;
            st.local_size++;
            if (k < st.rank)
                st.local_rank++;
        }
    }
    free(all);
    return rc;
}

int ushmemi_bootstrap_star_init(ushmemi_bootstrap_t *bs, const ushmemi_bs_config_t *cfg)
{
    int listen_fd = cfg->listen_fd, rc = 0;
    if (st.connected) {
        ushmemi_error("shmem_init", "bootstrap: already initialized");
        if (listen_fd >= 0)
            close(listen_fd);
        return USHMEM_ESTATE;
    }
    pthread_mutex_lock(&st.lock);
    st.rank = cfg->rank;
    st.nranks = cfg->nranks;
    st.failed = 0;
    st.call = cfg->call ? cfg->call : "shmem_init";
    st.timeout_ms = ushmemi_env.bootstrap_timeout > 0 ? ushmemi_env.bootstrap_timeout * 1000 : 0;
    atomic_store(&st.aborting, 0);
    st.fd = malloc((size_t)st.nranks * sizeof *st.fd);
    if (!st.fd) {
        BS_ERR("out of memory");
        rc = USHMEM_ENOMEM;
        goto fail;
    }
    for (int k = 0; k < st.nranks; k++)
        st.fd[k] = -1;
    int64_t dl = deadline_in(st.timeout_ms);
    if (st.nranks > 1 && st.rank == 0) {
        if (listen_fd < 0) {
            /* The kernel's cap (somaxconn), not the job size: a full queue
             * drops a PE's SYN for a second, and strangers may fill it. */
            listen_fd = ushmemi_bootstrap_listen(&cfg->addr, 4096);
            if (listen_fd < 0) {
                BS_ERR("cannot listen at %s: %s%s", cfg->addr.desc, strerror(-listen_fd),
                       -listen_fd == EADDRINUSE ? " (another job, or a stale PE, holds it)"
                       : -listen_fd == EADDRNOTAVAIL
                           ? " (not an address of this host: run rank 0 where MASTER_ADDR "
                             "points, or set USHMEM_BOOTSTRAP_BIND=any)"
                       : -listen_fd == EINVAL && ushmemi_env.bootstrap_bind &&
                               *ushmemi_env.bootstrap_bind
                           ? " (USHMEM_BOOTSTRAP_BIND is not 'any' or an IP of this family)"
                           : "");
                rc = USHMEM_EBOOTSTRAP;
                goto fail;
            }
            const struct sockaddr_un *un = (const struct sockaddr_un *)&cfg->addr.sa;
            if (un->sun_family == AF_UNIX && un->sun_path[0])
                memcpy(st.unlink_path, un->sun_path, sizeof st.unlink_path);
        }
        st.listen_fd = listen_fd;
        listen_fd = -1;
        rc = root_join(cfg->secret, dl);
        /* Everyone is in: nobody else may join, and the name can go. */
        close(st.listen_fd);
        st.listen_fd = -1;
        if (st.unlink_path[0]) {
            unlink(st.unlink_path);
            st.unlink_path[0] = '\0';
        }
    } else if (st.nranks > 1) {
        rc = join_root(cfg, dl);
        dl = deadline_in(st.timeout_ms > 0 ? st.timeout_ms + JOIN_GRACE_MS : 0);
    }
    if (rc == 0)
        rc = exchange_hosts(dl);
    if (rc)
        goto fail;
    st.connected = 1;
    st.call = "bootstrap";
    pthread_mutex_unlock(&st.lock);
    bs->rank = cfg->rank;
    bs->nranks = cfg->nranks;
    bs->local_rank = cfg->local_rank >= 0 ? cfg->local_rank : st.local_rank;
    bs->ops = &star_ops[cfg->source];
    return 0;

fail:
    if (listen_fd >= 0)
        close(listen_fd);
    close_all();
    st.nranks = 0;
    st.call = "shmem_init";
    pthread_mutex_unlock(&st.lock);
    return rc;
}

int ushmemi_bootstrap_local_info(int *local_rank, int *local_size)
{
    if (!st.connected)
        return USHMEM_ESTATE;
    *local_rank = st.local_rank;
    *local_size = st.local_size;
    return 0;
}

/* ---- liveness monitor ---- */

/* Peer k hung up while the monitor is on: find out why, and end the job. */
static void monitor_hangup(int k)
{
    pthread_mutex_lock(&st.lock);
    if (!atomic_load(&st.mon_active)) {
        pthread_mutex_unlock(&st.lock); /* finalize is under way */
        return;
    }
    if (!st.failed) /* streams in step: what is left is whole frames */
        look_for_abort(k);
    peer_lost(k);
}

static void *monitor_main(void *arg)
{
    (void)arg;
    int n = 1;
    st.mon_pfd[0] = (struct pollfd){st.wake_fd, POLLIN, 0};
    for (int k = peer_lo(); k < peer_hi(); k++) {
        st.mon_pfd[n] = (struct pollfd){st.fd[k], POLLRDHUP, 0};
        st.mon_who[n++] = k;
    }
    for (;;) {
        int r = poll(st.mon_pfd, (nfds_t)n, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            say("ushmem: PE %d: liveness monitor: poll: %s; monitor stopped", st.rank,
                strerror(errno));
            break;
        }
        if (st.mon_pfd[0].revents || !atomic_load(&st.mon_active))
            break;
        for (int i = 1; i < n; i++) {
            if (st.mon_pfd[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
                monitor_hangup(st.mon_who[i]); /* returns only when stopping */
                st.mon_pfd[i].fd = -1;
            }
        }
    }
    return NULL;
}

/* What monitor_start set up for the thread: the wake-up fd and the poll set. */
static void monitor_release(void)
{
    if (st.wake_fd >= 0)
        close(st.wake_fd);
    st.wake_fd = -1;
    free(st.mon_pfd);
    free(st.mon_who);
    st.mon_pfd = NULL;
    st.mon_who = NULL;
}

int ushmemi_bootstrap_monitor_start(void)
{
    if (!st.connected || st.nranks < 2 || st.mon_started)
        return 0;
    st.mon_pfd = calloc((size_t)st.nranks + 1, sizeof *st.mon_pfd);
    st.mon_who = calloc((size_t)st.nranks + 1, sizeof *st.mon_who);
    st.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int err = !st.mon_pfd || !st.mon_who ? ENOMEM : st.wake_fd < 0 ? errno : 0;
    if (err == 0) {
        /* Signals belong to the application's threads, not ours. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        atomic_store(&st.mon_active, 1);
        err = pthread_create(&st.mon, NULL, monitor_main, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (err) {
        atomic_store(&st.mon_active, 0);
        BS_ERR("cannot start the liveness monitor: %s", strerror(err));
        monitor_release();
        return USHMEM_ESYS;
    }
    st.mon_started = 1;
    return 0;
}

void ushmemi_bootstrap_monitor_stop(void)
{
    if (!st.mon_started)
        return;
    atomic_store(&st.mon_active, 0);
    uint64_t one = 1;
    ssize_t w = write(st.wake_fd, &one, sizeof one);
    (void)w;
    pthread_join(st.mon, NULL);
    monitor_release();
    st.mon_started = 0;
}

int ushmemi_bootstrap_watch_fds(int *fds, int max)
{
    int n = 0;
    if (!st.connected)
        return 0;
    for (int k = peer_lo(); k < peer_hi() && n < max; k++)
        if (st.fd[k] >= 0)
            fds[n++] = st.fd[k];
    return n;
}

void ushmemi_bootstrap_abort(int status, const char *msg)
{
    if (!st.connected) { /* mpi hook: another bootstrap (mpi) aborts its own way */
        const ushmemi_bootstrap_t *bs = ushmemi_bootstrap();
        if (bs->ops && bs->ops->abort && bs->nranks > 1)
            bs->ops->abort(status, msg);
        return;
    }
    if (st.nranks < 2)
        return;
    atomic_store(&st.abort_status, status);
    atomic_store(&st.aborting, 1);
    /* The main thread may be stuck inside an operation of another thread's
     * making; do not wait for it forever. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    int locked = pthread_mutex_timedlock(&st.lock, &ts) == 0;
    int64_t dl = deadline_in(1000);
    for (int k = peer_lo(); k < peer_hi(); k++) {
        if (st.fd[k] >= 0)
            send_abort(st.fd[k], status, msg, dl);
    }
    if (locked) {
        for (int k = peer_lo(); k < peer_hi(); k++) {
            if (st.fd[k] >= 0)
                discard_unread(st.fd[k]);
        }
        pthread_mutex_unlock(&st.lock);
    }
}
