/* ushmem._ushmem: local blocks (shmemx.h): memory of this PE's symmetric heap
 * that this PE alone allocates and frees (malloc_local, free_local), and the
 * offsets by which peers name them (heap_offset, heap_addr).
 *
 * A peer's block lies at an offset of its heap that only the peer knows is
 * live, so an address in the local part of a heap is accepted as the
 * symmetric side of RMA, AMO and signal calls as it stands (upy_local_span):
 * the part is mapped on every PE that maps the heap, so nothing written there
 * lands outside the heap. This PE's own blocks are in the allocation table
 * too (_memory.c): SymmetricBuffer(ptr=) wraps them, finalize() reports them,
 * free() refuses them. */
#include "_ushmem.h"

/* Whether [p, p + n) lies in one local part of this PE's host or device heap
 * (shmemx_heap_local_part, recorded at init by upy_probe_device); *device: the
 * bound device for the device heap, -1 for the host heap. */
int upy_local_span(const void *p, size_t n, int *device)
{
    uintptr_t a = (uintptr_t)p;
    if (!initialized())
        return 0;
    for (int h = 0; h < 2; h++) {
        uintptr_t lo = upy_g.local_lo[h], hi = upy_g.local_hi[h];
        if (lo < hi && a >= lo && a < hi && n <= hi - a) {
            *device = h ? upy_g.dev : -1;
            return 1;
        }
    }
    return 0;
}

/* device= of malloc_local / heap_addr: None -> dflt, else a bool. */
static int parse_heap(PyObject *o, int dflt, int *device, const char *fn)
{
    if (!o || o == Py_None) {
        *device = dflt;
        return 0;
    }
    if (!PyBool_Check(o)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: device must be None, True (the device heap) or False (the host heap), "
                     "not %.100s",
                     fn, Py_TYPE(o)->tp_name);
        return -1;
    }
    *device = o == Py_True;
    return 0;
}

/* malloc_local(nbytes, align=0, device=None) */
static PyObject *py_malloc_local(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    static const char fn[] = "malloc_local";
    size_t n, alignment = 0;
    int device;
    if (upy_check_nargs(nargs, 1, 3, "malloc_local(nbytes, align=0, device=None)") ||
        upy_as_size(args[0], &n, fn, "nbytes") ||
        (nargs > 1 && args[1] != Py_None && upy_as_size(args[1], &alignment, fn, "align")) ||
        require_init(fn) || parse_heap(nargs > 2 ? args[2] : NULL, upy_g.dev >= 0, &device, fn))
        return NULL;
    if (device && upy_g.dev < 0) {
        upy_err_no_cuda(fn, "device=True (the device heap)");
        return NULL;
    }
    if (n == 0) {
        PyErr_Format(PyExc_ValueError, "%s: nbytes must be > 0", fn);
        return NULL;
    }
    if ((alignment & (alignment - 1)) || alignment > (size_t)SHMEMX_LOCAL_ALIGN_MAX) {
        upy_err(ERR_INVALID, "%s: alignment %zu must be 0 or a power of two no larger than %zu", fn,
                alignment, (size_t)SHMEMX_LOCAL_ALIGN_MAX);
        return NULL;
    }
    void *p = shmemx_malloc_local(n, alignment, device ? SHMEMX_MALLOC_DEVICE : SHMEMX_MALLOC_HOST);
    if (!p) {
        char why[600];
        upy_err(ERR_NOMEM, "%s: cannot allocate %zu bytes in the local part of the %s heap (%s)%s",
                fn, n, device ? "device" : "host",
                device ? "USHMEM_DEVICE_LOCAL_HEAP_SIZE" : "USHMEM_LOCAL_HEAP_SIZE",
                upy_lib_reason(why, sizeof why));
        return NULL;
    }
    PyObject *r = PyLong_FromVoidPtr(p);
    if (!r || upy_alloc_add_local(p, n, device ? upy_g.dev : -1) < 0) {
        Py_XDECREF(r);
        shmemx_free_local(p); /* nobody else knows of it yet */
        return NULL;
    }
    return r;
}

