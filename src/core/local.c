/* Host locality and descriptor exchange between the PEs of one host.
 *
 * Each PE listens on an abstract unix socket with a random name (no file
 * system entry), published with an allgather. A PE connects to every lower
 * local rank and sends its descriptors with SCM_RIGHTS, accepts every higher
 * one, receives and answers, and finally reads the lower ranks' answers. The
 * messages are small, so no send blocks and the order cannot deadlock. */
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
#include <unistd.h>

#include "core/core.h"
#include "core/local.h"

#define HOSTID_LEN   96
#define SOCKNAME_LEN 48

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

int ushmemi_locality_init(const char *call)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    char mine[HOSTID_LEN] = "";
    char *all = calloc((size_t)n, HOSTID_LEN);
    ushmemi_g.is_local = calloc((size_t)n, 1);
    if (!all || !ushmemi_g.is_local) {
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
    /* Oversubscribed (more local PEs than CPUs we may run on): yield at once,
     * the PE we wait for needs our CPU (4 PEs on 2 cores, barrier_all:
     * 3.4 us yielding at once, 6 us after 4 polls, 13-19 us after 64). */
    cpu_set_t cpus;
    int ncpu = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
    ushmemi_g.spin_limit = real_local > ncpu ? 0 : 4096; /* mpi hook: real host, not fake */
    return 0;
}

void ushmemi_locality_fini(void)
{
    free(ushmemi_g.is_local);
    ushmemi_g.is_local = NULL;
}

static void sock_addr(struct sockaddr_un *sa, socklen_t *len, const char *name)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    size_t n = strlen(name);
    memcpy(sa->sun_path + 1, name, n);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static int send_fds(int sock, const int *fds, int nfd)
{
    int32_t rank = ushmemi_g.my_pe;
    char cbuf[CMSG_SPACE(sizeof(int) * USHMEMI_MAX_XFDS)];
    struct iovec iov = {&rank, sizeof rank};
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
    return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof rank ? 0 : USHMEM_ESYS;
}

static int wait_readable(int fd, int timeout_ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    int r;
    do
        r = poll(&p, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    return r > 0 ? 0 : USHMEM_ETIMEOUT;
}

static int recv_fds(int sock, int timeout_ms, ushmemi_fd_recv_fn on_recv, void *arg,
                    const char *call)
{
    int32_t rank = -1;
    int fds[USHMEMI_MAX_XFDS], nfd = 0;
    char cbuf[CMSG_SPACE(sizeof fds)];
    struct iovec iov = {&rank, sizeof rank};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    if (wait_readable(sock, timeout_ms)) {
        ushmemi_error(call, "a local peer did not send its memory handles within %ld s",
                      ushmemi_env.bootstrap_timeout);
        return USHMEM_ETIMEOUT;
    }
    ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        nfd = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        memcpy(fds, CMSG_DATA(c), sizeof(int) * (size_t)nfd);
    }
    if (n != (ssize_t)sizeof rank || rank < 0 || rank >= ushmemi_g.n_pes ||
        !ushmemi_g.is_local[rank] || (msg.msg_flags & MSG_CTRUNC)) {
        ushmemi_error(call, "bad memory-handle message from a local peer");
        for (int i = 0; i < nfd; i++)
            close(fds[i]);
        return USHMEM_EBOOTSTRAP;
    }
    return on_recv(rank, fds, nfd, arg);
}

typedef struct {
    char name[SOCKNAME_LEN];
} sockname_t;

int ushmemi_fd_exchange(const int *fds, int nfd, ushmemi_fd_recv_fn on_recv, void *arg,
                        const char *call)
{
    const ushmemi_bootstrap_t *bs = ushmemi_bootstrap();
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    int timeout_ms =
        ushmemi_env.bootstrap_timeout > 0 ? (int)ushmemi_env.bootstrap_timeout * 1000 : -1;
    sockname_t mine, *names = calloc((size_t)n, sizeof *names);
    int *lower = calloc((size_t)n, sizeof *lower);
    int32_t ok, *oks = calloc((size_t)n, sizeof *oks);
    int lsock = -1, rc = 0, nlower = 0, nhigher = 0;
    struct sockaddr_un sa;
    socklen_t salen;
    unsigned char rnd[12];

    memset(&mine, 0, sizeof mine);
    if (!names || !lower || !oks || nfd > USHMEMI_MAX_XFDS)
        rc = USHMEM_ENOMEM;
    else if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        rc = USHMEM_ESYS;
    if (rc == 0) {
        int off = snprintf(mine.name, SOCKNAME_LEN, "ushmem-fd-%d-", me);
        for (size_t i = 0; i < sizeof rnd; i++)
            off += snprintf(mine.name + off, SOCKNAME_LEN - (size_t)off, "%02x", rnd[i]);
        sock_addr(&sa, &salen, mine.name);
        lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (lsock < 0 || bind(lsock, (struct sockaddr *)&sa, salen) != 0 || listen(lsock, n) != 0) {
            ushmemi_error(call, "cannot listen on an abstract unix socket: %s", strerror(errno));
            rc = USHMEM_ESYS;
        }
    }
    /* Always join the allgathers so a failing PE cannot leave the others waiting. */
    int brc = names ? bs->ops->allgather(&mine, names, sizeof mine) : USHMEM_ENOMEM;
    if (brc)
        rc = brc;
    for (int pe = 0; pe < me && rc == 0; pe++) {
        if (!ushmemi_g.is_local[pe])
            continue;
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sock_addr(&sa, &salen, names[pe].name);
        if (s < 0 || connect(s, (struct sockaddr *)&sa, salen) != 0 || send_fds(s, fds, nfd)) {
            ushmemi_error(call, "cannot reach local PE %d: %s", pe, strerror(errno));
            if (s >= 0)
                close(s);
            rc = USHMEM_EBOOTSTRAP;
            break;
        }
        lower[nlower++] = s;
    }
    for (int pe = me + 1; pe < n; pe++)
        nhigher += ushmemi_g.is_local[pe];
    for (int i = 0; i < nhigher && rc == 0; i++) {
        if (wait_readable(lsock, timeout_ms)) {
            ushmemi_error(call, "local peers did not connect within %ld s",
                          ushmemi_env.bootstrap_timeout);
            rc = USHMEM_ETIMEOUT;
            break;
        }
        int s = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
        if (s < 0) {
            rc = USHMEM_ESYS;
            break;
        }
        rc = recv_fds(s, timeout_ms, on_recv, arg, call);
        if (rc == 0)
            rc = send_fds(s, fds, nfd);
        close(s);
    }
    for (int i = 0; i < nlower; i++) {
        if (rc == 0)
            rc = recv_fds(lower[i], timeout_ms, on_recv, arg, call);
        close(lower[i]);
    }
    if (lsock >= 0)
        close(lsock);
    /* Agree on the outcome so no PE goes on with a half-connected job. */
    ok = rc == 0;
    if (oks && brc == 0 && bs->ops->allgather(&ok, oks, sizeof ok) == 0) {
        for (int pe = 0; pe < n && rc == 0; pe++)
            if (!oks[pe]) {
                ushmemi_error(call, "PE %d could not exchange memory handles", pe);
                rc = USHMEM_EBOOTSTRAP;
            }
    }
    free(oks);
    free(lower);
    free(names);
    return rc;
}
