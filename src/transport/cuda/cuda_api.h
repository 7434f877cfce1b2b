/* The slice of the CUDA driver API the cuda transport uses, declared here so
 * the library builds without CUDA headers and links without libcuda: the
 * functions are looked up at run time (loader.c) through cuGetProcAddress,
 * asking for the ABI of CUDA 12.0, so each pointer has exactly the prototype
 * written below (the _v2 variants where 12.0 has them). The types and enum
 * values are the driver's stable ABI, copied from cuda.h (CUDA 12/13). */
#ifndef USHMEM_CUDA_API_H
#define USHMEM_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef void (*CUhostFn)(void *user_data);

#define CUDA_SUCCESS                              0
#define CUDA_ERROR_NOT_INITIALIZED                3
#define CUDA_ERROR_NO_DEVICE                      100
#define CUDA_ERROR_NOT_READY                      600
#define CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED 712
#define CUDA_ERROR_NOT_SUPPORTED                  801

typedef struct {
    char reserved[64];
} CUipcMemHandle;

typedef struct {
    int type; /* CUmemLocationType */
    int id;
} CUmemLocation;

typedef struct {
    int type;                 /* CUmemAllocationType */
    int requestedHandleTypes; /* CUmemAllocationHandleType */
    CUmemLocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp;

typedef struct {
    CUmemLocation location;
    int flags; /* CUmemAccess_flags */
} CUmemAccessDesc;

typedef struct {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

#define CU_MEM_ALLOCATION_TYPE_PINNED                                   0x1
#define CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR                        0x1
#define CU_MEM_LOCATION_TYPE_DEVICE                                     0x1
#define CU_MEM_ACCESS_FLAGS_PROT_READWRITE                              0x3
#define CU_MEM_ALLOC_GRANULARITY_RECOMMENDED                            0x1
#define CU_MEMORYTYPE_HOST                                              0x1
#define CU_MEMORYTYPE_DEVICE                                            0x2
#define CU_MEMORYTYPE_UNIFIED                                           0x4
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE                                2
#define CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING                          41
#define CU_DEVICE_ATTRIBUTE_PCI_BUS_ID                                  33
#define CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID                               34
#define CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID                               50
#define CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED         102
#define CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED 103
#define CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS               122
#define CU_STREAM_NON_BLOCKING                                          0x1
#define CU_STREAM_WAIT_VALUE_GEQ                                        0x0
#define CU_STREAM_WAIT_VALUE_EQ                                         0x1
#define CU_STREAM_WRITE_VALUE_DEFAULT                                   0x0
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS                              0x1
#define CU_MEMHOSTALLOC_PORTABLE                                        0x01
#define CU_MEMHOSTALLOC_DEVICEMAP                                       0x02
#define CU_MEMHOSTREGISTER_PORTABLE                                     0x01
#define CU_MEMHOSTREGISTER_DEVICEMAP                                    0x02
#define CU_GET_PROC_ADDRESS_LEGACY_STREAM                               0x1
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT                        16
#define CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH                          95
#define CU_DEVICE_ATTRIBUTE_MPS_ENABLED                                 133
#define CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED                 0x3
#define CU_EXEC_AFFINITY_TYPE_SM_COUNT                                  0

/* CUstreamBatchMemOpParams: a union of 48 bytes whose first member is the
 * operation; the wait and write forms share one layout. */
#define CU_STREAM_MEM_OP_WAIT_VALUE_64  4
#define CU_STREAM_MEM_OP_WRITE_VALUE_64 5
typedef union {
    int operation;
    struct {
        int operation;
        CUdeviceptr address;
        uint64_t value64;
        unsigned int flags;
        CUdeviceptr alias; /* the driver's */
    } value;
    uint64_t pad[6];
} CUstreamBatchMemOpParams;

typedef struct {
    int type; /* CUexecAffinityType */
    union {
        struct {
            unsigned int val;
        } smCount;
    } param;
} CUexecAffinityParam;

/* X(name, (prototype)) for every driver entry point we call. */
#define USHMEMI_CU_FUNCS(X)                                                                        \
    X(cuInit, (unsigned int flags))                                                                \
    X(cuDriverGetVersion, (int *version))                                                          \
    X(cuGetErrorString, (CUresult err, const char **str))                                          \
    X(cuGetErrorName, (CUresult err, const char **str))                                            \
    X(cuDeviceGetCount, (int *count))                                                              \
    X(cuDeviceGet, (CUdevice * dev, int ordinal))                                                  \
    X(cuDeviceGetName, (char *name, int len, CUdevice dev))                                        \
    X(cuDeviceGetAttribute, (int *value, int attrib, CUdevice dev))                                \
    X(cuDeviceCanAccessPeer, (int *can, CUdevice dev, CUdevice peer))                              \
    X(cuDeviceGetP2PAttribute, (int *value, int attrib, CUdevice src, CUdevice dst))               \
    X(cuCtxGetExecAffinity, (CUexecAffinityParam * param, int type))                               \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor,                                                 \
      (int *blocks, CUfunction f, int block_size, size_t dynamic_shmem))                           \
    X(cuLaunchCooperativeKernel,                                                                   \
      (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,           \
       unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params))           \
    X(cuDevicePrimaryCtxRetain, (CUcontext * ctx, CUdevice dev))                                   \
    X(cuDevicePrimaryCtxRelease, (CUdevice dev))                                                   \
    X(cuCtxGetCurrent, (CUcontext * ctx))                                                          \
    X(cuCtxSetCurrent, (CUcontext ctx))                                                            \
    X(cuCtxPushCurrent, (CUcontext ctx))                                                           \
    X(cuCtxPopCurrent, (CUcontext * ctx))                                                          \
    X(cuCtxDestroy, (CUcontext ctx))                                                               \
    X(cuStreamCreate, (CUstream * s, unsigned int flags))                                          \
    X(cuStreamCreateWithPriority, (CUstream * s, unsigned int flags, int priority))                \
    X(cuCtxGetStreamPriorityRange, (int *least, int *greatest))                                    \
    X(cuStreamDestroy, (CUstream s))                                                               \
    X(cuStreamSynchronize, (CUstream s))                                                           \
    X(cuStreamQuery, (CUstream s))                                                                 \
    X(cuStreamWriteValue64, (CUstream s, CUdeviceptr addr, uint64_t value, unsigned int flags))    \
    X(cuStreamWaitValue64, (CUstream s, CUdeviceptr addr, uint64_t value, unsigned int flags))     \
    X(cuStreamWriteValue32, (CUstream s, CUdeviceptr addr, uint32_t value, unsigned int flags))    \
    X(cuStreamBatchMemOp,                                                                          \
      (CUstream s, unsigned int count, CUstreamBatchMemOpParams *ops, unsigned int flags))         \
    X(cuLaunchHostFunc, (CUstream s, CUhostFn fn, void *user_data))                                \
    X(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t n))                                      \
    X(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s))                     \
    X(cuMemcpyDtoDAsync, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s))                 \
    X(cuMemcpy2DAsync, (const CUDA_MEMCPY2D *copy, CUstream s))                                    \
    X(cuMemsetD8Async, (CUdeviceptr dst, unsigned char v, size_t n, CUstream s))                   \
    X(cuMemAlloc, (CUdeviceptr * p, size_t n))                                                     \
    X(cuMemFree, (CUdeviceptr p))                                                                  \
    X(cuMemAllocAsync, (CUdeviceptr * p, size_t n, CUstream s))                                    \
    X(cuMemFreeAsync, (CUdeviceptr p, CUstream s))                                                 \
    X(cuMemHostAlloc, (void **p, size_t n, unsigned int flags))                                    \
    X(cuMemFreeHost, (void *p))                                                                    \
    X(cuMemHostGetDevicePointer, (CUdeviceptr * d, void *p, unsigned int flags))                   \
    X(cuMemHostRegister, (void *p, size_t n, unsigned int flags))                                  \
    X(cuMemHostUnregister, (void *p))                                                              \
    X(cuPointerGetAttributes, (unsigned int n, int *attribs, void **data, CUdeviceptr p))          \
    X(cuIpcGetMemHandle, (CUipcMemHandle * h, CUdeviceptr p))                                      \
    X(cuIpcOpenMemHandle, (CUdeviceptr * p, CUipcMemHandle h, unsigned int flags))                 \
    X(cuIpcCloseMemHandle, (CUdeviceptr p))                                                        \
    X(cuMemGetAllocationGranularity, (size_t * gran, const CUmemAllocationProp *prop, int option)) \
    X(cuMemCreate, (CUmemGenericAllocationHandle * h, size_t n, const CUmemAllocationProp *prop,   \
                    unsigned long long flags))                                                     \
    X(cuMemRelease, (CUmemGenericAllocationHandle h))                                              \
    X(cuMemAddressReserve,                                                                         \
      (CUdeviceptr * p, size_t n, size_t align, CUdeviceptr addr, unsigned long long flags))       \
    X(cuMemAddressFree, (CUdeviceptr p, size_t n))                                                 \
    X(cuMemMap, (CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h,              \
                 unsigned long long flags))                                                        \
    X(cuMemUnmap, (CUdeviceptr p, size_t n))                                                       \
    X(cuMemSetAccess, (CUdeviceptr p, size_t n, const CUmemAccessDesc *desc, size_t count))        \
    X(cuMemExportToShareableHandle,                                                                \
      (void *handle, CUmemGenericAllocationHandle h, int type, unsigned long long flags))          \
    X(cuMemImportFromShareableHandle, (CUmemGenericAllocationHandle * h, void *handle, int type))  \
    X(cuModuleLoadData, (CUmodule * m, const void *image))                                         \
    X(cuModuleUnload, (CUmodule m))                                                                \
    X(cuModuleGetFunction, (CUfunction * f, CUmodule m, const char *name))                         \
    X(cuLaunchKernel, (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,            \
                       unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,      \
                       CUstream s, void **params, void **extra))

