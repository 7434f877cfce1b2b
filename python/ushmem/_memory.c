/* ushmem._ushmem: the table of live symmetric allocations made through
 * ushmem (what makes remote-range checks exact and what finalize() reports
 * as leaks) and the memory management functions: create_buffer, malloc,
 * calloc, align, free, ptr, get_peer_buffer, get_heap_bases, the buffer
 * registration calls, addr_accessible. SymmetricBuffer is in _symbuf.c, the
 * resolving of memory arguments in _span.c. */
#include "_ushmem.h"

/* ------------------------------------------------------------------------ */
/* Allocation table: every live symmetric allocation made through ushmem     */
/* ------------------------------------------------------------------------ */

static const char *const alloc_kind_name[] = {
    "SymmetricBuffer", "malloc", "SymmetricBuffer (garbage-collected)", "malloc_local"};

alloc_t *upy_allocs;
static size_t g_nallocs, g_cap_allocs;

/* Index of the allocation containing [a, a+n) (n may be 0), or -1. */
Py_ssize_t upy_alloc_find(uintptr_t a, size_t n)
{
    size_t lo = 0, hi = g_nallocs;
    while (lo < hi) { /* first allocation starting after a */
        size_t mid = (lo + hi) / 2;
        if (upy_allocs[mid].addr <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const alloc_t *e = &upy_allocs[lo - 1];
    size_t off = a - e->addr;
    if (off < e->size && n <= e->size - off)
        return (Py_ssize_t)(lo - 1);
    if (off == e->size && n == 0 && e->size == 0)
        return (Py_ssize_t)(lo - 1);
    return -1;
}

/* Index of the allocation that starts at a, or -1. */
Py_ssize_t upy_alloc_exact(uintptr_t a)
{
    Py_ssize_t i = upy_alloc_find(a, 0);
    return i >= 0 && upy_allocs[i].addr == a ? i : -1;
}

/* Allocation overlapping a, if any (for messages). */
Py_ssize_t upy_alloc_near(uintptr_t a)
{
    return upy_alloc_find(a, 1);
}

int upy_alloc_add(void *p, size_t size, int kind, PyObject *owner, int device)
{
    if (g_nallocs == g_cap_allocs) {
        size_t cap = g_cap_allocs ? 2 * g_cap_allocs : 64;
        alloc_t *n = PyMem_Realloc(upy_allocs, cap * sizeof *n);
        if (!n) {
            PyErr_NoMemory();
            return -1;
        }
        upy_allocs = n;
        g_cap_allocs = cap;
    }
    PyObject *ref = NULL;
    if (owner && !(ref = PyWeakref_NewRef(owner, NULL)))
        return -1;
    uintptr_t a = (uintptr_t)p;
    size_t i = g_nallocs;
    while (i > 0 && upy_allocs[i - 1].addr > a) {
        upy_allocs[i] = upy_allocs[i - 1];
        i--;
    }
    upy_allocs[i] = (alloc_t){a, size, kind, device, ref};
    g_nallocs++;
    return 0;
}

void upy_alloc_remove(Py_ssize_t i)
{
    Py_XDECREF(upy_allocs[i].owner);
    memmove(&upy_allocs[i], &upy_allocs[i + 1], (g_nallocs - (size_t)i - 1) * sizeof *upy_allocs);
    g_nallocs--;
}

static void alloc_clear(void)
{
    for (size_t i = 0; i < g_nallocs; i++)
        Py_XDECREF(upy_allocs[i].owner);
    g_nallocs = 0;
}

/* finalize(): warn about what was never freed (LeakWarning), then forget
 * every allocation (they die with the library). me: this PE, for the words. */
void upy_allocs_finalize(int me)
{
    /* Leak report: everything still in the table. */
    if (g_nallocs) {
        size_t total = 0;
        PyObject *lines = PyList_New(0);
        for (size_t i = 0; lines && i < g_nallocs; i++) {
            total += upy_allocs[i].size;
            if (i < 8) {
                PyObject *l = PyUnicode_FromFormat("%s of %zu bytes at %p",
                                                   alloc_kind_name[upy_allocs[i].kind],
                                                   upy_allocs[i].size, (void *)upy_allocs[i].addr);
                if (!l || PyList_Append(lines, l) < 0) {
                    Py_XDECREF(l);
                    Py_CLEAR(lines);
                }
                Py_XDECREF(l);
            }
        }
        if (lines) {
            PyObject *sep = PyUnicode_FromString("; ");
            PyObject *joined = sep ? PyUnicode_Join(sep, lines) : NULL;
            if (joined)
                PyErr_WarnFormat(upy_LeakWarning, 1,
                                 "ushmem.finalize: PE %d: %zu symmetric allocation(s), %zu bytes, "
                                 "were never freed: %U%s",
                                 me, g_nallocs, total, joined, g_nallocs > 8 ? "; ..." : "");
            Py_XDECREF(sep);
            Py_XDECREF(joined);
            Py_DECREF(lines);
        }
        /* An error-raising warning filter must not stop the teardown. */
        if (PyErr_Occurred())
            PyErr_WriteUnraisable(NULL);
    }
    alloc_clear();
}

/* SHMEM_DEBUG set: freed host symmetric memory is overwritten with POISON_BYTE
 * (on this PE's copy) so that reading it after free shows. */
int upy_debug_poison(void)
{
    const char *v = getenv("SHMEM_DEBUG");
    return v && *v && strcmp(v, "0") != 0;
}

static void debug_poison_range(const alloc_t *e)
{
    if (e->device < 0 && upy_debug_poison())
        memset((void *)e->addr, POISON_BYTE, e->size);
}

/* Local blocks in the table: their own PE may wrap them, finalize() reports
 * them, free() refuses them. */
int upy_alloc_add_local(void *p, size_t size, int device)
{
    return upy_alloc_add(p, size, ALLOC_LOCAL, NULL, device);
}

int upy_alloc_drop_local(const void *p)
{
    Py_ssize_t i = upy_alloc_exact((uintptr_t)p);
    if (i < 0)
        return 0;
    if (upy_allocs[i].kind != ALLOC_LOCAL)
        return -1;
    debug_poison_range(&upy_allocs[i]);
    upy_alloc_remove(i);
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Memory management                                                          */
/* ------------------------------------------------------------------------ */

static PyObject *py_create_buffer(PyObject *self, PyObject *args, PyObject *kwds)
{
    (void)self;
    return upy_SymBufType.tp_new(&upy_SymBufType, args, kwds); /* SymmetricBuffer(...) */
}

/* malloc, calloc and align place memory as create_buffer does by default (and
 * as the C routines do): on the device heap when this PE has a CUDA device
 * bound (rocshmem4py's are device memory: its users read them with
 * cudaMemcpy), else on the host heap. The heap is told by the driver, as at
 * init (upy_probe_device). */
static PyObject *raw_result(void *p, size_t n, const char *fn)
{
    if (!p) {
        if (n == 0)
            Py_RETURN_NONE;
        char why[600];
        if (upy_lib_error[0] && !strstr(upy_lib_error, "exhausted")) { /* bad alignment etc. */
            upy_err(ERR_INVALID, "%s: cannot allocate %zu symmetric bytes%s", fn, n,
                    upy_lib_reason(why, sizeof why));
            return NULL;
        }
        upy_err(ERR_NOMEM,
                "%s: cannot allocate %zu symmetric bytes: the %s is exhausted (raise %s)%s", fn, n,
                upy_g.dev >= 0 ? "device symmetric heap" : "symmetric heap",
                upy_g.dev >= 0 ? "USHMEM_DEVICE_HEAP_SIZE" : "SHMEM_SYMMETRIC_SIZE",
                upy_lib_reason(why, sizeof why));
        return NULL;
    }
    if (upy_alloc_add(p, n, ALLOC_RAW, NULL, upy_g.dev >= 0 ? upy_mem_device(p) : -1) < 0)
        return NULL;
    return PyLong_FromVoidPtr(p);
}

static PyObject *py_malloc(PyObject *self, PyObject *arg)
{
    (void)self;
    size_t n;
    void *p;
    if (upy_as_size(arg, &n, "malloc", "nbytes") || require_init("malloc"))
        return NULL;
    Py_BEGIN_ALLOW_THREADS;
    p = shmem_malloc(n);
    Py_END_ALLOW_THREADS;
    return raw_result(p, n, "malloc");
}

static PyObject *py_calloc(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    size_t count, size;
    void *p;
    if (upy_check_nargs(nargs, 2, 2, "calloc(count, size)") ||
        upy_as_size(args[0], &count, "calloc", "count") ||
        upy_as_size(args[1], &size, "calloc", "size") || require_init("calloc"))
        return NULL;
    if (size && count > SIZE_MAX / size) {
        PyErr_Format(PyExc_ValueError, "calloc: %zu x %zu bytes overflows", count, size);
        return NULL;
    }
    if (count == 0 || size == 0) { /* the seed (rocshmem4py) raises here */
        upy_err(ERR_INVALID, "calloc: count %zu x size %zu is an empty allocation", count, size);
        return NULL;
    }
    /* Zeroed on whichever heap, and every PE's block is zero before any PE
     * returns (nobody writes into a peer's block before it is zeroed). */
    Py_BEGIN_ALLOW_THREADS;
    p = shmem_calloc(count, size);
    Py_END_ALLOW_THREADS;
    return raw_result(p, count * size, "calloc");
}

static PyObject *py_align(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    size_t alignment, n;
    void *p;
    if (upy_check_nargs(nargs, 2, 2, "align(alignment, nbytes)") ||
        upy_as_size(args[0], &alignment, "align", "alignment") ||
        upy_as_size(args[1], &n, "align", "nbytes") || require_init("align"))
        return NULL;
    if (alignment == 0 || (alignment & (alignment - 1))) { /* ushmem.Error, as in the seed */
        upy_err(ERR_INVALID, "align: alignment %zu is not a power of two", alignment);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS;
    p = shmem_align(alignment, n);
    Py_END_ALLOW_THREADS;
    return raw_result(p, n, "align");
}

static PyObject *py_free(PyObject *self, PyObject *arg)
{
    (void)self;
    if (Py_IS_TYPE(arg, &upy_SymBufType))
        return upy_symbuf_free(arg, NULL);
    if (arg == Py_None)
        Py_RETURN_NONE; /* like free(NULL); not collective here */
    if (require_init("free"))
        return NULL;
    if (!PyLong_Check(arg)) {
        PyErr_Format(PyExc_TypeError,
                     "free: expected an address from malloc/calloc/align or "
                     "a SymmetricBuffer, not %.100s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    void *p;
    if (upy_as_address(arg, &p, "free", "addr"))
        return NULL;
    Py_ssize_t i = upy_alloc_exact((uintptr_t)p);
    if (i < 0) {
        upy_err(ERR_NOTFOUND,
                "free: %s is not the start of a live symmetric allocation "
                "(already freed?)",
                upy_addr_txt(p).s);
        return NULL;
    }
    if (upy_allocs[i].kind == ALLOC_BUFFER) {
        upy_err(ERR_INVALID, "free: %p belongs to a live SymmetricBuffer; call its free()", p);
        return NULL;
    }
    if (upy_allocs[i].kind == ALLOC_LOCAL) {
        upy_err(ERR_INVALID,
                "free: %p is a local block (from malloc_local): free it with free_local() on "
                "this PE alone",
                p);
        return NULL;
    }
    debug_poison_range(&upy_allocs[i]);
    upy_alloc_remove(i);
    Py_BEGIN_ALLOW_THREADS;
    shmem_free(p);
    Py_END_ALLOW_THREADS;
    Py_RETURN_NONE;
}

/* ptr(dest, pe): address of pe's copy mapped in this process, or None. */
static PyObject *py_ptr(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    int pe;
    span_t s;
    if (upy_check_nargs(nargs, 2, 2, "ptr(dest, pe)") || upy_check_pe(args[1], &pe, "ptr") ||
        upy_span_get(args[0], &s, 0, "ptr", "dest"))
        return NULL;
    int bad = upy_check_sym_span(&s, 1, "ptr", "dest");
    void *p = bad ? NULL : shmem_ptr(s.sym, pe);
    span_release(&s);
    if (bad)
        return NULL;
    if (!p)
        Py_RETURN_NONE;
    return PyLong_FromVoidPtr(p);
}

/* get_peer_buffer(obj, pe, nbytes=None): a non-owning view of pe's copy. */
static PyObject *py_get_peer_buffer(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    static const char fn[] = "get_peer_buffer";
    int pe;
    span_t s;
    size_t n;
    if (upy_check_nargs(nargs, 2, 3, "get_peer_buffer(buf, pe, nbytes=None)") ||
        upy_check_pe(args[1], &pe, fn) || upy_span_get(args[0], &s, 0, fn, "buf"))
        return NULL;
    span_release(&s); /* only its addresses are used; the owner keeps it alive */
    if (nargs == 3 && args[2] != Py_None) {
        if (upy_as_size(args[2], &n, fn, "nbytes"))
            return NULL;
    } else if (s.len == SIZE_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: nbytes is needed with an int address", fn);
        return NULL;
    } else {
        n = s.len;
    }
    if (upy_check_sym_span(&s, n, fn, "buf"))
        return NULL;
    void *p = shmem_ptr(s.sym, pe);
    if (!p) {
        upy_err(ERR_UNREACHABLE,
                "%s: PE %d's copy is not mapped in PE %d's address space (it runs "
                "on another host, or its %s memory is not shared here); use "
                "getmem/putmem instead",
                fn, pe, upy_g.me, s.device >= 0 ? "device" : "host");
        return NULL;
    }
    SymBuf *owner = s.buf ? s.buf : NULL;
    if (!owner) { /* find the SymmetricBuffer that owns the range, to keep it alive */
        Py_ssize_t i = upy_alloc_find((uintptr_t)s.sym, n);
        if (i >= 0 && upy_allocs[i].owner) {
            PyObject *o = PyWeakref_GetObject(upy_allocs[i].owner);
            if (o && o != Py_None)
                owner = (SymBuf *)o;
        }
    }
    return (PyObject *)upy_symbuf_new(p, s.sym, n, owner, 0, pe, s.device);
}

static PyObject *py_get_heap_bases(PyObject *self, PyObject *arg)
{
    (void)self;
    static const char fn[] = "get_heap_bases";
    span_t s;
    if (require_init(fn) || upy_span_get(arg, &s, 0, fn, "buf"))
        return NULL;
    span_release(&s);
    if (upy_check_sym_span(&s, s.len == SIZE_MAX ? 1 : s.len, fn, "buf"))
        return NULL;
    void **bases = PyMem_Calloc((size_t)upy_g.npes, sizeof *bases);
    if (!bases)
        return PyErr_NoMemory();
    int rc = shmemx_heap_bases(s.sym, bases);
    PyObject *list = NULL;
    if (!upy_check_status(rc, fn) && (list = PyList_New(upy_g.npes))) {
        for (int i = 0; i < upy_g.npes; i++) {
            PyObject *v = bases[i] ? PyLong_FromVoidPtr(bases[i]) : Py_NewRef(Py_None);
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

/* buffer_register(addr, length=None) */
static PyObject *py_buffer_register(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    static const char fn[] = "buffer_register";
    span_t s;
    size_t n;
    if (upy_check_nargs(nargs, 1, 2, "buffer_register(addr, length=None)") || require_init(fn) ||
        upy_span_get(args[0], &s, 0, fn, "addr"))
        return NULL;
    span_release(&s); /* the caller keeps the memory alive while registered */
    if (nargs == 2 && args[1] != Py_None) {
        if (upy_as_size(args[1], &n, fn, "length"))
            return NULL;
        if (s.len != SIZE_MAX && n > s.len) {
            PyErr_Format(PyExc_ValueError, "%s: length %zu exceeds the buffer's %zu bytes", fn, n,
                         s.len);
            return NULL;
        }
    } else if (s.len == SIZE_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: length is needed with an int address", fn);
        return NULL;
    } else {
        n = s.len;
    }
    if (s.device >= 0) {
        upy_err(ERR_UNSUPPORTED,
                "%s: CUDA device memory cannot be registered (the library registers host "
                "buffers); device memory works as the local side of transfers as it is",
                fn);
        return NULL;
    }
    /* The seed's contract: the library's status (0, or negative: NULL, zero
     * length, overlap), never an exception for those. */
    if (!s.ptr || n == 0)
        return PyLong_FromLong(SHMEMX_ERR_INVALID);
    return PyLong_FromLong(shmemx_buffer_register(s.ptr, n));
}

static PyObject *py_buffer_unregister(PyObject *self, PyObject *arg)
{
    (void)self;
    static const char fn[] = "buffer_unregister";
    span_t s;
    if (require_init(fn) || upy_span_get(arg, &s, 0, fn, "addr"))
        return NULL;
    span_release(&s);
    /* The status as in the seed: 0, or negative (NULL, not registered). */
    if (!s.ptr)
        return PyLong_FromLong(SHMEMX_ERR_INVALID);
    return PyLong_FromLong(shmemx_buffer_unregister(s.ptr));
}

static PyObject *py_buffer_unregister_all(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (require_init("buffer_unregister_all") ||
        upy_check_status(shmemx_buffer_unregister_all(), "buffer_unregister_all"))
        return NULL;
    Py_RETURN_NONE;
}

/* _allocations(): [(addr, nbytes, kind)], for tests and leak hunting. */
static PyObject *py_allocations(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    PyObject *l = PyList_New((Py_ssize_t)g_nallocs);
    for (size_t i = 0; l && i < g_nallocs; i++) {
        PyObject *t =
            Py_BuildValue("(Nns)", PyLong_FromVoidPtr((void *)upy_allocs[i].addr),
                          (Py_ssize_t)upy_allocs[i].size, alloc_kind_name[upy_allocs[i].kind]);
        if (!t) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, t);
    }
    return l;
}

/* _owner_of(addr): the live owning SymmetricBuffer that starts at addr, or None. */
static PyObject *py_owner_of(PyObject *self, PyObject *arg)
{
    (void)self;
    void *p;
    if (upy_as_address(arg, &p, "buffer_of", "addr"))
        return NULL;
    Py_ssize_t i = upy_alloc_exact((uintptr_t)p);
    if (i >= 0 && upy_allocs[i].owner) {
        PyObject *o = PyWeakref_GetObject(upy_allocs[i].owner);
        if (o) {
            Py_INCREF(o);
            return o;
        }
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *py_addr_accessible(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    int pe;
    span_t s;
    if (upy_check_nargs(nargs, 2, 2, "addr_accessible(addr, pe)") ||
        upy_as_int(args[1], &pe, "addr_accessible", "pe") ||
        upy_span_get(args[0], &s, 0, "addr_accessible", "addr"))
        return NULL;
    Py_ssize_t i = upy_alloc_find((uintptr_t)s.sym, 1);
    int dev = -1, known = i >= 0;
    if (known)
        dev = upy_allocs[i].device;
    else
        known = upy_local_span(s.sym, 1, &dev);
    int r = known && pe >= 0 && pe < upy_g.npes &&
            (dev >= 0 ? shmem_ptr(s.sym, pe) != NULL : shmem_pe_accessible(pe));
    span_release(&s);
    return PyBool_FromLong(r);
}

/* The public functions here, called through upy_kw_call:
 * X(name, flags, statistics kind, "($module, parameters)", "doc"). */
/* clang-format off */
#define MEMORY_FUNCS(X) \
    X(addr_accessible, METH_FASTCALL, ST_NONE, "($module, addr, pe)", \
      "True when the symmetric object addr is reachable on PE pe.") \
    X(malloc, METH_O, ST_NONE, "($module, nbytes)", \
      "Collective: nbytes of symmetric memory (the device heap when a CUDA device is bound, " \
      "else the host heap); returns the address (int). 0 bytes: None. Free it with free() " \
      "on every PE.") \
    X(calloc, METH_FASTCALL, ST_NONE, "($module, count, size)", \
      "Collective: count * size zeroed symmetric bytes (placed as malloc's); returns the " \
      "address. A zero count or size raises Error (a RuntimeError).") \
    X(align, METH_FASTCALL, ST_NONE, "($module, alignment, nbytes)", \
      "Collective: nbytes of symmetric memory (placed as malloc's) at a multiple of alignment " \
      "(a power of two; otherwise Error, a RuntimeError); returns the address.") \
    X(free, METH_O, ST_NONE, "($module, addr)", \
      "Collective: frees a symmetric allocation (an address from malloc/calloc/align, or an " \
      "owning SymmetricBuffer).") \
    X(ptr, METH_FASTCALL, ST_NONE, "($module, dest, pe)", \
      "The address of PE pe's copy of the symmetric object dest as mapped in this process, or " \
      "None where it is not mapped.") \
    X(get_peer_buffer, METH_FASTCALL, ST_NONE, "($module, buf, pe, nbytes=None)", \
      "A non-owning SymmetricBuffer over PE pe's copy of buf (mapped in this process); " \
      "nbytes: how much of it (default: all).") \
    X(get_heap_bases, METH_O, ST_NONE, "($module, buf)", \
      "[address of each PE's copy of buf as mapped in this process, or None].") \
    X(buffer_register, METH_FASTCALL, ST_NONE, "($module, addr, length=None)", \
      "Registers local, non-symmetric memory (an object with the buffer protocol, or an " \
      "address and length); returns the status: SUCCESS (0), or a negative ERR_* for a NULL " \
      "address, zero length or overlap. Never raises for those.") \
    X(buffer_unregister, METH_O, ST_NONE, "($module, addr)", \
      "Unregisters memory buffer_register() registered; returns SUCCESS (0), or a negative " \
      "ERR_* when addr is not registered.") \
    X(buffer_unregister_all, METH_NOARGS, ST_NONE, "($module, /)", \
      "Unregisters everything buffer_register() registered; returns None.")
/* clang-format on */
MEMORY_FUNCS(KW_WRAP)

/* clang-format off */
static PyMethodDef memory_methods[] = {
    F_(create_buffer, KW, "($module, nbytes, device=None, zero=False)",
       "Collective: a SymmetricBuffer of nbytes: on the device heap when this PE has a CUDA "
       "device bound, else on the host heap (device='cpu': host memory always; device='cuda': "
       "the device heap of the bound GPU, or an error); zero=True zeroes it."),
    {"_allocations", FN(py_allocations), METH_NOARGS, "[(addr, nbytes, kind)] live allocations"},
    {"_owner_of", FN(py_owner_of), METH_O, NULL},
    MEMORY_FUNCS(KW_ENTRY)
    {NULL, NULL, 0, NULL},
};
/* clang-format on */

int upy_memory_add(PyObject *m)
{
    return PyModule_AddFunctions(m, memory_methods);
}