/* ushmem._ushmem: SymmetricBuffer, the Python object over symmetric memory:
 * collective allocation (SymmetricBuffer(), create_buffer), views (slices,
 * SymmetricBuffer(ptr=), get_peer_buffer's), free(), and its buffer protocol,
 * interfaces (__array_interface__ / __cuda_array_interface__) and DLPack. */
#include "_ushmem.h"

static inline const SymBuf *symbuf_root(const SymBuf *b)
{
    return b->owner ? b->owner : b;
}

static inline int symbuf_alive(const SymBuf *b)
{
    const SymBuf *r = symbuf_root(b);
    return !b->freed && !r->freed && r->gen == upy_g.gen && initialized();
}

int upy_symbuf_check_alive(const SymBuf *b, const char *fn)
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

SymBuf *upy_symbuf_new(char *ptr, char *sym, size_t nbytes, SymBuf *owner, int owning, int pe,
                       int device)
{
    SymBuf *b = PyObject_New(SymBuf, &upy_SymBufType);
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
    SymBuf *b = upy_symbuf_new(p, p, nbytes, NULL, 1, upy_g.me, device);
    if (!b || upy_alloc_add(p, nbytes, ALLOC_BUFFER, (PyObject *)b, device) < 0) {
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
    Py_ssize_t i = n ? upy_alloc_find(a, n) : -1;
    if (i < 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s: ptr=%s, nbytes=%zu is not inside one live symmetric allocation of "
                     "this PE (wrap memory that create_buffer, malloc, calloc, align or "
                     "malloc_local returned)",
                     fn, upy_addr_txt(vp).s, n);
        return NULL;
    }
    SymBuf *owner = NULL;
    if (upy_allocs[i].owner) {
        PyObject *o = PyWeakref_GetObject(upy_allocs[i].owner);
        if (o && o != Py_None && Py_TYPE(o) == &upy_SymBufType)
            owner = (SymBuf *)o;
    }
    return (PyObject *)upy_symbuf_new((char *)vp, (char *)vp, n, owner, 0, upy_g.me,
                                      upy_allocs[i].device);
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
    Py_ssize_t i = upy_alloc_exact((uintptr_t)b->sym);
    if (i >= 0) {
        upy_allocs[i].kind = ALLOC_COLLECTED;
        Py_CLEAR(upy_allocs[i].owner);
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
    Py_ssize_t i = upy_alloc_exact((uintptr_t)b->sym);
    if (i >= 0)
        upy_alloc_remove(i);
    void *p = b->sym;
    if (b->device < 0 && upy_debug_poison())
        memset(p, POISON_BYTE, b->nbytes);
    Py_BEGIN_ALLOW_THREADS;
    shmem_free(p);
    Py_END_ALLOW_THREADS;
    Py_RETURN_NONE;
}

PyObject *upy_symbuf_free(PyObject *self, PyObject *unused)
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
    PyObject *r = upy_symbuf_free(self, NULL);
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
    if (upy_symbuf_check_alive(b, "SymmetricBuffer[]"))
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
        return (PyObject *)upy_symbuf_new(b->ptr + start, b->sym + start, (size_t)len,
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
    if (upy_check_pe(arg, &pe, fn) || upy_symbuf_check_alive(b, fn))
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
    if (upy_symbuf_check_alive(b, "__array_interface__"))
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
    if (upy_symbuf_check_alive(b, "__cuda_array_interface__"))
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
    if (upy_symbuf_check_alive(b, "__dlpack__"))
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
    {"free", upy_symbuf_free, METH_NOARGS,
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

PyTypeObject upy_SymBufType = {
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

int upy_symbuf_add(PyObject *m)
{
    if (PyType_Ready(&upy_SymBufType) < 0 ||
        PyModule_AddObjectRef(m, "SymmetricBuffer", (PyObject *)&upy_SymBufType) < 0)
        return -1;
    return 0;
}
