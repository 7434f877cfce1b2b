/* ushmem._ushmem: symmetric memory seen from Python: the table of live
 * allocations, SymmetricBuffer (and its buffer protocol, interfaces and
 * DLPack), how memory arguments are resolved and checked, and the memory
 * management functions. */
#include "_ushmem.h"

/* ------------------------------------------------------------------------ */
/* Allocation table: every live symmetric allocation made through ushmem     */
/* ------------------------------------------------------------------------ */

/* ALLOC_LOCAL: a local block (malloc_local, _local.c), freed by this PE alone. */
enum { ALLOC_BUFFER = 0, ALLOC_RAW = 1, ALLOC_COLLECTED = 2, ALLOC_LOCAL = 3 };
static const char *const alloc_kind_name[] = {
    "SymmetricBuffer", "malloc", "SymmetricBuffer (garbage-collected)", "malloc_local"};

typedef struct {
    uintptr_t addr;
    size_t size;
    int kind;
    int device;      /* -1 host heap, else the CUDA ordinal of the device heap */
    PyObject *owner; /* weak reference to the owning SymmetricBuffer, or NULL */
} alloc_t;

static alloc_t *g_allocs;
static size_t g_nallocs, g_cap_allocs;

/* Index of the allocation containing [a, a+n) (n may be 0), or -1. */
static Py_ssize_t alloc_find(uintptr_t a, size_t n)
{
    size_t lo = 0, hi = g_nallocs;
    while (lo < hi) { /* first allocation starting after a */
        size_t mid = (lo + hi) / 2;
        if (g_allocs[mid].addr <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const alloc_t *e = &g_allocs[lo - 1];
    size_t off = a - e->addr;
    if (off < e->size && n <= e->size - off)
        return (Py_ssize_t)(lo - 1);
    if (off == e->size && n == 0 && e->size == 0)
        return (Py_ssize_t)(lo - 1);
    return -1;
}

/* Index of the allocation that starts at a, or -1. */
static Py_ssize_t alloc_exact(uintptr_t a)
{
    Py_ssize_t i = alloc_find(a, 0);
    return i >= 0 && g_allocs[i].addr == a ? i : -1;
}

/* Allocation overlapping a, if any (for messages). */
static Py_ssize_t alloc_near(uintptr_t a)
{
    return alloc_find(a, 1);
}

static int alloc_add(void *p, size_t size, int kind, PyObject *owner, int device)
{
    if (g_nallocs == g_cap_allocs) {
        size_t cap = g_cap_allocs ? 2 * g_cap_allocs : 64;
        alloc_t *n = PyMem_Realloc(g_allocs, cap * sizeof *n);
        if (!n) {
            PyErr_NoMemory();
            return -1;
        }
        g_allocs = n;
        g_cap_allocs = cap;
    }
    PyObject *ref = NULL;
    if (owner && !(ref = PyWeakref_NewRef(owner, NULL)))
        return -1;
    uintptr_t a = (uintptr_t)p;
    size_t i = g_nallocs;
    while (i > 0 && g_allocs[i - 1].addr > a) {
        g_allocs[i] = g_allocs[i - 1];
        i--;
    }
    g_allocs[i] = (alloc_t){a, size, kind, device, ref};
    g_nallocs++;
    return 0;
}

static void alloc_remove(Py_ssize_t i)
{
    Py_XDECREF(g_allocs[i].owner);
    memmove(&g_allocs[i], &g_allocs[i + 1], (g_nallocs - (size_t)i - 1) * sizeof *g_allocs);
    g_nallocs--;
}

static void alloc_clear(void)
{
    for (size_t i = 0; i < g_nallocs; i++)
        Py_XDECREF(g_allocs[i].owner);
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
            total += g_allocs[i].size;
            if (i < 8) {
                PyObject *l =
                    PyUnicode_FromFormat("%s of %zu bytes at %p", alloc_kind_name[g_allocs[i].kind],
                                         g_allocs[i].size, (void *)g_allocs[i].addr);
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

/* ------------------------------------------------------------------------ */
/* SymmetricBuffer                                                            */
/* ------------------------------------------------------------------------ */

struct SymBuf {
    PyObject_HEAD char *ptr; /* the memory this object exposes, as mapped in this process */
    char *sym;               /* the symmetric address (this PE's copy) it names */
    size_t nbytes;
    struct SymBuf *owner; /* views: the owning buffer (strong reference), or NULL */
    int owning;           /* made by create_buffer(): free() frees it */
    int pe;               /* whose copy ptr points into */
    int device;           /* -1: host memory, else CUDA ordinal */
    int freed;            /* free() was called (a view: marked freed, nothing freed) */
    unsigned long gen;    /* library generation it belongs to */
    Py_ssize_t exports;   /* live buffer-protocol / DLPack exports */
    PyObject *weakrefs;
};

static PyTypeObject SymBufType;

/* SHMEM_DEBUG set: freed host symmetric memory is overwritten with this byte
 * (on this PE's copy) so that reading it after free shows. */
#define POISON_BYTE 0xA5
static int debug_poison(void)
{
    const char *v = getenv("SHMEM_DEBUG");
    return v && *v && strcmp(v, "0") != 0;
}

static void debug_poison_range(const alloc_t *e)
{
    if (e->device < 0 && debug_poison())
        memset((void *)e->addr, POISON_BYTE, e->size);
}

/* Local blocks in the table: their own PE may wrap them, finalize() reports
 * them, free() refuses them. */
int upy_alloc_add_local(void *p, size_t size, int device)
{
    return alloc_add(p, size, ALLOC_LOCAL, NULL, device);
}

int upy_alloc_drop_local(const void *p)
{
    Py_ssize_t i = alloc_exact((uintptr_t)p);
    if (i < 0)
        return 0;
    if (g_allocs[i].kind != ALLOC_LOCAL)
        return -1;
    debug_poison_range(&g_allocs[i]);
    alloc_remove(i);
    return 1;
}

static inline const SymBuf *symbuf_root(const SymBuf *b)
{
    return b->owner ? b->owner : b;
}

static inline int symbuf_alive(const SymBuf *b)
{
    const SymBuf *r = symbuf_root(b);
    return !b->freed && !r->freed && r->gen == upy_g.gen && initialized();
}

static int symbuf_check_alive(const SymBuf *b, const char *fn)
{
    if (LIKELY(symbuf_alive(b)))
        return 0;
    const SymBuf *r = symbuf_root(b);
    if (b->freed && !b->owning)
        return upy_err(ERR_FREED, "%s: this SymmetricBuffer view was marked freed (view.free())",
                       fn);
    if (r->freed)
        return upy_err(ERR_FREED, "%s: the SymmetricBuffer was freed", fn);
    if (!initialized())
        return upy_err_not_init(fn);
    return upy_err(ERR_FREED, "%s: the SymmetricBuffer belongs to a finalized ushmem instance", fn);
}

static SymBuf *symbuf_new(char *ptr, char *sym, size_t nbytes, SymBuf *owner, int owning, int pe,
                          int device)
{
    SymBuf *b = PyObject_New(SymBuf, &SymBufType);
    if (!b)
        return NULL;
    b->ptr = ptr;
    b->sym = sym;
    b->nbytes = nbytes;
    b->owner = owner ? (SymBuf *)symbuf_root(owner) : NULL;
    Py_XINCREF(b->owner);
    b->owning = owning;
    b->pe = pe;
    b->device = device;
    b->freed = 0;
    b->gen = upy_g.gen;
    b->exports = 0;
    b->weakrefs = NULL;
    upy_live_add();
    return b;
}

/* device= argument: None -> DEV_DEFAULT (the device heap when this PE has one,
 * as rocshmem4py's buffers, else the host heap); "cpu" / "host" -> -1 (host
 * heap); "cuda", torch.device("cuda") -> DEV_ANY (the bound device); "cuda:N",
 * torch.device("cuda", N), N -> N. */
#define DEV_ANY     (-2)
#define DEV_DEFAULT (-3)
static int parse_device(PyObject *dev, int *out, const char *fn)
{
    if (dev == NULL || dev == Py_None) {
        *out = DEV_DEFAULT;
        return 0;
    }
    if (PyLong_Check(dev) && !PyBool_Check(dev)) {
        int v;
        if (upy_as_int(dev, &v, fn, "device"))
            return -1;
        if (v < 0) {
            PyErr_Format(PyExc_ValueError, "%s: device ordinal %d is negative", fn, v);
            return -1;
        }
        *out = v;
        return 0;
    }
    PyObject *s = PyObject_Str(dev); /* str and torch.device */
    if (!s)
        return -1;
    const char *txt = PyUnicode_AsUTF8(s);
    int rc = -1;
    if (!txt) {
        /* error set */
    } else if (!strcmp(txt, "cpu") || !strcmp(txt, "host")) {
        *out = -1;
        rc = 0;
    } else if (!strcmp(txt, "cuda")) {
        *out = DEV_ANY;
        rc = 0;
    } else if (!strncmp(txt, "cuda:", 5) && txt[5] >= '0' && txt[5] <= '9') {
        char *end;
        long v = strtol(txt + 5, &end, 10);
        if (!*end && v <= INT_MAX) {
            *out = (int)v;
            rc = 0;
        }
    }
    Py_DECREF(s);
    if (rc && !PyErr_Occurred())
        PyErr_Format(PyExc_ValueError,
                     "%s: unknown device %R (use None, 'cpu', 'cuda', 'cuda:N' "
                     "or an ordinal)",
                     fn, dev);
    return rc;
}

/* A device= request against the bound device: 0 and *ord set, or an exception. */
static int resolve_device(int req, int *ord, const char *fn)
{
    if (upy_g.dev < 0)
        return upy_err_no_cuda(fn, "device memory");
    if (req != DEV_ANY && req != upy_g.dev)
        return upy_err(ERR_INVALID,
                       "%s: ushmem's device heap is on cuda:%d; device memory on cuda:%d is not "
                       "available (one device per PE: choose it at init)",
                       fn, upy_g.dev, req);
    *ord = upy_g.dev;
    return 0;
}

static PyObject *symbuf_alloc_impl(size_t nbytes, int zero, int device, const char *fn)
{
    if (require_init(fn))
        return NULL;
    if (device == DEV_DEFAULT)
        device = upy_g.dev; /* the device heap found at init (-1: none, the host heap) */
    else if (device != -1 && resolve_device(device, &device, fn))
        return NULL;
    if (nbytes == 0) {
        PyErr_Format(PyExc_ValueError, "%s: nbytes must be > 0", fn);
        return NULL;
    }
    void *p;
    upy_lib_error[0] = 0;
    Py_BEGIN_ALLOW_THREADS;
    if (device >= 0) {
        /* The device heap (a device is bound: shmem_calloc defaults to it). */
        p = zero ? shmem_calloc(1, nbytes) : shmem_malloc_with_hints(nbytes, SHMEMX_MALLOC_DEVICE);
    } else {
        /* Host memory explicitly: with a CUDA device bound, plain shmem_malloc
         * defaults to the device heap. */
        p = shmem_malloc_with_hints(nbytes, SHMEMX_MALLOC_HOST);
        if (p && zero) {
            memset(p, 0, nbytes);
            shmem_sync_all(); /* nobody writes into a peer's block before it is zeroed */
        }
    }
    Py_END_ALLOW_THREADS;
    if (!p) {
        char why[600];
        upy_err(ERR_NOMEM,
                "%s: cannot allocate %zu symmetric bytes: the %s is exhausted "
                "(raise %s, or free buffers)%s",
                fn, nbytes, device >= 0 ? "device symmetric heap" : "symmetric heap",
                device >= 0 ? "USHMEM_DEVICE_HEAP_SIZE" : "SHMEM_SYMMETRIC_SIZE",
                upy_lib_reason(why, sizeof why));
        return NULL;
    }
    SymBuf *b = symbuf_new(p, p, nbytes, NULL, 1, upy_g.me, device);
    if (!b || alloc_add(p, nbytes, ALLOC_BUFFER, (PyObject *)b, device) < 0) {
        /* Keep the collective contract: the memory stays allocated and is
         * reported at finalize rather than freed on this PE only. */
        Py_XDECREF(b);
        return NULL;
    }
    return (PyObject *)b;
}

static PyObject *symbuf_alloc(size_t nbytes, int zero, int device, const char *fn)
{
    call_rec_t rec;
    call_enter(&rec, fn);
    PyObject *r = symbuf_alloc_impl(nbytes, zero, device, fn);
    call_leave(&rec);
    return r;
}

/* SymmetricBuffer(nbytes, ptr=addr, own_data=False): a non-owning view of
 * nbytes at addr, which must lie inside one live symmetric allocation of this
 * PE (a view of its SymmetricBuffer when it has one). */
static PyObject *symbuf_wrap(PyObject *ptr, size_t n, const char *fn)
{
    if (require_init(fn))
        return NULL;
    void *vp;
    if (upy_as_address(ptr, &vp, fn, "ptr"))
        return NULL;
    uintptr_t a = (uintptr_t)vp;
    Py_ssize_t i = n ? alloc_find(a, n) : -1;
    if (i < 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s: ptr=%s, nbytes=%zu is not inside one live symmetric allocation of "
                     "this PE (wrap memory that create_buffer, malloc, calloc, align or "
                     "malloc_local returned)",
                     fn, upy_addr_txt(vp).s, n);
        return NULL;
    }
    SymBuf *owner = NULL;
    if (g_allocs[i].owner) {
        PyObject *o = PyWeakref_GetObject(g_allocs[i].owner);
        if (o && o != Py_None && Py_TYPE(o) == &SymBufType)
            owner = (SymBuf *)o;
    }
    return (PyObject *)symbuf_new((char *)vp, (char *)vp, n, owner, 0, upy_g.me,
                                  g_allocs[i].device);
}

static PyObject *SymBuf_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    (void)type;
    static char *kwlist[] = {"nbytes", "device", "zero", "ptr", "dtype", "own_data", NULL};
    PyObject *nobj, *dev = Py_None, *ptr = Py_None, *dtype = Py_None;
    int zero = 0, own = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|Op$OOp:SymmetricBuffer", kwlist, &nobj, &dev,
                                     &zero, &ptr, &dtype, &own))
        return NULL;
    size_t n;
    int device;
    if (upy_as_size(nobj, &n, "SymmetricBuffer", "nbytes") ||
        parse_device(dev, &device, "SymmetricBuffer"))
        return NULL;
    if (dtype != Py_None) {
        /* Raw bytes only: the seed's dtype= names the element type of a typed
         * view; ushmem's buffers are bytes (use numpy / torch views for types). */
        PyObject *s = PyObject_Str(dtype);
        const char *t = s ? PyUnicode_AsUTF8(s) : NULL;
        int ok = t && (!strcmp(t, "uint8") || !strcmp(t, "torch.uint8") || !strcmp(t, "B") ||
                       !strcmp(t, "|u1") || !strcmp(t, "<class 'numpy.uint8'>"));
        Py_XDECREF(s);
        if (!ok) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError,
                             "SymmetricBuffer: dtype=%R: a SymmetricBuffer holds bytes (uint8); "
                             "view it as another type with numpy or torch",
                             dtype);
            return NULL;
        }
    }
    if (ptr != Py_None) {
        if (own) {
            PyErr_SetString(PyExc_ValueError,
                            "SymmetricBuffer: ptr= makes a non-owning view: pass own_data=False "
                            "(freeing is collective; only create_buffer's buffers own memory)");
            return NULL;
        }
        if (zero || dev != Py_None) {
            PyErr_SetString(PyExc_ValueError,
                            "SymmetricBuffer: ptr= wraps existing memory: device= and zero= do "
                            "not apply");
            return NULL;
        }
        return symbuf_wrap(ptr, n, "SymmetricBuffer");
    }
    if (!own) {
        PyErr_SetString(PyExc_ValueError,
                        "SymmetricBuffer: own_data=False needs ptr= (the memory to wrap)");
        return NULL;
    }
    return symbuf_alloc(n, zero, device, "SymmetricBuffer");
}

