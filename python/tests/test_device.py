"""The device API from Python: the DeviceHandle mirror of shmemx_dev_t, the
handle's fields and peer table on a GPU, and a Triton kernel that stores into
its right neighbour's symmetric tensor and signals it (ushmem.triton).

The layout and host-side tests run everywhere (they need only the extension);
the handle tests need a CUDA device bound to ushmem; the Triton ring needs
Triton, a GPU and at least 2 PEs. The ring's receiver waits with the
stream-ordered signal_wait_until_on_stream (a stream memory operation), not a
device spin, so it is correct with several PEs on one GPU and no MPS.
"""
import ctypes
import importlib
import os

import numpy as np
import pytest

import ushmem
from conftest import device_sync

cuda = [pytest.mark.requires_cuda, pytest.mark.requires_torch]


def _cuda_test(fn):
    for m in cuda:
        fn = m(fn)
    return fn


def _have_triton():
    try:
        importlib.import_module("triton.language")
        return True
    except ImportError:
        return False


# ---- everywhere: the layout and the host-side logic ----

def test_layout_matches_c():
    fields, size = ushmem._ushmem._dev_layout()
    assert ctypes.sizeof(ushmem.DeviceHandle) == size
    mirror = ushmem.DeviceHandle._fields_
    assert [f[0] for f in mirror] == [name for name, _, _ in fields]
    for (name, ctype), (cname, off, csize) in zip(mirror, fields):
        assert getattr(ushmem.DeviceHandle, name).offset == off, name
        assert ctypes.sizeof(ctype) == csize, name
    # the types, not just the sizes: 32-bit unsigned where C has uint32_t, and so on
    kinds = {name: ctype for name, ctype in mirror}
    assert kinds["magic"] is ctypes.c_uint32 and kinds["flags"] is ctypes.c_uint32
    assert kinds["my_pe"] is ctypes.c_int32 and kinds["heap_base"] is ctypes.c_uint64
    assert kinds["gpu_pci"]._type_ is ctypes.c_int32 and kinds["gpu_pci"]._length_ == 3
    assert kinds["reserved"]._type_ is ctypes.c_uint64 and kinds["reserved"]._length_ == 3
    assert kinds["proxy"] is ctypes.c_uint64
    assert kinds["near_base"]._type_ is ctypes.c_uint64 and kinds["near_base"]._length_ == 12


def test_constants():
    assert ushmem.DEV_MAGIC == 0x75534844 and ushmem.DEV_VERSION == 2
    assert ushmem.DEV_NEAR_MAX == 12
    flags = (ushmem.DEV_F_WAIT_OK, ushmem.DEV_F_PEER_ATOMICS, ushmem.DEV_F_WORLD,
             ushmem.DEV_F_TIMESLICED, ushmem.DEV_F_ONE_GPU)
    assert sorted(flags) == [1, 2, 4, 8, 16]
    assert (ushmem.DEV_WAIT_SAFE, ushmem.DEV_WAIT_SHARED_GPU, ushmem.DEV_WAIT_MPS_SHARES,
            ushmem.DEV_WAIT_NO_DEVICE) == (0, 1, 2, 3)


def _fake_handle(n=3, me=1, base=0x7f0000000000, size=1 << 30):
    """A handle filled by hand (no GPU needed) with a made-up peer table."""
    h = ushmem.DeviceHandle(magic=ushmem.DEV_MAGIC, version=ushmem.DEV_VERSION, my_pe=me,
                            n_pes=n, team_start=0, team_stride=1, world_pe=me, world_n_pes=n,
                            flags=ushmem.DEV_F_WAIT_OK, heap_base=base, heap_size=size,
                            peer_base=base + (64 << 10))
    h.__dict__["_peer_bases"] = [base + (1 << 40), base, 0][:n]
    return h


