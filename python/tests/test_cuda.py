"""CUDA memory: device buffers and their interfaces, peer views, the blocking
API on device memory, the stream-ordered API (RMA, signals, barriers,
collectives, reductions) and the torch interop on CUDA tensors, each checked
with random data on every PE.

They run where torch has CUDA and ushmem bound a device at init (LOCAL_RANK,
USHMEM_DEVICE, or USHMEM_TEST_DEVICE for the raw tier) and are skipped
elsewhere; the first test checks that without a device every CUDA path
refuses cleanly (that one runs everywhere else).

Ordering rule used throughout: work is enqueued on one stream `s`, the stream
barriers order it across PEs, and the host waits for `s` (s.synchronize())
before it looks at results or frees anything.
"""
import numpy as np
import pytest

import ushmem
from conftest import device_sync

cuda = [pytest.mark.requires_cuda, pytest.mark.requires_torch]


def test_cuda_paths_refuse_cleanly_without_a_device(me):
    if ushmem.cuda_device() is not None:
        pytest.skip("a CUDA device is bound")
    buf = ushmem.create_buffer(16)
    for call in (lambda: ushmem.create_buffer(16, device="cuda"),
                 lambda: ushmem.SymmetricBuffer(16, device="cuda:0"),
                 lambda: ushmem.putmem_on_stream(buf, b"x", 1, me, 0xdead),
                 lambda: ushmem.signal_wait_until_on_stream(buf[:8], ushmem.CMP_GE, 0, 1),
                 lambda: ushmem.alltoallmem_on_stream(ushmem.TEAM_WORLD, buf, buf, 1, 2),
                 lambda: ushmem.reduce_on_stream(ushmem.TEAM_WORLD, buf, buf, 1, "int64", "sum",
                                                 3),
                 lambda: ushmem.init_attr(0, 1, bytes(128), device=0)):
        with pytest.raises(ushmem.Error) as ei:
            call()
        assert ei.value.code in (ushmem.ERR_UNSUPPORTED, ushmem.ERR_STATE)
    assert ushmem.cuda_device() is None
    buf.free()


# ---- helpers (CUDA tests only) ----

def _t():
    import torch
    return torch


def _dev():
    return ushmem.cuda_device()


def _cuda_bytes(data, pe, n, tag=""):
    """data.bytes(pe, n, tag) as a uint8 CUDA tensor."""
    torch = _t()
    return torch.frombuffer(bytearray(data.bytes(pe, n, tag)), dtype=torch.uint8).to(
        f"cuda:{_dev()}")


def _tensor(buf):
    """A uint8 CUDA tensor over a device SymmetricBuffer (or view)."""
    return _t().utils.dlpack.from_dlpack(buf)


def _host_bytes(t):
    return t.cpu().numpy().tobytes()


# ---- buffers and interfaces ----

def _cuda_test(fn):
    for m in cuda:
        fn = m(fn)
    return fn


@_cuda_test
def test_cuda_device_buffers(me, npes):
    torch = _t()
    dev = _dev()
    assert 0 <= dev < torch.cuda.device_count()
    bufs = [ushmem.create_buffer(64, device="cuda"), ushmem.create_buffer(64, device=dev),
            ushmem.SymmetricBuffer(64, device=f"cuda:{dev}"),
            ushmem.create_buffer(64, device=torch.device("cuda", dev)),
            ushmem.create_buffer(4096, device="cuda", zero=True),
            ushmem.create_buffer(64), ushmem.SymmetricBuffer(64)]  # default: the device heap
    host = ushmem.create_buffer(64, device="cpu")  # host memory next to device memory in one job
    for b in bufs:
        assert b.device == f"cuda:{dev}" and b.owning and b.pe == me and "cuda" in repr(b)
    assert host.device == "cpu"
    live = {a: k for a, _, k in ushmem.live_allocations()}
    assert all(live[b.ptr] == "SymmetricBuffer" for b in bufs)
    zeros = bytearray(b"\xff" * 4096)
    ushmem.getmem(zeros, bufs[4], 4096, me)  # blocking get from device memory
    errors = []
    for d in (dev + 1, f"cuda:{dev + 1}"):  # refused before anything collective happens
        try:
            ushmem.create_buffer(8, device=d)
            errors.append(None)
        except ushmem.Error as e:
            errors.append(e.code)
    for b in bufs + [host]:
        b.free()
    assert zeros == bytes(4096)
    assert errors == [ushmem.ERR_INVALID] * 2


