/* ushmem._ushmem: the CPython binding of libushmem.
 *
 * Hot paths (my_pe, putmem, getmem, atomics) are METH_NOARGS / METH_FASTCALL
 * functions that resolve their memory arguments without allocating: a
 * SymmetricBuffer (fast path), an int address, the buffer protocol, a torch
 * tensor, or the __cuda_array_interface__ / __array_interface__ protocols.
 *
 * The OpenSHMEM routines that return void abort the whole job on a bad
 * argument (that is the C contract), so everything is checked here first:
 * initialized state, PE range and reachability, that the remote range lies in
 * a live symmetric allocation, local sizes, alignment, operators, teams. A
 * problem becomes ushmem.Error (with .code) or ValueError / TypeError; nothing
 * a Python caller passes can abort the interpreter (raw int addresses of
 * *local* memory are the caller's responsibility, as in C).
 *
 * Symmetric allocations made through this module are kept in a sorted table
 * (address, size, owner): it is what makes remote-range checks exact (the
 * internal region at the start of the heap, freed blocks and ranges that run
 * past an allocation are all refused), and what finalize() reports as leaks.
 *
 * Device (CUDA) memory: when the library has a CUDA device bound (found out
 * once, collectively, at init: see probe_device), create_buffer() allocates
 * on its device heap unless device='cpu' asks for host memory (rocshmem4py's
 * buffers are device memory), device memory is accepted wherever the C API
 * accepts it, and the _on_stream forms call the C shmemx_*_on_stream routines
 * with the caller's stream. The CUDA driver is never linked: pointer queries
 * go through the libcuda.so.1 the library loaded. Without a bound device,
 * device memory and non-NULL streams are refused with ERR_UNSUPPORTED. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <shmem.h>
#include <shmemx.h>

#define FN(f)             ((PyCFunction)(void (*)(void))(f))
#define LIKELY(x)         __builtin_expect(!!(x), 1)
#define UNLIKELY(x)       __builtin_expect(!!(x), 0)
#define GIL_RELEASE_BYTES ((size_t)64 << 10) /* copies this large drop the GIL */

#if PY_VERSION_HEX < 0x030D0000
#define Py_IsFinalizing _Py_IsFinalizing
#endif

/* getattr that treats a missing attribute as "not there" (1 found, 0 not, -1 error). */
static int lookup_attr(PyObject *o, const char *name, PyObject **out)
{
    *out = PyObject_GetAttrString(o, name);
    if (*out)
        return 1;
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
    PyErr_Clear();
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                     */
/* ------------------------------------------------------------------------ */

/* Codes carried by ushmem.Error. The first ones are the library's SHMEMX_ERR_*
 * statuses; the rest name what the binding checks before calling C. */
#define ERR_TABLE(X)                                                                               \
    X(SUCCESS, 0, "success")                                                                       \
    X(ERR_INVALID, -1, "invalid argument")                                                         \
    X(ERR_OVERLAP, -2, "range overlaps an existing registration")                                  \
    X(ERR_NOTFOUND, -3, "not found")                                                               \
    X(ERR_NOMEM, -4, "out of symmetric memory")                                                    \
    X(ERR_BOOTSTRAP, -5, "bootstrap failed")                                                       \
    X(ERR_STATE, -6, "library not in the right state for this call")                               \
    X(ERR_BADPE, -7, "PE out of range")                                                            \
    X(ERR_NOTSYM, -8, "not symmetric memory")                                                      \
    X(ERR_UNREACHABLE, -9, "peer not reachable from this process")                                 \
    X(ERR_UNSUPPORTED, -10, "not supported by this build")                                         \
    X(ERR_FREED, -11, "symmetric memory already freed")

enum {
#define ERR_ENUM(name, val, msg) name = (val),
    ERR_TABLE(ERR_ENUM)
#undef ERR_ENUM
};
_Static_assert(ERR_INVALID == SHMEMX_ERR_INVALID && ERR_OVERLAP == SHMEMX_ERR_OVERLAP &&
                   ERR_NOTFOUND == SHMEMX_ERR_NOTFOUND && ERR_NOMEM == SHMEMX_ERR_NOMEM &&
                   ERR_BOOTSTRAP == SHMEMX_ERR_BOOTSTRAP && ERR_STATE == SHMEMX_ERR_STATE,
               "ushmem.Error codes mirror SHMEMX_ERR_*");

static PyObject *Error;       /* ushmem.Error(RuntimeError): .code, .message */
static PyObject *LeakWarning; /* ushmem.LeakWarning(UserWarning) */

static const char *err_name(int code)
{
    switch (code) {
#define ERR_CASE(name, val, msg)                                                                   \
    case (val): return #name;
        ERR_TABLE(ERR_CASE)
#undef ERR_CASE
    }
    return "ERR_UNKNOWN";
}

/* An address for messages, as %s: PyUnicode_FromFormat's %p puts "0x" before
 * whatever the C library prints, and glibc prints NULL as "(nil)" ("0x(nil)"). */
typedef struct {
    char s[24];
} addr_txt_t;

static addr_txt_t addr_txt(const void *p)
{
    addr_txt_t t;
    if (p)
        snprintf(t.s, sizeof t.s, "0x%" PRIxPTR, (uintptr_t)p);
    else
        snprintf(t.s, sizeof t.s, "NULL");
    return t;
}

/* Raise ushmem.Error(message) with .code set; returns -1 for `return err(...)`. */
static int err(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (!msg)
        return -1;
    PyObject *exc = PyObject_CallOneArg(Error, msg);
    if (exc) {
        PyObject *c = PyLong_FromLong(code);
        if (!c || PyObject_SetAttrString(exc, "code", c) < 0 ||
            PyObject_SetAttrString(exc, "message", msg) < 0) {
            Py_XDECREF(c);
            Py_DECREF(exc);
            Py_DECREF(msg);
            return -1;
        }
        Py_DECREF(c);
        PyErr_SetObject(Error, exc);
        Py_DECREF(exc);
    }
    Py_DECREF(msg);
    return -1;
}

static int err_not_init(const char *fn)
{
    return err(ERR_STATE,
               "%s: ushmem is not initialized (call ushmem.init(), init_with_torch(), "
               "init_with_mpi() or init_attr() first)",
               fn);
}

static int err_no_cuda(const char *fn, const char *what)
{
    return err(ERR_UNSUPPORTED,
               "%s: %s needs a CUDA device bound to ushmem on this PE, and none is (pass "
               "device= to init / init_attr / init_with_torch / init_with_mpi, or set "
               "USHMEM_DEVICE or LOCAL_RANK before init; USHMEM_TRANSPORTS, if set, must "
               "include cuda)",
               fn, what);
}

/* The library's error lines (src/core/error.c): the last one this thread saw
 * goes into the exception of the call that failed, instead of only to stderr. */
extern void (*ushmemi_error_hook)(const char *line);
static _Thread_local char g_lib_error[512];

static void lib_error_hook(const char *line)
{
    const char *p = strncmp(line, "ushmem: ", 8) ? line : line + 8;
    snprintf(g_lib_error, sizeof g_lib_error, "%s", p);
}

/* " (library: <its line>)", or "" when it printed none since the last call. */
static const char *lib_reason(char *buf, size_t size)
{
    if (!g_lib_error[0])
        return "";
    snprintf(buf, size, "; the library says: %s", g_lib_error);
    g_lib_error[0] = 0;
    return buf;
}

/* A C status (0 or negative) to an exception. */
static int check_status(int rc, const char *fn)
{
    if (rc == 0)
        return 0;
    char why[600];
    return err(rc, "%s failed with status %d (%s)%s", fn, rc,
               rc >= -11 ? err_name(rc) : "library error", lib_reason(why, sizeof why));
}

/* A status of a standard int-returning routine (team splits, team_sync,
 * collectives): the library returns its internal negative codes there, of
 * which only "invalid argument" (-1) and "out of memory" (-2) are expected. */
static int check_std_status(int rc, const char *fn)
{
    if (rc == 0)
        return 0;
    int code = rc == -2 ? ERR_NOMEM : ERR_INVALID;
    char why[600];
    return err(code, "%s failed with status %d (%s)%s", fn, rc, err_name(code),
               lib_reason(why, sizeof why));
}

/* ------------------------------------------------------------------------ */
/* Library state seen from Python                                             */
/* ------------------------------------------------------------------------ */

/* Bumped at every finalize: buffers and teams of an older generation are
 * dead even if the library is initialized again. */
static unsigned long g_gen = 1;
static int g_me = -1, g_npes = -1; /* cached while initialized */

static inline int initialized(void)
{
    return g_npes > 0;
}

static int require_init(const char *fn)
{
    if (LIKELY(initialized()))
        return 0;
    return err_not_init(fn);
}

static void refresh_init_cache(void)
{
    if (shmem_query_initialized()) {
        g_me = shmem_my_pe();
        g_npes = shmem_n_pes();
    } else {
        g_me = g_npes = -1;
    }
}

/* ------------------------------------------------------------------------ */
/* CUDA: the bound device and a few driver queries                           */
/* ------------------------------------------------------------------------ */

/* The CUDA device the library bound on this PE (-1: none), and one live
 * device-heap address (for "is PE k's device heap mapped here" checks).
 * Set by probe_device() after every successful init, cleared at finalize. */
static int g_dev = -1;
static void *g_dev_probe;

/* Driver entry points, looked up in the libcuda.so.1 already loaded into the
 * process (by the library, or by torch); the binding never loads CUDA itself
 * except in _cuda_device_count(). Values are the CUDA 12 ABI's. */
enum {
    CU_PA_MEMORY_TYPE = 2,
    CU_PA_DEVICE_ORDINAL = 9,
    CU_MT_DEVICE = 2,
};
typedef int (*cu_ptr_attrs_fn)(unsigned n, int *attrs, void **data, unsigned long long ptr);
typedef int (*cu_ctx_get_device_fn)(int *dev);
typedef int (*cu_init_fn)(unsigned flags);
typedef int (*cu_device_get_count_fn)(int *n);
static struct {
    cu_ptr_attrs_fn ptr_attrs;
    cu_ctx_get_device_fn ctx_get_device;
} g_cu;

static int cu_lookup(int load)
{
    if (g_cu.ptr_attrs)
        return 1;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | (load ? 0 : RTLD_NOLOAD));
    if (!h)
        return 0;
    g_cu.ptr_attrs = (cu_ptr_attrs_fn)dlsym(h, "cuPointerGetAttributes");
    g_cu.ctx_get_device = (cu_ctx_get_device_fn)dlsym(h, "cuCtxGetDevice");
    return g_cu.ptr_attrs != NULL; /* the handle stays open: it is the process's libcuda */
}

/* CUDA device ordinal of the memory at p, or -1 (host memory, unknown, or no CUDA). */
static int mem_device(const void *p)
{
    if (!p || !cu_lookup(0))
        return -1;
    unsigned type = 0;
    int attr = CU_PA_MEMORY_TYPE, ord = -1;
    void *data[1] = {&type};
    if (g_cu.ptr_attrs(1, &attr, data, (unsigned long long)(uintptr_t)p) != 0 ||
        type != CU_MT_DEVICE)
        return -1;
    attr = CU_PA_DEVICE_ORDINAL;
    data[0] = &ord;
    if (g_cu.ptr_attrs(1, &attr, data, (unsigned long long)(uintptr_t)p) != 0 || ord < 0) {
        /* the library made its device's context current on the init thread */
        if (!g_cu.ctx_get_device || g_cu.ctx_get_device(&ord) != 0 || ord < 0)
            ord = 0;
    }
    return ord;
}

/* Collective, right after init: is the device heap there? The C API has no
 * query for it (see python/README.md, "C API gaps"), so allocate one byte with
 * SHMEMX_MALLOC_DEVICE (host memory comes back when no device is bound) and
 * look at what came back. A device block is kept for peer-mapping checks. */
static void probe_device(void)
{
    g_dev = -1;
    g_dev_probe = NULL;
    void *p;
    Py_BEGIN_ALLOW_THREADS;
    p = shmem_malloc_with_hints(1, SHMEMX_MALLOC_DEVICE);
    int d = p ? mem_device(p) : -1;
    if (d >= 0) {
        g_dev = d;
        g_dev_probe = p;
    } else if (p) {
        shmem_free(p);
    }
    Py_END_ALLOW_THREADS;
}

/* Is PE pe's device heap mapped in this process? (Stream-ordered barriers and
 * device collectives need every member's.) */
static inline int dev_heap_mapped(int pe)
{
    return g_dev_probe && shmem_ptr(g_dev_probe, pe) != NULL;
}

/* The stream argument of the _on_stream forms: None -> NULL (C's meaning: the
 * legacy default stream for device memory, "now" for host memory), an int
 * handle (1 and 2 are CUDA's legacy and per-thread default streams), or an
 * object with __cuda_stream__(), .cuda_stream (torch.cuda.Stream), .ptr
 * (cupy) or .handle. A non-NULL stream needs a bound device. */
static int parse_stream(PyObject *o, void **out, const char *fn)
{
    *out = NULL;
    if (o == NULL || o == Py_None)
        return 0;
    PyObject *h = NULL;
    if (PyLong_Check(o)) {
        h = Py_NewRef(o);
    } else {
        PyObject *m;
        int r = lookup_attr(o, "__cuda_stream__", &m);
        if (r < 0)
            return -1;
        if (r) {
            PyObject *t = PyCallable_Check(m) ? PyObject_CallNoArgs(m) : Py_NewRef(m);
            Py_DECREF(m);
            if (!t)
                return -1;
            if (PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 2)
                h = Py_NewRef(PyTuple_GET_ITEM(t, 1));
            Py_DECREF(t);
        } else {
            static const char *const names[] = {"cuda_stream", "ptr", "handle"};
            for (size_t i = 0; i < sizeof names / sizeof *names && !h; i++)
                if (lookup_attr(o, names[i], &h) < 0)
                    return -1;
        }
        if (h && !PyLong_Check(h) && h != Py_None) { /* ctypes.c_void_p and the like */
            PyObject *v;
            int r2 = lookup_attr(h, "value", &v);
            if (r2 < 0) {
                Py_DECREF(h);
                return -1;
            }
            if (r2)
                Py_SETREF(h, v);
        }
        if (!h || (!PyLong_Check(h) && h != Py_None)) {
            Py_XDECREF(h);
            PyErr_Format(PyExc_TypeError,
                         "%s: stream must be None, an int handle, a torch.cuda.Stream or an "
                         "object with __cuda_stream__ / .cuda_stream / .ptr, not %.100s",
                         fn, Py_TYPE(o)->tp_name);
            return -1;
        }
    }
    if (h == Py_None) {
        Py_DECREF(h);
        return 0;
    }
    long long sign = PyLong_AsLongLong(h);
    if (sign == -1 && PyErr_Occurred()) {
        PyErr_Clear(); /* above LLONG_MAX: a valid unsigned handle */
        sign = 1;
    }
    void *p = sign < 0 ? NULL : PyLong_AsVoidPtr(h);
    Py_DECREF(h);
    if (sign < 0) {
        PyErr_Format(PyExc_ValueError, "%s: stream handle %lld is negative", fn, sign);
        return -1;
    }
    if (!p && PyErr_Occurred())
        return -1;
    if (p && g_dev < 0)
        return err_no_cuda(fn, "a CUDA stream");
    *out = p;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Argument conversion                                                        */
/* ------------------------------------------------------------------------ */

static int as_longlong(PyObject *o, long long *out, const char *fn, const char *what)
{
    long long v;
    if (PyLong_CheckExact(o)) {
        v = PyLong_AsLongLong(o);
    } else {
        PyObject *i = PyNumber_Index(o);
        if (!i) {
            PyErr_Format(PyExc_TypeError, "%s: %s must be an integer, not %.100s", fn, what,
                         Py_TYPE(o)->tp_name);
            return -1;
        }
        v = PyLong_AsLongLong(i);
        Py_DECREF(i);
    }
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Format(PyExc_ValueError, "%s: %s is out of range", fn, what);
        return -1;
    }
    *out = v;
    return 0;
}