def test_handle_helpers_without_a_gpu():
    h = _fake_handle()
    raw = h.bytes()
    assert len(raw) == ctypes.sizeof(h) and int.from_bytes(raw[:4], "little") == 0x75534844
    back = ushmem.DeviceHandle.from_buffer_copy(raw)
    assert back.heap_base == h.heap_base and back.my_pe == 1
    assert h.wait_ok and not h.peer_atomics and h.peer_base_ptr == h.heap_base + (64 << 10)
    addr = h.heap_base + 4096
    assert h.peer_address(addr, 1) == addr                       # the own PE: unchanged
    assert h.peer_address(addr, 0) == h.heap_base + (1 << 40) + 4096
    with pytest.raises(ushmem.Error) as ei:                       # unmapped peer
        h.peer_address(addr, 2)
    assert ei.value.code == ushmem.ERR_UNREACHABLE
    with pytest.raises(ushmem.Error) as ei:
        h.peer_address(addr, 3)
    assert ei.value.code == ushmem.ERR_BADPE
    with pytest.raises(ValueError):
        h.peer_address(h.heap_base - 1, 0)                        # below the heap
    with pytest.raises(ValueError):
        h.peer_address(h.heap_base + h.heap_size, 0)              # past it
    with pytest.raises(TypeError):
        h.peer_address("0x1000", 0)
    assert h.world_pe_of(2) == 2
    assert "wait_ok=True" in repr(h)


def test_device_why_and_refusal_without_a_device():
    if ushmem.cuda_device() is not None:
        pytest.skip("a CUDA device is bound")
    why = ushmem.device_why()
    assert isinstance(why, str) and "device heap" in why
    for call in (ushmem.device_handle, lambda: ushmem.device_handle(ushmem.TEAM_WORLD),
                 lambda: ushmem._ushmem._dev_peer_bases(None)):
        with pytest.raises(ushmem.Error) as ei:
            call()
        assert ei.value.code == ushmem.ERR_UNSUPPORTED
        assert "no device heap" in ei.value.message
    with pytest.raises(TypeError):
        ushmem.device_handle(3)


def test_triton_module_without_triton():
    import ushmem.triton as ust
    if ust.HAVE_TRITON:
        pytest.skip("triton is installed")
    for name in ("peer_ptr", "signal_set", "signal_add", "signal_set_relaxed",
                 "signal_add_relaxed", "signal_wait_until_ge", "fence_sys"):
        with pytest.raises(ImportError, match="needs Triton"):
            getattr(ust, name)()


# ---- with a GPU: the handle's fields and peer table ----

def _torch():
    import torch
    return torch


class _DeviceWords:
    """A __cuda_array_interface__ over n int64 words of device memory (the peer table)."""

    def __init__(self, addr, n):
        self.__cuda_array_interface__ = {"data": (addr, False), "shape": (n,), "typestr": "<i8",
                                         "strides": None, "version": 3, "stream": None}


@_cuda_test
def test_device_handle_fields(me, npes):
    torch = _torch()
    buf = ushmem.create_buffer(256, device="cuda")  # collective
    h = ushmem.device_handle()
    bases = ushmem.get_heap_bases(buf)
    peer_bases = h.peer_bases()
    why = ushmem.device_why()
    ushmem.barrier_all()
    buf.free()
    table = torch.as_tensor(_DeviceWords(h.peer_base_ptr, h.world_n_pes),
                            device=f"cuda:{ushmem.cuda_device()}").cpu().tolist()
    assert h.magic == 0x75534844 and h.version == 2
    assert (h.my_pe, h.n_pes, h.world_pe, h.world_n_pes) == (me, npes, me, npes)
    assert (h.team_start, h.team_stride) == (0, 1)
    assert h.flags & ushmem.DEV_F_WORLD
    assert h.heap_base <= buf.ptr < h.heap_base + h.heap_size
    assert bases[me] == buf.ptr
    assert peer_bases[me] == h.heap_base
    off = buf.ptr - h.heap_base
    for pe in range(npes):
        if bases[pe] is None:      # not mapped here (another host, no peer access)
            assert peer_bases[pe] == 0
            continue
        assert peer_bases[pe] != 0 and peer_bases[pe] + off == bases[pe]
        assert h.peer_address(buf.ptr, pe) == bases[pe]
        assert h.peer_address(buf.ptr + 7, pe) == bases[pe] + 7
    # the device-resident table kernels read is the same (as signed int64 words)
    assert [t & (2**64 - 1) for t in table] == peer_bases
    # the handle's own copy of it: DEV_NEAR_MAX entries from the first mapped PE
    first = next(pe for pe in range(npes) if peer_bases[pe])
    assert (h.near_first, h.near_n) == (first, min(ushmem.DEV_NEAR_MAX, npes - first))
    assert list(h.near_base[:h.near_n]) == peer_bases[first:first + h.near_n]
    assert not any(h.near_base[h.near_n:])
    assert h.wait_ok == (why is None)
    # GPU-scope barriers exactly where every PE is on this GPU and mapped, with no proxy
    sys_scope = os.environ.get("USHMEM_DEVICE_SCOPE") == "sys"
    assert h.one_gpu == (not sys_scope and h.gpu_pes == npes and all(peer_bases)
                         and h.proxy == 0)
    assert h.gpu_pes >= 1 and h.sm_total > 0 and 0 < h.sm_sum
    assert h.sync == h.heap_base + (128 << 10)
    assert h.abort_flag != 0


