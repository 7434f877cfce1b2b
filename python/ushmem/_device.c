/* ushmem._ushmem: the device API's handle (what kernels take) from Python. */
#include "_ushmem.h"

/* ------------------------------------------------------------------------ */
/* Device API: the handle kernels take (shmemx_device.cuh), from Python       */
/* ------------------------------------------------------------------------ */

/* _dev_layout() -> (((name, offset, size), ...), sizeof(shmemx_dev_t)): the C
 * layout, which ushmem.DeviceHandle (ctypes) mirrors. Needs no init. */
static PyObject *py__dev_layout(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    /* clang-format off */
#define DEV_FIELD(f) {#f, offsetof(shmemx_dev_t, f), sizeof(((shmemx_dev_t *)0)->f)}
    static const struct {
        const char *name;
        size_t off, size;
    } fields[] = {
        DEV_FIELD(magic), DEV_FIELD(version), DEV_FIELD(my_pe), DEV_FIELD(n_pes),
        DEV_FIELD(team_start), DEV_FIELD(team_stride), DEV_FIELD(world_pe),
        DEV_FIELD(world_n_pes), DEV_FIELD(team_slot), DEV_FIELD(flags), DEV_FIELD(wait_reason),
        DEV_FIELD(gpu_pes), DEV_FIELD(sm_sum), DEV_FIELD(sm_total), DEV_FIELD(gpu_pci),
        DEV_FIELD(reserved0), DEV_FIELD(heap_base), DEV_FIELD(heap_size), DEV_FIELD(peer_base),
        DEV_FIELD(sync), DEV_FIELD(abort_flag), DEV_FIELD(wait_timeout_ns), DEV_FIELD(proxy),
        DEV_FIELD(reserved), DEV_FIELD(near_first), DEV_FIELD(near_n), DEV_FIELD(near_base),
    };
#undef DEV_FIELD
    /* clang-format on */
    const Py_ssize_t n = (Py_ssize_t)(sizeof fields / sizeof fields[0]);
    PyObject *tup = PyTuple_New(n);
    if (!tup)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *f = Py_BuildValue("(snn)", fields[i].name, (Py_ssize_t)fields[i].off,
                                    (Py_ssize_t)fields[i].size);
        if (!f) {
            Py_DECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, i, f);
    }
    return Py_BuildValue("(Nn)", tup, (Py_ssize_t)sizeof(shmemx_dev_t));
}

/* The handle of team (None: TEAM_WORLD), or an exception. Checked first so
 * that the library's refusal becomes the exception's message instead of a
 * line on stderr. */
static int dev_handle(PyObject *teamobj, shmemx_dev_t *d, const char *fn)
{
    shmem_team_t t = SHMEM_TEAM_WORLD;
    if (require_init(fn))
        return -1;
    if (teamobj && teamobj != Py_None && upy_team_get(teamobj, &t, fn))
        return -1;
    if (upy_g.dev < 0) {
        const char *why = shmemx_dev_why();
        return upy_err(
            ERR_UNSUPPORTED,
            "%s: %s; the device API needs a CUDA device bound to ushmem (pass device= to "
            "init, or set USHMEM_DEVICE or LOCAL_RANK before init)",
            fn, why ? why : "this PE has no device heap");
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    rc = t == SHMEM_TEAM_WORLD ? shmemx_dev_get(d) : shmemx_team_dev_get(t, d);
    Py_END_ALLOW_THREADS;
    return upy_check_status(rc, fn);
}

/* _dev_get(team=None) -> bytes of shmemx_dev_t (shmemx_dev_get / shmemx_team_dev_get). */
static PyObject *py__dev_get(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    shmemx_dev_t d;
    if (upy_check_nargs(nargs, 0, 1, "_dev_get(team=None)") ||
        dev_handle(nargs ? args[0] : NULL, &d, "device_handle"))
        return NULL;
    return PyBytes_FromStringAndSize((const char *)&d, sizeof d);
}

/* _dev_peer_bases(team=None) -> [int]: for each team PE in team order, the
 * base of its device heap as mapped in this process (what the handle's
 * peer_base table holds for it; this PE's own heap_base), 0 where unmapped.
 * Computed on the host with shmemx_heap_bases on a live device-heap block. */
static PyObject *py__dev_peer_bases(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    static const char fn[] = "device_handle.peer_bases";
    shmemx_dev_t d;
    if (upy_check_nargs(nargs, 0, 1, "_dev_peer_bases(team=None)") ||
        dev_handle(nargs ? args[0] : NULL, &d, fn))
        return NULL;
    if (!upy_g.dev_probe) {
        upy_err(ERR_STATE, "%s: no device-heap block to translate with (init did not probe)", fn);
        return NULL;
    }
    void **bases = PyMem_Calloc((size_t)upy_g.npes, sizeof *bases);
    if (!bases)
        return PyErr_NoMemory();
    int rc = shmemx_heap_bases(upy_g.dev_probe, bases);
    PyObject *list = NULL;
    uint64_t off = (uint64_t)(uintptr_t)upy_g.dev_probe - d.heap_base;
    if (!upy_check_status(rc, fn) && (list = PyList_New(d.n_pes))) {
        for (int i = 0; i < d.n_pes; i++) {
            long long w = (long long)d.team_start + (long long)i * d.team_stride;
            uint64_t b = 0;
            if (w >= 0 && w < upy_g.npes && bases[w])
                b = (uint64_t)(uintptr_t)bases[w] - off;
            PyObject *v = PyLong_FromUnsignedLongLong(b);
            if (!v) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, i, v);
        }
    }
    PyMem_Free(bases);
    return list;
}

