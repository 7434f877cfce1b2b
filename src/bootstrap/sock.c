/* The star's sockets: time and deadlines, byte order, blocking I/O on
 * non-blocking sockets bounded by a deadline, frames, and addresses. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>

#include "bootstrap/star_priv.h"

/* ---- time ---- */
int64_t ushmemi_star_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t ushmemi_star_deadline_in(int64_t ms)
{
    return ms <= 0 ? INT64_MAX : ushmemi_star_now_ms() + ms;
}

/* Milliseconds left for poll(): -1 without a deadline, 0 once it passed. */
int ushmemi_star_ms_left(int64_t dl)
{
    if (dl == INT64_MAX)
        return -1;
    int64_t left = dl - ushmemi_star_now_ms();
    return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

long ushmemi_star_timeout_s(void)
{
    return (long)(ushmemi_star.timeout_ms / 1000);
}

/* ---- byte order ---- */
void ushmemi_star_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (24 - 8 * i));
}

uint32_t ushmemi_star_get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put64(unsigned char *p, uint64_t v)
{
    ushmemi_star_put32(p, (uint32_t)(v >> 32));
    ushmemi_star_put32(p + 4, (uint32_t)v);
}

uint64_t ushmemi_star_get64(const unsigned char *p)
{
    return (uint64_t)ushmemi_star_get32(p) << 32 | ushmemi_star_get32(p + 4);
}

/* ---- blocking I/O on non-blocking sockets, bounded by a deadline ---- */
static int wait_fd(int fd, short events, int64_t dl)
{
    for (;;) {
        struct pollfd p = {fd, events, 0};
        int n = poll(&p, 1, ushmemi_star_ms_left(dl));
        if (n > 0)
            return 0; /* ready, or hung up: the next recv/send says which */
        if (n == 0)
            return USHMEM_ETIMEOUT;
        if (errno != EINTR)
            return USHMEM_ESYS;
    }
}

/* 0, IO_EOF, USHMEM_ETIMEOUT or USHMEM_ESYS (errno set). */
int ushmemi_star_io_read(int fd, void *buf, size_t len, int64_t dl)
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

int ushmemi_star_io_skip(int fd, uint64_t len, int64_t dl)
{
    char junk[4096];
    while (len > 0) {
        size_t n = len < sizeof junk ? (size_t)len : sizeof junk;
        int rc = ushmemi_star_io_read(fd, junk, n, dl);
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

int ushmemi_star_frame_send(int fd, uint32_t type, uint32_t tag, const void *buf, size_t len,
                            int64_t dl)
{
    unsigned char h[HDR_BYTES];
    ushmemi_star_put32(h, type);
    ushmemi_star_put32(h + 4, tag);
    put64(h + 8, len);
    struct iovec iov[2] = {{h, sizeof h}, {(void *)(uintptr_t)buf, len}};
    return io_writev(fd, iov, len ? 2 : 1, dl);
}

int ushmemi_star_frame_recv_hdr(int fd, uint32_t *type, uint32_t *tag, uint64_t *len, int64_t dl)
{
    unsigned char h[HDR_BYTES];
    int rc = ushmemi_star_io_read(fd, h, sizeof h, dl);
    if (rc)
        return rc;
    *type = ushmemi_star_get32(h);
    *tag = ushmemi_star_get32(h + 4);
    *len = ushmemi_star_get64(h + 8);
    return 0;
}

int ushmemi_star_read_abort(int fd, uint64_t len, int64_t dl, int *status, char *msg)
{
    unsigned char p[4 + ABORT_MSG_MAX];
    if (len < 4 || len > sizeof p)
        return USHMEM_EBOOTSTRAP;
    int rc = ushmemi_star_io_read(fd, p, (size_t)len, dl);
    if (rc)
        return rc;
    *status = (int)ushmemi_star_get32(p);
    memcpy(msg, p + 4, (size_t)len - 4);
    msg[len - 4] = '\0';
    return 0;
}

void ushmemi_star_send_abort(int fd, int status, const char *msg, int64_t dl)
{
    unsigned char p[4 + ABORT_MSG_MAX];
    size_t m = msg ? strnlen(msg, ABORT_MSG_MAX) : 0;
    ushmemi_star_put32(p, (uint32_t)status);
    if (m)
        memcpy(p + 4, msg, m);
    (void)ushmemi_star_frame_send(fd, MSG_ABORT, 0, p, 4 + m, dl);
}

/* Read and drop what a peer sent, so that closing the socket sends a FIN and
 * not a reset (a reset can make the peer lose the ABORT we just sent it). */
void ushmemi_star_discard_unread(int fd)
{
    char junk[4096];
    for (int i = 0; i < 256; i++)
        if (recv(fd, junk, sizeof junk, MSG_DONTWAIT) <= 0)
            break;
}

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
