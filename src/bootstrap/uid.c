/* Unique-id bootstrap (shmemx_get_uniqueid / shmemx_init_attr).
 *
 * The process that becomes rank 0 makes the id: it opens a listening TCP socket
 * on an ephemeral port (all interfaces) right away and keeps it, so the port is
 * reserved while the application ships the id to the other ranks. The id
 * carries that address and 16 random secret bytes; connections without the
 * secret are refused.
 *
 * Layout (128 bytes, big endian):
 *   0 magic "USHU"  4 version u16  6 family u16 (4: IPv4)  8 port u16
 *   12 address[16]  28 secret[16]  44 check u32 (FNV-1a of bytes 0..43)
 *   48.. zero */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/star.h"
#include "core/internal.h"

#define UID_MAGIC       0x55534855u /* "USHU" */
#define UID_VERSION     1u
#define UID_FAMILY_IPV4 4u
#define UID_CHECKED     44
#define UID_BACKLOG     4096

/* The listening socket and secret of the last id this process made. */
static struct {
    int fd;
    uint8_t secret[USHMEMI_BS_SECRET_BYTES];
} made = {.fd = -1};

static uint32_t fnv1a32(const unsigned char *p, size_t n)
{
    uint32_t h = 2166136261u;
    while (n--) {
        h ^= *p++;
        h *= 16777619u;
    }
    return h;
}

static void put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static unsigned get16(const unsigned char *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

static void put32(unsigned char *p, uint32_t v)
{
    put16(p, v >> 16);
    put16(p + 2, v & 0xffff);
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)get16(p) << 16 | get16(p + 2);
}

/* The address other hosts should use to reach this one. */
static int advertised_ip(struct in_addr *out)
{
    const char *host = getenv("USHMEM_MASTER_ADDR");
    if (host && *host) {
        struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
        int e = getaddrinfo(host, NULL, &hints, &res);
        if (e) {
            ushmemi_bootstrap_error("shmemx_get_uniqueid",
                                    "USHMEM_MASTER_ADDR='%s': no IPv4 address: %s", host,
                                    e == EAI_SYSTEM ? strerror(errno) : gai_strerror(e));
            return USHMEM_EINVAL;
        }
        *out = ((const struct sockaddr_in *)res->ai_addr)->sin_addr;
        freeaddrinfo(res);
        return 0;
    }
    struct ifaddrs *ifs;
    out->s_addr = htonl(INADDR_LOOPBACK);
    if (getifaddrs(&ifs) != 0)
        return 0;
    for (const struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
            !(i->ifa_flags & IFF_LOOPBACK)) {
            *out = ((const struct sockaddr_in *)i->ifa_addr)->sin_addr;
            break;
        }
    }
    freeifaddrs(ifs);
    return 0;
}