static void SymBuf_finalize(PyObject *self)
{
    SymBuf *b = (SymBuf *)self;
    if (!b->owning || b->freed || b->gen != upy_g.gen || !initialized())
        return;
    /* Freeing is collective: doing it from the garbage collector (at a
     * different moment on each PE) would deadlock or corrupt the heap. Warn,
     * keep the memory, and let finalize() report it. */
    Py_ssize_t i = alloc_exact((uintptr_t)b->sym);
    if (i >= 0) {
        g_allocs[i].kind = ALLOC_COLLECTED;
        Py_CLEAR(g_allocs[i].owner);
    }
    if (Py_IsFinalizing())
        return;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (PyErr_WarnFormat(upy_LeakWarning, 1,
                         "SymmetricBuffer of %zu bytes at %p was garbage-collected without "
                         "free(); freeing is collective, so it stays allocated until finalize() "
                         "(call buf.free() on every PE, or ushmem.free(%p))",
                         b->nbytes, (void *)b->sym, (void *)b->sym) < 0)
        PyErr_WriteUnraisable(self);
    PyErr_Restore(et, ev, tb);
}

static void SymBuf_dealloc(PyObject *self)
{
    SymBuf *b = (SymBuf *)self;
    if (PyObject_CallFinalizerFromDealloc(self) < 0)
        return; /* resurrected */
    if (b->weakrefs)
        PyObject_ClearWeakRefs(self);
    Py_CLEAR(b->owner);
    unsigned long gen = b->gen;
    PyObject_Free(self);
    upy_live_drop(gen); /* may unmap what a finalized generation kept */
}

