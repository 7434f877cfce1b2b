/* shm transport: peers on this host map each other's segments.
 *
 * Every segment is a memfd. Each PE listens on an abstract unix socket (no file
 * system entry) and hands its memfds to every local peer with SCM_RIGHTS; the
 * receiver maps them and closes the descriptors. After attach nothing of the
 * exchange remains: no socket, no name, no file. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "transport/transport.h"

#define HOSTID_LEN 96
#define SOCKNAME_LEN 48

typedef struct {
    char hostid[HOSTID_LEN];
    char sock[SOCKNAME_LEN]; /* abstract name without the leading NUL */
    uint64_t seg_size[USHMEMI_NSEG];
    int32_t rank;
} shm_card_t;

static shm_card_t *cards; /* [n_pes] after attach */
static unsigned char *is_local;

static int local_hostid(char *out)
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
    return 0;
}

static int shm_init(void)
{
    return 0;
}

static void shm_fini(void) {}

static int shm_reachable(int pe, ushmemi_mem_kind_t kind)
{
    return kind == USHMEMI_MEM_HOST && is_local && is_local[pe];
}

static void sock_addr(struct sockaddr_un *sa, socklen_t *len, const char *name)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    size_t n = strlen(name);
    memcpy(sa->sun_path + 1, name, n);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* One message: our rank plus one descriptor per present segment. */
static int send_fds(int sock)
{
    int fds[USHMEMI_NSEG], nfd = 0;
    int32_t rank = ushmemi_g.my_pe;
    for (int s = 0; s < USHMEMI_NSEG; s++)
        if (ushmemi_g.seg[s].size)
            fds[nfd++] = ushmemi_g.seg[s].fd;
    char cbuf[CMSG_SPACE(sizeof fds)];
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

static int wait_fd(int fd, short ev, int timeout_ms)
{
    struct pollfd p = {fd, ev, 0};
    int r;
    do
        r = poll(&p, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    return r > 0 ? 0 : USHMEM_ETIMEOUT;
}

/* Receive a peer's descriptors and map its segments. */
static int recv_and_map(int sock, int timeout_ms, const char *call)
{
    int32_t rank = -1;
    int fds[USHMEMI_NSEG];
    char cbuf[CMSG_SPACE(sizeof fds)];
    struct iovec iov = {&rank, sizeof rank};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                         .msg_controllen = sizeof cbuf};
    if (wait_fd(sock, POLLIN, timeout_ms)) {
        ushmemi_error(call, "shm: a local peer did not send its segments in time");
        return USHMEM_ETIMEOUT;
    }
    ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n != (ssize_t)sizeof rank || rank < 0 || rank >= ushmemi_g.n_pes || !is_local[rank]) {
        ushmemi_error(call, "shm: bad segment message from a local peer");
        return USHMEM_EBOOTSTRAP;
    }
    int nfd = 0;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        nfd = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        memcpy(fds, CMSG_DATA(c), sizeof(int) * (size_t)nfd);
    }
    int rc = 0, k = 0;
    for (int s = 0; s < USHMEMI_NSEG; s++) {
        size_t size = cards[rank].seg_size[s];
        if (!size || !ushmemi_g.seg[s].size)
            continue;
        if (k >= nfd) {
            rc = USHMEM_EBOOTSTRAP;
            break;
        }
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fds[k], 0);
        if (p == MAP_FAILED) {
            ushmemi_error(call, "shm: cannot map PE %d's symmetric %s (%zu bytes): %s%s", rank,
                          s == USHMEMI_SEG_HEAP ? "heap" : "data", size, strerror(errno),
                          s == USHMEMI_SEG_HEAP ? "; lower SHMEM_SYMMETRIC_SIZE" : "");
            rc = USHMEM_ENOMEM;
            break;
        }
        ushmemi_g.seg[s].peer[rank] = p;
        k++;
    }
    for (int i = 0; i < nfd; i++)
        close(fds[i]);
    return rc;
}