@_cuda_test
def test_cuda_buffer_interfaces(me, data):
    torch = _t()
    dev = _dev()
    buf = ushmem.create_buffer(256, device="cuda")
    cai = buf.__cuda_array_interface__
    assert cai["data"] == (buf.ptr, False) and cai["shape"] == (256,)
    assert cai == {"data": (buf.ptr, False), "shape": (256,), "typestr": "<i1",
                   "strides": None, "version": 3}  # the seed's exact dictionary
    assert buf.__dlpack_device__() == (2, dev)
    assert not hasattr(buf, "__array_interface__")
    with pytest.raises(BufferError):
        memoryview(buf)
    with pytest.raises(ushmem.Error):
        buf[0]
    with pytest.raises(BufferError):
        buf.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        buf.__dlpack__(dl_device=(1, 0))
    a = torch.as_tensor(buf, device=f"cuda:{dev}")      # __cuda_array_interface__
    b = torch.utils.dlpack.from_dlpack(buf)              # __dlpack__ (torch's keywords)
    c = torch.from_dlpack(buf)
    # __cuda_array_interface__ says "<i1" as the seed's buffers do; DLPack says uint8
    for t, dtype in ((a, torch.int8), (b, torch.uint8), (c, torch.uint8)):
        assert t.is_cuda and t.device.index == dev and t.dtype == dtype
        assert t.data_ptr() == buf.ptr and t.numel() == 256
    view = buf[16:80]
    assert view.device == buf.device and view.ptr == buf.ptr + 16 and not view.owning
    assert view.__cuda_array_interface__["shape"] == (64,)
    payload = data.bytes(me, 64)
    _tensor(view).copy_(torch.frombuffer(bytearray(payload), dtype=torch.uint8))
    torch.cuda.synchronize()
    back = bytearray(64)
    ushmem.getmem(back, buf[16:], 64, me)
    del a, b, c
    buf.free()
    assert bytes(back) == payload
    with pytest.raises(ushmem.Error) as ei:  # views die with their buffer
        ushmem.getmem(bytearray(1), view, 1, me)
    assert ei.value.code == ushmem.ERR_FREED


@pytest.mark.requires_mapped_peers
@_cuda_test
def test_cuda_peer_buffers_and_heap_bases(me, npes, data):
    torch = _t()
    n = 1000
    buf = ushmem.create_buffer(n * npes, device="cuda")
    bases = ushmem.get_heap_bases(buf)
    views = [ushmem.get_peer_buffer(buf, pe) for pe in range(npes)]
    for pe, v in enumerate(views):  # store my block straight into every peer's device memory
        _tensor(v)[me * n:(me + 1) * n].copy_(_cuda_bytes(data, me, n, f"->{pe}"))
    torch.cuda.synchronize()
    ushmem.barrier_all()
    mine = _host_bytes(_tensor(buf))
    theirs = [_host_bytes(_tensor(v)[pe * n:(pe + 1) * n]) for pe, v in enumerate(views)]
    ushmem.barrier_all()
    info = [(v is not buf, v.owning, v.pe, v.base is buf, v.device, v.ptr, v.sym_ptr)
            for v in views]
    acc = [ushmem.addr_accessible(buf, pe) for pe in range(npes)]
    ptrs = [ushmem.ptr(buf, pe) for pe in range(npes)]
    del views
    buf.free()
    assert len(bases) == npes and bases[me] == buf.ptr and all(bases)
    assert ptrs == bases and all(acc)
    for pe, (notbuf, owning, vpe, base, device, ptr, sym) in enumerate(info):
        assert notbuf and not owning and vpe == pe and base
        assert device == f"cuda:{_dev()}" and ptr == bases[pe] and sym == buf.ptr
    for j in range(npes):
        assert mine[j * n:(j + 1) * n] == data.bytes(j, n, f"->{me}"), f"from PE {j}"
        assert theirs[j] == data.bytes(j, n, f"->{j}")


