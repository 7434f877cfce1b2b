/* What the files of the bootstrap star share (private to them).
 *
 * The bootstrap star: rank 0 listens, the others connect and authenticate with
 * the job secret, and rank 0 relays every collective (gather to root, then send
 * the result to all). Setup only, a few small messages: a star is simple to
 * reason about and its failures are easy to name.
 *
 * Wire format: every message is a frame {u32 type, u32 tag, u64 len}, big
 * endian, followed by len bytes. A non-root PE never has more than one request
 * outstanding (it sends its part, then waits for root's answer before it can
 * send again), so anything root reads from a PE that has already sent its part
 * can only be an ABORT or the end of the stream.
 *
 * Threads: the main thread holds ushmemi_star.lock for a whole operation and
 * watches every connection while it waits, so it notices a dead peer itself.
 * The liveness monitor only polls for hangups (never POLLIN) and takes
 * ushmemi_star.lock before it reads anything, so it never steals a
 * collective's bytes.
 *
 * Files: sock.c bounded socket I/O, frames and addresses; join.c listening,
 * accepting, authenticating and the join protocol; star.c the state, the
 * collectives, init and the ops table; live.c the liveness monitor and
 * bringing the job down (abort). */
#ifndef USHMEM_BOOTSTRAP_STAR_PRIV_H
#define USHMEM_BOOTSTRAP_STAR_PRIV_H

#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/un.h>

#include "bootstrap/star.h"
#include "core/mac.h"

#define BS_MAGIC   0x55534842u /* "USHB" */
#define BS_VERSION 2u
enum { MSG_HELLO = 1, MSG_STATUS = 2, MSG_DATA = 3, MSG_ABORT = 4, MSG_CHALLENGE = 5 };
enum { OP_ALLGATHER = 1, OP_BCAST = 2, OP_BARRIER = 3, OP_HOSTS = 4 };
#define HDR_BYTES       16
#define NONCE_BYTES     16
#define CHALLENGE_BYTES (8 + NONCE_BYTES)
#define HELLO_BYTES     (16 + NONCE_BYTES + USHMEMI_MAC_BYTES)
#define STATUS_MAX      256
#define ABORT_MSG_MAX   200
#define IO_EOF          1 /* peer closed or reset the connection */

/* The star's state (star.c). */
typedef struct {
    int rank, nranks;
    int connected; /* init succeeded, fini not yet called */
    int failed;    /* an operation failed: the streams may be out of step */
    int *fd;       /* [nranks]; root: fd[k] talks to PE k; others: fd[0] to root */
    int listen_fd;
    char unlink_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int local_rank, local_size; /* from the host-id exchange */
    int64_t timeout_ms;         /* <= 0: no limit */
    const char *call;           /* API call named in error lines */
    pthread_mutex_t lock;       /* held for a whole operation; see top */
    int mon_started;
    pthread_t mon;
    int wake_fd;
    struct pollfd *mon_pfd;
    int *mon_who;
    _Atomic int mon_active; /* between monitor_start and monitor_stop */
    _Atomic int aborting;   /* this PE sent an ABORT and is about to exit */
    _Atomic int abort_status;
} ushmemi_star_t;

extern ushmemi_star_t ushmemi_star __attribute__((visibility("hidden")));

#define BS_ERR(...) ushmemi_bootstrap_error(ushmemi_star.call, __VA_ARGS__)

/* sock.c: time, byte order, and blocking I/O on non-blocking sockets bounded
 * by a deadline (dl: from ushmemi_star_deadline_in; INT64_MAX: none). */
int64_t ushmemi_star_now_ms(void);
int64_t ushmemi_star_deadline_in(int64_t ms);
int ushmemi_star_ms_left(int64_t dl);
long ushmemi_star_timeout_s(void);
void ushmemi_star_put32(unsigned char *p, uint32_t v);
uint32_t ushmemi_star_get32(const unsigned char *p);
uint64_t ushmemi_star_get64(const unsigned char *p);
int ushmemi_star_io_read(int fd, void *buf, size_t len, int64_t dl);
int ushmemi_star_io_skip(int fd, uint64_t len, int64_t dl);
int ushmemi_star_frame_send(int fd, uint32_t type, uint32_t tag, const void *buf, size_t len,
                            int64_t dl);
int ushmemi_star_frame_recv_hdr(int fd, uint32_t *type, uint32_t *tag, uint64_t *len, int64_t dl);
int ushmemi_star_read_abort(int fd, uint64_t len, int64_t dl, int *status, char *msg);
void ushmemi_star_send_abort(int fd, int status, const char *msg, int64_t dl);
void ushmemi_star_discard_unread(int fd);

/* join.c: root admits nranks - 1 PEs at ushmemi_star.listen_fd; the others
 * connect to cfg->addr and are admitted. 0 or an error after one line. */
int ushmemi_star_root_join(const uint8_t *secret, int64_t dl);
int ushmemi_star_join_root(const ushmemi_bs_config_t *cfg, int64_t dl);

/* star.c: the ranks k < n with set[k], as "1, 4, 7" (eight at most, then
 * " and N more"); *count: how many. */
void ushmemi_star_format_ranks(char *buf, size_t size, const unsigned char *set, int n, int *count);

/* live.c, called with ushmemi_star.lock held: PE k sent ABORT{status, msg}
 * (the job ends); PE k's stream ended while the main thread was inside an
 * operation (the job ends when the monitor is on, else USHMEM_EBOOTSTRAP after
 * one line). */
_Noreturn void ushmemi_star_got_abort(int k, int status, const char *msg);
int ushmemi_star_peer_gone(int k, const char *during, int at_boundary);

#endif
