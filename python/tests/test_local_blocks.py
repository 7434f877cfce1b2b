"""Local blocks: malloc_local / free_local allocate one PE's block without any collective
call, from the part of each heap set aside at init (conftest sets USHMEM_LOCAL_HEAP_SIZE
and USHMEM_DEVICE_LOCAL_HEAP_SIZE); heap_offset / heap_addr let peers name a block at its
owner's offset. Each PE allocates blocks of its own random sizes (so offsets differ between
PEs), publishes the offsets through a collective buffer, and its neighbours write into them
with puts, signals and atomics; every owner checks every byte. Also: the errors, a heap
without a local part (fresh interpreters), and the C API capsule ushmem._ushmem._C_API
(through ctypes, mirroring ushmem_capi.h)."""
import ctypes
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import ushmem

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.dirname(os.path.abspath(__file__))
MALLOC_HOST, MALLOC_DEVICE = 1 << 16, 1 << 17  # SHMEMX_MALLOC_HOST / _DEVICE
alone = pytest.mark.skipif(not ushmem.is_initialized() or ushmem.n_pes() != 1,
                           reason="a check in a fresh process: run in 1-PE jobs only")


def _sizes(data, pe, k, tag, hi=1 << 16):
    """The sizes of PE pe's k blocks (any PE can compute them)."""
    return [int(v) for v in data.rng(pe, tag).integers(1, hi, k)]


def _publish(values):
    """Every PE's list of ints (same length everywhere), through a collective buffer:
    [[PE 0's], [PE 1's], ...]."""
    me, n, k = ushmem.my_pe(), ushmem.n_pes(), len(values)
    tbl = ushmem.create_buffer(8 * k * n, device="cpu", zero=True)
    mine = np.asarray(values, dtype=np.uint64).tobytes()
    for pe in range(n):
        ushmem.putmem(tbl[8 * k * me:8 * k * (me + 1)], mine, 8 * k, pe)
    ushmem.barrier_all()
    out = np.frombuffer(bytes(tbl), dtype=np.uint64).reshape(n, k).tolist()
    tbl.free()
    return [[int(v) for v in row] for row in out]


def test_puts_into_peers_local_blocks(me, npes, data):
    k = 4
    right, left = (me + 1) % npes, (me - 1) % npes
    # A pad of this PE's own random size first: the blocks' offsets differ between PEs.
    pad = ushmem.malloc_local(int(data.rng(me, "pad").integers(1, 1 << 20)), device=False)
    sizes = {pe: _sizes(data, pe, k, "sizes") for pe in {me, right, left}}
    blocks = [ushmem.malloc_local(n, device=False) for n in sizes[me]]
    where = [ushmem.heap_offset(p) for p in blocks]
    back = [ushmem.heap_addr(off, device=False) for off, _ in where]
    offs = _publish([off for off, _ in where])
    # Write into the right neighbour's blocks at its offsets, half blocking, half nbi.
    for j in range(k):
        dest = ushmem.heap_addr(offs[right][j], device=False)
        n = sizes[right][j]
        put = ushmem.putmem if j % 2 == 0 else ushmem.putmem_nbi
        put(dest, data.bytes(me, n, f"blk{j}"), n, right)
    ushmem.barrier_all()
    # Read them back from the neighbour, and this PE's own blocks as it holds them.
    fetched = []
    for j in range(k):
        out = bytearray(sizes[right][j])
        ushmem.getmem(out, ushmem.heap_addr(offs[right][j], device=False), len(out), right)
        fetched.append(bytes(out))
    own = [bytes(ushmem.SymmetricBuffer(n, ptr=p, own_data=False))
           for n, p in zip(sizes[me], blocks)]
    live = {a for a, _, kind in ushmem.live_allocations() if kind == "malloc_local"}
    ushmem.barrier_all()  # nobody frees a block a peer still reads
    for p in blocks + [pad]:
        ushmem.free_local(p)
    after = {a for a, _, kind in ushmem.live_allocations() if kind == "malloc_local"}
    assert [w[1] for w in where] == [False] * k and back == blocks
    assert set(blocks) | {pad} <= live and not after & live
    for j in range(k):
        assert own[j] == data.bytes(left, sizes[me][j], f"blk{j}"), f"block {j} from PE {left}"
        assert fetched[j] == data.bytes(me, sizes[right][j], f"blk{j}"), f"block {j} on {right}"


