/* What the core sees of the cuda transport: the hooks its data paths call
 * when device memory is involved, the device heap, and device binding.
 *
 * Every hook is called only while ushmemi_g.cuda_active is set (a device is
 * bound and the device heap exists), so a job without CUDA pays one
 * predictable branch per operation. Hooks that return int answer 1 when they
 * handled the operation (device memory on either side) and 0 when the host
 * path should run. They report bad input through ushmemi_fatal, as the host
 * paths do. */
#ifndef USHMEM_CUDA_DEVMEM_H
#define USHMEM_CUDA_DEVMEM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/prims.h"
#include "core/state.h"
#include "transport/transport.h"

extern const ushmemi_transport_ops_t ushmemi_transport_cuda;

/* ---- binding (init.c, route.c) ---- */
/* One line for ushmem_info: the driver and devices, or why CUDA is off. */
void ushmemi_cuda_describe(FILE *out);
/* Device ordinal from shmemx_init_attr (-1: none); consumed by the next init. */
void ushmemi_cuda_request_device(int device);

/* ---- device heap segment ----
 * Whether an address lies in this PE's device heap: ushmemi_devheap_has
 * (transport/transport.h). */
/* p is device memory: in the device heap, or any CUDA device allocation. */
int ushmemi_cuda_is_device(const void *p);

/* Page-locked host memory (cuMemHostAlloc), or NULL when CUDA is off or it fails. */
void *ushmemi_cuda_host_alloc(size_t n);
void ushmemi_cuda_host_free(void *p);

/* Why pe's device heap is not mapped here, when the reason is that its GPU
 * cannot be reached from ours (no peer access); NULL otherwise. */
const char *ushmemi_cuda_unmapped_why(int pe);

/* ---- RMA (rma.c) ---- */
/* remote: the peer's copy (already translated); sym_dev: the symmetric side is
 * in the device heap. Blocking: complete on return (nbi: complete at quiet). */
int ushmemi_cuda_put(void *remote, const void *local, size_t n, int sym_dev, int nbi,
                     const char *call);
int ushmemi_cuda_get(void *local, const void *remote, size_t n, int sym_dev, int nbi,
                     const char *call);
/* Strided blocks: nblocks rows of width bytes, pitches in bytes (> 0). */
int ushmemi_cuda_strided(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t nblocks, int sym_dev, const char *call);
void ushmemi_cuda_quiet(void);

/* ---- AMOs and signals on the device heap (amo.c) ---- */
uint64_t ushmemi_cuda_amo(ushmemi_amo_op_t op, size_t size, void *remote, uint64_t value,
                          uint64_t cond, const char *call);
void ushmemi_cuda_signal(uint64_t *remote, uint64_t value, int sig_op, const char *call);

/* ---- the proxy's hands (src/transport/proxy) ----
 * On the proxy's own non-blocking streams (never behind the application's
 * kernels; under MPS what other hosts write here goes through a CUDA context
 * of the proxy's own: proxy_stream.c). copy: 1 when either side is device
 * memory (done), else 0. amo: the one-thread AMO kernel, waited for;
 * signal_async: a signal set (from page-locked *value) or add, enqueued only
 * (done by the next proxy_sync); put_async: another host's data from a
 * receive buffer into the heap, enqueued only; copy_async: a copy between
 * memory of any kind, enqueued only. */
int ushmemi_cuda_proxy_copy(void *dst, const void *src, size_t n, const char *call);
/* The same copy whatever the kinds (the driver tells them apart). */
void ushmemi_cuda_proxy_copy_any(void *dst, const void *src, size_t n, const char *call);
void ushmemi_cuda_proxy_copy_async(void *dst, const void *src, size_t n, const char *call);
void ushmemi_cuda_proxy_put_async(void *sym, const void *src, size_t n, const char *call);
void ushmemi_cuda_proxy_sync(const char *call);
/* Makes the target lane's context now (else at its first use). */
void ushmemi_cuda_proxy_prepare(const char *call);
uint64_t ushmemi_cuda_proxy_amo(ushmemi_amo_op_t op, size_t size, void *remote, uint64_t value,
                                uint64_t cond, const char *call);
void ushmemi_cuda_proxy_signal_async(uint64_t *remote, const uint64_t *value, int add,
                                     const char *call);
/* Page-locked host memory mapped into the device (kernels reach it at *dev);
 * free with ushmemi_cuda_host_free. NULL when CUDA is off or it fails. */
void *ushmemi_cuda_host_alloc_mapped(size_t n, uint64_t *dev);
/* The reverse-offload ring kernels use (device_api.c): its device-memory
 * words (head at words, free_cache at words + 64) and descriptor, installed
 * for the handles shmemx_dev_get fills from now on; 0 words: none. */
uint64_t ushmemi_cuda_dev_ring_words(void);
int ushmemi_cuda_dev_ring_install(const void *desc, size_t n, uint32_t cap, const char *call);
void ushmemi_cuda_dev_ring_remove(void);

/* ---- wait/test (wait.c) ---- */
/* When addr is device memory, copy its size bytes to out and return 1. */
int ushmemi_cuda_load(const volatile void *addr, size_t size, void *out, const char *call);

/* ---- collectives (for src/coll) ----
 * When dest or source is in the device heap (ushmemi_devheap_has), the
 * blocking collective is done on the GPU: stream-ordered copies or one
 * reduction kernel between stream-ordered barriers, waited for. Same
 * arguments and return values as ushmemi_broadcast & co (core/prims.h). */
int ushmemi_cuda_broadcast(shmem_team_t team, void *dest, const void *src, size_t nbytes, int root,
                           const char *call);
int ushmemi_cuda_fcollect(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                          const char *call);
int ushmemi_cuda_alltoall(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                          const char *call);
int ushmemi_cuda_reduce(shmem_team_t team, void *dest, const void *src, size_t nelems, int dtype,
                        ushmemi_redop_t op, const char *call);

/* ---- device API (src/transport/cuda/device_api.c) ---- */
/* Tell waiting kernels of this PE that the job is ending (finalize,
 * global_exit, fatal errors): their waits trap instead of hanging. */
void ushmemi_cuda_dev_abort(void);
/* Zero team slot's device barrier state on this PE (team destroy). */
void ushmemi_cuda_dev_team_reset(int slot);

/* ---- allocation (heap.c; src/heap/devheap.c) ---- */
/* shmem_malloc and friends allocate device memory by default when a device
 * is bound; hints choose explicitly. */
void *ushmemi_devheap_alloc(size_t size, size_t align, int zero, const char *call);
void ushmemi_devheap_free(void *ptr, const char *call);
void *ushmemi_devheap_realloc(void *ptr, size_t size, const char *call);

#endif
