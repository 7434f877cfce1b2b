/* Host locality and descriptor exchange between the PEs of one host.
 *
 * Each PE listens on an abstract unix socket with a random name (no file
 * system entry), published with an allgather together with its pid, uid and
 * a fresh random key. A PE connects to every lower local rank and sends its
 * descriptors with SCM_RIGHTS, accepts every higher one, receives and
 * answers, and finally reads the lower ranks' answers. The messages are
 * small, so no send blocks and the order cannot deadlock.
 *
 * Abstract sockets have no permissions: anyone on the host can connect. So
 * both ends check who is at the other end before sending anything: the kernel
 * (SO_PEERCRED) must name the uid and pid the PE announced through the
 * bootstrap, and each hello carries a MAC, under the receiver's key, of who
 * sends it to whom. The keys travel only through the bootstrap (which only
 * the job's PEs joined, with the job secret) and are new for every exchange,
 * so a proof seen once is worth nothing later. Anything else is refused with
 * one line and the wait goes on. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "core/local.h"
#include "core/prims.h"
#include "core/mac.h"

#define HOSTID_LEN   96
#define SOCKNAME_LEN 48
/* How long a connection that the kernel cannot tie to a PE (one in another
 * pid namespace) has to say who it is. */
#define HELLO_MS 2000

static void local_hostid(char *out)
{
    char host[64] = "", boot[40] = "";
    struct stat st;
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, boot, sizeof boot - 1);
        close(fd);
        boot[n > 0 ? n : 0] = '\0';
        boot[strcspn(boot, "\n")] = '\0';
    }
    gethostname(host, sizeof host - 1);
    /* Abstract sockets are per network namespace: include it. */
    unsigned long netns = stat("/proc/self/ns/net", &st) == 0 ? (unsigned long)st.st_ino : 0;
    snprintf(out, HOSTID_LEN, "%.40s/%.36s/%lu", host, boot, netns);
}

static unsigned char *machine; /* [n_pes]: same machine, before USHMEM_FAKE_HOSTS */

int ushmemi_same_machine(int pe)
{
    return machine ? machine[pe] : ushmemi_g.is_local[pe];
}

int ushmemi_locality_init(const char *call)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    char mine[HOSTID_LEN] = "";
    char *all = calloc((size_t)n, HOSTID_LEN);
    ushmemi_g.is_local = calloc((size_t)n, 1);
    machine = calloc((size_t)n, 1);
    if (!all || !ushmemi_g.is_local || !machine) {
        free(all);
        return USHMEM_ENOMEM;
    }
    local_hostid(mine);
    int rc = ushmemi_bootstrap()->ops->allgather(mine, all, HOSTID_LEN);
    if (rc) {
        ushmemi_error(call, "locality exchange failed: %s", ushmemi_strerror(rc));
        free(all);
        return rc;
    }
    ushmemi_g.local_size = 0;
    /* mpi hook: USHMEM_FAKE_HOSTS=k (tests) splits the PEs into k pretend
     * hosts by rank, so one machine exercises mixed shm/mpi routes. */
    long k = ushmemi_env.fake_hosts > n ? n : ushmemi_env.fake_hosts;
    int real_local = 0;
    for (int pe = 0; pe < n; pe++) {
        ushmemi_g.is_local[pe] = !strcmp(all + (size_t)pe * HOSTID_LEN, mine);
        machine[pe] = ushmemi_g.is_local[pe];
        real_local += ushmemi_g.is_local[pe];
        if (k > 1 && (long)pe * k / n != (long)me * k / n)
            ushmemi_g.is_local[pe] = 0;
        if (ushmemi_g.is_local[pe]) {
            if (pe == me)
                ushmemi_g.local_rank = ushmemi_g.local_size;
            ushmemi_g.local_size++;
        }
    }
    free(all);
    ushmemi_wait_setup(real_local); /* mpi hook: the real host's PEs, not the fake one's */
    return 0;
}

void ushmemi_locality_fini(void)
{
    free(ushmemi_g.is_local);
    ushmemi_g.is_local = NULL;
    free(machine);
    machine = NULL;
}

