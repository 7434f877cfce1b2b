/* Reverse offload: the thread that carries out kernels' requests for PEs
 * whose device heap is not mapped here (devring.c). */
#ifndef USHMEM_PROXY_DEVRING_H
#define USHMEM_PROXY_DEVRING_H

#include <stdint.h>

#include "transport/proxy/ring.h"

/* After the proxy transport attached, on a PE with a device heap and some
 * device heap it does not map: the ring kernels' handles carry, and its
 * consumer thread. 0 or USHMEM_E*. */
int ushmemi_devring_start(const char *call);
/* Before the transports detach (finalize): kernels still waiting trap. */
void ushmemi_devring_stop(void);

/* Testing without a GPU (USHMEM_PROXY_HOST=1): the ring in ordinary memory,
 * for host threads that play kernels with ring.h's host producer, and the
 * word QUIET requests raise; NULL when there is none. */
const ushmemi_ring_t *ushmemi_devring_host_ring(uint64_t **quiet_upto);

#endif
