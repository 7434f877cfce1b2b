/* ushmem._ushmem: the C API table (ushmem_capi.h) exported as the capsule
 * ushmem._ushmem._C_API, so that other extension modules call the library
 * this package initialized rather than a second copy of it. */
#include "_ushmem.h"

#include "ushmem_capi.h"

/* The header repeats these for builds without shmem.h. */
_Static_assert(USHMEM_CAPI_MALLOC_HOST == SHMEMX_MALLOC_HOST &&
                   USHMEM_CAPI_MALLOC_DEVICE == SHMEMX_MALLOC_DEVICE &&
                   USHMEM_CAPI_SIGNAL_SET == SHMEM_SIGNAL_SET &&
                   USHMEM_CAPI_SIGNAL_ADD == SHMEM_SIGNAL_ADD &&
                   USHMEM_CAPI_CMP_EQ == SHMEM_CMP_EQ && USHMEM_CAPI_CMP_GE == SHMEM_CMP_GE,
               "ushmem_capi.h's constants are shmem.h's and shmemx.h's");

/* As ushmem.is_initialized(): 0 once finalize() has begun. Reads only flags,
 * so it never prints (the library's own calls report use before init). */
static int capi_initialized(void)
{
    return shmem_query_initialized() && !upy_g.finalizing;
}

static int capi_my_pe(void)
{
    return capi_initialized() ? shmem_my_pe() : -1;
}

static int capi_n_pes(void)
{
    return capi_initialized() ? shmem_n_pes() : -1;
}

/* Each entry is the library's routine itself (the compiler checks that the
 * types match the header's), except the three state queries above. */
static const ushmem_capi_t capi = {
    .version = USHMEM_CAPI_VERSION,
    .size = sizeof(ushmem_capi_t),
    .initialized = capi_initialized,
    .my_pe = capi_my_pe,
    .n_pes = capi_n_pes,
    .malloc_local = shmemx_malloc_local,
    .free_local = shmemx_free_local,
    .heap_offset = shmemx_heap_offset,
    .heap_addr = shmemx_heap_addr,
    .ptr = shmem_ptr,
    .device_route = shmemx_device_route,
    .putmem_on_stream = shmemx_putmem_on_stream,
    .getmem_on_stream = shmemx_getmem_on_stream,
    .putmem_signal_on_stream = shmemx_putmem_signal_on_stream,
    .signal_op_on_stream = shmemx_signal_op_on_stream,
    .signal_wait_until_on_stream = shmemx_signal_wait_until_on_stream,
    .quiet_on_stream = shmemx_quiet_on_stream,
    .quiet = shmem_quiet,
    .global_exit = shmem_global_exit,
};

int upy_capi_add(PyObject *m)
{
    /* Read-only for its users: the capsule API takes a non-const pointer. */
    PyObject *cap = PyCapsule_New((void *)&capi, USHMEM_CAPI_NAME, NULL);
    if (!cap)
        return -1;
    int rc = PyModule_AddObjectRef(m, "_C_API", cap);
    Py_DECREF(cap);
    return rc;
}
