/* Core lifecycle pieces wired together by init.c. */
#ifndef USHMEM_CORE_H
#define USHMEM_CORE_H

#include "bootstrap/bootstrap.h"
#include "core/state.h"

#ifndef USHMEM_VERSION_STRING
#define USHMEM_VERSION_STRING "0.1.0"
#endif

const ushmemi_bootstrap_t *ushmemi_bootstrap(void);

/* Transport selection (src/core/route.c): one transport per peer. */
int ushmemi_transports_init(const char *call);
void ushmemi_transports_fini(void);
int ushmemi_pe_reachable(int pe);
const char *ushmemi_pe_transport_name(int pe);
/* mpi hook: the transport that reaches pe's host memory (NULL before init).
 * The data paths call its ops when seg->peer[pe] is NULL (memory not mapped). */
struct ushmemi_transport_ops;
const struct ushmemi_transport_ops *ushmemi_peer_transport(int pe);
/* mpi hook: set while some PE of the job reaches a peer through a transport
 * that does not map memory (mpi). Then every AMO and signal update of the job,
 * to mapped peers and to self included, goes through this transport's atomics
 * (CPU and MPI atomics are not atomic with each other: docs/mpi.md), quiet and
 * fence flush it, and wait loops drive its progress. NULL: shm/cuda only. */
extern const struct ushmemi_transport_ops *ushmemi_remote_tl __attribute__((visibility("hidden")));
/* The staged proxy (src/transport/proxy) when attached: device heaps of
 * unmapped peers. quiet and fence complete it too. NULL: none. */
extern const struct ushmemi_transport_ops *ushmemi_proxy_tl __attribute__((visibility("hidden")));
/* The transport that reaches sym (a symmetric address of this PE) on pe when
 * pe's copy is not mapped here: by the memory's kind (device heap: the
 * proxy; host: mpi). NULL: none does. */
const struct ushmemi_transport_ops *ushmemi_route(const void *sym, int pe);
/* "cuda", "proxy" or "none": how pe's device heap is reached ("-": no device heap). */
const char *ushmemi_pe_dev_transport_name(int pe);

/* Teams (src/core/team.c): SHMEM_TEAM_WORLD / SHMEM_TEAM_SHARED live here. */
int ushmemi_teams_init(const char *call);
void ushmemi_teams_fini(void);

#endif
