/* The staged proxy's hands on this PE's memory (hands.c), lent to the MPI
 * module through its table (src/transport/mpi/mpi_module.h). */
#ifndef USHMEM_PROXY_HANDS_H
#define USHMEM_PROXY_HANDS_H

#include <stddef.h>
#include <stdint.h>

#include "core/state.h"

void ushmemi_proxy_local_copy(void *dst, const void *src, size_t n, const char *call);
uint64_t ushmemi_proxy_local_amo(ushmemi_amo_op_t op, int dtype, void *sym, uint64_t value,
                                 uint64_t cond, const char *call);
void *ushmemi_proxy_bounce_alloc(size_t n);
void ushmemi_proxy_bounce_free(void *p);
int ushmemi_proxy_is_device(const void *addr);
int ushmemi_proxy_local_put(void *sym, const void *src, size_t n, const char *call);
int ushmemi_proxy_local_signal(void *sym, const uint64_t *value, int add, const char *call);
void ushmemi_proxy_local_sync(const char *call);
/* Before the first request: what the hands need made (the proxy's CUDA
 * context when it has one of its own). */
void ushmemi_proxy_hands_prepare(const char *call);

#endif