static PyObject *symbuf_free_impl(PyObject *self)
{
    SymBuf *b = (SymBuf *)self;
    if (!b->owning) {
        /* A view owns no memory: free() marks it freed (later use raises
         * ERR_FREED); the buffer it views is untouched. Local, not collective. */
        b->freed = 1;
        Py_RETURN_NONE;
    }
    if (b->freed || b->gen != upy_g.gen)
        Py_RETURN_NONE; /* idempotent on every PE alike: no collective */
    if (require_init("SymmetricBuffer.free"))
        return NULL;
    b->freed = 1;
    Py_ssize_t i = alloc_exact((uintptr_t)b->sym);
    if (i >= 0)
        alloc_remove(i);
    void *p = b->sym;
    if (b->device < 0 && debug_poison())
        memset(p, POISON_BYTE, b->nbytes);
    Py_BEGIN_ALLOW_THREADS;
    shmem_free(p);
    Py_END_ALLOW_THREADS;
    Py_RETURN_NONE;
}

static PyObject *SymBuf_free(PyObject *self, PyObject *unused)
{
    (void)unused;
    call_rec_t rec;
    call_enter(&rec, "SymmetricBuffer.free");
    PyObject *r = symbuf_free_impl(self);
    call_leave(&rec);
    return r;
}

