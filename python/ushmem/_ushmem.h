/* ushmem._ushmem: the CPython binding of libushmem, in these files:
 *
 *   _ushmem.c    the module: constants, and each file's functions added to it
 *   _common.c    errors, the library state seen from Python, the calls in
 *                progress, CUDA driver queries, argument conversion, and the
 *                keyword-argument / statistics wrapper of public functions
 *   _memory.c    the table of live allocations, memory management
 *   _symbuf.c    SymmetricBuffer: allocation, views, free, the buffer
 *                protocol, the array interfaces and DLPack
 *   _span.c      resolving and checking memory arguments
 *   _lifetime.c  init, finalize (and the heap kept for what outlives it), queries
 *   _rma.c       RMA, signals, ordering and synchronization, atomics
 *   _teams.c     teams and the collectives
 *   _device.c    the device API's handle
 *   _local.c     local blocks: malloc_local, free_local, heap_offset, heap_addr,
 *                and which addresses lie in a heap's local part
 *   _capi.c      the C API table for other extensions (ushmem_capi.h), as
 *                the capsule _C_API
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
 * *local* memory are the caller's responsibility, as in C, once they pass the
 * checks of upy_as_address).
 *
 * Symmetric allocations made through this module are kept in a sorted table
 * (address, size, owner): it is what makes remote-range checks exact (the
 * internal region at the start of the heap, freed blocks and ranges that run
 * past an allocation are all refused), and what finalize() reports as leaks.
 * The one exception is the local part of a heap (local blocks, _local.c):
 * which of a peer's blocks there are live only the peer knows, so ranges
 * inside it are accepted as they stand.
 *
 * Device (CUDA) memory: when the library has a CUDA device bound (found out
 * once, collectively, at init: see upy_probe_device), create_buffer()
 * allocates on its device heap unless device='cpu' asks for host memory, and
 * so do malloc, calloc and align (rocshmem4py's buffers and raw allocations
 * are device memory), device memory is accepted wherever the C API accepts
 * it, and the _on_stream forms call the C shmemx_*_on_stream routines with the
 * caller's stream. The CUDA driver is never linked: pointer queries go through
 * the libcuda.so.1 the library loaded. Without a bound device, device memory
 * and non-NULL streams are refused with ERR_UNSUPPORTED.
 *
 * Names shared between these files start with upy_ (the library's own are
 * ushmemi_); everything else is static to its file. The extension's symbols
 * are hidden: only PyInit__ushmem is exported (_ushmem.map). */
#ifndef USHMEM_PYTHON_USHMEM_H
#define USHMEM_PYTHON_USHMEM_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <shmem.h>
#include <shmemx.h>

#define FN(f)             ((PyCFunction)(void (*)(void))(f))
#define LIKELY(x)         __builtin_expect(!!(x), 1)
#define UNLIKELY(x)       __builtin_expect(!!(x), 0)
#define GIL_RELEASE_BYTES ((size_t)64 << 10) /* copies this large drop the GIL */

#if PY_VERSION_HEX < 0x030D0000
#define Py_IsFinalizing _Py_IsFinalizing
#endif

/* ---- Errors (_common.c) ---- */

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

extern PyObject *upy_LeakWarning; /* ushmem.LeakWarning(UserWarning) */

/* An address for messages, as %s: PyUnicode_FromFormat's %p puts "0x" before
 * whatever the C library prints, and glibc prints NULL as "(nil)" ("0x(nil)"). */
typedef struct {
    char s[24];
} addr_txt_t;
addr_txt_t upy_addr_txt(const void *p);

/* Raise ushmem.Error(message) with .code set; returns -1 for `return upy_err(...)`. */
int upy_err(int code, const char *fmt, ...);
int upy_err_not_init(const char *fn);
int upy_err_no_cuda(const char *fn, const char *what);

/* The library's last error line on this thread (what upy_lib_reason() adds to
 * an exception); cleared before each public call. */
