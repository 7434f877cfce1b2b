/* The C API of the ushmem Python package, for other extension modules.
 *
 * ushmem._ushmem carries its own copy of libushmem (it links the library's
 * objects in and exports nothing but PyInit__ushmem), so another extension
 * that linked libushmem.so would get a second library that the package never
 * initialized. Instead, the package exports a table of the library's entry
 * points as the capsule "ushmem._ushmem._C_API": the same instance that
 * ushmem.init*() started. The torch symmetric-memory backend
 * (ushmem/interop/_torch_symm_mem.cpp) is its first user.
 *
 *     #include "ushmem_capi.h"
 *     const ushmem_capi_t *u = ushmem_capi_import();   // NULL + Python error
 *     if (u && u->initialized()) { void *p = u->malloc_local(n, 0, SHMEMX_MALLOC_DEVICE); }
 *
 * Every entry behaves as the shmem/shmemx call it is named after (shmem.h,
 * shmemx.h); fatal errors print their one line and end the job as there.
 * The table only grows: a new entry goes at the end with a higher version,
 * and users check `version` (and `size`) before using a later entry. */
#ifndef USHMEM_CAPI_H
#define USHMEM_CAPI_H

#include <stddef.h>
#include <stdint.h>

#define USHMEM_CAPI_NAME    "ushmem._ushmem._C_API"
#define USHMEM_CAPI_VERSION 1

/* The constants the entries take, as in shmem.h / shmemx.h (which extension
 * builds need not have): _capi.c checks that they agree. */
#define USHMEM_CAPI_MALLOC_HOST   (1L << 16) /* SHMEMX_MALLOC_HOST */
#define USHMEM_CAPI_MALLOC_DEVICE (1L << 17) /* SHMEMX_MALLOC_DEVICE */
#define USHMEM_CAPI_SIGNAL_SET    0          /* SHMEM_SIGNAL_SET */
#define USHMEM_CAPI_SIGNAL_ADD    1          /* SHMEM_SIGNAL_ADD */
#define USHMEM_CAPI_CMP_EQ        0          /* SHMEM_CMP_EQ */
#define USHMEM_CAPI_CMP_GE        3          /* SHMEM_CMP_GE */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *ushmem_capi_stream_t; /* cudaStream_t / CUstream */

typedef struct {
    int version; /* USHMEM_CAPI_VERSION of the package that made the table */
    size_t size; /* sizeof the table there */
    /* state: 1 between init and finalize */
    int (*initialized)(void);
    int (*my_pe)(void);
    int (*n_pes)(void);
    /* local blocks (shmemx.h): hints SHMEMX_MALLOC_HOST / SHMEMX_MALLOC_DEVICE */
    void *(*malloc_local)(size_t size, size_t alignment, long hints);
    int (*free_local)(void *ptr);
    long (*heap_offset)(const void *addr, size_t *offset);
    void *(*heap_addr)(size_t offset, long hints);
    /* addresses and routes */
    void *(*ptr)(const void *dest, int pe);
    int (*device_route)(int pe);
    /* stream-ordered operations (shmemx.h) */
    void (*putmem_on_stream)(void *dest, const void *source, size_t nelems, int pe,
                             ushmem_capi_stream_t stream);
    void (*getmem_on_stream)(void *dest, const void *source, size_t nelems, int pe,
                             ushmem_capi_stream_t stream);
    void (*putmem_signal_on_stream)(void *dest, const void *source, size_t nelems,
                                    uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                                    ushmem_capi_stream_t stream);
    void (*signal_op_on_stream)(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                                ushmem_capi_stream_t stream);
    void (*signal_wait_until_on_stream)(uint64_t *sig_addr, int cmp, uint64_t cmp_value,
                                        ushmem_capi_stream_t stream);
    void (*quiet_on_stream)(ushmem_capi_stream_t stream);
    /* host calls */
    void (*quiet)(void);
    void (*global_exit)(int status);
} ushmem_capi_t;

#ifdef PY_VERSION_HEX
/* For extension modules (Python.h included first): import ushmem._ushmem and
 * return its table, or NULL with a Python exception set. */
static inline const ushmem_capi_t *ushmem_capi_import(void)
{
    const ushmem_capi_t *t = (const ushmem_capi_t *)PyCapsule_Import(USHMEM_CAPI_NAME, 0);
    if (t && (t->version < 1 || t->size < sizeof(ushmem_capi_t))) {
        PyErr_Format(PyExc_ImportError,
                     "ushmem: the installed package's C API is version %d (%zu bytes); this "
                     "module needs version %d",
                     t->version, t->size, USHMEM_CAPI_VERSION);
        return NULL;
    }
    return t;
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* USHMEM_CAPI_H */