static void sock_addr(struct sockaddr_un *sa, socklen_t *len, const char *name)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    size_t n = strlen(name);
    memcpy(sa->sun_path + 1, name, n);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* What each PE publishes through the bootstrap allgather (which only PEs of
 * the job take part in): where it listens, who it is, and a fresh key. */
typedef struct {
    char name[SOCKNAME_LEN];
    int32_t pid;
    uint32_t uid;
    uint64_t pidns; /* pid namespace inode: pids compare only within one */
    uint8_t key[16];
} peer_card_t;

/* The one message each side of a connection sends: who it is and a proof that
 * it read the allgather (a MAC under the receiver's key), with its fds. */
#define LOCAL_MAGIC 0x5553484cu /* "USHL" */
typedef struct {
    uint32_t magic;
    int32_t from, to;
    uint8_t proof[USHMEMI_MAC_BYTES];
} hello_t;

static void make_proof(uint8_t out[USHMEMI_MAC_BYTES], const peer_card_t *to_card, int from, int to,
                       const char *role)
{
    unsigned char msg[32];
    memset(msg, 0, sizeof msg);
    int n = snprintf((char *)msg, sizeof msg, "ushmem-fd %s %d>%d", role, from, to);
    ushmemi_mac(out, to_card->key, msg, n > 0 ? (size_t)n : 0);
}

static uint64_t pidns_inode(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Is the process at the other end of sock the one that published card? The
 * kernel says who it is (SO_PEERCRED: for a connecting socket the listener's
 * credentials, for an accepted one the connector's). 0, or a reason. */
static const char *peer_check(int sock, const peer_card_t *card, struct ucred *cr)
{
    socklen_t len = sizeof *cr;
    cr->pid = 0;
    cr->uid = (uid_t)-1;
    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, cr, &len) != 0)
        return "no peer credentials";
    if (cr->uid != geteuid())
        return "another user";
    if (!card)
        return "not a PE of this job on this host";
    if (cr->uid != card->uid)
        return "not the user that PE announced";
    if (card->pidns == pidns_inode() && cr->pid != card->pid)
        return "not the process that PE announced";
    return NULL;
}

/* One line per refused connection, up to REFUSALS_LOGGED per exchange; the
 * rest are counted (a stranger connecting in a loop must not fill the log). */
#define REFUSALS_LOGGED 100
static int refusals;

static void refuse(int sock, const struct ucred *cr, int pe, const char *why, const char *call)
{
    close(sock);
    if (++refusals > REFUSALS_LOGGED)
        return;
    const char *more = refusals == REFUSALS_LOGGED ? " (further refusals are only counted)" : "";
    if (pe >= 0)
        ushmemi_error(call, "refused a local connection from pid %d (uid %d) claiming PE %d: %s%s",
                      (int)cr->pid, (int)cr->uid, pe, why, more);
    else
        ushmemi_error(call, "refused a local connection from pid %d (uid %d): %s%s", (int)cr->pid,
                      (int)cr->uid, why, more);
}

static int send_hello(int sock, const hello_t *h, const int *fds, int nfd)
{
    char cbuf[CMSG_SPACE(sizeof(int) * USHMEMI_MAX_XFDS)];
    struct iovec iov = {(void *)(uintptr_t)h, sizeof *h};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfd) {
        memset(cbuf, 0, sizeof cbuf);
        msg.msg_control = cbuf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfd);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfd);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfd);
    }
    return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof *h ? 0 : USHMEM_ESYS;
}

/* Wait for fd, and watch the bootstrap connections meanwhile: a PE whose init
 * failed leaves at once (its sockets close), so the others stop within
 * milliseconds instead of waiting out the timeout. USHMEM_EBOOTSTRAP then.
 * Root watches its first 64 connections only: with more PEs a failure among
 * the others reaches it through the launcher or the timeout. */
