/* The bootstrap star's state, its collectives (gathered at rank 0 and sent
 * back to all), init and the ops table. star_priv.h says how the star works
 * and which file holds what. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "bootstrap/star_priv.h"
#include "core/core.h"
#include "core/state.h"

/* Non-root PEs wait this much longer than root for the end of init, so root's
 * message (which PE never joined) comes first and theirs just point to it. */
#define JOIN_GRACE_MS 5000

ushmemi_star_t ushmemi_star = {
    .listen_fd = -1,
    .wake_fd = -1,
    .call = "shmem_init",
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

void ushmemi_bootstrap_error(const char *call, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* After init the call is "bootstrap" itself: do not say it twice. */
    const char *prefix = strcmp(call, "bootstrap") ? "bootstrap: " : "";
    if (ushmemi_g.n_pes == 0 && ushmemi_star.nranks > 1)
        ushmemi_error(call, "%sPE %d of %d: %s", prefix, ushmemi_star.rank, ushmemi_star.nranks,
                      msg);
    else
        ushmemi_error(call, "%s%s", prefix, msg);
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
        return len / (uint64_t)ushmemi_star.nranks;
    return len;
}

void ushmemi_star_format_ranks(char *buf, size_t size, const unsigned char *set, int n, int *count)
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
    int fd = ushmemi_star.fd[k];
    int from_root = k == 0 && ushmemi_star.rank != 0;
    describe(mine, sizeof mine, want_tag, per_pe_len(from_root, want_tag, len));
    int rc = ushmemi_star_frame_recv_hdr(fd, &type, &tag, &flen, dl);
    if (rc == 0 && type == MSG_ABORT) {
        int status;
        char msg[ABORT_MSG_MAX + 1];
        rc = ushmemi_star_read_abort(fd, flen, dl, &status, msg);
        if (rc == 0)
            ushmemi_star_got_abort(k, status, msg);
    }
    if (rc == IO_EOF)
        return ushmemi_star_peer_gone(k, mine, 1);
    if (rc == USHMEM_ETIMEOUT) {
        if (k == 0 && ushmemi_star.rank != 0)
            BS_ERR("%s: no answer from root (PE 0) within %ld s", mine, ushmemi_star_timeout_s());
        else
            BS_ERR("%s: PE %d stopped in the middle of a message for %ld s", mine, k,
                   ushmemi_star_timeout_s());
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
               k, theirs, ushmemi_star.rank, wanted ? "" : "the rest of ", mine);
        return USHMEM_EBOOTSTRAP;
    }
    rc = ushmemi_star_io_read(fd, dst, len, dl);
    if (rc == IO_EOF)
        return ushmemi_star_peer_gone(k, mine, 0);
    if (rc == USHMEM_ETIMEOUT)
        BS_ERR("%s: PE %d stopped in the middle of a message for %ld s", mine, k,
               ushmemi_star_timeout_s());
    else if (rc)
        BS_ERR("%s: receiving from PE %d: %s", mine, k, strerror(errno));
    return rc;
}

static int send_frame_to(int k, uint32_t tag, const void *buf, size_t len, int64_t dl)
{
    int rc = ushmemi_star_frame_send(ushmemi_star.fd[k], MSG_DATA, tag, buf, len, dl);
    if (rc == 0)
        return 0;
    char what[96];
    describe(what, sizeof what, tag, per_pe_len(ushmemi_star.rank == 0, tag, len));
    if (rc == IO_EOF)
        return ushmemi_star_peer_gone(k, what, 1);
    if (rc == USHMEM_ETIMEOUT)
        BS_ERR("%s: PE %d took nothing for %ld s", what, k, ushmemi_star_timeout_s());
    else
        BS_ERR("%s: sending to PE %d: %s", what, k, strerror(errno));
    return rc;
}

/* Root: one DATA frame of len bytes from each wanted PE (all, or only `only`)
 * into base + k * stride, watching every connection for ABORT or hangup. */
