"""ushmem as a torch symmetric-memory backend: ``symm_mem.set_backend("USHMEM")``.

Importing this module builds (once per torch version, cached) and loads a small C++
extension, ``_torch_symm_mem.cpp`` (allocator and handles) with
``_torch_symm_mem_ops.cpp`` (``torch.ops.ushmem``), that registers the backend name "USHMEM" with
torch (``register_availability``). ``enable()`` then starts ushmem over torch's process
group if needed and selects the backend::

    import torch, torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem
    import ushmem.interop.torch_symm_mem as usm

    dist.init_process_group("gloo")                 # or nccl; torchrun sets the rest
    torch.cuda.set_device(0)                        # several ranks may share one GPU
    usm.enable()                                    # ushmem.init_with_torch + set_backend
    t = symm_mem.empty(1024, device="cuda")
    h = symm_mem.rendezvous(t, dist.group.WORLD.group_name)
    h.barrier(channel=0)

Allocation is local to each rank (torch's allocator is not collective): blocks come
from the part of the device heap set aside by ``USHMEM_DEVICE_LOCAL_HEAP_SIZE``
(``enable()`` sets it to half of ``USHMEM_DEVICE_HEAP_SIZE`` when it starts ushmem and
the variable is unset), and peers learn where at ``rendezvous``. Frees never wait for
peers. Peers on other hosts have NULL buffer pointers (ushmem's proxy still carries
``put_signal``/``wait_signal`` to them).

Needs torch with CUDA and its C++ headers (pip wheels have them), a C++ compiler and
nvcc with the CUDA runtime headers (CUDA_HOME; the all_to_all_vdev kernels). The build goes to ``$USHMEM_CACHE_DIR`` or
``~/.cache/ushmem``."""
import ctypes
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

import torch

import ushmem

_HERE = os.path.dirname(os.path.abspath(__file__))
_SRC = os.path.join(_HERE, "_torch_symm_mem.cpp")
_OPS = os.path.join(_HERE, "_torch_symm_mem_ops.cpp")
_SRC_H = os.path.join(_HERE, "_torch_symm_mem.h")
_KERNELS = os.path.join(_HERE, "_torch_symm_mem_kernels.cu")
_CAPI_H = os.path.join(os.path.dirname(_HERE), "ushmem_capi.h")
_HEADER = os.path.join("torch", "csrc", "distributed", "c10d", "symm_mem", "SymmetricMemory.hpp")
NAME = "USHMEM"
_lib = None


class BuildError(ImportError):
    """The backend's extension could not be built here (the message says why)."""


def _cuda_paths(fn):
    from torch.utils import cpp_extension as ce
    try:
        return getattr(ce, fn)("cuda")
    except TypeError:  # older torch: include_paths(cuda=True)
        return getattr(ce, fn)(cuda=True)


def _why_not():
    if torch.version.cuda is None:
        return f"torch {torch.__version__} has no CUDA"
    if not torch.cuda.is_available():
        return "no CUDA device is visible"
    inc = os.path.join(os.path.dirname(torch.__file__), "include")
    if not os.path.exists(os.path.join(inc, _HEADER)):
        return f"torch {torch.__version__} ships no {_HEADER}"
    return None


def _nvcc():
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    for c in ([os.path.join(home, "bin", "nvcc")] if home else []) + \
            [shutil.which("nvcc") or "", "/usr/local/cuda/bin/nvcc"]:
        if c and os.access(c, os.X_OK):
            return c
    raise BuildError("ushmem torch symm_mem backend: no nvcc (set CUDA_HOME) to compile "
                     f"{_KERNELS}")


def _run(cmd, what, verbose):
    if verbose:
        print(" ".join(cmd), file=sys.stderr)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-20:])
        raise BuildError(f"ushmem torch symm_mem backend: compiling {what} failed "
                         f"({cmd[0]}, torch {torch.__version__}):\n{tail}")


def _pad_size():
    """The signal pad size of torch releases without the free get_signal_pad_size()
    (see the C++ side): what torch says, else the largest fixed default (9216); 0 where
    the header has the configurable size (the value is not used there, and a user's
    set_signal_pad_size must not force a rebuild)."""
    inc = os.path.join(os.path.dirname(torch.__file__), "include", _HEADER)
    try:
        with open(inc) as f:
            if "set_signal_pad_size" in f.read():
                return 0
    except OSError:
        pass
    try:
        from torch._C._distributed_c10d import _SymmetricMemory
        n = int(_SymmetricMemory.signal_pad_size)
        return n if n > 0 else 9216
    except (ImportError, AttributeError, TypeError, ValueError):
        return 9216