extern _Thread_local char upy_lib_error[512];
const char *upy_lib_reason(char *buf, size_t size);
int upy_check_status(int rc, const char *fn);
int upy_check_std_status(int rc, const char *fn);

/* ---- Library state seen from Python (_common.c) ---- */

/* A call in progress: its slot in upy_g.call_sig (-1: past the table,
 * counted only). Slots rather than a list of these records: a global
 * pointing into a caller's stack is what compilers warn about. */
typedef struct {
    int slot;
} call_rec_t;
#define UPY_CALL_SLOTS 64

typedef struct {
    /* Bumped at every finalize: buffers and teams of an older generation are
     * dead even if the library is initialized again. */
    unsigned long gen;
    int me, npes;   /* cached while initialized (-1 otherwise, and during finalize) */
    int finalizing; /* finalize() is running (it releases the GIL) */
    /* The calls in progress in this process, any thread. A call may release
     * the GIL (waits, barriers, large copies) or run Python code while it
     * resolves its arguments (tensor methods), and another thread may then
     * call finalize(): the library would go, and with it the heap the call
     * still uses (the C library ends the process when a call finds it
     * finalized). So finalize() refuses while any other call is in progress
     * here, naming it. Every public function is registered by upy_kw_call;
     * the others that reach the library (init, create_buffer, team splits,
     * SymmetricBuffer.free, Team methods) register themselves. The list is
     * guarded by the GIL: a record is added and removed with it held.
     * call_sig: "name(...)" or "name" per slot, NULL when free. */
    const char *call_sig[UPY_CALL_SLOTS];
    int ncalls;
    /* The CUDA device the library bound on this PE (-1: none), and one live
     * device-heap address (for "is PE k's device heap mapped here" checks).
     * Set by upy_probe_device() after every successful init, cleared at
     * finalize. */
    int dev;
    void *dev_probe;
    /* The local parts of the host [0] and device [1] heaps, as address ranges
     * [lo, hi) (both 0: none), from shmemx_heap_local_part after every init. */
    uintptr_t local_lo[2], local_hi[2];
    Py_ssize_t exports; /* live buffer-protocol / DLPack exports of all buffers */
} upy_state_t;
extern upy_state_t upy_g;

static inline int initialized(void)
{
    return upy_g.npes > 0;
}

static inline int require_init(const char *fn)
{
    if (LIKELY(initialized()))
        return 0;
    return upy_err_not_init(fn);
}

void upy_refresh_init_cache(void);

static inline void call_enter(call_rec_t *c, const char *sig)
{
    c->slot = -1;
    upy_g.ncalls++;
    for (int i = 0; i < UPY_CALL_SLOTS; i++)
        if (!upy_g.call_sig[i]) {
            upy_g.call_sig[i] = sig;
            c->slot = i;
            return;
        }
}

static inline void call_leave(call_rec_t *c)
{
    upy_g.ncalls--;
    if (c->slot >= 0)
        upy_g.call_sig[c->slot] = NULL;
}

/* ---- CUDA (_common.c) ---- */

int upy_mem_device(const void *p);
void upy_probe_device(void);
int upy_parse_stream(PyObject *o, void **out, const char *fn);

/* Does this PE reach PE pe's device heap: mapped here, or through the proxy
 * (another host)? Stream-ordered barriers and stream collectives need every
 * member's. (No device heap: no route.) */
static inline int dev_heap_reached(int pe)
{
    return shmemx_device_route(pe) > 0;
}

/* ---- Argument conversion (_common.c) ---- */

/* The end of the user address space: no process maps anything at or above it
 * (x86-64 with 5-level paging and RISC-V Sv57 reach 2**56; AArch64, POWER and
 * 4-level x86-64 stay below), and the kernel's half starts higher still. */
#if UINTPTR_MAX > 0xffffffffu
#define USER_ADDR_END ((uintptr_t)1 << 56)
#else
#define USER_ADDR_END UINTPTR_MAX
#endif
/* Addresses below this are never mapped (the kernel's mmap_min_addr is at
 * least one page): a small int is a mistake, not memory. */