static int root_gather(uint32_t tag, char *base, size_t stride, size_t len, int only, int64_t dl)
{
    int n = ushmemi_star.nranks, npeer = n - 1, left = 0, rc = 0;
    struct pollfd *pfd = calloc((size_t)npeer, sizeof *pfd);
    unsigned char *want = calloc((size_t)n, 1);
    if (!pfd || !want) {
        BS_ERR("out of memory");
        rc = USHMEM_ENOMEM;
        goto out;
    }
    for (int k = 1; k < n; k++) {
        pfd[k - 1] = (struct pollfd){ushmemi_star.fd[k], POLLIN, 0};
        want[k] = only < 0 || only == k;
        left += want[k];
    }
    while (left > 0 && rc == 0) {
        int r = poll(pfd, (nfds_t)npeer, ushmemi_star_ms_left(dl));
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
            ushmemi_star_format_ranks(list, sizeof list, want, n, &cnt);
            BS_ERR("%s: PE%s %s did not arrive within %ld s", what, cnt > 1 ? "s" : "", list,
                   ushmemi_star_timeout_s());
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
    for (int k = 1; k < ushmemi_star.nranks; k++) {
        int rc = send_frame_to(k, tag, buf, len, dl);
        if (rc)
            return rc;
    }
    return 0;
}

static int do_allgather(int op, const void *in, void *out, size_t len, int64_t dl)
{
    size_t n = (size_t)ushmemi_star.nranks;
    uint32_t tag = make_tag(op, 0);
    if (len && n > SIZE_MAX / len) {
        BS_ERR("allgather of %zu bytes from %zu PEs overflows", len, n);
        return USHMEM_EINVAL;
    }
    if (ushmemi_star.rank == 0 && len && out != in)
        memmove(out, in, len);
    if (n == 1)
        return 0;
    if (ushmemi_star.rank == 0) {
        int rc = root_gather(tag, out, len, len, -1, dl);
        return rc ? rc : root_send_all(tag, out, n * len, dl);
    }
    int rc = send_frame_to(0, tag, in, len, dl);
    return rc ? rc : recv_frame(0, tag, out, n * len, 1, dl);
}

static int do_bcast(void *buf, size_t len, int root, int64_t dl)
{
    uint32_t tag = make_tag(OP_BCAST, root);
    if (root < 0 || root >= ushmemi_star.nranks) {
        BS_ERR("bcast from PE %d: no such PE (%d PEs)", root, ushmemi_star.nranks);
        return USHMEM_EINVAL;
    }
    if (ushmemi_star.nranks == 1)
        return 0;
    if (ushmemi_star.rank == 0) {
        int rc = root != 0 ? root_gather(tag, buf, 0, len, root, dl) : 0;
        /* PE `root` gets its data back: that is its acknowledgement, so it
         * cannot run ahead into the next collective while root still relays. */
        return rc ? rc : root_send_all(tag, buf, len, dl);
    }
    int rc = ushmemi_star.rank == root ? send_frame_to(0, tag, buf, len, dl) : 0;
    return rc ? rc : recv_frame(0, tag, buf, len, 1, dl);
}

static int op_enter(const char *what)
{
    pthread_mutex_lock(&ushmemi_star.lock);
    if (!ushmemi_star.connected) {
        pthread_mutex_unlock(&ushmemi_star.lock);
        ushmemi_error("bootstrap", "%s called before init or after fini", what);
        return USHMEM_ESTATE;
    }
    if (ushmemi_star.failed) {
        pthread_mutex_unlock(&ushmemi_star.lock);
        BS_ERR("%s: an earlier bootstrap operation failed; the PEs are out of step", what);
        return USHMEM_EBOOTSTRAP;
    }
    return 0;
}

static int op_leave(int rc)
{
    if (rc)
        ushmemi_star.failed = 1;
    pthread_mutex_unlock(&ushmemi_star.lock);
    return rc;
}

static int bs_allgather(const void *in, void *out, size_t len)
{
    int rc = op_enter("allgather");
    if (rc)
        return rc;
    return op_leave(do_allgather(OP_ALLGATHER, in, out, len,
                                 ushmemi_star_deadline_in(ushmemi_star.timeout_ms)));
}

static int bs_bcast(void *buf, size_t len, int root)
{
    int rc = op_enter("bcast");
    if (rc)
        return rc;
    return op_leave(do_bcast(buf, len, root, ushmemi_star_deadline_in(ushmemi_star.timeout_ms)));
}

static int bs_barrier(void)
{
    int rc = op_enter("barrier");
    if (rc)
        return rc;
    return op_leave(
        do_allgather(OP_BARRIER, NULL, NULL, 0, ushmemi_star_deadline_in(ushmemi_star.timeout_ms)));
}

/* Called with ushmemi_star.lock held, or before anything else runs. */
static void close_all(void)
{
    if (ushmemi_star.fd) {
        for (int k = 0; k < ushmemi_star.nranks; k++)
            if (ushmemi_star.fd[k] >= 0)
                close(ushmemi_star.fd[k]);
        free(ushmemi_star.fd);
        ushmemi_star.fd = NULL;
    }
    if (ushmemi_star.listen_fd >= 0) {
        close(ushmemi_star.listen_fd);
        ushmemi_star.listen_fd = -1;
    }
    if (ushmemi_star.unlink_path[0]) {
        unlink(ushmemi_star.unlink_path);
        ushmemi_star.unlink_path[0] = '\0';
    }
}

static void bs_fini(void)
{
    ushmemi_bootstrap_monitor_stop();
    pthread_mutex_lock(&ushmemi_star.lock);
    close_all();
    ushmemi_star.connected = 0;
    ushmemi_star.failed = 0;
    ushmemi_star.nranks = 0;
    ushmemi_star.call = "shmem_init";
    pthread_mutex_unlock(&ushmemi_star.lock);
}

static const ushmemi_bootstrap_ops_t star_ops[] = {
    [USHMEMI_BS_SINGLE] = {"single", bs_allgather, bs_bcast, bs_barrier, bs_fini, NULL},
    [USHMEMI_BS_LAUNCHER] = {"launcher", bs_allgather, bs_bcast, bs_barrier, bs_fini, NULL},
    [USHMEMI_BS_TORCHRUN] = {"torchrun", bs_allgather, bs_bcast, bs_barrier, bs_fini, NULL},
    [USHMEMI_BS_UID] = {"uid", bs_allgather, bs_bcast, bs_barrier, bs_fini, NULL},
};

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
    uint8_t *all = malloc((size_t)ushmemi_star.nranks * sizeof id);
    if (!all) {
        BS_ERR("out of memory");
        return USHMEM_ENOMEM;
    }
    int rc = do_allgather(OP_HOSTS, id, all, sizeof id, dl);
    if (rc == 0) {
        ushmemi_star.local_rank = 0;
        ushmemi_star.local_size = 0;
        for (int k = 0; k < ushmemi_star.nranks; k++) {
            if (memcmp(all + (size_t)k * sizeof id, id, sizeof id))
                continue;
            ushmemi_star.local_size++;
            if (k < ushmemi_star.rank)
                ushmemi_star.local_rank++;
        }
    }
    free(all);
    return rc;
}

