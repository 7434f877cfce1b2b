"""ushmem: OpenSHMEM for Python, on host memory and CUDA device memory.

The names mirror the C API without the ``shmem_`` prefix::

    import ushmem
    ushmem.init()                       # or init_with_torch() / init_with_mpi(comm)
    me, n = ushmem.my_pe(), ushmem.n_pes()
    buf = ushmem.create_buffer(64)      # collective; buf.free() is collective too
    ushmem.putmem(buf, b"hello", 5, (me + 1) % n)
    ushmem.barrier_all()
    buf.free()
    ushmem.finalize()

Every failure raises: ``ushmem.Error`` (with ``.code``, one of the ``ERR_*``
constants, and ``.message``), ``ValueError`` or ``TypeError``. Arguments are
checked before the C library sees them, so a bad PE, a non-symmetric address
or a size mismatch never aborts the interpreter.

Garbage collection never frees symmetric memory (freeing is collective): it
warns with ``LeakWarning`` and ``finalize()`` reports what was never freed.

CUDA: ``init(device=...)`` (or LOCAL_RANK / USHMEM_DEVICE) binds a GPU; then
``create_buffer(n)`` allocates on the device heap, as rocshmem4py's buffers
(``device="cpu"``: host memory; without a GPU bound the host heap is the default),
and the ``*_on_stream`` forms take a stream (None: CUDA's legacy default stream for
device memory, "now" for host memory). ``cuda_device()`` says which GPU.
"""
import os as _os
import sys as _sys

# The C library asks CUDA for eager module loading when it initializes CUDA
# first (lazy loading can deadlock with the proxy of PEs on other hosts:
# docs/cuda.md). In Python, torch and others load far more kernels than a C
# program: keep CUDA's default (lazy) unless the user chose.
_os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")

# The library would otherwise remap the executable's .data/.bss onto shared
# memory at init: pointless for the interpreter, unsafe with torch's threads.
_os.environ.setdefault("USHMEM_STATIC_DATA", "0")


def _extension_dirs():
    """Where _ushmem may live besides this directory: $USHMEM_PYTHON_EXT_DIR,
    then the build tree of a source checkout (build/python/ushmem)."""
    dirs = []
    env = _os.environ.get("USHMEM_PYTHON_EXT_DIR")
    if env:
        dirs.append(_os.path.abspath(env))
    here = _os.path.dirname(_os.path.abspath(__file__))
    dirs.append(_os.path.join(_os.path.dirname(_os.path.dirname(here)), "build", "python", "ushmem"))
    return [d for d in dirs if _os.path.isdir(d)]


for _i, _d in enumerate(_extension_dirs()):
    if _d not in __path__:
        # An explicit USHMEM_PYTHON_EXT_DIR wins over a copy in the package.
        if _i == 0 and _os.environ.get("USHMEM_PYTHON_EXT_DIR"):
            __path__.insert(0, _d)
        else:
            __path__.append(_d)

try:
    from . import _ushmem
except ImportError as _e:  # pragma: no cover - message only
    raise ImportError(
        "ushmem: the C extension _ushmem is not built for this interpreter "
        f"({_sys.executable}): run `make` in the source tree (it builds for /usr/bin/python3), "
        "set USHMEM_PYTHON_EXT_DIR to the directory holding _ushmem*.so, or "
        "`pip install --no-build-isolation ./python`"
    ) from _e

from ._ushmem import *  # noqa: F401,F403  (the C functions are the API)
from ._ushmem import Error, LeakWarning, SymmetricBuffer, Team  # noqa: F401
# The teams this package made and has not destroyed (a live list, as the seed's registry;
# finalize() destroys what is left in it).
from ._ushmem import _live_teams  # noqa: F401

import enum as _enum


class SignalOp(_enum.IntEnum):
    """How putmem_signal updates the signal word (SIGNAL_SET, SIGNAL_ADD); members are ints."""
    SET = _ushmem.SIGNAL_SET
    ADD = _ushmem.SIGNAL_ADD