#define NULL_PAGE_END ((uintptr_t)4096)

int upy_lookup_attr(PyObject *o, const char *name, PyObject **out);
int upy_as_longlong(PyObject *o, long long *out, const char *fn, const char *what);
int upy_as_int(PyObject *o, int *out, const char *fn, const char *what);
int upy_as_size(PyObject *o, size_t *out, const char *fn, const char *what);
int upy_as_u64(PyObject *o, uint64_t *out, const char *fn, const char *what);
int upy_as_address(PyObject *o, void **out, const char *fn, const char *what);
int upy_check_pe(PyObject *o, int *pe, const char *fn);
int upy_check_nargs(Py_ssize_t nargs, Py_ssize_t lo, Py_ssize_t hi, const char *sig);

/* ---- Public functions: keyword arguments, statistics (_common.c) ---- */

/* Every public function is called through upy_kw_call: positional calls go
 * straight to the implementation (METH_NOARGS, METH_O or METH_FASTCALL);
 * keyword arguments are put in place by the parameter names of the text
 * signature (parsed at the first keyword call). A successful call is counted
 * in the statistics of its kind (dump_stats()). */
enum { ST_NONE, ST_PUT, ST_GET, ST_AMO, ST_BARRIER, ST_SYNC, ST_QUIET, ST_FENCE, ST_COLL, ST_N };

typedef struct {
    const char *sig;    /* "name($module, a, b=None)" */
    void (*impl)(void); /* the implementation, of the type its flags say */
    int flags;          /* METH_NOARGS, METH_O or METH_FASTCALL */
    int kind;           /* ST_* */
    PyObject *names;    /* tuple of parameter names, or NULL before the first keyword call */
    Py_ssize_t nreq;    /* parameters without a default */
} kwinfo_t;

PyObject *upy_kw_call(kwinfo_t *k, PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames);

/* Each file lists its public functions in an X-macro table,
 * X(name, flags, statistics kind, "($module, parameters)", "doc"), expands
 * it with KW_WRAP (the wrapper kw_<name> of py_<name>) and with KW_ENTRY (its
 * method table entry). */
