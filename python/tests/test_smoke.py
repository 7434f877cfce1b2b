"""Torch-free smoke tests: buffers, lifecycle, host <-> symmetric round trips,
put/get, peer buffers, signals, garbage collection and finalize."""
import gc
import warnings

import numpy as np
import pytest

import ushmem


def test_create_buffer_lifecycle(me):
    buf = ushmem.create_buffer(256, device="cpu")
    assert isinstance(buf, ushmem.SymmetricBuffer)
    assert len(buf) == buf.nbytes == 256
    assert buf.owning and not buf.freed and buf.base is None
    assert buf.pe == me and buf.device == "cpu" and buf.ptr == buf.sym_ptr
    assert buf.ptr % 64 == 0
    assert "owning" in repr(buf)
    view = buf[16:48]
    assert not view.owning and view.base is buf and view.nbytes == 32
    view2 = buf[0:8]
    view2.free()  # a view owns no memory: free() only marks it freed (the seed's semantics)
    assert view2.freed and view2._freed and not buf.freed
    with pytest.raises(ushmem.Error) as ei:
        ushmem.putmem(view2, b"x", 1, me)
    assert ei.value.code == ushmem.ERR_FREED
    with pytest.raises(BufferError):
        memoryview(view2)
    ushmem.putmem(view, b"y", 1, me)  # the other view and the buffer are untouched
    buf.free()
    assert buf.freed and view.freed
    buf.free()  # idempotent: no second collective, no error
    with pytest.raises(BufferError):
        memoryview(buf)
    with pytest.raises(ushmem.Error) as ei:
        ushmem.putmem(buf, b"x", 1, me)
    assert ei.value.code == ushmem.ERR_FREED
    with pytest.raises(ushmem.Error):
        ushmem.putmem(view, b"x", 1, me)
    # context manager frees collectively on exit
    with ushmem.SymmetricBuffer(64, device="cpu") as b2:
        assert not b2.freed
    assert b2.freed


def test_host_symmetric_roundtrip(me, data, sym_bytes):
    n = 4096 + 13
    buf = sym_bytes(n)
    payload = data.bytes(me, n)
    ushmem.putmem(buf, payload, n, me)  # host -> symmetric (own copy)
    assert bytes(buf) == payload
    back = bytearray(n)
    ushmem.getmem(back, buf, n, me)  # symmetric -> host
    assert bytes(back) == payload
    arr = np.zeros(n, np.uint8)
    ushmem.getmem(arr, buf, n, me)  # numpy destination
    assert arr.tobytes() == payload
    ushmem.barrier_all()


def test_put_get_ring(me, npes, data, sym_bytes):
    n = 10000
    buf = sym_bytes(n)
    right, left = (me + 1) % npes, (me - 1) % npes
    ushmem.putmem(buf, data.bytes(me, n), n, right)
    ushmem.barrier_all()
    received = bytes(buf)
    got = bytearray(n)
    ushmem.getmem(got, buf, n, right)  # what right received: from me
    ushmem.barrier_all()
    assert received == data.bytes(left, n)
    assert bytes(got) == data.bytes(me, n)


def test_nbi_then_quiet(me, npes, data, sym_bytes):
    n, k = 512, 8
    buf = sym_bytes(n * npes)
    for pe in range(npes):  # my block on every PE
        ushmem.putmem_nbi(buf[me * n:(me + 1) * n], data.bytes(me, n, str(pe)), n, pe)
    ushmem.quiet()
    ushmem.barrier_all()
    blocks = [bytes(buf[j * n:(j + 1) * n]) for j in range(npes)]
    fetched = bytearray(n * k)
    for i in range(k):  # get_nbi pieces of the left neighbour's block of mine
        ushmem.getmem_nbi(memoryview(fetched)[i * n:(i + 1) * n], buf[me * n:(me + 1) * n], n,
                          (me - 1) % npes)
    ushmem.quiet()
    ushmem.barrier_all()
    for j in range(npes):
        assert blocks[j] == data.bytes(j, n, str(me))
    assert bytes(fetched) == data.bytes(me, n, str((me - 1) % npes)) * k


