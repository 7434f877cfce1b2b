/* ushmem._ushmem: teams (the Team type, splits, team synchronization) and
 * the collectives. */
#include "_ushmem.h"

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
static PyObject *g_teams; /* list of Team objects this package created */

static TeamObj *team_new(shmem_team_t t, const char *name, int created)
{
    TeamObj *o = PyObject_New(TeamObj, &TeamType);
    if (!o)
        return NULL;
    o->team = t;
    o->name = name;
    o->created = created;
    o->destroyed = 0;
    o->gen = upy_g.gen;
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
int upy_team_get(PyObject *o, shmem_team_t *out, const char *fn)
{
    TeamObj *t = team_obj(o, fn);
    if (!t || require_init(fn))
        return -1;
    if (t->team == SHMEM_TEAM_INVALID)
        return upy_err(ERR_INVALID,
                       "%s: team is TEAM_INVALID (this PE is not a member of the "
                       "team it was split into)",
                       fn);
    if (t->destroyed)
        return upy_err(ERR_INVALID, "%s: the team was destroyed", fn);
    if (t->created && t->gen != upy_g.gen)
        return upy_err(ERR_STATE, "%s: the team belongs to a finalized ushmem instance", fn);
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
    return upy_team_get(o, out, fn);
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
    if (upy_check_nargs(nargs, 3, 3, "team_translate_pe(src_team, src_pe, dest_team)") ||
        (ra = team_get_or_invalid(args[0], &src, fn)) < 0 ||
        upy_as_int(args[1], &pe, fn, "src_pe") || (rb = team_get_or_invalid(args[2], &dst, fn)) < 0)
        return NULL;
    if (ra || rb) /* TEAM_INVALID on either side: -1, as shmem_team_translate_pe */
        return PyLong_FromLong(-1);
    if (pe < 0 || pe >= shmem_team_n_pes(src)) {
        upy_err(ERR_BADPE, "%s: src_pe %d is out of range (the team has %d PEs)", fn, pe,
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
    int rc = upy_as_int(nc, &out->num_contexts, fn, "config.num_contexts");
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
static PyObject *team_split_strided_impl(PyObject *self, PyObject *args, PyObject *kwds)
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
    if (upy_team_get(parent, &p, fn) || read_config(cfg, mask, &conf, fn))
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
    if (upy_check_std_status(rc, fn))
        return NULL;
    PyObject *team = wrap_new_team(nt);
    if (!team)
        return NULL;
    return Py_BuildValue("(iN)", 0, team);
}

/* team_split_2d(parent, xrange, xaxis_config=None, xaxis_mask=0, yaxis_config=None,
 * yaxis_mask=0) -> (status, xteam, yteam) */
static PyObject *team_split_2d_impl(PyObject *self, PyObject *args, PyObject *kwds)
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
    if (upy_team_get(parent, &p, fn) || read_config(xc, xm, &xconf, fn) ||
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
    if (upy_check_std_status(rc, fn))
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
    if (upy_team_get((PyObject *)t, &h, fn))
        return NULL;
    team_destroy_obj(t);
    Py_RETURN_NONE;
}

void upy_destroy_package_teams(void)
{
    while (PyList_GET_SIZE(g_teams) > 0) {
        TeamObj *t = (TeamObj *)PyList_GET_ITEM(g_teams, 0);
        Py_INCREF(t);
        if (!t->destroyed && t->gen == upy_g.gen)
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
    if (upy_check_std_status(rc, "team_sync"))
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
    if (upy_check_std_status(rc, "barrier"))
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
        if (upy_check_nargs(nargs, 1, 2, #name "_on_stream(team, stream=None)") ||                 \
            (inv = team_get_or_invalid(args[0], &t, fn)) < 0 ||                                    \
            upy_parse_stream(nargs > 1 ? args[1] : NULL, &st, fn))                                 \
            return NULL;                                                                           \
        if (inv) /* TEAM_INVALID: nothing to do */                                                 \
            Py_RETURN_NONE;                                                                        \
        if (upy_g.dev < 0)                                                                         \
            return py_##name(self, args[0]);                                                       \
        if (upy_check_team_mapped(t, NULL, NULL, 1, fn))                                           \
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
    call_rec_t rec;
    call_enter(&rec, "Team.destroy");
    PyObject *r = py_team_destroy(NULL, self);
    call_leave(&rec);
    return r;
}
static PyObject *Team_sync(PyObject *self, PyObject *unused)
{
    (void)unused;
    call_rec_t rec;
    call_enter(&rec, "Team.sync");
    PyObject *r = py_team_sync(NULL, self);
    call_leave(&rec);
    return r;
}
static PyObject *Team_translate_pe(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (upy_check_nargs(nargs, 1, 2, "Team.translate_pe(pe, dest_team=TEAM_WORLD)"))
        return NULL;
    PyObject *a[3] = {self, args[0], nargs > 1 ? args[1] : (PyObject *)g_team_world};
    return py_team_translate_pe(NULL, a, 3);
}
static PyObject *Team_get_valid(PyObject *self, void *c)
{
    (void)c;
    TeamObj *t = (TeamObj *)self;
    return PyBool_FromLong(t->team != SHMEM_TEAM_INVALID && !t->destroyed &&
                           (!t->created || t->gen == upy_g.gen));
}
static PyObject *Team_repr(PyObject *self)
{
    TeamObj *t = (TeamObj *)self;
    if (t->name)
        return PyUnicode_FromFormat("ushmem.%s", t->name);
    return PyUnicode_FromFormat("<ushmem.Team %s%s>", upy_addr_txt((void *)t->team).s,
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
    if (upy_span_get(dobj, d, 1, fn, "dest"))
        return -1;
    if (upy_span_get(sobj, s, 0, fn, "source")) {
        span_release(d);
        return -1;
    }
    if (upy_check_sym_span(d, dn, fn, "dest") || upy_check_sym_span(s, sn, fn, "source")) {
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
    if (upy_as_size(args[3], &n, fn, "nbytes") ||
        (kind == COLL_BCAST && upy_as_int(args[4], &root, fn, "pe_root")) ||
        upy_parse_stream(stream, &st, fn) || mul_size((size_t)shmem_team_n_pes(t), n, &total, fn))
        return NULL;
    if (kind == COLL_BCAST && (root < 0 || root >= shmem_team_n_pes(t))) {
        upy_err(ERR_BADPE, "%s: pe_root %d is out of range (the team has %d PEs)", fn, root,
                shmem_team_n_pes(t));
        return NULL;
    }
    size_t dn = kind == COLL_BCAST ? n : total, sn = kind == COLL_ALLTOALL ? total : n;
    if (coll_spans(args[1], args[2], dn, sn, &d, &s, fn))
        return NULL;
    int dev = d.device >= 0 || s.device >= 0;
    if (upy_check_team_mapped(t, &d, &s, dev, fn)) {
        span_release(&s);
        span_release(&d);
        return NULL;
    }
    int rc;
    shmemx_stream_t cs = (shmemx_stream_t)st;
    Py_BEGIN_ALLOW_THREADS;
    if (stream && upy_g.dev >= 0) {
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
    if (upy_check_std_status(rc, fn))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_alltoallmem(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (upy_check_nargs(nargs, 4, 4, "alltoallmem(team, dest, source, nbytes_per_pe)"))
        return NULL;
    return coll(COLL_ALLTOALL, args, NULL, "alltoallmem");
}
static PyObject *py_alltoallmem_on_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (upy_check_nargs(nargs, 4, 5, "alltoallmem_on_stream(team, dest, source, nbytes, stream)"))
        return NULL;
    return coll(COLL_ALLTOALL, args, nargs > 4 ? args[4] : Py_None, "alltoallmem_on_stream");
}
static PyObject *py_fcollectmem(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (upy_check_nargs(nargs, 4, 4, "fcollectmem(team, dest, source, nbytes)"))
        return NULL;
    return coll(COLL_FCOLLECT, args, NULL, "fcollectmem");
}
static PyObject *py_fcollectmem_on_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (upy_check_nargs(nargs, 4, 5, "fcollectmem_on_stream(team, dest, source, nbytes, stream)"))
        return NULL;
    return coll(COLL_FCOLLECT, args, nargs > 4 ? args[4] : Py_None, "fcollectmem_on_stream");
}
static PyObject *py_broadcastmem(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (upy_check_nargs(nargs, 5, 5, "broadcastmem(team, dest, source, nbytes, pe_root)"))
        return NULL;
    return coll(COLL_BCAST, args, NULL, "broadcastmem");
}
static PyObject *py_broadcastmem_on_stream(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (upy_check_nargs(nargs, 5, 6,
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
    if (upy_check_nargs(nargs, 6, 7,
                        "reduce_on_stream(team, dest, source, nreduce, type, op, stream)") ||
        (inv = team_get_or_invalid(args[0], &t, fn)) < 0)
        return NULL;
    if (inv) /* TEAM_INVALID: nothing to do */
        Py_RETURN_NONE;
    if (upy_as_size(args[3], &n, fn, "nreduce"))
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
    if (upy_parse_stream(nargs > 6 ? args[6] : Py_None, &st, fn) ||
        mul_size(n, e->size, &nbytes, fn) ||
        coll_spans(args[1], args[2], nbytes, nbytes, &d, &s, fn))
        return NULL;
    int bad = 0;
    if (((uintptr_t)d.sym | (uintptr_t)s.sym) % e->size) {
        PyErr_Format(PyExc_ValueError, "%s: dest and source must be %zu-byte aligned", fn, e->size);
        bad = 1;
    }
    if (bad || upy_check_team_mapped(t, &d, &s, d.device >= 0 || s.device >= 0, fn)) {
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
    if (upy_check_std_status(rc, fn))
        return NULL;
    Py_RETURN_NONE;
}

REGISTERED_KW(team_split_strided)
REGISTERED_KW(team_split_2d)

/* The public functions here, called through upy_kw_call:
 * X(name, flags, statistics kind, "($module, parameters)", "doc"). */
/* clang-format off */
#define TEAMS_FUNCS(X) \
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
/* clang-format on */
TEAMS_FUNCS(KW_WRAP)

/* clang-format off */
static PyMethodDef teams_methods[] = {
    F_(team_split_strided, KW,
       "($module, parent, start, stride, size, config=None, config_mask=0)",
       "Collective over parent: (status, team) with the parent PEs start, start + stride, ... "
       "(size of them); PEs outside it get TEAM_INVALID."),
    F_(team_split_2d, KW,
       "($module, parent, xrange, xaxis_config=None, xaxis_mask=0, yaxis_config=None, "
       "yaxis_mask=0)",
       "Collective over parent: (status, xteam, yteam) of a 2-D grid xrange PEs wide."),
    TEAMS_FUNCS(KW_ENTRY)
    {NULL, NULL, 0, NULL},
};
/* clang-format on */

int upy_teams_add(PyObject *m)
{
    if (PyType_Ready(&TeamType) < 0)
        return -1;
    g_teams = PyList_New(0);
    g_team_world = team_new(SHMEM_TEAM_WORLD, "TEAM_WORLD", 0);
    g_team_shared = team_new(SHMEM_TEAM_SHARED, "TEAM_SHARED", 0);
    g_team_invalid = team_new(SHMEM_TEAM_INVALID, "TEAM_INVALID", 0);
    if (!g_teams || !g_team_world || !g_team_shared || !g_team_invalid ||
        PyModule_AddObjectRef(m, "Team", (PyObject *)&TeamType) < 0 ||
        PyModule_AddObjectRef(m, "TEAM_WORLD", (PyObject *)g_team_world) < 0 ||
        PyModule_AddObjectRef(m, "TEAM_SHARED", (PyObject *)g_team_shared) < 0 ||
        PyModule_AddObjectRef(m, "TEAM_INVALID", (PyObject *)g_team_invalid) < 0 ||
        PyModule_AddObjectRef(m, "_live_teams", g_teams) < 0)
        return -1;
    return PyModule_AddFunctions(m, teams_methods);
}