/* _dev_why() -> why device-side waits are off on this PE (str), or None. */
static PyObject *py__dev_why(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    const char *why = shmemx_dev_why();
    if (!why)
        Py_RETURN_NONE;
    return PyUnicode_FromString(why);
}

/* The device API's constants (shmemx_device_types.h) without the SHMEMX_ prefix. */
static int add_dev_constants(PyObject *m)
{
    static const struct {
        const char *name;
        long v;
    } c[] = {
        {"DEV_MAGIC", SHMEMX_DEV_MAGIC},
        {"DEV_VERSION", SHMEMX_DEV_VERSION},
        {"DEV_NEAR_MAX", SHMEMX_DEV_NEAR_MAX},
        {"DEV_F_WAIT_OK", SHMEMX_DEV_F_WAIT_OK},
        {"DEV_F_PEER_ATOMICS", SHMEMX_DEV_F_PEER_ATOMICS},
        {"DEV_F_WORLD", SHMEMX_DEV_F_WORLD},
        {"DEV_F_TIMESLICED", SHMEMX_DEV_F_TIMESLICED},
        {"DEV_F_ONE_GPU", SHMEMX_DEV_F_ONE_GPU},
        {"DEV_WAIT_SAFE", SHMEMX_DEV_WAIT_SAFE},
        {"DEV_WAIT_SHARED_GPU", SHMEMX_DEV_WAIT_SHARED_GPU},
        {"DEV_WAIT_MPS_SHARES", SHMEMX_DEV_WAIT_MPS_SHARES},
        {"DEV_WAIT_NO_DEVICE", SHMEMX_DEV_WAIT_NO_DEVICE},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if (PyModule_AddIntConstant(m, c[i].name, c[i].v) < 0)
            return -1;
    return 0;
}

/* clang-format off */
static PyMethodDef device_methods[] = {
    {"_dev_layout", FN(py__dev_layout), METH_NOARGS,
     "_dev_layout() -> (((name, offset, size), ...), sizeof(shmemx_dev_t))"},
    {"_dev_get", FN(py__dev_get), METH_FASTCALL, "_dev_get(team=None) -> bytes of shmemx_dev_t"},
    {"_dev_peer_bases", FN(py__dev_peer_bases), METH_FASTCALL,
     "_dev_peer_bases(team=None) -> [device heap base of each team PE as mapped here, or 0]"},
    {"_dev_why", FN(py__dev_why), METH_NOARGS, "_dev_why() -> str or None (shmemx_dev_why)"},
    {NULL, NULL, 0, NULL},
};
/* clang-format on */

int upy_device_add(PyObject *m)
{
    if (add_dev_constants(m))
        return -1;
    return PyModule_AddFunctions(m, device_methods);
}
