/* ushmem extensions to OpenSHMEM. Everything here is prefixed shmemx_ / SHMEMX_. */
#ifndef SHMEMX_H
#define SHMEMX_H

#include <shmem.h>
#include <shmemx_device_types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HAVE_SHMEMX_WTIME 1

/* Status codes returned by the int-returning extensions (0 is success). */
#define SHMEMX_SUCCESS       0
#define SHMEMX_ERR_INVALID   (-1) /* bad argument */
#define SHMEMX_ERR_OVERLAP   (-2) /* range overlaps an existing registration */
#define SHMEMX_ERR_NOTFOUND  (-3) /* address not registered / not symmetric */
#define SHMEMX_ERR_NOMEM     (-4) /* out of memory */
#define SHMEMX_ERR_BOOTSTRAP (-5)
#define SHMEMX_ERR_STATE     (-6) /* called in the wrong library state */

/* Unique-id bootstrap: rank 0 calls shmemx_get_uniqueid, ships the blob to the
 * other ranks by any means (MPI, torch.distributed, a file), then every rank
 * calls shmemx_init_attr. The blob holds the root's address and a random secret;
 * connections that do not present the secret are refused. */
#define SHMEMX_UNIQUEID_BYTES 128
typedef struct {
    unsigned char internal[SHMEMX_UNIQUEID_BYTES];
} shmemx_uniqueid_t;

typedef struct {
    int device;       /* CUDA device ordinal to bind, or -1 for none */
    int thread_level; /* SHMEM_THREAD_* requested */
} shmemx_init_attr_t;
#define SHMEMX_INIT_ATTR_INITIALIZER                                                               \
    {                                                                                              \
        -1, SHMEM_THREAD_SINGLE                                                                    \
    }

int shmemx_get_uniqueid(shmemx_uniqueid_t *uid);
/* attr may be NULL (defaults). Returns 0 or a negative SHMEMX_ERR_*. */
int shmemx_init_attr(int rank, int nranks, const shmemx_uniqueid_t *uid,
                     const shmemx_init_attr_t *attr);

/* Local registration of a non-symmetric buffer as the local side of transfers. */
int shmemx_buffer_register(void *addr, size_t length);
int shmemx_buffer_unregister(void *addr);
int shmemx_buffer_unregister_all(void);

/* Per-PE addresses of one symmetric object, as valid in this process (NULL where
 * the peer is not mapped here). bases must hold shmem_n_pes() pointers. */
int shmemx_heap_bases(const void *sym_addr, void **bases);

/* How this PE reaches PE pe's device heap: SHMEMX_ROUTE_MAPPED (this process
 * maps it: loads, stores, copies; pe itself included), SHMEMX_ROUTE_PROXY
 * (another host: through the proxy, for the host, stream and device APIs
 * alike, but shmem_ptr gives NULL), SHMEMX_ROUTE_NONE (no device heap here, or
 * no way to pe's). -1 for a PE out of range or before init. */
#define SHMEMX_ROUTE_NONE   0
#define SHMEMX_ROUTE_MAPPED 1
#define SHMEMX_ROUTE_PROXY  2
int shmemx_device_route(int pe);

/* Memory kind hints for shmem_malloc_with_hints. */
#define SHMEMX_MALLOC_HOST   (1L << 16)
#define SHMEMX_MALLOC_DEVICE (1L << 17)

/* Local blocks: memory of this PE's symmetric heap that this PE alone allocates
 * and frees (no barrier, no peer involved), from a part of the heap set aside
 * at init: USHMEM_LOCAL_HEAP_SIZE (host heap), USHMEM_DEVICE_LOCAL_HEAP_SIZE
 * (device heap), the same on every PE. hints choose the heap as for
 * shmem_malloc_with_hints; alignment 0 means the heap's own (64 B host, 256 B
 * device), else a power of two up to SHMEMX_LOCAL_ALIGN_MAX (2 MiB). NULL, with one line, when the
 * heap has no local part or it is full. A block lies at a different offset on each PE: a peer that
 * learns its offset (shmemx_heap_offset here, sent by any means) names it with
 * shmemx_heap_addr(offset, hints) in its own address space, and passes that
 * address with this PE's number to any RMA, AMO or signal call, or to
 * shmem_ptr. shmemx_free_local returns 0, or SHMEMX_ERR_NOTFOUND for anything
 * that is not a live local block; shmem_free and shmem_realloc refuse local
 * blocks. */