static PyObject *SymBuf_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF(self);
    return self;
}

static PyObject *SymBuf_exit(PyObject *self, PyObject *args)
{
    (void)args;
    SymBuf *b = (SymBuf *)self;
    if (!b->owning)
        Py_RETURN_NONE;
    PyObject *r = SymBuf_free(self, NULL);
    if (!r)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

static int SymBuf_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    SymBuf *b = (SymBuf *)self;
    if (!symbuf_alive(b)) {
        PyErr_SetString(PyExc_BufferError, b->freed || symbuf_root(b)->freed
                                               ? "SymmetricBuffer was freed"
                                               : "SymmetricBuffer belongs to a finalized ushmem");
        view->obj = NULL;
        return -1;
    }
    if (b->device >= 0) {
        PyErr_SetString(PyExc_BufferError,
                        "device memory has no buffer protocol; use __cuda_array_interface__");
        view->obj = NULL;
        return -1;
    }
    if (PyBuffer_FillInfo(view, self, b->ptr, (Py_ssize_t)b->nbytes, 0, flags) < 0)
        return -1;
    b->exports++;
    upy_g.exports++;
    return 0;
}

static void SymBuf_releasebuffer(PyObject *self, Py_buffer *view)
{
    (void)view;
    ((SymBuf *)self)->exports--;
    upy_g.exports--;
}