#define KW_WRAP(name, fl, kind, sig, doc)                                                          \
    static kwinfo_t ki_##name = {#name sig, (void (*)(void))py_##name, fl, kind, NULL, 0};         \
    static PyObject *kw_##name(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)         \
    {                                                                                              \
        return upy_kw_call(&ki_##name, m, a, n, k);                                                \
    }
#define KW_ENTRY(name, fl, kind, sig, doc)                                                         \
    {#name, FN(kw_##name), METH_FASTCALL | METH_KEYWORDS, #name sig "\n--\n\n" doc},

/* The functions the method table calls directly (METH_VARARGS |
 * METH_KEYWORDS, not through upy_kw_call) and that reach the library
 * register their calls (see upy_g.call_sig): py_<name> around <name>_impl. */
#define REGISTERED_KW(name)                                                                        \
    static PyObject *py_##name(PyObject *self, PyObject *args, PyObject *kwds)                     \
    {                                                                                              \
        call_rec_t rec;                                                                            \
        call_enter(&rec, #name);                                                                   \
        PyObject *r = name##_impl(self, args, kwds);                                               \
        call_leave(&rec);                                                                          \
        return r;                                                                                  \
    }
#define F_(name, flags, sig, doc)                                                                  \
    {                                                                                              \
#name, FN(py_##name), flags, #name sig "\n--\n\n" doc                                      \
    }
#define KW (METH_VARARGS | METH_KEYWORDS)

/* ---- The allocation table (_memory.c) ---- */

/* ALLOC_LOCAL: a local block (malloc_local, _local.c), freed by this PE alone. */
enum { ALLOC_BUFFER = 0, ALLOC_RAW = 1, ALLOC_COLLECTED = 2, ALLOC_LOCAL = 3 };

typedef struct {
    uintptr_t addr;
    size_t size;
    int kind;
    int device;      /* -1 host heap, else the CUDA ordinal of the device heap */
    PyObject *owner; /* weak reference to the owning SymmetricBuffer, or NULL */
} alloc_t;

/* Every live symmetric allocation made through ushmem, sorted by address. */
extern alloc_t *upy_allocs;

/* Indexes into upy_allocs, or -1: the allocation containing [a, a+n) (n may
 * be 0), the one that starts at a, one overlapping a (for messages). */
Py_ssize_t upy_alloc_find(uintptr_t a, size_t n);
Py_ssize_t upy_alloc_exact(uintptr_t a);
Py_ssize_t upy_alloc_near(uintptr_t a);
/* 0, or -1 with an exception; owner: the SymmetricBuffer (a weak reference is kept). */
int upy_alloc_add(void *p, size_t size, int kind, PyObject *owner, int device);
void upy_alloc_remove(Py_ssize_t i);
void upy_allocs_finalize(int me);
/* Local blocks in the allocation table: add (0, or -1 with an exception);
 * drop before freeing: 1 dropped, 0 not in the table, -1 a collective
 * allocation (left alone). */
int upy_alloc_add_local(void *p, size_t size, int device);
int upy_alloc_drop_local(const void *p);

/* SHMEM_DEBUG set (upy_debug_poison()): freed host symmetric memory is
 * overwritten with POISON_BYTE. */
#define POISON_BYTE 0xA5
int upy_debug_poison(void);

/* ---- SymmetricBuffer (_symbuf.c) ---- */

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

extern PyTypeObject upy_SymBufType; /* ushmem.SymmetricBuffer */

/* A new SymmetricBuffer over [ptr, ptr+nbytes) naming sym; owner: the buffer
 * a view keeps alive (its root is kept), or NULL. */
SymBuf *upy_symbuf_new(char *ptr, char *sym, size_t nbytes, SymBuf *owner, int owning, int pe,
                       int device);
/* 0 when b is usable, else -1 with ERR_FREED / ERR_STATE. */
int upy_symbuf_check_alive(const SymBuf *b, const char *fn);
/* SymmetricBuffer.free (METH_NOARGS). */
PyObject *upy_symbuf_free(PyObject *self, PyObject *unused);

/* ---- Memory arguments (_span.c) ---- */

/* A memory argument, resolved. */
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

int upy_span_get(PyObject *o, span_t *s, int writable, const char *fn, const char *what);
int upy_check_sym_span(span_t *s, size_t n, const char *fn, const char *what);
int upy_check_local_span(const span_t *s, size_t n, const char *fn, const char *what);
int upy_check_reach(int pe, const char *fn);
int upy_check_sym_mapped(const span_t *s, int pe, const char *fn, const char *what);
int upy_check_team_mapped(shmem_team_t t, const span_t *d, const span_t *s, int heaps,
                          const char *fn);

/* ---- Local blocks (_local.c) ---- */

/* 1 when [p, p+n) lies inside the local part of one heap (*device: its
 * ordinal, or -1 for the host heap), else 0. */
int upy_local_span(const void *p, size_t n, int *device);

/* ---- Lifetime (_lifetime.c) ---- */

void upy_live_add(void);
void upy_live_drop(unsigned long gen);

/* ---- Teams (_teams.c) ---- */

int upy_team_get(PyObject *o, shmem_team_t *out, const char *fn);
void upy_destroy_package_teams(void);

/* ---- What each file adds to the module (0, or -1 with an exception) ---- */

int upy_common_add(PyObject *m);
int upy_memory_add(PyObject *m);
int upy_symbuf_add(PyObject *m);
int upy_lifetime_add(PyObject *m);
int upy_rma_add(PyObject *m);
int upy_teams_add(PyObject *m);
int upy_device_add(PyObject *m);
int upy_local_add(PyObject *m);
int upy_capi_add(PyObject *m);

#endif
