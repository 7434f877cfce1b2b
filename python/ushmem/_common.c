/* ushmem._ushmem, common to every binding file: errors, the library state seen
 * from Python (with the calls in progress), the CUDA driver queries, argument
 * conversion, and the keyword-argument / statistics wrapper of the public
 * functions. */
#include "_ushmem.h"

#include <dlfcn.h>

/* getattr that treats a missing attribute as "not there" (1 found, 0 not, -1 error). */
int upy_lookup_attr(PyObject *o, const char *name, PyObject **out)
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

static PyObject *Error; /* ushmem.Error(RuntimeError): .code, .message */
PyObject *upy_LeakWarning;

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

addr_txt_t upy_addr_txt(const void *p)
{
    addr_txt_t t;
    if (p)
        snprintf(t.s, sizeof t.s, "0x%" PRIxPTR, (uintptr_t)p);
    else
        snprintf(t.s, sizeof t.s, "NULL");
    return t;
}

/* Raise ushmem.Error(message) with .code set; returns -1 for `return upy_err(...)`. */
int upy_err(int code, const char *fmt, ...)
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

int upy_err_not_init(const char *fn)
{
    if (upy_g.finalizing)
        return upy_err(ERR_STATE, "%s: ushmem is being finalized (by another thread)", fn);
    return upy_err(ERR_STATE,
                   "%s: ushmem is not initialized (call ushmem.init(), init_with_torch(), "
                   "init_with_mpi() or init_attr() first)",
                   fn);
}

int upy_err_no_cuda(const char *fn, const char *what)
{
    return upy_err(ERR_UNSUPPORTED,
                   "%s: %s needs a CUDA device bound to ushmem on this PE, and none is (pass "
                   "device= to init / init_attr / init_with_torch / init_with_mpi, or set "
                   "USHMEM_DEVICE or LOCAL_RANK before init; USHMEM_TRANSPORTS, if set, must "
                   "include cuda)",
                   fn, what);
}

/* The library's error lines (src/core/error.c): the last one this thread saw
 * goes into the exception of the call that failed, instead of only to stderr. */
extern void (*ushmemi_error_hook)(const char *line);
_Thread_local char upy_lib_error[512];

static void lib_error_hook(const char *line)
{
    const char *p = strncmp(line, "ushmem: ", 8) ? line : line + 8;
    snprintf(upy_lib_error, sizeof upy_lib_error, "%s", p);
}

/* " (library: <its line>)", or "" when it printed none since the last call. */
const char *upy_lib_reason(char *buf, size_t size)
{
    if (!upy_lib_error[0])
        return "";
    snprintf(buf, size, "; the library says: %s", upy_lib_error);
    upy_lib_error[0] = 0;
    return buf;
}

/* A C status (0 or negative) to an exception. */
int upy_check_status(int rc, const char *fn)
{
    if (rc == 0)
        return 0;
    char why[600];
    return upy_err(rc, "%s failed with status %d (%s)%s", fn, rc,
                   rc >= -11 ? err_name(rc) : "library error", upy_lib_reason(why, sizeof why));
}

/* A status of a standard int-returning routine (team splits, team_sync,
 * collectives): the library returns its internal negative codes there, of
 * which only "invalid argument" (-1) and "out of memory" (-2) are expected. */
int upy_check_std_status(int rc, const char *fn)
{
    if (rc == 0)
        return 0;
    int code = rc == -2 ? ERR_NOMEM : ERR_INVALID;
    char why[600];
    return upy_err(code, "%s failed with status %d (%s)%s", fn, rc, err_name(code),
                   upy_lib_reason(why, sizeof why));
}

/* ------------------------------------------------------------------------ */
/* Library state seen from Python                                             */
/* ------------------------------------------------------------------------ */

upy_state_t upy_g = {.gen = 1, .me = -1, .npes = -1, .dev = -1};

void upy_refresh_init_cache(void)
{
    if (shmem_query_initialized()) {
        upy_g.me = shmem_my_pe();
        upy_g.npes = shmem_n_pes();
    } else {
        upy_g.me = upy_g.npes = -1;
    }
}

/* ------------------------------------------------------------------------ */
/* CUDA: the bound device and a few driver queries                           */
/* ------------------------------------------------------------------------ */

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
int upy_mem_device(const void *p)
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
 * look at what came back. A device block is kept for peer-mapping checks.
 * Also records where the heaps' local parts lie. */