static int as_int(PyObject *o, int *out, const char *fn, const char *what)
{
    long long v;
    if (as_longlong(o, &v, fn, what))
        return -1;
    if (v < INT_MIN || v > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: %s %lld is out of range", fn, what, v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int as_size(PyObject *o, size_t *out, const char *fn, const char *what)
{
    long long v;
    if (as_longlong(o, &v, fn, what))
        return -1;
    if (v < 0) {
        PyErr_Format(PyExc_ValueError, "%s: %s must be >= 0, got %lld", fn, what, v);
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

static int as_u64(PyObject *o, uint64_t *out, const char *fn, const char *what)
{
    if (!PyLong_Check(o)) {
        PyObject *i = PyNumber_Index(o);
        if (!i) {
            PyErr_Format(PyExc_TypeError, "%s: %s must be an integer, not %.100s", fn, what,
                         Py_TYPE(o)->tp_name);
            return -1;
        }
        int rc = as_u64(i, out, fn, what);
        Py_DECREF(i);
        return rc;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Format(PyExc_ValueError, "%s: %s must be in 0..2**64-1", fn, what);
        return -1;
    }
    *out = v;
    return 0;
}

/* A PE number valid for this job and reachable from this process. */
static int check_pe(PyObject *o, int *pe, const char *fn)
{
    long long v;
    if (as_longlong(o, &v, fn, "pe"))
        return -1;
    if (!initialized())
        return err_not_init(fn);
    if (v < 0 || v >= g_npes)
        return err(ERR_BADPE, "%s: PE %lld is out of range (n_pes is %d)", fn, v, g_npes);
    *pe = (int)v;
    return 0;
}

static int check_nargs(Py_ssize_t nargs, Py_ssize_t lo, Py_ssize_t hi, const char *sig)
{
    if (nargs >= lo && nargs <= hi)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s: takes %zd%s%s arguments (%zd given)", sig, lo,
                 hi > lo ? " to " : "", hi > lo ? "more" : "", nargs);
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Allocation table: every live symmetric allocation made through ushmem     */
/* ------------------------------------------------------------------------ */

enum { ALLOC_BUFFER = 0, ALLOC_RAW = 1, ALLOC_COLLECTED = 2 };
static const char *const alloc_kind_name[] = {"SymmetricBuffer", "malloc",
                                              "SymmetricBuffer (garbage-collected)"};

typedef struct {
    uintptr_t addr;
    size_t size;
    int kind;
    int device;      /* -1 host heap, else the CUDA ordinal of the device heap */
    void *base;      /* what shmem_free takes (differs from addr for align()) */
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

static int alloc_add(void *p, size_t size, int kind, PyObject *owner, int device, void *base)
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
    g_allocs[i] = (alloc_t){a, size, kind, device, base ? base : p, ref};
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

/* ------------------------------------------------------------------------ */
/* SymmetricBuffer                                                            */
/* ------------------------------------------------------------------------ */

typedef struct SymBuf {
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
} SymBuf;

static PyTypeObject SymBufType;
static Py_ssize_t g_exports; /* live buffer-protocol / DLPack exports of all buffers */

/* SHMEM_DEBUG set: freed host symmetric memory is overwritten with this byte
 * (on this PE's copy) so that reading it after free shows. */
#define POISON_BYTE 0xA5
static int debug_poison(void)
{
    const char *v = getenv("SHMEM_DEBUG");
    return v && *v && strcmp(v, "0") != 0;
}

static inline const SymBuf *symbuf_root(const SymBuf *b)
{
    return b->owner ? b->owner : b;
}

static inline int symbuf_alive(const SymBuf *b)
{
    const SymBuf *r = symbuf_root(b);
    return !b->freed && !r->freed && r->gen == g_gen && initialized();
}

static int symbuf_check_alive(const SymBuf *b, const char *fn)
{
    if (LIKELY(symbuf_alive(b)))
        return 0;
    const SymBuf *r = symbuf_root(b);
    if (b->freed && !b->owning)
        return err(ERR_FREED, "%s: this SymmetricBuffer view was marked freed (view.free())", fn);
    if (r->freed)
        return err(ERR_FREED, "%s: the SymmetricBuffer was freed", fn);
    if (!initialized())
        return err_not_init(fn);
    return err(ERR_FREED, "%s: the SymmetricBuffer belongs to a finalized ushmem instance", fn);
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
    b->gen = g_gen;
    b->exports = 0;
    b->weakrefs = NULL;
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
        if (as_int(dev, &v, fn, "device"))
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
    if (g_dev < 0)
        return err_no_cuda(fn, "device memory");
    if (req != DEV_ANY && req != g_dev)
        return err(ERR_INVALID,
                   "%s: ushmem's device heap is on cuda:%d; device memory on cuda:%d is not "
                   "available (one device per PE: choose it at init)",
                   fn, g_dev, req);
    *ord = g_dev;
    return 0;
}

static PyObject *symbuf_alloc(size_t nbytes, int zero, int device, const char *fn)
{
    if (require_init(fn))
        return NULL;
    if (device == DEV_DEFAULT)
        device = g_dev; /* the device heap found at init (-1: none, the host heap) */
    else if (device != -1 && resolve_device(device, &device, fn))
        return NULL;
    if (nbytes == 0) {
        PyErr_Format(PyExc_ValueError, "%s: nbytes must be > 0", fn);
        return NULL;
    }
    void *p;
    g_lib_error[0] = 0;
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
        err(ERR_NOMEM,
            "%s: cannot allocate %zu symmetric bytes: the %s is exhausted "
            "(raise %s, or free buffers)%s",
            fn, nbytes, device >= 0 ? "device symmetric heap" : "symmetric heap",
            device >= 0 ? "USHMEM_DEVICE_HEAP_SIZE" : "SHMEM_SYMMETRIC_SIZE",
            lib_reason(why, sizeof why));
        return NULL;
    }
    SymBuf *b = symbuf_new(p, p, nbytes, NULL, 1, g_me, device);
    if (!b || alloc_add(p, nbytes, ALLOC_BUFFER, (PyObject *)b, device, NULL) < 0) {
        /* Keep the collective contract: the memory stays allocated and is
         * reported at finalize rather than freed on this PE only. */
        Py_XDECREF(b);
        return NULL;
    }
    return (PyObject *)b;
}

/* SymmetricBuffer(nbytes, ptr=addr, own_data=False): a non-owning view of
 * nbytes at addr, which must lie inside one live symmetric allocation of this
 * PE (a view of its SymmetricBuffer when it has one). */
static PyObject *symbuf_wrap(PyObject *ptr, size_t n, const char *fn)
{
    if (require_init(fn))
        return NULL;
    void *vp = PyLong_AsVoidPtr(ptr);
    if (!vp && PyErr_Occurred())
        return NULL;
    uintptr_t a = (uintptr_t)vp;
    Py_ssize_t i = n ? alloc_find(a, n) : -1;
    if (i < 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s: ptr=%s, nbytes=%zu is not inside one live symmetric allocation of "
                     "this PE (wrap memory that create_buffer, malloc, calloc or align returned)",
                     fn, addr_txt(vp).s, n);
        return NULL;
    }
    SymBuf *owner = NULL;
    if (g_allocs[i].owner) {
        PyObject *o = PyWeakref_GetObject(g_allocs[i].owner);
        if (o && o != Py_None && Py_TYPE(o) == &SymBufType)
            owner = (SymBuf *)o;
    }
    return (PyObject *)symbuf_new((char *)vp, (char *)vp, n, owner, 0, g_me, g_allocs[i].device);
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
    if (as_size(nobj, &n, "SymmetricBuffer", "nbytes") ||
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
    if (!b->owning || b->freed || b->gen != g_gen || !initialized())
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
    if (PyErr_WarnFormat(LeakWarning, 1,
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
    PyObject_Free(self);
}

static PyObject *SymBuf_free(PyObject *self, PyObject *unused)
{
    (void)unused;
    SymBuf *b = (SymBuf *)self;
    if (!b->owning) {
        /* A view owns no memory: free() marks it freed (later use raises
         * ERR_FREED); the buffer it views is untouched. Local, not collective. */
        b->freed = 1;
        Py_RETURN_NONE;
    }
    if (b->freed || b->gen != g_gen)
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
    g_exports++;
    return 0;
}

static void SymBuf_releasebuffer(PyObject *self, Py_buffer *view)
{
    (void)view;
    ((SymBuf *)self)->exports--;
    g_exports--;
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
        err(ERR_UNSUPPORTED,
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
    if (check_pe(arg, &pe, fn) || symbuf_check_alive(b, fn))
        return NULL;
    void *r = shmem_ptr(b->sym, pe);
    if (!r) {
        err(ERR_UNREACHABLE, "%s: PE %d's copy is not mapped in this process", fn, pe);
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
    g_exports--;
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
    g_exports++;
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

typedef struct {
    char *ptr;   /* local memory (what this process reads / writes) */
    char *sym;   /* symmetric address named (== ptr unless a peer view) */
    size_t len;  /* bytes available at ptr; SIZE_MAX when unknown (int address) */
    int device;  /* -1 host */
    SymBuf *buf; /* when the argument is a SymmetricBuffer */
    int has_view;
    Py_buffer view;
} span_t;

static inline void span_release(span_t *s)
{
    if (s->has_view) {
        PyBuffer_Release(&s->view);
        s->has_view = 0;
    }
}

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
    void *p = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
    if (!p && PyErr_Occurred())
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
    if (lookup_attr(o, "data_ptr", &dp) <= 0)
        return PyErr_Occurred() ? -1 : 0;
    Py_DECREF(dp);
    PyObject *is_cuda = NULL, *ptr = NULL, *esz = NULL, *numel = NULL, *contig = NULL;
    int rc = -1;
    if (lookup_attr(o, "is_cuda", &is_cuda) < 0)
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
static int span_get(PyObject *o, span_t *s, int writable, const char *fn, const char *what)
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
    if (PyLong_Check(o)) {
        s->ptr = s->sym = PyLong_AsVoidPtr(o);
        if (!s->ptr && PyErr_Occurred())
            return -1;
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
    if (lookup_attr(o, "__cuda_array_interface__", &d) < 0)
        return -1;
    if (d) {
        int rc = span_from_iface(d, s, 0, fn, what);
        Py_DECREF(d);
        return rc;
    }
    if (lookup_attr(o, "__array_interface__", &d) < 0)
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
static int check_sym_span(span_t *s, size_t n, const char *fn, const char *what)
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
        return err(ERR_NOTSYM, "%s: %s: address range wraps around", fn, what);
    if (s->len != SIZE_MAX && n > s->len) {
        PyErr_Format(PyExc_ValueError, "%s: %s has %zu bytes; %zu needed", fn, what, s->len, n);
        return -1;
    }
    Py_ssize_t i = alloc_find(a, n);
    if (LIKELY(i >= 0)) {
        s->device = g_allocs[i].device;
        return 0;
    }
    i = alloc_near(a);
    if (i >= 0) {
        const alloc_t *e = &g_allocs[i];
        return err(ERR_NOTSYM,
                   "%s: %s: %zu bytes at %p run past the end of the symmetric "
                   "allocation [%p, +%zu)",
                   fn, what, n, (void *)a, (void *)e->addr, e->size);
    }
    return err(ERR_NOTSYM,
               "%s: %s (%s%s, %zu bytes) is not in a live symmetric allocation "
               "(allocate it with ushmem.create_buffer(), ushmem.malloc() or the "
               "interop helpers)",
               fn, what, s->device >= 0 ? "CUDA memory at " : "", addr_txt((void *)a).s, n);
}

static int check_local_span(const span_t *s, size_t n, const char *fn, const char *what)
{
    if (s->device >= 0 && g_dev < 0)
        return err_no_cuda(fn, "CUDA device memory");
    if (s->len != SIZE_MAX && n > s->len) {
        PyErr_Format(PyExc_ValueError, "%s: %s has %zu bytes; %zu needed", fn, what, s->len, n);
        return -1;
    }
    if (n && !s->ptr) {
        PyErr_Format(PyExc_ValueError, "%s: %s is a NULL address", fn, what);
        return -1;
    }
    return 0;
}

/* The peer must be reachable for RMA (mapped here for shm). */
static int check_reach(int pe, const char *fn)
{
    if (LIKELY(shmem_pe_accessible(pe)))
        return 0;
    return err(ERR_UNREACHABLE, "%s: PE %d is not reachable from PE %d by any transport", fn, pe,
               g_me);
}

/* A symmetric span on the device heap: PE pe's copy must be mapped here (a
 * peer on a GPU without peer access to this PE's is not). Host spans: 0. */
static int check_sym_mapped(const span_t *s, int pe, const char *fn, const char *what)
{
    if (s->device < 0 || LIKELY(shmem_ptr(s->sym, pe) != NULL))
        return 0;
    return err(ERR_UNREACHABLE,
               "%s: %s: PE %d's device heap is not mapped in PE %d's process (its GPU has no "
               "peer access to this one, or it runs on another host)",
               fn, what, pe, g_me);
}

/* Stream-ordered synchronization and device collectives need every team
 * member's device heap (and, for device buffers, their copies) mapped here. */
static int check_team_mapped(shmem_team_t t, const span_t *d, const span_t *s, int heaps,
                             const char *fn)
{
    if (g_dev < 0)
        return 0;
    int n = shmem_team_n_pes(t);
    for (int i = 0; i < n; i++) {
        int pe = shmem_team_translate_pe(t, i, SHMEM_TEAM_WORLD);
        if (pe < 0)
            continue;
        if (heaps && !dev_heap_mapped(pe))
            return err(ERR_UNREACHABLE,
                       "%s: PE %d's device heap is not mapped in PE %d's process: stream-ordered "
                       "synchronization needs every team member on this host, on GPUs with "
                       "peer access",
                       fn, pe, g_me);
        if ((d && check_sym_mapped(d, pe, fn, "dest")) ||
            (s && check_sym_mapped(s, pe, fn, "source")))
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Init / finalize / queries                                                  */
/* ------------------------------------------------------------------------ */

static PyObject *g_teams; /* list of Team objects this package created */

static int parse_thread_level(PyObject *o, int *out, const char *fn)
{
    if (!o || o == Py_None) {
        *out = SHMEM_THREAD_MULTIPLE;
        return 0;
    }
    if (as_int(o, out, fn, "thread_level"))
        return -1;
    if (*out < SHMEM_THREAD_SINGLE || *out > SHMEM_THREAD_MULTIPLE) {
        PyErr_Format(PyExc_ValueError, "%s: unknown thread level %d", fn, *out);
        return -1;
    }
    return 0;
}

static int check_not_init(const char *fn)
{
    if (!shmem_query_initialized())
        return 0;
    return err(ERR_STATE, "%s: ushmem is already initialized (finalize it first)", fn);
}

static PyObject *py_init(PyObject *self, PyObject *args, PyObject *kwds)
{
    (void)self;
    static char *kwlist[] = {"thread_level", NULL};
    PyObject *tl = Py_None;
    int level, provided = 0, rc;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:init", kwlist, &tl) ||
        parse_thread_level(tl, &level, "init") || check_not_init("init"))
        return NULL;
    g_lib_error[0] = 0;
    Py_BEGIN_ALLOW_THREADS;
    rc = shmem_init_thread(level, &provided);
    Py_END_ALLOW_THREADS;
    refresh_init_cache();
    if (rc != 0) {
        char why[600];
        err(ERR_BOOTSTRAP,
            "init: shmem_init_thread failed%s (launch with ushrun or torchrun, or use "
            "init_with_mpi() under mpirun)",
            lib_reason(why, sizeof why));
        return NULL;
    }
    probe_device();
    return PyLong_FromLong(provided);
}

static PyObject *py_get_uniqueid(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    shmemx_uniqueid_t uid;
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    rc = shmemx_get_uniqueid(&uid);
    Py_END_ALLOW_THREADS;
    if (check_status(rc, "get_uniqueid"))
        return NULL;
    return PyBytes_FromStringAndSize((const char *)uid.internal, sizeof uid.internal);
}

static PyObject *py_init_attr(PyObject *self, PyObject *args, PyObject *kwds)
{
    (void)self;
    static char *kwlist[] = {"rank", "nranks", "uid", "device", "thread_level", NULL};
    int rank, nranks, level, device;
    Py_buffer uidb;
    PyObject *dev = Py_None, *tl = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iiy*|OO:init_attr", kwlist, &rank, &nranks, &uidb,
                                     &dev, &tl))
        return NULL;
    shmemx_uniqueid_t uid;
    int bad = 0;
    if (uidb.len != (Py_ssize_t)sizeof uid.internal) {
        PyErr_Format(PyExc_ValueError,
                     "init_attr: uid must be %zu bytes (from get_uniqueid()), "
                     "got %zd",
                     sizeof uid.internal, uidb.len);
        bad = 1;
    } else {
        memcpy(uid.internal, uidb.buf, sizeof uid.internal);
    }
    PyBuffer_Release(&uidb);
    if (bad || parse_thread_level(tl, &level, "init_attr") || check_not_init("init_attr"))
        return NULL;
    if (nranks < 1 || rank < 0 || rank >= nranks) {
        PyErr_Format(PyExc_ValueError,
                     "init_attr: need 0 <= rank < nranks, got rank %d, "
                     "nranks %d",
                     rank, nranks);
        return NULL;
    }
    device = -1;
    if (dev != Py_None) {
        if (as_int(dev, &device, "init_attr", "device"))
            return NULL;
        if (device < -1) {
            PyErr_Format(PyExc_ValueError, "init_attr: device %d: use an ordinal, or -1 / None",
                         device);
            return NULL;
        }
    }
    shmemx_init_attr_t attr = SHMEMX_INIT_ATTR_INITIALIZER;
    attr.device = device;
    attr.thread_level = level;
    int rc;
    g_lib_error[0] = 0;
    Py_BEGIN_ALLOW_THREADS;
    rc = shmemx_init_attr(rank, nranks, &uid, &attr);
    Py_END_ALLOW_THREADS;
    refresh_init_cache();
    if (check_status(rc, "init_attr"))
        return NULL;
    probe_device();
    Py_RETURN_NONE;
}

/* Destroy the teams this package made (creation order: every member of a
 * team reaches its destroy in the same order, so this cannot deadlock). */
static void destroy_package_teams(void);

/* Use after finalize: the heap mappings (this PE's heap and the peers' mapped
 * here: memfds named "ushmem-heap") are read from /proc/self/maps before
 * finalize and, once the library has unmapped them, reserved again as private
 * zero pages (MAP_FIXED_NOREPLACE: never over a mapping made in between), so
 * that a memoryview, numpy array or tensor still pointing there reads zeros
 * instead of crashing the interpreter. Address space only: the pages cost
 * memory when touched. */
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
typedef struct {
    uintptr_t lo, hi;
} range_t;

static size_t heap_ranges(range_t **out)
{
    *out = NULL;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 0;
    size_t n = 0, cap = 0;
    range_t *r = NULL;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (!strstr(line, "ushmem-heap") || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
            continue;
        if (n && r[n - 1].hi == lo) {
            r[n - 1].hi = hi;
            continue;
        }
        if (n == cap) {
            range_t *g = PyMem_RawRealloc(r, (cap = cap ? 2 * cap : 16) * sizeof *r);
            if (!g)
                break;
            r = g;
        }
        r[n++] = (range_t){lo, hi};
    }
    fclose(f);
    *out = r;
    return n;
}

/* The ranges back as zero pages; the number that could not be (the address
 * space was taken in between). */
static size_t keep_ranges(const range_t *r, size_t n)
{
    size_t lost = 0;
    for (size_t i = 0; i < n; i++) {
        void *want = (void *)r[i].lo;
        void *p = mmap(want, r[i].hi - r[i].lo, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
        if (p == want)
            continue;
        if (p != MAP_FAILED)
            munmap(p, r[i].hi - r[i].lo); /* a kernel without the flag put it elsewhere */
        lost++;
    }
    return lost;
}

static PyObject *py_finalize(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (!shmem_query_initialized()) {
        err_not_init("finalize");
        return NULL;
    }
    destroy_package_teams();
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
                PyErr_WarnFormat(LeakWarning, 1,
                                 "ushmem.finalize: PE %d: %zu symmetric allocation(s), %zu bytes, "
                                 "were never freed: %U%s",
                                 g_me, g_nallocs, total, joined, g_nallocs > 8 ? "; ..." : "");
            Py_XDECREF(sep);
            Py_XDECREF(joined);
            Py_DECREF(lines);
        }
        /* An error-raising warning filter must not stop the teardown. */
        if (PyErr_Occurred())
            PyErr_WriteUnraisable(NULL);
    }
    alloc_clear();
    g_gen++;
    g_dev = -1;
    g_dev_probe = NULL; /* the device heap goes with the library */
    range_t *ranges;
    size_t nranges = heap_ranges(&ranges);
    int me = g_me; /* the warning below comes after the library forgot who we were */
    Py_BEGIN_ALLOW_THREADS;
    shmem_finalize();
    Py_END_ALLOW_THREADS;
    size_t lost = keep_ranges(ranges, nranges);
    PyMem_RawFree(ranges);
    refresh_init_cache();
    if (g_exports > 0 || lost) {
        if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                             "ushmem.finalize: PE %d: %zd memoryview/numpy/DLPack export(s) of "
                             "symmetric memory outlive finalize(); their addresses stay mapped "
                             "as private memory of this process: it reads zeros at first, and "
                             "what it writes there stays local (no other PE sees it)%s",
                             me, g_exports,
                             lost ? ", except ranges the process mapped again meanwhile" : "") < 0)
            PyErr_WriteUnraisable(NULL);
    }
    Py_RETURN_NONE;
}

/* cuda_device() -> ordinal of the CUDA device bound to ushmem on this PE, or None. */
static PyObject *py_cuda_device(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (!initialized() || g_dev < 0)
        Py_RETURN_NONE;
    return PyLong_FromLong(g_dev);
}

/* _cuda_device_count() -> CUDA devices visible to this process (0 without a
 * usable driver). Loads libcuda.so.1 if it is not loaded yet. */
static PyObject *py_cuda_device_count(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    int n = 0;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) {
        cu_init_fn init = (cu_init_fn)dlsym(h, "cuInit");
        cu_device_get_count_fn count = (cu_device_get_count_fn)dlsym(h, "cuDeviceGetCount");
        if (!init || !count || init(0) != 0 || count(&n) != 0)
            n = 0;
    }
    return PyLong_FromLong(n);
}

static PyObject *py_is_initialized(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyBool_FromLong(shmem_query_initialized());
}

static PyObject *py_my_pe(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    int me = shmem_my_pe();
    if (UNLIKELY(me < 0)) {
        err_not_init("my_pe");
        return NULL;
    }
    return PyLong_FromLong(me);
}

static PyObject *py_n_pes(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    int n = shmem_n_pes();
    if (UNLIKELY(n < 0)) {
        err_not_init("n_pes");
        return NULL;
    }
    return PyLong_FromLong(n);
}

static PyObject *py_query_thread(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (require_init("query_thread"))
        return NULL;
    int provided;
    shmem_query_thread(&provided);
    return PyLong_FromLong(provided);
}

static PyObject *py_pe_accessible(PyObject *self, PyObject *arg)
{
    (void)self;
    int pe;
    if (as_int(arg, &pe, "pe_accessible", "pe"))
        return NULL;
    return PyBool_FromLong(shmem_pe_accessible(pe));
}

static PyObject *py_addr_accessible(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    int pe;
    span_t s;
    if (check_nargs(nargs, 2, 2, "addr_accessible(addr, pe)") ||
        as_int(args[1], &pe, "addr_accessible", "pe") ||
        span_get(args[0], &s, 0, "addr_accessible", "addr"))
        return NULL;
    Py_ssize_t i = alloc_find((uintptr_t)s.sym, 1);
    int r = i >= 0 && pe >= 0 && pe < g_npes &&
            (g_allocs[i].device >= 0 ? shmem_ptr(s.sym, pe) != NULL : shmem_pe_accessible(pe));
    span_release(&s);
    return PyBool_FromLong(r);
}

static PyObject *py_info_get_version(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    int major, minor;
    shmem_info_get_version(&major, &minor);
    return Py_BuildValue("(ii)", major, minor);
}

static PyObject *py_info_get_name(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_name(name);
    return PyUnicode_FromString(name);
}

static PyObject *py_wtime(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyFloat_FromDouble(shmemx_wtime());
}

static PyObject *py_global_exit(PyObject *self, PyObject *arg)
{
    (void)self;
    int status;
    if (as_int(arg, &status, "global_exit", "status"))
        return NULL;
    PyObject *r = PyObject_CallMethod(PySys_GetObject("stdout"), "flush", NULL);
    Py_XDECREF(r);
    r = PyObject_CallMethod(PySys_GetObject("stderr"), "flush", NULL);
    Py_XDECREF(r);
    PyErr_Clear();
    shmem_global_exit(status);
    Py_RETURN_NONE; /* not reached */
}

/* ------------------------------------------------------------------------ */
/* Memory management                                                          */
/* ------------------------------------------------------------------------ */

static PyObject *py_create_buffer(PyObject *self, PyObject *args, PyObject *kwds)
{
    (void)self;
    return SymBuf_new(&SymBufType, args, kwds);
}

static PyObject *raw_result(void *p, size_t n, const char *fn, int device, void *base)
{
    if (!p) {
        if (n == 0)
            Py_RETURN_NONE;
        char why[600];
        err(ERR_NOMEM,
            "%s: cannot allocate %zu symmetric bytes: the symmetric heap is "
            "exhausted (raise SHMEM_SYMMETRIC_SIZE)%s",
            fn, n, lib_reason(why, sizeof why));
        return NULL;
    }
    if (alloc_add(p, n, ALLOC_RAW, NULL, device, base) < 0)
        return NULL;
    return PyLong_FromVoidPtr(p);
}

static PyObject *py_malloc(PyObject *self, PyObject *arg)
{
    (void)self;
    size_t n;
    void *p;
    if (as_size(arg, &n, "malloc", "nbytes") || require_init("malloc"))
        return NULL;
    Py_BEGIN_ALLOW_THREADS;
    p = shmem_malloc_with_hints(n, SHMEMX_MALLOC_HOST); /* host even with a CUDA device bound */
    Py_END_ALLOW_THREADS;
    return raw_result(p, n, "malloc", -1, NULL);
}

static PyObject *py_calloc(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    size_t count, size;
    void *p;
    if (check_nargs(nargs, 2, 2, "calloc(count, size)") ||
        as_size(args[0], &count, "calloc", "count") || as_size(args[1], &size, "calloc", "size") ||
        require_init("calloc"))
        return NULL;
    if (size && count > SIZE_MAX / size) {
        PyErr_Format(PyExc_ValueError, "calloc: %zu x %zu bytes overflows", count, size);
        return NULL;
    }
    if (count == 0 || size == 0) { /* the seed (rocshmem4py) raises here */
        err(ERR_INVALID, "calloc: count %zu x size %zu is an empty allocation", count, size);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS;
    p = shmem_malloc_with_hints(count * size, SHMEMX_MALLOC_HOST);
    if (p) {
        memset(p, 0, count * size);
        shmem_sync_all(); /* nobody writes into a peer's block before it is zeroed */
    }
    Py_END_ALLOW_THREADS;
    return raw_result(p, count * size, "calloc", -1, NULL);
}

static PyObject *py_align(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    size_t alignment, n;
    void *p;
    if (check_nargs(nargs, 2, 2, "align(alignment, nbytes)") ||
        as_size(args[0], &alignment, "align", "alignment") ||
        as_size(args[1], &n, "align", "nbytes") || require_init("align"))
        return NULL;
    if (alignment == 0 || (alignment & (alignment - 1))) { /* ushmem.Error, as in the seed */
        err(ERR_INVALID, "align: alignment %zu is not a power of two", alignment);
        return NULL;
    }
    void *base = NULL;
    int device = -1;
    Py_BEGIN_ALLOW_THREADS;
    if (g_dev < 0 || n == 0 || alignment > 4096 || alignment > SIZE_MAX - n) {
        /* With a device bound this is device memory (see below). */
        p = shmem_align(alignment, n);
        device = g_dev >= 0 ? mem_device(p) : -1;
    } else {
        /* With a device bound shmem_align allocates device memory, and the C
         * API has no aligned allocation with a memory-kind hint: over-allocate
         * host memory and align inside it. The heap's base is page-aligned on
         * every PE, so up to 4 KiB the padding is the same everywhere and the
         * result symmetric. */
        base = shmem_malloc_with_hints(n + alignment - 1, SHMEMX_MALLOC_HOST);
        p = base ? (void *)(((uintptr_t)base + alignment - 1) & ~(uintptr_t)(alignment - 1)) : NULL;
    }
    Py_END_ALLOW_THREADS;
    return raw_result(p, n, "align", device, base);
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
    void *p = PyLong_AsVoidPtr(arg);
    if (!p && PyErr_Occurred())
        return NULL;
    Py_ssize_t i = alloc_exact((uintptr_t)p);
    if (i < 0) {
        err(ERR_NOTFOUND,
            "free: %s is not the start of a live symmetric allocation "
            "(already freed?)",
            addr_txt(p).s);
        return NULL;
    }
    if (g_allocs[i].kind == ALLOC_BUFFER) {
        err(ERR_INVALID, "free: %p belongs to a live SymmetricBuffer; call its free()", p);
        return NULL;
    }
    if (g_allocs[i].device < 0 && debug_poison())
        memset((void *)g_allocs[i].addr, POISON_BYTE, g_allocs[i].size);
    p = g_allocs[i].base;
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
    if (check_nargs(nargs, 2, 2, "ptr(dest, pe)") || check_pe(args[1], &pe, "ptr") ||
        span_get(args[0], &s, 0, "ptr", "dest"))
        return NULL;
    int bad = check_sym_span(&s, 1, "ptr", "dest");
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
    if (check_nargs(nargs, 2, 3, "get_peer_buffer(buf, pe, nbytes=None)") ||
        check_pe(args[1], &pe, fn) || span_get(args[0], &s, 0, fn, "buf"))
        return NULL;
    span_release(&s); /* only its addresses are used; the owner keeps it alive */
    if (nargs == 3 && args[2] != Py_None) {
        if (as_size(args[2], &n, fn, "nbytes"))
            return NULL;
    } else if (s.len == SIZE_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: nbytes is needed with an int address", fn);
        return NULL;
    } else {
        n = s.len;
    }
    if (check_sym_span(&s, n, fn, "buf"))
        return NULL;
    void *p = shmem_ptr(s.sym, pe);
    if (!p) {
        err(ERR_UNREACHABLE,
            "%s: PE %d's copy is not mapped in PE %d's address space (it runs "
            "on another host, or its %s memory is not shared here); use "
            "getmem/putmem instead",
            fn, pe, g_me, s.device >= 0 ? "device" : "host");
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
    if (require_init(fn) || span_get(arg, &s, 0, fn, "buf"))
        return NULL;
    span_release(&s);
    if (check_sym_span(&s, s.len == SIZE_MAX ? 1 : s.len, fn, "buf"))
        return NULL;
    void **bases = PyMem_Calloc((size_t)g_npes, sizeof *bases);
    if (!bases)
        return PyErr_NoMemory();
    int rc = shmemx_heap_bases(s.sym, bases);
    PyObject *list = NULL;
    if (!check_status(rc, fn) && (list = PyList_New(g_npes))) {
        for (int i = 0; i < g_npes; i++) {
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
    if (check_nargs(nargs, 1, 2, "buffer_register(addr, length=None)") || require_init(fn) ||
        span_get(args[0], &s, 0, fn, "addr"))
        return NULL;
    span_release(&s); /* the caller keeps the memory alive while registered */
    if (nargs == 2 && args[1] != Py_None) {
        if (as_size(args[1], &n, fn, "length"))
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
        err(ERR_UNSUPPORTED,
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
    if (require_init(fn) || span_get(arg, &s, 0, fn, "addr"))
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
        check_status(shmemx_buffer_unregister_all(), "buffer_unregister_all"))
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
    void *p = PyLong_AsVoidPtr(arg);
    if (!p && PyErr_Occurred())
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

/* ------------------------------------------------------------------------ */
/* RMA                                                                        */
/* ------------------------------------------------------------------------ */

enum { RMA_PUT, RMA_GET, RMA_PUT_NBI, RMA_GET_NBI };

/* stream: NULL for the blocking / nbi forms; for the _on_stream forms the
 * stream argument (Py_None when omitted). */
static PyObject *rma(int op, PyObject *dobj, PyObject *sobj, PyObject *nobj, PyObject *peobj,
                     PyObject *stream, const char *fn)
{
    size_t n;
    int pe;
    span_t d, s;
    void *st = NULL;
    int is_put = op == RMA_PUT || op == RMA_PUT_NBI;
    if (as_size(nobj, &n, fn, "nbytes") || check_pe(peobj, &pe, fn) ||
        parse_stream(stream, &st, fn) || check_reach(pe, fn))
        return NULL;
    if (span_get(dobj, &d, !is_put, fn, "dest"))
        return NULL;
    if (span_get(sobj, &s, 0, fn, "source")) {
        span_release(&d);
        return NULL;
    }
    int bad = is_put ? check_sym_span(&d, n, fn, "dest") || check_local_span(&s, n, fn, "source") ||
                           check_sym_mapped(&d, pe, fn, "dest")
                     : check_local_span(&d, n, fn, "dest") || check_sym_span(&s, n, fn, "source") ||
                           check_sym_mapped(&s, pe, fn, "source");
    if (!bad && stream && g_dev >= 0) {
        /* The C stream-ordered routine decides: device memory or a stream ->
         * enqueued on that stream (NULL: the legacy default stream); host
         * memory with NULL -> now. */
        Py_BEGIN_ALLOW_THREADS;
        if (is_put)
            shmemx_putmem_on_stream(d.sym, s.ptr, n, pe, (shmemx_stream_t)st);
        else
            shmemx_getmem_on_stream(d.ptr, s.sym, n, pe, (shmemx_stream_t)st);
        Py_END_ALLOW_THREADS;
    } else if (!bad) {
        if (n < GIL_RELEASE_BYTES && d.device < 0 && s.device < 0) {
            switch (op) {
            case RMA_PUT: shmem_putmem(d.sym, s.ptr, n, pe); break;
            case RMA_GET: shmem_getmem(d.ptr, s.sym, n, pe); break;
            case RMA_PUT_NBI: shmem_putmem_nbi(d.sym, s.ptr, n, pe); break;
            case RMA_GET_NBI: shmem_getmem_nbi(d.ptr, s.sym, n, pe); break;
            }
        } else {
            Py_BEGIN_ALLOW_THREADS;
            switch (op) {
            case RMA_PUT: shmem_putmem(d.sym, s.ptr, n, pe); break;
            case RMA_GET: shmem_getmem(d.ptr, s.sym, n, pe); break;
            case RMA_PUT_NBI: shmem_putmem_nbi(d.sym, s.ptr, n, pe); break;
            case RMA_GET_NBI: shmem_getmem_nbi(d.ptr, s.sym, n, pe); break;
            }
            Py_END_ALLOW_THREADS;
        }
    }
    span_release(&s);
    span_release(&d);
    if (bad)
        return NULL;
    Py_RETURN_NONE;
}

#define DEF_RMA(name, op)                                                                          \
    static PyObject *py_##name(PyObject *self, PyObject *const *args, Py_ssize_t nargs)            \
    {                                                                                              \
        (void)self;                                                                                \
        if (check_nargs(nargs, 4, 4, #name "(dest, source, nbytes, pe)"))                          \
            return NULL;                                                                           \
        return rma(op, args[0], args[1], args[2], args[3], NULL, #name);                           \
    }                                                                                              \
    static PyObject *py_##name##_on_stream(PyObject *self, PyObject *const *args,                  \
                                           Py_ssize_t nargs)                                       \
    {                                                                                              \
        (void)self;                                                                                \
        if (check_nargs(nargs, 4, 5, #name "_on_stream(dest, source, nbytes, pe, stream)"))        \
            return NULL;                                                                           \
        return rma(op, args[0], args[1], args[2], args[3], nargs > 4 ? args[4] : Py_None,          \
                   #name "_on_stream");                                                            \
    }
DEF_RMA(putmem, RMA_PUT)
DEF_RMA(getmem, RMA_GET)
DEF_RMA(putmem_nbi, RMA_PUT_NBI)
DEF_RMA(getmem_nbi, RMA_GET_NBI)

/* ---- signals ---- */

/* A uint64 signal word: symmetric, 8-byte aligned; *dev: on the device heap;
 * pe >= 0: its copy on pe must be mapped here. */
static int resolve_sig(PyObject *o, uint64_t **out, int *dev, int pe, const char *fn)
{
    span_t s;
    if (span_get(o, &s, 0, fn, "sig_addr"))
        return -1;
    span_release(&s);
    if (check_sym_span(&s, sizeof(uint64_t), fn, "sig_addr"))
        return -1;
    if ((uintptr_t)s.sym % sizeof(uint64_t))
        return err(ERR_INVALID, "%s: sig_addr %p is not 8-byte aligned", fn, (void *)s.sym);
    if (pe >= 0 && check_sym_mapped(&s, pe, fn, "sig_addr"))
        return -1;
    *out = (uint64_t *)s.sym;
    if (dev)
        *dev = s.device >= 0;
    return 0;
}

static int check_sig_op(PyObject *o, int *op, const char *fn)
{
    if (as_int(o, op, fn, "sig_op"))
        return -1;
    if (*op != SHMEM_SIGNAL_SET && *op != SHMEM_SIGNAL_ADD) {
        PyErr_Format(PyExc_ValueError, "%s: sig_op %d is neither SIGNAL_SET nor SIGNAL_ADD", fn,
                     *op);
        return -1;
    }
    return 0;
}

static int check_cmp(PyObject *o, int *cmp, const char *fn)
{
    if (as_int(o, cmp, fn, "cmp"))
        return -1;
    if (*cmp < SHMEM_CMP_EQ || *cmp > SHMEM_CMP_LE) {
        PyErr_Format(PyExc_ValueError, "%s: cmp %d is not one of CMP_EQ/NE/GT/GE/LT/LE", fn, *cmp);
        return -1;
    }
    return 0;
}

static PyObject *put_signal(PyObject *const *args, PyObject *stream, int nbi, const char *fn)
{
    size_t n;
    int pe, op;
    uint64_t signal, *sig;
    span_t d, s;
    void *st = NULL;
    if (as_size(args[2], &n, fn, "nbytes") || check_pe(args[6], &pe, fn) ||
        parse_stream(stream, &st, fn) || check_reach(pe, fn) ||
        as_u64(args[4], &signal, fn, "signal") || check_sig_op(args[5], &op, fn))
        return NULL;
    if (resolve_sig(args[3], &sig, NULL, pe, fn))
        return NULL;
    if (span_get(args[0], &d, 0, fn, "dest"))
        return NULL;
    if (span_get(args[1], &s, 0, fn, "source")) {
        span_release(&d);
        return NULL;
    }
    int bad = check_sym_span(&d, n, fn, "dest") || check_local_span(&s, n, fn, "source") ||
              check_sym_mapped(&d, pe, fn, "dest");
    if (!bad && stream && g_dev >= 0) {
        Py_BEGIN_ALLOW_THREADS;
        shmemx_putmem_signal_on_stream(d.sym, s.ptr, n, sig, signal, op, pe, (shmemx_stream_t)st);
        Py_END_ALLOW_THREADS;
    } else if (!bad) {
        Py_BEGIN_ALLOW_THREADS;
        if (nbi)
            shmem_putmem_signal_nbi(d.sym, s.ptr, n, sig, signal, op, pe);
        else
            shmem_putmem_signal(d.sym, s.ptr, n, sig, signal, op, pe);
        Py_END_ALLOW_THREADS;
    }
    span_release(&s);
    span_release(&d);
    if (bad)
        return NULL;
    Py_RETURN_NONE;
}

#define PUT_SIGNAL_SIG "(dest, source, nbytes, sig_addr, signal, sig_op, pe"
static PyObject *py_putmem_signal(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (check_nargs(nargs, 7, 7, "putmem_signal" PUT_SIGNAL_SIG ")"))
        return NULL;
    return put_signal(args, NULL, 0, "putmem_signal");
}
static PyObject *py_putmem_signal_nbi(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (check_nargs(nargs, 7, 7, "putmem_signal_nbi" PUT_SIGNAL_SIG ")"))
        return NULL;
    return put_signal(args, NULL, 1, "putmem_signal_nbi");
}
static PyObject *py_putmem_signal_on_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (check_nargs(nargs, 7, 8, "putmem_signal_on_stream" PUT_SIGNAL_SIG ", stream)"))
        return NULL;
    return put_signal(args, nargs > 7 ? args[7] : Py_None, 0, "putmem_signal_on_stream");
}

static PyObject *py_signal_fetch(PyObject *self, PyObject *arg)
{
    (void)self;
    uint64_t *sig;
    int dev;
    if (require_init("signal_fetch") || resolve_sig(arg, &sig, &dev, -1, "signal_fetch"))
        return NULL;
    uint64_t v;
    if (dev) { /* read through a device copy */
        Py_BEGIN_ALLOW_THREADS;
        v = shmem_signal_fetch(sig);
        Py_END_ALLOW_THREADS;
    } else {
        v = shmem_signal_fetch(sig);
    }
    return PyLong_FromUnsignedLongLong(v);
}

static int cmp_u64(uint64_t a, int cmp, uint64_t b)
{
    switch (cmp) {
    case SHMEM_CMP_EQ: return a == b;
    case SHMEM_CMP_NE: return a != b;
    case SHMEM_CMP_GT: return a > b;
    case SHMEM_CMP_GE: return a >= b;
    case SHMEM_CMP_LT: return a < b;
    default: return a <= b;
    }
}

/* Waits with the GIL released, and comes back every few milliseconds to let
 * Ctrl-C (KeyboardInterrupt) through. */
static PyObject *signal_wait(PyObject *const *args, PyObject *stream, const char *fn)
{
    uint64_t *sig, value, v = 0;
    int cmp, done = 0, dev;
    void *st = NULL;
    if (require_init(fn) || parse_stream(stream, &st, fn) ||
        resolve_sig(args[0], &sig, &dev, -1, fn) || check_cmp(args[1], &cmp, fn) ||
        as_u64(args[2], &value, fn, "cmp_value"))
        return NULL;
    if (stream && (st || dev)) {
        /* Enqueued on the stream (NULL: the legacy default stream); returns
         * at once, so there is no value to return. */
        Py_BEGIN_ALLOW_THREADS;
        shmemx_signal_wait_until_on_stream(sig, cmp, value, (shmemx_stream_t)st);
        Py_END_ALLOW_THREADS;
        Py_RETURN_NONE;
    }
    while (!done) {
        Py_BEGIN_ALLOW_THREADS;
        for (unsigned i = 0; i < 20000 && !done; i++) {
            if (cmp_u64(shmem_signal_fetch(sig), cmp, value))
                done = 1;
            else if (i >= 256)
                sched_yield();
        }
        if (done) /* the library's own wait: acquire ordering on the data */
            v = shmem_signal_wait_until(sig, cmp, value);
        Py_END_ALLOW_THREADS;
        if (!done && PyErr_CheckSignals() < 0)
            return NULL;
    }
    return PyLong_FromUnsignedLongLong(v);
}

static PyObject *py_signal_wait_until(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (check_nargs(nargs, 3, 3, "signal_wait_until(sig_addr, cmp, cmp_value)"))
        return NULL;
    return signal_wait(args, NULL, "signal_wait_until");
}

static PyObject *py_signal_wait_until_on_stream(PyObject *self, PyObject *const *args,
                                                Py_ssize_t nargs)
{
    (void)self;
    if (check_nargs(nargs, 3, 4, "signal_wait_until_on_stream(sig_addr, cmp, cmp_value, stream)"))
        return NULL;
    return signal_wait(args, nargs > 3 ? args[3] : Py_None, "signal_wait_until_on_stream");
}

/* ------------------------------------------------------------------------ */
/* Ordering and synchronization                                               */
/* ------------------------------------------------------------------------ */

static PyObject *py_fence(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (require_init("fence"))
        return NULL;
    shmem_fence();
    Py_RETURN_NONE;
}

static PyObject *py_quiet(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (require_init("quiet"))
        return NULL;
    shmem_quiet();
    Py_RETURN_NONE;
}

static PyObject *py_barrier_all(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (require_init("barrier_all"))
        return NULL;
    Py_BEGIN_ALLOW_THREADS;
    shmem_barrier_all();
    Py_END_ALLOW_THREADS;
    Py_RETURN_NONE;
}

static PyObject *py_sync_all(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (require_init("sync_all"))
        return NULL;
    Py_BEGIN_ALLOW_THREADS;
    shmem_sync_all();
    Py_END_ALLOW_THREADS;
    Py_RETURN_NONE;
}

/* With a device bound, the C stream-ordered routine (a NULL stream is the
 * legacy default stream there: the barrier is enqueued, not waited for);
 * without one, only None is accepted and the host routine runs now. */
#define DEF_STREAM0(name, cname, hostcall, heaps)                                                  \
    static PyObject *py_##name##_on_stream(PyObject *self, PyObject *const *args,                  \
                                           Py_ssize_t nargs)                                       \
    {                                                                                              \
        static const char fn[] = #name "_on_stream";                                               \
        void *st;                                                                                  \
        if (check_nargs(nargs, 0, 1, #name "_on_stream(stream=None)") || require_init(fn) ||       \
            parse_stream(nargs ? args[0] : NULL, &st, fn))                                         \
            return NULL;                                                                           \
        if (g_dev < 0)                                                                             \
            return hostcall(self, NULL);                                                           \
        if (heaps && check_team_mapped(SHMEM_TEAM_WORLD, NULL, NULL, 1, fn))                       \
            return NULL;                                                                           \
        Py_BEGIN_ALLOW_THREADS;                                                                    \
        cname((shmemx_stream_t)st);                                                                \
        Py_END_ALLOW_THREADS;                                                                      \
        Py_RETURN_NONE;                                                                            \
    }
DEF_STREAM0(barrier_all, shmemx_barrier_all_on_stream, py_barrier_all, 1)
DEF_STREAM0(sync_all, shmemx_sync_all_on_stream, py_sync_all, 1)
DEF_STREAM0(quiet, shmemx_quiet_on_stream, py_quiet, 0)

/* ------------------------------------------------------------------------ */
/* Teams                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD shmem_team_t team;
    const char *name; /* predefined teams */
    int created;      /* made by a split here */
    int destroyed;
    unsigned long gen;
} TeamObj;

static PyTypeObject TeamType;
static TeamObj *g_team_world, *g_team_shared, *g_team_invalid;

static TeamObj *team_new(shmem_team_t t, const char *name, int created)
{
    TeamObj *o = PyObject_New(TeamObj, &TeamType);
    if (!o)
        return NULL;
    o->team = t;
    o->name = name;
    o->created = created;
    o->destroyed = 0;
    o->gen = g_gen;
    return o;
}

/* A Team, or the seed's integer handles (TEAM_WORLD == 0, TEAM_INVALID == -1);
 * borrowed. NULL with TypeError otherwise. */
static TeamObj *team_obj(PyObject *o, const char *fn)
{
    if (Py_IS_TYPE(o, &TeamType))
        return (TeamObj *)o;
    if (PyLong_Check(o) && !PyBool_Check(o)) {
        long v = PyLong_AsLong(o);
        if (v == 0)
            return g_team_world;
        if (v == -1 && !PyErr_Occurred())
            return g_team_invalid;
        PyErr_Clear();
    }
    PyErr_Format(PyExc_TypeError,
                 "%s: team must be a ushmem.Team (or 0 for TEAM_WORLD, -1 for TEAM_INVALID), "
                 "not %.100s",
                 fn, Py_TYPE(o)->tp_name);
    return NULL;
}

/* For the routines that are no-ops on TEAM_INVALID (as in rocSHMEM and the
 * seed: a non-member of a split holds it): 1 when o is TEAM_INVALID (nothing
 * to do, no exception), 0 with *out set, -1 with an exception. */
static int team_get_or_invalid(PyObject *o, shmem_team_t *out, const char *fn);

/* The C handle of a usable team, or an exception. */
static int team_get(PyObject *o, shmem_team_t *out, const char *fn)
{
    TeamObj *t = team_obj(o, fn);
    if (!t || require_init(fn))
        return -1;
    if (t->team == SHMEM_TEAM_INVALID)
        return err(ERR_INVALID,
                   "%s: team is TEAM_INVALID (this PE is not a member of the "
                   "team it was split into)",
                   fn);
    if (t->destroyed)
        return err(ERR_INVALID, "%s: the team was destroyed", fn);
    if (t->created && t->gen != g_gen)
        return err(ERR_STATE, "%s: the team belongs to a finalized ushmem instance", fn);
    *out = t->team;
    return 0;
}

static int team_get_or_invalid(PyObject *o, shmem_team_t *out, const char *fn)
{
    TeamObj *t = team_obj(o, fn);
    if (!t || require_init(fn))
        return -1;
    if (t->team == SHMEM_TEAM_INVALID)
        return 1;
    return team_get(o, out, fn);
}

/* -1 for TEAM_INVALID, as shmem_team_my_pe / shmem_team_n_pes. */
static PyObject *team_my_pe_impl(PyObject *team, const char *fn)
{
    shmem_team_t t;
    int rc = team_get_or_invalid(team, &t, fn);
    if (rc < 0)
        return NULL;
    return PyLong_FromLong(rc ? -1 : shmem_team_my_pe(t));
}

static PyObject *team_n_pes_impl(PyObject *team, const char *fn)
{
    shmem_team_t t;
    int rc = team_get_or_invalid(team, &t, fn);
    if (rc < 0)
        return NULL;
    return PyLong_FromLong(rc ? -1 : shmem_team_n_pes(t));
}

static PyObject *py_team_my_pe(PyObject *self, PyObject *arg)
{
    (void)self;
    return team_my_pe_impl(arg, "team_my_pe");
}

static PyObject *py_team_n_pes(PyObject *self, PyObject *arg)
{
    (void)self;
    return team_n_pes_impl(arg, "team_n_pes");
}

static PyObject *py_team_translate_pe(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    static const char fn[] = "team_translate_pe";
    shmem_team_t src, dst;
    int pe;
    int ra = 0, rb = 0;
    if (check_nargs(nargs, 3, 3, "team_translate_pe(src_team, src_pe, dest_team)") ||
        (ra = team_get_or_invalid(args[0], &src, fn)) < 0 || as_int(args[1], &pe, fn, "src_pe") ||
        (rb = team_get_or_invalid(args[2], &dst, fn)) < 0)
        return NULL;
    if (ra || rb) /* TEAM_INVALID on either side: -1, as shmem_team_translate_pe */
        return PyLong_FromLong(-1);
    if (pe < 0 || pe >= shmem_team_n_pes(src)) {
        err(ERR_BADPE, "%s: src_pe %d is out of range (the team has %d PEs)", fn, pe,
            shmem_team_n_pes(src));
        return NULL;
    }
    return PyLong_FromLong(shmem_team_translate_pe(src, pe, dst));
}

static int read_config(PyObject *cfg, long mask, shmem_team_config_t *out, const char *fn)
{
    out->num_contexts = 0;
    if (cfg == NULL || cfg == Py_None) {
        if (mask & SHMEM_TEAM_NUM_CONTEXTS) {
            PyErr_Format(PyExc_ValueError,
                         "%s: config_mask has TEAM_NUM_CONTEXTS but config "
                         "is None",
                         fn);
            return -1;
        }
        return 0;
    }
    if (mask & ~SHMEM_TEAM_NUM_CONTEXTS) {
        PyErr_Format(PyExc_ValueError, "%s: unknown bits 0x%lx in config_mask", fn,
                     mask & ~SHMEM_TEAM_NUM_CONTEXTS);
        return -1;
    }
    PyObject *nc = PyObject_GetAttrString(cfg, "num_contexts");
    if (!nc)
        return -1;
    int rc = as_int(nc, &out->num_contexts, fn, "config.num_contexts");
    Py_DECREF(nc);
    if (!rc && out->num_contexts < 0) {
        PyErr_Format(PyExc_ValueError, "%s: config.num_contexts must be >= 0", fn);
        return -1;
    }
    return rc;
}

static PyObject *wrap_new_team(shmem_team_t t)
{
    if (t == SHMEM_TEAM_INVALID)
        return Py_NewRef((PyObject *)g_team_invalid);
    TeamObj *o = team_new(t, NULL, 1);
    if (!o || PyList_Append(g_teams, (PyObject *)o) < 0) {
        Py_XDECREF(o);
        return NULL;
    }
    return (PyObject *)o;
}

/* team_split_strided(parent, start, stride, size, config=None, config_mask=0)
 * -> (status, team). A TEAM_INVALID parent (how non-members take part in
 * nested splits) gives a non-zero status and TEAM_INVALID, as the spec says;
 * every other failure raises. */
static PyObject *py_team_split_strided(PyObject *self, PyObject *args, PyObject *kwds)
{
    (void)self;
    static const char fn[] = "team_split_strided";
    static char *kwlist[] = {"parent", "start", "stride", "size", "config", "config_mask", NULL};
    PyObject *parent, *cfg = Py_None;
    int start, stride, size;
    long mask = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!iii|Ol:team_split_strided", kwlist, &TeamType,
                                     &parent, &start, &stride, &size, &cfg, &mask))
        return NULL;
    if (require_init(fn))
        return NULL;
    if (((TeamObj *)parent)->team == SHMEM_TEAM_INVALID)
        return Py_BuildValue("(iO)", -1, (PyObject *)g_team_invalid);
    shmem_team_t p, nt = SHMEM_TEAM_INVALID;
    shmem_team_config_t conf;
    if (team_get(parent, &p, fn) || read_config(cfg, mask, &conf, fn))
        return NULL;
    int n = shmem_team_n_pes(p);
    long long last = start + (long long)(size - 1) * stride;
    if (size < 1 || start < 0 || start >= n || (stride == 0 && size != 1) || last < 0 ||
        last >= n) {
        PyErr_Format(PyExc_ValueError,
                     "%s: invalid triple (start %d, stride %d, size %d) for a "
                     "parent team of %d PEs",
                     fn, start, stride, size, n);
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    rc = shmem_team_split_strided(p, start, stride, size, cfg == Py_None ? NULL : &conf, mask, &nt);
    Py_END_ALLOW_THREADS;
    if (check_std_status(rc, fn))
        return NULL;
    PyObject *team = wrap_new_team(nt);
    if (!team)
        return NULL;
    return Py_BuildValue("(iN)", 0, team);
}

/* team_split_2d(parent, xrange, xaxis_config=None, xaxis_mask=0, yaxis_config=None,
 * yaxis_mask=0) -> (status, xteam, yteam) */
static PyObject *py_team_split_2d(PyObject *self, PyObject *args, PyObject *kwds)
{
    (void)self;
    static const char fn[] = "team_split_2d";
    static char *kwlist[] = {"parent",     "xrange", "xaxis_config", "xaxis_mask", "yaxis_config",
                             "yaxis_mask", NULL};
    PyObject *parent, *xc = Py_None, *yc = Py_None;
    int xrange;
    long xm = 0, ym = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!i|OlOl:team_split_2d", kwlist, &TeamType,
                                     &parent, &xrange, &xc, &xm, &yc, &ym))
        return NULL;
    if (require_init(fn))
        return NULL;
    if (((TeamObj *)parent)->team == SHMEM_TEAM_INVALID)
        return Py_BuildValue("(iOO)", -1, (PyObject *)g_team_invalid, (PyObject *)g_team_invalid);
    shmem_team_t p, xt = SHMEM_TEAM_INVALID, yt = SHMEM_TEAM_INVALID;
    shmem_team_config_t xconf, yconf;
    if (team_get(parent, &p, fn) || read_config(xc, xm, &xconf, fn) ||
        read_config(yc, ym, &yconf, fn))
        return NULL;
    if (xrange <= 0) {
        PyErr_Format(PyExc_ValueError, "%s: xrange %d must be positive", fn, xrange);
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    rc = shmem_team_split_2d(p, xrange, xc == Py_None ? NULL : &xconf, xm, &xt,
                             yc == Py_None ? NULL : &yconf, ym, &yt);
    Py_END_ALLOW_THREADS;
    if (check_std_status(rc, fn))
        return NULL;
    PyObject *x = wrap_new_team(xt);
    PyObject *y = x ? wrap_new_team(yt) : NULL;
    if (!y) {
        Py_XDECREF(x);
        return NULL;
    }
    return Py_BuildValue("(iNN)", 0, x, y);
}

static void team_destroy_obj(TeamObj *t)
{
    t->destroyed = 1;
    shmem_team_t h = t->team;
    Py_BEGIN_ALLOW_THREADS;
    shmem_team_destroy(h);
    Py_END_ALLOW_THREADS;
    Py_ssize_t n = PyList_GET_SIZE(g_teams);
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyList_GET_ITEM(g_teams, i) == (PyObject *)t) {
            PySequence_DelItem(g_teams, i);
            break;
        }
}

static PyObject *py_team_destroy(PyObject *self, PyObject *arg)
{
    (void)self;
    static const char fn[] = "team_destroy";
    TeamObj *t = team_obj(arg, fn);
    if (!t)
        return NULL;
    /* TEAM_INVALID (the spec allows it) and the predefined teams (as in the
     * seed): nothing to do. */
    if (t->team == SHMEM_TEAM_INVALID || (!t->created && !t->destroyed))
        Py_RETURN_NONE;
    shmem_team_t h;
    if (team_get((PyObject *)t, &h, fn))
        return NULL;
    team_destroy_obj(t);
    Py_RETURN_NONE;
}

static void destroy_package_teams(void)
{
    while (PyList_GET_SIZE(g_teams) > 0) {
        TeamObj *t = (TeamObj *)PyList_GET_ITEM(g_teams, 0);
        Py_INCREF(t);
        if (!t->destroyed && t->gen == g_gen)
            team_destroy_obj(t);
        else
            PySequence_DelItem(g_teams, 0);
        Py_DECREF(t);
    }
}

static PyObject *py_team_sync(PyObject *self, PyObject *arg)
{
    (void)self;
    shmem_team_t t;
    int rc = team_get_or_invalid(arg, &t, "team_sync");
    if (rc)
        return rc < 0 ? NULL : Py_NewRef(Py_None); /* TEAM_INVALID: nothing to do */
    Py_BEGIN_ALLOW_THREADS;
    rc = shmem_team_sync(t);
    Py_END_ALLOW_THREADS;
    if (check_std_status(rc, "team_sync"))
        return NULL;
    Py_RETURN_NONE;
}

/* barrier(team): quiet, then sync the team (the 1.5 meaning of a barrier). */
static PyObject *py_barrier(PyObject *self, PyObject *arg)
{
    (void)self;
    shmem_team_t t;
    int rc = team_get_or_invalid(arg, &t, "barrier");
    if (rc)
        return rc < 0 ? NULL : Py_NewRef(Py_None); /* TEAM_INVALID: nothing to do */
    Py_BEGIN_ALLOW_THREADS;
    shmem_quiet();
    rc = shmem_team_sync(t);
    Py_END_ALLOW_THREADS;
    if (check_std_status(rc, "barrier"))
        return NULL;
    Py_RETURN_NONE;
}

#define DEF_TEAM_STREAM(name, cname)                                                               \
    static PyObject *py_##name##_on_stream(PyObject *self, PyObject *const *args,                  \
                                           Py_ssize_t nargs)                                       \
    {                                                                                              \
        static const char fn[] = #name "_on_stream";                                               \
        void *st;                                                                                  \
        shmem_team_t t;                                                                            \
        int inv = 0;                                                                               \
        if (check_nargs(nargs, 1, 2, #name "_on_stream(team, stream=None)") ||                     \
            (inv = team_get_or_invalid(args[0], &t, fn)) < 0 ||                                    \
            parse_stream(nargs > 1 ? args[1] : NULL, &st, fn))                                     \
            return NULL;                                                                           \
        if (inv) /* TEAM_INVALID: nothing to do */                                                 \
            Py_RETURN_NONE;                                                                        \
        if (g_dev < 0)                                                                             \
            return py_##name(self, args[0]);                                                       \
        if (check_team_mapped(t, NULL, NULL, 1, fn))                                               \
            return NULL;                                                                           \
        Py_BEGIN_ALLOW_THREADS;                                                                    \
        cname(t, (shmemx_stream_t)st);                                                             \
        Py_END_ALLOW_THREADS;                                                                      \
        Py_RETURN_NONE;                                                                            \
    }
DEF_TEAM_STREAM(barrier, shmemx_barrier_on_stream)
DEF_TEAM_STREAM(team_sync, shmemx_team_sync_on_stream)

static PyObject *Team_my_pe(PyObject *self, PyObject *unused)
{
    (void)unused;
    return team_my_pe_impl(self, "Team.my_pe");
}
static PyObject *Team_n_pes(PyObject *self, PyObject *unused)
{
    (void)unused;
    return team_n_pes_impl(self, "Team.n_pes");
}
static PyObject *Team_destroy(PyObject *self, PyObject *unused)
{
    (void)unused;
    return py_team_destroy(NULL, self);
}
static PyObject *Team_sync(PyObject *self, PyObject *unused)
{
    (void)unused;
    return py_team_sync(NULL, self);
}
static PyObject *Team_translate_pe(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 1, 2, "Team.translate_pe(pe, dest_team=TEAM_WORLD)"))
        return NULL;
    PyObject *a[3] = {self, args[0], nargs > 1 ? args[1] : (PyObject *)g_team_world};
    return py_team_translate_pe(NULL, a, 3);
}
static PyObject *Team_get_valid(PyObject *self, void *c)
{
    (void)c;
    TeamObj *t = (TeamObj *)self;
    return PyBool_FromLong(t->team != SHMEM_TEAM_INVALID && !t->destroyed &&
                           (!t->created || t->gen == g_gen));
}
static PyObject *Team_repr(PyObject *self)
{
    TeamObj *t = (TeamObj *)self;
    if (t->name)
        return PyUnicode_FromFormat("ushmem.%s", t->name);
    return PyUnicode_FromFormat("<ushmem.Team %s%s>", addr_txt((void *)t->team).s,
                                t->destroyed ? " (destroyed)" : "");
}
static int Team_bool(PyObject *self)
{
    return ((TeamObj *)self)->team != SHMEM_TEAM_INVALID;
}
static PyObject *Team_get_handle(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromVoidPtr(((TeamObj *)self)->team);
}

static PyMethodDef Team_methods[] = {
    {"my_pe", Team_my_pe, METH_NOARGS,
     "my_pe($self, /)\n--\n\nThis PE's number in the team (-1 for TEAM_INVALID)."},
    {"n_pes", Team_n_pes, METH_NOARGS,
     "n_pes($self, /)\n--\n\nNumber of PEs in the team (-1 for TEAM_INVALID)."},
    {"translate_pe", FN(Team_translate_pe), METH_FASTCALL,
     "translate_pe($self, pe, dest_team=0, /)\n--\n\nThe number in dest_team of "
     "this team's PE pe, or -1."},
    {"sync", Team_sync, METH_NOARGS, "sync($self, /)\n--\n\nteam_sync(team)."},
    {"destroy", Team_destroy, METH_NOARGS,
     "destroy($self, /)\n--\n\nteam_destroy(team) (collective over the team)."},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef Team_getset[] = {
    {"valid", Team_get_valid, NULL, "False for TEAM_INVALID and destroyed teams.", NULL},
    {"handle", Team_get_handle, NULL, "The C shmem_team_t as an int.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
static PyNumberMethods Team_as_number = {.nb_bool = Team_bool};

/* TEAM_WORLD == 0 and TEAM_INVALID == -1, as the seed's integer handles; other
 * teams compare by identity. Hashes agree with the ints' (hash(-1) is -2). */
static PyObject *Team_richcompare(PyObject *a, PyObject *b, int op)
{
    if (op != Py_EQ && op != Py_NE)
        Py_RETURN_NOTIMPLEMENTED;
    if (!Py_IS_TYPE(a, &TeamType)) {
        PyObject *x = a;
        a = b;
        b = x;
    }
    int eq;
    if (Py_IS_TYPE(b, &TeamType)) {
        eq = a == b;
    } else if (PyLong_Check(b) && !PyBool_Check(b)) {
        long v = PyLong_AsLong(b);
        if (v == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            v = 1; /* out of long's range: no team's number */
        }
        shmem_team_t h = ((TeamObj *)a)->team;
        eq = (v == 0 && h == SHMEM_TEAM_WORLD) || (v == -1 && h == SHMEM_TEAM_INVALID);
    } else {
        Py_RETURN_NOTIMPLEMENTED;
    }
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t Team_hash(PyObject *o)
{
    shmem_team_t h = ((TeamObj *)o)->team;
    if (h == SHMEM_TEAM_WORLD)
        return 0;
    if (h == SHMEM_TEAM_INVALID)
        return -2;
    Py_hash_t v = (Py_hash_t)((uintptr_t)o >> 4);
    return v == -1 ? -3 : v;
}

static PyTypeObject TeamType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ushmem.Team",
    .tp_basicsize = sizeof(TeamObj),
    .tp_dealloc = (destructor)PyObject_Free,
    .tp_repr = Team_repr,
    .tp_as_number = &Team_as_number,
    .tp_richcompare = Team_richcompare,
    .tp_hash = Team_hash,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An OpenSHMEM team (from team_split_strided / team_split_2d, or TEAM_WORLD, "
              "TEAM_SHARED, TEAM_INVALID). Teams the package made are destroyed by finalize.",
    .tp_methods = Team_methods,
    .tp_getset = Team_getset,
};

/* ------------------------------------------------------------------------ */
/* Collectives                                                                */
/* ------------------------------------------------------------------------ */

static int coll_spans(PyObject *dobj, PyObject *sobj, size_t dn, size_t sn, span_t *d, span_t *s,
                      const char *fn)
{
    if (span_get(dobj, d, 1, fn, "dest"))
        return -1;
    if (span_get(sobj, s, 0, fn, "source")) {
        span_release(d);
        return -1;
    }
    if (check_sym_span(d, dn, fn, "dest") || check_sym_span(s, sn, fn, "source")) {
        span_release(s);
        span_release(d);
        return -1;
    }
    return 0;
}

static int mul_size(size_t a, size_t b, size_t *out, const char *fn)
{
    if (b && a > SIZE_MAX / b) {
        PyErr_Format(PyExc_ValueError, "%s: size overflows", fn);
        return -1;
    }
    *out = a * b;
    return 0;
}

enum { COLL_ALLTOALL, COLL_FCOLLECT, COLL_BCAST };

/* The byte collectives. alltoall: dest and source n_team * nbytes; fcollect:
 * dest n_team * nbytes, source nbytes; broadcast: both nbytes (args[4] the
 * root). stream: NULL for the blocking forms, else the stream argument. */
static PyObject *coll(int kind, PyObject *const *args, PyObject *stream, const char *fn)
{
    shmem_team_t t;
    size_t n, total;
    int root = 0;
    span_t d, s;
    void *st = NULL;
    int inv = team_get_or_invalid(args[0], &t, fn);
    if (inv) /* TEAM_INVALID: nothing to do (the seed's member-scoped code relies on it) */
        return inv < 0 ? NULL : Py_NewRef(Py_None);
    if (as_size(args[3], &n, fn, "nbytes") ||
        (kind == COLL_BCAST && as_int(args[4], &root, fn, "pe_root")) ||
        parse_stream(stream, &st, fn) || mul_size((size_t)shmem_team_n_pes(t), n, &total, fn))
        return NULL;
    if (kind == COLL_BCAST && (root < 0 || root >= shmem_team_n_pes(t))) {
        err(ERR_BADPE, "%s: pe_root %d is out of range (the team has %d PEs)", fn, root,
            shmem_team_n_pes(t));
        return NULL;
    }
    size_t dn = kind == COLL_BCAST ? n : total, sn = kind == COLL_ALLTOALL ? total : n;
    if (coll_spans(args[1], args[2], dn, sn, &d, &s, fn))
        return NULL;
    int dev = d.device >= 0 || s.device >= 0;
    if (check_team_mapped(t, &d, &s, dev, fn)) {
        span_release(&s);
        span_release(&d);
        return NULL;
    }
    int rc;
    shmemx_stream_t cs = (shmemx_stream_t)st;
    Py_BEGIN_ALLOW_THREADS;
    if (stream && g_dev >= 0) {
        switch (kind) {
        case COLL_ALLTOALL: rc = shmemx_alltoallmem_on_stream(t, d.sym, s.sym, n, cs); break;
        case COLL_FCOLLECT: rc = shmemx_fcollectmem_on_stream(t, d.sym, s.sym, n, cs); break;
        default: rc = shmemx_broadcastmem_on_stream(t, d.sym, s.sym, n, root, cs); break;
        }
    } else {
        switch (kind) {
        case COLL_ALLTOALL: rc = shmem_alltoallmem(t, d.sym, s.sym, n); break;
        case COLL_FCOLLECT: rc = shmem_fcollectmem(t, d.sym, s.sym, n); break;
        default: rc = shmem_broadcastmem(t, d.sym, s.sym, n, root); break;
        }
    }
    Py_END_ALLOW_THREADS;
    span_release(&s);
    span_release(&d);
    if (check_std_status(rc, fn))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_alltoallmem(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (check_nargs(nargs, 4, 4, "alltoallmem(team, dest, source, nbytes_per_pe)"))
        return NULL;
    return coll(COLL_ALLTOALL, args, NULL, "alltoallmem");
}
static PyObject *py_alltoallmem_on_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (check_nargs(nargs, 4, 5, "alltoallmem_on_stream(team, dest, source, nbytes, stream)"))
        return NULL;
    return coll(COLL_ALLTOALL, args, nargs > 4 ? args[4] : Py_None, "alltoallmem_on_stream");
}
static PyObject *py_fcollectmem(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (check_nargs(nargs, 4, 4, "fcollectmem(team, dest, source, nbytes)"))
        return NULL;
    return coll(COLL_FCOLLECT, args, NULL, "fcollectmem");
}
static PyObject *py_fcollectmem_on_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (check_nargs(nargs, 4, 5, "fcollectmem_on_stream(team, dest, source, nbytes, stream)"))
        return NULL;
    return coll(COLL_FCOLLECT, args, nargs > 4 ? args[4] : Py_None, "fcollectmem_on_stream");
}
static PyObject *py_broadcastmem(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (check_nargs(nargs, 5, 5, "broadcastmem(team, dest, source, nbytes, pe_root)"))
        return NULL;
    return coll(COLL_BCAST, args, NULL, "broadcastmem");
}
static PyObject *py_broadcastmem_on_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (check_nargs(nargs, 5, 6,
                    "broadcastmem_on_stream(team, dest, source, nbytes, pe_root, "
                    "stream)"))
        return NULL;
    return coll(COLL_BCAST, args, nargs > 5 ? args[5] : Py_None, "broadcastmem_on_stream");
}

/* ---- reductions on a stream: shmemx_<type>_<op>_reduce_on_stream ---- */

typedef int (*reduce_fn)(shmem_team_t, void *, const void *, size_t, shmemx_stream_t);
#define RED_WRAP(T, N, OP)                                                                         \
    static int red_##N##_##OP(shmem_team_t t, void *d, const void *s, size_t n,                    \
                              shmemx_stream_t st)                                                  \
    {                                                                                              \
        return shmemx_##N##_##OP##_reduce_on_stream(t, (T *)d, (const T *)s, n, st);               \
    }
#define RED_BITS(T, N) RED_WRAP(T, N, and) RED_WRAP(T, N, or) RED_WRAP(T, N, xor)
#define RED_ARITH(T, N)                                                                            \
    RED_WRAP(T, N, max) RED_WRAP(T, N, min) RED_WRAP(T, N, sum) RED_WRAP(T, N, prod)
SHMEMX_REDUCE_ON_STREAM_INT(RED_BITS)
SHMEMX_REDUCE_ON_STREAM_INT(RED_ARITH)
SHMEMX_REDUCE_ON_STREAM_FLOAT(RED_ARITH)

typedef struct {
    const char *type, *op;
    size_t size;
    reduce_fn fn;
} red_entry_t;
#define RED_ENT(T, N, OP)  {#N, #OP, sizeof(T), red_##N##_##OP},
#define RED_ENT_BITS(T, N) RED_ENT(T, N, and) RED_ENT(T, N, or) RED_ENT(T, N, xor)
#define RED_ENT_ARITH(T, N)                                                                        \
    RED_ENT(T, N, max) RED_ENT(T, N, min) RED_ENT(T, N, sum) RED_ENT(T, N, prod)
static const red_entry_t red_table[] = {
    SHMEMX_REDUCE_ON_STREAM_INT(RED_ENT_BITS) SHMEMX_REDUCE_ON_STREAM_INT(RED_ENT_ARITH)
        SHMEMX_REDUCE_ON_STREAM_FLOAT(RED_ENT_ARITH){NULL, NULL, 0, NULL},
};

/* reduce_on_stream(team, dest, source, nreduce, type, op, stream=None) */
static PyObject *py_reduce_on_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    static const char fn[] = "reduce_on_stream";
    shmem_team_t t;
    size_t n, nbytes;
    span_t d, s;
    void *st;
    int inv = 0;
    if (check_nargs(nargs, 6, 7,
                    "reduce_on_stream(team, dest, source, nreduce, type, op, stream)") ||
        (inv = team_get_or_invalid(args[0], &t, fn)) < 0)
        return NULL;
    if (inv) /* TEAM_INVALID: nothing to do */
        Py_RETURN_NONE;
    if (as_size(args[3], &n, fn, "nreduce"))
        return NULL;
    const char *type = PyUnicode_Check(args[4]) ? PyUnicode_AsUTF8(args[4]) : NULL;
    const char *op = PyUnicode_Check(args[5]) ? PyUnicode_AsUTF8(args[5]) : NULL;
    if (!type || !op) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%s: type and op must be str (e.g. 'float', 'sum')", fn);
        return NULL;
    }
    const red_entry_t *e = red_table;
    while (e->type && (strcmp(e->type, type) || strcmp(e->op, op)))
        e++;
    if (!e->type) {
        PyErr_Format(PyExc_ValueError,
                     "%s: no %s reduction on %s (types: int, long, longlong, uint, ulong, "
                     "ulonglong, int32, int64, uint32, uint64, size, ptrdiff with and/or/xor/max/"
                     "min/sum/prod; float, double with max/min/sum/prod)",
                     fn, op, type);
        return NULL;
    }
    if (parse_stream(nargs > 6 ? args[6] : Py_None, &st, fn) || mul_size(n, e->size, &nbytes, fn) ||
        coll_spans(args[1], args[2], nbytes, nbytes, &d, &s, fn))
        return NULL;
    int bad = 0;
    if (((uintptr_t)d.sym | (uintptr_t)s.sym) % e->size) {
        PyErr_Format(PyExc_ValueError, "%s: dest and source must be %zu-byte aligned", fn, e->size);
        bad = 1;
    }
    if (bad || check_team_mapped(t, &d, &s, d.device >= 0 || s.device >= 0, fn)) {
        span_release(&s);
        span_release(&d);
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    rc = e->fn(t, d.sym, s.sym, n, (shmemx_stream_t)st);
    Py_END_ALLOW_THREADS;
    span_release(&s);
    span_release(&d);
    if (check_std_status(rc, fn))
        return NULL;
    Py_RETURN_NONE;
}

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
        DEV_FIELD(reserved),
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
    if (teamobj && teamobj != Py_None && team_get(teamobj, &t, fn))
        return -1;
    if (g_dev < 0) {
        const char *why = shmemx_dev_why();
        return err(ERR_UNSUPPORTED,
                   "%s: %s; the device API needs a CUDA device bound to ushmem (pass device= to "
                   "init, or set USHMEM_DEVICE or LOCAL_RANK before init)",
                   fn, why ? why : "this PE has no device heap");
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    rc = t == SHMEM_TEAM_WORLD ? shmemx_dev_get(d) : shmemx_team_dev_get(t, d);
    Py_END_ALLOW_THREADS;
    return check_status(rc, fn);
}

/* _dev_get(team=None) -> bytes of shmemx_dev_t (shmemx_dev_get / shmemx_team_dev_get). */
static PyObject *py__dev_get(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    shmemx_dev_t d;
    if (check_nargs(nargs, 0, 1, "_dev_get(team=None)") ||
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
    if (check_nargs(nargs, 0, 1, "_dev_peer_bases(team=None)") ||
        dev_handle(nargs ? args[0] : NULL, &d, fn))
        return NULL;
    if (!g_dev_probe) {
        err(ERR_STATE, "%s: no device-heap block to translate with (init did not probe)", fn);
        return NULL;
    }
    void **bases = PyMem_Calloc((size_t)g_npes, sizeof *bases);
    if (!bases)
        return PyErr_NoMemory();
    int rc = shmemx_heap_bases(g_dev_probe, bases);
    PyObject *list = NULL;
    uint64_t off = (uint64_t)(uintptr_t)g_dev_probe - d.heap_base;
    if (!check_status(rc, fn) && (list = PyList_New(d.n_pes))) {
        for (int i = 0; i < d.n_pes; i++) {
            long long w = (long long)d.team_start + (long long)i * d.team_stride;
            uint64_t b = 0;
            if (w >= 0 && w < g_npes && bases[w])
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
        {"DEV_F_WAIT_OK", SHMEMX_DEV_F_WAIT_OK},
        {"DEV_F_PEER_ATOMICS", SHMEMX_DEV_F_PEER_ATOMICS},
        {"DEV_F_WORLD", SHMEMX_DEV_F_WORLD},
        {"DEV_F_TIMESLICED", SHMEMX_DEV_F_TIMESLICED},
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

/* ------------------------------------------------------------------------ */
/* Atomics: the OpenSHMEM host matrix, <type>_atomic_<op>(dest, [cond,] [value,] pe) */
/* ------------------------------------------------------------------------ */

/* X(name, ctype, kind, lo, hi): kind S signed, U unsigned, F floating. */
#define T_INT(X)                                                                                   \
    X(int, int, S, INT_MIN, INT_MAX)                                                               \
    X(long, long, S, LONG_MIN, LONG_MAX)                                                           \
    X(longlong, long long, S, LLONG_MIN, LLONG_MAX)                                                \
    X(uint, unsigned int, U, 0, UINT_MAX)                                                          \
    X(ulong, unsigned long, U, 0, ULONG_MAX)                                                       \
    X(ulonglong, unsigned long long, U, 0, ULLONG_MAX)                                             \
    X(int32, int32_t, S, INT32_MIN, INT32_MAX)                                                     \
    X(int64, int64_t, S, INT64_MIN, INT64_MAX)                                                     \
    X(uint32, uint32_t, U, 0, UINT32_MAX)                                                          \
    X(uint64, uint64_t, U, 0, UINT64_MAX)                                                          \
    X(size, size_t, U, 0, SIZE_MAX)                                                                \
    X(ptrdiff, ptrdiff_t, S, PTRDIFF_MIN, PTRDIFF_MAX)
#define T_STD(X)                                                                                   \
    X(float, float, F, 0, 0)                                                                       \
    X(double, double, F, 0, 0)                                                                     \
    T_INT(X)
#define T_BIT(X)                                                                                   \
    X(uint, unsigned int, U, 0, UINT_MAX)                                                          \
    X(ulong, unsigned long, U, 0, ULONG_MAX)                                                       \
    X(ulonglong, unsigned long long, U, 0, ULLONG_MAX)                                             \
    X(int32, int32_t, S, INT32_MIN, INT32_MAX)                                                     \
    X(int64, int64_t, S, INT64_MIN, INT64_MAX)                                                     \
    X(uint32, uint32_t, U, 0, UINT32_MAX)                                                          \
    X(uint64, uint64_t, U, 0, UINT64_MAX)

static int conv_S(PyObject *o, long long lo, long long hi, long long *out, const char *fn,
                  const char *what)
{
    long long v;
    if (as_longlong(o, &v, fn, what))
        return -1;
    if (v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "%s: %s %lld does not fit the type", fn, what, v);
        return -1;
    }
    *out = v;
    return 0;
}

static int conv_U(PyObject *o, unsigned long long hi, unsigned long long *out, const char *fn,
                  const char *what)
{
    uint64_t v;
    if (as_u64(o, &v, fn, what))
        return -1;
    if (v > hi) {
        PyErr_Format(PyExc_ValueError, "%s: %s %llu does not fit the type", fn, what,
                     (unsigned long long)v);
        return -1;
    }
    *out = v;
    return 0;
}

static int conv_F(PyObject *o, double *out, const char *fn, const char *what)
{
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a number", fn, what);
        return -1;
    }
    *out = v;
    return 0;
}

#define CONV_BODY_S(T, LO, HI)                                                                     \
    long long v;                                                                                   \
    if (conv_S(o, LO, HI, &v, fn, what))                                                           \
        return -1;                                                                                 \
    *out = (T)v;                                                                                   \
    return 0;
#define CONV_BODY_U(T, LO, HI)                                                                     \
    unsigned long long v;                                                                          \
    if (conv_U(o, HI, &v, fn, what))                                                               \
        return -1;                                                                                 \
    *out = (T)v;                                                                                   \
    return 0;
#define CONV_BODY_F(T, LO, HI)                                                                     \
    double v;                                                                                      \
    if (conv_F(o, &v, fn, what))                                                                   \
        return -1;                                                                                 \
    *out = (T)v;                                                                                   \
    return 0;
#define DEF_CONV(N, T, K, LO, HI)                                                                  \
    static int conv_##N(PyObject *o, T *out, const char *fn, const char *what)                     \
    {                                                                                              \
        CONV_BODY_##K(T, LO, HI)                                                                   \
    }
T_STD(DEF_CONV)
#define RET_S(v) PyLong_FromLongLong((long long)(v))
#define RET_U(v) PyLong_FromUnsignedLongLong((unsigned long long)(v))
#define RET_F(v) PyFloat_FromDouble((double)(v))

/* dest of an AMO: symmetric, aligned, on a reachable PE. */
static int amo_target(PyObject *o, PyObject *peobj, size_t size, void **dest, int *pe,
                      const char *fn)
{
    span_t s;
    if (check_pe(peobj, pe, fn) || check_reach(*pe, fn) || span_get(o, &s, 0, fn, "dest"))
        return -1;
    span_release(&s);
    if (check_sym_span(&s, size, fn, "dest"))
        return -1;
    if ((uintptr_t)s.sym % size)
        return err(ERR_INVALID, "%s: dest %p is not %zu-byte aligned", fn, (void *)s.sym, size);
    if (check_sym_mapped(&s, *pe, fn, "dest"))
        return -1;
    *dest = s.sym;
    return 0;
}

#define AMO_FETCH(N, T, K, LO, HI)                                                                 \
    static PyObject *py_##N##_atomic_fetch(PyObject *self, PyObject *const *args,                  \
                                           Py_ssize_t nargs)                                       \
    {                                                                                              \
        (void)self;                                                                                \
        static const char fn[] = #N "_atomic_fetch";                                               \
        void *d;                                                                                   \
        int pe;                                                                                    \
        if (check_nargs(nargs, 2, 2, #N "_atomic_fetch(source, pe)") ||                            \
            amo_target(args[0], args[1], sizeof(T), &d, &pe, fn))                                  \
            return NULL;                                                                           \
        return RET_##K(shmem_##N##_atomic_fetch((const T *)d, pe));                                \
    }
#define DEF_AMO_VAL_VOID(N, T, K, LO, HI, OP)                                                      \
    static PyObject *py_##N##_atomic_##OP(PyObject *self, PyObject *const *args, Py_ssize_t nargs) \
    {                                                                                              \
        (void)self;                                                                                \
        static const char fn[] = #N "_atomic_" #OP;                                                \
        void *d;                                                                                   \
        int pe;                                                                                    \
        T v;                                                                                       \
        if (check_nargs(nargs, 3, 3, #N "_atomic_" #OP "(dest, value, pe)") ||                     \
            conv_##N(args[1], &v, fn, "value") ||                                                  \
            amo_target(args[0], args[2], sizeof(T), &d, &pe, fn))                                  \
            return NULL;                                                                           \
        shmem_##N##_atomic_##OP((T *)d, v, pe);                                                    \
        Py_RETURN_NONE;                                                                            \
    }
#define DEF_AMO_VAL_FETCH(N, T, K, LO, HI, OP)                                                     \
    static PyObject *py_##N##_atomic_##OP(PyObject *self, PyObject *const *args, Py_ssize_t nargs) \
    {                                                                                              \
        (void)self;                                                                                \
        static const char fn[] = #N "_atomic_" #OP;                                                \
        void *d;                                                                                   \
        int pe;                                                                                    \
        T v;                                                                                       \
        if (check_nargs(nargs, 3, 3, #N "_atomic_" #OP "(dest, value, pe)") ||                     \
            conv_##N(args[1], &v, fn, "value") ||                                                  \
            amo_target(args[0], args[2], sizeof(T), &d, &pe, fn))                                  \
            return NULL;                                                                           \
        return RET_##K(shmem_##N##_atomic_##OP((T *)d, v, pe));                                    \
    }
#define DEF_AMO_NOVAL_VOID(N, T, K, LO, HI, OP)                                                    \
    static PyObject *py_##N##_atomic_##OP(PyObject *self, PyObject *const *args, Py_ssize_t nargs) \
    {                                                                                              \
        (void)self;                                                                                \
        static const char fn[] = #N "_atomic_" #OP;                                                \
        void *d;                                                                                   \
        int pe;                                                                                    \
        if (check_nargs(nargs, 2, 2, #N "_atomic_" #OP "(dest, pe)") ||                            \
            amo_target(args[0], args[1], sizeof(T), &d, &pe, fn))                                  \
            return NULL;                                                                           \
        shmem_##N##_atomic_##OP((T *)d, pe);                                                       \
        Py_RETURN_NONE;                                                                            \
    }
#define DEF_AMO_NOVAL_FETCH(N, T, K, LO, HI, OP)                                                   \
    static PyObject *py_##N##_atomic_##OP(PyObject *self, PyObject *const *args, Py_ssize_t nargs) \
    {                                                                                              \
        (void)self;                                                                                \
        static const char fn[] = #N "_atomic_" #OP;                                                \
        void *d;                                                                                   \
        int pe;                                                                                    \
        if (check_nargs(nargs, 2, 2, #N "_atomic_" #OP "(dest, pe)") ||                            \
            amo_target(args[0], args[1], sizeof(T), &d, &pe, fn))                                  \
            return NULL;                                                                           \
        return RET_##K(shmem_##N##_atomic_##OP((T *)d, pe));                                       \
    }
#define DEF_AMO_CSWAP(N, T, K, LO, HI)                                                             \
    static PyObject *py_##N##_atomic_compare_swap(PyObject *self, PyObject *const *args,           \
                                                  Py_ssize_t nargs)                                \
    {                                                                                              \
        (void)self;                                                                                \
        static const char fn[] = #N "_atomic_compare_swap";                                        \
        void *d;                                                                                   \
        int pe;                                                                                    \
        T c, v;                                                                                    \
        if (check_nargs(nargs, 4, 4, #N "_atomic_compare_swap(dest, cond, value, pe)") ||          \
            conv_##N(args[1], &c, fn, "cond") || conv_##N(args[2], &v, fn, "value") ||             \
            amo_target(args[0], args[3], sizeof(T), &d, &pe, fn))                                  \
            return NULL;                                                                           \
        return RET_##K(shmem_##N##_atomic_compare_swap((T *)d, c, v, pe));                         \
    }

#define DEF_SET(N, T, K, LO, HI)  DEF_AMO_VAL_VOID(N, T, K, LO, HI, set)
#define DEF_SWAP(N, T, K, LO, HI) DEF_AMO_VAL_FETCH(N, T, K, LO, HI, swap)
#define DEF_FADD(N, T, K, LO, HI) DEF_AMO_VAL_FETCH(N, T, K, LO, HI, fetch_add)
#define DEF_ADD(N, T, K, LO, HI)  DEF_AMO_VAL_VOID(N, T, K, LO, HI, add)
#define DEF_FINC(N, T, K, LO, HI) DEF_AMO_NOVAL_FETCH(N, T, K, LO, HI, fetch_inc)
#define DEF_INC(N, T, K, LO, HI)  DEF_AMO_NOVAL_VOID(N, T, K, LO, HI, inc)
#define DEF_FAND(N, T, K, LO, HI) DEF_AMO_VAL_FETCH(N, T, K, LO, HI, fetch_and)
#define DEF_FOR(N, T, K, LO, HI)  DEF_AMO_VAL_FETCH(N, T, K, LO, HI, fetch_or)
#define DEF_FXOR(N, T, K, LO, HI) DEF_AMO_VAL_FETCH(N, T, K, LO, HI, fetch_xor)
#define DEF_AND(N, T, K, LO, HI)  DEF_AMO_VAL_VOID(N, T, K, LO, HI, and)
#define DEF_OR(N, T, K, LO, HI)   DEF_AMO_VAL_VOID(N, T, K, LO, HI, or)
#define DEF_XOR(N, T, K, LO, HI)  DEF_AMO_VAL_VOID(N, T, K, LO, HI, xor)

T_STD(AMO_FETCH)
T_STD(DEF_SET)
T_STD(DEF_SWAP)
T_INT(DEF_AMO_CSWAP)
T_INT(DEF_FINC)
T_INT(DEF_INC)
T_INT(DEF_FADD)
T_INT(DEF_ADD)
T_BIT(DEF_FAND)
T_BIT(DEF_FOR)
T_BIT(DEF_FXOR)
T_BIT(DEF_AND)
T_BIT(DEF_OR)
T_BIT(DEF_XOR)

/* ------------------------------------------------------------------------ */
/* Public functions: keyword arguments, text signatures, statistics           */
/* ------------------------------------------------------------------------ */

/* Every public function is called through kw_call: positional calls go
 * straight to the implementation (METH_NOARGS, METH_O or METH_FASTCALL);
 * keyword arguments are put in place by the parameter names of the text
 * signature (parsed at the first keyword call). A successful call is counted
 * in the statistics of its kind (dump_stats()). */
enum { ST_NONE, ST_PUT, ST_GET, ST_AMO, ST_BARRIER, ST_SYNC, ST_QUIET, ST_FENCE, ST_COLL, ST_N };
static unsigned long long g_stats[ST_N], g_stat_bytes[2];

typedef PyObject *(*fast_fn)(PyObject *, PyObject *const *, Py_ssize_t);

typedef struct {
    const char *sig;    /* "name($module, a, b=None)" */
    void (*impl)(void); /* the implementation, of the type its flags say */
    int flags;          /* METH_NOARGS, METH_O or METH_FASTCALL */
    int kind;           /* ST_* */
    PyObject *names;    /* tuple of parameter names, or NULL before the first keyword call */
    Py_ssize_t nreq;    /* parameters without a default */
} kwinfo_t;

#define KW_MAX 12

/* The function's name (the signature up to its parenthesis), for messages. */
static const char *kw_fname(const kwinfo_t *k, char *buf, size_t size)
{
    snprintf(buf, size, "%.*s", (int)(strchr(k->sig, '(') - k->sig), k->sig);
    return buf;
}

static int kw_parse_names(kwinfo_t *k)
{
    PyObject *list = PyList_New(0);
    if (!list)
        return -1;
    const char *p = strchr(k->sig, '(') + 1;
    Py_ssize_t nreq = 0;
    int optional = 0;
    while (*p && *p != ')') {
        while (*p == ' ' || *p == ',')
            p++;
        const char *b = p;
        while (*p && *p != ',' && *p != ')' && *p != '=')
            p++;
        const char *e = p;
        while (e > b && e[-1] == ' ')
            e--;
        if (*p == '=') {
            optional = 1;
            while (*p && *p != ',' && *p != ')')
                p++;
        }
        if (e == b || *b == '$' || ((e - b) == 1 && (*b == '/' || *b == '*')))
            continue;
        PyObject *name = PyUnicode_FromStringAndSize(b, e - b);
        if (!name || PyList_Append(list, name) < 0) {
            Py_XDECREF(name);
            Py_DECREF(list);
            return -1;
        }
        PyUnicode_InternInPlace(&name);
        Py_DECREF(name);
        if (!optional)
            nreq++;
    }
    k->names = PyList_AsTuple(list);
    Py_DECREF(list);
    k->nreq = nreq;
    return k->names ? 0 : -1;
}

/* The positional array for a call with keyword arguments (skipped optional
 * parameters before a given one are None); the count, or -1. */
static Py_ssize_t kw_merge(kwinfo_t *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                           PyObject **out)
{
    if (!k->names && kw_parse_names(k) < 0)
        return -1;
    char nbuf[64];
    const char *name = kw_fname(k, nbuf, sizeof nbuf);
    Py_ssize_t np = PyTuple_GET_SIZE(k->names), nkw = PyTuple_GET_SIZE(kwnames);
    if (nargs > np || np > KW_MAX) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %zd arguments (%zd given)", name, np,
                     nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < np; i++)
        out[i] = i < nargs ? args[i] : NULL;
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, j);
        Py_ssize_t i = 0;
        while (i < np && PyTuple_GET_ITEM(k->names, i) != key)
            i++;
        if (i == np) /* not interned alike: compare the text */
            for (i = 0; i < np && PyUnicode_Compare(PyTuple_GET_ITEM(k->names, i), key); i++)
                ;
        if (i == np) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", name,
                         key);
            return -1;
        }
        if (out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%U'", name, key);
            return -1;
        }
        out[i] = args[nargs + j];
    }
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < np; i++)
        if (out[i])
            n = i + 1;
    if (n < k->nreq)
        n = k->nreq;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (out[i])
            continue;
        if (i < k->nreq) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%U' (pos %zd)", name,
                         PyTuple_GET_ITEM(k->names, i), i + 1);
            return -1;
        }
        out[i] = Py_None;
    }
    return n;
}

static void stat_count(int kind, PyObject *const *args, Py_ssize_t nargs)
{
    g_stats[kind]++;
    if ((kind == ST_PUT || kind == ST_GET) && nargs > 2 && PyLong_Check(args[2])) {
        size_t b = PyLong_AsSize_t(args[2]);
        if (b == (size_t)-1 && PyErr_Occurred())
            PyErr_Clear();
        else
            g_stat_bytes[kind - ST_PUT] += b;
    }
}

static PyObject *kw_call(kwinfo_t *k, PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames)
{
    PyObject *merged[KW_MAX];
    if (UNLIKELY(kwnames && PyTuple_GET_SIZE(kwnames))) {
        nargs = kw_merge(k, args, nargs, kwnames, merged);
        if (nargs < 0)
            return NULL;
        args = merged;
    }
    PyObject *r;
    g_lib_error[0] = 0; /* what the library says from now on is about this call */
    if (k->flags == METH_FASTCALL) {
        r = ((fast_fn)k->impl)(m, args, nargs);
    } else if (k->flags == METH_O) {
        if (UNLIKELY(nargs != 1)) {
            char nbuf[64];
            PyErr_Format(PyExc_TypeError, "%s() takes exactly one argument (%zd given)",
                         kw_fname(k, nbuf, sizeof nbuf), nargs);
            return NULL;
        }
        r = ((PyCFunction)k->impl)(m, args[0]);
    } else {
        if (UNLIKELY(nargs != 0)) {
            char nbuf[64];
            PyErr_Format(PyExc_TypeError, "%s() takes no arguments (%zd given)",
                         kw_fname(k, nbuf, sizeof nbuf), nargs);
            return NULL;
        }
        r = ((PyCFunction)k->impl)(m, NULL);
    }
    if (r && k->kind)
        stat_count(k->kind, args, nargs);
    return r;
}

/* _stats() -> dict of the counters; _reset_stats(). */
static PyObject *py__stats(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "puts", g_stats[ST_PUT],
                         "gets", g_stats[ST_GET], "put_bytes", g_stat_bytes[0], "get_bytes",
                         g_stat_bytes[1], "bytes", g_stat_bytes[0] + g_stat_bytes[1], "amos",
                         g_stats[ST_AMO], "barriers", g_stats[ST_BARRIER], "syncs",
                         g_stats[ST_SYNC], "collectives", g_stats[ST_COLL], "quiets",
                         g_stats[ST_QUIET], "fences", g_stats[ST_FENCE]);
}
static PyObject *py__reset_stats(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    memset(g_stats, 0, sizeof g_stats);
    memset(g_stat_bytes, 0, sizeof g_stat_bytes);
    Py_RETURN_NONE;
}

/* The public functions that take positional arguments in C:
 * X(name, flags, statistics kind, "($module, parameters)", "doc"). The
 * functions with METH_VARARGS | METH_KEYWORDS are in the table directly. */
/* clang-format off */
#define PUBLIC_FUNCS(X) \
    X(get_uniqueid, METH_NOARGS, ST_NONE, "($module, /)", \
      "A unique id (bytes, UNIQUEID_BYTES long) for init_attr(): make it on rank 0, ship it to " \
      "every rank.") \
    X(finalize, METH_NOARGS, ST_NONE, "($module, /)", \
      "Collective: destroys the teams the package made, reports symmetric memory never freed " \
      "(LeakWarning) and finalizes the library.") \
    X(is_initialized, METH_NOARGS, ST_NONE, "($module, /)", \
      "True between a successful init and finalize().") \
    X(cuda_device, METH_NOARGS, ST_NONE, "($module, /)", \
      "Ordinal of the CUDA device bound to ushmem on this PE (its device heap), or None.") \
    X(my_pe, METH_NOARGS, ST_NONE, "($module, /)", "This PE's number in TEAM_WORLD.") \
    X(n_pes, METH_NOARGS, ST_NONE, "($module, /)", "The number of PEs in TEAM_WORLD.") \
    X(query_thread, METH_NOARGS, ST_NONE, "($module, /)", \
      "The thread level the library provides (THREAD_*).") \
    X(pe_accessible, METH_O, ST_NONE, "($module, pe, /)", \
      "True when PE pe is reachable from this PE.") \
    X(addr_accessible, METH_FASTCALL, ST_NONE, "($module, addr, pe)", \
      "True when the symmetric object addr is reachable on PE pe.") \
    X(info_get_version, METH_NOARGS, ST_NONE, "($module, /)", \
      "The OpenSHMEM version implemented, as (major, minor).") \
    X(info_get_name, METH_NOARGS, ST_NONE, "($module, /)", "The library's name and version.") \
    X(wtime, METH_NOARGS, ST_NONE, "($module, /)", \
      "Elapsed wall-clock time in seconds (float) from an arbitrary start.") \
    X(global_exit, METH_O, ST_NONE, "($module, status)", \
      "Stops every PE of the job with exit status status.") \
    X(malloc, METH_O, ST_NONE, "($module, nbytes)", \
      "Collective: nbytes of the symmetric heap; returns the address (int). 0 bytes: None. " \
      "Free it with free() on every PE.") \
    X(calloc, METH_FASTCALL, ST_NONE, "($module, count, size)", \
      "Collective: count * size zeroed symmetric bytes; returns the address. A zero count or " \
      "size raises Error (a RuntimeError).") \
    X(align, METH_FASTCALL, ST_NONE, "($module, alignment, nbytes)", \
      "Collective: nbytes of symmetric memory at a multiple of alignment (a power of two; " \
      "otherwise Error, a RuntimeError); returns the address.") \
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
      "Unregisters everything buffer_register() registered; returns None.") \
    X(putmem, METH_FASTCALL, ST_PUT, "($module, dest, source, nbytes, pe)", \
      "Copies nbytes from source (any buffer, array, tensor or address here) to PE pe's copy " \
      "of the symmetric dest; returns when source may be reused.") \
    X(getmem, METH_FASTCALL, ST_GET, "($module, dest, source, nbytes, pe)", \
      "Copies nbytes from PE pe's copy of the symmetric source into dest (any writable " \
      "memory here); returns when the data has arrived.") \
    X(putmem_nbi, METH_FASTCALL, ST_PUT, "($module, dest, source, nbytes, pe)", \
      "putmem that may return before completion: quiet() completes it.") \
    X(getmem_nbi, METH_FASTCALL, ST_GET, "($module, dest, source, nbytes, pe)", \
      "getmem that may return before the data arrives: quiet() completes it.") \
    X(putmem_on_stream, METH_FASTCALL, ST_PUT, "($module, dest, source, nbytes, pe, stream=None)", \
      "putmem ordered on a CUDA stream (None: the legacy default stream with device memory; " \
      "host memory without a stream: now). stream: a torch/cupy stream, a handle or None.") \
    X(getmem_on_stream, METH_FASTCALL, ST_GET, "($module, dest, source, nbytes, pe, stream=None)", \
      "getmem ordered on a CUDA stream (see putmem_on_stream).") \
    X(putmem_nbi_on_stream, METH_FASTCALL, ST_PUT, \
      "($module, dest, source, nbytes, pe, stream=None)", \
      "putmem_nbi ordered on a CUDA stream; quiet_on_stream completes it.") \
    X(getmem_nbi_on_stream, METH_FASTCALL, ST_GET, \
      "($module, dest, source, nbytes, pe, stream=None)", \
      "getmem_nbi ordered on a CUDA stream; quiet_on_stream completes it.") \
    X(putmem_signal, METH_FASTCALL, ST_PUT, \
      "($module, dest, source, nbytes, sig_addr, signal, sig_op, pe)", \
      "putmem, then updates the uint64 signal word sig_addr on PE pe with signal " \
      "(sig_op SIGNAL_SET or SIGNAL_ADD) once the data is delivered.") \
    X(putmem_signal_nbi, METH_FASTCALL, ST_PUT, \
      "($module, dest, source, nbytes, sig_addr, signal, sig_op, pe)", \
      "putmem_signal that may return before completion: quiet() completes it.") \
    X(putmem_signal_on_stream, METH_FASTCALL, ST_PUT, \
      "($module, dest, source, nbytes, sig_addr, signal, sig_op, pe, stream=None)", \
      "putmem_signal ordered on a CUDA stream.") \
    X(signal_fetch, METH_O, ST_NONE, "($module, sig_addr)", \
      "The value of this PE's uint64 signal word sig_addr (an atomic read).") \
    X(signal_wait_until, METH_FASTCALL, ST_NONE, "($module, sig_addr, cmp, cmp_value)", \
      "Blocks until this PE's signal word sig_addr compares (CMP_*) true with cmp_value; " \
      "returns its value. Ctrl-C interrupts it.") \
    X(signal_wait_until_on_stream, METH_FASTCALL, ST_NONE, \
      "($module, sig_addr, cmp, cmp_value, stream=None)", \
      "signal_wait_until ordered on a CUDA stream (later work on the stream waits).") \
    X(fence, METH_NOARGS, ST_FENCE, "($module, /)", \
      "Orders this PE's puts and AMOs to each PE: earlier ones are delivered first.") \
    X(quiet, METH_NOARGS, ST_QUIET, "($module, /)", \
      "Completes every put, get and AMO this PE issued.") \
    X(barrier_all, METH_NOARGS, ST_BARRIER, "($module, /)", \
      "quiet(), then waits until every PE arrives.") \
    X(sync_all, METH_NOARGS, ST_SYNC, "($module, /)", \
      "Waits until every PE arrives (no quiet: pending puts may still be in flight).") \
    X(quiet_on_stream, METH_FASTCALL, ST_QUIET, "($module, stream=None)", \
      "quiet ordered on a CUDA stream (without a device: now).") \
    X(barrier_all_on_stream, METH_FASTCALL, ST_BARRIER, "($module, stream=None)", \
      "barrier_all ordered on a CUDA stream (without a device: now).") \
    X(sync_all_on_stream, METH_FASTCALL, ST_SYNC, "($module, stream=None)", \
      "sync_all ordered on a CUDA stream (without a device: now).") \
    X(barrier, METH_O, ST_BARRIER, "($module, team)", \
      "quiet(), then waits until every PE of team arrives. TEAM_INVALID: returns at once.") \
    X(team_sync, METH_O, ST_SYNC, "($module, team)", \
      "Waits until every PE of team arrives. TEAM_INVALID: returns at once.") \
    X(barrier_on_stream, METH_FASTCALL, ST_BARRIER, "($module, team, stream=None)", \
      "barrier(team) ordered on a CUDA stream.") \
    X(team_sync_on_stream, METH_FASTCALL, ST_SYNC, "($module, team, stream=None)", \
      "team_sync(team) ordered on a CUDA stream.") \
    X(team_my_pe, METH_O, ST_NONE, "($module, team)", \
      "This PE's number in team; -1 for TEAM_INVALID.") \
    X(team_n_pes, METH_O, ST_NONE, "($module, team)", \
      "The number of PEs in team; -1 for TEAM_INVALID.") \
    X(team_translate_pe, METH_FASTCALL, ST_NONE, "($module, src_team, src_pe, dest_team)", \
      "The number in dest_team of PE src_pe of src_team, or -1.") \
    X(team_destroy, METH_O, ST_NONE, "($module, team)", \
      "Collective over team: destroys a team made by a split. TEAM_WORLD, TEAM_SHARED and " \
      "TEAM_INVALID: a no-op.") \
    X(alltoallmem, METH_FASTCALL, ST_COLL, "($module, team, dest, source, nbytes_per_pe)", \
      "Collective: block j of source goes to block i of dest on team PE j (i: this PE).") \
    X(alltoallmem_on_stream, METH_FASTCALL, ST_COLL, \
      "($module, team, dest, source, nbytes_per_pe, stream=None)", \
      "alltoallmem ordered on a CUDA stream.") \
    X(broadcastmem, METH_FASTCALL, ST_COLL, "($module, team, dest, source, nbytes, pe_root)", \
      "Collective: nbytes of source on team PE pe_root go to dest on every team PE.") \
    X(broadcastmem_on_stream, METH_FASTCALL, ST_COLL, \
      "($module, team, dest, source, nbytes, pe_root, stream=None)", \
      "broadcastmem ordered on a CUDA stream.") \
    X(fcollectmem, METH_FASTCALL, ST_COLL, "($module, team, dest, source, nbytes)", \
      "Collective: dest gets every team PE's nbytes of source, in team order.") \
    X(fcollectmem_on_stream, METH_FASTCALL, ST_COLL, \
      "($module, team, dest, source, nbytes, stream=None)", \
      "fcollectmem ordered on a CUDA stream.") \
    X(reduce_on_stream, METH_FASTCALL, ST_COLL, \
      "($module, team, dest, source, nreduce, type, op, stream=None)", \
      "Collective reduction of nreduce elements: shmemx_<type>_<op>_reduce_on_stream, e.g. " \
      "type 'float', op 'sum' (without a device: now).")

/* Atomics: X(type, op, parameters, doc) per op (the type is spliced in). */
#define KW_WRAP(name, fl, kind, sig, doc) \
    static kwinfo_t ki_##name = {#name sig, (void (*)(void))py_##name, fl, kind, NULL, 0}; \
    static PyObject *kw_##name(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) \
    { \
        return kw_call(&ki_##name, m, a, n, k); \
    }
#define KW_ENTRY(name, fl, kind, sig, doc) \
    {#name, FN(kw_##name), METH_FASTCALL | METH_KEYWORDS, #name sig "\n--\n\n" doc},
PUBLIC_FUNCS(KW_WRAP)

#define AMO_OPS(X, N) \
    X(N, fetch, "($module, source, pe)", "Atomically reads the " #N " at source on PE pe.") \
    X(N, set, "($module, dest, value, pe)", "Atomically writes value to the " #N " at dest on PE pe.") \
    X(N, swap, "($module, dest, value, pe)", \
      "Atomically writes value to the " #N " at dest on PE pe; returns the old value.")
#define AMO_OPS_INT(X, N) \
    X(N, compare_swap, "($module, dest, cond, value, pe)", \
      "Atomically writes value to the " #N " at dest on PE pe if it equals cond; returns the " \
      "old value.") \
    X(N, fetch_inc, "($module, dest, pe)", \
      "Atomically adds 1 to the " #N " at dest on PE pe; returns the old value.") \
    X(N, inc, "($module, dest, pe)", "Atomically adds 1 to the " #N " at dest on PE pe.") \
    X(N, fetch_add, "($module, dest, value, pe)", \
      "Atomically adds value to the " #N " at dest on PE pe; returns the old value.") \
    X(N, add, "($module, dest, value, pe)", "Atomically adds value to the " #N " at dest on PE pe.")
#define AMO_OPS_BIT(X, N) \
    X(N, fetch_and, "($module, dest, value, pe)", \
      "Atomically ANDs value into the " #N " at dest on PE pe; returns the old value.") \
    X(N, fetch_or, "($module, dest, value, pe)", \
      "Atomically ORs value into the " #N " at dest on PE pe; returns the old value.") \
    X(N, fetch_xor, "($module, dest, value, pe)", \
      "Atomically XORs value into the " #N " at dest on PE pe; returns the old value.") \
    X(N, and, "($module, dest, value, pe)", "Atomically ANDs value into the " #N " at dest on PE pe.") \
    X(N, or, "($module, dest, value, pe)", "Atomically ORs value into the " #N " at dest on PE pe.") \
    X(N, xor, "($module, dest, value, pe)", "Atomically XORs value into the " #N " at dest on PE pe.")
#define AMO_WRAP(N, OP, SIG, DOC) KW_WRAP(N##_atomic_##OP, METH_FASTCALL, ST_AMO, SIG, DOC)
#define AMO_ENTRY(N, OP, SIG, DOC) KW_ENTRY(N##_atomic_##OP, METH_FASTCALL, ST_AMO, SIG, DOC)
#define AMO_STD_W(N, T, K, LO, HI) AMO_OPS(AMO_WRAP, N)
#define AMO_INT_W(N, T, K, LO, HI) AMO_OPS_INT(AMO_WRAP, N)
#define AMO_BIT_W(N, T, K, LO, HI) AMO_OPS_BIT(AMO_WRAP, N)
#define AMO_STD_E(N, T, K, LO, HI) AMO_OPS(AMO_ENTRY, N)
#define AMO_INT_E(N, T, K, LO, HI) AMO_OPS_INT(AMO_ENTRY, N)
#define AMO_BIT_E(N, T, K, LO, HI) AMO_OPS_BIT(AMO_ENTRY, N)
T_STD(AMO_STD_W)
T_INT(AMO_INT_W)
T_BIT(AMO_BIT_W)

/* ------------------------------------------------------------------------ */
/* Module                                                                     */
/* ------------------------------------------------------------------------ */

#define F_(name, flags, sig, doc) {#name, FN(py_##name), flags, #name sig "\n--\n\n" doc}
#define KW (METH_VARARGS | METH_KEYWORDS)
static PyMethodDef methods[] = {
    F_(init, KW, "($module, thread_level=None)",
       "Initializes from the launcher's environment (ushrun, torchrun, mpirun, or alone: one "
       "PE); returns the thread level provided."),
    F_(init_attr, KW, "($module, rank, nranks, uid, device=None, thread_level=None)",
       "Initializes with a unique id from get_uniqueid() on rank 0, shipped to every rank."),
    F_(create_buffer, KW, "($module, nbytes, device=None, zero=False)",
       "Collective: a SymmetricBuffer of nbytes: on the device heap when this PE has a CUDA "
       "device bound, else on the host heap (device='cpu': host memory always; device='cuda': "
       "the device heap of the bound GPU, or an error); zero=True zeroes it."),
    F_(team_split_strided, KW,
       "($module, parent, start, stride, size, config=None, config_mask=0)",
       "Collective over parent: (status, team) with the parent PEs start, start + stride, ... "
       "(size of them); PEs outside it get TEAM_INVALID."),
    F_(team_split_2d, KW,
       "($module, parent, xrange, xaxis_config=None, xaxis_mask=0, yaxis_config=None, "
       "yaxis_mask=0)",
       "Collective over parent: (status, xteam, yteam) of a 2-D grid xrange PEs wide."),
    {"_cuda_device_count", FN(py_cuda_device_count), METH_NOARGS, NULL},
    {"_allocations", FN(py_allocations), METH_NOARGS, "[(addr, nbytes, kind)] live allocations"},
    {"_owner_of", FN(py_owner_of), METH_O, NULL},
    {"_stats", FN(py__stats), METH_NOARGS, "_stats() -> dict of the call counters"},
    {"_reset_stats", FN(py__reset_stats), METH_NOARGS, "_reset_stats(): zero the counters"},
    /* device API */
    {"_dev_layout", FN(py__dev_layout), METH_NOARGS,
     "_dev_layout() -> (((name, offset, size), ...), sizeof(shmemx_dev_t))"},
    {"_dev_get", FN(py__dev_get), METH_FASTCALL, "_dev_get(team=None) -> bytes of shmemx_dev_t"},
    {"_dev_peer_bases", FN(py__dev_peer_bases), METH_FASTCALL,
     "_dev_peer_bases(team=None) -> [device heap base of each team PE as mapped here, or 0]"},
    {"_dev_why", FN(py__dev_why), METH_NOARGS, "_dev_why() -> str or None (shmemx_dev_why)"},
    PUBLIC_FUNCS(KW_ENTRY)
    T_STD(AMO_STD_E)
    T_INT(AMO_INT_E)
    T_BIT(AMO_BIT_E)
    {NULL, NULL, 0, NULL},
};
/* clang-format on */

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    "ushmem._ushmem",
    "CPython binding of libushmem (see the ushmem package for the documented API).",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

static int add_int(PyObject *m, const char *name, long v)
{
    return PyModule_AddIntConstant(m, name, v);
}

PyMODINIT_FUNC PyInit__ushmem(void)
{
    /* The interpreter's .data/.bss must not be remapped onto shared memory at
     * init (pointless for Python, unsafe with torch's threads running). */
    setenv("USHMEM_STATIC_DATA", "0", 0);

    if (PyType_Ready(&SymBufType) < 0 || PyType_Ready(&TeamType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    ushmemi_error_hook = lib_error_hook;
    if (PyModule_AddStringConstant(m, "__version__", USHMEM_VERSION_STRING) < 0)
        goto fail;
    PyObject *dict = Py_BuildValue("{s:i,s:s}", "code", ERR_INVALID, "message", "");
    Error = dict ? PyErr_NewExceptionWithDoc("ushmem.Error",
                                             "An OpenSHMEM call failed or was refused: .code "
                                             "(ushmem.ERR_*) and .message say why.",
                                             PyExc_RuntimeError, dict)
                 : NULL;
    Py_XDECREF(dict);
    LeakWarning = PyErr_NewExceptionWithDoc(
        "ushmem.LeakWarning",
        "Symmetric memory was garbage-collected without free(), or was still allocated at "
        "finalize().",
        PyExc_UserWarning, NULL);
    g_teams = PyList_New(0);
    g_team_world = team_new(SHMEM_TEAM_WORLD, "TEAM_WORLD", 0);
    g_team_shared = team_new(SHMEM_TEAM_SHARED, "TEAM_SHARED", 0);
    g_team_invalid = team_new(SHMEM_TEAM_INVALID, "TEAM_INVALID", 0);
    if (!Error || !LeakWarning || !g_teams || !g_team_world || !g_team_shared || !g_team_invalid)
        goto fail;
    if (PyModule_AddObjectRef(m, "Error", Error) < 0 ||
        PyModule_AddObjectRef(m, "LeakWarning", LeakWarning) < 0 ||
        PyModule_AddObjectRef(m, "SymmetricBuffer", (PyObject *)&SymBufType) < 0 ||
        PyModule_AddObjectRef(m, "Team", (PyObject *)&TeamType) < 0 ||
        PyModule_AddObjectRef(m, "TEAM_WORLD", (PyObject *)g_team_world) < 0 ||
        PyModule_AddObjectRef(m, "TEAM_SHARED", (PyObject *)g_team_shared) < 0 ||
        PyModule_AddObjectRef(m, "TEAM_INVALID", (PyObject *)g_team_invalid) < 0 ||
        PyModule_AddObjectRef(m, "_live_teams", g_teams) < 0)
        goto fail;
#define ADD_ERR(name, val, msg) add_int(m, #name, val) ||
    if (ERR_TABLE(ADD_ERR) 0)
        goto fail;
#undef ADD_ERR
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
    if (add_dev_constants(m))
        goto fail;
    refresh_init_cache();
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
