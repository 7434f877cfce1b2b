/* ushmem._ushmem: init, finalize (and what outlives it), the queries. */
#include "_ushmem.h"

#include <stdio.h>
#include <sys/mman.h>

/* Use after finalize: the heap mappings (this PE's heap and the peers' mapped
 * here: memfds named "ushmem-heap") are read from /proc/self/maps before
 * finalize and, once the library has unmapped them, reserved again as private
 * zero pages (MAP_FIXED_NOREPLACE: never over a mapping made in between), so
 * that a memoryview, numpy array or tensor still pointing there reads zeros
 * instead of crashing the interpreter. Address space only: the pages cost
 * memory when touched.
 *
 * Only while something can still point there: every SymmetricBuffer object
 * (owners, slices, peer views) counts for the generation it was made in, and
 * whatever exposes heap memory to Python holds one (a memoryview or numpy
 * array through the buffer protocol, torch.frombuffer and DLPack by a
 * reference). When the last one of a finalized generation goes, its ranges
 * are unmapped; a finalize with none alive keeps nothing. Otherwise every
 * init/finalize cycle would keep n_pes heaps of address space for good. */
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
typedef struct {
    uintptr_t lo, hi; /* lo == hi: not kept (the address space was taken meanwhile) */
} range_t;

typedef struct {
    unsigned long gen; /* the finalized generation */
    Py_ssize_t live;   /* its SymmetricBuffer objects still alive */
    range_t *r;
    size_t n;
} kept_t;

static kept_t *g_kept;
static size_t g_nkept, g_cap_kept;
static Py_ssize_t g_live; /* SymmetricBuffer objects of generation upy_g.gen */

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
 * space was taken in between: those are marked empty). */
static size_t keep_ranges(range_t *r, size_t n)
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
        r[i].hi = r[i].lo;
        lost++;
    }
    return lost;
}

/* Remember the ranges kept for generation gen (takes r); live > 0. */
static void kept_add(unsigned long gen, Py_ssize_t live, range_t *r, size_t n)
{
    if (g_nkept == g_cap_kept) {
        size_t cap = g_cap_kept ? 2 * g_cap_kept : 4;
        kept_t *k = PyMem_RawRealloc(g_kept, cap * sizeof *k);
        if (!k) { /* the ranges stay reserved for the life of the process */
            PyMem_RawFree(r);
            return;
        }
        g_kept = k;
        g_cap_kept = cap;
    }
    g_kept[g_nkept++] = (kept_t){gen, live, r, n};
}

void upy_live_add(void)
{
    g_live++;
}

/* A SymmetricBuffer of generation gen is gone. */
void upy_live_drop(unsigned long gen)
{
    if (gen == upy_g.gen) {
        g_live--;
        return;
    }
    for (size_t i = 0; i < g_nkept; i++) {
        kept_t *k = &g_kept[i];
        if (k->gen != gen)
            continue;
        if (--k->live == 0) {
            for (size_t j = 0; j < k->n; j++)
                if (k->r[j].hi > k->r[j].lo)
                    munmap((void *)k->r[j].lo, k->r[j].hi - k->r[j].lo);
            PyMem_RawFree(k->r);
            g_kept[i] = g_kept[--g_nkept];
        }
        return;
    }
}

/* ------------------------------------------------------------------------ */
/* Init / finalize / queries                                                  */
/* ------------------------------------------------------------------------ */

static int parse_thread_level(PyObject *o, int *out, const char *fn)
{
    if (!o || o == Py_None) {
        *out = SHMEM_THREAD_MULTIPLE;
        return 0;
    }
    if (upy_as_int(o, out, fn, "thread_level"))
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
    return upy_err(ERR_STATE, "%s: ushmem is already initialized (finalize it first)", fn);
}