def test_signals_and_atomics_into_peers_local_blocks(me, npes, data):
    right, left = (me + 1) % npes, (me - 1) % npes
    reps = 5
    pad = ushmem.malloc_local(int(data.rng(me, "pad").integers(1, 1 << 16)), align=256,
                               device=False)
    # [counter][one int64 per PE][signal][payload]
    n_of = {pe: _sizes(data, pe, 1, "payload", 4096)[0] for pe in {me, right, left}}
    words = npes + 2
    blk = ushmem.malloc_local(8 * words + n_of[me], align=8, device=False)
    ushmem.putmem(blk, bytes(8 * words), 8 * words, me)  # zero before peers touch it
    offs = [row[0] for row in _publish([ushmem.heap_offset(blk)[0]])]
    values = {pe: [int(v) for v in data.rng(pe, "add").integers(1, 1 << 40, npes)]
              for pe in range(npes)}
    for pe in range(npes):  # every PE updates every PE's block
        base = ushmem.heap_addr(offs[pe], device=False)
        for _ in range(reps):
            ushmem.int64_atomic_inc(base, pe)
        ushmem.uint64_atomic_add(base + 8 * (1 + me), values[me][pe], pe)
    dest = ushmem.heap_addr(offs[right], device=False)
    ushmem.putmem_signal(dest + 8 * words, data.bytes(me, n_of[right], "sig"), n_of[right],
                         dest + 8 * (npes + 1), me + 1, ushmem.SIGNAL_SET, right)
    got_sig = ushmem.signal_wait_until(blk + 8 * (npes + 1), ushmem.CMP_EQ, left + 1)
    payload = ctypes.string_at(blk + 8 * words, n_of[me])
    ushmem.barrier_all()
    old = ushmem.int64_atomic_fetch(ushmem.heap_addr(offs[right], device=False), right)
    swapped = ushmem.int64_atomic_compare_swap(ushmem.heap_addr(offs[right], device=False), old,
                                               -me, right)
    ushmem.barrier_all()
    counts = np.frombuffer(ctypes.string_at(blk, 8 * (npes + 1)), dtype=np.int64)
    ushmem.free_local(blk)
    ushmem.free_local(pad)
    assert got_sig == left + 1 and payload == data.bytes(left, n_of[me], "sig")
    assert old == reps * npes and swapped == reps * npes
    assert int(counts[0]) == -left  # the left neighbour's compare_swap
    assert [int(v) for v in counts[1:]] == [values[pe][me] for pe in range(npes)]


@pytest.mark.requires_mapped_peers
def test_peer_views_of_local_blocks(me, npes, data):
    right, left = (me + 1) % npes, (me - 1) % npes
    n_of = {pe: _sizes(data, pe, 1, "n")[0] for pe in {me, right, left}}
    blk = ushmem.malloc_local(n_of[me], device=False)
    offs = [row[0] for row in _publish([ushmem.heap_offset(blk)[0]])]
    dest = ushmem.heap_addr(offs[right], device=False)
    mapped = ushmem.ptr(dest, right)
    view = ushmem.get_peer_buffer(dest, right, n_of[right])
    memoryview(view)[:] = data.bytes(me, n_of[right], "view")  # stores into the peer's block
    ushmem.barrier_all()
    got = ctypes.string_at(blk, n_of[me])
    ushmem.barrier_all()
    view.free()
    ushmem.free_local(blk)
    assert mapped == view.ptr and ushmem.addr_accessible(dest, right)
    assert got == data.bytes(left, n_of[me], "view")


def test_alignment_offsets_and_reuse(me, data):
    rng = data.rng(me, "align")
    start = ushmem.live_allocations()
    for cycle in range(50):
        align = 1 << int(rng.integers(0, 22))  # 1 B .. 2 MiB
        n = int(rng.integers(1, 1 << 16))
        p = ushmem.malloc_local(n, align, device=False)
        off, dev = ushmem.heap_offset(p)
        ok = p % align == 0 and ushmem.heap_addr(off, device=False) == p and not dev
        ushmem.putmem(p, data.bytes(me, n, str(cycle)), n, me)
        same = ctypes.string_at(p, n) == data.bytes(me, n, str(cycle))
        ushmem.free_local(p)
        assert ok and same, (cycle, align, n, hex(p))
    # Allocations without a free in between, then freed in random order.
    ps = [ushmem.malloc_local(int(v), device=False) for v in rng.integers(1, 1 << 14, 64)]
    for i in rng.permutation(len(ps)):
        ushmem.free_local(ps[int(i)])
    assert len(set(ps)) == len(ps)
    assert ushmem.live_allocations() == start


