/* ushmem._ushmem: the module. The bindings live in the files _ushmem.h lists;
 * each adds its types, objects and functions here. */
#include "_ushmem.h"

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    "ushmem._ushmem",
    "CPython binding of libushmem (see the ushmem package for the documented API).",
    -1,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
};

static int add_int(PyObject *m, const char *name, long v)
{
    return PyModule_AddIntConstant(m, name, v);
}

PyMODINIT_FUNC PyInit__ushmem(void);
PyMODINIT_FUNC PyInit__ushmem(void)
{
    /* The interpreter's .data/.bss must not be remapped onto shared memory at
     * init (pointless for Python, unsafe with torch's threads running). */
    setenv("USHMEM_STATIC_DATA", "0", 0);

    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    if (PyModule_AddStringConstant(m, "__version__", USHMEM_VERSION_STRING) < 0 ||
        upy_common_add(m) < 0 || upy_symbuf_add(m) < 0 || upy_memory_add(m) < 0 ||
        upy_lifetime_add(m) < 0 || upy_rma_add(m) < 0 || upy_teams_add(m) < 0 ||
        upy_device_add(m) < 0 || upy_local_add(m) < 0 || upy_capi_add(m) < 0)
        goto fail;
    if (add_int(m, "SIGNAL_SET", SHMEM_SIGNAL_SET) || add_int(m, "SIGNAL_ADD", SHMEM_SIGNAL_ADD) ||
        add_int(m, "CMP_EQ", SHMEM_CMP_EQ) || add_int(m, "CMP_NE", SHMEM_CMP_NE) ||
        add_int(m, "CMP_GT", SHMEM_CMP_GT) || add_int(m, "CMP_GE", SHMEM_CMP_GE) ||
        add_int(m, "CMP_LT", SHMEM_CMP_LT) || add_int(m, "CMP_LE", SHMEM_CMP_LE) ||
        add_int(m, "THREAD_SINGLE", SHMEM_THREAD_SINGLE) ||
        add_int(m, "THREAD_FUNNELED", SHMEM_THREAD_FUNNELED) ||
        add_int(m, "THREAD_SERIALIZED", SHMEM_THREAD_SERIALIZED) ||
        add_int(m, "THREAD_MULTIPLE", SHMEM_THREAD_MULTIPLE) ||
        add_int(m, "TEAM_NUM_CONTEXTS", SHMEM_TEAM_NUM_CONTEXTS) ||
        add_int(m, "MALLOC_HOST", SHMEMX_MALLOC_HOST) ||
        add_int(m, "MALLOC_DEVICE", SHMEMX_MALLOC_DEVICE) ||
        add_int(m, "UNIQUEID_BYTES", SHMEMX_UNIQUEID_BYTES) ||
        add_int(m, "MAJOR_VERSION", SHMEM_MAJOR_VERSION) ||
        add_int(m, "MINOR_VERSION", SHMEM_MINOR_VERSION) ||
        PyModule_AddObjectRef(m, "HAVE_CUDA", Py_True) < 0 ||
        PyModule_AddStringConstant(m, "VENDOR_STRING", SHMEM_VENDOR_STRING) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
