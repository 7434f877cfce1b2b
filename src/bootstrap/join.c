/* Joining the star: root listens, accepts and authenticates (challenge,
 * hello, status); the others connect and prove they know the job secret. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "bootstrap/star_priv.h"
#include "core/mac.h"

/* A connection that says nothing this long after the challenge is not one of
 * ours (a PE answers at once); it is dropped. Connections are read together,
 * so a silent one holds up nobody meanwhile. */
#define HANDSHAKE_MS 2000
/* Connections waiting for their hello, per source (IP; pid on unix sockets)
 * and in all: past these the oldest silent one is dropped for the newcomer. */
#define PENDING_PER_SOURCE 16
#define PENDING_MAX        256

/* ---- listening ---- */
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
    ushmemi_star_put32(m + 8 + 2 * NONCE_BYTES, rank);
    ushmemi_star_put32(m + 12 + 2 * NONCE_BYTES, nranks);
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
 * that they are counted and ushmemi_star_root_join says how many (a stranger connecting
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
    uint32_t type = ushmemi_star_get32(p->in), len = (uint32_t)ushmemi_star_get64(p->in + 8);
    int rank = -1;
    if (type != MSG_HELLO || len != HELLO_BYTES || ushmemi_star_get32(h) != BS_MAGIC) {
        refused(p->from, "not a ushmem bootstrap hello");
        return -1;
    }
    uint32_t version = ushmemi_star_get32(h + 4);
    int r = (int)ushmemi_star_get32(h + 8), n = (int)ushmemi_star_get32(h + 12);
    uint8_t want[USHMEMI_MAC_BYTES];
    join_mac(want, secret, "hello", p->nonce, h + 16, (uint32_t)r, (uint32_t)n);
    if (version != BS_VERSION)
        snprintf(reason, sizeof reason,
                 "protocol version %u, root speaks %u (mixed ushmem installations?)",
                 (unsigned)version, BS_VERSION);
    else if (!ushmemi_mac_equal(want, h + 16 + NONCE_BYTES, sizeof want))
        snprintf(reason, sizeof reason, "wrong secret");
    else if (n != ushmemi_star.nranks)
        snprintf(reason, sizeof reason,
                 "job size mismatch: the PE was started for %d PEs, root for %d", n,
                 ushmemi_star.nranks);
    else if (r < 1 || r >= ushmemi_star.nranks)
        snprintf(reason, sizeof reason, "rank %d is out of range 1..%d", r,
                 ushmemi_star.nranks - 1);
    else if (ushmemi_star.fd[r] >= 0)
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
    int rc =
        ushmemi_star_frame_send(p->fd, MSG_STATUS, 0, reply, rlen, ushmemi_star_deadline_in(1000));
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
    pending_t c = {.fd = fd, .dl = ushmemi_star_now_ms() + HANDSHAKE_MS, .seq = ++accepted};
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
    ushmemi_star_put32(ch, BS_MAGIC);
    ushmemi_star_put32(ch + 4, BS_VERSION);
    if (fill_random(c.nonce, sizeof c.nonce)) {
        close(fd);
        return;
    }
    memcpy(ch + 8, c.nonce, NONCE_BYTES);
    if (ushmemi_star_frame_send(fd, MSG_CHALLENGE, 0, ch, sizeof ch,
                                ushmemi_star_deadline_in(1000))) {
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
    unsigned char *set = calloc((size_t)ushmemi_star.nranks, 1);
    char list[96] = "?";
    int cnt = missing;
    if (set) {
        for (int k = 1; k < ushmemi_star.nranks; k++)
            set[k] = ushmemi_star.fd[k] < 0;
        ushmemi_star_format_ranks(list, sizeof list, set, ushmemi_star.nranks, &cnt);
        free(set);
    }
    BS_ERR("PE%s %s never joined (%ld s)", cnt > 1 ? "s" : "", list, ushmemi_star_timeout_s());
}

/* Root: admit nranks - 1 PEs. Every connection is read as its bytes come
 * (one poll over all), each gets HANDSHAKE_MS for its hello, and what is not
 * a PE of this job is refused with one line: a silent or slow stranger costs
 * the job nothing. */
int ushmemi_star_root_join(const uint8_t *secret, int64_t dl)
{
    int missing = ushmemi_star.nranks - 1, np = 0, rc = 0;
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
        int64_t wake = dl, t = ushmemi_star_now_ms();
        for (int i = 0; i < np;) {
            if (p[i].dl <= t) {
                pending_drop(p, &np, i, "it sent no hello within 2 s");
                continue;
            }
            if (p[i].dl < wake)
                wake = p[i].dl;
            i++;
        }
        if (ushmemi_star_ms_left(dl) == 0) {
            report_missing(missing);
            rc = USHMEM_ETIMEOUT;
            break;
        }
        pfd[0] = (struct pollfd){ushmemi_star.listen_fd, POLLIN, 0};
        for (int i = 0; i < np; i++)
            pfd[i + 1] = (struct pollfd){p[i].fd, POLLIN, 0};
        int r = poll(pfd, (nfds_t)np + 1, ushmemi_star_ms_left(wake));
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
            if (p[i].got >= HDR_BYTES && (ushmemi_star_get32(p[i].in) != MSG_HELLO ||
                                          ushmemi_star_get64(p[i].in + 8) != HELLO_BYTES)) {
                pending_drop(p, &np, i, "not a ushmem bootstrap hello");
                continue;
            }
            if (p[i].got < sizeof p[i].in)
                continue;
            int k = root_judge(&p[i], secret);
            if (k > 0) {
                ushmemi_star.fd[k] = p[i].fd;
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
            int fd = accept4(ushmemi_star.listen_fd, (struct sockaddr *)&sa, &salen,
                             SOCK_CLOEXEC | SOCK_NONBLOCK);
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
            int left = ushmemi_star_ms_left(dl);
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
        int left = ushmemi_star_ms_left(dl);
        if (left == 0) {
            if (err == ECONNREFUSED || err == ENOENT || err == EAGAIN)
                BS_ERR("nobody listening at %s after %ld s", a->desc, ushmemi_star_timeout_s());
            else
                BS_ERR("nobody listening at %s after %ld s (last error: %s)", a->desc,
                       ushmemi_star_timeout_s(), strerror(err));
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
    int rc = ushmemi_star_frame_recv_hdr(fd, &type, &tag, &len, dl);
    if (rc == 0 && (type != MSG_CHALLENGE || len != CHALLENGE_BYTES))
        rc = USHMEM_EBOOTSTRAP;
    if (rc == 0)
        rc = ushmemi_star_io_read(fd, ch, sizeof ch, dl);
    if (rc == 0 && ushmemi_star_get32(ch) != BS_MAGIC)
        rc = USHMEM_EBOOTSTRAP;
    if (rc == IO_EOF)
        return rc;
    if (rc == 0 && ushmemi_star_get32(ch + 4) != BS_VERSION) {
        BS_ERR("root at %s speaks bootstrap protocol %u, this PE %u (mixed ushmem "
               "installations?)",
               cfg->addr.desc, (unsigned)ushmemi_star_get32(ch + 4), BS_VERSION);
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
        ushmemi_star_put32(h, BS_MAGIC);
        ushmemi_star_put32(h + 4, BS_VERSION);
        ushmemi_star_put32(h + 8, (uint32_t)cfg->rank);
        ushmemi_star_put32(h + 12, (uint32_t)cfg->nranks);
        memcpy(h + 16, nonce, NONCE_BYTES);
        join_mac(h + 16 + NONCE_BYTES, cfg->secret, "hello", ch + 8, nonce, (uint32_t)cfg->rank,
                 (uint32_t)cfg->nranks);
        rc = ushmemi_star_frame_send(fd, MSG_HELLO, 0, h, sizeof h, dl);
    }
    if (rc == 0)
        rc = ushmemi_star_frame_recv_hdr(fd, &type, &tag, &len, dl);
    if (rc == 0 && (type != MSG_STATUS || len < 1 || len > STATUS_MAX)) {
        BS_ERR("%s answered, but not as a ushmem bootstrap root (another program on that "
               "port?)",
               cfg->addr.desc);
        return USHMEM_EBOOTSTRAP;
    }
    if (rc == 0)
        rc = ushmemi_star_io_read(fd, reply, (size_t)len, dl);
    if (rc == IO_EOF)
        return rc;
    if (rc == USHMEM_ETIMEOUT) {
        BS_ERR("no answer from %s within %ld s (is a ushmem job listening there?)", cfg->addr.desc,
               ushmemi_star_timeout_s());
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
int ushmemi_star_join_root(const ushmemi_bs_config_t *cfg, int64_t dl)
{
    for (;;) {
        int rc = connect_root(&cfg->addr, dl, &ushmemi_star.fd[0]);
        if (rc == 0)
            rc = handshake(ushmemi_star.fd[0], cfg, dl);
        if (rc != IO_EOF)
            return rc;
        close(ushmemi_star.fd[0]);
        ushmemi_star.fd[0] = -1;
        if (ushmemi_star_ms_left(dl) == 0) {
            BS_ERR("root at %s closed the connection during the handshake", cfg->addr.desc);
            return USHMEM_EBOOTSTRAP;
        }
        poll(NULL, 0, 20);
    }
}