static PyObject *py_free_local(PyObject *self, PyObject *arg)
{
    (void)self;
    static const char fn[] = "free_local";
    if (arg == Py_None)
        Py_RETURN_NONE; /* like free(None) */
    void *p;
    if (upy_as_address(arg, &p, fn, "ptr") || require_init(fn))
        return NULL;
    /* Blocks from malloc_local leave the table; blocks the C API (_capi.c)
     * allocated were never in it: the library alone knows whether they live. */
    if (upy_alloc_drop_local(p) < 0) {
        upy_err(ERR_INVALID,
                "%s: %s is a collective allocation (malloc, calloc, align, create_buffer): free "
                "it with free() on every PE",
                fn, upy_addr_txt(p).s);
        return NULL;
    }
    int rc = shmemx_free_local(p);
    if (rc) {
        char why[600];
        upy_err(rc, "%s: %s is not a live local block (from malloc_local; freed already?)%s", fn,
                upy_addr_txt(p).s, upy_lib_reason(why, sizeof why));
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *py_heap_offset(PyObject *self, PyObject *arg)
{
    (void)self;
    static const char fn[] = "heap_offset";
    span_t s;
    if (require_init(fn) || upy_span_get(arg, &s, 0, fn, "ptr"))
        return NULL;
    span_release(&s); /* only its symmetric address is used */
    size_t off;
    long heap = shmemx_heap_offset(s.sym, &off);
    if (heap < 0) {
        char why[600];
        upy_err((int)heap, "%s: %s is not on this PE's host or device symmetric heap%s", fn,
                upy_addr_txt(s.sym).s, upy_lib_reason(why, sizeof why));
        return NULL;
    }
    return Py_BuildValue("(NO)", PyLong_FromSize_t(off),
                         heap == SHMEMX_MALLOC_DEVICE ? Py_True : Py_False);
}

/* heap_addr(offset, device=None): None is malloc_local's default heap */
static PyObject *py_heap_addr(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    static const char fn[] = "heap_addr";
    size_t off;
    int device;
    if (upy_check_nargs(nargs, 1, 2, "heap_addr(offset, device=None)") ||
        upy_as_size(args[0], &off, fn, "offset") || require_init(fn) ||
        parse_heap(nargs > 1 ? args[1] : NULL, upy_g.dev >= 0, &device, fn))
        return NULL;
    if (device && upy_g.dev < 0) {
        upy_err_no_cuda(fn, "device=True (the device heap)");
        return NULL;
    }
    void *p = shmemx_heap_addr(off, device ? SHMEMX_MALLOC_DEVICE : SHMEMX_MALLOC_HOST);
    if (!p) {
        char why[600];
        upy_err(ERR_INVALID, "%s: offset %zu is past the end of this PE's %s heap%s", fn, off,
                device ? "device" : "host", upy_lib_reason(why, sizeof why));
        return NULL;
    }
    return PyLong_FromVoidPtr(p);
}

/* The public functions here, called through upy_kw_call:
 * X(name, flags, statistics kind, "($module, parameters)", "doc"). */
/* clang-format off */
#define LOCAL_FUNCS(X) \
    X(malloc_local, METH_FASTCALL, ST_NONE, "($module, nbytes, align=0, device=None)", \
      "Not collective: nbytes of this PE's symmetric heap, from the part set aside at init " \
      "(USHMEM_LOCAL_HEAP_SIZE, USHMEM_DEVICE_LOCAL_HEAP_SIZE); returns the address (int). " \
      "device None: the device heap when a CUDA device is bound, else the host heap; True / " \
      "False: that heap. align: 0 (the heap's own) or a power of two up to 2 MiB. Peers " \
      "reach the block at heap_addr(offset) with this PE's number, the offset from " \
      "heap_offset(). Free it with free_local().") \
    X(free_local, METH_O, ST_NONE, "($module, ptr)", \
      "Not collective: frees a block from malloc_local() (None: nothing). Anything else, or a " \
      "second free, raises Error.") \
    X(heap_offset, METH_O, ST_NONE, "($module, ptr)", \
      "(offset, is_device): where ptr (an address or a symmetric buffer) lies in this PE's " \
      "host or device symmetric heap.") \
    X(heap_addr, METH_FASTCALL, ST_NONE, "($module, offset, device=None)", \
      "This PE's address at offset of one of its heaps: device None as malloc_local's " \
      "default (the device heap when a CUDA device is bound, else the host heap), True / " \
      "False: that heap. With a peer's PE number it names the peer's memory at that offset.")
/* clang-format on */
LOCAL_FUNCS(KW_WRAP)

static PyMethodDef local_methods[] = {
    LOCAL_FUNCS(KW_ENTRY){NULL, NULL, 0, NULL},
};

int upy_local_add(PyObject *m)
{
    return PyModule_AddFunctions(m, local_methods);
}
