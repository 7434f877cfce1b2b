"""Helpers for the seed tests: copies and streams through the CUDA runtime (ctypes) when a
CUDA device is bound to ushmem, plain host copies otherwise (the host heap); the device
the torch tests use."""
import ctypes

import ushmem

_state = {"rt": None, "tried": False}
_host = {}


def gpu():
    """True when ushmem has a CUDA device bound on this PE and torch has CUDA."""
    if not ushmem.is_initialized() or ushmem.cuda_device() is None:
        return False
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _cudart():
    if not _state["tried"] and ushmem.is_initialized() and ushmem.cuda_device() is not None:
        _state["tried"] = True
        for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"):
            try:
                _state["rt"] = ctypes.CDLL(name)
                break
            except OSError:
                pass
    return _state["rt"]


def _ok(rc, what):
    if rc:
        raise RuntimeError(f"{what}: CUDA error {rc}")


def _addr(obj):
    try:
        return ctypes.cast(obj, ctypes.c_void_p)
    except (TypeError, ctypes.ArgumentError):
        return ctypes.cast(ctypes.byref(obj), ctypes.c_void_p)


def _copy(dst, src, n):
    rt = _cudart()
    if rt is None:
        ctypes.memmove(dst, src, n)
    else:
        _ok(rt.cudaMemcpy(dst, src, ctypes.c_size_t(n), 4), "cudaMemcpy")  # cudaMemcpyDefault


def h2d(addr, host):
    """Copy a ctypes object into the memory at addr."""
    _copy(ctypes.c_void_p(addr), _addr(host), ctypes.sizeof(host))


def d2h(host, addr):
    """Copy the memory at addr into a ctypes object."""
    _copy(_addr(host), ctypes.c_void_p(addr), ctypes.sizeof(host))


def device_sync():
    rt = _cudart()
    if rt is not None:
        _ok(rt.cudaDeviceSynchronize(), "cudaDeviceSynchronize")


def device_malloc(nbytes):
    """Memory that is not symmetric: cudaMalloc with a GPU, else a host block."""
    rt = _cudart()
    if rt is None:
        block = ctypes.create_string_buffer(nbytes)
        _host[ctypes.addressof(block)] = block
        return ctypes.addressof(block)
    p = ctypes.c_void_p()
    _ok(rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(nbytes)), "cudaMalloc")
    return p.value


def device_free(addr):
    if _host.pop(addr, None) is None:
        _ok(_cudart().cudaFree(ctypes.c_void_p(addr)), "cudaFree")


class Stream:
    """A CUDA stream (handle 0 without a GPU: ushmem then runs the operation at once)."""

    def __init__(self):
        self._s = ctypes.c_void_p()
        rt = _cudart()
        if rt is not None:
            _ok(rt.cudaStreamCreate(ctypes.byref(self._s)), "cudaStreamCreate")

    @property
    def handle(self):
        return self._s.value or 0

    def synchronize(self):
        if self._s.value:
            _ok(_cudart().cudaStreamSynchronize(self._s), "cudaStreamSynchronize")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._s.value:
            _cudart().cudaStreamDestroy(self._s)
        self._s = ctypes.c_void_p()


# ---- torch side ----

def tdev():
    """The device seed tensors live on: 'cuda' with a GPU bound, else 'cpu'."""
    return "cuda" if gpu() else "cpu"


def tsync():
    if gpu():
        import torch
        torch.cuda.synchronize()


def tstream():
    """torch's current stream with a GPU, else None."""
    if gpu():
        import torch
        return torch.cuda.current_stream()
    return None


def handle(stream):
    """A torch stream's raw handle (None stays None)."""
    return None if stream is None else stream.cuda_stream


def store_u64(addr, value):
    h2d(addr, ctypes.c_uint64(value))


def load_u64(addr):
    v = ctypes.c_uint64()
    d2h(v, addr)
    return int(v.value)