@pytest.mark.requires_mapped_peers
def test_peer_buffer(me, npes, data, sym_bytes):
    n = 333
    buf = sym_bytes(n)
    ushmem.putmem(buf, data.bytes(me, n), n, me)
    ushmem.barrier_all()
    views = [ushmem.get_peer_buffer(buf, pe) for pe in range(npes)]
    contents = [bytes(v) for v in views]
    ushmem.barrier_all()
    # write into the right neighbour's copy through the view
    right = views[(me + 1) % npes]
    memoryview(right)[:8] = (1000 + me).to_bytes(8, "little")
    ushmem.barrier_all()
    head = int.from_bytes(bytes(buf[:8]), "little")
    ushmem.barrier_all()
    for pe, v in enumerate(views):
        assert v is not buf and not v.owning and v.pe == pe and v.base is buf
        assert v.sym_ptr == buf.ptr and v.nbytes == n
        assert contents[pe] == data.bytes(pe, n)
    assert views[me].ptr == buf.ptr  # the local "peer" view is a new view, not buf
    assert head == 1000 + (me - 1) % npes
    with pytest.raises(ushmem.Error) as ei:
        ushmem.get_peer_buffer(buf, npes)
    assert ei.value.code == ushmem.ERR_BADPE
    with pytest.raises(ushmem.Error) as ei:
        ushmem.get_peer_buffer(bytearray(8), 0)
    assert ei.value.code == ushmem.ERR_NOTSYM


def test_views_die_with_their_buffer(me):
    buf = ushmem.create_buffer(64, device="cpu")
    peer = ushmem.get_peer_buffer(buf, me)
    sl = buf[8:16]
    buf.free()
    for v in (peer, sl):
        assert v.freed
        with pytest.raises(BufferError):
            memoryview(v)
        with pytest.raises(ushmem.Error):
            ushmem.getmem(bytearray(1), v, 1, me)


def test_array_interface_and_dlpack(me, sym_bytes):
    buf = sym_bytes(64)
    a = np.asarray(buf)
    assert a.dtype == np.uint8 and a.shape == (64,)
    a[:] = np.arange(64, dtype=np.uint8)
    assert buf.__array_interface__["data"][0] == buf.ptr
    assert buf.__dlpack_device__() == (1, 0)
    d = np.from_dlpack(buf)
    assert d.__array_interface__["data"][0] == buf.ptr and d[63] == 63
    assert not hasattr(buf, "__cuda_array_interface__")  # host memory
    with pytest.raises(ValueError):
        buf[0:10:2]
    assert buf[5] == 5 and buf[-1] == 63
    ushmem.barrier_all()


def test_signal_ring(me, npes, data, sym_bytes):
    n = 1024
    buf, sig = sym_bytes(n), sym_bytes(8, zero=True)
    ushmem.barrier_all()
    right, left = (me + 1) % npes, (me - 1) % npes
    ushmem.putmem_signal(buf, data.bytes(me, n), n, sig, 7, ushmem.SIGNAL_SET, right)
    v = ushmem.signal_wait_until(sig, ushmem.CMP_EQ, 7)
    received = bytes(buf)
    ushmem.barrier_all()
    # every PE adds 1 to everyone's signal word
    for pe in range(npes):
        ushmem.putmem_signal_nbi(buf, b"", 0, sig, 1, ushmem.SIGNAL_ADD, pe)
    ushmem.signal_wait_until(sig, ushmem.CMP_GE, 7 + npes)
    ushmem.barrier_all()
    final = ushmem.signal_fetch(sig)
    ushmem.barrier_all()
    assert v == 7 and received == data.bytes(left, n)
    assert final == 7 + npes
    with pytest.raises(ValueError):
        ushmem.putmem_signal(buf, b"x", 1, sig, 1, 99, me)
    with pytest.raises(ValueError):
        ushmem.signal_wait_until(sig, 42, 0)
    with pytest.raises(ushmem.Error) as ei:
        ushmem.signal_wait_until(buf[1:9], ushmem.CMP_EQ, 0)  # misaligned
    assert ei.value.code == ushmem.ERR_INVALID


def test_signal_op_on_stream(me, npes, sym_bytes):
    """signal_op_on_stream with no stream on host memory: at once. Random
    adds from every PE to every PE, then a SET on the right neighbour; every
    PE checks the exact total it received and the value that was set."""
    import random

    sig, word = sym_bytes(8, zero=True), sym_bytes(8, zero=True)
    rng = random.Random(1234)  # the same table on every PE
    adds = [[rng.randrange(1, 1 << 20) for _ in range(npes)] for _ in range(npes)]
    ushmem.barrier_all()
    for pe in range(npes):
        ushmem.signal_op_on_stream(sig, adds[me][pe], ushmem.SIGNAL_ADD, pe)
    right = (me + 1) % npes
    ushmem.signal_op_on_stream(word, 1000 + me, ushmem.SIGNAL_SET, right, None)
    ushmem.quiet()
    ushmem.barrier_all()
    want = sum(adds[src][me] for src in range(npes))
    assert ushmem.signal_fetch(sig) == want
    assert ushmem.signal_fetch(word) == 1000 + (me - 1) % npes
    with pytest.raises(ValueError):
        ushmem.signal_op_on_stream(sig, 1, 99, me)
    with pytest.raises(ushmem.Error) as ei:
        ushmem.signal_op_on_stream(sig, 1, ushmem.SIGNAL_ADD, npes)
    assert ei.value.code == ushmem.ERR_BADPE
    ushmem.barrier_all()


