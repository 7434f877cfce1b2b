/* Who owns the other end of a TCP connection root accepted (issue 22, items 5
 * and 6).
 *
 * Root refuses another user's local connections at accept. The kernel knows
 * the owner of the peer's socket; we ask it about that one socket through
 * netlink sock_diag (an exact inet_diag_req_v2 lookup by 4-tuple: O(1) however
 * many sockets the host has), and only when that is unavailable read the whole
 * of /proc/net/tcp{,6}. Either way the owner counts only while the peer's
 * socket is ESTABLISHED: a socket its owner already closed (FIN_WAIT, or a
 * TIME_WAIT entry) is reported with uid 0, which would let a stranger pass as
 * root. Such a local connection has no owner we can learn: the caller treats
 * it as a stranger. */

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/star.h"

/* An IPv4 or IPv6 endpoint, v4-mapped IPv6 turned into IPv4 (the peer's
 * socket is an IPv4 one then). */
typedef struct {
    int family;
    uint32_t addr[4]; /* network order */
    uint16_t port;    /* network order */
} endpoint_t;

static int endpoint_of(const struct sockaddr_storage *sa, endpoint_t *e)
{
    memset(e, 0, sizeof *e);
    if (sa->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        e->family = AF_INET;
        memcpy(e->addr, &in->sin_addr, 4);
        e->port = in->sin_port;
        return 0;
    }
    if (sa->ss_family != AF_INET6)
        return -1;
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
    e->port = in6->sin6_port;
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
        e->family = AF_INET;
        memcpy(e->addr, in6->sin6_addr.s6_addr + 12, 4);
    } else {
        e->family = AF_INET6;
        memcpy(e->addr, &in6->sin6_addr, 16);
    }
    return 0;
}

/* ---- netlink sock_diag ---- */

enum { NL_UNTRIED = -2, NL_NONE = -1 };
static int nl_fd = NL_UNTRIED;
static uint32_t nl_seq;

/* The socket whose local end is src and remote end dst: 1 and its state and
 * uid, 0 when the kernel has none, -1 when netlink cannot answer. */
static int nl_lookup(const endpoint_t *src, const endpoint_t *dst, int *state, uid_t *uid)
{
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 r;
    } req;
    memset(&req, 0, sizeof req);
    req.nlh.nlmsg_len = sizeof req;
    req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.nlh.nlmsg_flags = NLM_F_REQUEST;
    req.nlh.nlmsg_seq = ++nl_seq;
    req.r.sdiag_family = (uint8_t)src->family;
    req.r.sdiag_protocol = IPPROTO_TCP;
    req.r.idiag_states = ~0u;
    req.r.id.idiag_sport = src->port;
    req.r.id.idiag_dport = dst->port;
    memcpy(req.r.id.idiag_src, src->addr, sizeof src->addr);
    memcpy(req.r.id.idiag_dst, dst->addr, sizeof dst->addr);
    req.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(nl_fd, &req, sizeof req, 0, (struct sockaddr *)&kernel, sizeof kernel) !=
        (ssize_t)sizeof req)
        return -1;
    /* The kernel answers while handling the request; the poll only guards
     * against a kernel that does not. */
    long buf[2048];
    for (;;) {
        struct pollfd p = {nl_fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            return -1;
        ssize_t n = recv(nl_fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
             h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_seq != req.nlh.nlmsg_seq)
                continue; /* an answer to an earlier question that timed out */
            if (h->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *e = NLMSG_DATA(h);
                return h->nlmsg_len >= NLMSG_LENGTH(sizeof *e) && e->error == -ENOENT ? 0 : -1;
            }
            if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
                h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
                return -1;
            const struct inet_diag_msg *m = NLMSG_DATA(h);
            /* With no connection the lookup may fall back to a listener. */
            if (m->id.idiag_dport != dst->port || memcmp(m->id.idiag_dst, dst->addr, 16))
                return 0;
            *state = m->idiag_state;
            *uid = (uid_t)m->idiag_uid;
            return 1;
        }
    }
}

/* Netlink works here if it finds our own end of the connection (a kernel
 * without inet_diag answers ENOENT to everything). */
static void nl_open(const endpoint_t *self, const endpoint_t *peer)
{
    nl_fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl_fd < 0) {
        nl_fd = NL_NONE;
        return;
    }
    int state = -1;
    uid_t uid = (uid_t)-1;
    if (nl_lookup(self, peer, &state, &uid) != 1 || uid != geteuid()) {
        close(nl_fd);
        nl_fd = NL_NONE;
    }
}

void ushmemi_bootstrap_owner_done(void)
{
    if (nl_fd >= 0)
        close(nl_fd);
    nl_fd = NL_UNTRIED;
}

/* ---- /proc/net/tcp{,6}: the fallback, O(sockets on the host) ---- */

static void proc_endpoint(const endpoint_t *e, char *out, size_t size)
{
    if (e->family == AF_INET)
        snprintf(out, size, "%08X:%04X", (unsigned)e->addr[0], (unsigned)ntohs(e->port));
    else
        snprintf(out, size, "%08X%08X%08X%08X:%04X", (unsigned)e->addr[0], (unsigned)e->addr[1],
                 (unsigned)e->addr[2], (unsigned)e->addr[3], (unsigned)ntohs(e->port));
}

static int proc_lookup(const endpoint_t *src, const endpoint_t *dst, int *state, uid_t *uid)
{
    char want_local[64], want_rem[64], local[64], rem[64], line[512];
    proc_endpoint(src, want_local, sizeof want_local);
    proc_endpoint(dst, want_rem, sizeof want_rem);
    FILE *f = fopen(src->family == AF_INET ? "/proc/net/tcp" : "/proc/net/tcp6", "re");
    if (!f)
        return -1;
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned s, u;
        if (sscanf(line, " %*d: %63s %63s %x %*s %*s %*s %u", local, rem, &s, &u) == 4 &&
            !strcasecmp(local, want_local) && !strcasecmp(rem, want_rem)) {
            *state = (int)s;
            *uid = (uid_t)u;
            found = 1;
        }
    }
    fclose(f);
    return found;
}

/* A peer address that can only be this host: loopback, or the address it
 * dialled (the kernel picks that as source for a connection to itself). */
static int surely_local(const endpoint_t *peer, const endpoint_t *self)
{
    if (peer->family == AF_INET)
        return (ntohl(peer->addr[0]) >> 24) == 127 || peer->addr[0] == self->addr[0];
    return IN6_IS_ADDR_LOOPBACK((const struct in6_addr *)peer->addr) ||
           !memcmp(peer->addr, self->addr, 16);
}

int ushmemi_bootstrap_tcp_owner(int fd, const struct sockaddr_storage *peer, uid_t *uid)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    endpoint_t self, them;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0 || endpoint_of(&ss, &self) ||
        endpoint_of(peer, &them) || self.family != them.family)
        return -1;
    if (nl_fd == NL_UNTRIED)
        nl_open(&self, &them);
    int state = -1, found = -1;
    uid_t u = (uid_t)-1;
    if (nl_fd >= 0)
        found = nl_lookup(&them, &self, &state, &u);
    if (found < 0)
        found = proc_lookup(&them, &self, &state, &u);
    if (found > 0)
        return state == TCP_ESTABLISHED ? (*uid = u, 0) : -1;
    /* Not in this host's table: another host, unless it can only be this one. */
    return surely_local(&them, &self) ? -1 : 1;
}
