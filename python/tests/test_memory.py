"""Memory management: calloc zeroing, align, malloc/free, ptr and heap bases,
buffer register / unregister / unregister_all, exhaustion, bad arguments."""
import numpy as np
import pytest

import ushmem


def test_calloc_zeroes_reused_memory(me):
    n = 8192
    a = ushmem.malloc(n)
    ushmem.putmem(a, b"\xa5" * n, n, me)  # dirty the block
    ushmem.barrier_all()
    ushmem.free(a)
    z = ushmem.calloc(n // 8, 8)
    content = ushmem.buffer_of(z)  # raw allocations have no owning buffer
    out = bytearray(n)
    ushmem.getmem(out, z, n, me)
    ushmem.free(z)
    assert content is None
    assert out == bytes(n)


def _aligned_addresses(alignments):
    addrs = [(a, ushmem.align(a, 100)) for a in alignments]
    for _, p in addrs:  # free first (collective), check after
        ushmem.free(p)
    return addrs


def test_align():
    for alignment, p in _aligned_addresses((64, 128, 256, 1024, 4096)):
        assert p % alignment == 0, (alignment, hex(p))
    for bad in (0, 3, 24, 100):  # RuntimeError, as in the seed (ushmem.Error is one)
        with pytest.raises(RuntimeError, match="power of two"):
            ushmem.align(bad, 8)


def test_calloc_empty_raises():
    for count, size in ((0, 8), (8, 0), (0, 0)):  # as in the seed
        with pytest.raises(RuntimeError, match="empty allocation"):
            ushmem.calloc(count, size)


def test_align_above_page_size():
    # the host heap's user part starts on a 1 GiB boundary, the device heap's on 1 MiB
    for alignment, p in _aligned_addresses((1 << 13, 1 << 16, 1 << 20)):
        assert p % alignment == 0, (alignment, hex(p))


def test_align_too_large():
    with pytest.raises(ushmem.Error) as ei:
        ushmem.align(1 << 31, 64)  # every PE: align is collective
    assert ei.value.code == ushmem.ERR_INVALID
    assert "no larger than 1073741824" in ei.value.message, ei.value.message
    p = ushmem.align(64, 64)  # the heap goes on working
    assert p % 64 == 0
    ushmem.free(p)


def test_malloc_free_errors(me):
    assert ushmem.malloc(0) is None  # like C: NULL, nothing to free
    p = ushmem.malloc(64)
    buf = ushmem.create_buffer(64, device="cpu")
    with pytest.raises(ushmem.Error) as ei:
        ushmem.free(p + 8)  # not the start of an allocation
    assert ei.value.code == ushmem.ERR_NOTFOUND
    with pytest.raises(ushmem.Error) as ei:
        ushmem.free(buf.ptr)  # owned by a live SymmetricBuffer
    assert ei.value.code == ushmem.ERR_INVALID
    with pytest.raises(TypeError):
        ushmem.free("0x1234")
    with pytest.raises(ValueError):
        ushmem.malloc(-1)
    with pytest.raises(ValueError):
        ushmem.calloc(2 ** 62, 2 ** 62)
    ushmem.free(p)
    ushmem.free(buf)  # a buffer can be passed to free() too
    assert buf.freed
    with pytest.raises(ushmem.Error) as ei:
        ushmem.free(p)  # double free
    assert ei.value.code == ushmem.ERR_NOTFOUND
    ushmem.free(None)  # like free(NULL)


def test_heap_exhaustion_raises_everywhere():
    with pytest.raises(ushmem.Error) as ei:
        ushmem.create_buffer(1 << 50, device="cpu")
    assert ei.value.code == ushmem.ERR_NOMEM and "SHMEM_SYMMETRIC_SIZE" in ei.value.message
    with pytest.raises(ushmem.Error):
        ushmem.malloc(1 << 50)
    b = ushmem.create_buffer(32, device="cpu")  # the heap still works afterwards, on every PE alike
    b.free()


@pytest.mark.requires_mapped_peers
def test_ptr_and_heap_bases(me, npes, sym_bytes):
    buf = sym_bytes(128)
    bases = ushmem.get_heap_bases(buf)
    assert len(bases) == npes and bases[me] == buf.ptr
    for pe in range(npes):
        assert ushmem.ptr(buf, pe) == bases[pe]
        assert ushmem.ptr(buf[16:], pe) == bases[pe] + 16
        assert ushmem.addr_accessible(buf, pe)
    assert not ushmem.addr_accessible(bytearray(8), me)
    with pytest.raises(ushmem.Error) as ei:
        ushmem.ptr(bytearray(8), me)
    assert ei.value.code == ushmem.ERR_NOTSYM
    with pytest.raises(ushmem.Error) as ei:
        ushmem.ptr(buf, npes)
    assert ei.value.code == ushmem.ERR_BADPE
    with pytest.raises(ushmem.Error):
        ushmem.get_heap_bases(np.zeros(4))


def test_buffer_register():
    # statuses, never exceptions, for what the seed checks (SUCCESS 0, negative on failure)
    a = bytearray(4096)
    b = np.zeros(1024, np.uint8)
    assert ushmem.buffer_register(a) == 0
    assert ushmem.buffer_register(b, 512) == 0
    assert ushmem.buffer_register(memoryview(a)[100:200]) == ushmem.ERR_OVERLAP  # overlaps a
    assert ushmem.buffer_unregister(a) == 0
    assert ushmem.buffer_unregister(a) == ushmem.ERR_NOTFOUND  # already gone
    assert ushmem.buffer_register(a) == 0
    assert ushmem.buffer_unregister_all() is None
    assert ushmem.buffer_unregister(b) == ushmem.ERR_NOTFOUND
    assert ushmem.buffer_register(0, 16) < 0  # NULL
    assert ushmem.buffer_register(bytearray(0)) < 0  # zero length
    assert ushmem.buffer_register(a, 0) < 0
    assert ushmem.buffer_unregister(0) < 0
    with pytest.raises(ValueError):
        ushmem.buffer_register(b, 2048)  # longer than the array: a Python-side check
    with pytest.raises(ValueError):
        ushmem.buffer_register(12345)  # an int address needs a length
    # a registered local buffer is a valid RMA source
    ushmem.buffer_register(a, 64)
    buf = ushmem.create_buffer(64, device="cpu")
    ushmem.putmem(buf, a, 64, ushmem.my_pe())
    ushmem.buffer_unregister_all()
    buf.free()


def test_live_allocations_track_everything(me):
    before = ushmem.live_allocations()
    b = ushmem.create_buffer(48, device="cpu")
    p = ushmem.calloc(3, 16)
    now = {a: (n, k) for a, n, k in ushmem.live_allocations()}
    assert now[b.ptr] == (48, "SymmetricBuffer") and now[p] == (48, "malloc")
    b.free()
    ushmem.free(p)
    assert ushmem.live_allocations() == before


@pytest.mark.requires_mapped_peers
def test_seed_buffer_attributes(me, npes):
    b = ushmem.create_buffer(64, device="cpu")
    assert b.size == b.nbytes == 64 and b.dtype == np.uint8
    assert int(b) == b.ptr
    right = (me + 1) % npes
    assert b.get_remote_ptr(me) == b.ptr
    remote = b.get_remote_ptr(right)
    assert remote == ushmem.ptr(b, right) and remote != 0
    # a store through the peer address is seen by the peer
    ushmem.putmem(b, bytes([me + 1] * 64), 64, me)
    ushmem.barrier_all()
    import ctypes
    left = (me + npes - 1) % npes
    got = ctypes.string_at(b.get_remote_ptr(left), 64)
    assert got == bytes([left + 1] * 64)
    with pytest.raises(ushmem.Error):
        b.get_remote_ptr(npes)
    ushmem.barrier_all()
    b.free()
    with pytest.raises(ushmem.Error):
        b.get_remote_ptr(me)


@pytest.mark.requires_mapped_peers
def test_peer_ptr_table(me, npes):
    torch = pytest.importorskip("torch")
    import ushmem.interop.torch as ut
    t = ut.create_tensor((16,), torch.int64, device="cpu")
    assert getattr(t, "__symm_tensor__", False) is True
    table = ut.get_peer_ptr_table(t)
    assert table.dtype == torch.int64 and table.device == t.device and table.numel() == npes
    assert table[me].item() == t.data_ptr()
    assert table.tolist() == [b or 0 for b in ushmem.get_heap_bases(t.data_ptr())]
    b = ushmem.create_buffer(32, device="cpu")
    assert ushmem.get_peer_ptr_table(b) == ushmem.get_heap_bases(b)
    with pytest.raises(ValueError, match="not a symmetric tensor"):
        ut.get_peer_ptr_table(torch.zeros(4))
    with pytest.raises(ValueError, match="not a symmetric tensor"):
        ushmem.get_peer_ptr_table(bytearray(8))
    ushmem.barrier_all()
    b.free()
    ut.free_tensor(t)


@pytest.mark.requires_mapped_peers
def test_peer_ptr_table_is_a_list_of_ints(me, npes, data):
    """The seed's bare-Python helper (issue 22, item 13): get_peer_ptr_table(ptr) is a list
    of one int per PE, this PE's entry the pointer itself, equal to get_heap_bases(ptr) (a
    bool, not a tensor); every entry addresses that PE's copy (read through it here)."""
    import ctypes
    seedbuf = ushmem.SymmetricBuffer(1024)  # the seed's default placement
    table = ushmem.get_peer_ptr_table(seedbuf.ptr)
    same = ushmem.get_heap_bases(seedbuf.ptr) == table
    b = ushmem.create_buffer(64, device="cpu")
    ushmem.putmem(b, data.bytes(me, 64), 64, me)
    ushmem.barrier_all()
    host = ushmem.get_peer_ptr_table(b)
    copies = [ctypes.string_at(a, 64) for a in host]
    inner = ushmem.get_peer_ptr_table(b.ptr + 16)
    ushmem.barrier_all()
    b.free()
    seedbuf.free()
    assert isinstance(table, list) and len(table) == npes
    assert all(type(a) is int for a in table) and table[me] == seedbuf.ptr
    assert same is True
    assert copies == [data.bytes(pe, 64) for pe in range(npes)]
    assert inner == [a + 16 for a in host]


def test_seed_nonowning_buffer(me, npes):
    """SymmetricBuffer(nbytes, ptr=, own_data=False): a view of live symmetric memory (of
    its SymmetricBuffer when it has one); the seed's attribute names; view.free() only marks
    the view freed; torch.as_tensor(host buffer) works (a copy, through the sequence
    protocol; torch.frombuffer / numpy give a view)."""
    b = ushmem.create_buffer(256, device="cpu")
    raw = ushmem.malloc(128)
    ushmem.putmem(b, bytes(range(256)), 256, me)
    v = ushmem.SymmetricBuffer(64, ptr=b.ptr + 16, own_data=False)
    assert v.base is b and v.own_data is False and not v.owning and v._freed is False
    assert bytes(v) == bytes(range(16, 80)) and v._device == -1 and b._device == -1
    assert b.own_data is True
    w = ushmem.SymmetricBuffer(128, ptr=raw, own_data=False)  # raw memory: no owner
    assert w.base is None and w.nbytes == 128
    ushmem.putmem(w, b"\x07" * 128, 128, (me + 1) % npes)  # usable as a symmetric object
    errors = []
    for kw in ({"ptr": b.ptr + 250, "own_data": False},  # runs past the allocation
               {"ptr": b.ptr},  # ptr= must not own
               {"own_data": False},  # own_data=False needs ptr=
               {"ptr": 4096, "own_data": False},  # not symmetric
               {"dtype": "float32"}):
        try:
            ushmem.SymmetricBuffer(64 if "ptr" not in kw or kw["ptr"] == 4096 else 16, **kw)
        except ValueError as e:
            errors.append(str(e))
    v.free()
    assert v.freed and v._freed and not b.freed
    with pytest.raises(ushmem.Error) as ei:
        ushmem.putmem(v, b"x", 1, me)
    assert ei.value.code == ushmem.ERR_FREED
    try:
        import torch
        t = torch.as_tensor(b)
        assert t.numel() == 256 and t.tolist() == list(range(256))
        assert torch.frombuffer(b, dtype=torch.uint8).data_ptr() == b.ptr
    except ImportError:
        pass
    assert np.asarray(b).ctypes.data == b.ptr
    ushmem.barrier_all()
    got = bytearray(128)
    ushmem.getmem(got, w, 128, me)  # malloc memory is device memory where a GPU is bound
    ushmem.free(raw)
    b.free()
    assert len(errors) == 5, errors
    assert got == b"\x07" * 128


def test_default_placement_follows_the_seed(me):
    """Without device=, create_buffer / SymmetricBuffer / create_tensor allocate where
    rocshmem4py's do: on the device heap when this PE has a CUDA device bound, else on the
    host heap; device='cpu' (or 'host', torch.device('cpu')) always gives host memory, and
    interop.numpy arrays are always host memory."""
    import ushmem.interop.numpy as unp
    dev = ushmem.cuda_device()
    want = "cpu" if dev is None else f"cuda:{dev}"
    made = [ushmem.create_buffer(64), ushmem.SymmetricBuffer(64),
            ushmem.create_buffer(64, zero=True), ushmem.create_buffer(64, device=None)]
    host = [ushmem.create_buffer(64, device="cpu"), ushmem.SymmetricBuffer(64, device="host"),
            ushmem.create_buffer(64, device="cpu", zero=True)]
    arr = unp.zeros(4, np.int64)
    placed = [b.device for b in made]
    ordinals = [b._device for b in made]
    hosts = [b.device for b in host]
    zeroed = bytearray(b"\xff" * 64)
    ushmem.getmem(zeroed, made[2], 64, me)  # zero=True on whichever heap it landed
    arr_host = ushmem.buffer_of(arr.ctypes.data).device
    tensors = None
    try:
        import torch
        import ushmem.interop.torch as ut
        ts = [ut.create_tensor(4, torch.int32), ut.create_tensor(4, torch.int32, device="cpu"),
              ut.create_tensor(4, torch.int32, device=torch.device("cpu"))]
        tensors = [str(t.device) for t in ts]
        for t in ts:
            ut.free_tensor(t)
    except ImportError:
        pass
    for b in made + host:
        b.free()
    unp.free_array(arr)
    assert placed == [want] * 4
    assert ordinals == [-1 if dev is None else dev] * 4
    assert hosts == ["cpu"] * 3 and arr_host == "cpu"
    assert zeroed == bytes(64)
    assert tensors is None or tensors == ["cpu" if dev is None else f"cuda:{dev}", "cpu", "cpu"]
