/* Helpers for the CUDA tests: the driver loaded at run time (as the library
 * does), so the tests build anywhere and skip (exit 77) where no GPU is
 * usable; plus a PTX test kernel, JIT-compiled by the driver. */
#ifndef USHMEM_CUDA_TEST_H
#define USHMEM_CUDA_TEST_H

#include <dlfcn.h>
#include <shmemx.h>

#include "test_util.h"
#include "transport/cuda/cuda_api.h"

static ushmemi_cu_t tcu;

#define TCU(expr)                                                                                  \
    do {                                                                                           \
        CUresult r_ = (expr);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *s_ = "?";                                                                  \
            tcu.cuGetErrorName(r_, &s_);                                                           \
            fprintf(stderr, "PE %d: %s:%d: %s failed: %s\n", shmem_my_pe(), __FILE__, __LINE__,    \
                    #expr, s_);                                                                    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* 0 when a GPU is usable; otherwise prints why and the caller exits 77. */
static inline int tcu_load(void)
{
    typedef CUresult (*gp_t)(const char *, void **, int, uint64_t, int *);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gp_t gp = lib ? (gp_t)dlsym(lib, "cuGetProcAddress_v2") : NULL;
    int n = 0;
    if (!gp) {
        printf("SKIP: no CUDA driver (libcuda.so.1)\n");
        return -1;
    }
#define TCU_LOOKUP(name, proto)                                                                    \
    {                                                                                              \
        void *fn = NULL;                                                                           \
        int st = 0;                                                                                \
        if (gp(#name, &fn, 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st) || !fn) {                \
            printf("SKIP: driver lacks %s\n", #name);                                              \
            return -1;                                                                             \
        }                                                                                          \
        memcpy(&tcu.name, &fn, sizeof fn);                                                         \
    }
    USHMEMI_CU_FUNCS(TCU_LOOKUP)
#undef TCU_LOOKUP
    if (tcu.cuInit(0) != CUDA_SUCCESS || tcu.cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1) {
        printf("SKIP: no usable CUDA device\n");
        return -1;
    }
    return 0;
}

/* After shmem_init: the library made device 0's primary context current. */
static inline CUstream tcu_stream(void)
{
    CUstream s;
    TCU(tcu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    return s;
}

static inline int tcu_is_device(const void *p)
{
    unsigned int type = 0;
    int attr = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    void *data[] = {&type};
    if (tcu.cuPointerGetAttributes(1, &attr, data, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS)
        return 0;
    return type == CU_MEMORYTYPE_DEVICE;
}

/* Synchronous copies between host and device (or anything: unified). A
 * cuMemcpy from pageable memory to the device may return before its DMA has
 * landed (CUDA's rule), and work on a non-blocking stream is not ordered
 * after it: wait for the legacy default stream, where that DMA runs, so the
 * data is in place for any stream (seen: a stream collective read the old
 * source right after the fill). */
static inline void tcu_copy(void *dst, const void *src, size_t n)
{
    TCU(tcu.cuMemcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n));
    TCU(tcu.cuStreamSynchronize(NULL));
}

static inline void *tcu_to_host(const void *dev, size_t n)
{
    void *h = malloc(n ? n : 1);
    tcu_copy(h, dev, n);
    return h;
}

/* p[i] = seed ^ (i * 0x9E3779B97F4A7C15) for i < n (64-bit words). */
static const char tcu_fill_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry test_fill(.param .u64 p0, .param .u64 p1, .param .u64 p2)\n{\n"
    ".reg .pred %p<3>;\n.reg .b32 %r<5>;\n.reg .b64 %rd<18>;\n"
    "ld.param.u64 %rd7, [p0];\nld.param.u64 %rd8, [p1];\nld.param.u64 %rd9, [p2];\n"
    "mov.u32 %r1, %ctaid.x;\nmov.u32 %r2, %ntid.x;\ncvt.u64.u32 %rd1, %r2;\n"
    "mul.wide.u32 %rd10, %r1, %r2;\nmov.u32 %r3, %tid.x;\ncvt.u64.u32 %rd11, %r3;\n"
    "add.s64 %rd17, %rd10, %rd11;\nsetp.ge.u64 %p1, %rd17, %rd8;\n@%p1 bra DONE;\n"
    "mov.u32 %r4, %nctaid.x;\ncvt.u64.u32 %rd12, %r4;\nmul.lo.s64 %rd3, %rd12, %rd1;\n"
    "cvta.to.global.u64 %rd4, %rd7;\n"
    "LOOP:\nmul.lo.s64 %rd13, %rd17, -7046029254386353131;\nxor.b64 %rd14, %rd13, %rd9;\n"
    "shl.b64 %rd15, %rd17, 3;\nadd.s64 %rd16, %rd4, %rd15;\nst.global.u64 [%rd16], %rd14;\n"
    "add.s64 %rd17, %rd17, %rd3;\nsetp.lt.u64 %p2, %rd17, %rd8;\n@%p2 bra LOOP;\n"
    "DONE:\nret;\n}\n";

static inline void tcu_fill(CUstream s, void *p, size_t nwords, uint64_t seed)
{
    static CUfunction f;
    if (!f) {
        CUmodule m;
        TCU(tcu.cuModuleLoadData(&m, tcu_fill_ptx));
        TCU(tcu.cuModuleGetFunction(&f, m, "test_fill"));
    }
    unsigned long long n = nwords, sd = seed;
    void *params[] = {&p, &n, &sd};
    TCU(tcu.cuLaunchKernel(f, 64, 1, 1, 256, 1, 1, 0, s, params, NULL));
}

static inline uint64_t tcu_fill_word(size_t i, uint64_t seed)
{
    return seed ^ ((uint64_t)i * 0x9E3779B97F4A7C15ULL);
}

#endif