static PyObject *init_impl(PyObject *self, PyObject *args, PyObject *kwds)
{
    (void)self;
    static char *kwlist[] = {"thread_level", NULL};
    PyObject *tl = Py_None;
    int level, provided = 0, rc;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:init", kwlist, &tl) ||
        parse_thread_level(tl, &level, "init") || check_not_init("init"))
        return NULL;
    upy_lib_error[0] = 0;
    Py_BEGIN_ALLOW_THREADS;
    rc = shmem_init_thread(level, &provided);
    Py_END_ALLOW_THREADS;
    upy_refresh_init_cache();
    if (rc != 0) {
        char why[600];
        upy_err(ERR_BOOTSTRAP,
                "init: shmem_init_thread failed%s (launch with ushrun or torchrun, or use "
                "init_with_mpi() under mpirun)",
                upy_lib_reason(why, sizeof why));
        return NULL;
    }
    upy_probe_device();
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
    if (upy_check_status(rc, "get_uniqueid"))
        return NULL;
    return PyBytes_FromStringAndSize((const char *)uid.internal, sizeof uid.internal);
}

static PyObject *init_attr_impl(PyObject *self, PyObject *args, PyObject *kwds)
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
        if (upy_as_int(dev, &device, "init_attr", "device"))
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
    upy_lib_error[0] = 0;
    Py_BEGIN_ALLOW_THREADS;
    rc = shmemx_init_attr(rank, nranks, &uid, &attr);
    Py_END_ALLOW_THREADS;
    upy_refresh_init_cache();
    if (upy_check_status(rc, "init_attr"))
        return NULL;
    upy_probe_device();
    Py_RETURN_NONE;
}

