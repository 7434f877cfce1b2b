"""PyTorch tensors on the symmetric heap.

    import ushmem.interop.torch as ut
    t = ut.create_tensor((4, 8), torch.float32)                # collective (see below)
    h = ut.create_tensor((4, 8), torch.float32, device="cpu")  # host heap, always
    ut.put(t, local, pe)                          # dst symmetric, src any tensor
    ut.barrier_all()
    peer = ut.get_peer_tensor(t, pe)              # non-owning view of pe's copy
    ut.free_tensor(t)                             # collective

CPU tensors work everywhere. CUDA tensors need a CUDA device bound to ushmem
(ushmem.init(device=...), LOCAL_RANK or USHMEM_DEVICE; ushmem.cuda_device() says
which). create_tensor() without device= makes a CUDA tensor on the device heap where
one is bound (as rocshmem4py's), else a CPU tensor on the host heap; device="cpu"
always gives host memory. put/get/alltoall/broadcast/reduce on CUDA tensors are enqueued on the
current torch stream of the tensors' device (or stream=) and return at once;
barrier_all() orders the current stream too. Shape, dtype and size mismatches
raise ValueError naming what differs; a tensor that should be symmetric and is
not raises ushmem.Error (ERR_NOTSYM).
"""
import math

import torch

from .. import _error, _ushmem, _no_cuda, TEAM_WORLD
from .. import get_peer_ptr_table as _peer_ptr_list


def _shape(shape):
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    return shape


def _cuda_arg(device):
    """create_buffer's device argument: None (the default heap: the device heap when a
    CUDA device is bound, else the host heap), 'cpu', or 'cuda' / N."""
    if device is None:
        return None
    d = torch.device(device)
    if d.type == "cpu":
        return "cpu"
    if d.type != "cuda":
        raise ValueError(f"create_tensor: device {device!r}: use None, 'cpu' or 'cuda[:N]'")
    return "cuda" if d.index is None else d.index


def _tensor_over(buf, dtype, count):
    """A tensor of count dtype elements sharing buf's memory (never a copy)."""
    if buf.device == "cpu":
        return torch.frombuffer(buf, dtype=dtype, count=count)
    flat = None
    # DLPack names the device explicitly; __cuda_array_interface__ makes torch ask the
    # driver about the pointer. Either must give a tensor over the very same memory.
    for make in (lambda: torch.utils.dlpack.from_dlpack(buf), lambda: torch.as_tensor(buf)):
        try:
            t = make()
        except Exception:  # noqa: BLE001 - try the other protocol
            continue
        if t.is_cuda and t.data_ptr() == buf.ptr and t.numel() == buf.nbytes:
            flat = t
            break
    if flat is None:
        raise _error(_ushmem.ERR_UNSUPPORTED,
                     f"cannot make a torch tensor over {buf!r} (neither DLPack nor "
                     "__cuda_array_interface__ gave one over the same memory)")
    # __cuda_array_interface__ says int8 ("<i1", as the seed's); DLPack says uint8.
    return flat.view(dtype)[:count]


def create_tensor(shape, dtype=torch.float32, device=None, zero=False):
    """A new tensor on the symmetric heap (collective). Uninitialized unless zero=True.
    device: None (the device heap when a CUDA device is bound to ushmem, as rocshmem4py's
    tensors, else the host heap), 'cpu' (host heap) or 'cuda[:N]' (device heap of the bound
    GPU)."""
    shape = _shape(shape)
    dev = _cuda_arg(device)
    if dev not in (None, "cpu") and _ushmem.cuda_device() is None:
        raise _no_cuda("create_tensor")
    numel = math.prod(shape)
    if numel == 0:
        raise ValueError("create_tensor: an empty tensor is not a symmetric allocation")
    esize = torch.empty((), dtype=dtype).element_size()
    buf = _ushmem.create_buffer(numel * esize, device=dev, zero=zero)
    try:
        t = _tensor_over(buf, dtype, numel)
    except BaseException:
        buf.free()  # collective: every PE failed alike
        raise
    t = t.view(shape)
    t.__symm_tensor__ = True  # the seed's marker of a tensor on the symmetric heap
    return t


