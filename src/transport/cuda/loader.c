/* Run-time loading of the CUDA driver (libfabric's hmem_cuda pattern): dlopen
 * libcuda.so.1, take cuGetProcAddress from it and ask that for every entry
 * point of USHMEMI_CU_FUNCS at the CUDA 12.0 ABI. Nothing links against
 * CUDA; a machine without a driver gets a reason string, not an error. */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "transport/cuda/cuda_api.h"

ushmemi_cu_t ushmemi_cu;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_rc = USHMEM_EUNSUPPORTED;
static char load_reason[256] = "not loaded";

/* cuGetProcAddress_v2 (CUDA >= 12.0): the fifth argument reports whether the
 * symbol exists at the requested version. */
typedef CUresult (*get_proc_v2_t)(const char *sym, void **pfn, int ver, uint64_t flags,
                                  int *status);

#define CU_ABI_VERSION 12000

/* See load(): unless the user chose, before main() runs. The Python package
 * sets CUDA's default (lazy) before it loads the extension, so there this
 * changes nothing.
 * Also the number of hardware work queues, unless the user chose: CUDA
 * maps streams onto a few queues, and work queued behind a stream that
 * waits on the GPU (cuStreamWaitValue64, a request kernel waiting for its
 * answer) cannot start. Under MPS, with the variable unset, the proxy's
 * copies and atomics (other hosts' writes, which such a wait needs) stalled
 * behind the application's waits in 4 of 8 runs of tests/cuda/cuda_stream
 * on the H200 (2 PEs, pretend hosts); with it set (4, 8 or 16) in none of
 * 16. 8 is CUDA's default without MPS.
 * Under MPS all clients of a GPU draw their queues from one pool (on the
 * H200 about 120: 15 contexts at 8 each, 3 at 32; the driver reads the
 * variable once per process), and every PE with peers on other hosts has
 * two contexts (the proxy's own: proxy_stream.c). Where MPS looks active
 * (its pipe directory) and the launcher says how many PEs share this host,
 * each context asks for at most 120 / (2 x the PEs per GPU), a power of two:
 * 8 up to 7 PEs per GPU, 4 up to 15, 2 up to 30, then 1 (MPS takes at most
 * 48 clients). The GPUs are the host's (/proc/driver/nvidia/gpus), as the
 * PEs are spread over them; 1 when that cannot be read. */
long ushmemi_cuda_queues_for(long pes, long gpus)
{
    long per_gpu = gpus > 1 ? (pes + gpus - 1) / gpus : pes, want = 8;
    while (want > 1 && want * 2 * per_gpu > 120)
        want /= 2;
    return want;
}

static long host_gpus(void)
{
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    long n = 0;
    if (!d)
        return 1;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n > 0 ? n : 1;
}

static long local_pes(void)
{
    static const char *const names[] = {"USHMEM_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                        "MPI_LOCALNRANKS", "LOCAL_WORLD_SIZE"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        long n = v && *v ? strtol(v, NULL, 10) : 0;
        if (n > 0)
            return n;
    }
    return 1;
}

static int mps_likely(void)
{
    const char *pipe = getenv("CUDA_MPS_PIPE_DIRECTORY");
    char path[512];
    snprintf(path, sizeof path, "%s/control", pipe && *pipe ? pipe : "/tmp/nvidia-mps");
    return access(path, F_OK) == 0;
}

static void eager_loading(void)
{
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
    long want = mps_likely() ? ushmemi_cuda_queues_for(local_pes(), host_gpus()) : 8;
    char v[24];
    snprintf(v, sizeof v, "%ld", want);
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", v, 0);
}

__attribute__((constructor)) static void eager_loading_at_load(void)
{
    eager_loading();
}

static void load(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(load_reason, sizeof load_reason,
                 "libcuda.so.1 not found (no NVIDIA driver on this machine): %s", dlerror());
        return;
    }
    get_proc_v2_t get_proc = (get_proc_v2_t)dlsym(lib, "cuGetProcAddress_v2");
    if (!get_proc) {
        snprintf(load_reason, sizeof load_reason,
                 "the NVIDIA driver is older than CUDA 12.0 (no cuGetProcAddress_v2)");
        goto close_lib;
    }
#define USHMEMI_CU_LOOKUP(name, proto)                                                             \
    {                                                                                              \
        void *fn = NULL;                                                                           \
        int status = 0;                                                                            \
        if (get_proc(#name, &fn, CU_ABI_VERSION, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) !=    \
                CUDA_SUCCESS ||                                                                    \
            !fn) {                                                                                 \
            snprintf(load_reason, sizeof load_reason,                                              \
                     "the NVIDIA driver lacks %s (driver too old?)", #name);                       \
            goto close_lib;                                                                        \
        }                                                                                          \
        memcpy(&ushmemi_cu.name, &fn, sizeof fn);                                                  \
    }
    USHMEMI_CU_FUNCS(USHMEMI_CU_LOOKUP)
#undef USHMEMI_CU_LOOKUP
    {
        void *fn = NULL;
        int status = 0;
        if (get_proc("cuCtxCreate", &fn, 12050, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) ==
                CUDA_SUCCESS &&
            fn)
            memcpy(&ushmemi_cu.cuCtxCreate, &fn, sizeof fn);
    }

    /* Lazy loading (the default since CUDA 12.2) loads a kernel at its first
     * launch, and that load may wait for the whole context to go idle: a
     * kernel first launched while a stream of this PE waits for a word that
     * only the proxy's copies and atomics will write (PEs on other hosts)
     * then never starts, and nor does the proxy's work. Load eagerly unless
     * the user chose; the driver reads the variable when CUDA initializes,
     * and programs often initialize CUDA before shmem_init: so also when
     * the library is loaded (eager_loading below; docs/cuda.md). */
    eager_loading();
    int ver = 0;
    CUresult r = ushmemi_cu.cuInit(0);
    if (r == CUDA_SUCCESS)
        r = ushmemi_cu.cuDriverGetVersion(&ver);
    if (r != CUDA_SUCCESS) {
        snprintf(load_reason, sizeof load_reason, "cuInit failed: %s",
                 r == CUDA_ERROR_NO_DEVICE ? "no CUDA device visible" : ushmemi_cu_errstr(r));
        goto close_lib;
    }
    int ndev = 0;
    r = ushmemi_cu.cuDeviceGetCount(&ndev);
    if (r != CUDA_SUCCESS || ndev < 1) {
        snprintf(load_reason, sizeof load_reason, "no CUDA device visible");
        goto close_lib;
    }
    snprintf(load_reason, sizeof load_reason, "driver CUDA %d.%d, %d device%s", ver / 1000,
             ver % 1000 / 10, ndev, ndev == 1 ? "" : "s");
    load_rc = 0;
    return; /* the library stays loaded for the life of the process */
close_lib:
    memset(&ushmemi_cu, 0, sizeof ushmemi_cu);
    dlclose(lib);
}

int ushmemi_cu_load(void)
{
    pthread_once(&load_once, load);
    return load_rc;
}

const char *ushmemi_cu_reason(void)
{
    return load_reason;
}

const char *ushmemi_cu_errstr(CUresult r)
{
    static __thread char buf[160];
    const char *name = NULL, *str = NULL;
    if (ushmemi_cu.cuGetErrorName)
        ushmemi_cu.cuGetErrorName(r, &name);
    if (ushmemi_cu.cuGetErrorString)
        ushmemi_cu.cuGetErrorString(r, &str);
    snprintf(buf, sizeof buf, "%s (%s)", name ? name : "CUDA error", str ? str : "unknown");
    return buf;
}