static Py_ssize_t SymBuf_length(PyObject *self)
{
    return (Py_ssize_t)((SymBuf *)self)->nbytes;
}

static PyObject *SymBuf_subscript(PyObject *self, PyObject *key)
{
    SymBuf *b = (SymBuf *)self;
    if (symbuf_check_alive(b, "SymmetricBuffer[]"))
        return NULL;
    if (PySlice_Check(key)) {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(key, &start, &stop, &step) < 0)
            return NULL;
        Py_ssize_t len = PySlice_AdjustIndices((Py_ssize_t)b->nbytes, &start, &stop, step);
        if (step != 1) {
            PyErr_SetString(PyExc_ValueError, "SymmetricBuffer slices must be contiguous (step 1)");
            return NULL;
        }
        return (PyObject *)symbuf_new(b->ptr + start, b->sym + start, (size_t)len,
                                      b->owner || b->owning ? b : NULL, 0, b->pe, b->device);
    }
    Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i < 0)
        i += (Py_ssize_t)b->nbytes;
    if (i < 0 || (size_t)i >= b->nbytes) {
        PyErr_SetString(PyExc_IndexError, "SymmetricBuffer index out of range");
        return NULL;
    }
    if (b->device >= 0) {
        upy_err(ERR_UNSUPPORTED,
                "SymmetricBuffer[]: this is CUDA device memory; read it through a tensor "
                "(__cuda_array_interface__ / __dlpack__) or getmem");
        return NULL;
    }
    return PyLong_FromLong(((unsigned char *)b->ptr)[i]);
}

static PyObject *SymBuf_repr(PyObject *self)
{
    SymBuf *b = (SymBuf *)self;
    const char *state = !symbuf_alive(b) ? ", freed" : "";
    return PyUnicode_FromFormat("<ushmem.SymmetricBuffer %zu bytes at %p, PE %d's copy, %s%s%s>",
                                b->nbytes, (void *)b->ptr, b->pe, b->device >= 0 ? "cuda" : "cpu",
                                b->owning ? ", owning" : ", view", state);
}

static PyObject *SymBuf_get_ptr(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromVoidPtr(((SymBuf *)self)->ptr);
}
static PyObject *SymBuf_get_sym(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromVoidPtr(((SymBuf *)self)->sym);
}
static PyObject *SymBuf_get_nbytes(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(((SymBuf *)self)->nbytes);
}
/* The seed's names: .size (bytes), .dtype (uint8: a raw buffer), int(buf) (the address). */
static PyObject *SymBuf_get_dtype(PyObject *self, void *c)
{
    (void)self;
    (void)c;
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np) {
        PyErr_Clear();
        return PyUnicode_FromString("uint8");
    }
    PyObject *dt = PyObject_CallMethod(np, "dtype", "s", "uint8");
    Py_DECREF(np);
    return dt;
}
static PyObject *SymBuf_int(PyObject *self)
{
    return PyLong_FromVoidPtr(((SymBuf *)self)->ptr);
}
static PyNumberMethods SymBuf_as_number = {.nb_int = SymBuf_int};

/* get_remote_ptr(pe): the address of pe's copy as mapped in this process. */
static PyObject *SymBuf_get_remote_ptr(PyObject *self, PyObject *arg)
{
    static const char fn[] = "SymmetricBuffer.get_remote_ptr";
    SymBuf *b = (SymBuf *)self;
    int pe;
    if (upy_check_pe(arg, &pe, fn) || symbuf_check_alive(b, fn))
        return NULL;
    void *r = shmem_ptr(b->sym, pe);
    if (!r) {
        upy_err(ERR_UNREACHABLE, "%s: PE %d's copy is not mapped in this process", fn, pe);
        return NULL;
    }
    return PyLong_FromVoidPtr(r);
}

static PyObject *SymBuf_get_pe(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(((SymBuf *)self)->pe);
}
static PyObject *SymBuf_get_owning(PyObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(((SymBuf *)self)->owning);
}
static PyObject *SymBuf_get_freed(PyObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(!symbuf_alive((SymBuf *)self));
}
static PyObject *SymBuf_get_device_ordinal(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(((SymBuf *)self)->device);
}
static PyObject *SymBuf_get_device(PyObject *self, void *c)
{
    (void)c;
    SymBuf *b = (SymBuf *)self;
    if (b->device < 0)
        return PyUnicode_FromString("cpu");
    return PyUnicode_FromFormat("cuda:%d", b->device);
}
static PyObject *SymBuf_get_base(PyObject *self, void *c)
{
    (void)c;
    SymBuf *b = (SymBuf *)self;
    PyObject *r = b->owner ? (PyObject *)b->owner : Py_None;
    Py_INCREF(r);
    return r;
}