/* cuCtxCreate as of CUDA 12.5 (_v4); the 12.0 ABI's _v2 is not what the
 * CUDA 13 driver hands out for that name. All NULL: a plain context. */
typedef struct {
    CUexecAffinityParam *execAffinityParams;
    int numExecAffinityParams;
    void *cigParams;
} CUctxCreateParams;

typedef struct {
#define USHMEMI_CU_FIELD(name, proto) CUresult(*name) proto;
    USHMEMI_CU_FUNCS(USHMEMI_CU_FIELD)
#undef USHMEMI_CU_FIELD
    /* Optional (NULL on drivers before CUDA 12.5): looked up at 12.5. */
    CUresult (*cuCtxCreate)(CUcontext *ctx, CUctxCreateParams *params, unsigned int flags,
                            CUdevice dev);
} ushmemi_cu_t;

/* Filled by ushmemi_cu_load(); valid once it returned 0. */
extern ushmemi_cu_t ushmemi_cu __attribute__((visibility("hidden")));

/* Load libcuda.so.1 and every entry point (once; later calls return the
 * first outcome). 0, or USHMEM_EUNSUPPORTED with the reason available from
 * ushmemi_cu_reason(). */
int ushmemi_cu_load(void);
/* CUDA_DEVICE_MAX_CONNECTIONS for pes PEs of this host on gpus GPUs under
 * MPS (loader.c: two contexts per PE share a pool of about 120 per GPU). */
long ushmemi_cuda_queues_for(long pes, long gpus);
const char *ushmemi_cu_reason(void);
/* "cuMemCreate: CUDA_ERROR_OUT_OF_MEMORY (out of memory)" style text of a
 * CUresult, in a static buffer per thread. */
const char *ushmemi_cu_errstr(CUresult r);

#endif