@_cuda_test
def test_cuda_blocking_api_on_device_memory(me, npes, data):
    """putmem/getmem/putmem_signal/signal_wait_until/atomics (the host API) on device memory."""
    n = 3001
    right, left = (me + 1) % npes, (me - 1) % npes
    buf = ushmem.create_buffer(n, device="cuda")
    sig = ushmem.create_buffer(8, device="cuda", zero=True)
    ctr = ushmem.create_buffer(8, device="cuda", zero=True)
    ushmem.putmem(buf, data.bytes(me, n, "blk"), n, right)     # host bytes -> device
    ushmem.barrier_all()
    got = bytearray(n)
    ushmem.getmem(got, buf, n, me)                              # device -> host
    fromright = _t().zeros(n, dtype=_t().uint8, device=f"cuda:{_dev()}")
    ushmem.getmem(fromright, buf, n, right)                     # device -> local CUDA tensor
    ushmem.barrier_all()
    ushmem.putmem_signal(buf, _cuda_bytes(data, me, n, "sig"), n, sig, 5, ushmem.SIGNAL_SET,
                         right)
    v = ushmem.signal_wait_until(sig, ushmem.CMP_EQ, 5)
    got2 = bytearray(n)
    ushmem.getmem(got2, buf, n, me)
    fetched = []
    for _ in range(10):
        fetched.append(ushmem.uint64_atomic_fetch_add(ctr, me + 1, 0))
    ushmem.barrier_all()
    total = ushmem.uint64_atomic_fetch(ctr, 0)
    final_sig = ushmem.signal_fetch(sig)
    ushmem.barrier_all()
    for b in (buf, sig, ctr):
        b.free()
    assert bytes(got) == data.bytes(left, n, "blk")
    assert _host_bytes(fromright) == data.bytes(me, n, "blk")
    assert v == 5 and final_sig == 5 and bytes(got2) == data.bytes(left, n, "sig")
    assert total == 10 * npes * (npes + 1) // 2
    assert len(set(fetched)) == len(fetched)


# ---- stream-ordered API ----

class _PtrStream:
    """A stream given as an object with .ptr (as cupy's)."""

    def __init__(self, s):
        self.ptr = s.cuda_stream


def _stream(kind):
    torch = _t()
    if kind == "none":
        return None, None
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())  # after whatever made the inputs
    arg = {"torch": s, "int": s.cuda_stream, "ptr": _PtrStream(s)}[kind]
    return s, arg


def _wait(s):
    if s is None:
        _t().cuda.synchronize()  # None: CUDA's legacy default stream
    else:
        s.synchronize()


@_cuda_test
@pytest.mark.parametrize("kind", ["torch", "int", "ptr", "none"])
def test_cuda_put_get_on_stream(me, npes, data, kind):
    torch = _t()
    n = 4099
    inbox = ushmem.create_buffer(n * npes, device="cuda")
    src = torch.cat([_cuda_bytes(data, me, n, f"to{pe}") for pe in range(npes)])
    back = torch.zeros(n * npes, dtype=torch.uint8, device=src.device)
    got = torch.zeros(n * npes, dtype=torch.uint8, device=src.device)
    s, st = _stream(kind)
    for pe in range(npes):  # my block in everybody's inbox
        ushmem.putmem_on_stream(inbox[me * n:(me + 1) * n], src[pe * n:(pe + 1) * n], n, pe, st)
    ushmem.barrier_all_on_stream(st)
    ushmem.getmem_on_stream(got, inbox, n * npes, me, st)
    for pe in range(npes):  # what I sent to pe, read back from pe
        ushmem.getmem_on_stream(back[pe * n:(pe + 1) * n], inbox[me * n:(me + 1) * n], n, pe, st)
    ushmem.quiet_on_stream(st)
    ushmem.barrier_all_on_stream(st)  # nobody frees before everyone read
    _wait(s)
    inbox.free()
    got, back = _host_bytes(got), _host_bytes(back)
    for j in range(npes):
        assert got[j * n:(j + 1) * n] == data.bytes(j, n, f"to{me}"), f"block from PE {j}"
        assert back[j * n:(j + 1) * n] == data.bytes(me, n, f"to{j}"), f"read back from PE {j}"


