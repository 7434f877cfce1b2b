/* State shared by the files of the cuda transport (not seen by the core). */
#ifndef USHMEM_CUDA_PRIV_H
#define USHMEM_CUDA_PRIV_H

#include <pthread.h>

#include "core/core.h"
#include "core/prims.h"
#include "transport/cuda/cuda_api.h"
#include "transport/cuda/devmem.h"
#include "transport/cuda/kernels_abi.h"

/* Internal region at the start of every device heap (same layout on every
 * PE; device_api.c: stream-sync counters, the peer table, the device sync
 * area with its collective stage buffers, the proxy ring's words), then the
 * user arena. */
#define USHMEMI_CUDA_INTERNAL_SIZE ((size_t)6 << 20)
#define USHMEMI_CUDA_HEAP_ALIGN    256
/* Most PEs a job with device heaps may have: recv[] (below) and the device
 * API's peer table each take 8 bytes per PE of the internal region. */
#define USHMEMI_CUDA_MAX_PES 8192
typedef struct {
    /* recv[p]: how many stream-ordered sync signals PE p has sent to this PE
     * (written by p with cuStreamWriteValue64; only grows). */
    uint64_t recv[1];
} ushmemi_cuda_sync_t;

/* peer_ipc[pe]: how pe's heap is mapped here. CUDA_IPC_NO_P2P: not at all,
 * because pe's GPU is another one that ours cannot access (peer_dev[pe]). */
enum { CUDA_IPC_NONE = 0, CUDA_IPC_VMM = 1, CUDA_IPC_LEGACY = 2, CUDA_IPC_NO_P2P = 3 };

enum {
    K_AMO32,
    K_AMO64,
    K_SIGADD,
    K_COPY,
    K_COLL_COPY,
    K_COLL_SYNC,
    K_PROXY_REQ,
    K_NFIXED,
};

typedef struct {
    int device; /* ordinal bound, -1: none */
    CUdevice dev;
    CUcontext ctx;
    /* The host API's copies, AMOs and signals: a blocking stream, so they come
     * after earlier work on CUDA's legacy default stream, as a cudaMemcpy
     * would (e.g. the tail of a cudaMemcpy from pageable memory). */
    CUstream stream;
    CUstream poll_stream; /* non-blocking: reads for wait/test, never held up */
    pthread_mutex_t lock; /* the internal stream and the scratch page */
    /* The proxy's hands (its thread carries out other hosts' requests and the
     * kernels' ring requests): non-blocking, so a kernel of the application
     * running on the legacy default stream, perhaps waiting for that very
     * request, never holds them up. */
    CUstream proxy_stream;
    pthread_mutex_t proxy_lock; /* proxy_stream and its scratch word */
    uint64_t *scratch;          /* pinned host page, device-mapped */
    CUdeviceptr scratch_d;
    int nbi_pending; /* nbi work on the internal stream not yet synchronized */
    int mps;         /* the primary context runs under MPS */
    CUmodule mod;    /* embedded kernels; NULL when built without nvcc */
    CUfunction fixed[K_NFIXED];
    /* device heap */
    int ipc;
    CUmemGenericAllocationHandle handle; /* vmm */
    CUdeviceptr base;
    size_t size;
    size_t granularity;
    int *peer_ipc; /* [n_pes]: how peer's heap was mapped here */
    int *peer_dev; /* [n_pes]: peer's GPU as an ordinal of this process, -1: not visible */
    /* stream-ordered sync, host-side counts (enqueue order) */
    uint64_t *sent;     /* [n_pes]: signals enqueued to each peer */
    uint64_t *expected; /* [n_pes]: waits enqueued on each peer's signals */
    pthread_mutex_t sync_lock;
} ushmemi_cuda_t;

extern ushmemi_cuda_t ushmemi_cuda __attribute__((visibility("hidden")));

/* Device-to-device copies on a stream at or below this size use the copy
 * kernel (one launch) instead of cuMemcpyDtoDAsync; 0 disables. */
extern size_t ushmemi_cuda_kcopy_max __attribute__((visibility("hidden")));

/* Make the bound device's primary context current on this thread. */
static inline void ushmemi_cuda_ctx(void)
{
    CUcontext c = NULL;
    ushmemi_cu.cuCtxGetCurrent(&c);
    if (USHMEMI_UNLIKELY(c != ushmemi_cuda.ctx))
        ushmemi_cu.cuCtxSetCurrent(ushmemi_cuda.ctx);
}

