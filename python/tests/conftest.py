"""Test-suite setup: the three-tier init ladder, markers, and data helpers.

Init tiers (USHMEM_TEST_INIT selects one; the default "auto" walks the ladder):
  torch  torch.distributed (gloo) + ushmem.init_with_torch()   needs torchrun's environment
  mpi    mpi4py COMM_WORLD + ushmem.init_with_mpi()            needs mpirun's environment
  raw    ushmem.init() from the launcher environment          ushrun, torchrun, or alone
An explicitly selected tier that cannot run is an error, not a silent fallback,
so that each tier is known to have been exercised.

Every PE runs every test. Tests keep their collective calls unconditional and
check results after the last collective, so a failing assertion on one PE
cannot leave the others waiting in a barrier.

CUDA: tests marked requires_cuda (and the "cuda" value of the `device`
parameter) run when torch has CUDA and ushmem bound a device at init
(ushmem.cuda_device(): LOCAL_RANK, USHMEM_DEVICE, or USHMEM_TEST_DEVICE=N which
the raw tier passes to init(device=N)); they are skipped elsewhere.
"""
import os
import zlib

import numpy as np
import pytest

import ushmem

TIER = os.environ.get("USHMEM_TEST_INIT", "auto")
# Local blocks (test_local_blocks.py) need a part of each heap set aside at init, the
# same on every PE: every tier (and reinit) reads it then. In bytes: tests read these
# with int(). Fresh interpreters the tests start drop USHMEM_LOCAL* with the launcher's
# variables; the seed suite has its own conftest.
os.environ.setdefault("USHMEM_LOCAL_HEAP_SIZE", str(16 << 20))
os.environ.setdefault("USHMEM_DEVICE_LOCAL_HEAP_SIZE", str(16 << 20))
_state = {"tier": None, "seed": None, "torch_pg": False, "error": None}