@_cuda_test
def test_cuda_streams_with_host_memory(me, npes, data):
    """Host buffers with a stream (stream-ordered host callbacks), device buffers with
    None (legacy default stream) and pageable host sources."""
    torch = _t()
    n = 777
    right, left = (me + 1) % npes, (me - 1) % npes
    hbuf = ushmem.create_buffer(n, device="cpu")
    dbuf = ushmem.create_buffer(n, device="cuda")
    payload = data.bytes(me, n, "h")
    s = torch.cuda.Stream()
    ushmem.putmem_on_stream(hbuf, payload, n, right, s)      # host -> host, on s
    ushmem.putmem_on_stream(dbuf, payload, n, right, None)   # pageable host -> device, stream 0
    s.synchronize()
    torch.cuda.synchronize()
    ushmem.barrier_all()
    hgot = bytes(hbuf)
    dgot = bytearray(n)
    ushmem.getmem(dgot, dbuf, n, me)
    pulled = torch.empty(n, dtype=torch.uint8, device=f"cuda:{_dev()}")
    ushmem.getmem_on_stream(pulled, hbuf, n, right, s)       # host symmetric -> device, on s
    s.synchronize()
    ushmem.barrier_all()
    hbuf.free()
    dbuf.free()
    assert hgot == data.bytes(left, n, "h") and bytes(dgot) == data.bytes(left, n, "h")
    assert _host_bytes(pulled) == payload


@_cuda_test
@pytest.mark.parametrize("sigmem", ["cuda", "cpu"])
def test_cuda_signals_on_stream(me, npes, data, sigmem):
    torch = _t()
    n = 2048
    right, left = (me + 1) % npes, (me - 1) % npes
    buf = ushmem.create_buffer(n, device="cuda")
    sig = ushmem.create_buffer(8, device="cpu" if sigmem == "cpu" else "cuda", zero=True)
    src = _cuda_bytes(data, me, n, "ps")
    got = torch.zeros(n, dtype=torch.uint8, device=src.device)
    s, st = _stream("torch")
    ushmem.barrier_all()  # the zeroed signal words everywhere before anyone signals
    ushmem.putmem_signal_on_stream(buf, src, n, sig, 7, ushmem.SIGNAL_SET, right, st)
    ushmem.signal_wait_until_on_stream(sig, ushmem.CMP_EQ, 7, st)
    ushmem.getmem_on_stream(got, buf, n, me, st)  # after the wait: left's data is there
    ushmem.barrier_all_on_stream(st)  # everybody saw 7 before anybody adds
    for pe in range(npes):  # every PE adds 1 to everybody's signal
        ushmem.putmem_signal_on_stream(buf, b"", 0, sig, 1, ushmem.SIGNAL_ADD, pe, st)
    ushmem.signal_wait_until_on_stream(sig, ushmem.CMP_GE, 7 + npes, st)
    for cmp, v in ((ushmem.CMP_NE, 0), (ushmem.CMP_GT, 6 + npes), (ushmem.CMP_LE, 7 + npes),
                   (ushmem.CMP_LT, 8 + npes), (ushmem.CMP_EQ, 7 + npes)):
        ushmem.signal_wait_until_on_stream(sig, cmp, v, st)  # all true by now
    ushmem.barrier_all_on_stream(st)
    s.synchronize()
    final = ushmem.signal_fetch(sig)
    waited = ushmem.signal_wait_until(sig, ushmem.CMP_GE, 7 + npes)
    ushmem.barrier_all()
    buf.free()
    sig.free()
    assert _host_bytes(got) == data.bytes(left, n, "ps")
    assert final == waited == 7 + npes


