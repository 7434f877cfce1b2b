/* Liveness: bringing the job down (a peer's ABORT, a peer that vanished),
 * the monitor thread that watches the connections, and abort. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/star_priv.h"
#include "core/core.h"
#include "sync/stacks.h"

/* Peers this PE talks to, [peer_lo, peer_hi): root all others, the others root alone. */
static int peer_lo(void)
{
    return ushmemi_star.rank ? 0 : 1;
}

static int peer_hi(void)
{
    return ushmemi_star.rank ? 1 : ushmemi_star.nranks;
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

/* ---- bringing the job down ---- */

/* Root: tell every PE but `from` to exit with status, then exit. */
static _Noreturn void root_job_down(int from, int status, const char *msg)
{
    atomic_store(&ushmemi_star.abort_status, status);
    atomic_store(&ushmemi_star.aborting, 1);
    int64_t dl = ushmemi_star_deadline_in(1000);
    for (int k = 1; k < ushmemi_star.nranks; k++)
        if (k != from && ushmemi_star.fd[k] >= 0)
            ushmemi_star_send_abort(ushmemi_star.fd[k], status, msg, dl);
    for (int k = 1; k < ushmemi_star.nranks; k++)
        if (ushmemi_star.fd[k] >= 0)
            ushmemi_star_discard_unread(ushmemi_star.fd[k]);
    exit_now(status);
}

/* PE k sent ABORT{status, msg}: the job ends. Called with ushmemi_star.lock held. */
_Noreturn void ushmemi_star_got_abort(int k, int status, const char *msg)
{
    if (ushmemi_star.rank != 0)
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

/* PE k's connection dropped while the monitor was on. Called with ushmemi_star.lock held. */
static _Noreturn void peer_lost(int k)
{
    if (atomic_load(&ushmemi_star.aborting))
        exit_now(atomic_load(&ushmemi_star.abort_status)); /* we caused it */
    if (ushmemi_star.rank == 0) {
        say("ushmem: PE %d left the job without shmem_finalize (exited or killed); "
            "stopping all PEs",
            k);
        root_job_down(k, 1, "");
    }
    say("ushmem: PE %d: PE 0 left the job without shmem_finalize (exited or killed); stopping",
        ushmemi_star.rank);
    exit_now(1);
}

/* Peer k's stream ended or broke; it may have sent an ABORT first, which is
 * then the reason. Only valid where the stream from k is at a frame boundary. */
static void look_for_abort(int k)
{
    int64_t dl = ushmemi_star_deadline_in(200);
    uint32_t type, tag;
    uint64_t len;
    while (ushmemi_star_frame_recv_hdr(ushmemi_star.fd[k], &type, &tag, &len, dl) == 0) {
        if (type == MSG_ABORT) {
            int status;
            char msg[ABORT_MSG_MAX + 1];
            if (ushmemi_star_read_abort(ushmemi_star.fd[k], len, dl, &status, msg) == 0)
                ushmemi_star_got_abort(k, status, msg);
            return;
        }
        if (ushmemi_star_io_skip(ushmemi_star.fd[k], len, dl))
            return;
    }
}

/* Main thread, inside an operation: peer k's stream ended. at_boundary: no
 * frame from k is half read (so an ABORT behind it can still be found). */
int ushmemi_star_peer_gone(int k, const char *during, int at_boundary)
{
    if (at_boundary)
        look_for_abort(k);
    if (atomic_load(&ushmemi_star.mon_active))
        peer_lost(k);
    if (k == 0 && ushmemi_star.rank != 0)
        BS_ERR("%s: PE 0 (root) closed its connection (it exited or failed; see its message)",
               during);
    else
        BS_ERR("%s: PE %d closed its connection (it exited or failed; see its message)", during, k);
    return USHMEM_EBOOTSTRAP;
}

/* ---- liveness monitor ---- */

/* Peer k hung up while the monitor is on: find out why, and end the job. */
static void monitor_hangup(int k)
{
    pthread_mutex_lock(&ushmemi_star.lock);
    if (!atomic_load(&ushmemi_star.mon_active)) {
        pthread_mutex_unlock(&ushmemi_star.lock); /* finalize is under way */
        return;
    }
    if (!ushmemi_star.failed) /* streams in step: what is left is whole frames */
        look_for_abort(k);
    peer_lost(k);
}

static void *monitor_main(void *arg)
{
    (void)arg;
    int n = 1;
    ushmemi_star.mon_pfd[0] = (struct pollfd){ushmemi_star.wake_fd, POLLIN, 0};
    for (int k = peer_lo(); k < peer_hi(); k++) {
        ushmemi_star.mon_pfd[n] = (struct pollfd){ushmemi_star.fd[k], POLLRDHUP, 0};
        ushmemi_star.mon_who[n++] = k;
    }
    for (;;) {
        int r = poll(ushmemi_star.mon_pfd, (nfds_t)n, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            say("ushmem: PE %d: liveness monitor: poll: %s; monitor stopped", ushmemi_star.rank,
                strerror(errno));
            break;
        }
        if (ushmemi_star.mon_pfd[0].revents || !atomic_load(&ushmemi_star.mon_active))
            break;
        for (int i = 1; i < n; i++) {
            if (ushmemi_star.mon_pfd[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
                monitor_hangup(ushmemi_star.mon_who[i]); /* returns only when stopping */
                ushmemi_star.mon_pfd[i].fd = -1;
            }
        }
    }
    return NULL;
}

/* What monitor_start set up for the thread: the wake-up fd and the poll set. */
static void monitor_release(void)
{
    if (ushmemi_star.wake_fd >= 0)
        close(ushmemi_star.wake_fd);
    ushmemi_star.wake_fd = -1;
    free(ushmemi_star.mon_pfd);
    free(ushmemi_star.mon_who);
    ushmemi_star.mon_pfd = NULL;
    ushmemi_star.mon_who = NULL;
}

int ushmemi_bootstrap_monitor_start(void)
{
    if (!ushmemi_star.connected || ushmemi_star.nranks < 2 || ushmemi_star.mon_started)
        return 0;
    ushmemi_star.mon_pfd = calloc((size_t)ushmemi_star.nranks + 1, sizeof *ushmemi_star.mon_pfd);
    ushmemi_star.mon_who = calloc((size_t)ushmemi_star.nranks + 1, sizeof *ushmemi_star.mon_who);
    ushmemi_star.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int err = !ushmemi_star.mon_pfd || !ushmemi_star.mon_who ? ENOMEM
              : ushmemi_star.wake_fd < 0                     ? errno
                                                             : 0;
    if (err == 0) {
        /* Signals belong to the application's threads, not ours. */
        sigset_t all, old;
        ushmemi_helper_thread_mask(&all, ushmemi_env.hang_stacks);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        atomic_store(&ushmemi_star.mon_active, 1);
        err = pthread_create(&ushmemi_star.mon, NULL, monitor_main, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (err) {
        atomic_store(&ushmemi_star.mon_active, 0);
        BS_ERR("cannot start the liveness monitor: %s", strerror(err));
        monitor_release();
        return USHMEM_ESYS;
    }
    ushmemi_star.mon_started = 1;
    return 0;
}

void ushmemi_bootstrap_monitor_stop(void)
{
    if (!ushmemi_star.mon_started)
        return;
    atomic_store(&ushmemi_star.mon_active, 0);
    uint64_t one = 1;
    ssize_t w = write(ushmemi_star.wake_fd, &one, sizeof one);
    (void)w;
    pthread_join(ushmemi_star.mon, NULL);
    monitor_release();
    ushmemi_star.mon_started = 0;
}

int ushmemi_bootstrap_watch_fds(int *fds, int max)
{
    int n = 0;
    if (!ushmemi_star.connected)
        return 0;
    for (int k = peer_lo(); k < peer_hi() && n < max; k++)
        if (ushmemi_star.fd[k] >= 0)
            fds[n++] = ushmemi_star.fd[k];
    return n;
}

void ushmemi_bootstrap_abort(int status, const char *msg)
{
    if (!ushmemi_star.connected) { /* mpi hook: another bootstrap (mpi) aborts its own way */
        const ushmemi_bootstrap_t *bs = ushmemi_bootstrap();
        if (bs->ops && bs->ops->abort && bs->nranks > 1)
            bs->ops->abort(status, msg);
        return;
    }
    if (ushmemi_star.nranks < 2)
        return;
    atomic_store(&ushmemi_star.abort_status, status);
    atomic_store(&ushmemi_star.aborting, 1);
    /* The main thread may be stuck inside an operation of another thread's
     * making; do not wait for it forever. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    int locked = pthread_mutex_timedlock(&ushmemi_star.lock, &ts) == 0;
    int64_t dl = ushmemi_star_deadline_in(1000);
    for (int k = peer_lo(); k < peer_hi(); k++) {
        if (ushmemi_star.fd[k] >= 0)
            ushmemi_star_send_abort(ushmemi_star.fd[k], status, msg, dl);
    }
    if (locked) {
        for (int k = peer_lo(); k < peer_hi(); k++) {
            if (ushmemi_star.fd[k] >= 0)
                ushmemi_star_discard_unread(ushmemi_star.fd[k]);
        }
        pthread_mutex_unlock(&ushmemi_star.lock);
    }
}
