"""PyTorch tensors on the symmetric heap.

    import ushmem.interop.torch as ut
    t = ut.create_tensor((4, 8), torch.float32)   # collective
    ut.put(t, local, pe)                          # dst symmetric, src any tensor
    ut.barrier_all()
    peer = ut.get_peer_tensor(t, pe)              # non-owning view of pe's copy
    ut.free_tensor(t)                             # collective

CPU tensors work everywhere; CUDA tensors need a CUDA build of ushmem (operations
then run on the current torch stream unless stream= is given) and raise
ushmem.Error(ERR_UNSUPPORTED) otherwise. Shape, dtype and size mismatches raise
ValueError naming what differs.
"""
import math

import torch

from .. import _ushmem, _no_cuda, TEAM_WORLD


def _shape(shape):
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    return shape


def _is_cuda_device(device):
    return device is not None and torch.device(device).type == "cuda"


def create_tensor(shape, dtype=torch.float32, device=None, zero=False):
    """A new tensor on the symmetric heap (collective). Uninitialized unless zero=True.
    device: None/'cpu' (host heap) or 'cuda[:N]' (needs a CUDA build)."""
    shape = _shape(shape)
    if _is_cuda_device(device) and not _ushmem.HAVE_CUDA:
        raise _no_cuda("create_tensor")
    numel = math.prod(shape)
    if numel == 0:
        raise ValueError("create_tensor: an empty tensor is not a symmetric allocation")
    esize = torch.empty((), dtype=dtype).element_size()
    buf = _ushmem.create_buffer(numel * esize, zero=zero)
    return torch.frombuffer(buf, dtype=dtype, count=numel).view(shape)


def _require_tensor(t, fn, what):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{fn}: {what} must be a torch.Tensor, not {type(t).__name__}")


def _span(t):
    """(start address, bytes) of the storage a tensor covers (strides >= 0)."""
    if t.numel() == 0:
        return t.data_ptr(), 0
    if any(s < 0 for s in t.stride()):
        raise ValueError("negative strides are not supported")
    extent = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return t.data_ptr(), extent * t.element_size()


def get_peer_tensor(t, pe):
    """A non-owning tensor over PE pe's copy of t (mapped in this process); never t itself.
    Raises ushmem.Error(ERR_UNREACHABLE) when the peer's memory is not mapped here."""
    _require_tensor(t, "get_peer_tensor", "t")
    if t.is_cuda and not _ushmem.HAVE_CUDA:
        raise _no_cuda("get_peer_tensor")
    addr, nbytes = _span(t)
    if nbytes == 0:
        raise ValueError("get_peer_tensor: empty tensor")
    view = _ushmem.get_peer_buffer(addr, pe, nbytes)
    flat = torch.frombuffer(view, dtype=t.dtype, count=nbytes // t.element_size())
    if t.is_contiguous():
        return flat.view(t.shape)
    return flat.as_strided(t.shape, t.stride())


def free_tensor(t):
    """Free (collectively) the symmetric buffer behind a tensor made by create_tensor()."""
    _require_tensor(t, "free_tensor", "t")
    buf = _ushmem._owner_of(t.data_ptr())
    if buf is None:
        raise ValueError("free_tensor: not a tensor made by ushmem.interop.torch.create_tensor() "
                         "(or it was already freed)")
    buf.free()


def _check_pair(fn, dst, src, same_shape=True):
    _require_tensor(dst, fn, "dst")
    _require_tensor(src, fn, "src")
    if dst.dtype != src.dtype:
        raise ValueError(f"{fn}: dtype differs: dst is {dst.dtype}, src is {src.dtype}")
    if same_shape and dst.shape != src.shape:
        raise ValueError(f"{fn}: shape differs: dst is {tuple(dst.shape)}, "
                         f"src is {tuple(src.shape)}")
    if dst.numel() != src.numel():
        raise ValueError(f"{fn}: size differs: dst has {dst.numel()} elements, "
                         f"src has {src.numel()}")
    for name, t in (("dst", dst), ("src", src)):
        if not t.is_contiguous():
            raise ValueError(f"{fn}: {name} must be contiguous (call .contiguous())")
    if (dst.is_cuda or src.is_cuda) and not _ushmem.HAVE_CUDA:
        raise _no_cuda(fn)
    return dst.numel() * dst.element_size()


def _stream(stream, *tensors):
    if stream is not None:
        return getattr(stream, "cuda_stream", stream)
    if any(t.is_cuda for t in tensors):
        return torch.cuda.current_stream().cuda_stream
    return None


def put(dst, src, pe, stream=None):
    """Copy src (any tensor here) into PE pe's copy of the symmetric tensor dst."""
    nbytes = _check_pair("put", dst, src)
    _ushmem.putmem_on_stream(dst.data_ptr(), src.data_ptr(), nbytes, pe, _stream(stream, dst, src))


def get(dst, src, pe, stream=None):
    """Copy PE pe's copy of the symmetric tensor src into dst (any tensor here)."""
    nbytes = _check_pair("get", dst, src)
    _ushmem.getmem_on_stream(dst.data_ptr(), src.data_ptr(), nbytes, pe, _stream(stream, dst, src))


def barrier_all(stream=None):
    """Barrier across all PEs (completes outstanding puts first)."""
    _ushmem.barrier_all_on_stream(_stream(stream))


def alltoall(team, dst, src, stream=None):
    """Block j of src on every PE goes to block (sender's team rank) of dst on team PE j.
    dst and src are symmetric tensors of the same dtype and size, divisible by the team size."""
    nbytes = _check_pair("alltoall", dst, src, same_shape=False)
    n = _ushmem.team_n_pes(team if team is not None else TEAM_WORLD)
    if src.numel() % n:
        raise ValueError(f"alltoall: size {src.numel()} is not divisible by the team's {n} PEs")
    _ushmem.alltoallmem_on_stream(team if team is not None else TEAM_WORLD, dst.data_ptr(),
                                  src.data_ptr(), nbytes // n, _stream(stream, dst, src))


def broadcast(team, dst, src, root, stream=None):
    """Copy src on the team's PE root into dst on every team PE (root included)."""
    nbytes = _check_pair("broadcast", dst, src)
    _ushmem.broadcastmem_on_stream(team if team is not None else TEAM_WORLD, dst.data_ptr(),
                                   src.data_ptr(), nbytes, root, _stream(stream, dst, src))


def get_heap_bases(t):
    """[address of each PE's copy of t, or None where not mapped]."""
    _require_tensor(t, "get_heap_bases", "t")
    return _ushmem.get_heap_bases(t.data_ptr())