@_cuda_test
def test_cuda_barriers_and_syncs_on_stream(me, npes):
    """Round r: every PE puts r*1000+me into slot me of round r's row on every PE, then
    one of the stream barriers; a snapshot of the row taken after it on the same stream
    must be complete."""
    torch = _t()
    dev = f"cuda:{_dev()}"
    rounds = ["barrier_all", "sync_all+quiet", "barrier_world", "team_sync_world",
              "barrier_split", "team_sync_split"]
    nr = len(rounds)
    table = ushmem.create_buffer(8 * npes * nr, device="cuda", zero=True)
    tt = _tensor(table).view(torch.int64).view(nr, npes)
    _, split = ushmem.team_split_strided(ushmem.TEAM_WORLD, 0, 1, npes)  # a copy of WORLD
    vals = [torch.full((1,), r * 1000 + me, dtype=torch.int64, device=dev) for r in range(nr)]
    s, st = _stream("torch")  # after the fills
    snaps = []
    for r, how in enumerate(rounds):
        val = vals[r]
        for pe in range(npes):
            ushmem.putmem_on_stream(table[8 * (r * npes + me):8 * (r * npes + me + 1)], val, 8,
                                    pe, st)
        if how == "barrier_all":
            ushmem.barrier_all_on_stream(st)
        elif how == "sync_all+quiet":
            ushmem.quiet_on_stream(st)
            ushmem.sync_all_on_stream(st)
        elif how == "barrier_world":
            ushmem.barrier_on_stream(ushmem.TEAM_WORLD, st)
        elif how == "team_sync_world":
            ushmem.team_sync_on_stream(ushmem.TEAM_WORLD, st)
        elif how == "barrier_split":
            ushmem.barrier_on_stream(split, st)
        else:
            ushmem.team_sync_on_stream(split, st)
        with torch.cuda.stream(s):
            snaps.append(tt[r].clone())
    ushmem.barrier_all_on_stream(st)
    s.synchronize()
    split.destroy()
    table.free()
    for r, snap in enumerate(snaps):
        assert snap.tolist() == [r * 1000 + j for j in range(npes)], rounds[r]


@_cuda_test
def test_cuda_collectives_on_stream(me, npes, data):
    torch = _t()
    k = 300
    src = ushmem.create_buffer(k * npes, device="cuda")
    dst = ushmem.create_buffer(k * npes, device="cuda")
    ushmem.putmem(src, b"".join(data.bytes(me, k, f"->{j}") for j in range(npes)), k * npes, me)
    s, st = _stream("torch")
    out = []

    def snap():  # empty: no fill kernel on another stream to race with
        t = torch.empty(k * npes, dtype=torch.uint8, device=f"cuda:{_dev()}")
        ushmem.getmem_on_stream(t, dst, k * npes, me, st)
        out.append(t)
    ushmem.alltoallmem_on_stream(ushmem.TEAM_WORLD, dst, src, k, st)
    snap()
    ushmem.fcollectmem_on_stream(ushmem.TEAM_WORLD, dst, src, k, st)  # everyone's first block
    snap()
    for root in range(npes):
        ushmem.broadcastmem_on_stream(ushmem.TEAM_WORLD, dst, src, k * npes, root, st)
        snap()
    ushmem.barrier_all_on_stream(st)
    s.synchronize()
    # the blocking forms on device memory
    ushmem.alltoallmem(ushmem.TEAM_WORLD, dst, src, k)
    blocking = bytearray(k * npes)
    ushmem.getmem(blocking, dst, k * npes, me)
    ushmem.barrier_all()
    src.free()
    dst.free()
    out = [_host_bytes(t) for t in out]
    a2a = b"".join(data.bytes(j, k, f"->{me}") for j in range(npes))
    assert out[0] == a2a and bytes(blocking) == a2a
    assert out[1] == b"".join(data.bytes(j, k, "->0") for j in range(npes))
    for root in range(npes):
        assert out[2 + root] == b"".join(data.bytes(root, k, f"->{j}") for j in range(npes))


@_cuda_test
def test_cuda_reductions_on_stream(me, npes, data):
    torch = _t()
    import ushmem.interop.torch as ut
    n = 257
    cases = [("double", "sum", torch.float64, np.float64), ("int64", "max", torch.int64, np.int64),
             ("int32", "xor", torch.int32, np.int32), ("float", "min", torch.float32, np.float32)]

    def mine(pe, npdt, tag):
        a = data.array(pe, n, npdt, tag)
        return np.round(a * 1000) if a.dtype.kind == "f" else a  # exact sums in any order
    s, st = _stream("torch")
    results = []
    for type_, op, dt, npdt in cases:
        src = ut.create_tensor(n, dt, device="cuda")
        dst = ut.create_tensor(n, dt, device="cuda")
        src.copy_(torch.from_numpy(mine(me, npdt, type_)))
        s.wait_stream(torch.cuda.current_stream())
        ushmem.reduce_on_stream(ushmem.TEAM_WORLD, dst, src, n, type_, op, st)
        with torch.cuda.stream(s):
            results.append(dst.clone())
        ut.reduce(ushmem.TEAM_WORLD, src, src, op, stream=s)  # in place, via the interop
        with torch.cuda.stream(s):
            results.append(src.clone())
        ushmem.barrier_all_on_stream(st)
        s.synchronize()
        ut.free_tensor(src)
        ut.free_tensor(dst)
    with pytest.raises(ValueError, match="no sum reduction on bool"):
        ushmem.reduce_on_stream(ushmem.TEAM_WORLD, 0, 0, 1, "bool", "sum")
    fold = {"sum": np.add, "max": np.maximum, "xor": np.bitwise_xor, "min": np.minimum}
    for i, (type_, op, dt, npdt) in enumerate(cases):
        want = mine(0, npdt, type_)
        for pe in range(1, npes):
            want = fold[op](want, mine(pe, npdt, type_))
        assert np.array_equal(results[2 * i].cpu().numpy(), want), (type_, op)
        assert np.array_equal(results[2 * i + 1].cpu().numpy(), want), (type_, op, "in place")


