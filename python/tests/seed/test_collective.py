"""Seed test_collective, for ushmem (2 or more PEs, torch): stream-ordered put/get on
symmetric tensors, stream barriers, peer views, and interop.torch's put/get/barrier_all,
every PE checking the data it received."""
import pytest

from conftest import requires_multi_pe, requires_torch
from seed_util import handle, tdev, tstream, tsync

import ushmem

try:
    import torch
    from ushmem.interop import torch as ut
except ImportError:
    torch = ut = None

pytestmark = [requires_torch, requires_multi_pe]


def _ring():
    me, n = ushmem.my_pe(), ushmem.n_pes()
    return me, n, (me + 1) % n, (me - 1) % n


def _full(count, value, dtype):
    return torch.full((count,), value, dtype=dtype, device=tdev())


@pytest.fixture
def tensors():
    """create_tensor on the seed's device; freed after the test (collective)."""
    made = []

    def make(shape, dtype):
        t = ut.create_tensor(shape, dtype)
        made.append(t)
        return t
    yield make
    tsync()
    for t in made:
        ut.free_tensor(t)


def test_getmem_on_stream(tensors):
    me, n, right, left = _ring()
    src, dst = tensors((64,), torch.int32), tensors((64,), torch.int32)
    src.fill_(me)
    dst.fill_(-1)
    tsync()
    s = handle(tstream())
    ushmem.barrier_all_on_stream(s)
    ushmem.getmem_on_stream(dst.data_ptr(), src.data_ptr(), 64 * src.element_size(), right, s)
    ushmem.barrier_all_on_stream(s)
    tsync()
    torch.testing.assert_close(dst, _full(64, right, torch.int32))


def test_putmem_on_stream(tensors):
    me, n, right, left = _ring()
    src, dst = tensors((128,), torch.float32), tensors((128,), torch.float32)
    src.fill_(float(me))
    dst.fill_(-1.0)
    tsync()
    ushmem.barrier_all()
    s = handle(tstream())
    ushmem.putmem_on_stream(dst.data_ptr(), src.data_ptr(), 128 * src.element_size(), right, s)
    ushmem.barrier_all_on_stream(s)
    tsync()
    torch.testing.assert_close(dst, _full(128, float(left), torch.float32))


def test_tensor_list_intra_node(tensors):
    me, n, right, left = _ring()
    per = 32
    buf = tensors((n * per,), torch.int32)
    buf.fill_(0)
    tsync()
    ref = torch.arange(n * per, dtype=torch.int32, device=tdev())
    mine = slice(me * per, (me + 1) * per)
    buf[mine].copy_(ref[mine])
    tsync()
    s = handle(tstream())
    ushmem.barrier_all_on_stream(s)
    at = buf.data_ptr() + me * per * buf.element_size()
    ushmem.putmem_on_stream(at, at, per * buf.element_size(), right, s)  # my slice, in place
    ushmem.barrier_all_on_stream(s)
    tsync()
    theirs = slice(left * per, (left + 1) * per)
    torch.testing.assert_close(buf[theirs], ref[theirs])


def test_symm_ushmem_tensor_peer_view(tensors):
    me, n, right, left = _ring()
    t = tensors((16,), torch.float32)
    t.fill_(float(me))
    tsync()
    ushmem.barrier_all()
    try:
        view = ut.get_peer_tensor(t, right)
    except RuntimeError:
        pytest.skip("the peer's memory is not mapped in this process")
    assert view.device == t.device and view.shape == t.shape and view.dtype == t.dtype
    tsync()
    torch.testing.assert_close(view, _full(16, float(right), torch.float32))
    ushmem.barrier_all()  # nobody frees t while a peer still reads it


def test_interop_torch_put_get(tensors):
    me, n, right, left = _ring()
    src, dst = tensors((64,), torch.int32), tensors((64,), torch.int32)
    src.fill_(me)
    dst.fill_(-1)
    tsync()
    ut.barrier_all()
    ut.get(dst, src, right)  # the default stream
    ut.barrier_all()
    tsync()
    torch.testing.assert_close(dst, _full(64, right, torch.int32))

    dst.fill_(-1)
    tsync()
    ut.barrier_all()
    s = tstream()
    ut.put(dst, src, right, stream=s)
    ut.barrier_all(stream=s)
    tsync()
    torch.testing.assert_close(dst, _full(64, left, torch.int32))


def test_interop_torch_put_get_nbytes_mismatch(tensors):
    me, n, right, left = _ring()
    a, b = tensors((8,), torch.int32), tensors((16,), torch.int32)
    with pytest.raises(ValueError, match="nbytes"):
        ut.put(a, b, right)
    with pytest.raises(ValueError, match="nbytes"):
        ut.get(a, b, right)