static int wait_readable(int fd, int timeout_ms)
{
    struct pollfd p[1 + 64] = {{fd, POLLIN, 0}};
    int bfd[64];
    int nw = ushmemi_bootstrap_watch_fds(bfd, 64);
    for (int i = 0; i < nw; i++)
        p[1 + i] = (struct pollfd){bfd[i], POLLRDHUP, 0};
    int r;
    do
        r = poll(p, (nfds_t)(1 + nw), timeout_ms);
    while (r < 0 && errno == EINTR);
    for (int i = 0; r > 0 && i < nw; i++)
        if (p[1 + i].revents & (POLLRDHUP | POLLHUP | POLLERR))
            return USHMEM_EBOOTSTRAP;
    return r > 0 && p[0].revents ? 0 : USHMEM_ETIMEOUT;
}

/* Read one hello and its fds (a peer's sendmsg of a few dozen bytes arrives
 * whole on a unix stream socket). 0, USHMEM_ETIMEOUT, or USHMEM_EBOOTSTRAP
 * for anything malformed; fds are closed on failure. */
static int recv_hello(int sock, int timeout_ms, hello_t *h, int *fds, int *nfd)
{
    char cbuf[CMSG_SPACE(sizeof(int) * USHMEMI_MAX_XFDS)];
    struct iovec iov = {h, sizeof *h};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    *nfd = 0;
    int wr = wait_readable(sock, timeout_ms);
    if (wr)
        return wr;
    ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (*nfd < USHMEMI_MAX_XFDS)
                fds[(*nfd)++] = fd;
            else
                close(fd);
        }
    }
    if (n != (ssize_t)sizeof *h || (msg.msg_flags & MSG_CTRUNC) || h->magic != LOCAL_MAGIC) {
        for (int i = 0; i < *nfd; i++)
            close(fds[i]);
        *nfd = 0;
        return USHMEM_EBOOTSTRAP;
    }
    return 0;
}

static void close_fds(int *fds, int nfd)
{
    for (int i = 0; i < nfd; i++)
        close(fds[i]);
}

/* Root of the exchange for the higher local PEs: accept until each has been
 * served once. A connection is served only when the kernel says it comes
 * from the process a PE announced and its hello proves it read our key; any
 * other is logged, closed, and the wait goes on. */