# ---- torch interop on CUDA tensors ----

@_cuda_test
def test_cuda_tensor_ring(me, npes, data):
    torch = _t()
    import ushmem.interop.torch as ut
    t = ut.create_tensor((64,), torch.float32, device="cuda")
    assert t.is_cuda and t.device.index == _dev()
    src = torch.from_numpy(data.array(me, 64, np.float32)).cuda()
    ut.put(t, src, (me + 1) % npes)  # on the current stream
    ut.barrier_all()                 # stream-ordered
    torch.cuda.current_stream().synchronize()
    got = t.cpu().numpy()
    ut.barrier_all()
    ut.free_tensor(t)
    assert np.array_equal(got, data.array((me - 1) % npes, 64, np.float32))


@_cuda_test
def test_cuda_torch_interop(me, npes, data):
    torch = _t()
    import ushmem.interop.torch as ut
    dev = f"cuda:{_dev()}"
    right, left = (me + 1) % npes, (me - 1) % npes
    t = ut.create_tensor((5, 7), torch.float64, device="cuda")
    z = ut.create_tensor((3, 3), torch.int16, device=dev, zero=True)
    zeros = z.cpu()
    mine = torch.from_numpy(data.array(me, 35, np.float64).reshape(5, 7))
    ut.put(t, mine.to(dev), right)                   # CUDA -> CUDA, current stream
    ut.barrier_all()
    recv = t.cpu()
    got = torch.empty(5, 7, dtype=torch.float64, device=dev)
    ut.get(got, t, right)                            # right's copy holds mine
    got_cpu = torch.empty(5, 7, dtype=torch.float64)
    ut.get(got_cpu, t, left)                         # CUDA symmetric -> CPU tensor
    peer = ut.get_peer_tensor(t, right)
    col = ut.get_peer_tensor(t[:, 2], left)          # strided view of a peer's copy
    peer_vals, col_vals = peer.cpu(), col.cpu()
    ut.barrier_all()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    ut.put(t, mine, left, stream=s)                  # CPU source, explicit stream
    ut.barrier_all(stream=s)
    s.synchronize()
    recv2 = t.cpu()
    bases = ut.get_heap_bases(t)
    ut.barrier_all()
    # errors: mismatches are ValueError, CUDA memory off the heap is ushmem.Error
    errs = []
    for word, call in (("dtype", lambda: ut.put(t, torch.zeros(5, 7, device=dev), 0)),
                       ("shape", lambda: ut.put(t, torch.zeros(7, 5, dtype=torch.float64,
                                                               device=dev), 0)),
                       ("size", lambda: ut.alltoall(None, t, torch.zeros(3, dtype=torch.float64,
                                                                         device=dev))),
                       ("contiguous", lambda: ut.get(torch.zeros(7, 5, dtype=torch.float64,
                                                                 device=dev).t(), t, 0))):
        with pytest.raises(ValueError, match=word):
            call()
    private = torch.zeros(5, 7, dtype=torch.float64, device=dev)
    for call in (lambda: ut.put(private, mine, 0), lambda: ut.get(mine, private, 0),
                 lambda: ut.broadcast(None, private, t, 0),
                 lambda: ut.get_peer_tensor(private, 0)):
        with pytest.raises(ushmem.Error) as ei:
            call()
        errs.append(ei.value.code)
    ut.free_tensor(t)
    ut.free_tensor(z)
    assert not zeros.any()
    assert torch.equal(recv, torch.from_numpy(data.array(left, 35, np.float64).reshape(5, 7)))
    assert torch.equal(got.cpu(), mine)
    assert torch.equal(got_cpu, recv_of(left, data))  # left's copy: from left's left
    assert torch.equal(peer_vals, mine)
    assert torch.equal(col_vals, recv_of(left, data)[:, 2])
    assert torch.equal(recv2, torch.from_numpy(data.array(right, 35, np.float64).reshape(5, 7)))
    assert len(bases) == npes and all(bases)
    assert errs == [ushmem.ERR_NOTSYM] * 4


