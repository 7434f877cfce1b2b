/* The star every bootstrap source shares (private to src/bootstrap/).
 *
 * detect.c (launcher, torchrun, single) and uid.c only work out where rank 0
 * listens and what the secret is; the star does the rest: sockets and
 * addresses (sock.c), the handshake (join.c), the collectives (star.c), the
 * liveness monitor and abort (live.c); star_priv.h is what those share. */
#ifndef USHMEM_BOOTSTRAP_STAR_H
#define USHMEM_BOOTSTRAP_STAR_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "bootstrap/bootstrap.h"
#include "core/internal.h"

#define USHMEMI_BS_SECRET_BYTES 16

typedef enum {
    USHMEMI_BS_SINGLE,
    USHMEMI_BS_LAUNCHER,
    USHMEMI_BS_TORCHRUN,
    USHMEMI_BS_UID,
} ushmemi_bs_source_t;

/* Where rank 0 listens. For TCP, rank 0 binds the wildcard address of the same
 * family on the same port (the advertised host may be a name or a NAT address);
 * unix sockets are bound as given. */
typedef struct {
    struct sockaddr_storage sa;
    socklen_t len;
    char desc[160]; /* "tcp:10.0.0.1:29501", "unix:@name": for messages */
} ushmemi_bs_addr_t;

typedef struct {
    ushmemi_bs_source_t source;
    int rank, nranks;
    int local_rank; /* from the launcher, or -1: then computed from host ids */
    ushmemi_bs_addr_t addr;
    uint8_t secret[USHMEMI_BS_SECRET_BYTES];
    int listen_fd;    /* rank 0: a socket already listening at addr (uid), or -1 */
    const char *call; /* API call named in init's error lines (NULL: shmem_init) */
} ushmemi_bs_config_t;

/* Connect everyone (rank 0: listen, admit nranks-1 PEs; others: connect and
 * authenticate). Takes ownership of cfg->listen_fd. Prints one line on failure. */
int ushmemi_bootstrap_star_init(ushmemi_bootstrap_t *bs, const ushmemi_bs_config_t *cfg);

/* "unix:@name" (abstract), "unix:/path" or "tcp:host:port" ("tcp:[v6]:port").
 * Prints the reason and returns USHMEM_EINVAL on a malformed or unresolvable one;
 * what names the variable the spec came from, for the message. */
int ushmemi_bootstrap_addr_parse(const char *spec, const char *what, ushmemi_bs_addr_t *out);
int ushmemi_bootstrap_addr_tcp(const char *host, long port, const char *what,
                               ushmemi_bs_addr_t *out);

/* Bind and listen where rank 0 should for addr (see above). Prints nothing:
 * returns the socket or -errno, so callers can say what it means for them. */
int ushmemi_bootstrap_listen(const ushmemi_bs_addr_t *addr, int backlog);

/* The owner of the other end of an accepted TCP connection (owner.c): 0 and
 * *uid for a peer on this host, 1 for a peer on another host (the MAC decides),
 * -1 for a local peer whose owner cannot be learned (it closed its socket
 * already): count that one as a stranger. O(1) through netlink sock_diag where
 * the kernel has it. ushmemi_bootstrap_owner_done frees what the lookups keep. */
int ushmemi_bootstrap_tcp_owner(int fd, const struct sockaddr_storage *peer, uid_t *uid);
void ushmemi_bootstrap_owner_done(void);

/* FNV-1a 128 over parts (each followed by a NUL): host ids and the torchrun
 * secret. Not a cryptographic hash. */
void ushmemi_bootstrap_hash(uint8_t out[16], const char *const *parts, int nparts);

/* A parent of this process that is a PE of the same job (started with
 * name=value in its environment, as this process was) and has joined it
 * already (lineage.c), or 0. */
pid_t ushmemi_bootstrap_pe_ancestor(const char *name, const char *value);

/* Error line with the "bootstrap: " prefix (and "PE r of n: " while the core
 * does not know the PE yet), reported under call. */
void ushmemi_bootstrap_error(const char *call, const char *fmt, ...) USHMEMI_PRINTF(2, 3);

#endif
