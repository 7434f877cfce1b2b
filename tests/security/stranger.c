/* A stranger on the host: what another local user (or another process of the
 * same user) can do to running jobs without knowing their secret. It watches
 * /proc/net/unix for ushmem's abstract sockets (they have no permissions:
 * anyone may connect) and, optionally, a TCP port, and at each one it
 *   - claims to be a PE: sends a local hello with a made-up proof (fd
 *     exchange sockets) or a bootstrap hello with a made-up MAC (roots), and
 *     counts every file descriptor and every byte beyond the refusal it gets;
 *   - stays silent, holding up to -s connections open for -w ms each;
 *   - sends half a message, then nothing (slow client).
 * With -f N it floods instead (issue 22, item 5): it holds N idle loopback
 * connections to a listener of its own (a long /proc/net/tcp) and connects to
 * the -p port and closes at once, in a loop, as fast as it can.
 * It runs until killed or for -t seconds, then prints one summary line:
 *   stranger: names N connects C fds F leaked_bytes B admitted A
 * and exits 1 if anything leaked (F, B or A nonzero).
 *
 * Usage: stranger [-t seconds] [-s silent] [-w hold_ms] [-p tcp_port] [-f held]
 *                 [-o file] */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_NAMES  4096
#define MAX_SILENT 256

static volatile sig_atomic_t g_stop;
static long g_names, g_connects, g_fds, g_leaked, g_admitted;
static char g_seen[MAX_NAMES][108];
static int g_nseen;
static struct {
    int fd;
    double until;
} g_silent[MAX_SILENT];
static int g_nsilent, g_max_silent = 20, g_hold_ms = 3000;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static int seen(const char *name)
{
    for (int i = 0; i < g_nseen; i++)
        if (!strcmp(g_seen[i], name))
            return 1;
    if (g_nseen < MAX_NAMES)
        snprintf(g_seen[g_nseen++], sizeof g_seen[0], "%s", name);
    else /* forget the oldest half */
        g_nseen = 0;
    return 0;
}

static int connect_abstract(const char *name)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    if (n + 1 > sizeof sa.sun_path)
        return -1;
    memcpy(sa.sun_path + 1, name, n);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa,
                (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) != 0) {
        close(fd);
        return -1;
    }
    g_connects++;
    return fd;
}

/* Everything that arrives within ms: bytes and descriptors (closed at once). */
static long drain(int fd, int ms, long *bytes)
{
    long fds = 0;
    double end = now_s() + ms / 1e3;
    *bytes = 0;
    for (;;) {
        int left = (int)((end - now_s()) * 1e3);
        struct pollfd p = {fd, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, left) <= 0)
            break;
        char buf[4096], cbuf[CMSG_SPACE(64 * sizeof(int))];
        struct iovec iov = {buf, sizeof buf};
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
        ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n <= 0)
            break;
        *bytes += n;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < k; i++) {
                int got;
                memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
                char link[64], target[256] = "";
                snprintf(link, sizeof link, "/proc/self/fd/%d", got);
                ssize_t t = readlink(link, target, sizeof target - 1);
                target[t > 0 ? t : 0] = '\0';
                fprintf(stderr, "stranger: GOT a descriptor: %s\n", target);
                close(got);
                fds++;
            }
        }
    }
    return fds;
}

static void be32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (24 - 8 * i));
}

/* Claim to be PE `pe` at a local fd-exchange socket: in today's hello (with
 * a made-up proof), or, old_style, as the bare rank the first version took. */
static void claim_local(const char *name, int pe, int old_style)
{
    int fd = connect_abstract(name);
    if (fd < 0)
        return;
    struct {
        uint32_t magic;
        int32_t from, to;
        uint8_t proof[16];
    } h = {0x5553484cu, pe, 0, {0}};
    int32_t rank = pe;
    struct iovec iov = {old_style ? (void *)&rank : (void *)&h, old_style ? sizeof rank : sizeof h};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    /* Two memfds of our own, as a PE's heap and data segments would come. */
    int mine[2] = {memfd_create("stranger-heap", MFD_CLOEXEC),
                   memfd_create("stranger-data", MFD_CLOEXEC)};
    char cbuf[CMSG_SPACE(sizeof mine)];
    if (mine[0] >= 0 && mine[1] >= 0 && ftruncate(mine[0], 1l << 30) == 0 &&
        ftruncate(mine[1], 1l << 30) == 0) {
        memset(cbuf, 0, sizeof cbuf);
        mh.msg_control = cbuf;
        mh.msg_controllen = sizeof cbuf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof mine);
        memcpy(CMSG_DATA(c), mine, sizeof mine);
    }
    long bytes = 0;
    ssize_t sent = sendmsg(fd, &mh, MSG_NOSIGNAL);
    for (int i = 0; i < 2; i++)
        if (mine[i] >= 0)
            close(mine[i]);
    if (sent == (ssize_t)iov.iov_len) {
        g_fds += drain(fd, 150, &bytes);
        g_leaked += bytes; /* a PE's server answers only a proven hello */
        if (bytes)
            fprintf(stderr, "stranger: %s answered %ld bytes\n", name, bytes);
    }
    close(fd);
}

