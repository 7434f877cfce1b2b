/* Shared by the stream-ordered API's two files: stream.c (RMA, signals,
 * waits, barriers) and stream_coll.c (collectives). */
#ifndef USHMEM_STREAM_PRIV_H
#define USHMEM_STREAM_PRIV_H

#include "transport/cuda/cuda_priv.h"

/* Fatal with one line when no CUDA device is bound; else makes its context current. */
void ushmemi_stream_need_cuda(const char *call);
/* The copy of symmetric [sym, sym+n) on pe as mapped here (fatal when it is
 * not); *dev: on the device heap. */
char *ushmemi_stream_sym_peer(const void *sym, size_t n, int pe, int *dev, const char *what,
                              const char *call);
/* A request (USHMEMI_REQ_*) to this PE's proxy when stream s gets there (a
 * one-thread kernel on the ring), and a QUIET request. */
void ushmemi_stream_proxy_req(CUstream s, unsigned op, unsigned len, unsigned aux, int pe,
                              const void *a1, const void *a2, uint64_t a3, const void *a4,
                              uint64_t a5, const char *call);
void ushmemi_stream_proxy_quiet(CUstream s, const char *call);
/* dst <- src in stream order (ddev/sdev: device memory). */
void ushmemi_stream_copy(void *dst, int ddev, const void *src, int sdev, size_t n, CUstream s,
                         const char *call);
/* PE w's device heap base as mapped here (fatal when it is not). */
CUdeviceptr ushmemi_stream_peer_heap(int w, const char *call);
/* This PE's next sync signal to world PE w, and its wait for w's next one, on
 * stream s (under ushmemi_cuda.sync_lock). */
void ushmemi_stream_sync_signal(CUstream s, int w, const char *call);
void ushmemi_stream_sync_wait(CUstream s, int w, const char *call);
/* Frees the reductions' scratch buffers (finalize). */
void ushmemi_stream_scratch_fini(void);

#endif