static int random_bytes(uint8_t *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = getrandom(buf, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static void make_addr(ushmemi_bs_addr_t *a, struct in_addr ip, unsigned port)
{
    struct sockaddr_in *sin = (struct sockaddr_in *)&a->sa;
    char s[INET_ADDRSTRLEN] = "?";
    memset(a, 0, sizeof *a);
    sin->sin_family = AF_INET;
    sin->sin_addr = ip;
    sin->sin_port = htons((uint16_t)port);
    a->len = sizeof *sin;
    inet_ntop(AF_INET, &ip, s, sizeof s);
    snprintf(a->desc, sizeof a->desc, "tcp:%s:%u", s, port);
}

int ushmemi_bootstrap_make_uid(shmemx_uniqueid_t *uid)
{
    const char *call = "shmemx_get_uniqueid";
    uint8_t secret[USHMEMI_BS_SECRET_BYTES];
    struct in_addr ip;
    if (!uid) {
        ushmemi_bootstrap_error(call, "uid is NULL");
        return USHMEM_EINVAL;
    }
    if (random_bytes(secret, sizeof secret) != 0) {
        ushmemi_bootstrap_error(call, "getrandom: %s", strerror(errno));
        return USHMEM_ESYS;
    }
    int rc = advertised_ip(&ip);
    if (rc)
        return rc;
    /* Listen where the id tells peers to connect (USHMEM_BOOTSTRAP_BIND=any: everywhere). */
    ushmemi_bs_addr_t here;
    make_addr(&here, ip, 0);
    int fd = ushmemi_bootstrap_listen(&here, UID_BACKLOG);
    if (fd < 0) {
        ushmemi_bootstrap_error(call, "cannot open a listening TCP socket: %s", strerror(-fd));
        return USHMEM_EBOOTSTRAP;
    }
    struct sockaddr_in bound;
    socklen_t blen = sizeof bound;
    if (getsockname(fd, (struct sockaddr *)&bound, &blen) != 0) {
        ushmemi_bootstrap_error(call, "getsockname: %s", strerror(errno));
        close(fd);
        return USHMEM_ESYS;
    }
    /* One id per job: a newer id replaces the previous one's socket. */
    if (made.fd >= 0)
        close(made.fd);
    made.fd = fd;
    memcpy(made.secret, secret, sizeof secret);

    unsigned char *b = uid->internal;
    memset(b, 0, SHMEMX_UNIQUEID_BYTES);
    put32(b, UID_MAGIC);
    put16(b + 4, UID_VERSION);
    put16(b + 6, UID_FAMILY_IPV4);
    put16(b + 8, ntohs(bound.sin_port));
    memcpy(b + 12, &ip, sizeof ip);
    memcpy(b + 28, secret, sizeof secret);
    put32(b + UID_CHECKED, fnv1a32(b, UID_CHECKED));
    return 0;
}

int ushmemi_bootstrap_init_uid(ushmemi_bootstrap_t *bs, int rank, int nranks,
                               const shmemx_uniqueid_t *uid)
{
    const char *call = "shmemx_init_attr";
    ushmemi_bs_config_t cfg = {.source = USHMEMI_BS_UID,
                               .rank = rank,
                               .nranks = nranks,
                               .local_rank = -1,
                               .listen_fd = -1,
                               .call = call};
    if (nranks < 1 || rank < 0 || rank >= nranks) {
        ushmemi_bootstrap_error(call, "rank %d of %d PEs is out of range", rank, nranks);
        return USHMEM_EINVAL;
    }
    const unsigned char *b = uid ? uid->internal : NULL;
    if (!b || get32(b) != UID_MAGIC || get32(b + UID_CHECKED) != fnv1a32(b, UID_CHECKED)) {
        ushmemi_bootstrap_error(call, "the unique id is not valid: not made by "
                                      "shmemx_get_uniqueid, or damaged on its way here");
        return USHMEM_EINVAL;
    }
    if (get16(b + 4) != UID_VERSION || get16(b + 6) != UID_FAMILY_IPV4) {
        ushmemi_bootstrap_error(call,
                                "the unique id has version %u, family %u: made by another "
                                "ushmem version?",
                                get16(b + 4), get16(b + 6));
        return USHMEM_EINVAL;
    }
    struct in_addr ip;
    memcpy(&ip, b + 12, sizeof ip);
    make_addr(&cfg.addr, ip, get16(b + 8));
    memcpy(cfg.secret, b + 28, sizeof cfg.secret);

    int mine = made.fd >= 0 && !memcmp(made.secret, cfg.secret, sizeof cfg.secret);
    if (rank == 0 && mine) {
        cfg.listen_fd = made.fd;
        made.fd = -1;
    } else if (rank == 0 && nranks > 1) {
        /* Not the maker: take the port ourselves if it is free on this host. */
        int fd = ushmemi_bootstrap_listen(&cfg.addr, UID_BACKLOG);
        if (fd < 0) {
            ushmemi_bootstrap_error(call,
                                    "rank 0 did not create this unique id and cannot "
                                    "listen on port %u itself (%s); call "
                                    "shmemx_get_uniqueid in the process that becomes "
                                    "rank 0",
                                    get16(b + 8), strerror(-fd));
            return USHMEM_EBOOTSTRAP;
        }
        cfg.listen_fd = fd;
    }
    if (nranks == 1 && cfg.listen_fd >= 0) {
        close(cfg.listen_fd);
        cfg.listen_fd = -1;
    }
    return ushmemi_bootstrap_star_init(bs, &cfg);
}