def _have(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def _torchrun_env():
    return all(v in os.environ for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def _mpirun_env():
    return any(v in os.environ for v in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"))


def _ladder():
    if TIER != "auto":
        if TIER not in ("torch", "mpi", "raw"):
            raise pytest.UsageError(f"USHMEM_TEST_INIT={TIER!r}: use auto, torch, mpi or raw")
        return [TIER]
    tiers = []
    if _torchrun_env() and _have("torch.distributed"):
        tiers.append("torch")
    if _mpirun_env() and _have("mpi4py"):
        tiers.append("mpi")
    tiers.append("raw")
    return tiers


def init_tier(tier):
    """Initialize ushmem with one tier (also used to re-initialize after finalize)."""
    if tier == "torch":
        import torch.distributed as dist
        if not _torchrun_env():
            raise RuntimeError("tier 'torch' needs torchrun's environment (RANK, WORLD_SIZE, ...)")
        if not dist.is_initialized():
            dist.init_process_group("gloo")
            _state["torch_pg"] = True
        ushmem.init_with_torch()
    elif tier == "mpi":
        from mpi4py import MPI
        ushmem.init_with_mpi(MPI.COMM_WORLD)
    else:
        dev = os.environ.get("USHMEM_TEST_DEVICE")
        ushmem.init(device=int(dev) if dev and dev.isdigit() else dev or None)


def _share_seed():
    """PE 0 picks the seed (USHMEM_TEST_SEED or random) and puts it to every PE."""
    me, n = ushmem.my_pe(), ushmem.n_pes()
    buf = ushmem.create_buffer(8, device="cpu", zero=True)
    if me == 0:
        seed = int(os.environ.get("USHMEM_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))
        for pe in range(n):
            ushmem.putmem(buf, seed.to_bytes(8, "little"), 8, pe)
    ushmem.barrier_all()
    seed = int.from_bytes(bytes(buf), "little")
    buf.free()
    return seed


def pytest_configure(config):
    errors = []
    for tier in _ladder():
        try:
            init_tier(tier)
            _state["tier"] = tier
            break
        except Exception as e:  # keep trying lower tiers in auto mode
            errors.append(f"{tier}: {type(e).__name__}: {e}")
            if ushmem.is_initialized():
                break
    if _state["tier"] is None:
        raise pytest.UsageError("ushmem: no init tier worked: " + "; ".join(errors))
    _state["seed"] = _share_seed()
    # Every PE's host heap mapped here? Not when some run on another host
    # (mpirun across hosts, or USHMEM_FAKE_HOSTS): no peer views there.
    probe = ushmem.create_buffer(8, device="cpu")
    _state["mapped"] = all(ushmem.ptr(probe, pe) is not None for pe in range(ushmem.n_pes()))
    probe.free()
    # Quiet output on PEs other than 0 (their failures are still reported).
    if ushmem.my_pe() != 0 and config.option.verbose > 0:
        config.option.verbose = 0


def pytest_report_header(config):
    if _state["tier"] is None:
        return None
    return (f"ushmem: PE {ushmem.my_pe()} of {ushmem.n_pes()}, init tier {_state['tier']} "
            f"(USHMEM_TEST_INIT={TIER}), launcher {os.environ.get('USHMEM_TEST_LAUNCHER', '?')}, "
            f"seed {_state['seed']} (rerun with USHMEM_TEST_SEED={_state['seed']})")


def pytest_sessionfinish(session, exitstatus):
    # Teardown must be safe when init failed or a test finalized the library.
    if not ushmem.is_initialized():
        return
    leaks = ushmem.live_allocations()
    if leaks and session.exitstatus == 0:
        print(f"\nushmem: PE {ushmem.my_pe()}: the tests leaked symmetric memory: {leaks}")
        session.exitstatus = 1
    try:
        ushmem.finalize()
    finally:
        if _state["torch_pg"]:
            import torch.distributed as dist
            dist.destroy_process_group()


def have_cuda():
    """torch has CUDA and ushmem has a device bound (the same answer on every PE of a
    job, as long as every PE is given a device alike)."""
    if not (ushmem.is_initialized() and ushmem.cuda_device() is not None and _have("torch")):
        return False
    return __import__("torch").cuda.is_available()


def pytest_generate_tests(metafunc):
    # `device`: "cpu" everywhere, "cuda" where have_cuda() (skipped elsewhere).
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", ["cpu", pytest.param("cuda", marks=[
            pytest.mark.requires_cuda, pytest.mark.requires_torch])])


def pytest_collection_modifyitems(config, items):
    n = ushmem.n_pes() if ushmem.is_initialized() else 1
    have_torch = _have("torch")
    cuda = have_cuda()
    for item in items:
        if item.get_closest_marker("requires_torch") and not have_torch:
            item.add_marker(pytest.mark.skip(reason="needs torch"))
        if item.get_closest_marker("requires_multi_pe") and n < 2:
            item.add_marker(pytest.mark.skip(reason="needs at least 2 PEs"))
        if item.get_closest_marker("requires_mapped_peers") and not _state.get("mapped", True):
            item.add_marker(pytest.mark.skip(
                reason="a PE runs on another host: its memory is not mapped here"))
        if item.get_closest_marker("requires_cuda") and not cuda:
            item.add_marker(pytest.mark.skip(
                reason="needs torch with CUDA and a CUDA device bound to ushmem"))


# ---- fixtures ----

@pytest.fixture(scope="session")
def me():
    return ushmem.my_pe()


@pytest.fixture(scope="session")
def npes():
    return ushmem.n_pes()


@pytest.fixture(scope="session")
def tier():
    return _state["tier"]


@pytest.fixture(scope="session")
def cuda_bound():
    """True when ushmem has a CUDA device bound (stream forms with None then enqueue on
    the legacy default stream instead of running now)."""
    return ushmem.cuda_device() is not None


def device_sync():
    """Wait for everything enqueued on this PE's GPU (no-op without a bound device)."""
    if ushmem.cuda_device() is not None:
        import torch
        torch.cuda.synchronize(ushmem.cuda_device())


@pytest.fixture
def reinit():
    """Initialize again with the session's tier (after a test finalized)."""
    return lambda: init_tier(_state["tier"])


class PEData:
    """Reproducible random data: what PE `pe` sends in this test under `tag`.

    Every PE can compute what any other PE sent from the sender's rank, the
    session seed (shared by PE 0) and the test's name."""

    def __init__(self, seed, test):
        self.seed, self.test = seed, zlib.crc32(test.encode())

    def rng(self, pe, tag=""):
        return np.random.default_rng([self.seed, self.test, pe, zlib.crc32(tag.encode())])

    def bytes(self, pe, n, tag=""):
        return self.rng(pe, tag).integers(0, 256, n, dtype=np.uint8).tobytes()

    def array(self, pe, n, dtype, tag=""):
        dtype = np.dtype(dtype)
        r = self.rng(pe, tag)
        if dtype.kind == "f":
            return r.standard_normal(n).astype(dtype)
        if dtype.kind == "b":
            return r.integers(0, 2, n).astype(bool)
        info = np.iinfo(dtype)
        return r.integers(info.min, info.max, n, dtype=dtype.name, endpoint=True)


@pytest.fixture
def data(request):
    return PEData(_state["seed"], request.node.nodeid)


@pytest.fixture
def sym_bytes():
    """Factory of symmetric buffers that are freed (collectively) after the test."""
    made = []

    def make(n, zero=False):
        b = ushmem.create_buffer(n, device="cpu", zero=zero)
        made.append(b)
        return b
    yield make
    for b in made:
        b.free()
