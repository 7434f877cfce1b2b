"""Single-PE view of the API: constants, queries, buffers, tensor and array
helpers, barriers, and that bad arguments raise instead of aborting."""
import os

import numpy as np
import pytest

import ushmem


def test_constants():
    assert ushmem.SUCCESS == 0
    assert (ushmem.SIGNAL_SET, ushmem.SIGNAL_ADD) == (0, 1)
    cmps = [ushmem.CMP_EQ, ushmem.CMP_NE, ushmem.CMP_GT, ushmem.CMP_GE, ushmem.CMP_LT,
            ushmem.CMP_LE]
    assert cmps == list(range(6))
    assert ushmem.THREAD_SINGLE < ushmem.THREAD_FUNNELED < ushmem.THREAD_SERIALIZED \
        < ushmem.THREAD_MULTIPLE
    codes = [getattr(ushmem, n) for n in dir(ushmem) if n.startswith("ERR_")]
    assert len(codes) == len(set(codes)) and all(c < 0 for c in codes)
    assert ushmem.UNIQUEID_BYTES == 128
    assert isinstance(ushmem.TEAM_WORLD, ushmem.Team) and ushmem.TEAM_WORLD
    assert not ushmem.TEAM_INVALID and not ushmem.TEAM_INVALID.valid
    assert ushmem.HAVE_CUDA in (True, False)
    assert issubclass(ushmem.Error, RuntimeError)
    assert issubclass(ushmem.LeakWarning, UserWarning)


def test_queries(me, npes):
    assert 0 <= me < npes
    if "USHMEM_TEST_NPES" in os.environ:
        assert npes == int(os.environ["USHMEM_TEST_NPES"])
    assert ushmem.team_my_pe(ushmem.TEAM_WORLD) == me == ushmem.TEAM_WORLD.my_pe()
    assert ushmem.team_n_pes(ushmem.TEAM_WORLD) == npes
    assert ushmem.query_thread() in (ushmem.THREAD_SINGLE, ushmem.THREAD_FUNNELED,
                                     ushmem.THREAD_SERIALIZED, ushmem.THREAD_MULTIPLE)
    assert ushmem.info_get_version() == (ushmem.MAJOR_VERSION, ushmem.MINOR_VERSION) == (1, 6)
    assert ushmem.info_get_name().startswith("ushmem")
    assert all(ushmem.pe_accessible(pe) for pe in range(npes))
    assert not ushmem.pe_accessible(npes) and not ushmem.pe_accessible(-1)
    assert ushmem.wtime() > 0


def test_buffers(me, sym_bytes):
    z = sym_bytes(1000, zero=True)
    assert bytes(z) == bytes(1000)
    b = sym_bytes(3)
    assert len(b) == 3
    addrs = {a for a, _, _ in ushmem.live_allocations()}
    assert z.ptr in addrs and b.ptr in addrs and ushmem.buffer_of(z.ptr) is z
    with pytest.raises(ValueError):
        ushmem.create_buffer(0)
    with pytest.raises(ValueError):
        ushmem.create_buffer(-5)
    with pytest.raises(TypeError):
        ushmem.create_buffer("big")
    with pytest.raises(ValueError):
        ushmem.create_buffer(8, device="tpu")
    with pytest.raises(ValueError):
        ushmem.create_buffer(8, device=-1)
    if ushmem.cuda_device() is None:  # with a device: test_cuda.py
        for dev in ("cuda", "cuda:0", 0):
            with pytest.raises(ushmem.Error) as ei:
                ushmem.create_buffer(8, device=dev)
            assert ei.value.code == ushmem.ERR_UNSUPPORTED and "CUDA" in ei.value.message
    cpu = sym_bytes(8)
    assert cpu.device == "cpu"
    ushmem.barrier_all()