int ushmemi_bootstrap_star_init(ushmemi_bootstrap_t *bs, const ushmemi_bs_config_t *cfg)
{
    int listen_fd = cfg->listen_fd, rc = 0;
    if (ushmemi_star.connected) {
        ushmemi_error("shmem_init", "bootstrap: already initialized");
        if (listen_fd >= 0)
            close(listen_fd);
        return USHMEM_ESTATE;
    }
    pthread_mutex_lock(&ushmemi_star.lock);
    ushmemi_star.rank = cfg->rank;
    ushmemi_star.nranks = cfg->nranks;
    ushmemi_star.failed = 0;
    ushmemi_star.call = cfg->call ? cfg->call : "shmem_init";
    ushmemi_star.timeout_ms =
        ushmemi_env.bootstrap_timeout > 0 ? ushmemi_env.bootstrap_timeout * 1000 : 0;
    atomic_store(&ushmemi_star.aborting, 0);
    ushmemi_star.fd = malloc((size_t)ushmemi_star.nranks * sizeof *ushmemi_star.fd);
    if (!ushmemi_star.fd) {
        BS_ERR("out of memory");
        rc = USHMEM_ENOMEM;
        goto fail;
    }
    for (int k = 0; k < ushmemi_star.nranks; k++)
        ushmemi_star.fd[k] = -1;
    int64_t dl = ushmemi_star_deadline_in(ushmemi_star.timeout_ms);
    if (ushmemi_star.nranks > 1 && ushmemi_star.rank == 0) {
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
                memcpy(ushmemi_star.unlink_path, un->sun_path, sizeof ushmemi_star.unlink_path);
        }
        ushmemi_star.listen_fd = listen_fd;
        listen_fd = -1;
        rc = ushmemi_star_root_join(cfg->secret, dl);
        /* Everyone is in: nobody else may join, and the name can go. */
        close(ushmemi_star.listen_fd);
        ushmemi_star.listen_fd = -1;
        if (ushmemi_star.unlink_path[0]) {
            unlink(ushmemi_star.unlink_path);
            ushmemi_star.unlink_path[0] = '\0';
        }
    } else if (ushmemi_star.nranks > 1) {
        rc = ushmemi_star_join_root(cfg, dl);
        dl = ushmemi_star_deadline_in(
            ushmemi_star.timeout_ms > 0 ? ushmemi_star.timeout_ms + JOIN_GRACE_MS : 0);
    }
    if (rc == 0)
        rc = exchange_hosts(dl);
    if (rc)
        goto fail;
    ushmemi_star.connected = 1;
    ushmemi_star.call = "bootstrap";
    pthread_mutex_unlock(&ushmemi_star.lock);
    bs->rank = cfg->rank;
    bs->nranks = cfg->nranks;
    bs->local_rank = cfg->local_rank >= 0 ? cfg->local_rank : ushmemi_star.local_rank;
    bs->ops = &star_ops[cfg->source];
    return 0;

fail:
    if (listen_fd >= 0)
        close(listen_fd);
    close_all();
    ushmemi_star.nranks = 0;
    ushmemi_star.call = "shmem_init";
    pthread_mutex_unlock(&ushmemi_star.lock);
    return rc;
}

int ushmemi_bootstrap_local_info(int *local_rank, int *local_size)
{
    if (!ushmemi_star.connected)
        return USHMEM_ESTATE;
    *local_rank = ushmemi_star.local_rank;
    *local_size = ushmemi_star.local_size;
    return 0;
}