def build(verbose=False):
    """Compile the extension for this torch (cached); returns the path of the .so."""
    why = _why_not()
    if why:
        raise BuildError(f"ushmem torch symm_mem backend: {why}")
    major, minor = torch.cuda.get_device_capability()
    arch = f"{major}{minor}"
    pad = _pad_size()
    h = hashlib.sha1(f"{torch.__version__} {arch} {pad}".encode())
    for path in (_SRC, _OPS, _SRC_H, _KERNELS, _CAPI_H):
        with open(path, "rb") as f:
            h.update(f.read())
    digest = h.hexdigest()[:12]
    cache = os.environ.get("USHMEM_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "ushmem")
    os.makedirs(cache, exist_ok=True)
    tag = torch.__version__.replace("+", "_")
    out = os.path.join(cache, f"torch_symm_mem-{tag}-{digest}.so")
    if os.path.exists(out):
        return out
    with open(os.path.join(cache, "torch_symm_mem.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one rank builds, the others wait for it
        if os.path.exists(out):
            return out
        incs = _cuda_paths("include_paths")
        libdirs = _cuda_paths("library_paths")
        abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=cache)
        os.close(fd)
        obj = tmp[:-3] + "_kernels.o"
        try:
            _run([_nvcc(), "-O2", "-std=c++17", "-Xcompiler", "-fPIC",
                  f"-gencode=arch=compute_{arch},code=sm_{arch}", "-c", _KERNELS, "-o", obj],
                 _KERNELS, verbose)
            _run([os.environ.get("CXX", "c++"), "-O2", "-std=c++17", "-shared", "-fPIC",
                  f"-D_GLIBCXX_USE_CXX11_ABI={abi}", f"-DUSHMEM_TORCH_PAD_SIZE={pad}",
                  *[f"-I{d}" for d in incs], _SRC, _OPS, obj,
                  "-o", tmp, *[f"-L{d}" for d in libdirs], *[f"-Wl,-rpath,{d}" for d in libdirs],
                  "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_cuda", "-lc10_cuda", "-lcudart"],
                 _SRC, verbose)
        except BaseException:
            os.unlink(tmp)
            raise
        finally:
            if os.path.exists(obj):
                os.unlink(obj)
        os.replace(tmp, out)
    return out


def load(verbose=False):
    """Build if needed, load the extension (registers "USHMEM") and hand it ushmem's
    library (the package's C API capsule). Idempotent."""
    global _lib
    if _lib is not None:
        return _lib
    path = build(verbose)
    torch.ops.load_library(path)
    lib = ctypes.CDLL(path)
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    table = get(ushmem._ushmem._C_API, b"ushmem._ushmem._C_API")
    lib.ushmem_symm_mem_set_capi.argtypes = [ctypes.c_void_p]
    if lib.ushmem_symm_mem_set_capi(table) != 0:
        raise BuildError("ushmem torch symm_mem backend: the package's C API table is older "
                         "than the backend (rebuild the package)")
    _lib = lib
    return lib


def _size(text):
    """Bytes of a size in ushmem's notation (K/M/G/T suffixes)."""
    t = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    return int(t[:-1] if mult != 1 else t) * mult


def enable(group=None, device=None):
    """Make "USHMEM" torch's symmetric-memory backend for CUDA: start ushmem over the
    process group (``ushmem.init_with_torch``; device: torch's current device unless
    given) if it is not running, load the backend and ``set_backend("USHMEM")``. Call it
    on every rank before the first ``symm_mem.empty``."""
    import torch.distributed._symmetric_memory as symm_mem
    if not ushmem.is_initialized():
        if "USHMEM_DEVICE_LOCAL_HEAP_SIZE" not in os.environ:
            heap = _size(os.environ.get("USHMEM_DEVICE_HEAP_SIZE", "1G"))
            os.environ["USHMEM_DEVICE_LOCAL_HEAP_SIZE"] = str(heap // 2)
        if device is None:
            device = torch.cuda.current_device()
        ushmem.init_with_torch(group=group, device=device)
    load()
    symm_mem.set_backend(NAME)


load()  # registers "USHMEM" at import, as torch's own backends are at load