def recv_of(pe, data):
    """What PE pe's copy of t holds after the first put: its left neighbour's data."""
    import torch
    return torch.from_numpy(data.array((pe - 1) % ushmem.n_pes(), 35, np.float64).reshape(5, 7))


@_cuda_test
def test_cuda_device_sync_helper():
    device_sync()  # the conftest helper itself


def _cudart():
    """The CUDA runtime through ctypes (as the seed reads memory), or None."""
    import ctypes
    import glob
    import os
    names = ["libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"]
    torch_lib = os.path.join(os.path.dirname(_t().__file__), "lib")
    names += sorted(glob.glob(os.path.join(torch_lib, "libcudart*.so*")))
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


@_cuda_test
def test_cuda_raw_allocations_are_device_memory(me, npes, data):
    """With a GPU bound, malloc, calloc and align place memory as create_buffer does: on
    the device heap (issue 22, item 15; rocshmem4py's seed reads calloc's zeros back with
    cudaMemcpy(..., cudaMemcpyDeviceToHost), which failed on host memory). A non-symmetric
    CUDA tensor's peer table is a ValueError (item 14; the failed copy's CUDA error used to
    surface in the next torch call as torch.AcceleratorError)."""
    import ctypes
    torch = _t()
    import ushmem.interop.torch as ut
    n, dev = 256, _dev()
    right, left = (me + 1) % npes, (me - 1) % npes
    raw = {"malloc": ushmem.malloc(n), "calloc": ushmem.calloc(n // 4, 4),
           "align": ushmem.align(4096, n)}
    views = {k: ushmem.SymmetricBuffer(n, ptr=p, own_data=False) for k, p in raw.items()}
    places = {k: v.device for k, v in views.items()}
    zeros = _host_bytes(_tensor(views["calloc"]))
    ushmem.putmem(raw["malloc"], data.bytes(me, n, "malloc"), n, right)
    ushmem.putmem(raw["align"], data.bytes(me, n, "align"), n, right)
    ushmem.barrier_all()
    got = {k: _host_bytes(_tensor(views[k])) for k in ("malloc", "align")}
    d2h, leftover = None, None
    rt = _cudart()
    if rt is not None:
        host = (ctypes.c_uint8 * n)(*([0xAB] * n))
        d2h = rt.cudaMemcpy(host, ctypes.c_void_p(raw["calloc"]), ctypes.c_size_t(n), 2)
        leftover = rt.cudaGetLastError()
        d2h = (d2h, bytes(host))
    private = torch.zeros(10, device=f"cuda:{dev}")  # the seed's non-symmetric tensor
    with pytest.raises(ValueError, match="not a symmetric tensor"):
        ut.get_peer_ptr_table(private)
    t = ut.create_tensor((16,), torch.int32)
    table = ut.get_peer_ptr_table(t)
    bases = ushmem.get_peer_ptr_table(t)
    ushmem.barrier_all()
    ut.free_tensor(t)
    for p in raw.values():
        ushmem.free(p)
    assert places == dict.fromkeys(raw, f"cuda:{dev}"), places
    assert zeros == bytes(n)
    assert got == {k: data.bytes(left, n, k) for k in got}
    assert raw["align"] % 4096 == 0
    if d2h is not None:
        assert d2h == (0, bytes(n)) and leftover == 0, (d2h[0], leftover)
    assert table.is_cuda and table.dtype == torch.int64 and table.tolist() == bases
    assert bases[me] == t.data_ptr() and isinstance(bases, list)