static int shm_attach(void)
{
    static const char call[] = "shmem_init";
    const ushmemi_bootstrap_t *bs = ushmemi_bootstrap();
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    int timeout_ms = (int)ushmemi_env.bootstrap_timeout * 1000;
    shm_card_t mine;
    int lsock = -1, rc = 0, gathered = 0;
    int *lower = NULL;

    cards = calloc((size_t)n, sizeof *cards);
    is_local = calloc((size_t)n, 1);
    lower = malloc(sizeof(int) * (size_t)n);
    if (!cards || !is_local || !lower) {
        rc = USHMEM_ENOMEM;
        goto out;
    }
    memset(&mine, 0, sizeof mine);
    local_hostid(mine.hostid);
    unsigned char rnd[12];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        rc = USHMEM_ESYS;
        goto out;
    }
    int off = snprintf(mine.sock, SOCKNAME_LEN, "ushmem-shm-%d-", me);
    for (size_t i = 0; i < sizeof rnd && off < SOCKNAME_LEN - 3; i++)
        off += snprintf(mine.sock + off, SOCKNAME_LEN - (size_t)off, "%02x", rnd[i]);
    for (int s = 0; s < USHMEMI_NSEG; s++)
        mine.seg_size[s] = ushmemi_g.seg[s].size;
    mine.rank = me;

    int nlocal_higher = 0, nlocal = 0;
    lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa;
    socklen_t salen;
    sock_addr(&sa, &salen, mine.sock);
    if (lsock < 0 || bind(lsock, (struct sockaddr *)&sa, salen) != 0 || listen(lsock, n) != 0) {
        ushmemi_error(call, "shm: cannot listen on an abstract socket: %s", strerror(errno));
        rc = USHMEM_ESYS;
        /* Still join the allgather so the peers do not wait for us. */
        mine.hostid[0] = '\0';
    }
    int brc = bs->ops->allgather(&mine, cards, sizeof mine);
    if (brc) {
        rc = brc;
        goto out;
    }
    gathered = 1;
    if (rc)
        goto out;
    for (int pe = 0; pe < n; pe++) {
        is_local[pe] = cards[pe].hostid[0] && !strcmp(cards[pe].hostid, mine.hostid);
        if (is_local[pe]) {
            nlocal++;
            if (pe > me)
                nlocal_higher++;
        }
    }
    ushmemi_g.local_size = nlocal;
    /* Symmetric static data needs the same executable everywhere. */
    for (int pe = 0; pe < n; pe++) {
        if (cards[pe].seg_size[USHMEMI_SEG_DATA] != mine.seg_size[USHMEMI_SEG_DATA]) {
            ushmemi_debug(call, "PE %d's static data segment differs in size (different "
                                "executable?); globals are not symmetric in this job", pe);
            ushmemi_g.seg[USHMEMI_SEG_DATA].size = 0;
            for (int q = 0; q < n; q++)
                cards[q].seg_size[USHMEMI_SEG_DATA] = 0;
            break;
        }
        if (cards[pe].seg_size[USHMEMI_SEG_HEAP] != mine.seg_size[USHMEMI_SEG_HEAP]) {
            ushmemi_error(call, "PE %d has a %llu-byte heap, this PE %llu: set the same "
                                "SHMEM_SYMMETRIC_SIZE on every PE", pe,
                          (unsigned long long)cards[pe].seg_size[USHMEMI_SEG_HEAP],
                          (unsigned long long)mine.seg_size[USHMEMI_SEG_HEAP]);
            rc = USHMEM_EINVAL;
        }
    }
    if (rc)
        goto out;

    /* Connect to every lower local rank and send; accept every higher one,
     * receive and answer; then read the lower ranks' answers. Sends are small
     * and never block, so the order cannot deadlock. */
    int nlower = 0;
    for (int pe = 0; pe < me && rc == 0; pe++) {
        if (!is_local[pe])
            continue;
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sock_addr(&sa, &salen, cards[pe].sock);
        if (s < 0 || connect(s, (struct sockaddr *)&sa, salen) != 0 || send_fds(s) != 0) {
            ushmemi_error(call, "shm: cannot reach local PE %d: %s", pe, strerror(errno));
            if (s >= 0)
                close(s);
            rc = USHMEM_EBOOTSTRAP;
            break;
        }
        lower[nlower++] = s;
    }
    for (int i = 0; i < nlocal_higher && rc == 0; i++) {
        if (wait_fd(lsock, POLLIN, timeout_ms)) {
            ushmemi_error(call, "shm: local peers did not connect within %ld s",
                          ushmemi_env.bootstrap_timeout);
            rc = USHMEM_ETIMEOUT;
            break;
        }
        int s = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
        if (s < 0) {
            rc = USHMEM_ESYS;
            break;
        }
        rc = recv_and_map(s, timeout_ms, call);
        if (rc == 0)
            rc = send_fds(s);
        close(s);
    }
    for (int i = 0; i < nlower; i++) {
        if (rc == 0)
            rc = recv_and_map(lower[i], timeout_ms, call);
        close(lower[i]);
    }
out:
    if (lsock >= 0)
        close(lsock);
    free(lower);
    /* Agree on success so no PE goes on with a half-connected job. */
    if (gathered) {
        int32_t ok = rc == 0, *all = calloc((size_t)n, sizeof *all);
        if (all && bs->ops->allgather(&ok, all, sizeof ok) == 0) {
            for (int pe = 0; pe < n; pe++)
                if (!all[pe] && rc == 0) {
                    ushmemi_error(call, "shm: PE %d failed to attach", pe);
                    rc = USHMEM_EBOOTSTRAP;
                }
        }
        free(all);
    }
    return rc;
}

static void shm_detach(void)
{
    for (int s = 0; s < USHMEMI_NSEG; s++) {
        ushmemi_seg_t *seg = &ushmemi_g.seg[s];
        if (!seg->peer || !cards)
            continue;
        for (int pe = 0; pe < ushmemi_g.n_pes; pe++) {
            if (pe != ushmemi_g.my_pe && seg->peer[pe]) {
                munmap(seg->peer[pe], cards[pe].seg_size[s]);
                seg->peer[pe] = NULL;
            }
        }
    }
    free(cards);
    cards = NULL;
    free(is_local);
    is_local = NULL;
}

static const char *shm_unusable_reason(void)
{
    return NULL; /* memfd + unix sockets: always present on Linux */
}

static int shm_quiet(void)
{
    atomic_thread_fence(memory_order_seq_cst);
    return 0;
}

const ushmemi_transport_ops_t ushmemi_transport_shm = {
    .name = "shm",
    .caps = USHMEMI_CAP_MAP,
    .unusable_reason = shm_unusable_reason,
    .init = shm_init,
    .fini = shm_fini,
    .reachable = shm_reachable,
    .attach = shm_attach,
    .detach = shm_detach,
    .fence = shm_quiet,
    .quiet = shm_quiet,
};
