"""numpy arrays on the symmetric heap.

    import ushmem.interop.numpy as unp
    a = unp.array((4, 8), "float32")       # collective, like create_buffer
    peer = unp.get_peer_array(a, 1)        # non-owning view of PE 1's copy (same host)
    ushmem.putmem(a, local, a.nbytes, 1)   # arrays are valid RMA arguments as they are
    unp.free_array(a)                      # collective

Arrays stay views of their SymmetricBuffer; free_array() frees it (collective) and
garbage collection never does (see ushmem.LeakWarning).
"""
import math

import numpy as np

from .. import _ushmem


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    return shape


def array(shape, dtype=np.float64, zero=False):
    """A new array of the given shape and dtype on the symmetric heap (collective).
    Uninitialized unless zero=True."""
    shape, dtype = _shape(shape), np.dtype(dtype)
    if dtype.hasobject:  # checked before allocating: nothing to free (collectively) after
        raise TypeError(f"array: dtype {dtype} holds Python object references, which cannot "
                        "live in symmetric memory (use a numeric, bool or fixed-size dtype)")
    count = math.prod(shape)
    if count == 0 or dtype.itemsize == 0:
        raise ValueError("array: an empty array is not a symmetric allocation")
    # numpy arrays are host memory: the host heap even where a CUDA device is bound.
    buf = _ushmem.create_buffer(count * dtype.itemsize, device="cpu", zero=zero)
    try:
        return np.frombuffer(buf, dtype=dtype, count=count).reshape(shape)
    except BaseException:
        buf.free()  # collective: every PE failed alike
        raise


def zeros(shape, dtype=np.float64):
    """array(shape, dtype, zero=True)."""
    return array(shape, dtype, zero=True)


def _address(a, fn):
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{fn}: expected a numpy.ndarray, not {type(a).__name__}")
    if not (a.flags.c_contiguous or a.flags.f_contiguous):
        raise ValueError(f"{fn}: the array must be contiguous")
    return a.__array_interface__["data"][0]


def get_peer_array(a, pe):
    """A non-owning array over PE pe's copy of a (mapped in this process); never a itself.
    Raises ushmem.Error(ERR_UNREACHABLE) when the peer's memory is not mapped here."""
    view = _ushmem.get_peer_buffer(_address(a, "get_peer_array"), pe, a.nbytes)
    order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    return np.frombuffer(view, dtype=a.dtype, count=a.size).reshape(a.shape, order=order)


def free_array(a):
    """Free (collectively) the symmetric buffer behind an array made by array()/zeros()."""
    buf = _ushmem._owner_of(_address(a, "free_array"))
    if buf is None:
        raise ValueError("free_array: not an array made by ushmem.interop.numpy.array() "
                         "(or it was already freed)")
    buf.free()


def get_heap_bases(a):
    """[address of each PE's copy of a, or None where not mapped]."""
    return _ushmem.get_heap_bases(_address(a, "get_heap_bases"))
