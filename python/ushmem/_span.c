/* ushmem._ushmem: resolving memory arguments (a SymmetricBuffer, an int
 * address, the buffer protocol, a torch tensor, __cuda_array_interface__ /
 * __array_interface__) into spans, and the checks on them: that a remote
 * range lies in a live symmetric allocation, local sizes and addresses, and
 * that peers and their heaps are reachable. */
#include "_ushmem.h"

/* Interface dict (__array_interface__ / __cuda_array_interface__) to a span. */
static int span_from_iface(PyObject *d, span_t *s, int device, const char *fn, const char *what)
{
    if (!PyDict_Check(d)) {
        PyErr_Format(PyExc_TypeError, "%s: %s: array interface is not a dict", fn, what);
        return -1;
    }
    PyObject *data = PyDict_GetItemString(d, "data");
    PyObject *shape = PyDict_GetItemString(d, "shape");
    PyObject *typestr = PyDict_GetItemString(d, "typestr");
    PyObject *strides = PyDict_GetItemString(d, "strides");
    if (!data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) < 1 || !shape ||
        !PyTuple_Check(shape) || !typestr || !PyUnicode_Check(typestr)) {
        PyErr_Format(PyExc_TypeError, "%s: %s: malformed array interface", fn, what);
        return -1;
    }
    if (strides && strides != Py_None) {
        PyErr_Format(PyExc_ValueError, "%s: %s must be contiguous", fn, what);
        return -1;
    }
    void *p;
    if (upy_as_address(PyTuple_GET_ITEM(data, 0), &p, fn, what))
        return -1;
    const char *ts = PyUnicode_AsUTF8(typestr);
    long item = ts && strlen(ts) > 2 ? strtol(ts + 2, NULL, 10) : 0;
    if (item <= 0) {
        PyErr_Format(PyExc_TypeError, "%s: %s: bad typestr", fn, what);
        return -1;
    }
    size_t n = (size_t)item;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (k < 0) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "%s: %s: negative shape", fn, what);
            return -1;
        }
        n *= (size_t)k;
    }
    s->ptr = s->sym = p;
    s->len = n;
    s->device = device;
    return 0;
}

/* A torch tensor (anything with data_ptr/element_size/numel). 1 if handled,
 * 0 if o is not one, -1 on error. */
static int span_from_tensor(PyObject *o, span_t *s, const char *fn, const char *what)
{
    PyObject *dp;
    if (upy_lookup_attr(o, "data_ptr", &dp) <= 0)
        return PyErr_Occurred() ? -1 : 0;
    Py_DECREF(dp);
    PyObject *is_cuda = NULL, *ptr = NULL, *esz = NULL, *numel = NULL, *contig = NULL;
    int rc = -1;
    if (upy_lookup_attr(o, "is_cuda", &is_cuda) < 0)
        goto out;
    if (!(ptr = PyObject_CallMethod(o, "data_ptr", NULL)) ||
        !(esz = PyObject_CallMethod(o, "element_size", NULL)) ||
        !(numel = PyObject_CallMethod(o, "numel", NULL)) ||
        !(contig = PyObject_CallMethod(o, "is_contiguous", NULL)))
        goto out;
    if (!PyObject_IsTrue(contig)) {
        PyErr_Format(PyExc_ValueError, "%s: %s must be contiguous", fn, what);
        goto out;
    }
    s->ptr = s->sym = PyLong_AsVoidPtr(ptr);
    s->len = PyLong_AsSize_t(esz) * PyLong_AsSize_t(numel);
    s->device = is_cuda && PyObject_IsTrue(is_cuda) ? 0 : -1;
    rc = PyErr_Occurred() ? -1 : 1;
out:
    Py_XDECREF(is_cuda);
    Py_XDECREF(ptr);
    Py_XDECREF(esz);
    Py_XDECREF(numel);
    Py_XDECREF(contig);
    return rc;
}

