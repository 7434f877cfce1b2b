/* Shared by the stream-ordered API's files: stream.c (RMA, signals, waits,
 * the barrier calls), stream_sync.c (how a team synchronizes on a stream)
 * and stream_coll.c (collectives). */
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
/* This PE's next sync signals to world PEs and waits for their next ones, on
 * stream s (under ushmemi_cuda.sync_lock), gathered between begin and end
 * into cuStreamBatchMemOp calls (one per 254; stream memory operations
 * enqueued one by one cost more GPU time: 4.05 against 2.75 µs for one
 * signal and one wait, H100, 2 PEs under MPS). A signal to a PE the proxy
 * reaches (another host) ends the batch so far and goes as its own request. */
#define USHMEMI_SYNC_BATCH_MAX 254
typedef struct {
    CUstreamBatchMemOpParams op[USHMEMI_SYNC_BATCH_MAX];
    unsigned n;
    CUstream s;
    const char *call;
} ushmemi_sync_batch_t;
void ushmemi_sync_begin(ushmemi_sync_batch_t *b, CUstream s, const char *call);
void ushmemi_sync_signal(ushmemi_sync_batch_t *b, int w);
void ushmemi_sync_wait(ushmemi_sync_batch_t *b, int w);
void ushmemi_sync_end(ushmemi_sync_batch_t *b);
/* Some member of team is reached through the proxy (another host); the same
 * answer on every member. */
int ushmemi_stream_team_proxied(shmem_team_t team);
/* The device-synchronized collective kernel (ushmemi_k_coll_sync): its
 * signals and waits for team (kind USHMEMI_KCOLL_*), under sync_lock, and
 * its launch as one block of threads (at least the team's size) on s. */
void ushmemi_kcoll_fill(ushmemi_kcoll_args_t *a, shmem_team_t team, int kind, int root,
                        const char *call);
void ushmemi_kcoll_launch(ushmemi_kcoll_args_t *a, unsigned threads, CUstream s, const char *call);
/* Frees the reductions' scratch buffers (finalize). */
void ushmemi_stream_scratch_fini(void);

#endif