def test_on_stream_forms_on_host(me, data, sym_bytes, cuda_bound):
    n = 64
    buf = sym_bytes(n)
    ushmem.putmem_on_stream(buf, data.bytes(me, n), n, me, None)  # host memory: now
    out = bytearray(n)
    ushmem.getmem_on_stream(out, buf, n, me)  # stream omitted == None
    assert bytes(out) == data.bytes(me, n)
    if not cuda_bound:  # no device: a stream cannot be used (with one: test_cuda.py)
        for call in (lambda: ushmem.putmem_on_stream(buf, b"x", 1, me, 12345),
                     lambda: ushmem.barrier_all_on_stream(777),
                     lambda: ushmem.quiet_on_stream(1)):
            with pytest.raises(ushmem.Error) as ei:
                call()
            assert ei.value.code == ushmem.ERR_UNSUPPORTED
    for bad in ("stream", 1.5, object()):
        with pytest.raises(TypeError, match="stream"):
            ushmem.putmem_on_stream(buf, b"x", 1, me, bad)
    with pytest.raises(ValueError, match="negative"):
        ushmem.quiet_on_stream(-3)
    ushmem.quiet_on_stream(None)
    ushmem.sync_all_on_stream()
    ushmem.barrier_all_on_stream(None)


def test_device_argument_resolution(monkeypatch):
    """What init(device=...) binds (the library is not involved: no collective)."""
    r = ushmem._resolve_device
    assert r("cpu") == "cpu" and r("host") == "cpu"
    assert r("cuda:3") == 3 and r(2) == 2
    for bad in ("tpu", "cuda:x", -1, True):
        with pytest.raises((ValueError, TypeError)):
            r(bad)
    monkeypatch.setenv("USHMEM_DEVICE", "5")
    assert r(None) is None  # the library reads USHMEM_DEVICE itself
    try:
        import torch
    except ImportError:
        return
    assert r(torch.device("cuda", 1)) == 1 and r(torch.device("cpu")) == "cpu"


def test_barriers():
    for _ in range(3):
        ushmem.barrier_all()
        ushmem.sync_all()
        ushmem.barrier(ushmem.TEAM_WORLD)
        ushmem.team_sync(ushmem.TEAM_WORLD)
        ushmem.barrier_on_stream(ushmem.TEAM_WORLD, None)
        ushmem.fence()
        ushmem.quiet()


def test_bad_arguments_raise(me, npes, sym_bytes):
    buf = sym_bytes(16)
    cases = [
        (ushmem.Error, ushmem.ERR_BADPE, lambda: ushmem.putmem(buf, b"x", 1, npes)),
        (ushmem.Error, ushmem.ERR_BADPE, lambda: ushmem.getmem(bytearray(1), buf, 1, -1)),
        (ushmem.Error, ushmem.ERR_BADPE, lambda: ushmem.putmem(buf, b"x", 1, 2 ** 40)),
        (ushmem.Error, ushmem.ERR_NOTSYM, lambda: ushmem.putmem(bytearray(8), b"x", 1, me)),
        (ushmem.Error, ushmem.ERR_NOTSYM, lambda: ushmem.putmem(buf.ptr + 8, b"x" * 9, 9, me)),
        (ushmem.Error, ushmem.ERR_NOTSYM, lambda: ushmem.getmem(bytearray(8), 4096, 8, me)),
        (ValueError, None, lambda: ushmem.putmem(buf, b"x" * 17, 17, me)),
        (ValueError, None, lambda: ushmem.putmem(buf, b"x", 2, me)),
        (ValueError, None, lambda: ushmem.putmem(buf, b"x", -1, me)),
        (ValueError, None, lambda: ushmem.getmem(b"immutable", buf, 4, me)),
        (ValueError, None, lambda: ushmem.getmem(np.zeros((4, 4))[:, 0], buf, 4, me)),
        (TypeError, None, lambda: ushmem.putmem(buf, "text", 1, me)),
        (TypeError, None, lambda: ushmem.putmem(buf, b"x", 1, "0")),
        (TypeError, None, lambda: ushmem.putmem(buf, b"x", 1)),
        (TypeError, None, lambda: ushmem.barrier(1)),
        (TypeError, None, lambda: ushmem.barrier("TEAM_WORLD")),
        (ushmem.Error, ushmem.ERR_BADPE, lambda: ushmem.broadcastmem(ushmem.TEAM_WORLD, buf,
                                                                     buf, 4, npes)),
        (ushmem.Error, ushmem.ERR_NOTSYM, lambda: ushmem.broadcastmem(ushmem.TEAM_WORLD, buf,
                                                                      bytearray(4), 4, 0)),
        (ValueError, None, lambda: ushmem.alltoallmem(ushmem.TEAM_WORLD, buf, buf, 17, )),
    ]
    for exc, code, call in cases:
        with pytest.raises(exc) as ei:
            call()
        if code is not None:
            assert ei.value.code == code, (ei.value, code)
            assert ei.value.message and str(ei.value) == ei.value.message
    ushmem.barrier_all()