class ComparisonType(_enum.IntEnum):
    """The comparison of signal_wait_until (CMP_EQ ... CMP_LE); members are ints."""
    EQ = _ushmem.CMP_EQ
    NE = _ushmem.CMP_NE
    GT = _ushmem.CMP_GT
    GE = _ushmem.CMP_GE
    LT = _ushmem.CMP_LT
    LE = _ushmem.CMP_LE


class ThreadLevel(_enum.IntEnum):
    """Thread levels (THREAD_SINGLE ... THREAD_MULTIPLE); members are ints."""
    SINGLE = _ushmem.THREAD_SINGLE
    FUNNELED = _ushmem.THREAD_FUNNELED
    SERIALIZED = _ushmem.THREAD_SERIALIZED
    MULTIPLE = _ushmem.THREAD_MULTIPLE


# The module constants are the enum members: equal to the ints (and ints themselves).
SIGNAL_SET, SIGNAL_ADD = SignalOp.SET, SignalOp.ADD
CMP_EQ, CMP_NE, CMP_GT = ComparisonType.EQ, ComparisonType.NE, ComparisonType.GT
CMP_GE, CMP_LT, CMP_LE = ComparisonType.GE, ComparisonType.LT, ComparisonType.LE
THREAD_SINGLE, THREAD_FUNNELED = ThreadLevel.SINGLE, ThreadLevel.FUNNELED
THREAD_SERIALIZED, THREAD_MULTIPLE = ThreadLevel.SERIALIZED, ThreadLevel.MULTIPLE

__version__ = _ushmem.__version__  # CMakeLists.txt project(VERSION), compiled in

_c_init = _ushmem.init
_c_init_attr = _ushmem.init_attr
_c_finalize = _ushmem.finalize
_init_method = None  # "raw", "attr", "torch", "mpi" while initialized


def _error(code, message):
    e = Error(message)
    e.code = code
    e.message = message
    return e


def _no_cuda(fn):
    return _error(_ushmem.ERR_UNSUPPORTED,
                  f"{fn}: CUDA memory needs a CUDA device bound to ushmem on this PE, and none "
                  "is (pass device= to init, or set LOCAL_RANK / USHMEM_DEVICE)")


def _torch_cuda():
    """torch, if it is already imported and has CUDA (the package never imports torch
    itself for this: importing it costs seconds)."""
    torch = _sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return torch
    except Exception:  # pragma: no cover - a broken CUDA setup
        pass
    return None


def _device_count():
    torch = _torch_cuda()
    return torch.cuda.device_count() if torch is not None else _ushmem._cuda_device_count()


def _resolve_device(device, nccl=False):
    """The CUDA ordinal to bind for a device= argument, or None (let the library choose:
    USHMEM_DEVICE, else the launcher's local rank modulo the device count when torch
    has CUDA, else none), or "cpu"."""
    if device is None:
        if nccl:  # an nccl group already chose the device
            return _torch_cuda().cuda.current_device()
        # With torch and CUDA, a GPU is bound whatever the launcher: torchrun's
        # LOCAL_RANK, ushrun's USHMEM_LOCAL_RANK, mpirun's OMPI_COMM_WORLD_LOCAL_RANK
        # (the seed's programs expect device buffers on a GPU machine).
        torch = _torch_cuda()
        lr = local_rank()
        if torch is not None and lr is not None and not _os.environ.get("USHMEM_DEVICE"):
            return lr % torch.cuda.device_count()
        return None
    if isinstance(device, bool):
        raise TypeError("device must be None, 'cpu', 'cuda', 'cuda:N', an int or a torch.device")
    if isinstance(device, int):
        if device < 0:
            raise ValueError(f"device ordinal {device} is negative")
        return device
    kind, index = str(device), None
    if hasattr(device, "type") and hasattr(device, "index"):  # torch.device
        kind, index = device.type, device.index
    elif kind.startswith("cuda:"):
        kind, index = "cuda", kind[5:]
        if not index.isdigit():
            raise ValueError(f"unknown device {device!r}")
        index = int(index)
    if kind in ("cpu", "host"):
        return "cpu"
    if kind != "cuda":
        raise ValueError(f"unknown device {device!r} (use None, 'cpu', 'cuda', 'cuda:N' or an int)")
    if index is not None:
        return index
    count = _device_count()
    if count == 0:
        raise _error(_ushmem.ERR_UNSUPPORTED, "device='cuda': no CUDA device is visible")
    return (local_rank() or 0) % count