def test_errors(me, cuda_bound):
    p = ushmem.malloc_local(64, device=False)
    ushmem.free_local(p)
    with pytest.raises(ushmem.Error) as double:
        ushmem.free_local(p)
    raw = ushmem.malloc(64)
    buf = ushmem.create_buffer(64, device="cpu")
    loc = ushmem.malloc_local(64, device=False)
    errs = {}
    for name, call in {"collective": lambda: ushmem.free_local(raw),
                       "buffer ptr": lambda: ushmem.free_local(buf.ptr),
                       "free(local)": lambda: ushmem.free(loc),
                       "not local": lambda: ushmem.free_local(loc + 8),
                       "too big": lambda: ushmem.malloc_local(1 << 40, device=False),
                       "align 3": lambda: ushmem.malloc_local(8, 3),
                       "align 4M": lambda: ushmem.malloc_local(8, align=1 << 22),
                       "offset not heap": lambda: ushmem.heap_offset(bytearray(8)),
                       "past the heap": lambda: ushmem.heap_addr(1 << 45)}.items():
        with pytest.raises(ushmem.Error) as ei:
            call()
        errs[name] = ei.value
    wrong = []
    for call, exc in ((lambda: ushmem.free_local(True), TypeError),
                      (lambda: ushmem.free_local(-64), ValueError),
                      (lambda: ushmem.free_local("0x1000"), TypeError),
                      (lambda: ushmem.free_local(buf), TypeError),
                      (lambda: ushmem.free_local(2 ** 64 - 1), ValueError),
                      (lambda: ushmem.malloc_local(-1), ValueError),
                      (lambda: ushmem.malloc_local(0), ValueError),
                      (lambda: ushmem.malloc_local(8, -1), ValueError),
                      (lambda: ushmem.malloc_local(8, device=1), TypeError),
                      (lambda: ushmem.malloc_local(8, device="cpu"), TypeError),
                      (lambda: ushmem.heap_offset(True), TypeError),
                      (lambda: ushmem.heap_offset(-1), ValueError),
                      (lambda: ushmem.heap_addr(-1), ValueError),
                      (lambda: ushmem.heap_addr(0, device=0), TypeError),
                      (lambda: ushmem.heap_addr(0, 1, 2), TypeError)):
        try:
            call()
            wrong.append((call, "no exception"))
        except exc:
            pass
        except Exception as e:  # the wrong kind
            wrong.append((call, repr(e)))
    if not cuda_bound:
        with pytest.raises(ushmem.Error) as nodev:
            ushmem.malloc_local(8, device=True)
        assert nodev.value.code == ushmem.ERR_UNSUPPORTED
        with pytest.raises(ushmem.Error) as nodev:
            ushmem.heap_addr(0, device=True)
        assert nodev.value.code == ushmem.ERR_UNSUPPORTED
    ushmem.free_local(None)  # like free(None)
    offs = ushmem.heap_offset(buf), ushmem.heap_offset(buf[8:]), ushmem.heap_offset(raw)
    ushmem.free_local(loc)
    ushmem.free(raw)
    buf.free()
    assert not wrong, wrong
    d = double.value
    assert d.code == ushmem.ERR_NOTFOUND and d.message.startswith("free_local:")
    assert "the library says" in d.message and "shmemx_free_local" in d.message
    assert errs["collective"].code == ushmem.ERR_INVALID
    assert "free_local" in errs["collective"].message and "free()" in errs["collective"].message
    assert errs["buffer ptr"].code == ushmem.ERR_INVALID
    assert errs["free(local)"].code == ushmem.ERR_INVALID
    assert "free_local()" in errs["free(local)"].message
    assert errs["not local"].code == ushmem.ERR_NOTFOUND
    assert errs["too big"].code == ushmem.ERR_NOMEM
    assert "exhausted" in errs["too big"].message and "USHMEM_LOCAL_HEAP_SIZE" in \
        errs["too big"].message
    assert errs["align 3"].code == errs["align 4M"].code == ushmem.ERR_INVALID
    assert errs["offset not heap"].code == ushmem.ERR_NOTFOUND
    assert errs["past the heap"].code == ushmem.ERR_INVALID
    for name, e in errs.items():
        assert e.message.split(":")[0] in ("free", "free_local", "malloc_local", "heap_offset",
                                           "heap_addr"), (name, e.message)
    assert offs[1][0] == offs[0][0] + 8 and offs[0][1] is False
    assert ushmem.heap_addr(offs[2][0], device=offs[2][1]) == raw