static PyObject *SymBuf_array_interface(PyObject *self, void *c)
{
    (void)c;
    SymBuf *b = (SymBuf *)self;
    if (b->device >= 0) {
        PyErr_SetString(PyExc_AttributeError,
                        "device memory has no __array_interface__; use __cuda_array_interface__");
        return NULL;
    }
    if (symbuf_check_alive(b, "__array_interface__"))
        return NULL;
    return Py_BuildValue("{s:(n),s:s,s:(N,O),s:i}", "shape", (Py_ssize_t)b->nbytes, "typestr",
                         "|u1", "data", PyLong_FromVoidPtr(b->ptr), Py_False, "version", 3);
}

static PyObject *SymBuf_cuda_array_interface(PyObject *self, void *c)
{
    (void)c;
    SymBuf *b = (SymBuf *)self;
    if (b->device < 0) {
        PyErr_SetString(PyExc_AttributeError,
                        "host memory has no __cuda_array_interface__; use __array_interface__ "
                        "or the buffer protocol");
        return NULL;
    }
    if (symbuf_check_alive(b, "__cuda_array_interface__"))
        return NULL;
    /* No "stream": ushmem does not know which stream last wrote the buffer
     * (stream-ordered operations run on the caller's streams), so consumers are
     * not asked to synchronize: order them after the ushmem operations yourself
     * (same stream, an event, or a synchronize). The seed's exact dictionary ("typestr" "<i1",
     * "strides" None, no "stream"). */
    return Py_BuildValue("{s:(N,O),s:(n),s:s,s:O,s:i}", "data", PyLong_FromVoidPtr(b->ptr),
                         Py_False, "shape", (Py_ssize_t)b->nbytes, "typestr", "<i1", "strides",
                         Py_None, "version", 3);
}

/* ---- DLPack (ABI of dlpack.h v0.x, as torch 1.13 and numpy 1.22+ consume) ---- */
typedef struct {
    int32_t device_type;
    int32_t device_id;
} DLDevice;
typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
enum { kDLCPU = 1, kDLCUDA = 2, kDLUInt = 1 };

typedef struct {
    DLManagedTensor m;
    int64_t shape[1];
} dl_holder_t;

static void dl_deleter(DLManagedTensor *m)
{
    PyGILState_STATE st = PyGILState_Ensure();
    SymBuf *b = m->manager_ctx;
    b->exports--;
    upy_g.exports--;
    Py_DECREF(b);
    PyMem_RawFree(m);
    PyGILState_Release(st);
}

static void dl_capsule_destructor(PyObject *cap)
{
    if (!PyCapsule_IsValid(cap, "dltensor"))
        return; /* consumed: the consumer calls the deleter */
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (m)
        m->deleter(m);
}

static PyObject *SymBuf_dlpack(PyObject *self, PyObject *args, PyObject *kwds)
{
    /* Array API 2023 keywords: stream, max_version, dl_device, copy. The
     * capsule is always the unversioned "dltensor" (the consumer's max_version
     * allows it: every consumer of versioned capsules reads both). */
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *maxv = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$OOOO:__dlpack__", kwlist, &stream, &maxv,
                                     &dl_device, &copy))
        return NULL;
    SymBuf *b = (SymBuf *)self;
    if (symbuf_check_alive(b, "__dlpack__"))
        return NULL;
    if (b->device < 0 && stream != Py_None) {
        PyErr_SetString(PyExc_ValueError, "__dlpack__: stream must be None for host memory");
        return NULL;
    }
    /* Device memory: stream is the consumer's stream (an int; 1 legacy default,
     * 2 per-thread default). ushmem does not track which stream wrote the
     * buffer, so there is nothing to order it after: the caller orders its
     * streams (same as __cuda_array_interface__'s "stream": None). */
    if (b->device >= 0 && stream != Py_None && !PyLong_Check(stream)) {
        PyErr_SetString(PyExc_TypeError, "__dlpack__: stream must be None or an int");
        return NULL;
    }
    if (copy != Py_None && PyObject_IsTrue(copy)) {
        PyErr_SetString(PyExc_BufferError,
                        "__dlpack__: copy=True is not supported (the point is sharing)");
        return NULL;
    }
    if (dl_device != Py_None) {
        int t = -1, id = -1;
        if (!PyArg_ParseTuple(dl_device, "ii:dl_device", &t, &id))
            return NULL;
        int mt = b->device >= 0 ? kDLCUDA : kDLCPU, mid = b->device >= 0 ? b->device : 0;
        if (t != mt || id != mid) {
            PyErr_Format(PyExc_BufferError,
                         "__dlpack__: the buffer is on device (%d, %d), not (%d, %d); ushmem "
                         "does not copy",
                         mt, mid, t, id);
            return NULL;
        }
    }
    (void)maxv;
    dl_holder_t *h = PyMem_RawCalloc(1, sizeof *h);
    if (!h)
        return PyErr_NoMemory();
    h->shape[0] = (int64_t)b->nbytes;
    h->m.dl_tensor.data = b->ptr;
    h->m.dl_tensor.device.device_type = b->device >= 0 ? kDLCUDA : kDLCPU;
    h->m.dl_tensor.device.device_id = b->device >= 0 ? b->device : 0;
    h->m.dl_tensor.ndim = 1;
    h->m.dl_tensor.dtype = (DLDataType){kDLUInt, 8, 1};
    h->m.dl_tensor.shape = h->shape;
    h->m.dl_tensor.strides = NULL;
    h->m.manager_ctx = b;
    h->m.deleter = dl_deleter;
    PyObject *cap = PyCapsule_New(&h->m, "dltensor", dl_capsule_destructor);
    if (!cap) {
        PyMem_RawFree(h);
        return NULL;
    }
    Py_INCREF(b);
    b->exports++;
    upy_g.exports++;
    return cap;
}