@_cuda_test
def test_team_device_handle(me, npes):
    # the reversed world: team PE i is world PE npes - 1 - i
    start, stride = (npes - 1, -1) if npes > 1 else (0, 1)
    status, rev = ushmem.team_split_strided(ushmem.TEAM_WORLD, start, stride, npes)
    assert status == 0
    h = ushmem.device_handle(rev)
    world = ushmem.device_handle()
    bases = h.peer_bases()
    with pytest.raises(ushmem.Error) as ei:
        ushmem.device_handle(ushmem.TEAM_INVALID)
    ushmem.team_destroy(rev)
    with pytest.raises(ushmem.Error):
        ushmem.device_handle(rev)               # destroyed
    assert ei.value.code == ushmem.ERR_INVALID
    assert (h.my_pe, h.n_pes, h.world_pe) == (npes - 1 - me, npes, me)
    assert (h.team_start, h.team_stride) == (start, stride)
    assert not h.flags & ushmem.DEV_F_WORLD and h.team_slot != world.team_slot
    assert bases == world.peer_bases()[::-1]
    assert h.heap_base == world.heap_base and h.peer_base == world.peer_base
    for pe in range(npes):
        assert h.world_pe_of(pe) == npes - 1 - pe


# ---- with Triton, a GPU and 2+ PEs: a kernel puts into its right neighbour ----