def test_ranges_outside_the_local_part_stay_refused(me):
    """Only the local part is taken on trust: freed collective memory is still refused."""
    raw = ushmem.malloc(64)
    blk = ushmem.malloc_local(64, device=False)
    ushmem.putmem(blk, b"x" * 64, 64, me)
    refused = []
    with pytest.raises(ushmem.Error) as ei:
        ushmem.putmem(raw + 60, b"y" * 8, 8, me)  # past the end of a collective allocation
    refused.append(ei.value.code)
    ushmem.free(raw)
    with pytest.raises(ushmem.Error) as ei:
        ushmem.putmem(raw, b"y", 1, me)  # freed
    refused.append(ei.value.code)
    ushmem.free_local(blk)
    assert refused == [ushmem.ERR_NOTSYM, ushmem.ERR_NOTSYM]


@pytest.mark.parametrize("heap", [None, True])
@pytest.mark.requires_cuda
@pytest.mark.requires_torch
def test_device_local_blocks(me, npes, data, heap):
    """Local blocks of the device heap (device=None is the device heap with a GPU bound)."""
    from conftest import device_sync
    right, left = (me + 1) % npes, (me - 1) % npes
    n_of = {pe: _sizes(data, pe, 1, "dev")[0] for pe in {me, right, left}}
    blk = ushmem.malloc_local(n_of[me], 0, heap)
    off, is_dev = ushmem.heap_offset(blk)
    offs = [row[0] for row in _publish([off])]
    dest = ushmem.heap_addr(offs[right], device=True)
    ushmem.putmem(dest, data.bytes(me, n_of[right], "d"), n_of[right], right)
    ushmem.barrier_all()
    got = bytearray(n_of[me])
    ushmem.getmem(got, blk, n_of[me], me)
    back = bytearray(n_of[right])
    ushmem.getmem(back, dest, n_of[right], right)
    device_sync()
    ushmem.barrier_all()
    view = ushmem.SymmetricBuffer(n_of[me], ptr=blk, own_data=False)
    where = view.device
    view.free()
    ushmem.free_local(blk)
    assert is_dev and where == f"cuda:{ushmem.cuda_device()}"
    assert ushmem.heap_addr(off, device=True) == blk
    assert bytes(got) == data.bytes(left, n_of[me], "d")
    assert bytes(back) == data.bytes(me, n_of[right], "d")


# ---- the C API capsule ----

HEADER = os.path.join(HERE, "ushmem", "ushmem_capi.h")
_stream = ctypes.c_void_p
_F = ctypes.CFUNCTYPE


class CAPI(ctypes.Structure):
    """ushmem_capi_t (python/ushmem/ushmem_capi.h), field for field."""
    _fields_ = [
        ("version", ctypes.c_int),
        ("size", ctypes.c_size_t),
        ("initialized", _F(ctypes.c_int)),
        ("my_pe", _F(ctypes.c_int)),
        ("n_pes", _F(ctypes.c_int)),
        ("malloc_local", _F(ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_long)),
        ("free_local", _F(ctypes.c_int, ctypes.c_void_p)),
        ("heap_offset", _F(ctypes.c_long, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t))),
        ("heap_addr", _F(ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long)),
        ("ptr", _F(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)),
        ("device_route", _F(ctypes.c_int, ctypes.c_int)),
        ("putmem_on_stream", _F(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                ctypes.c_int, _stream)),
        ("getmem_on_stream", _F(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                ctypes.c_int, _stream)),
        ("putmem_signal_on_stream", _F(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                       ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int,
                                       ctypes.c_int, _stream)),
        ("signal_op_on_stream", _F(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int,
                                   ctypes.c_int, _stream)),
        ("signal_wait_until_on_stream", _F(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64,
                                           _stream)),
        ("quiet_on_stream", _F(None, _stream)),
        ("quiet", _F(None)),
        ("global_exit", _F(None, ctypes.c_int)),
    ]