class _DeviceEnv:
    """Environment for the library's init: USHMEM_DEVICE (raw init) or, for 'cpu',
    USHMEM_TRANSPORTS without cuda; restored afterwards."""

    def __init__(self, dev, set_device_var):
        self.vars = {}
        if dev == "cpu":
            cur = [t for t in _os.environ.get("USHMEM_TRANSPORTS", "shm").split(",")
                   if t.strip() and t.strip() != "cuda"]
            self.vars["USHMEM_TRANSPORTS"] = ",".join(cur) or "shm"
        elif dev is not None and set_device_var:
            self.vars["USHMEM_DEVICE"] = str(dev)

    def __enter__(self):
        self.saved = {k: _os.environ.get(k) for k in self.vars}
        _os.environ.update(self.vars)

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                _os.environ.pop(k, None)
            else:
                _os.environ[k] = v


def _after_init():
    """Point torch (if imported, with CUDA) at the device the library bound."""
    dev = _ushmem.cuda_device()
    torch = _torch_cuda()
    if dev is not None and torch is not None and torch.cuda.current_device() != dev:
        torch.cuda.set_device(dev)


class TeamConfig:
    """Configuration for team splits (``num_contexts``; pass config_mask=TEAM_NUM_CONTEXTS)."""

    def __init__(self, num_contexts=0):
        self.num_contexts = num_contexts

    def __repr__(self):
        return f"TeamConfig(num_contexts={self.num_contexts})"


def init_method():
    """How ushmem was initialized: "raw", "attr", "torch", "mpi", or None."""
    return _init_method if _ushmem.is_initialized() else None


def init(thread_level=None, device=None):
    """Initialize from the launcher's environment (ushrun, torchrun, or alone: 1 PE).

    device: the CUDA device to bind ('cuda', 'cuda:N', N or a torch.device), 'cpu' for
    none, or None: USHMEM_DEVICE, else the launcher's local rank (LOCAL_RANK,
    USHMEM_LOCAL_RANK under ushrun, OMPI_COMM_WORLD_LOCAL_RANK) modulo the device count
    when torch has CUDA (the library alone: LOCAL_RANK), else none. Under mpirun use
    init_with_mpi(). Returns the thread level provided."""
    global _init_method
    if _ushmem.is_initialized():
        raise _error(_ushmem.ERR_STATE, "init: ushmem is already initialized (finalize it first)")
    dev = _resolve_device(device)
    with _DeviceEnv(dev, set_device_var=True):
        provided = _c_init(thread_level=thread_level)
    _init_method = "raw"
    _after_init()
    return provided


def _init_attr(rank, nranks, uid, device, thread_level, nccl=False):
    dev = _resolve_device(device, nccl)
    with _DeviceEnv(dev, set_device_var=False):
        _c_init_attr(rank, nranks, uid, device=None if dev in (None, "cpu") else dev,
                     thread_level=thread_level)
    _after_init()


def init_attr(rank, nranks, uid, device=None, thread_level=None):
    """Initialize with a unique id from get_uniqueid() on rank 0, shipped to all ranks.
    device: as for init() (shmemx_init_attr's attr.device)."""
    global _init_method
    _init_attr(rank, nranks, uid, device, thread_level)
    _init_method = "attr"


