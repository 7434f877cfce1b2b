"""init_with_torch() without a process group makes the default one (and
finalize_with_torch() destroys it), mpirun's rank variables map to torch's, and
init_with_mpi() refuses an MPI world that is not the launcher's job. Each case runs in a
fresh single-process interpreter (in 1-PE jobs only: they are local and cost an
interpreter with torch each); the seed suite (tests/seed) runs init_with_torch() under every launcher."""
import os
import subprocess
import sys

import pytest

import ushmem

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _have(mod):
    try:
        __import__(mod)
        return True
    except ImportError:
        return False


def _run(code, **env):
    """Run code alone: no launcher variables (ushrun, torchrun, mpirun) inherited."""
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("USHMEM_RANK", "USHMEM_NPES", "USHMEM_LOCAL", "USHMEM_BOOT",
                                  "USHMEM_SECRET", "USHMEM_LAUNCHER", "OMPI_", "PMI", "PMIX",
                                  "RANK", "WORLD_SIZE", "LOCAL_", "MASTER_", "TORCHELASTIC",
                                  "GROUP_", "ROLE_"))}
    clean.update(env)
    clean["PYTHONPATH"] = HERE + os.pathsep + clean.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", code], env=clean, capture_output=True,
                          text=True, timeout=120)


pe0 = pytest.mark.skipif(not ushmem.is_initialized() or ushmem.n_pes() != 1,
                         reason="a check in fresh processes: run in 1-PE jobs only")

ALONE = """
import torch.distributed as dist, ushmem
assert not dist.is_initialized()
ushmem.init_with_torch()
assert dist.is_initialized() and dist.get_world_size() == 1 and dist.get_rank() == 0
assert ushmem.init_method() == "torch" and ushmem.n_pes() == 1
b = ushmem.create_buffer(8, device="cpu"); ushmem.putmem(b, b"12345678", 8, 0); assert bytes(b) == b"12345678"
b.free()
ushmem.finalize_with_torch()
assert not dist.is_initialized() and not ushmem.is_initialized()
print("ok")
"""


@pe0
@pytest.mark.skipif(not _have("torch"), reason="needs torch")
def test_init_with_torch_makes_and_destroys_group():
    r = _run(ALONE)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]


MAPPED = """
import os, socket, torch.distributed as dist, ushmem
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
ushmem.init_with_torch()
assert (os.environ["RANK"], os.environ["WORLD_SIZE"], os.environ["LOCAL_RANK"]) == ("0", "1", "0")
assert dist.get_world_size() == 1 and ushmem.n_pes() == 1
ushmem.finalize_with_torch()
assert not dist.is_initialized()
# a group the caller made stays
dist.init_process_group("gloo", init_method="env://", rank=0, world_size=1)
ushmem.init_with_torch()
ushmem.finalize_with_torch()
assert dist.is_initialized()
dist.destroy_process_group()
print("ok")
"""


@pe0
@pytest.mark.skipif(not _have("torch"), reason="needs torch")
def test_init_with_torch_maps_mpirun_variables():
    r = _run(MAPPED, OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="1",
             OMPI_COMM_WORLD_LOCAL_RANK="0", OMPI_COMM_WORLD_LOCAL_SIZE="1")
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]


MPI_SIZE = """
import ushmem
try:
    ushmem.init_with_mpi()
except ushmem.Error as e:
    assert e.code == ushmem.ERR_STATE and "MPI.COMM_WORLD has 1" in str(e) and "started 3" in str(e), e
    print("ok:", e)
else:
    raise SystemExit("init_with_mpi made a 1-PE job under a 3-process launcher")
"""


@pe0
@pytest.mark.skipif(not _have("mpi4py"), reason="needs mpi4py")
def test_init_with_mpi_checks_launcher_size():
    # torchrun's variables for a 3-process job, but this process is an MPI singleton.
    r = _run(MPI_SIZE, WORLD_SIZE="3", RANK="0", OMPI_MCA_btl_vader_single_copy_mechanism="none")
    assert r.returncode == 0 and "ok:" in r.stdout, (r.stdout + r.stderr)[-2000:]


class _FakeCuda:
    @staticmethod
    def device_count():
        return 2


class _FakeTorch:
    cuda = _FakeCuda()


@pytest.mark.parametrize("var", ["LOCAL_RANK", "USHMEM_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"])
def test_default_device_follows_any_launchers_local_rank(monkeypatch, var):
    """With torch and CUDA, device=None binds local rank modulo the GPUs under torchrun,
    ushrun and mpirun alike (a fake 2-GPU torch: the rule itself, on any machine)."""
    for v in ("LOCAL_RANK", "USHMEM_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
              "SLURM_LOCALID", "USHMEM_DEVICE"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setattr(ushmem, "_torch_cuda", lambda: _FakeTorch)
    assert ushmem._resolve_device(None) is None  # no launcher: none
    monkeypatch.setenv(var, "3")
    assert ushmem._resolve_device(None) == 1
    monkeypatch.setenv("USHMEM_DEVICE", "0")  # the library's own choice wins
    assert ushmem._resolve_device(None) is None
    monkeypatch.delenv("USHMEM_DEVICE")
    monkeypatch.setattr(ushmem, "_torch_cuda", lambda: None)  # no CUDA in torch: none
    assert ushmem._resolve_device(None) is None