static PyObject *SymBuf_dlpack_device(PyObject *self, PyObject *unused)
{
    (void)unused;
    SymBuf *b = (SymBuf *)self;
    return Py_BuildValue("(ii)", b->device >= 0 ? kDLCUDA : kDLCPU, b->device >= 0 ? b->device : 0);
}

static PyMethodDef SymBuf_methods[] = {
    {"free", SymBuf_free, METH_NOARGS,
     "free($self, /)\n--\n\nOwning buffer: collective and idempotent, frees the symmetric "
     "memory on every PE. A view: marks the view freed (local; the memory stays)."},
    {"__enter__", SymBuf_enter, METH_NOARGS, "__enter__($self, /)\n--\n\nReturns the buffer."},
    {"__exit__", SymBuf_exit, METH_VARARGS,
     "__exit__($self, *exc)\n--\n\nFrees an owning buffer (collective)."},
    {"__dlpack__", FN(SymBuf_dlpack), METH_VARARGS | METH_KEYWORDS,
     "__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "DLPack capsule of the bytes (uint8, 1-D)."},
    {"__dlpack_device__", SymBuf_dlpack_device, METH_NOARGS,
     "__dlpack_device__($self, /)\n--\n\n(device type, device id) for DLPack."},
    {"get_remote_ptr", SymBuf_get_remote_ptr, METH_O,
     "get_remote_ptr($self, pe, /)\n--\n\nAddress of PE pe's copy as mapped in this process "
     "(int)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef SymBuf_getset[] = {
    {"ptr", SymBuf_get_ptr, NULL, "Address of the memory in this process (int).", NULL},
    {"sym_ptr", SymBuf_get_sym, NULL, "The symmetric address (this PE's copy) it names.", NULL},
    {"nbytes", SymBuf_get_nbytes, NULL, "Size in bytes.", NULL},
    {"size", SymBuf_get_nbytes, NULL, "Size in bytes (the seed's name for nbytes).", NULL},
    {"dtype", SymBuf_get_dtype, NULL, "numpy.dtype('uint8'): a raw byte buffer.", NULL},
    {"pe", SymBuf_get_pe, NULL, "Whose copy this object exposes.", NULL},
    {"owning", SymBuf_get_owning, NULL, "True for the buffer create_buffer() returned.", NULL},
    {"own_data", SymBuf_get_owning, NULL, "The seed's name for owning.", NULL},
    {"freed", SymBuf_get_freed, NULL, "True once freed (or after finalize).", NULL},
    {"_freed", SymBuf_get_freed, NULL, "The seed's name for freed.", NULL},
    {"_device", SymBuf_get_device_ordinal, NULL,
     "The seed's device ordinal: the CUDA device of device memory, -1 for host memory.", NULL},
    {"device", SymBuf_get_device, NULL, "'cpu' or 'cuda:N'.", NULL},
    {"base", SymBuf_get_base, NULL, "The owning buffer of a view, else None.", NULL},
    {"__array_interface__", SymBuf_array_interface, NULL, NULL, NULL},
    {"__cuda_array_interface__", SymBuf_cuda_array_interface, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyBufferProcs SymBuf_as_buffer = {SymBuf_getbuffer, SymBuf_releasebuffer};
static PyMappingMethods SymBuf_as_mapping = {SymBuf_length, SymBuf_subscript, NULL};

/* The sequence protocol too (bytes as ints), so that consumers that know only
 * sequences (torch.as_tensor(buf) on host memory) work; they copy. */
static PyObject *SymBuf_item(PyObject *self, Py_ssize_t i)
{
    PyObject *k = PyLong_FromSsize_t(i);
    if (!k)
        return NULL;
    PyObject *r = SymBuf_subscript(self, k);
    Py_DECREF(k);
    return r;
}
static PySequenceMethods SymBuf_as_sequence = {.sq_length = SymBuf_length, .sq_item = SymBuf_item};

static PyTypeObject SymBufType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ushmem.SymmetricBuffer",
    .tp_basicsize = sizeof(SymBuf),
    .tp_dealloc = SymBuf_dealloc,
    .tp_finalize = SymBuf_finalize,
    .tp_repr = SymBuf_repr,
    .tp_as_mapping = &SymBuf_as_mapping,
    .tp_as_sequence = &SymBuf_as_sequence,
    .tp_as_buffer = &SymBuf_as_buffer,
    .tp_as_number = &SymBuf_as_number,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SymmetricBuffer(nbytes, device=None, zero=False, *, ptr=None, dtype=None, "
              "own_data=True)\n--\n\n"
              "A collective allocation of nbytes on the symmetric heap: the device heap when "
              "this PE has a CUDA device bound, else the host heap (device='cpu': host memory "
              "always; device='cuda': the device heap or an error); with ptr= and own_data=False, "
              "a non-owning view of nbytes of live "
              "symmetric memory at ptr.\n\nfree() is explicit, collective and idempotent; garbage "
              "collection never frees (it warns, and finalize() reports the leak). Slicing "
              "yields non-owning views. Exposes the buffer protocol, __array_interface__ "
              "(host) / __cuda_array_interface__ (device) and __dlpack__.",
    .tp_weaklistoffset = offsetof(SymBuf, weakrefs),
    .tp_methods = SymBuf_methods,
    .tp_getset = SymBuf_getset,
    .tp_new = SymBuf_new,
};

/* ------------------------------------------------------------------------ */
/* Resolving memory arguments                                                 */
/* ------------------------------------------------------------------------ */

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
    if (Py_IS_TYPE(o, &SymBufType)) {
        SymBuf *b = (SymBuf *)o;
        if (symbuf_check_alive(b, fn))
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
    Py_ssize_t i = alloc_find(a, n);
    if (LIKELY(i >= 0)) {
        s->device = g_allocs[i].device;
        return 0;
    }
    /* A peer's local block, named at its offset here (heap_addr): what lives
     * there on the peer cannot be checked from this process. */
    if (upy_local_span(s->sym, n, &s->device))
        return 0;
    i = alloc_near(a);
    if (i >= 0) {
        const alloc_t *e = &g_allocs[i];
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

/* ------------------------------------------------------------------------ */
/* Memory management                                                          */
/* ------------------------------------------------------------------------ */

static PyObject *py_create_buffer(PyObject *self, PyObject *args, PyObject *kwds)
{
    (void)self;
    return SymBuf_new(&SymBufType, args, kwds);
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
    if (alloc_add(p, n, ALLOC_RAW, NULL, upy_g.dev >= 0 ? upy_mem_device(p) : -1) < 0)
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
    if (Py_IS_TYPE(arg, &SymBufType))
        return SymBuf_free(arg, NULL);
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
    Py_ssize_t i = alloc_exact((uintptr_t)p);
    if (i < 0) {
        upy_err(ERR_NOTFOUND,
                "free: %s is not the start of a live symmetric allocation "
                "(already freed?)",
                upy_addr_txt(p).s);
        return NULL;
    }
    if (g_allocs[i].kind == ALLOC_BUFFER) {
        upy_err(ERR_INVALID, "free: %p belongs to a live SymmetricBuffer; call its free()", p);
        return NULL;
    }
    if (g_allocs[i].kind == ALLOC_LOCAL) {
        upy_err(ERR_INVALID,
                "free: %p is a local block (from malloc_local): free it with free_local() on "
                "this PE alone",
                p);
        return NULL;
    }
    debug_poison_range(&g_allocs[i]);
    alloc_remove(i);
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
        Py_ssize_t i = alloc_find((uintptr_t)s.sym, n);
        if (i >= 0 && g_allocs[i].owner) {
            PyObject *o = PyWeakref_GetObject(g_allocs[i].owner);
            if (o && o != Py_None)
                owner = (SymBuf *)o;
        }
    }
    return (PyObject *)symbuf_new(p, s.sym, n, owner, 0, pe, s.device);
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
            Py_BuildValue("(Nns)", PyLong_FromVoidPtr((void *)g_allocs[i].addr),
                          (Py_ssize_t)g_allocs[i].size, alloc_kind_name[g_allocs[i].kind]);
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
    Py_ssize_t i = alloc_exact((uintptr_t)p);
    if (i >= 0 && g_allocs[i].owner) {
        PyObject *o = PyWeakref_GetObject(g_allocs[i].owner);
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
    Py_ssize_t i = alloc_find((uintptr_t)s.sym, 1);
    int dev = -1, known = i >= 0;
    if (known)
        dev = g_allocs[i].device;
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
    if (PyType_Ready(&SymBufType) < 0 ||
        PyModule_AddObjectRef(m, "SymmetricBuffer", (PyObject *)&SymBufType) < 0)
        return -1;
    return PyModule_AddFunctions(m, memory_methods);
}