/* Fatal with the driver's reason unless r is CUDA_SUCCESS. */
void ushmemi_cuda_check(CUresult r, const char *what, const char *call);
#define CU_CHECK(expr, call) ushmemi_cuda_check((expr), #expr, (call))

/* A kernel by name from the embedded module, or fatal when the library was
 * built without nvcc. */
CUfunction ushmemi_cuda_kernel(const char *name, const char *call);
CUfunction ushmemi_cuda_fixed(int k, const char *call);
/* The kernels the one-thread launches below need, as one context has them
 * (the primary's, or the proxy's own context: proxy_stream.c), and the
 * scratch page's device address there. NULL: the primary's. */
typedef struct {
    CUfunction amo32, amo64, sigadd;
    CUdeviceptr scratch_d;
} ushmemi_cuda_kset_t;
/* The one-thread AMO kernel launched on s (not waited for); its result lands
 * in the scratch page at byte out_off, read with amo_result once s is done. */
void ushmemi_cuda_amo_launch(const ushmemi_cuda_kset_t *k, CUstream s, size_t out_off,
                             ushmemi_amo_op_t op, size_t size, void *remote, uint64_t value,
                             uint64_t cond, const char *call);
uint64_t ushmemi_cuda_amo_result(size_t out_off, size_t size);
/* Signal ADD in stream order (the signal-add kernel): the data copied
 * earlier in s is visible before the signal. */
void ushmemi_cuda_sigadd_launch(const ushmemi_cuda_kset_t *k, CUstream s, uint64_t *remote,
                                uint64_t value, const char *call);
/* Ends the proxy's own context, if it made one (before the primary's). */
void ushmemi_cuda_proxy_fini(void);
/* Notes a stream operation for the proxy's stall report (proxy_stream.c). */
void ushmemi_cuda_trace(CUstream s, const char *what, int pe, uint64_t value);

/* Local (not necessarily symmetric) pointer: 1 if it is device memory. */

/* Stream-ordered sync among team members (stream.c). */
void ushmemi_cuda_stream_sync(shmem_team_t team, CUstream s, const char *call);
/* Progress thread for waits that stream memory operations cannot express. */
void ushmemi_cuda_progress_fini(void);

/* What each PE tells the others about its device at init (cuda.c). */
typedef struct {
    int32_t state; /* -1 setup failed, 0 no device heap, 1 device heap */
    int32_t ipc;
    int32_t device;
    int32_t pci[3]; /* the GPU's PCI domain, bus, device: the same name in every process */
    int32_t mps;    /* the context runs under MPS */
    int32_t sm_ctx; /* SMs this context may use (its MPS share) */
    int32_t sm_total;
    int32_t pad;
    uint64_t size;
    CUipcMemHandle ipc_handle; /* legacy */
} cuda_card_t;

/* Device API (device_api.c): this PE's MPS facts for its card; the verdict on
 * device waits and the peer table once the heaps are mapped; the abort word
 * kernels poll; a destroyed team's device barrier state. */
void ushmemi_cuda_dev_card(cuda_card_t *c);
/* The collective launch's cached residency facts (launch.c), emptied at init. */
void ushmemi_cuda_launch_reset(void);
int ushmemi_cuda_dev_check_env(const char *call);
int ushmemi_cuda_dev_attach(const cuda_card_t *cards, const char *call);
/* Device waits for the library's own kernels (stream.c's collectives): 1 safe
 * by the job's verdict, 2 allowed only by USHMEM_DEVICE_WAIT=timesliced, 0 off
 * (and why); what every device wait polls: the device address of the word
 * set when the job ends, and USHMEM_DEVICE_WAIT_TIMEOUT in ns (0: none). */
int ushmemi_cuda_dev_waits(void);
/* The world handle for the library's own kernels (the ring's requests), and
 * whether kernels have a ring (some device heap is reached through the proxy). */
void ushmemi_cuda_dev_world(shmemx_dev_t *d);
int ushmemi_cuda_dev_has_ring(void);
const char *ushmemi_cuda_dev_waits_why(void);
void ushmemi_cuda_dev_wait_limits(uint64_t *abort_flag, uint64_t *timeout_ns);

/* Embedded fatbin image, or NULL (fatbin.c). */
const void *ushmemi_cuda_kernels_image(void);

/* Device heap allocator (src/heap/devheap.c). */
int ushmemi_devheap_init(char *arena, size_t size, const char *call);
void ushmemi_devheap_fini(void);

#endif