def get_peer_ptr_table(t):
    """int64 tensor on t's device: the address of every PE's copy of symmetric tensor t as
    mapped in this process (0 where not mapped), the table kernels take. ValueError when t
    is not a symmetric tensor."""
    _require_tensor(t, "get_peer_ptr_table", "t")
    table = _peer_ptr_list(t)  # ValueError first: nothing is made on the device before
    return torch.tensor(table, dtype=torch.int64, device=t.device)


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
    Works for CUDA tensors on the device heap too (the peer's device memory as mapped here).
    Raises ushmem.Error(ERR_UNREACHABLE) when the peer's memory is not mapped here."""
    _require_tensor(t, "get_peer_tensor", "t")
    if t.is_cuda and _ushmem.cuda_device() is None:
        raise _no_cuda("get_peer_tensor")
    addr, nbytes = _span(t)
    if nbytes == 0:
        raise ValueError("get_peer_tensor: empty tensor")
    view = _ushmem.get_peer_buffer(addr, pe, nbytes)
    if view.device != "cpu" and not t.is_cuda:
        raise ValueError("get_peer_tensor: a CPU tensor over device memory")
    flat = _tensor_over(view, t.dtype, nbytes // t.element_size())
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
    dn, sn = dst.numel() * dst.element_size(), src.numel() * src.element_size()
    if dn != sn:  # the seed's word for it
        raise ValueError(f"{fn}: nbytes differ (size): dst has {dn} bytes "
                         f"({tuple(dst.shape)}), src has {sn} ({tuple(src.shape)})")
    if same_shape and dst.shape != src.shape:
        raise ValueError(f"{fn}: shape differs: dst is {tuple(dst.shape)}, "
                         f"src is {tuple(src.shape)}")
    if dst.numel() != src.numel():
        raise ValueError(f"{fn}: size differs: dst has {dst.numel()} elements, "
                         f"src has {src.numel()}")
    for name, t in (("dst", dst), ("src", src)):
        if not t.is_contiguous():
            raise ValueError(f"{fn}: {name} must be contiguous (call .contiguous())")
    if dst.is_cuda and src.is_cuda and dst.device != src.device:
        raise ValueError(f"{fn}: device differs: dst is on {dst.device}, src on {src.device}")
    if (dst.is_cuda or src.is_cuda) and _ushmem.cuda_device() is None:
        raise _no_cuda(fn)
    return dst.numel() * dst.element_size()


def _stream(stream, *tensors):
    """The stream argument for the C call: the caller's, else the current torch stream of
    the first CUDA tensor's device, else None (host memory: now)."""
    if stream is not None:
        return stream
    for t in tensors:
        if t.is_cuda:
            return torch.cuda.current_stream(t.device).cuda_stream
    return None


def put(dst, src, pe, stream=None):
    """Copy src (any tensor here) into PE pe's copy of the symmetric tensor dst.
    CUDA memory on either side: enqueued on stream (default: the current stream)."""
    nbytes = _check_pair("put", dst, src)
    _ushmem.putmem_on_stream(dst, src, nbytes, pe, _stream(stream, dst, src))


def get(dst, src, pe, stream=None):
    """Copy PE pe's copy of the symmetric tensor src into dst (any tensor here).
    CUDA memory on either side: enqueued on stream (default: the current stream)."""
    nbytes = _check_pair("get", dst, src)
    _ushmem.getmem_on_stream(dst, src, nbytes, pe, _stream(stream, dst, src))


def barrier_all(stream=None):
    """Barrier across all PEs. stream given: a stream-ordered barrier on it (returns at
    once). Otherwise, with a CUDA device bound: a barrier on the current torch stream (work
    enqueued before it on every PE completes before work enqueued after it) and a host
    barrier (host-memory puts complete and visible on return); without one: the host
    barrier."""
    if stream is not None:
        _ushmem.barrier_all_on_stream(stream)
        return
    dev = _ushmem.cuda_device()
    if dev is not None and torch.cuda.is_available():
        _ushmem.barrier_all_on_stream(torch.cuda.current_stream(dev).cuda_stream)
    _ushmem.barrier_all()


def _team(team):
    return team if team is not None else TEAM_WORLD


def alltoall(team, dst, src, stream=None):
    """Block j of src on every PE goes to block (sender's team rank) of dst on team PE j.
    dst and src are symmetric tensors of the same dtype and size, divisible by the team size."""
    nbytes = _check_pair("alltoall", dst, src, same_shape=False)
    n = _ushmem.team_n_pes(_team(team))
    if src.numel() % n:
        raise ValueError(f"alltoall: size {src.numel()} is not divisible by the team's {n} PEs")
    _ushmem.alltoallmem_on_stream(_team(team), dst, src, nbytes // n, _stream(stream, dst, src))


def broadcast(team, dst, src, root, stream=None):
    """Copy src on the team's PE root into dst on every team PE (root included)."""
    nbytes = _check_pair("broadcast", dst, src)
    _ushmem.broadcastmem_on_stream(_team(team), dst, src, nbytes, root, _stream(stream, dst, src))


_REDUCE_TYPES = {torch.float32: "float", torch.float64: "double", torch.int32: "int32",
                 torch.int64: "int64"}


def reduce(team, dst, src, op="sum", stream=None):
    """Element-wise reduction of src over the team into dst on every member (op: sum, prod,
    min, max; and, or, xor for integers). float32, float64, int32 and int64 tensors."""
    _check_pair("reduce", dst, src)
    name = _REDUCE_TYPES.get(src.dtype)
    if name is None:
        raise ValueError(f"reduce: dtype {src.dtype} is not supported "
                         f"(use one of {', '.join(str(d) for d in _REDUCE_TYPES)})")
    _ushmem.reduce_on_stream(_team(team), dst, src, src.numel(), name, op,
                             _stream(stream, dst, src))


def get_heap_bases(t):
    """[address of each PE's copy of t, or None where not mapped]."""
    _require_tensor(t, "get_heap_bases", "t")
    return _ushmem.get_heap_bases(t.data_ptr())