static int serve_higher(int lsock, const peer_card_t *cards, int nhigher, const int *fds, int nfd,
                        ushmemi_fd_recv_fn on_recv, void *arg, int timeout_ms, const char *call)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    unsigned char *done = calloc((size_t)n, 1);
    if (!done)
        return USHMEM_ENOMEM;
    int64_t t0 = ushmemi_now_ns() / 1000000;
    int rc = 0;
    refusals = 0;
    while (nhigher > 0 && rc == 0) {
        int left = timeout_ms;
        if (timeout_ms >= 0) {
            int64_t spent = ushmemi_now_ns() / 1000000 - t0;
            left = spent >= timeout_ms ? 0 : timeout_ms - (int)spent;
        }
        int wr = wait_readable(lsock, left);
        if (wr == USHMEM_EBOOTSTRAP) {
            ushmemi_error(call, "a PE of this job failed to initialize; stopping");
            rc = wr;
            break;
        }
        if (wr) {
            ushmemi_error(call, "local peers did not connect within %ld s",
                          ushmemi_env.bootstrap_timeout);
            rc = USHMEM_ETIMEOUT;
            break;
        }
        int s = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
        if (s < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN)
                continue;
            rc = USHMEM_ESYS;
            break;
        }
        struct ucred cr;
        const char *why = peer_check(s, NULL, &cr);
        if (why && strcmp(why, "not a PE of this job on this host")) {
            refuse(s, &cr, -1, why, call);
            continue;
        }
        /* Which higher local PE is this, by the kernel's pid? A PE in another
         * pid namespace has no pid we can compare: it says who it is in its
         * hello, and that must check out (uid, namespace, proof). */
        int pe = -1, foreign = 0;
        uint64_t ns = pidns_inode();
        for (int k = me + 1; k < n && pe < 0; k++) {
            if (!ushmemi_g.is_local[k] || done[k])
                continue;
            if (cards[k].pidns != ns)
                foreign = 1;
            else if (!peer_check(s, &cards[k], &cr))
                pe = k;
        }
        if (pe < 0 && !foreign) {
            refuse(s, &cr, -1, "not a PE of this job on this host", call);
            continue;
        }
        hello_t h;
        int rfds[USHMEMI_MAX_XFDS], rn = 0;
        uint8_t want[USHMEMI_MAC_BYTES];
        /* A PE sends its hello right after connect: the kernel-named one gets
         * the whole timeout, an unnamed one HELLO_MS. */
        int hrc = recv_hello(s, pe >= 0 ? timeout_ms : HELLO_MS, &h, rfds, &rn);
        if (hrc == 0 && pe < 0 && h.from > me && h.from < n && ushmemi_g.is_local[h.from] &&
            !done[h.from] && cards[h.from].pidns != ns && !peer_check(s, &cards[h.from], &cr))
            pe = h.from;
        if (hrc == 0 && pe >= 0)
            make_proof(want, &cards[me], pe, me, "client");
        if (hrc || pe < 0 || h.from != pe || h.to != me ||
            !ushmemi_mac_equal(want, h.proof, sizeof want)) {
            close_fds(rfds, rn);
            refuse(s, &cr,
                   pe >= 0 ? pe
                   : hrc   ? -1
                           : h.from,
                   hrc == USHMEM_ETIMEOUT ? "no hello in time"
                   : hrc                  ? "malformed hello"
                   : pe < 0               ? "not a PE of this job on this host"
                                          : "wrong proof of the job key",
                   call);
            continue;
        }
        done[pe] = 1;
        nhigher--;
        rc = on_recv(pe, rfds, rn, arg);
        hello_t back = {.magic = LOCAL_MAGIC, .from = me, .to = pe};
        make_proof(back.proof, &cards[pe], me, pe, "server");
        if (rc == 0)
            rc = send_hello(s, &back, fds, nfd);
        close(s);
    }
    if (refusals > REFUSALS_LOGGED)
        ushmemi_error(call, "refused %d more local connections (not logged one by one)",
                      refusals - REFUSALS_LOGGED);
    free(done);
    return rc;
}

