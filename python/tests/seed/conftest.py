"""The seed suite's setup (rocshmem4py's tests, rewritten for ushmem): run these files on
their own, `pytest --confcutdir=tests/seed tests/seed`, so that tests/conftest.py (the
project suite's own init) is not loaded.

Init as the seed does it, first match wins:
  torch importable (and not USHMEM_USE_TORCH_INIT=0 under mpirun) -> init_with_torch()
      with no process group: init_with_torch makes the default one (torchrun's variables,
      mpirun's mapped to them, or over ushmem itself under ushrun / alone)
  mpirun and mpi4py                                              -> init_with_mpi()
  otherwise                                                      -> init()
requires_multi_pe reads WORLD_SIZE / OMPI_COMM_WORLD_SIZE at collection, as the seed does
(before init: the launcher exports one of them; ushrun, torchrun and mpirun all do).

GPU: buffers and tensors are made as the seed makes them, without device=: where a CUDA
device is bound to ushmem they land on the device heap (ushmem's default there) and the
stream forms run on real streams; elsewhere the same tests run on the host heap (streams
None: the operation runs at once)."""
import os

import pytest


def _importable(name):
    try:
        __import__(name)
        return True
    except ImportError:
        return False


HAS_TORCH = _importable("torch")
HAS_MPI4PY = _importable("mpi4py")
UNDER_MPIRUN = "OMPI_COMM_WORLD_SIZE" in os.environ
USE_TORCH = HAS_TORCH and (os.environ.get("USHMEM_USE_TORCH_INIT", "1") == "1"
                           or not UNDER_MPIRUN)
USE_MPI = not USE_TORCH and UNDER_MPIRUN and HAS_MPI4PY


def world_size():
    return int(os.environ.get("WORLD_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE") or 1)


requires_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
requires_multi_pe = pytest.mark.skipif(world_size() < 2, reason="needs at least 2 PEs")

_started = {"how": None}


@pytest.fixture(scope="session", autouse=True)
def ushmem_session():
    import ushmem
    if USE_TORCH:
        ushmem.init_with_torch()
        _started["how"] = "torch"
    elif USE_MPI:
        ushmem.init_with_mpi()
        _started["how"] = "mpi"
    else:
        ushmem.pin_device_from_local_rank()
        ushmem.init()
        _started["how"] = "raw"
    yield


def pytest_sessionfinish(session, exitstatus):
    how = _started["how"]
    if how is None:
        return  # init never ran: nothing to tear down
    import ushmem
    if not ushmem.is_initialized():
        return
    if how == "torch":
        ushmem.finalize_with_torch()
    elif how == "mpi":
        ushmem.finalize_with_mpi()
    else:
        import seed_util
        seed_util.device_sync()
        ushmem.barrier_all()
        ushmem.finalize()
