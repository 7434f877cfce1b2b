/* cuda transport: device binding, the device symmetric heap and the host
 * API's data path on device memory. See README.md beside this file.
 *
 * The device heap is one CUDA VMM allocation per PE (cuMemCreate, exportable
 * as a POSIX file descriptor). Its descriptor goes to every local peer over
 * the same SCM_RIGHTS exchange the shm transport uses (core/local.c); each
 * peer imports it, reserves an address range and maps it with access for its
 * own device. Legacy CUDA IPC (cuIpcGetMemHandle) is the fallback where VMM
 * handles are not supported, or on request (USHMEM_CUDA_IPC=legacy). Either
 * way the peer's heap becomes an ordinary device address in this process, so
 * copies are cuMemcpyAsync with unified addressing, kernels can store to it
 * (shmem_ptr) and stream memory operations can signal it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/local.h"
#include "transport/cuda/cuda_priv.h"

ushmemi_cuda_t ushmemi_cuda = {.device = -1,
                               .lock = PTHREAD_MUTEX_INITIALIZER,
                               .proxy_lock = PTHREAD_MUTEX_INITIALIZER,
                               .sync_lock = PTHREAD_MUTEX_INITIALIZER};
/* Measured on an H200 with 2 PEs (docs/cuda.md): up to 16 MiB the copy
 * kernel beats cuMemcpyDtoDAsync (it enqueues faster, and the copy is short);
 * from 32 MiB on the driver's copy is faster. */
size_t ushmemi_cuda_kcopy_max = (size_t)16 << 20;

static int requested_device = -1; /* shmemx_init_attr */
static int setup_rc;              /* error found by init, reported by attach */

void ushmemi_cuda_request_device(int device)
{
    requested_device = device;
}

void ushmemi_cuda_check(CUresult r, const char *what, const char *call)
{
    if (USHMEMI_UNLIKELY(r != CUDA_SUCCESS))
        ushmemi_fatal(call, "%s failed: %s", what, ushmemi_cu_errstr(r));
}

/* Like CU_CHECK for setup code: one line, then a status. */
static int cu_try(CUresult r, const char *what, const char *call)
{
    if (r == CUDA_SUCCESS)
        return 0;
    ushmemi_error(call, "CUDA device %d: %s failed: %s", ushmemi_cuda.device, what,
                  ushmemi_cu_errstr(r));
    return USHMEM_ESYS;
}
#define CU_TRY(expr, call) cu_try((expr), #expr, (call))

/* USHMEM_TRANSPORTS names cuda explicitly. */
static int cuda_listed(void)
{
    const char *p = getenv("USHMEM_TRANSPORTS");
    while (p && *p) {
        size_t len = strcspn(p, ",");
        if (len == 4 && !strncmp(p, "cuda", 4))
            return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* Which device to bind: shmemx_init_attr, else USHMEM_DEVICE, else the
 * launcher's LOCAL_RANK, else (cuda named in USHMEM_TRANSPORTS) the local
 * rank; the last two modulo the device count, since several PEs per GPU is a
 * normal configuration. Returns -1 for none. *soft: a failure to bind is not
 * an error (LOCAL_RANK is set by launchers of CPU-only jobs too). */
static long choose_device(const char **source, int *soft, int *modulo)
{
    const char *lr = getenv("LOCAL_RANK");
    *soft = 0;
    *modulo = 0;
    if (requested_device >= 0) {
        *source = "shmemx_init_attr";
        return requested_device;
    }
    if (ushmemi_env.device >= 0) {
        *source = "USHMEM_DEVICE";
        return ushmemi_env.device;
    }
    if (lr && *lr) {
        *source = "LOCAL_RANK";
        *soft = 1;
        *modulo = 1;
        return strtol(lr, NULL, 10);
    }
    if (cuda_listed()) {
        *source = "USHMEM_TRANSPORTS=cuda";
        *modulo = 1;
        return ushmemi_g.local_rank;
    }
    return -1;
}

static int load_kernels(const char *call)
{
    const void *image = ushmemi_cuda_kernels_image();
    static const char *const fixed_names[K_NFIXED] = {
        "ushmemi_k_amo32",     "ushmemi_k_amo64",     "ushmemi_k_sigadd",   "ushmemi_k_copy",
        "ushmemi_k_coll_copy", "ushmemi_k_coll_sync", "ushmemi_k_proxy_req"};
    if (!image) {
        ushmemi_debug(call, "library built without nvcc: device atomics, signal ADD on a stream "
                            "and reductions on a stream are unavailable");
        return 0;
    }
    CUresult r = ushmemi_cu.cuModuleLoadData(&ushmemi_cuda.mod, image);
    if (r != CUDA_SUCCESS) {
        ushmemi_debug(call, "embedded kernels do not load on device %d (built for sm_90): %s",
                      ushmemi_cuda.device, ushmemi_cu_errstr(r));
        ushmemi_cuda.mod = NULL;
        return 0;
    }
    for (int k = 0; k < K_NFIXED; k++)
        if (CU_TRY(ushmemi_cu.cuModuleGetFunction(&ushmemi_cuda.fixed[k], ushmemi_cuda.mod,
                                                  fixed_names[k]),
                   call))
            return USHMEM_ESYS;
    return 0;
}

CUfunction ushmemi_cuda_kernel(const char *name, const char *call)
{
    CUfunction f = NULL;
    if (!ushmemi_cuda.mod)
        ushmemi_fatal(call,
                      "needs the embedded CUDA kernels, and this library has none for "
                      "device %d (built without nvcc, or not for this GPU)",
                      ushmemi_cuda.device);
    CU_CHECK(ushmemi_cu.cuModuleGetFunction(&f, ushmemi_cuda.mod, name), call);
    return f;
}

CUfunction ushmemi_cuda_fixed(int k, const char *call)
{
    if (USHMEMI_UNLIKELY(!ushmemi_cuda.mod))
        ushmemi_cuda_kernel("", call); /* reports */
    return ushmemi_cuda.fixed[k];
}

/* ---- device heap ---- */

static int vmm_supported(void)
{
    int vmm = 0, fd = 0;
    ushmemi_cu.cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                    ushmemi_cuda.dev);
    ushmemi_cu.cuDeviceGetAttribute(
        &fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, ushmemi_cuda.dev);
    return vmm && fd;
}

static void vmm_prop(CUmemAllocationProp *prop)
{
    memset(prop, 0, sizeof *prop);
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = ushmemi_cuda.device;
}

/* Reserve an address range for handle h and map it read-write for our
 * device. *va is written only on success. */
static int vmm_map(CUmemGenericAllocationHandle h, size_t size, CUdeviceptr *va, const char *call)
{
    CUdeviceptr p = 0;
    CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, ushmemi_cuda.device},
                              CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    int rc = CU_TRY(ushmemi_cu.cuMemAddressReserve(&p, size, ushmemi_cuda.granularity, 0, 0), call);
    if (rc)
        return rc;
    rc = CU_TRY(ushmemi_cu.cuMemMap(p, size, 0, h, 0), call);
    if (rc)
        goto free_va;
    rc = CU_TRY(ushmemi_cu.cuMemSetAccess(p, size, &access, 1), call);
    if (rc)
        goto unmap;
    *va = p;
    return 0;
unmap:
    ushmemi_cu.cuMemUnmap(p, size);
free_va:
    ushmemi_cu.cuMemAddressFree(p, size);
    return rc;
}