void upy_probe_device(void)
{
    upy_g.dev = -1;
    upy_g.dev_probe = NULL;
    void *p;
    Py_BEGIN_ALLOW_THREADS;
    p = shmem_malloc_with_hints(1, SHMEMX_MALLOC_DEVICE);
    int d = p ? upy_mem_device(p) : -1;
    if (d >= 0) {
        upy_g.dev = d;
        upy_g.dev_probe = p;
    } else if (p) {
        shmem_free(p);
    }
    Py_END_ALLOW_THREADS;
    /* where the heaps' local parts lie (peers' local blocks are accepted there) */
    for (int h = 0; h < 2; h++) {
        long hints = h ? SHMEMX_MALLOC_DEVICE : SHMEMX_MALLOC_HOST;
        size_t off = 0, size = 0;
        char *base;
        upy_g.local_lo[h] = upy_g.local_hi[h] = 0;
        if ((h && upy_g.dev < 0) || shmemx_heap_local_part(hints, &off, &size) != 0 || !size ||
            !(base = shmemx_heap_addr(off, hints)))
            continue;
        upy_g.local_lo[h] = (uintptr_t)base;
        upy_g.local_hi[h] = (uintptr_t)base + size;
    }
}

/* The stream argument of the _on_stream forms: None -> NULL (C's meaning: the
 * legacy default stream for device memory, "now" for host memory), an int
 * handle (1 and 2 are CUDA's legacy and per-thread default streams), or an
 * object with __cuda_stream__(), .cuda_stream (torch.cuda.Stream), .ptr
 * (cupy) or .handle. A non-NULL stream needs a bound device. */
