/* ushmem._ushmem: RMA, signals, ordering and synchronization of all PEs, and
 * the atomics. */
#include "_ushmem.h"

#include <sched.h>

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
    if (upy_as_size(nobj, &n, fn, "nbytes") || upy_check_pe(peobj, &pe, fn) ||
        upy_parse_stream(stream, &st, fn) || upy_check_reach(pe, fn))
        return NULL;
    if (upy_span_get(dobj, &d, !is_put, fn, "dest"))
        return NULL;
    if (upy_span_get(sobj, &s, 0, fn, "source")) {
        span_release(&d);
        return NULL;
    }
    int bad = is_put ? upy_check_sym_span(&d, n, fn, "dest") ||
                           upy_check_local_span(&s, n, fn, "source") ||
                           upy_check_sym_mapped(&d, pe, fn, "dest")
                     : upy_check_local_span(&d, n, fn, "dest") ||
                           upy_check_sym_span(&s, n, fn, "source") ||
                           upy_check_sym_mapped(&s, pe, fn, "source");
    if (!bad && stream && upy_g.dev >= 0) {
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
        if (upy_check_nargs(nargs, 4, 4, #name "(dest, source, nbytes, pe)"))                      \
            return NULL;                                                                           \
        return rma(op, args[0], args[1], args[2], args[3], NULL, #name);                           \
    }                                                                                              \
    static PyObject *py_##name##_on_stream(PyObject *self, PyObject *const *args,                  \
                                           Py_ssize_t nargs)                                       \
    {                                                                                              \
        (void)self;                                                                                \
        if (upy_check_nargs(nargs, 4, 5, #name "_on_stream(dest, source, nbytes, pe, stream)"))    \
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
    if (upy_span_get(o, &s, 0, fn, "sig_addr"))
        return -1;
    span_release(&s);
    if (upy_check_sym_span(&s, sizeof(uint64_t), fn, "sig_addr"))
        return -1;
    if ((uintptr_t)s.sym % sizeof(uint64_t))
        return upy_err(ERR_INVALID, "%s: sig_addr %p is not 8-byte aligned", fn, (void *)s.sym);
    if (pe >= 0 && upy_check_sym_mapped(&s, pe, fn, "sig_addr"))
        return -1;
    *out = (uint64_t *)s.sym;
    if (dev)
        *dev = s.device >= 0;
    return 0;
}

static int check_sig_op(PyObject *o, int *op, const char *fn)
{
    if (upy_as_int(o, op, fn, "sig_op"))
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
    if (upy_as_int(o, cmp, fn, "cmp"))
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
    if (upy_as_size(args[2], &n, fn, "nbytes") || upy_check_pe(args[6], &pe, fn) ||
        upy_parse_stream(stream, &st, fn) || upy_check_reach(pe, fn) ||
        upy_as_u64(args[4], &signal, fn, "signal") || check_sig_op(args[5], &op, fn))
        return NULL;
    if (resolve_sig(args[3], &sig, NULL, pe, fn))
        return NULL;
    if (upy_span_get(args[0], &d, 0, fn, "dest"))
        return NULL;
    if (upy_span_get(args[1], &s, 0, fn, "source")) {
        span_release(&d);
        return NULL;
    }
    int bad = upy_check_sym_span(&d, n, fn, "dest") || upy_check_local_span(&s, n, fn, "source") ||
              upy_check_sym_mapped(&d, pe, fn, "dest");
    if (!bad && stream && upy_g.dev >= 0) {
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
    if (upy_check_nargs(nargs, 7, 7, "putmem_signal" PUT_SIGNAL_SIG ")"))
        return NULL;
    return put_signal(args, NULL, 0, "putmem_signal");
}
static PyObject *py_putmem_signal_nbi(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (upy_check_nargs(nargs, 7, 7, "putmem_signal_nbi" PUT_SIGNAL_SIG ")"))
        return NULL;
    return put_signal(args, NULL, 1, "putmem_signal_nbi");
}
static PyObject *py_putmem_signal_on_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (upy_check_nargs(nargs, 7, 8, "putmem_signal_on_stream" PUT_SIGNAL_SIG ", stream)"))
        return NULL;
    return put_signal(args, nargs > 7 ? args[7] : Py_None, 0, "putmem_signal_on_stream");
}

static PyObject *py_signal_fetch(PyObject *self, PyObject *arg)
{
    (void)self;
    uint64_t *sig = NULL;
    int dev = 0;
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
    if (require_init(fn) || upy_parse_stream(stream, &st, fn) ||
        resolve_sig(args[0], &sig, &dev, -1, fn) || check_cmp(args[1], &cmp, fn) ||
        upy_as_u64(args[2], &value, fn, "cmp_value"))
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
    if (upy_check_nargs(nargs, 3, 3, "signal_wait_until(sig_addr, cmp, cmp_value)"))
        return NULL;
    return signal_wait(args, NULL, "signal_wait_until");
}

/* signal_op_on_stream(sig_addr, signal, sig_op, pe, stream=None): the signal
 * alone, in stream order (shmemx_signal_op_on_stream); with no stream and
 * host memory, at once. */
static PyObject *py_signal_op_on_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    static const char fn[] = "signal_op_on_stream";
    (void)self;
    int pe, op;
    uint64_t signal, *sig;
    void *st = NULL;
    if (upy_check_nargs(nargs, 4, 5, "signal_op_on_stream(sig_addr, signal, sig_op, pe, stream)"))
        return NULL;
    PyObject *stream = nargs > 4 ? args[4] : Py_None;
    if (require_init(fn) || upy_check_pe(args[3], &pe, fn) || upy_parse_stream(stream, &st, fn) ||
        upy_check_reach(pe, fn) || upy_as_u64(args[1], &signal, fn, "signal") ||
        check_sig_op(args[2], &op, fn) || resolve_sig(args[0], &sig, NULL, pe, fn))
        return NULL;
    if (st && upy_g.dev < 0) {
        PyErr_Format(PyExc_ValueError, "%s: a CUDA stream, but no GPU is bound to PE %d", fn,
                     upy_g.me);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS;
    shmemx_signal_op_on_stream(sig, signal, op, pe, (shmemx_stream_t)st);
    Py_END_ALLOW_THREADS;
    Py_RETURN_NONE;
}

static PyObject *py_signal_wait_until_on_stream(PyObject *self, PyObject *const *args,
                                                Py_ssize_t nargs)
{
    (void)self;
    if (upy_check_nargs(nargs, 3, 4,
                        "signal_wait_until_on_stream(sig_addr, cmp, cmp_value, stream)"))
        return NULL;
    return signal_wait(args, nargs > 3 ? args[3] : Py_None, "signal_wait_until_on_stream");
}

/* ------------------------------------------------------------------------ */
/* Ordering and synchronization                                               */
/* ------------------------------------------------------------------------ */

/* fence and quiet return at once; barrier_all and sync_all wait for the other
 * PEs, with the GIL released. */
#define DEF_NOARG(name, call, blocks)                                                              \
    static PyObject *py_##name(PyObject *self, PyObject *unused)                                   \
    {                                                                                              \
        (void)self;                                                                                \
        (void)unused;                                                                              \
        if (require_init(#name))                                                                   \
            return NULL;                                                                           \
        if (blocks) {                                                                              \
            Py_BEGIN_ALLOW_THREADS;                                                                \
            call();                                                                                \
            Py_END_ALLOW_THREADS;                                                                  \
        } else {                                                                                   \
            call();                                                                                \
        }                                                                                          \
        Py_RETURN_NONE;                                                                            \
    }
DEF_NOARG(fence, shmem_fence, 0)
DEF_NOARG(quiet, shmem_quiet, 0)
DEF_NOARG(barrier_all, shmem_barrier_all, 1)
DEF_NOARG(sync_all, shmem_sync_all, 1)

/* With a device bound, the C stream-ordered routine (a NULL stream is the
 * legacy default stream there: the barrier is enqueued, not waited for);
 * without one, only None is accepted and the host routine runs now. */
#define DEF_STREAM0(name, cname, hostcall, heaps)                                                  \
    static PyObject *py_##name##_on_stream(PyObject *self, PyObject *const *args,                  \
                                           Py_ssize_t nargs)                                       \
    {                                                                                              \
        static const char fn[] = #name "_on_stream";                                               \
        void *st;                                                                                  \
        if (upy_check_nargs(nargs, 0, 1, #name "_on_stream(stream=None)") || require_init(fn) ||   \
            upy_parse_stream(nargs ? args[0] : NULL, &st, fn))                                     \
            return NULL;                                                                           \
        if (upy_g.dev < 0)                                                                         \
            return hostcall(self, NULL);                                                           \
        if (heaps && upy_check_team_mapped(SHMEM_TEAM_WORLD, NULL, NULL, 1, fn))                   \
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
    if (upy_as_longlong(o, &v, fn, what))
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
    if (upy_as_u64(o, &v, fn, what))
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
    if (upy_check_pe(peobj, pe, fn) || upy_check_reach(*pe, fn) ||
        upy_span_get(o, &s, 0, fn, "dest"))
        return -1;
    span_release(&s);
    if (upy_check_sym_span(&s, size, fn, "dest"))
        return -1;
    if ((uintptr_t)s.sym % size)
        return upy_err(ERR_INVALID, "%s: dest %p is not %zu-byte aligned", fn, (void *)s.sym, size);
    if (upy_check_sym_mapped(&s, *pe, fn, "dest"))
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
        if (upy_check_nargs(nargs, 2, 2, #N "_atomic_fetch(source, pe)") ||                        \
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
        if (upy_check_nargs(nargs, 3, 3, #N "_atomic_" #OP "(dest, value, pe)") ||                 \
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
        if (upy_check_nargs(nargs, 3, 3, #N "_atomic_" #OP "(dest, value, pe)") ||                 \
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
        if (upy_check_nargs(nargs, 2, 2, #N "_atomic_" #OP "(dest, pe)") ||                        \
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
        if (upy_check_nargs(nargs, 2, 2, #N "_atomic_" #OP "(dest, pe)") ||                        \
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
        if (upy_check_nargs(nargs, 4, 4, #N "_atomic_compare_swap(dest, cond, value, pe)") ||      \
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

/* The public functions here, called through upy_kw_call:
 * X(name, flags, statistics kind, "($module, parameters)", "doc"). */
/* clang-format off */
#define RMA_FUNCS(X) \
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
    X(signal_op_on_stream, METH_FASTCALL, ST_NONE, \
      "($module, sig_addr, signal, sig_op, pe, stream=None)", \
      "Updates the uint64 signal word sig_addr on PE pe with signal (SIGNAL_SET or " \
      "SIGNAL_ADD) in the order of a CUDA stream: after the stream's earlier work is " \
      "visible at pe. Without a stream on host memory: at once.") \
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
      "sync_all ordered on a CUDA stream (without a device: now).")
/* clang-format on */
RMA_FUNCS(KW_WRAP)

/* Atomics: X(type, op, parameters, doc) per op (the type is spliced in). */
/* clang-format off */
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
/* clang-format on */
T_STD(AMO_STD_W)
T_INT(AMO_INT_W)
T_BIT(AMO_BIT_W)

/* clang-format off */
static PyMethodDef rma_methods[] = {
    RMA_FUNCS(KW_ENTRY)
    T_STD(AMO_STD_E)
    T_INT(AMO_INT_E)
    T_BIT(AMO_BIT_E)
    {NULL, NULL, 0, NULL},
};
/* clang-format on */

int upy_rma_add(PyObject *m)
{
    return PyModule_AddFunctions(m, rma_methods);
}