#define SHMEMX_LOCAL_ALIGN_MAX (2UL << 20)
void *shmemx_malloc_local(size_t size, size_t alignment, long hints);
int shmemx_free_local(void *ptr);
/* Offset of addr in this PE's host or device heap; returns SHMEMX_MALLOC_HOST or
 * SHMEMX_MALLOC_DEVICE (which heap), or a negative SHMEMX_ERR_* with one line. */
long shmemx_heap_offset(const void *addr, size_t *offset);
/* This PE's address at offset of its host heap (hints 0 or SHMEMX_MALLOC_HOST)
 * or device heap (SHMEMX_MALLOC_DEVICE); NULL, with one line, past its end. */
void *shmemx_heap_addr(size_t offset, long hints);
/* Where the local part of this PE's host heap (hints 0 or SHMEMX_MALLOC_HOST) or
 * device heap (SHMEMX_MALLOC_DEVICE) lies, as a heap offset (the same on every PE)
 * and its size in bytes; both 0 when the heap has none. Returns 0, or a negative
 * SHMEMX_ERR_* with one line (not initialized, NULL argument, no device heap). An
 * address with an offset in [offset, offset + size) of a peer's heap is in that
 * peer's local part, where only the peer knows which blocks are live. */
int shmemx_heap_local_part(long hints, size_t *offset, size_t *size);

/* Wall-clock time in seconds. */
double shmemx_wtime(void);

/* Wait counters of this PE (all threads), for attributing stalls. Only waits
 * that outlast the first 64 polls are counted (the rest cost nothing to
 * watch). docs/waits.md explains the policy; USHMEM_WAIT_STATS=1 prints them
 * at finalize. */
typedef struct {
    unsigned long long slow_waits;   /* waits that outlasted the first polls */
    unsigned long long polls;        /* polls while spinning on the clock */
    unsigned long long yields;       /* sched_yield calls (all) */
    unsigned long long sched_yields; /* of those, to a PE found queued on our CPU */
    unsigned long long moves;        /* moves off a CPU a peer was queued on */
    unsigned long long sleeps;       /* sleeps of long waits */
    unsigned long long longest_ns;   /* longest single wait */
    const char *longest_call;        /* the call it was in ("" if none) */
} shmemx_wait_stats_t;
int shmemx_wait_stats(shmemx_wait_stats_t *out); /* 0, or SHMEMX_ERR_INVALID (NULL) */
void shmemx_wait_stats_reset(void);

/* ---- CUDA ---- */
/* Stream-ordered operations (CUDA builds work everywhere: the driver is loaded
 * at run time). `stream` is a cudaStream_t / CUstream; these calls return at
 * once and take effect in stream order. A NULL stream means:
 *  - when every buffer involved is host memory: now, in program order (the
 *    blocking host routine is called);
 *  - otherwise: CUDA's legacy default stream (stream 0), as in CUDA itself.
 * Host memory with a non-NULL stream: copies and signals run in stream order
 * (host callbacks; slower than device memory), collectives wait for the
 * stream and then run at once. docs/cuda.md has the details. */
typedef struct CUstream_st *shmemx_stream_t; /* same type as cudaStream_t */

void shmemx_putmem_on_stream(void *dest, const void *source, size_t nelems, int pe,
                             shmemx_stream_t stream);
void shmemx_getmem_on_stream(void *dest, const void *source, size_t nelems, int pe,
                             shmemx_stream_t stream);
void shmemx_putmem_signal_on_stream(void *dest, const void *source, size_t nelems,
                                    uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                                    shmemx_stream_t stream);
/* sig_op SHMEM_SIGNAL_SET or _ADD on pe's signal word, in stream order, after
 * the stream's earlier copies are visible at pe. */
void shmemx_signal_op_on_stream(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                                shmemx_stream_t stream);
/* Every SHMEM_CMP_*; EQ/GE/GT on device memory are stream memory operations
 * (no kernel, no host thread); the others wait through a host progress thread. */
void shmemx_signal_wait_until_on_stream(uint64_t *sig_addr, int cmp, uint64_t cmp_value,
                                        shmemx_stream_t stream);