def capi_table():
    """The table behind ushmem._ushmem._C_API (as ushmem_capi_import() gets it in C)."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    addr = get(ushmem._ushmem._C_API, b"ushmem._ushmem._C_API")
    return CAPI.from_address(addr)


def test_capsule_mirrors_the_header():
    with open(HEADER) as f:
        text = f.read()
    body = re.search(r"typedef struct \{(.*?)\} ushmem_capi_t;", text, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = re.findall(r"\(\*(\w+)\)|\b(\w+);", body)
    assert [a or b for a, b in names] == [f for f, _ in CAPI._fields_]
    assert os.path.samefile(ushmem.get_include(), os.path.dirname(HEADER))
    assert os.path.exists(os.path.join(ushmem.get_include(), "ushmem_capi.h"))
    t = capi_table()
    assert t.version == 1 and t.size == ctypes.sizeof(CAPI)
    assert type(ushmem._ushmem._C_API).__name__ == "PyCapsule"


def test_capsule_moves_data_between_local_blocks(me, npes, data, cuda_bound):
    t = capi_table()
    state = (t.version, t.size, t.initialized(), t.my_pe(), t.n_pes())
    route = t.device_route(me)
    right, left = (me + 1) % npes, (me - 1) % npes
    n_of = {pe: _sizes(data, pe, 1, "capi", 8192)[0] for pe in {me, right, left}}
    pad = t.malloc_local(int(data.rng(me, "pad").integers(1, 1 << 18)), 0, MALLOC_HOST)
    # [signal][payload]
    blk = t.malloc_local(8 + n_of[me], 64, MALLOC_HOST)
    ctypes.memset(blk, 0, 8)
    off = ctypes.c_size_t()
    heap = t.heap_offset(blk, ctypes.byref(off))
    offs = [row[0] for row in _publish([off.value])]
    dest = t.heap_addr(offs[right], MALLOC_HOST)
    mapped = t.ptr(dest, right), ushmem.ptr(dest, right)
    src = ctypes.create_string_buffer(data.bytes(me, n_of[right], "capi"), n_of[right])
    # Host memory with a NULL stream: each call runs now (the blocking host routine).
    t.putmem_on_stream(dest + 8, src, n_of[right], right, None)
    t.quiet()
    t.signal_op_on_stream(dest, me + 1, ushmem.SIGNAL_SET, right, None)
    t.signal_wait_until_on_stream(blk, ushmem.CMP_EQ, left + 1, None)
    got = ctypes.string_at(blk + 8, n_of[me])
    back = ctypes.create_string_buffer(n_of[right])
    t.getmem_on_stream(back, dest + 8, n_of[right], right, None)
    t.quiet_on_stream(None)
    ushmem.barrier_all()  # nobody frees a block a peer still reads
    freed = t.free_local(blk), t.free_local(pad), t.free_local(blk)
    assert state == (1, ctypes.sizeof(CAPI), 1, me, npes)
    assert route == (1 if cuda_bound else 0)
    assert heap == MALLOC_HOST and t.heap_addr(off.value, MALLOC_HOST) == blk
    assert mapped[0] == mapped[1]  # None both where the peer is not mapped here
    assert got == data.bytes(left, n_of[me], "capi")
    assert back.raw == data.bytes(me, n_of[right], "capi")
    assert freed == (0, 0, ushmem.ERR_NOTFOUND)
    assert not [a for a in ushmem.live_allocations() if a[0] in (blk, pad)]


PROBE_C = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "ushmem_capi.h"

/* probe(nbytes) -> (version, initialized, my_pe, n_pes, offset, heap, free status) */
static PyObject *probe(PyObject *self, PyObject *arg)
{
    (void)self;
    size_t n = PyLong_AsSize_t(arg), off = 0;
    if (PyErr_Occurred())
        return NULL;
    const ushmem_capi_t *u = ushmem_capi_import();
    if (!u)
        return NULL;
    void *p = u->malloc_local(n, 0, USHMEM_CAPI_MALLOC_HOST);
    long heap = p ? u->heap_offset(p, &off) : 0;
    int freed = p ? u->free_local(p) : -99;
    return Py_BuildValue("iiiinli", u->version, u->initialized(), u->my_pe(), u->n_pes(),
                         (Py_ssize_t)off, heap, freed);
}

static PyMethodDef methods[] = {{"probe", probe, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "capiprobe", NULL, -1, methods};
PyMODINIT_FUNC PyInit_capiprobe(void)
{
    return PyModule_Create(&mod);
}
"""