/* Resolve a memory argument. writable: the local memory will be written. */
int upy_span_get(PyObject *o, span_t *s, int writable, const char *fn, const char *what)
{
    s->has_view = 0;
    s->buf = NULL;
    s->device = -1;
    if (Py_IS_TYPE(o, &upy_SymBufType)) {
        SymBuf *b = (SymBuf *)o;
        if (upy_symbuf_check_alive(b, fn))
            return -1;
        s->ptr = b->ptr;
        s->sym = b->sym;
        s->len = b->nbytes;
        s->device = b->device;
        s->buf = b;
        return 0;
    }
    if (PyLong_Check(o)) { /* bools too: refused */
        void *p;
        if (upy_as_address(o, &p, fn, what))
            return -1;
        s->ptr = s->sym = p;
        s->len = SIZE_MAX;
        return 0;
    }
    if (PyObject_CheckBuffer(o)) {
        if (PyObject_GetBuffer(o, &s->view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) {
            PyObject *et, *ev, *tb;
            PyErr_Fetch(&et, &ev, &tb);
            PyErr_Format(PyExc_ValueError, "%s: %s must be a contiguous%s buffer (%S)", fn, what,
                         writable ? ", writable" : "", ev ? ev : Py_None);
            Py_XDECREF(et);
            Py_XDECREF(ev);
            Py_XDECREF(tb);
            return -1;
        }
        s->has_view = 1;
        s->ptr = s->sym = s->view.buf;
        s->len = (size_t)s->view.len;
        return 0;
    }
    int t = span_from_tensor(o, s, fn, what);
    if (t)
        return t < 0 ? -1 : 0;
    PyObject *d;
    if (upy_lookup_attr(o, "__cuda_array_interface__", &d) < 0)
        return -1;
    if (d) {
        int rc = span_from_iface(d, s, 0, fn, what);
        Py_DECREF(d);
        return rc;
    }
    if (upy_lookup_attr(o, "__array_interface__", &d) < 0)
        return -1;
    if (d) {
        int rc = span_from_iface(d, s, -1, fn, what);
        Py_DECREF(d);
        return rc;
    }
    PyErr_Format(PyExc_TypeError,
                 "%s: %s must be a SymmetricBuffer, an int address, a buffer (numpy array, "
                 "bytearray, ...) or a tensor, not %.100s",
                 fn, what, Py_TYPE(o)->tp_name);
    return -1;
}

/* [sym, sym+n) must lie in one live symmetric allocation made through ushmem.
 * Sets s->device from the allocation (host heap or device heap). */
int upy_check_sym_span(span_t *s, size_t n, const char *fn, const char *what)
{
    if (s->buf) {
        if (n > s->buf->nbytes) {
            PyErr_Format(PyExc_ValueError, "%s: %s is a SymmetricBuffer of %zu bytes; %zu needed",
                         fn, what, s->buf->nbytes, n);
            return -1;
        }
        return 0;
    }
    uintptr_t a = (uintptr_t)s->sym;
    if (n && a + n - 1 < a)
        return upy_err(ERR_NOTSYM, "%s: %s: address range wraps around", fn, what);
    if (s->len != SIZE_MAX && n > s->len) {
        PyErr_Format(PyExc_ValueError, "%s: %s has %zu bytes; %zu needed", fn, what, s->len, n);
        return -1;
    }
    Py_ssize_t i = upy_alloc_find(a, n);
    if (LIKELY(i >= 0)) {
        s->device = upy_allocs[i].device;
        return 0;
    }
    /* A peer's local block, named at its offset here (heap_addr): what lives
     * there on the peer cannot be checked from this process. */
    if (upy_local_span(s->sym, n, &s->device))
        return 0;
    i = upy_alloc_near(a);
    if (i >= 0) {
        const alloc_t *e = &upy_allocs[i];
        return upy_err(ERR_NOTSYM,
                       "%s: %s: %zu bytes at %p run past the end of the symmetric "
                       "allocation [%p, +%zu)",
                       fn, what, n, (void *)a, (void *)e->addr, e->size);
    }
    return upy_err(ERR_NOTSYM,
                   "%s: %s (%s%s, %zu bytes) is not in a live symmetric allocation "
                   "(allocate it with ushmem.create_buffer(), ushmem.malloc() or the "
                   "interop helpers)",
                   fn, what, s->device >= 0 ? "CUDA memory at " : "", upy_addr_txt((void *)a).s, n);
}

int upy_check_local_span(const span_t *s, size_t n, const char *fn, const char *what)
{
    if (s->device >= 0 && upy_g.dev < 0)
        return upy_err_no_cuda(fn, "CUDA device memory");
    if (s->len != SIZE_MAX && n > s->len) {
        PyErr_Format(PyExc_ValueError, "%s: %s has %zu bytes; %zu needed", fn, what, s->len, n);
        return -1;
    }
    if (n && !s->ptr) {
        PyErr_Format(PyExc_ValueError, "%s: %s is a NULL address", fn, what);
        return -1;
    }
    uintptr_t a = (uintptr_t)s->ptr;
    if (n && (a < NULL_PAGE_END || n > USER_ADDR_END - a)) {
        PyErr_Format(PyExc_ValueError,
                     "%s: %s: %zu bytes at %s are not memory of this process (%s)", fn, what, n,
                     upy_addr_txt(s->ptr).s,
                     a < NULL_PAGE_END ? "in the never-mapped first page"
                                       : "they run past the user address space");
        return -1;
    }
    return 0;
}

/* The peer must be reachable for RMA (mapped here for shm). */
int upy_check_reach(int pe, const char *fn)
{
    if (LIKELY(shmem_pe_accessible(pe)))
        return 0;
    return upy_err(ERR_UNREACHABLE, "%s: PE %d is not reachable from PE %d by any transport", fn,
                   pe, upy_g.me);
}

/* A symmetric span on the device heap: PE pe's copy must be mapped here or
 * reached through the proxy (another host); a peer on a GPU without peer
 * access to this PE's and no proxy is neither. Host spans: 0. */
int upy_check_sym_mapped(const span_t *s, int pe, const char *fn, const char *what)
{
    if (s->device < 0 || LIKELY(dev_heap_reached(pe)))
        return 0;
    return upy_err(ERR_UNREACHABLE,
                   "%s: %s: PE %d's device heap is not reachable from PE %d (its GPU has no "
                   "peer access to this one, and no proxy reaches it: PEs on other hosts need "
                   "the mpi transport)",
                   fn, what, pe, upy_g.me);
}

/* Stream-ordered synchronization and stream collectives need every team
 * member's device heap (and, for device buffers, their copies) mapped here or
 * reached through the proxy. */
int upy_check_team_mapped(shmem_team_t t, const span_t *d, const span_t *s, int heaps,
                          const char *fn)
{
    if (upy_g.dev < 0)
        return 0;
    int n = shmem_team_n_pes(t);
    for (int i = 0; i < n; i++) {
        int pe = shmem_team_translate_pe(t, i, SHMEM_TEAM_WORLD);
        if (pe < 0)
            continue;
        if (heaps && !dev_heap_reached(pe))
            return upy_err(ERR_UNREACHABLE,
                           "%s: PE %d's device heap is not reachable from PE %d: stream-ordered "
                           "synchronization needs every team member's (on this host, on GPUs "
                           "with peer access, or on other hosts through the mpi transport)",
                           fn, pe, upy_g.me);
        if ((d && upy_check_sym_mapped(d, pe, fn, "dest")) ||
            (s && upy_check_sym_mapped(s, pe, fn, "source")))
            return -1;
    }
    return 0;
}