static PyObject *py_finalize(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (upy_g.finalizing) {
        upy_err(ERR_STATE, "finalize: another thread of this process is finalizing ushmem");
        return NULL;
    }
    if (!shmem_query_initialized()) {
        upy_err_not_init("finalize");
        return NULL;
    }
    /* One record is this call's own (upy_kw_call made it, and the GIL has
     * been held since): any other is a call in progress that uses the
     * library and its memory. Refuse before anything collective happens. */
    if (upy_g.ncalls > 1) {
        size_t more = (size_t)upy_g.ncalls - 2;
        const char *busy = "a call";
        int own = 0;
        for (int i = 0; i < UPY_CALL_SLOTS; i++) {
            const char *sig = upy_g.call_sig[i];
            if (!sig)
                continue;
            if (!own && strncmp(sig, "finalize", 8) == 0 && strchr("(", sig[8]) != NULL) {
                own = 1; /* this call (another finalize counts as busy) */
                continue;
            }
            busy = sig;
            break;
        }
        char name[64], others[48] = "";
        snprintf(name, sizeof name, "%.*s", (int)strcspn(busy, "("), busy);
        if (more)
            snprintf(others, sizeof others, " (and %zu more call%s)", more, more > 1 ? "s" : "");
        upy_err(ERR_STATE,
                "finalize: ushmem.%s is in progress in this process%s (another thread waits or "
                "works in it); finalizing now would take the library and the memory it uses from "
                "under it, so ushmem stays initialized: make that call return first (a wait: "
                "satisfy it, e.g. set the signal it waits for), then finalize",
                name, others);
        return NULL;
    }
    /* From here every other call refuses (not initialized), even while the
     * GIL is released below. */
    upy_g.finalizing = 1;
    int me = upy_g.me; /* for the warnings: the library forgets who we were */
    upy_g.me = upy_g.npes = -1;
    upy_destroy_package_teams();
    upy_allocs_finalize(me);
    /* What outlives this generation: its SymmetricBuffer objects. */
    unsigned long gen = upy_g.gen;
    Py_ssize_t live = g_live;
    upy_g.gen++;
    g_live = 0;
    upy_g.dev = -1;
    upy_g.dev_probe = NULL; /* the device heap goes with the library */
    memset(upy_g.local_lo, 0, sizeof upy_g.local_lo);
    memset(upy_g.local_hi, 0, sizeof upy_g.local_hi);
    range_t *ranges = NULL;
    size_t nranges = live > 0 ? heap_ranges(&ranges) : 0;
    Py_BEGIN_ALLOW_THREADS;
    shmem_finalize();
    Py_END_ALLOW_THREADS;
    size_t lost = keep_ranges(ranges, nranges);
    if (nranges)
        kept_add(gen, live, ranges, nranges);
    else
        PyMem_RawFree(ranges);
    upy_g.finalizing = 0;
    upy_refresh_init_cache();
    if (upy_g.exports > 0 || lost) {
        if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                             "ushmem.finalize: PE %d: %zd memoryview/numpy/DLPack export(s) of "
                             "symmetric memory outlive finalize(); their addresses stay mapped "
                             "as private memory of this process until the last of them is gone: "
                             "it reads zeros at first, and what it writes there stays local (no "
                             "other PE sees it)%s",
                             me, upy_g.exports,
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
    if (!initialized() || upy_g.dev < 0)
        Py_RETURN_NONE;
    return PyLong_FromLong(upy_g.dev);
}

static PyObject *py_is_initialized(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyBool_FromLong(shmem_query_initialized() && !upy_g.finalizing);
}

static PyObject *py_my_pe(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    int me = shmem_my_pe();
    if (UNLIKELY(me < 0)) {
        upy_err_not_init("my_pe");
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
        upy_err_not_init("n_pes");
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
    if (upy_as_int(arg, &pe, "pe_accessible", "pe"))
        return NULL;
    return PyBool_FromLong(shmem_pe_accessible(pe));
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
    if (upy_as_int(arg, &status, "global_exit", "status"))
        return NULL;
    PyObject *r = PyObject_CallMethod(PySys_GetObject("stdout"), "flush", NULL);
    Py_XDECREF(r);
    r = PyObject_CallMethod(PySys_GetObject("stderr"), "flush", NULL);
    Py_XDECREF(r);
    PyErr_Clear();
    shmem_global_exit(status);
    Py_RETURN_NONE; /* not reached */
}

REGISTERED_KW(init)
REGISTERED_KW(init_attr)

/* The public functions here, called through upy_kw_call:
 * X(name, flags, statistics kind, "($module, parameters)", "doc"). */
/* clang-format off */
#define LIFETIME_FUNCS(X) \
    X(get_uniqueid, METH_NOARGS, ST_NONE, "($module, /)", \
      "A unique id (bytes, UNIQUEID_BYTES long) for init_attr(): make it on rank 0, ship it to " \
      "every rank.") \
    X(finalize, METH_NOARGS, ST_NONE, "($module, /)", \
      "Collective: destroys the teams the package made, reports symmetric memory never freed " \
      "(LeakWarning) and finalizes the library. Refuses (Error, ERR_STATE, naming it) while " \
      "another ushmem call is in progress in this process (a thread waiting in it).") \
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
    X(info_get_version, METH_NOARGS, ST_NONE, "($module, /)", \
      "The OpenSHMEM version implemented, as (major, minor).") \
    X(info_get_name, METH_NOARGS, ST_NONE, "($module, /)", "The library's name and version.") \
    X(wtime, METH_NOARGS, ST_NONE, "($module, /)", \
      "Elapsed wall-clock time in seconds (float) from an arbitrary start.") \
    X(global_exit, METH_O, ST_NONE, "($module, status)", \
      "Stops every PE of the job with exit status status.")
/* clang-format on */
LIFETIME_FUNCS(KW_WRAP)

/* clang-format off */
static PyMethodDef lifetime_methods[] = {
    F_(init, KW, "($module, thread_level=None)",
       "Initializes from the launcher's environment (ushrun, torchrun, mpirun, or alone: one "
       "PE); returns the thread level provided."),
    F_(init_attr, KW, "($module, rank, nranks, uid, device=None, thread_level=None)",
       "Initializes with a unique id from get_uniqueid() on rank 0, shipped to every rank."),
    LIFETIME_FUNCS(KW_ENTRY)
    {NULL, NULL, 0, NULL},
};
/* clang-format on */

int upy_lifetime_add(PyObject *m)
{
    return PyModule_AddFunctions(m, lifetime_methods);
}