int ushmemi_fd_exchange(const int *fds, int nfd, ushmemi_fd_recv_fn on_recv, void *arg,
                        const char *call)
{
    const ushmemi_bootstrap_t *bs = ushmemi_bootstrap();
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    int timeout_ms =
        ushmemi_env.bootstrap_timeout > 0 ? (int)ushmemi_env.bootstrap_timeout * 1000 : -1;
    peer_card_t mine, *cards = calloc((size_t)n, sizeof *cards);
    int *lower = calloc((size_t)n, sizeof *lower);
    int *lower_pe = calloc((size_t)n, sizeof *lower_pe);
    int32_t ok, *oks = calloc((size_t)n, sizeof *oks);
    int lsock = -1, rc = 0, nlower = 0, nhigher = 0;
    struct sockaddr_un sa;
    socklen_t salen;
    unsigned char rnd[12];

    memset(&mine, 0, sizeof mine);
    if (!cards || !lower || !lower_pe || !oks || nfd > USHMEMI_MAX_XFDS)
        rc = USHMEM_ENOMEM;
    else if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd ||
             getrandom(mine.key, sizeof mine.key, 0) != (ssize_t)sizeof mine.key)
        rc = USHMEM_ESYS;
    if (rc == 0) {
        int off = snprintf(mine.name, SOCKNAME_LEN, "ushmem-fd-%d-", me);
        for (size_t i = 0; i < sizeof rnd; i++)
            off += snprintf(mine.name + off, SOCKNAME_LEN - (size_t)off, "%02x", rnd[i]);
        mine.pid = (int32_t)getpid();
        mine.uid = (uint32_t)geteuid();
        mine.pidns = pidns_inode();
        sock_addr(&sa, &salen, mine.name);
        lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (lsock < 0 || bind(lsock, (struct sockaddr *)&sa, salen) != 0 ||
            listen(lsock, 4 * n + 16) != 0) {
            ushmemi_error(call, "cannot listen on an abstract unix socket: %s", strerror(errno));
            rc = USHMEM_ESYS;
        }
    }
    /* Always join the allgathers so a failing PE cannot leave the others waiting. */
    int brc = cards ? bs->ops->allgather(&mine, cards, sizeof mine) : USHMEM_ENOMEM;
    if (brc)
        rc = brc;
    for (int pe = 0; pe < me && rc == 0; pe++) {
        if (!ushmemi_g.is_local[pe])
            continue;
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct ucred cr;
        const char *why = NULL;
        sock_addr(&sa, &salen, cards[pe].name);
        if (s < 0 || connect(s, (struct sockaddr *)&sa, salen) != 0) {
            ushmemi_error(call, "cannot reach local PE %d: %s", pe, strerror(errno));
            rc = USHMEM_EBOOTSTRAP;
        } else if ((why = peer_check(s, &cards[pe], &cr)) != NULL) {
            /* Someone else holds the name PE pe announced: send it nothing. */
            ushmemi_error(call, "local PE %d's socket is held by pid %d (uid %d): %s; not sending",
                          pe, (int)cr.pid, (int)cr.uid, why);
            rc = USHMEM_EBOOTSTRAP;
        } else {
            hello_t h = {.magic = LOCAL_MAGIC, .from = me, .to = pe};
            make_proof(h.proof, &cards[pe], me, pe, "client");
            if (send_hello(s, &h, fds, nfd)) {
                ushmemi_error(call, "cannot send to local PE %d: %s", pe, strerror(errno));
                rc = USHMEM_EBOOTSTRAP;
            }
        }
        if (rc) {
            if (s >= 0)
                close(s);
            break;
        }
        lower_pe[nlower] = pe;
        lower[nlower++] = s;
    }
    for (int pe = me + 1; pe < n; pe++)
        nhigher += ushmemi_g.is_local[pe];
    if (rc == 0 && nhigher > 0)
        rc = serve_higher(lsock, cards, nhigher, fds, nfd, on_recv, arg, timeout_ms, call);
    for (int i = 0; i < nlower; i++) {
        int pe = lower_pe[i];
        if (rc == 0) {
            hello_t h;
            int rfds[USHMEMI_MAX_XFDS], rn = 0;
            uint8_t want[USHMEMI_MAC_BYTES];
            rc = recv_hello(lower[i], timeout_ms, &h, rfds, &rn);
            if (rc == USHMEM_ETIMEOUT)
                ushmemi_error(call, "local PE %d did not send its memory handles within %ld s", pe,
                              ushmemi_env.bootstrap_timeout);
            if (rc == 0) {
                make_proof(want, &cards[me], pe, me, "server");
                if (h.from != pe || h.to != me || !ushmemi_mac_equal(want, h.proof, sizeof want))
                    rc = USHMEM_EBOOTSTRAP;
            }
            if (rc == USHMEM_EBOOTSTRAP) {
                close_fds(rfds, rn);
                ushmemi_error(call, "bad memory-handle answer from local PE %d", pe);
            }
            if (rc == 0)
                rc = on_recv(pe, rfds, rn, arg);
        }
        close(lower[i]);
    }
    if (lsock >= 0)
        close(lsock);
    /* Agree on the outcome so no PE goes on with a half-connected job. A PE
     * that failed does not wait for the others' verdict: it returns, its init
     * fails and it leaves, which every other PE notices (wait_readable and the
     * bootstrap both watch the connections). */
    ok = rc == 0;
    if (ok && oks && brc == 0 && bs->ops->allgather(&ok, oks, sizeof ok) == 0) {
        for (int pe = 0; pe < n && rc == 0; pe++)
            if (!oks[pe]) {
                ushmemi_error(call, "PE %d could not exchange memory handles", pe);
                rc = USHMEM_EBOOTSTRAP;
            }
    }
    free(oks);
    free(lower_pe);
    free(lower);
    free(cards);
    return rc;
}