static int heap_create(const char *call)
{
    size_t user = ushmemi_env.device_heap_size;
    const char *mode = ushmemi_env.cuda_ipc;
    int rc;

    if ((rc = ushmemi_cuda_dev_check_env(call)))
        return rc;
    if (strcmp(mode, "vmm") && strcmp(mode, "legacy")) {
        ushmemi_error(call, "USHMEM_CUDA_IPC='%s': use vmm or legacy", mode);
        return USHMEM_EINVAL;
    }
    if (user == 0 || user > SIZE_MAX / 2) {
        ushmemi_error(call, "device heap size %zu is not usable (USHMEM_DEVICE_HEAP_SIZE)", user);
        return USHMEM_EINVAL;
    }
    ushmemi_cuda.ipc = !strcmp(mode, "legacy") ? CUDA_IPC_LEGACY : CUDA_IPC_VMM;
    if (ushmemi_cuda.ipc == CUDA_IPC_VMM && !vmm_supported()) {
        ushmemi_debug(call,
                      "device %d cannot export VMM memory as file descriptors; using "
                      "legacy CUDA IPC",
                      ushmemi_cuda.device);
        ushmemi_cuda.ipc = CUDA_IPC_LEGACY;
    }
    if (ushmemi_cuda.ipc == CUDA_IPC_VMM) {
        CUmemAllocationProp prop;
        vmm_prop(&prop);
        rc = CU_TRY(ushmemi_cu.cuMemGetAllocationGranularity(&ushmemi_cuda.granularity, &prop,
                                                             CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
                    call);
        if (rc)
            return rc;
        size_t g = ushmemi_cuda.granularity;
        ushmemi_cuda.size = (USHMEMI_CUDA_INTERNAL_SIZE + user + g - 1) / g * g;
        CUresult r = ushmemi_cu.cuMemCreate(&ushmemi_cuda.handle, ushmemi_cuda.size, &prop, 0);
        if (r != CUDA_SUCCESS) {
            ushmemi_error(call,
                          "cannot allocate a %zu-byte device heap on device %d: %s (lower "
                          "USHMEM_DEVICE_HEAP_SIZE; %d PEs on this host may share the GPU)",
                          ushmemi_cuda.size, ushmemi_cuda.device, ushmemi_cu_errstr(r),
                          ushmemi_g.local_size);
            return USHMEM_ENOMEM;
        }
        rc = vmm_map(ushmemi_cuda.handle, ushmemi_cuda.size, &ushmemi_cuda.base, call);
        if (rc) {
            ushmemi_cu.cuMemRelease(ushmemi_cuda.handle);
            return rc;
        }
    } else {
        ushmemi_cuda.granularity = (size_t)2 << 20;
        ushmemi_cuda.size = USHMEMI_CUDA_INTERNAL_SIZE + user;
        CUresult r = ushmemi_cu.cuMemAlloc(&ushmemi_cuda.base, ushmemi_cuda.size);
        if (r != CUDA_SUCCESS) {
            ushmemi_error(call,
                          "cannot allocate a %zu-byte device heap on device %d: %s (lower "
                          "USHMEM_DEVICE_HEAP_SIZE)",
                          ushmemi_cuda.size, ushmemi_cuda.device, ushmemi_cu_errstr(r));
            return USHMEM_ENOMEM;
        }
    }
    /* Stream sync counters start at zero; peers can only write them after
     * the exchange, which comes after this synchronous clear. */
    rc = CU_TRY(ushmemi_cu.cuMemsetD8Async(ushmemi_cuda.base, 0, USHMEMI_CUDA_INTERNAL_SIZE,
                                           ushmemi_cuda.stream),
                call);
    if (!rc)
        rc = CU_TRY(ushmemi_cu.cuStreamSynchronize(ushmemi_cuda.stream), call);
    return rc;
}

static void heap_destroy(void)
{
    if (!ushmemi_cuda.base)
        return;
    if (ushmemi_cuda.ipc == CUDA_IPC_VMM) {
        ushmemi_cu.cuMemUnmap(ushmemi_cuda.base, ushmemi_cuda.size);
        ushmemi_cu.cuMemAddressFree(ushmemi_cuda.base, ushmemi_cuda.size);
        ushmemi_cu.cuMemRelease(ushmemi_cuda.handle);
    } else {
        ushmemi_cu.cuMemFree(ushmemi_cuda.base);
    }
    ushmemi_cuda.base = 0;
}

/* ---- transport ops ---- */

static void release_device(void)
{
    ushmemi_cuda_t *c = &ushmemi_cuda;
    if (c->device < 0)
        return;
    ushmemi_cuda_ctx();
    ushmemi_devheap_fini();
    ushmemi_cuda_progress_fini();
    ushmemi_cuda_proxy_fini();
    if (c->stream)
        ushmemi_cu.cuStreamSynchronize(c->stream);
    heap_destroy();
    if (c->mod)
        ushmemi_cu.cuModuleUnload(c->mod);
    if (c->scratch)
        ushmemi_cu.cuMemFreeHost(c->scratch);
    if (c->stream)
        ushmemi_cu.cuStreamDestroy(c->stream);
    if (c->poll_stream)
        ushmemi_cu.cuStreamDestroy(c->poll_stream);
    if (c->proxy_stream)
        ushmemi_cu.cuStreamDestroy(c->proxy_stream);
    if (c->ctx)
        ushmemi_cu.cuDevicePrimaryCtxRelease(c->dev);
    free(c->sent);
    free(c->expected);
    free(c->peer_ipc);
    free(c->peer_dev);
    ushmemi_seg_t *seg = &ushmemi_g.seg[USHMEMI_SEG_DEVHEAP];
    free(seg->peer);
    memset(seg, 0, sizeof *seg);
    seg->fd = -1;
    c->sent = c->expected = NULL;
    c->peer_ipc = NULL;
    c->peer_dev = NULL;
    c->mod = NULL;
    c->scratch = NULL;
    c->stream = c->poll_stream = c->proxy_stream = NULL;
    c->ctx = NULL;
    c->nbi_pending = 0;
    c->ipc = CUDA_IPC_NONE;
    c->device = -1;
}

static int bind_device(long want, int modulo, const char *source, const char *call)
{
    ushmemi_cuda_t *c = &ushmemi_cuda;
    int ndev = 0, uva = 0, memops = 0, rc;
    ushmemi_cu.cuDeviceGetCount(&ndev);
    if (modulo && want >= 0)
        want %= ndev;
    if (want < 0 || want >= ndev) {
        ushmemi_error(call, "%s asks for CUDA device %ld, but %d device%s visible", source, want,
                      ndev, ndev == 1 ? " is" : "s are");
        return USHMEM_EINVAL;
    }
    c->device = (int)want;
    if ((rc = CU_TRY(ushmemi_cu.cuDeviceGet(&c->dev, c->device), call)) ||
        (rc = CU_TRY(ushmemi_cu.cuDevicePrimaryCtxRetain(&c->ctx, c->dev), call)))
        return rc;
    if ((rc = CU_TRY(ushmemi_cu.cuCtxSetCurrent(c->ctx), call)))
        return rc;
    ushmemi_cu.cuDeviceGetAttribute(&uva, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, c->dev);
    ushmemi_cu.cuDeviceGetAttribute(&memops, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
                                    c->dev);
    if (!uva || !memops) {
        ushmemi_error(call, "CUDA device %d lacks %s, which the device heap needs", c->device,
                      !uva ? "unified addressing" : "64-bit stream memory operations");
        return USHMEM_EUNSUPPORTED;
    }
    /* The proxy's stream at the greatest priority, so its AMO kernels (other
     * hosts' atomics) are scheduled ahead of the application's. Priorities
     * do not order copies; the stream-wait hang on pretend hosts
     * (docs/mpi.md) was not helped by this. */
    int least = 0, greatest = 0;
    ushmemi_cu.cuCtxGetStreamPriorityRange(&least, &greatest);
    if ((rc = CU_TRY(ushmemi_cu.cuStreamCreateWithPriority(&c->proxy_stream, CU_STREAM_NON_BLOCKING,
                                                           greatest),
                     call)) ||
        (rc = CU_TRY(ushmemi_cu.cuStreamCreate(&c->stream, 0), call)) ||
        (rc = CU_TRY(ushmemi_cu.cuStreamCreate(&c->poll_stream, CU_STREAM_NON_BLOCKING), call)) ||
        (rc =
             CU_TRY(ushmemi_cu.cuMemHostAlloc((void **)&c->scratch, 4096,
                                              CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
                    call)) ||
        (rc = CU_TRY(ushmemi_cu.cuMemHostGetDevicePointer(&c->scratch_d, c->scratch, 0), call)))
        return rc;
    if ((rc = load_kernels(call)) || (rc = heap_create(call)))
        return rc;
    int n = ushmemi_g.n_pes;
    ushmemi_seg_t *seg = &ushmemi_g.seg[USHMEMI_SEG_DEVHEAP];
    seg->peer = calloc((size_t)n, sizeof *seg->peer);
    c->peer_ipc = calloc((size_t)n, sizeof *c->peer_ipc);
    c->peer_dev = calloc((size_t)n, sizeof *c->peer_dev);
    c->sent = calloc((size_t)n, sizeof *c->sent);
    c->expected = calloc((size_t)n, sizeof *c->expected);
    if (!seg->peer || !c->peer_ipc || !c->peer_dev || !c->sent || !c->expected)
        return USHMEM_ENOMEM;
    if (n > USHMEMI_CUDA_MAX_PES) {
        ushmemi_error(call, "%d PEs do not fit the device heap's sync region (at most %d)", n,
                      USHMEMI_CUDA_MAX_PES);
        return USHMEM_EUNSUPPORTED;
    }
    rc = ushmemi_devheap_init((char *)(uintptr_t)c->base + USHMEMI_CUDA_INTERNAL_SIZE,
                              c->size - USHMEMI_CUDA_INTERNAL_SIZE, call);
    if (rc)
        return rc;
    seg->base = (char *)(uintptr_t)c->base;
    seg->size = c->size;
    seg->kind = USHMEMI_MEM_DEVICE;
    seg->fd = -1;
    seg->peer[ushmemi_g.my_pe] = seg->base;
    c->peer_ipc[ushmemi_g.my_pe] = c->ipc;
    c->peer_dev[ushmemi_g.my_pe] = c->device;
    return 0;
}

/* Never fails by itself: a PE that cannot set up its device must still take
 * part in attach's collective exchange, which then fails the job everywhere. */
static int cuda_init(void)
{
    static const char call[] = "shmem_init";
    const char *source = "";
    int soft, modulo;
    long want = choose_device(&source, &soft, &modulo);
    requested_device = -1;
    setup_rc = 0;
    if (want < 0 && !modulo)
        return 0;
    if (ushmemi_cu_load() != 0) {
        if (soft) {
            ushmemi_debug(call, "LOCAL_RANK is set but CUDA is unusable (%s); no device heap",
                          ushmemi_cu_reason());
            return 0;
        }
        ushmemi_error(call, "%s asks for a CUDA device, but CUDA is unusable: %s", source,
                      ushmemi_cu_reason());
        setup_rc = USHMEM_EUNSUPPORTED;
        return 0;
    }
    setup_rc = bind_device(want, modulo, source, call);
    if (setup_rc) {
        release_device();
        ushmemi_cuda.device = -1;
    } else {
        ushmemi_debug(call, "bound CUDA device %d (%s)", ushmemi_cuda.device, source);
    }
    return 0;
}

/* What rma/, amo/, coll/ and sync/ reach device memory with (transport.h). */
static const ushmemi_devmem_ops_t devmem_ops = {
    .put = ushmemi_cuda_put,
    .get = ushmemi_cuda_get,
    .strided = ushmemi_cuda_strided,
    .quiet = ushmemi_cuda_quiet,
    .amo = ushmemi_cuda_amo,
    .signal = ushmemi_cuda_signal,
    .load = ushmemi_cuda_load,
    .broadcast = ushmemi_cuda_broadcast,
    .fcollect = ushmemi_cuda_fcollect,
    .alltoall = ushmemi_cuda_alltoall,
    .reduce = ushmemi_cuda_reduce,
    .unmapped_why = ushmemi_cuda_unmapped_why,
};

/* The device heap is in use: the core's flag and the devmem table go
 * together. */
static void set_active(int on)
{
    ushmemi_g.cuda_active = on;
    ushmemi_devmem = on ? &devmem_ops : NULL;
}

static void cuda_fini(void)
{
    set_active(0);
    release_device();
}

static int cuda_reachable(int pe, ushmemi_mem_kind_t kind)
{
    return kind == USHMEMI_MEM_DEVICE && ushmemi_g.seg[USHMEMI_SEG_DEVHEAP].peer &&
           ushmemi_g.seg[USHMEMI_SEG_DEVHEAP].peer[pe] != NULL;
}

typedef struct {
    const cuda_card_t *cards;
    const char *call;
} import_arg_t;

/* ---- peers on other GPUs ----
 * Ordinals are per process (CUDA_VISIBLE_DEVICES may differ between PEs), so
 * GPUs are compared by PCI location. A peer on another GPU is mapped only when
 * cuDeviceCanAccessPeer says ours can reach it (NVLink or PCIe P2P): mapping
 * with cuMemSetAccess for our device is what gives the access, no
 * cuCtxEnablePeerAccess needed for VMM memory. Without P2P the peer stays
 * unmapped, and every operation on its device heap fails with
 * ushmemi_cuda_unmapped_why()'s message. */
static void pci_of(CUdevice d, int32_t pci[3])
{
    int v[3] = {-1, -1, -1};
    ushmemi_cu.cuDeviceGetAttribute(&v[0], CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d);
    ushmemi_cu.cuDeviceGetAttribute(&v[1], CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d);
    ushmemi_cu.cuDeviceGetAttribute(&v[2], CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d);
    for (int i = 0; i < 3; i++)
        pci[i] = v[i];
}

/* The ordinal, in this process, of the GPU at PCI location pci; -1 if not visible. */
static int ordinal_of(const int32_t pci[3])
{
    int ndev = 0;
    ushmemi_cu.cuDeviceGetCount(&ndev);
    for (int i = 0; i < ndev; i++) {
        CUdevice d;
        int32_t p[3];
        if (ushmemi_cu.cuDeviceGet(&d, i) != CUDA_SUCCESS)
            continue;
        pci_of(d, p);
        if (!memcmp(p, pci, sizeof p))
            return i;
    }
    return -1;
}

/* 1 when pe's heap (card c) is on a GPU this PE's device cannot access: then
 * it is recorded as such and not mapped. 0: same GPU, P2P possible, or the
 * GPU is not visible here (the mapping itself decides, see import_peer). */
static int peer_unreachable(int pe, const cuda_card_t *c, const char *call)
{
    ushmemi_cuda_t *u = &ushmemi_cuda;
    int ord = ordinal_of(c->pci), can = 0;
    u->peer_dev[pe] = ord;
    if (ord < 0 || ord == u->device)
        return 0;
    CUdevice pd;
    if (ushmemi_cu.cuDeviceGet(&pd, ord) != CUDA_SUCCESS ||
        ushmemi_cu.cuDeviceCanAccessPeer(&can, u->dev, pd) != CUDA_SUCCESS)
        can = 0;
    if (can)
        return 0;
    u->peer_ipc[pe] = CUDA_IPC_NO_P2P;
    ushmemi_debug(call, "%s", ushmemi_cuda_unmapped_why(pe));
    return 1;
}

const char *ushmemi_cuda_unmapped_why(int pe)
{
    static __thread char buf[320];
    ushmemi_cuda_t *u = &ushmemi_cuda;
    if (!u->peer_ipc || pe < 0 || pe >= ushmemi_g.n_pes || u->peer_ipc[pe] != CUDA_IPC_NO_P2P)
        return NULL;
    if (u->peer_dev[pe] < 0)
        snprintf(buf, sizeof buf,
                 "PE %d's device heap is on a GPU this PE does not see (CUDA_VISIBLE_DEVICES) "
                 "and could not be mapped for its GPU %d; make every GPU visible to every PE",
                 pe, u->device);
    else
        snprintf(buf, sizeof buf,
                 "PE %d's device heap is on GPU %d, which this PE's GPU %d cannot access "
                 "(cuDeviceCanAccessPeer: no NVLink/PCIe peer-to-peer path between them; "
                 "bind PEs that talk on the device heap to GPUs that can, e.g. the same GPU)",
                 pe, u->peer_dev[pe], u->device);
    return buf;
}

static int import_peer(int pe, int *fds, int nfd, void *argp)
{
    const import_arg_t *arg = argp;
    int rc = 0;
    if (nfd == 1 && ushmemi_cuda.base && !peer_unreachable(pe, &arg->cards[pe], arg->call)) {
        CUmemGenericAllocationHandle h;
        CUdeviceptr va = 0;
        size_t size = arg->cards[pe].size;
        rc = CU_TRY(ushmemi_cu.cuMemImportFromShareableHandle(
                        &h, (void *)(uintptr_t)fds[0], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                    arg->call);
        if (!rc) {
            rc = vmm_map(h, size, &va, arg->call);
            ushmemi_cu.cuMemRelease(h); /* the mapping keeps the memory alive */
        }
        if (rc && ushmemi_cuda.peer_dev[pe] != ushmemi_cuda.device) {
            /* Another GPU (possibly not visible here: CUDA_VISIBLE_DEVICES)
             * that would not map: that peer stays unmapped, and transfers to
             * it say so. */
            ushmemi_debug(arg->call,
                          "PE %d's device heap (its device %d, here %d) is not accessible "
                          "from device %d; it stays unmapped",
                          pe, arg->cards[pe].device, ushmemi_cuda.peer_dev[pe],
                          ushmemi_cuda.device);
            ushmemi_cuda.peer_ipc[pe] = CUDA_IPC_NO_P2P;
            rc = 0;
        } else if (rc) {
            ushmemi_error(arg->call, "cannot map PE %d's device heap (device %d) on device %d", pe,
                          arg->cards[pe].device, ushmemi_cuda.device);
        } else {
            ushmemi_g.seg[USHMEMI_SEG_DEVHEAP].peer[pe] = (char *)(uintptr_t)va;
            ushmemi_cuda.peer_ipc[pe] = CUDA_IPC_VMM;
        }
    }
    for (int i = 0; i < nfd; i++)
        close(fds[i]);
    return rc;
}

static int cuda_attach(void)
{
    static const char call[] = "shmem_init";
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe, rc = 0, any_vmm = 0, any_heap = 0;
    cuda_card_t mine, *cards = calloc((size_t)n, sizeof *cards);
    memset(&mine, 0, sizeof mine);
    mine.state = setup_rc ? -1 : ushmemi_cuda.base ? 1 : 0;
    mine.ipc = ushmemi_cuda.ipc;
    mine.device = ushmemi_cuda.device;
    mine.size = ushmemi_cuda.size;
    if (mine.state == 1) {
        pci_of(ushmemi_cuda.dev, mine.pci);
        ushmemi_cuda_dev_card(&mine);
    }
    if (mine.state == 1 && ushmemi_cuda.ipc == CUDA_IPC_LEGACY)
        rc = CU_TRY(ushmemi_cu.cuIpcGetMemHandle(&mine.ipc_handle, ushmemi_cuda.base), call);
    if (rc)
        mine.state = -1;
    if (!cards)
        return USHMEM_ENOMEM;
    rc = ushmemi_bootstrap()->ops->allgather(&mine, cards, sizeof mine);
    if (rc)
        goto out;
    for (int pe = 0; pe < n && rc == 0; pe++) {
        if (cards[pe].state < 0) {
            if (pe != me && mine.state >= 0)
                ushmemi_error(call, "PE %d could not set up its CUDA device heap", pe);
            rc = USHMEM_EUNSUPPORTED;
        } else if (cards[pe].state == 1 && mine.state == 1 && cards[pe].size != mine.size) {
            ushmemi_error(call,
                          "PE %d has a %llu-byte device heap, this PE %llu: set the same "
                          "USHMEM_DEVICE_HEAP_SIZE on every PE",
                          pe, (unsigned long long)cards[pe].size, (unsigned long long)mine.size);
            rc = USHMEM_EINVAL;
        }
        any_vmm |= cards[pe].state == 1 && cards[pe].ipc == CUDA_IPC_VMM;
        any_heap |= cards[pe].state == 1;
    }
    if (rc || !any_heap)
        goto out;
    if (any_vmm) {
        int fd = -1, nfd = 0;
        import_arg_t arg = {cards, call};
        if (mine.state == 1 && ushmemi_cuda.ipc == CUDA_IPC_VMM) {
            int lrc =
                CU_TRY(ushmemi_cu.cuMemExportToShareableHandle(
                           &fd, ushmemi_cuda.handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                       call);
            nfd = lrc ? 0 : 1;
        }
        /* Collective: every PE takes part, with or without a descriptor. */
        rc = ushmemi_fd_exchange(&fd, nfd, import_peer, &arg, call);
        if (fd >= 0)
            close(fd);
        if (rc)
            goto out;
    }
    for (int pe = 0; pe < n && mine.state == 1; pe++) {
        if (pe == me || !ushmemi_g.is_local[pe] || cards[pe].state != 1 ||
            cards[pe].ipc != CUDA_IPC_LEGACY || peer_unreachable(pe, &cards[pe], call))
            continue;
        CUdeviceptr p = 0;
        int lrc = CU_TRY(ushmemi_cu.cuIpcOpenMemHandle(&p, cards[pe].ipc_handle,
                                                       CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                         call);
        if (lrc) {
            ushmemi_error(call, "cannot open PE %d's device heap (legacy CUDA IPC; its GPU %s)", pe,
                          ushmemi_cuda.peer_dev[pe] < 0
                              ? "is not visible here (CUDA_VISIBLE_DEVICES)"
                              : "is visible here");
            rc = lrc;
            break;
        }
        ushmemi_g.seg[USHMEMI_SEG_DEVHEAP].peer[pe] = (char *)(uintptr_t)p;
        ushmemi_cuda.peer_ipc[pe] = CUDA_IPC_LEGACY;
    }
    /* Agree, so that no PE goes on with a peer that could not map it. */
    {
        int32_t ok = rc == 0, *oks = calloc((size_t)n, sizeof *oks);
        int brc = oks ? ushmemi_bootstrap()->ops->allgather(&ok, oks, sizeof ok) : USHMEM_ENOMEM;
        for (int pe = 0; pe < n && !brc && rc == 0; pe++)
            if (!oks[pe])
                rc = USHMEM_EBOOTSTRAP;
        if (brc)
            rc = brc;
        free(oks);
    }
    if (rc == 0 && mine.state == 1)
        rc = ushmemi_cuda_dev_attach(cards, call);
out:
    free(cards);
    if (rc == 0 && mine.state == 1)
        set_active(1);
    return rc;
}

static void cuda_detach(void)
{
    ushmemi_seg_t *seg = &ushmemi_g.seg[USHMEMI_SEG_DEVHEAP];
    set_active(0);
    if (!seg->peer || ushmemi_cuda.device < 0)
        return;
    ushmemi_cuda_dev_abort();
    ushmemi_cuda_ctx();
    ushmemi_cu.cuStreamSynchronize(ushmemi_cuda.stream);
    for (int pe = 0; pe < ushmemi_g.n_pes; pe++) {
        CUdeviceptr p = (CUdeviceptr)(uintptr_t)seg->peer[pe];
        if (pe == ushmemi_g.my_pe || !p)
            continue;
        if (ushmemi_cuda.peer_ipc[pe] == CUDA_IPC_VMM) {
            ushmemi_cu.cuMemUnmap(p, ushmemi_cuda.size);
            ushmemi_cu.cuMemAddressFree(p, ushmemi_cuda.size);
        } else {
            ushmemi_cu.cuIpcCloseMemHandle(p);
        }
        seg->peer[pe] = NULL;
    }
}

static const char *cuda_unusable_reason(void)
{
    return ushmemi_cu_load() == 0 ? NULL : ushmemi_cu_reason();
}

const ushmemi_transport_ops_t ushmemi_transport_cuda = {
    .name = "cuda",
    .caps = USHMEMI_CAP_MAP | USHMEMI_CAP_DEVICE,
    .unusable_reason = cuda_unusable_reason,
    .init = cuda_init,
    .fini = cuda_fini,
    .reachable = cuda_reachable,
    .attach = cuda_attach,
    .detach = cuda_detach,
};

/* For ushmem_info: what the driver offers, or why CUDA is off. */
void ushmemi_cuda_describe(FILE *out)
{
    if (ushmemi_cu_load() != 0) {
        fprintf(out, "  %-6s unusable: %s\n", "cuda", ushmemi_cu_reason());
        return;
    }
    fprintf(out,
            "  %-6s usable: %s; kernels %s; binds a device when shmemx_init_attr, "
            "USHMEM_DEVICE or LOCAL_RANK names one\n",
            "cuda", ushmemi_cu_reason(),
            ushmemi_cuda_kernels_image() ? "embedded (sm_90 + PTX)" : "not built (no nvcc)");
}

/* ---- host API on device memory ---- */

int ushmemi_cuda_is_device(const void *p)
{
    if (ushmemi_devheap_has(p))
        return 1;
    for (int s = 0; s < USHMEMI_NSEG; s++) {
        const ushmemi_seg_t *seg = &ushmemi_g.seg[s];
        if (seg->kind == USHMEMI_MEM_HOST && (uintptr_t)p - (uintptr_t)seg->base < seg->size)
            return 0;
    }
    /* The plural form: an unknown (pageable) pointer is not an API error.
     * The context first: the proxy's threads ask too, and without a current
     * context the driver calls device memory unknown. */
    ushmemi_cuda_ctx();
    unsigned int type = 0;
    int attr = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    void *data[] = {&type};
    CUresult r = ushmemi_cu.cuPointerGetAttributes(1, &attr, data, (CUdeviceptr)(uintptr_t)p);
    return r == CUDA_SUCCESS && type == CU_MEMORYTYPE_DEVICE;
}

void *ushmemi_cuda_host_alloc(size_t n)
{
    void *p = NULL;
    if (!ushmemi_g.cuda_active)
        return NULL;
    ushmemi_cuda_ctx();
    return ushmemi_cu.cuMemHostAlloc(&p, n, CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS ? p : NULL;
}

void ushmemi_cuda_host_free(void *p)
{
    if (p)
        ushmemi_cu.cuMemFreeHost(p);
}

/* Blocking unless nbi: then complete at the next quiet. */
static void internal_copy(void *d, const void *s, size_t n, int nbi, const char *call)
{
    ushmemi_cuda_ctx();
    pthread_mutex_lock(&ushmemi_cuda.lock);
    CU_CHECK(ushmemi_cu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)d, (CUdeviceptr)(uintptr_t)s, n,
                                      ushmemi_cuda.stream),
             call);
    if (nbi)
        ushmemi_cuda.nbi_pending = 1;
    else {
        CU_CHECK(ushmemi_cu.cuStreamSynchronize(ushmemi_cuda.stream), call);
        ushmemi_cuda.nbi_pending = 0;
    }
    pthread_mutex_unlock(&ushmemi_cuda.lock);
}

int ushmemi_cuda_put(void *remote, const void *local, size_t n, int sym_dev, int nbi,
                     const char *call)
{
    if (!sym_dev && !ushmemi_cuda_is_device(local))
        return 0;
    internal_copy(remote, local, n, nbi, call);
    return 1;
}

int ushmemi_cuda_get(void *local, const void *remote, size_t n, int sym_dev, int nbi,
                     const char *call)
{
    if (!sym_dev && !ushmemi_cuda_is_device(local))
        return 0;
    internal_copy(local, remote, n, nbi, call);
    return 1;
}

int ushmemi_cuda_strided(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t nblocks, int sym_dev, const char *call)
{
    if (!sym_dev && !ushmemi_cuda_is_device(dst) && !ushmemi_cuda_is_device(src))
        return 0;
    ushmemi_cuda_ctx();
    pthread_mutex_lock(&ushmemi_cuda.lock);
    if (dpitch >= width && spitch >= width) {
        CUDA_MEMCPY2D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
        c.srcDevice = (CUdeviceptr)(uintptr_t)src;
        c.dstDevice = (CUdeviceptr)(uintptr_t)dst;
        c.srcPitch = spitch;
        c.dstPitch = dpitch;
        c.WidthInBytes = width;
        c.Height = nblocks;
        CU_CHECK(ushmemi_cu.cuMemcpy2DAsync(&c, ushmemi_cuda.stream), call);
    } else {
        for (size_t b = 0; b < nblocks; b++)
            CU_CHECK(ushmemi_cu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst + b * dpitch,
                                              (CUdeviceptr)(uintptr_t)src + b * spitch, width,
                                              ushmemi_cuda.stream),
                     call);
    }
    CU_CHECK(ushmemi_cu.cuStreamSynchronize(ushmemi_cuda.stream), call);
    pthread_mutex_unlock(&ushmemi_cuda.lock);
    return 1;
}

void ushmemi_cuda_quiet(void)
{
    if (!ushmemi_cuda.nbi_pending)
        return;
    ushmemi_cuda_ctx();
    pthread_mutex_lock(&ushmemi_cuda.lock);
    CU_CHECK(ushmemi_cu.cuStreamSynchronize(ushmemi_cuda.stream), "shmem_quiet");
    ushmemi_cuda.nbi_pending = 0;
    pthread_mutex_unlock(&ushmemi_cuda.lock);
}

/* Device atomics are GPU atomics (one-thread kernel) on every PE, so they are
 * atomic with each other and with the kernels' own system-scope atomics; host
 * memory keeps CPU atomics (DESIGN.md: one mechanism per memory). */
/* The one-thread AMO kernel on stream s, waited for; its result lands in
 * the scratch page at byte out_off. The caller holds the stream's lock. */
void ushmemi_cuda_amo_launch(const ushmemi_cuda_kset_t *k, CUstream s, size_t out_off,
                             ushmemi_amo_op_t op, size_t size, void *remote, uint64_t value,
                             uint64_t cond, const char *call)
{
    CUfunction f = k ? (size == 4 ? k->amo32 : k->amo64)
                     : ushmemi_cuda_fixed(size == 4 ? K_AMO32 : K_AMO64, call);
    int kop = (int)op;
    uint32_t v32 = (uint32_t)value, c32 = (uint32_t)cond;
    CUdeviceptr out = (k ? k->scratch_d : ushmemi_cuda.scratch_d) + out_off;
    void *params[] = {&remote, &kop, size == 4 ? (void *)&v32 : (void *)&value,
                      size == 4 ? (void *)&c32 : (void *)&cond, &out};
    CU_CHECK(ushmemi_cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL), call);
}

void ushmemi_cuda_sigadd_launch(const ushmemi_cuda_kset_t *k, CUstream s, uint64_t *remote,
                                uint64_t value, const char *call)
{
    CUfunction f = k ? k->sigadd : ushmemi_cuda_fixed(K_SIGADD, call);
    unsigned long long v = value;
    void *params[] = {&remote, &v};
    CU_CHECK(ushmemi_cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL), call);
}

uint64_t ushmemi_cuda_amo_result(size_t out_off, size_t size)
{
    uint64_t old = __atomic_load_n(&ushmemi_cuda.scratch[out_off / 8], __ATOMIC_ACQUIRE);
    return size == 4 ? (uint32_t)old : old;
}

static uint64_t amo_kernel(CUstream s, size_t out_off, ushmemi_amo_op_t op, size_t size,
                           void *remote, uint64_t value, uint64_t cond, const char *call)
{
    ushmemi_cuda_amo_launch(NULL, s, out_off, op, size, remote, value, cond, call);
    CU_CHECK(ushmemi_cu.cuStreamSynchronize(s), call);
    return ushmemi_cuda_amo_result(out_off, size);
}

uint64_t ushmemi_cuda_amo(ushmemi_amo_op_t op, size_t size, void *remote, uint64_t value,
                          uint64_t cond, const char *call)
{
    if (size != 4 && size != 8)
        ushmemi_fatal(call, "unsupported AMO size %zu", size);
    ushmemi_cuda_ctx();
    pthread_mutex_lock(&ushmemi_cuda.lock);
    uint64_t old = amo_kernel(ushmemi_cuda.stream, 0, op, size, remote, value, cond, call);
    ushmemi_cuda.nbi_pending = 0;
    pthread_mutex_unlock(&ushmemi_cuda.lock);
    return old;
}

void ushmemi_cuda_signal(uint64_t *remote, uint64_t value, int sig_op, const char *call)
{
    ushmemi_cuda_ctx();
    if (sig_op == SHMEM_SIGNAL_ADD) {
        (void)ushmemi_cuda_amo(USHMEMI_AMO_ADD, 8, remote, value, 0, call);
        return;
    }
    pthread_mutex_lock(&ushmemi_cuda.lock);
    CU_CHECK(ushmemi_cu.cuStreamWriteValue64(ushmemi_cuda.stream, (CUdeviceptr)(uintptr_t)remote,
                                             value, CU_STREAM_WRITE_VALUE_DEFAULT),
             call);
    CU_CHECK(ushmemi_cu.cuStreamSynchronize(ushmemi_cuda.stream), call);
    ushmemi_cuda.nbi_pending = 0;
    pthread_mutex_unlock(&ushmemi_cuda.lock);
}

void *ushmemi_cuda_host_alloc_mapped(size_t n, uint64_t *dev)
{
    void *p = NULL;
    CUdeviceptr d = 0;
    if (!ushmemi_g.cuda_active)
        return NULL;
    ushmemi_cuda_ctx();
    if (ushmemi_cu.cuMemHostAlloc(&p, n, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP) !=
        CUDA_SUCCESS)
        return NULL;
    if (ushmemi_cu.cuMemHostGetDevicePointer(&d, p, 0) != CUDA_SUCCESS) {
        ushmemi_cu.cuMemFreeHost(p);
        return NULL;
    }
    *dev = (uint64_t)d;
    return p;
}

int ushmemi_cuda_load(const volatile void *addr, size_t size, void *out, const char *call)
{
    const void *a = (const void *)(uintptr_t)addr;
    if (!ushmemi_devheap_has(a)) {
        if (ushmemi_seg_of(a, size) < 0 && ushmemi_cuda_is_device(a))
            ushmemi_fatal(call,
                          "%p is device memory that is not on the symmetric heap: wait and "
                          "test need a symmetric variable (allocate it with shmem_malloc)",
                          a);
        return 0;
    }
    ushmemi_cuda_ctx();
    pthread_mutex_lock(&ushmemi_cuda.lock);
    CUdeviceptr tmp = ushmemi_cuda.scratch_d + 64;
    CU_CHECK(
        ushmemi_cu.cuMemcpyAsync(tmp, (CUdeviceptr)(uintptr_t)a, size, ushmemi_cuda.poll_stream),
        call);
    CU_CHECK(ushmemi_cu.cuStreamSynchronize(ushmemi_cuda.poll_stream), call);
    memcpy(out, (const char *)ushmemi_cuda.scratch + 64, size);
    pthread_mutex_unlock(&ushmemi_cuda.lock);
    return 1;
}
