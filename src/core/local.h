/* Which PEs share this host, and handing file descriptors to them. Used by
 * every transport that maps a peer's memory (shm: memfds; cuda: VMM handles
 * exported as POSIX file descriptors). */
#ifndef USHMEM_LOCAL_H
#define USHMEM_LOCAL_H

/* Collective: learn which PEs run on this host (same boot id, host name and
 * network namespace). Fills ushmemi_g.is_local, local_size, local_rank. */
int ushmemi_locality_init(const char *call);
void ushmemi_locality_fini(void);
/* pe runs on this machine, pretend hosts (USHMEM_FAKE_HOSTS) or not: what
 * shares a GPU, where is_local says what shares memory. */
int ushmemi_same_machine(int pe);

/* Collective over all PEs: send fds[0..nfd) to every other local PE and receive
 * theirs. on_recv(pe, fds, nfd, arg) runs once per local peer; it owns the
 * received descriptors (must close them). Peers may send different counts.
 * Nothing is left in the file system (abstract sockets, closed on return). */
#define USHMEMI_MAX_XFDS 16
typedef int (*ushmemi_fd_recv_fn)(int pe, int *fds, int nfd, void *arg);
int ushmemi_fd_exchange(const int *fds, int nfd, ushmemi_fd_recv_fn on_recv, void *arg,
                        const char *call);

#endif