def finalize():
    """Collective: destroys the teams the package created, reports leaked symmetric memory
    (LeakWarning), and finalizes the library. Raises if it is not initialized.

    While another ushmem call is in progress in this process (another thread waits in
    signal_wait_until or a barrier, or copies with the GIL released), finalize() refuses:
    it raises ushmem.Error (ERR_STATE, a RuntimeError) naming that call and leaves ushmem
    initialized, since finalizing would unmap the memory that call still uses. Make the
    call return first (for a wait: satisfy it), then call finalize() again, on every PE."""
    global _init_method
    _c_finalize()
    _init_method = None


def local_rank():
    """This process's rank on its host as the launcher says (LOCAL_RANK, USHMEM_LOCAL_RANK,
    OMPI_COMM_WORLD_LOCAL_RANK), or None."""
    for var in ("LOCAL_RANK", "USHMEM_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                "MPI_LOCALRANKID", "SLURM_LOCALID"):
        v = _os.environ.get(var)
        if v is not None and v.strip().isdigit():
            return int(v)
    return None


def pin_device_from_local_rank():
    """Select the CUDA device LOCAL_RANK (modulo the device count) in torch, if torch has CUDA.
    Returns the device index, or None on CPU-only systems."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    lr = local_rank() or 0
    dev = lr % torch.cuda.device_count()
    torch.cuda.set_device(dev)
    return dev


def set_device_from_env():
    """The seed's set_hip_device_from_env(): pin_device_from_local_rank() (the CUDA device
    LOCAL_RANK modulo the device count, in torch; None without CUDA)."""
    return pin_device_from_local_rank()


def device_synchronize():
    """The seed's hip_device_synchronize(): wait for all work on the CUDA device bound to
    ushmem (through torch when it is imported, else the CUDA runtime); nothing to wait for
    without a bound device."""
    dev = _ushmem.cuda_device() if _ushmem.is_initialized() else None
    if dev is None:
        return
    torch = _torch_cuda()
    if torch is not None:
        torch.cuda.synchronize(dev)
        return
    import ctypes
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"):
        try:
            rt = ctypes.CDLL(name)
        except OSError:
            continue
        rc = rt.cudaSetDevice(dev) or rt.cudaDeviceSynchronize()
        if rc:
            raise _error(_ushmem.ERR_UNSUPPORTED, f"device_synchronize: CUDA error {rc}")
        return
    raise _error(_ushmem.ERR_UNSUPPORTED,
                 "device_synchronize: neither torch with CUDA nor libcudart is available")


def _uid_failed(rank):
    return _error(_ushmem.ERR_BOOTSTRAP,
                  f"rank 0 could not create a unique id (see its error); rank {rank} gives up")


_torch_pg_created = False  # init_with_torch made the default process group


def _map_mpi_env():
    """Give torch's names (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) to the rank
    variables of mpirun (Open MPI's OMPI_COMM_WORLD_*, else PMI_* / PMIX_RANK), where
    torch's are not set already."""
    pairs = (("RANK", ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")),
             ("WORLD_SIZE", ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE")),
             ("LOCAL_RANK", ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK")),
             ("LOCAL_WORLD_SIZE", ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                   "PMI_LOCAL_SIZE")))
    for dst, srcs in pairs:
        if dst in _os.environ:
            continue
        for src in srcs:
            v = _os.environ.get(src, "").strip()
            if v.isdigit():
                _os.environ[dst] = v
                break


def _default_backend():
    import torch
    if torch.cuda.is_available():
        major = int(torch.__version__.split(".")[0])
        return "cpu:gloo,cuda:nccl" if major >= 2 else "nccl"
    return "gloo"


def _create_process_group(backend, init_method, thread_level, device):
    """Make torch's default process group for init_with_torch() when none exists.

    With torch's rendezvous variables (torchrun; or mpirun, whose OMPI_COMM_WORLD_* /
    PMI_* are mapped to RANK / WORLD_SIZE / LOCAL_RANK, plus MASTER_ADDR / MASTER_PORT)
    or an init_method: init_process_group, then ushmem over it (returns False). Else
    (ushrun, mpirun without MASTER_*, or one process alone): ushmem's own init first, then
    the group over a TCPStore that PE 0 serves on a free port (returns True: ushmem is
    initialized already)."""
    global _torch_pg_created, _init_method
    import datetime
    import torch.distributed as dist
    _map_mpi_env()
    backend = backend or _default_backend()
    if "nccl" in backend:
        pin_device_from_local_rank()  # NCCL needs each rank on its own device first
    env = _os.environ
    if init_method is not None or all(v in env for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR",
                                                         "MASTER_PORT")):
        kw = {}
        if "RANK" in env and "WORLD_SIZE" in env:
            kw = {"rank": int(env["RANK"]), "world_size": int(env["WORLD_SIZE"])}
        dist.init_process_group(backend, init_method=init_method or "env://", **kw)
        _torch_pg_created = True
        return False
    init(thread_level=thread_level, device=device)
    try:
        me, n = _ushmem.my_pe(), _ushmem.n_pes()
        # PE 0 serves the store; where the peers reach it travels in symmetric memory.
        host = env.get("MASTER_ADDR") or ("127.0.0.1" if env.get("USHMEM_LAUNCHER") == "ushrun"
                                          or n == 1 else __import__("socket").gethostname())
        # The same patience as the library's own bootstrap.
        timeout = datetime.timedelta(seconds=int(env.get("USHMEM_BOOTSTRAP_TIMEOUT") or 60))
        store, failure = None, None
        msg = _ushmem.create_buffer(256, device="cpu", zero=True)  # read with bytes()
        try:
            if me == 0:
                try:
                    store = dist.TCPStore(host, int(env.get("MASTER_PORT", 0)), n, True,
                                          timeout, wait_for_workers=False)
                    where = f"{host} {store.port}".encode()
                except Exception as e:  # the others must hear of it, not wait
                    failure, where = e, b"-"
                for pe in range(n):
                    _ushmem.putmem(msg, where, len(where), pe)
            _ushmem.barrier_all()
            got = bytes(msg).rstrip(b"\0").decode().split()
        finally:
            msg.free()
        if failure is not None:
            raise failure
        if len(got) != 2:
            raise _error(_ushmem.ERR_BOOTSTRAP, "init_with_torch: PE 0 could not serve the "
                         "process group's store (see its error); giving up")
        host, port = got
        if store is None:
            store = dist.TCPStore(host, int(port), n, False, timeout)
        dist.init_process_group(backend, store=store, rank=me, world_size=n)
        _torch_pg_created = True
    except BaseException:
        finalize()
        raise
    _init_method = "torch"
    return True


def init_with_torch(group=None, thread_level=None, device=None, backend=None, init_method=None):
    """Initialize over a torch.distributed process group (gloo or nccl): rank 0 of the
    group makes a unique id, the group broadcasts it, every rank calls init_attr.
    device: as for init(); None with an nccl group binds torch's current device.

    With no process group yet (and group=None) it makes the default one first, as
    rocshmem4py does: torch.distributed.init_process_group(backend, init_method) from
    torch's variables (torchrun; under mpirun OMPI_COMM_WORLD_* / PMI_* are mapped to
    RANK / WORLD_SIZE / LOCAL_RANK), or, without MASTER_ADDR / MASTER_PORT (ushrun, one
    process alone), over a store PE 0 serves. backend: default 'gloo' without CUDA,
    'cpu:gloo,cuda:nccl' with it. finalize_with_torch() destroys a group made here."""
    global _init_method
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        raise _error(_ushmem.ERR_STATE, f"init_with_torch: torch is not available ({e})")
    if _ushmem.is_initialized():
        raise _error(_ushmem.ERR_STATE, "init_with_torch: ushmem is already initialized")
    if not dist.is_available():
        raise _error(_ushmem.ERR_STATE, "init_with_torch: this torch has no torch.distributed")
    if not dist.is_initialized():
        if group is not None:
            raise _error(_ushmem.ERR_STATE,
                         "init_with_torch: group= was given but torch.distributed is not "
                         "initialized")
        if _create_process_group(backend, init_method, thread_level, device):
            return
    rank = dist.get_rank(group)
    nranks = dist.get_world_size(group)
    if rank < 0:
        raise _error(_ushmem.ERR_INVALID, "init_with_torch: this process is not in the group")
    backend = dist.get_backend(group)
    bcast_dev = torch.device("cpu")  # where the uid travels (nccl: a CUDA tensor)
    if backend == "nccl":
        bcast_dev = torch.device("cuda", torch.cuda.current_device())
    uid, failure = bytes(_ushmem.UNIQUEID_BYTES), None
    if rank == 0:
        try:
            uid = _ushmem.get_uniqueid()
        except Error as e:
            failure = e
    t = torch.tensor(list(uid), dtype=torch.uint8, device=bcast_dev)
    if group is None:
        src = 0
    else:
        get_global = getattr(dist, "get_global_rank", None) or \
            dist.distributed_c10d._get_global_rank
        src = get_global(group, 0)
    dist.broadcast(t, src=src, group=group)
    if failure is not None:
        raise failure
    uid = bytes(t.cpu().tolist())
    if not any(uid):
        raise _uid_failed(rank)
    _init_attr(rank, nranks, uid, device, thread_level, nccl=backend == "nccl" and device is None)
    _init_method = "torch"


def finalize_with_torch():
    """finalize() for init_with_torch(); then destroys the default process group if
    init_with_torch() made it (a group the caller made stays)."""
    global _torch_pg_created
    finalize()
    if _torch_pg_created:
        _torch_pg_created = False
        import torch.distributed as dist
        if dist.is_initialized():
            dist.destroy_process_group()


def init_with_mpi(comm=None, thread_level=None, device=None):
    """Initialize over an mpi4py communicator (default COMM_WORLD): rank 0 makes a unique
    id, comm.bcast ships it, every rank calls init_attr. device: as for init()."""
    global _init_method
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise _error(_ushmem.ERR_STATE, f"init_with_mpi: mpi4py is not available ({e})")
    if comm is None:
        comm = MPI.COMM_WORLD
    if _ushmem.is_initialized():
        raise _error(_ushmem.ERR_STATE, "init_with_mpi: ushmem is already initialized")
    rank, nranks = comm.Get_rank(), comm.Get_size()
    _check_launcher_size(MPI.COMM_WORLD.Get_size())
    uid, failure = None, None
    if rank == 0:
        try:
            uid = _ushmem.get_uniqueid()
        except Error as e:
            failure = e
    uid = comm.bcast(uid, root=0)
    if failure is not None:
        raise failure
    if uid is None:
        raise _uid_failed(rank)
    _init_attr(rank, nranks, uid, device, thread_level)
    _init_method = "mpi"


def _launcher_processes():
    """(launcher, number of processes it started) from the environment, or (None, None)."""
    for name, var in (("mpirun", "OMPI_COMM_WORLD_SIZE"), ("mpirun", "PMI_SIZE"),
                      ("ushrun", "USHMEM_NPES"), ("torchrun", "WORLD_SIZE")):
        v = _os.environ.get(var, "").strip()
        if v.isdigit():
            return name, int(v)
    return None, None


def _check_launcher_size(world):
    """init_with_mpi: MPI's world must be the launcher's job (under torchrun or ushrun each
    process is a singleton MPI job, which would make N one-PE ushmem jobs)."""
    launcher, n = _launcher_processes()
    if n is not None and world != n:
        raise _error(_ushmem.ERR_STATE,
                     f"init_with_mpi: MPI.COMM_WORLD has {world} process(es) but {launcher} "
                     f"started {n}: MPI does not span the job (launch with mpirun, or use "
                     f"{'init_with_torch()' if launcher == 'torchrun' else 'init()'} here)")


def finalize_with_mpi():
    """finalize() for init_with_mpi(); MPI itself stays initialized (it is the caller's)."""
    finalize()


def buffer_of(addr):
    """The owning SymmetricBuffer that starts at addr (int), or None."""
    return _ushmem._owner_of(addr)


def get_peer_ptr_table(buf):
    """[address of every PE's copy of a symmetric object as mapped in this process (0 where
    not mapped)]: a list of one int per PE, as rocshmem4py's bare-Python helper (equal to
    get_heap_bases(buf) where every PE is mapped here). buf: an int address, a
    SymmetricBuffer, or a symmetric tensor or array. ValueError when buf is not symmetric.
    interop.torch.get_peer_ptr_table(t) gives the same table as an int64 tensor."""
    arg = buf.data_ptr() if callable(getattr(buf, "data_ptr", None)) else buf  # tensors
    try:
        bases = _ushmem.get_heap_bases(arg)
    except Error as e:
        if e.code == ERR_NOTSYM:
            raise ValueError(f"get_peer_ptr_table: {buf!r:.80} is not a symmetric tensor or "
                             "buffer (make it with create_buffer or interop.torch."
                             "create_tensor)") from None
        raise
    return [b or 0 for b in bases]


def get_include():
    """The directory holding ushmem_capi.h, for the include path of extension builds.

    ushmem_capi.h declares the table of library entry points that this package exports
    to other extension modules as the capsule ushmem._ushmem._C_API (ushmem_capi_import()
    fetches it), so that they call the library this package initialized; as
    numpy.get_include()."""
    return _os.path.dirname(_os.path.abspath(__file__))


def live_allocations():
    """[(address, nbytes, kind)] of the symmetric allocations not yet freed on this PE."""
    return _ushmem._allocations()


def stats():
    """This PE's call counters, as a dict: puts, gets, put_bytes, get_bytes, bytes, amos,
    barriers, syncs, collectives, quiets, fences. They count the successful calls made
    through this Python module (the binding counts them; the C library keeps none), since
    the import or reset_stats(): putmem* and putmem_signal* are puts, getmem* gets (bytes: their
    nbytes), every <type>_atomic_<op> an AMO, barrier_all/barrier(_on_stream) barriers,
    sync_all/team_sync(_on_stream) syncs, alltoall/broadcast/fcollect/reduce collectives.
    interop.torch's put/get/barrier_all/collectives are counted through these."""
    return _ushmem._stats()


def dump_stats(file=None):
    """Print this PE's call counters (see stats()) as one line on file (default stdout);
    returns them as a dict."""
    st = stats()
    pe = _ushmem.my_pe() if _ushmem.is_initialized() else -1
    print(f"ushmem: PE {pe} stats: puts {st['puts']} ({st['put_bytes']} B), gets {st['gets']} "
          f"({st['get_bytes']} B), AMOs {st['amos']}, barriers {st['barriers']}, syncs "
          f"{st['syncs']}, collectives {st['collectives']}, quiets {st['quiets']}, fences "
          f"{st['fences']}", file=file if file is not None else _sys.stdout, flush=True)
    return st


def reset_stats():
    """Zero this PE's call counters (see stats())."""
    _ushmem._reset_stats()


# The device API's handle (kernels that communicate): ushmem.device.
from .device import DeviceHandle, device_handle, device_why  # noqa: E402,F401


__all__ = sorted(_n for _n, _v in globals().items()
                 if not _n.startswith("_") and not isinstance(_v, type(_os)))