def test_gc_warns_and_never_frees(me):
    buf = ushmem.create_buffer(128, device="cpu")
    addr = buf.ptr
    with pytest.warns(ushmem.LeakWarning, match="garbage-collected without free"):
        del buf
        gc.collect()
    kinds = {a: k for a, _, k in ushmem.live_allocations()}
    assert "garbage-collected" in kinds[addr]
    ushmem.barrier_all()
    ushmem.free(addr)  # collective; frees what the GC left
    assert addr not in {a for a, _, _ in ushmem.live_allocations()}


def test_init_state_is_honest(tier):
    assert ushmem.is_initialized()
    assert ushmem.init_method() in {"raw": ("raw",), "torch": ("torch",),
                                    "mpi": ("mpi",)}[tier]
    with pytest.raises(ushmem.Error) as ei:
        ushmem.init()
    assert ei.value.code == ushmem.ERR_STATE
    with pytest.raises(ushmem.Error):
        ushmem.init_attr(0, 1, bytes(128))
    with pytest.raises(ValueError):
        ushmem.init_attr(0, 1, b"short")


def test_finalize_reports_leaks_then_reinit(me, npes, reinit):
    buf = ushmem.create_buffer(100, device="cpu")
    raw = ushmem.malloc(200)
    _, team = ushmem.team_split_strided(ushmem.TEAM_WORLD, 0, 1, npes)
    nleaks = len(ushmem.live_allocations())
    try:
        with pytest.warns(ushmem.LeakWarning) as rec:
            ushmem.finalize()
    finally:
        if ushmem.is_initialized():
            ushmem.finalize()
        dead = {"init": ushmem.is_initialized(), "method": ushmem.init_method(),
                "buf": buf.freed, "team": team.valid}
        errors = []
        for call in (ushmem.my_pe, ushmem.n_pes, ushmem.barrier_all, ushmem.quiet,
                     lambda: ushmem.create_buffer(8), lambda: ushmem.putmem(buf, b"x", 1, 0),
                     ushmem.finalize):
            try:
                call()
                errors.append(None)
            except ushmem.Error as e:
                errors.append(e.code)
        try:
            memoryview(buf)
            view_error = None
        except BufferError as e:
            view_error = e
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            buf.free()  # a dead buffer: no-op, no collective
        reinit()
    assert any(f"{nleaks} symmetric allocation(s)" in str(w.message) for w in rec)
    assert dead == {"init": False, "method": None, "buf": True, "team": False}
    assert all(c in (ushmem.ERR_STATE, ushmem.ERR_FREED) for c in errors), errors
    assert view_error is not None
    assert ushmem.is_initialized() and ushmem.my_pe() == me and ushmem.n_pes() == npes
    assert ushmem.live_allocations() == []
    with pytest.raises(ushmem.Error):
        ushmem.free(raw)  # that allocation died with the old instance
    b2 = ushmem.create_buffer(16, device="cpu")
    ushmem.putmem(b2, b"0123456789abcdef", 16, (me + 1) % npes)
    ushmem.barrier_all()
    assert bytes(b2) == b"0123456789abcdef"
    b2.free()


def test_module_loading_default_kept():
    """The C library asks CUDA for eager module loading when it is loaded;
    the package keeps CUDA's default (lazy) for Python, and a user's choice
    either way (docs/cuda.md)."""
    import os
    import subprocess
    import sys

    code = "import os, ushmem; print(os.environ.get('CUDA_MODULE_LOADING'))"
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(ushmem.__file__)))
    for preset, want in ((None, "LAZY"), ("EAGER", "EAGER"), ("LAZY", "LAZY")):
        env = {k: v for k, v in os.environ.items() if k != "CUDA_MODULE_LOADING"}
        env["PYTHONPATH"] = pkg + os.pathsep + env.get("PYTHONPATH", "")
        for k in [k for k in env if k.startswith(("USHMEM_", "OMPI_", "PMIX_"))
                  and k != "USHMEM_PYTHON_EXT_DIR"]:  # (where the extension was built)
            del env[k]  # a plain process, not a PE of this job
        if preset:
            env["CUDA_MODULE_LOADING"] = preset
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == want, (preset, out.stdout, out.stderr)