/* Answer a bootstrap root's challenge with a made-up MAC. */
static void claim_root(int fd, const char *what)
{
    unsigned char ch[40], hello[64] = {0};
    long bytes = 0;
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0 || recv(fd, ch, sizeof ch, MSG_WAITALL) != (ssize_t)sizeof ch)
        return;
    be32(hello, 1);
    be32(hello + 12, 48);
    be32(hello + 16, 0x55534842u);
    be32(hello + 20, 2);
    be32(hello + 24, 1);
    be32(hello + 28, 2);
    if (send(fd, hello, sizeof hello, MSG_NOSIGNAL) != (ssize_t)sizeof hello)
        return;
    unsigned char st[17 + 256];
    if (poll(&p, 1, 300) > 0 && recv(fd, st, 17, MSG_WAITALL) == 17 && st[16] == 0) {
        fprintf(stderr, "stranger: %s ADMITTED a made-up hello\n", what);
        g_admitted++;
    }
    g_fds += drain(fd, 20, &bytes);
}

static void hold_silent(int fd)
{
    if (g_nsilent >= g_max_silent) {
        close(fd);
        return;
    }
    g_silent[g_nsilent].fd = fd;
    g_silent[g_nsilent++].until = now_s() + g_hold_ms / 1e3;
}

static void expire_silent(void)
{
    double t = now_s();
    for (int i = 0; i < g_nsilent;) {
        if (g_silent[i].until <= t || g_stop) {
            close(g_silent[i].fd);
            g_silent[i] = g_silent[--g_nsilent];
        } else {
            i++;
        }
    }
}

static void attack_name(const char *name)
{
    g_names++;
    if (!strncmp(name, "ushmem-fd-", 10)) {
        /* The PE number is in the name; claim to be each of a few others. */
        int owner = atoi(name + 10);
        for (int pe = 0; pe < 8; pe++)
            if (pe != owner)
                claim_local(name, pe, pe & 1);
        int s = connect_abstract(name);
        if (s >= 0)
            hold_silent(s);
        return;
    }
    /* A bootstrap root (ushrun's unix:@ushmem-<job>): silent, slow, then a hello. */
    for (int i = 0; i < 4; i++) {
        int s = connect_abstract(name);
        if (s >= 0)
            hold_silent(s);
    }
    int h = connect_abstract(name);
    if (h >= 0) {
        unsigned char half[8] = {0, 0, 0, 1};
        if (send(h, half, sizeof half, MSG_NOSIGNAL) > 0)
            hold_silent(h);
        else
            close(h);
    }
    int c = connect_abstract(name);
    if (c >= 0) {
        claim_root(c, name);
        close(c);
    }
}

static void scan_unix(void)
{
    FILE *f = fopen("/proc/net/unix", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *at = strstr(line, " @ushmem-");
        if (!at)
            continue;
        char *name = at + 2;
        name[strcspn(name, " \n")] = '\0';
        if (strncmp(name, "ushmem-test", 11) && !seen(name))
            attack_name(name);
    }
    fclose(f);
}

static void attack_tcp(int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return;
    }
    g_connects++;
    if (g_nsilent < g_max_silent) {
        hold_silent(fd);
        return;
    }
    claim_root(fd, "tcp root");
    close(fd);
}

/* -f: N idle connections, both ends ours (2 N sockets in the kernel's table). */
static int hold_idle(int n)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 4096) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &len) != 0)
        return 0;
    int held = 0;
    for (; held < n && !g_stop; held++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
            break;
        if (accept4(lfd, NULL, NULL, SOCK_CLOEXEC) < 0)
            break;
    }
    return held;
}

static void flood_tcp(int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
        g_connects++;
    else
        usleep(1000); /* nobody listens yet */
    close(fd);
}

int main(int argc, char **argv)
{
    double limit = 60;
    int port = 0, flood = 0, opt;
    const char *out = NULL;
    while ((opt = getopt(argc, argv, "t:s:w:p:f:o:")) != -1) {
        switch (opt) {
        case 't': limit = atof(optarg); break;
        case 's': g_max_silent = atoi(optarg) > MAX_SILENT ? MAX_SILENT : atoi(optarg); break;
        case 'w': g_hold_ms = atoi(optarg); break;
        case 'p': port = atoi(optarg); break;
        case 'f': flood = atoi(optarg); break;
        case 'o': out = optarg; break;
        default:
            fprintf(stderr,
                    "usage: %s [-t s] [-s silent] [-w hold_ms] [-p port] [-f held] [-o file]\n",
                    argv[0]);
            return 2;
        }
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    double end = now_s() + limit;
    if (flood > 0) {
        fprintf(stderr, "stranger: holding %d idle connections\n", hold_idle(flood));
        while (!g_stop && now_s() < end)
            if (port)
                flood_tcp(port);
            else
                pause();
    }
    while (!g_stop && now_s() < end) {
        scan_unix();
        if (port)
            attack_tcp(port);
        expire_silent();
    }
    g_stop = 1;
    expire_silent();
    char line[200];
    snprintf(line, sizeof line,
             "stranger: names %ld connects %ld fds %ld leaked_bytes %ld "
             "admitted %ld\n",
             g_names, g_connects, g_fds, g_leaked, g_admitted);
    fputs(line, stdout);
    if (out) {
        FILE *f = fopen(out, "w");
        if (f) {
            fputs(line, f);
            fclose(f);
        }
    }
    return g_fds || g_leaked || g_admitted ? 1 : 0;
}