def test_capsule_from_a_c_extension(tmp_path, me, npes):
    """An extension built with ushmem.get_include() imports the table (ushmem_capi_import)
    and calls the library this package initialized."""
    import importlib.util
    import shutil
    import sysconfig
    cc = shutil.which(os.environ.get("CC", "cc"))
    pyinc = sysconfig.get_paths()["include"]
    if not cc or not os.path.exists(os.path.join(pyinc, "Python.h")):
        pytest.skip("needs a C compiler and Python.h")
    src = tmp_path / "capiprobe.c"
    src.write_text(PROBE_C)
    so = tmp_path / ("capiprobe" + sysconfig.get_config_var("EXT_SUFFIX"))
    r = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-Wall", "-Werror", f"-I{pyinc}",
                        f"-I{ushmem.get_include()}", str(src), "-o", str(so)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    spec = importlib.util.spec_from_file_location("capiprobe", so)
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    version, init, pe, n, off, heap, freed = probe.probe(4096)
    assert (version, init, pe, n, heap, freed) == (1, 1, me, npes, MALLOC_HOST, 0)
    assert ushmem.heap_addr(off, device=False) % 64 == 0  # a block of this PE's host heap, freed again
    with pytest.raises(TypeError):
        probe.probe("x")


def _run(code, **env):
    """Run code in a fresh interpreter alone: none of the launcher's variables, and no
    USHMEM_LOCAL* (no local part unless env sets one)."""
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("USHMEM_RANK", "USHMEM_NPES", "USHMEM_LOCAL", "USHMEM_BOOT",
                                  "USHMEM_SECRET", "USHMEM_LAUNCHER", "USHMEM_DEVICE_LOCAL",
                                  "OMPI_", "PMI", "RANK", "WORLD_SIZE", "LOCAL_", "MASTER_",
                                  "TORCHELASTIC"))}
    clean.update(env)
    clean["PYTHONPATH"] = os.pathsep.join([HERE, TESTS, clean.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", code], env=clean,
                          capture_output=True, text=True, timeout=120)


STATE = """
import ushmem
from test_local_blocks import capi_table
t = capi_table()
seen = [(t.initialized(), t.my_pe(), t.n_pes())]
ushmem.init()
seen.append((t.initialized(), t.my_pe(), t.n_pes()))
ushmem.finalize()
seen.append((t.initialized(), t.my_pe(), t.n_pes()))
print(seen)
"""


@alone
def test_capsule_state_before_init_and_after_finalize():
    r = _run(STATE)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "[(0, -1, -1), (1, 0, 1), (0, -1, -1)]", r.stdout
    assert r.stderr == "", r.stderr  # the state queries print nothing


NO_LOCAL_PART = """
import os, warnings, ushmem
from test_local_blocks import capi_table, MALLOC_HOST
t = capi_table()
ushmem.init()
try:
    ushmem.malloc_local(64, device=False)
except ushmem.Error as e:
    print("no part:", e.code == ushmem.ERR_NOMEM, "USHMEM_LOCAL_HEAP_SIZE" in e.message,
          "has no local part" in e.message)
print("C API gives NULL:", t.malloc_local(64, 0, MALLOC_HOST) is None)
raw = ushmem.malloc(64)
print("offset:", ushmem.heap_offset(raw)[1] == (ushmem.cuda_device() is not None))
ushmem.free(raw)
ushmem.finalize()
# read at init: set it now, and the next instance has a local part
os.environ["USHMEM_LOCAL_HEAP_SIZE"] = "4M"
ushmem.init()
p = ushmem.malloc_local(1000, device=False)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    ushmem.finalize()
print("leak:", any("malloc_local of 1000 bytes" in str(x.message) for x in w))
"""


@alone
def test_without_a_local_part():
    r = _run(NO_LOCAL_PART)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[:4] == ["no part: True True True", "C API gives NULL: True",
                                        "offset: True", "leak: True"], r.stdout
    assert "has no local part" in r.stderr  # the library's line, printed too