int upy_parse_stream(PyObject *o, void **out, const char *fn)
{
    *out = NULL;
    if (o == NULL || o == Py_None)
        return 0;
    PyObject *h = NULL;
    if (PyLong_Check(o)) {
        h = Py_NewRef(o);
    } else {
        PyObject *m;
        int r = upy_lookup_attr(o, "__cuda_stream__", &m);
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
                if (upy_lookup_attr(o, names[i], &h) < 0)
                    return -1;
        }
        if (h && !PyLong_Check(h) && h != Py_None) { /* ctypes.c_void_p and the like */
            PyObject *v;
            int r2 = upy_lookup_attr(h, "value", &v);
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
    if (p && upy_g.dev < 0)
        return upy_err_no_cuda(fn, "a CUDA stream");
    *out = p;
    return 0;
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

/* ------------------------------------------------------------------------ */
/* Argument conversion                                                        */
/* ------------------------------------------------------------------------ */

int upy_as_longlong(PyObject *o, long long *out, const char *fn, const char *what)
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

int upy_as_int(PyObject *o, int *out, const char *fn, const char *what)
{
    long long v;
    if (upy_as_longlong(o, &v, fn, what))
        return -1;
    if (v < INT_MIN || v > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: %s %lld is out of range", fn, what, v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int upy_as_size(PyObject *o, size_t *out, const char *fn, const char *what)
{
    long long v;
    if (upy_as_longlong(o, &v, fn, what))
        return -1;
    if (v < 0) {
        PyErr_Format(PyExc_ValueError, "%s: %s must be >= 0, got %lld", fn, what, v);
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

int upy_as_u64(PyObject *o, uint64_t *out, const char *fn, const char *what)
{
    if (!PyLong_Check(o)) {
        PyObject *i = PyNumber_Index(o);
        if (!i) {
            PyErr_Format(PyExc_TypeError, "%s: %s must be an integer, not %.100s", fn, what,
                         Py_TYPE(o)->tp_name);
            return -1;
        }
        int rc = upy_as_u64(i, out, fn, what);
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

/* An int taken as an address (local or symmetric): bools, negative ints and
 * values past the user address space are refused here, before any code
 * dereferences them. */
int upy_as_address(PyObject *o, void **out, const char *fn, const char *what)
{
    if (PyBool_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: %s is a bool (%R), not an address", fn, what, o);
        return -1;
    }
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be an int address, not %.100s", fn, what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow < 0 || (!overflow && v < 0)) {
        PyErr_Format(PyExc_ValueError, "%s: %s: address %R is negative", fn, what, o);
        return -1;
    }
    unsigned long long u = (unsigned long long)v;
    if (overflow) {
        u = PyLong_AsUnsignedLongLong(o);
        if (u == ULLONG_MAX && PyErr_Occurred()) {
            PyErr_Clear(); /* past 2**64 - 1: refused below alike */
            u = ULLONG_MAX;
        }
    }
    if (u >= USER_ADDR_END) {
        PyErr_Format(PyExc_ValueError,
                     "%s: %s: %R is not an address of this process (past the user address "
                     "space)",
                     fn, what, o);
        return -1;
    }
    *out = (void *)(uintptr_t)u;
    return 0;
}

/* A PE number valid for this job and reachable from this process. */
int upy_check_pe(PyObject *o, int *pe, const char *fn)
{
    long long v;
    if (upy_as_longlong(o, &v, fn, "pe"))
        return -1;
    if (!initialized())
        return upy_err_not_init(fn);
    if (v < 0 || v >= upy_g.npes)
        return upy_err(ERR_BADPE, "%s: PE %lld is out of range (n_pes is %d)", fn, v, upy_g.npes);
    *pe = (int)v;
    return 0;
}

int upy_check_nargs(Py_ssize_t nargs, Py_ssize_t lo, Py_ssize_t hi, const char *sig)
{
    if (nargs >= lo && nargs <= hi)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s: takes %zd%s%s arguments (%zd given)", sig, lo,
                 hi > lo ? " to " : "", hi > lo ? "more" : "", nargs);
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Public functions: keyword arguments, text signatures, statistics           */
/* ------------------------------------------------------------------------ */

static unsigned long long g_stats[ST_N], g_stat_bytes[2];

typedef PyObject *(*fast_fn)(PyObject *, PyObject *const *, Py_ssize_t);

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

PyObject *upy_kw_call(kwinfo_t *k, PyObject *m, PyObject *const *args, Py_ssize_t nargs,
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
    call_rec_t rec;
    upy_lib_error[0] = 0; /* what the library says from now on is about this call */
    if (k->flags == METH_FASTCALL) {
        call_enter(&rec, k->sig);
        r = ((fast_fn)k->impl)(m, args, nargs);
        call_leave(&rec);
    } else if (k->flags == METH_O) {
        if (UNLIKELY(nargs != 1)) {
            char nbuf[64];
            PyErr_Format(PyExc_TypeError, "%s() takes exactly one argument (%zd given)",
                         kw_fname(k, nbuf, sizeof nbuf), nargs);
            return NULL;
        }
        call_enter(&rec, k->sig);
        r = ((PyCFunction)k->impl)(m, args[0]);
        call_leave(&rec);
    } else {
        if (UNLIKELY(nargs != 0)) {
            char nbuf[64];
            PyErr_Format(PyExc_TypeError, "%s() takes no arguments (%zd given)",
                         kw_fname(k, nbuf, sizeof nbuf), nargs);
            return NULL;
        }
        call_enter(&rec, k->sig);
        r = ((PyCFunction)k->impl)(m, NULL);
        call_leave(&rec);
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

/* clang-format off */
static PyMethodDef common_methods[] = {
    {"_cuda_device_count", FN(py_cuda_device_count), METH_NOARGS, NULL},
    {"_stats", FN(py__stats), METH_NOARGS, "_stats() -> dict of the call counters"},
    {"_reset_stats", FN(py__reset_stats), METH_NOARGS, "_reset_stats(): zero the counters"},
    {NULL, NULL, 0, NULL},
};
/* clang-format on */

int upy_common_add(PyObject *m)
{
    PyObject *dict = Py_BuildValue("{s:i,s:s}", "code", ERR_INVALID, "message", "");
    Error = dict ? PyErr_NewExceptionWithDoc("ushmem.Error",
                                             "An OpenSHMEM call failed or was refused: .code "
                                             "(ushmem.ERR_*) and .message say why.",
                                             PyExc_RuntimeError, dict)
                 : NULL;
    Py_XDECREF(dict);
    upy_LeakWarning = PyErr_NewExceptionWithDoc(
        "ushmem.LeakWarning",
        "Symmetric memory was garbage-collected without free(), or was still allocated at "
        "finalize().",
        PyExc_UserWarning, NULL);
    if (!Error || !upy_LeakWarning || PyModule_AddObjectRef(m, "Error", Error) < 0 ||
        PyModule_AddObjectRef(m, "LeakWarning", upy_LeakWarning) < 0)
        return -1;
#define ADD_ERR(name, val, msg) PyModule_AddIntConstant(m, #name, val) < 0 ||
    if (ERR_TABLE(ADD_ERR) 0)
        return -1;
#undef ADD_ERR
    ushmemi_error_hook = lib_error_hook;
    upy_refresh_init_cache();
    return PyModule_AddFunctions(m, common_methods);
}