def _ring_kernels():
    import triton
    import triton.language as tl

    import ushmem.triton as ust

    @triton.jit
    def put_signal_kernel(src, dst, sig, peer_bases, my_base, pe, n, value,
                          ADD: tl.constexpr, RELAXED: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(src + offs, mask=mask)
        tl.store(ust.peer_ptr(dst + offs, peer_bases, my_base, pe), x, mask=mask)
        remote_sig = ust.peer_ptr(sig, peer_bases, my_base, pe)
        if RELAXED:     # quiet first, then a signal that orders nothing itself
            ust.fence_sys()
            if ADD:
                ust.signal_add_relaxed(remote_sig, value)
            else:
                ust.signal_set_relaxed(remote_sig, value)
        elif ADD:
            ust.signal_add(remote_sig, value)
        else:
            ust.signal_set(remote_sig, value)

    @triton.jit
    def read_table_kernel(table, out, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        t = tl.cast(table, tl.pointer_type(tl.int64))
        tl.store(out + offs, tl.load(t + offs, mask=offs < n), mask=offs < n)

    return put_signal_kernel, read_table_kernel


@_cuda_test
@pytest.mark.requires_multi_pe
@pytest.mark.parametrize("mode", ["set", "add", "set_relaxed", "add_relaxed"])
def test_triton_ring_put_signal(me, npes, data, mode):
    if not _have_triton():
        pytest.skip("needs triton")
    import ushmem.interop.torch as ut
    import ushmem.triton as ust
    torch = _torch()
    put_signal_kernel, read_table_kernel = _ring_kernels()
    dev = torch.device("cuda", ushmem.cuda_device())
    right, left = (me + 1) % npes, (me - 1) % npes
    n, block = 5000, 1024
    grid = (n + block - 1) // block                       # 5 programs, the last one partial
    dst = ut.create_tensor((n,), torch.float32, device=dev, zero=True)   # collective
    sig = ut.create_tensor((1,), torch.int64, device=dev, zero=True)    # the signal word
    src = torch.from_numpy(data.array(me, n, np.float32, mode)).to(dev)
    s = torch.cuda.current_stream(dev)
    ut.barrier_all()                # every PE's dst and sig exist, zeroed, before any store
    a = ust.put_signal_args(dst, right)
    sa = ust.put_signal_args(sig, right)
    # the signal: SET to a value once per program, or ADD 1 per program
    add = mode.startswith("add")
    value, expect = (1, grid) if add else (7, 7)
    put_signal_kernel[(grid,)](src, dst, sig, a.peer_bases, a.my_base, a.pe, n, value,
                               ADD=add, RELAXED=mode.endswith("_relaxed"), BLOCK=block)
    # wait on the stream (no device spin), then read what the left neighbour put
    ushmem.signal_wait_until_on_stream(sig, ushmem.CMP_GE, expect, s)
    got = dst.clone()
    table = torch.zeros(npes, dtype=torch.int64, device=dev)
    read_table_kernel[(1,)](a.peer_bases, table, npes, BLOCK=max(16, 1 << (npes - 1).bit_length()))
    s.synchronize()
    sigval = ushmem.signal_fetch(sig)
    h = ushmem.device_handle()
    remotes = (h.peer_address(dst.data_ptr(), right), h.peer_address(sig.data_ptr(), right))
    ushmem.barrier_all()            # every kernel done before anyone frees
    ut.free_tensor(dst)
    ut.free_tensor(sig)
    device_sync()
    expected = torch.from_numpy(data.array(left, n, np.float32, mode))
    assert torch.equal(got.cpu(), expected)
    assert sigval == expect
    assert (a.remote, sa.remote) == remotes
    assert [t & (2**64 - 1) for t in table.cpu().tolist()] == h.peer_bases()
    assert a.pe == right and a.my_base == h.heap_base and a.peer_bases == h.peer_base_ptr


def _wait_kernels():
    import triton
    import triton.language as tl

    import ushmem.triton as ust

    @triton.jit
    def producer(data, sig, peer_bases, my_base, pe, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(ust.peer_ptr(data + offs, peer_bases, my_base, pe),
                 offs.to(tl.float32) + 0.5, mask=offs < n)
        ust.fence_sys()
        ust.signal_set(ust.peer_ptr(sig, peer_bases, my_base, pe), 3)

    @triton.jit
    def consumer(data, sig, out, seen, n, BLOCK: tl.constexpr):
        v = ust.signal_wait_until_ge(sig, 3)
        offs = tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(data + offs, mask=offs < n), mask=offs < n)
        tl.store(seen, (v + ust.signal_fetch(sig)).to(tl.int64))

    return producer, consumer


@_cuda_test
def test_triton_device_wait(me, npes):
    """A kernel spins (signal_wait_until_ge) on this PE's signal while a kernel on
    another stream of this PE puts into it and signals: only where device waits are
    allowed (one PE per GPU, or MPS with fitting SM shares)."""
    if not _have_triton():
        pytest.skip("needs triton")
    h = ushmem.device_handle()
    if not h.wait_ok:
        pytest.skip(f"device waits are off: {ushmem.device_why()}")
    import ushmem.interop.torch as ut
    import ushmem.triton as ust
    torch = _torch()
    producer, consumer = _wait_kernels()
    dev = torch.device("cuda", ushmem.cuda_device())
    n = 1000
    data = ut.create_tensor((n,), torch.float32, device=dev, zero=True)   # collective
    sig = ut.create_tensor((1,), torch.int64, device=dev, zero=True)     # collective
    out = torch.zeros(n, dtype=torch.float32, device=dev)
    seen = torch.zeros(1, dtype=torch.int64, device=dev)
    a = ust.put_signal_args(data, me)          # the own PE: peer_ptr returns the pointer
    # compile and load both kernels first, in the safe order (loading a module while a
    # kernel spins may wait for it), then start over from zero
    producer[(1,)](data, sig, a.peer_bases, a.my_base, a.pe, n, BLOCK=1024)
    consumer[(1,)](data, sig, out, seen, n, BLOCK=1024)
    torch.cuda.synchronize(dev)
    for t in (data, sig, out, seen):
        t.zero_()
    torch.cuda.synchronize(dev)
    s1, s2 = torch.cuda.Stream(dev), torch.cuda.Stream(dev)
    with torch.cuda.stream(s1):                # the waiter first: it spins until signalled
        consumer[(1,)](data, sig, out, seen, n, BLOCK=1024)
    with torch.cuda.stream(s2):
        producer[(1,)](data, sig, a.peer_bases, a.my_base, a.pe, n, BLOCK=1024)
    s1.synchronize()
    s2.synchronize()
    ushmem.barrier_all()
    ut.free_tensor(data)
    ut.free_tensor(sig)
    assert torch.equal(out.cpu(), torch.arange(n, dtype=torch.float32) + 0.5)
    assert int(seen.item()) == 6


def _vector_kernels():
    import triton
    import triton.language as tl

    import ushmem.triton as ust

    @triton.jit
    def probe(ivars, values, n, start, out, idx, CMP: tl.constexpr):
        tl.store(out + 0, ust.test_all(ivars, n, CMP, 7).to(tl.int64))
        tl.store(out + 1, ust.test_all_vector(ivars, n, CMP, values).to(tl.int64))
        tl.store(out + 2, ust.test_any(ivars, n, CMP, 7, start).to(tl.int64))
        tl.store(out + 3, ust.test_any_vector(ivars, n, CMP, values, start).to(tl.int64))
        tl.store(out + 4, ust.test_some(ivars, n, CMP, 7, idx).to(tl.int64))
        tl.store(out + 5, ust.test_some_vector(ivars, n, CMP, values, idx + n).to(tl.int64))

    @triton.jit
    def satisfied_waits(ivars, values, n, start, out, idx):
        # every word already satisfies these: the waits return without spinning
        ust.wait_until_all_vector(ivars, n, 3, values)        # CMP_GE, values == ivars
        ust.wait_until_all(ivars, n, 3, 0)
        tl.store(out + 0, ust.wait_until_any_vector(ivars, n, 0, values, start).to(tl.int64))
        tl.store(out + 1, ust.wait_until_some(ivars, n, 3, 0, idx).to(tl.int64))
        tl.store(out + 2, ust.signal_wait_until(ivars + start, 0,
                                                tl.load(values + start)).to(tl.int64))

    return probe, satisfied_waits


@_cuda_test
@pytest.mark.parametrize("cmp", range(6))
def test_triton_vector_tests(me, npes, data, cmp):
    """ushmem.triton's test_all/any/some (+_vector) and the waits that find their words
    already satisfied, against a host model of OpenSHMEM's comparisons on random words.
    No device wait spins, so this runs with or without MPS."""
    if not _have_triton():
        pytest.skip("needs triton")
    import operator
    torch = _torch()
    probe, satisfied_waits = _vector_kernels()
    dev = torch.device("cuda", ushmem.cuda_device())
    rng = data.rng(me, f"vec{cmp}")
    n = int(rng.integers(1, 40))
    start = int(rng.integers(0, n))
    words = [int(x) for x in rng.integers(0, 16, n)]
    vals = [int(x) for x in rng.integers(0, 16, n)]
    ivars = torch.tensor(words, dtype=torch.int64, device=dev)
    values = torch.tensor(vals, dtype=torch.int64, device=dev)
    out = torch.full((8,), -9, dtype=torch.int64, device=dev)
    idx = torch.full((2 * n,), -9, dtype=torch.int64, device=dev)
    probe[(1,)](ivars, values, n, start, out, idx, CMP=cmp)
    op = [operator.eq, operator.ne, operator.gt, operator.ge, operator.lt, operator.le][cmp]
    ok7 = [op(w, 7) for w in words]
    okv = [op(w, v) for w, v in zip(words, vals)]
    first = lambda ok: next(((start + i) % n for i in range(n) if ok[(start + i) % n]), -1)  # noqa: E731
    some7 = [i for i in range(n) if ok7[i]]
    somev = [i for i in range(n) if okv[i]]
    got, got_idx = out.cpu().tolist(), idx.cpu().tolist()
    assert got[:6] == [int(all(ok7)), int(all(okv)), first(ok7), first(okv), len(some7),
                       len(somev)], (cmp, words, vals, start)
    assert got_idx[:len(some7)] == some7 and got_idx[n:n + len(somev)] == somev
    out.fill_(-9)
    satisfied_waits[(1,)](ivars, ivars, n, start, out, idx)
    torch.cuda.synchronize(dev)
    assert out.cpu().tolist()[:3] == [start, n, words[start]]