@pytest.mark.requires_mapped_peers
@pytest.mark.requires_torch
def test_tensor_helpers(me, npes, device):
    import torch
    import ushmem.interop.torch as ut
    t = ut.create_tensor((3, 5), torch.float64, device=device)
    assert t.shape == (3, 5) and t.dtype == torch.float64 and t.is_contiguous()
    assert t.device.type == device
    z = ut.create_tensor(7, torch.int16, zero=True, device=device)
    assert z.shape == (7,) and not z.any()
    bases = ut.get_heap_bases(t)
    assert len(bases) == npes and bases[me] == t.data_ptr()
    t.fill_(me + 0.5)
    ut.barrier_all()
    peer = ut.get_peer_tensor(t, (me + 1) % npes)
    assert peer.data_ptr() != t.data_ptr() or npes == 1
    assert peer.shape == t.shape and peer.dtype == t.dtype
    mine = ut.get_peer_tensor(t, me)
    assert mine is not t and mine.data_ptr() == t.data_ptr()
    col = ut.get_peer_tensor(t[:, 1], (me + 1) % npes)  # strided view
    assert col.shape == (3,) and col.stride() == t[:, 1].stride()
    assert peer.device == t.device and col.device == t.device
    values = (peer.cpu().clone(), col.cpu().clone())
    ut.barrier_all()
    with pytest.raises(ValueError):
        ut.free_tensor(torch.zeros(3))
    with pytest.raises(ValueError):
        ut.create_tensor((0, 3))
    if ushmem.cuda_device() is None:
        with pytest.raises(ushmem.Error) as ei:
            ut.create_tensor(4, device="cuda")
        assert ei.value.code == ushmem.ERR_UNSUPPORTED
    with pytest.raises(TypeError):
        ut.free_tensor([1, 2])
    ut.free_tensor(t)
    ut.free_tensor(z)
    with pytest.raises(ValueError):
        ut.free_tensor(t)  # already freed
    assert torch.all(values[0] == (me + 1) % npes + 0.5)
    assert torch.all(values[1] == (me + 1) % npes + 0.5)


@pytest.mark.requires_torch
def test_tensor_dtypes_roundtrip(me, data, device):
    import torch
    import ushmem.interop.torch as ut
    for dt in (torch.float32, torch.float64, torch.int64, torch.int32, torch.int8, torch.uint8,
               torch.bool, torch.float16, torch.bfloat16, torch.complex64):
        t = ut.create_tensor((2, 9), dt, device=device)
        raw = torch.from_numpy(data.array(me, 18 * t.element_size(), np.uint8, str(dt)))
        src = (raw & 1).bool().view(2, 9) if dt == torch.bool else raw.view(dt).view(2, 9)
        src = src.to(device)
        ut.put(t, src, me)
        back = torch.empty_like(src)
        ut.get(back, t, me)
        back = back.cpu()  # waits for the current stream
        ut.free_tensor(t)
        assert torch.equal(back.view(torch.uint8), src.cpu().view(torch.uint8)), dt


@pytest.mark.requires_mapped_peers
def test_numpy_helpers(me, npes, data):
    import ushmem.interop.numpy as unp
    a = unp.array((4, 6), np.int32)
    a[:] = data.array(me, 24, np.int32).reshape(4, 6)
    f = unp.zeros((3, 2), np.float32)
    assert not f.any() and f.shape == (3, 2)
    ushmem.barrier_all()
    left = (me - 1) % npes
    peer = unp.get_peer_array(a, left)
    got = peer.copy()
    assert unp.get_heap_bases(a)[me] == a.__array_interface__["data"][0]
    ushmem.barrier_all()
    unp.free_array(a)
    unp.free_array(f)
    with pytest.raises(ValueError):
        unp.free_array(np.zeros(3))
    with pytest.raises(ValueError):
        unp.array((0,))
    assert np.array_equal(got, data.array(left, 24, np.int32).reshape(4, 6))
