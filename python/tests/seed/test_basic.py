"""Seed test_basic, for ushmem: constants, PE queries, malloc/free, barrier, the
SymmetricBuffer (owning and non-owning), torch tensors on the symmetric heap."""
import pytest

from conftest import requires_torch
from seed_util import gpu, handle, tstream, tsync

import ushmem

try:
    import torch
except ImportError:
    torch = None


def test_import_and_constants():
    assert ushmem.__version__ is not None
    assert ushmem.SUCCESS == 0
    assert ushmem.TEAM_WORLD == 0 and ushmem.TEAM_INVALID == -1
    assert ushmem.TEAM_WORLD != ushmem.TEAM_INVALID
    assert (ushmem.SIGNAL_SET, ushmem.SIGNAL_ADD) == (0, 1)
    for cmp in ("EQ", "NE", "GT", "GE", "LT", "LE"):
        assert isinstance(getattr(ushmem, "CMP_" + cmp), int)


def test_pe_info():
    me, n = ushmem.my_pe(), ushmem.n_pes()
    assert isinstance(me, int) and isinstance(n, int)
    assert 0 <= me < n


def test_malloc_free():
    addr = ushmem.malloc(1024)
    assert addr > 0
    ushmem.free(addr)


def test_barrier_all():
    ushmem.barrier_all()


@requires_torch
def test_symmetric_buffer():
    n = 1024
    b = ushmem.SymmetricBuffer(n)
    assert (b.size, b.nbytes) == (n, n)
    assert b.ptr > 0 and int(b) == b.ptr and b.own_data is True
    assert isinstance(b._device, int)
    if gpu():
        assert b._device >= 0
        assert b.__cuda_array_interface__ == {"data": (b.ptr, False), "shape": (n,),
                                              "typestr": "<i1", "strides": None,
                                              "version": 3}
        t = torch.as_tensor(b, device="cuda")
        assert t.is_cuda and t.numel() == n
    else:
        assert b._device == -1  # host memory
        t = torch.as_tensor(b)  # the sequence protocol: a copy
        assert t.numel() == n
        z = torch.frombuffer(b, dtype=torch.uint8)  # the buffer protocol: no copy
        assert z.data_ptr() == b.ptr and z.numel() == n
        del z

    view = ushmem.SymmetricBuffer(n, ptr=b.ptr, own_data=False)
    assert view.ptr == b.ptr and view.own_data is False
    view.free()
    assert view._freed is True and b._freed is False

    me = ushmem.my_pe()
    assert ushmem.ptr(b.ptr, me) >= 0
    assert b.get_remote_ptr(me) >= 0
    b.free()
    assert b._freed is True


@requires_torch
def test_barrier_all_on_stream():
    ushmem.barrier_all_on_stream(handle(tstream()))
    tsync()


@requires_torch
def test_create_tensor():
    from ushmem.interop import torch as ut

    made = []
    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        t = ut.create_tensor((16,), dtype)
        made.append(t)
        assert t.shape == (16,) and t.dtype == dtype and t.is_cuda == gpu()
        assert getattr(t, "__symm_tensor__", False) is True
    t = ut.create_tensor((8,), torch.float32)
    made.append(t)
    mine = ut.get_peer_tensor(t, ushmem.my_pe())
    assert mine.data_ptr() == t.data_ptr()
    for t in made:
        ut.free_tensor(t)