void shmemx_quiet_on_stream(shmemx_stream_t stream);
void shmemx_barrier_all_on_stream(shmemx_stream_t stream);
void shmemx_sync_all_on_stream(shmemx_stream_t stream);
void shmemx_barrier_on_stream(shmem_team_t team, shmemx_stream_t stream);
void shmemx_team_sync_on_stream(shmem_team_t team, shmemx_stream_t stream);
/* Collectives: 0 on success, nonzero on error (as the 1.5 team collectives). */
int shmemx_alltoallmem_on_stream(shmem_team_t team, void *dest, const void *source, size_t nelems,
                                 shmemx_stream_t stream);
int shmemx_broadcastmem_on_stream(shmem_team_t team, void *dest, const void *source, size_t nelems,
                                  int PE_root, shmemx_stream_t stream);
int shmemx_fcollectmem_on_stream(shmem_team_t team, void *dest, const void *source, size_t nelems,
                                 shmemx_stream_t stream);
/* Reductions: shmemx_<type>_<op>_reduce_on_stream for the 4- and 8-byte types
 * below; and/or/xor for the integer types, max/min/sum/prod for all. */
#define SHMEMX_REDUCE_ON_STREAM_DECL(TYPE, TYPENAME, OP)                                           \
    int shmemx_##TYPENAME##_##OP##_reduce_on_stream(shmem_team_t team, TYPE *dest,                 \
                                                    const TYPE *source, size_t nreduce,            \
                                                    shmemx_stream_t stream);
/* One type per line; the formatter does not settle on a layout for this. */
/* clang-format off */
#define SHMEMX_REDUCE_ON_STREAM_INT(X)                                                             \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(ptrdiff_t, ptrdiff)
/* clang-format on */
#define SHMEMX_REDUCE_ON_STREAM_FLOAT(X) X(float, float) X(double, double)
#define SHMEMX_REDUCE_ON_STREAM_BITS_(T, N)                                                        \
    SHMEMX_REDUCE_ON_STREAM_DECL(T, N, and)                                                        \
    SHMEMX_REDUCE_ON_STREAM_DECL(T, N, or) SHMEMX_REDUCE_ON_STREAM_DECL(T, N, xor)
#define SHMEMX_REDUCE_ON_STREAM_ARITH_(T, N)                                                       \
    SHMEMX_REDUCE_ON_STREAM_DECL(T, N, max)                                                        \
    SHMEMX_REDUCE_ON_STREAM_DECL(T, N, min)                                                        \
    SHMEMX_REDUCE_ON_STREAM_DECL(T, N, sum) SHMEMX_REDUCE_ON_STREAM_DECL(T, N, prod)
SHMEMX_REDUCE_ON_STREAM_INT(SHMEMX_REDUCE_ON_STREAM_BITS_)
SHMEMX_REDUCE_ON_STREAM_INT(SHMEMX_REDUCE_ON_STREAM_ARITH_)
SHMEMX_REDUCE_ON_STREAM_FLOAT(SHMEMX_REDUCE_ON_STREAM_ARITH_)

/* ---- device API (kernels that communicate; shmemx_device.cuh, docs/device.md) ---- */
/* The handle a kernel takes by value (`const __grid_constant__ shmemx_dev_t`):
 * fill it after shmem_init on every PE that launches such kernels. 0, or
 * SHMEMX_ERR_STATE (not initialized, or no device heap: the reason is on
 * stderr) / SHMEMX_ERR_INVALID (NULL out, invalid team). The world handle's
 * PEs are world PEs; a team handle's are the team's. */
int shmemx_dev_get(shmemx_dev_t *out);
int shmemx_team_dev_get(shmem_team_t team, shmemx_dev_t *out);
/* Why device-side waits and barriers are off on this PE (one line), or NULL
 * when they are allowed. */
const char *shmemx_dev_why(void);
/* Cooperative launch (every CTA resident at once) of a driver-API CUfunction,
 * after checking the grid against the occupancy this PE's context allows.
 * CUDA C++ programs call the shmemx_collective_launch(kernel, ...) template of
 * shmemx_device.cuh instead. 0, or a negative SHMEMX_ERR_* with one line. */
int shmemx_collective_launch_cu(void *cu_function, unsigned gx, unsigned gy, unsigned gz,
                                unsigned bx, unsigned by, unsigned bz, void **args,
                                size_t shared_bytes, shmemx_stream_t stream);
/* ---- end CUDA ---- */

#ifdef __cplusplus
}
#endif

#endif /* SHMEMX_H */
