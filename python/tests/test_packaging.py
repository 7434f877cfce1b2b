"""Packaging: the version comes from CMakeLists.txt, the package ships ushrun (console
entry point), the type stub and py.typed. USHMEM_TEST_PACKAGING=1 also builds an sdist and
wheels offline (pip --no-build-isolation --no-index), installs one into a scratch
directory and runs a 2-PE job with its `ushrun` (tens of seconds: not in make check)."""
import os
import re
import subprocess
import sys
import tarfile
import zipfile

import pytest

import ushmem

PY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(PY)
slow = pytest.mark.skipif(os.environ.get("USHMEM_TEST_PACKAGING") != "1" or
                          not ushmem.is_initialized() or ushmem.my_pe() != 0 or
                          ushmem.n_pes() != 1,
                          reason="set USHMEM_TEST_PACKAGING=1 (1-PE job): builds wheels")


def test_version_single_sourced():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        cmake = re.search(r"project\(ushmem\s+VERSION\s+([0-9.]+)", f.read()).group(1)
    assert ushmem.__version__ == ushmem._ushmem.__version__ == cmake


def test_metadata_and_launcher():
    with open(os.path.join(PY, "pyproject.toml")) as f:
        toml = f.read()
    assert 'ushrun = "ushmem._launcher:main"' in toml and "py.typed" in toml
    assert 'dynamic = ["version"]' in toml and "license" in toml
    from ushmem import _launcher
    path = _launcher.ushrun_path()  # the build tree's (or the installed package's)
    assert path and os.access(path, os.X_OK)
    r = subprocess.run([sys.executable, "-m", "ushmem._launcher", "--version"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and ushmem.__version__ in r.stdout + r.stderr


def _pip(*args, cwd=None):
    env = dict(os.environ, USHMEM_CUDA_KERNELS=os.environ.get("USHMEM_CUDA_KERNELS", "0"))
    return subprocess.run([sys.executable, "-m", "pip", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


@slow
def test_sdist_wheel_install_run(tmp_path):
    r = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path / "sd")],
                       cwd=PY, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, USHMEM_CUDA_KERNELS="0"))
    assert r.returncode == 0, r.stderr[-2000:]
    (sd,) = (tmp_path / "sd").iterdir()
    with tarfile.open(sd) as t:
        names = t.getnames()
        t.extractall(tmp_path / "x")
    assert any(n.endswith("csrc/src/core/init.c") for n in names)
    src = tmp_path / "x" / sd.name[:-len(".tar.gz")]
    r = _pip("wheel", "--no-build-isolation", "--no-index", "--no-deps", "-w",
             str(tmp_path / "w"), str(src))
    assert r.returncode == 0, r.stderr[-3000:]
    (whl,) = (tmp_path / "w").glob("*.whl")
    with zipfile.ZipFile(whl) as z:
        files = z.namelist()
        entry = z.read(next(n for n in files if n.endswith("entry_points.txt"))).decode()
    # and what the torch backend compiles from at first use, in the installed package
    for want in ("ushmem/_bin/ushrun", "ushmem/py.typed", "ushmem/__init__.pyi",
                 "ushmem/ushmem_capi.h", "ushmem/interop/_torch_symm_mem.cpp",
                 "ushmem/interop/_torch_symm_mem_ops.cpp", "ushmem/interop/_torch_symm_mem.h",
                 "ushmem/interop/_torch_symm_mem_kernels.cu"):
        assert want in files, files
    assert "ushrun = ushmem._launcher:main" in entry
    r = _pip("install", "--no-index", "--no-deps", "--target", str(tmp_path / "i"), str(whl))
    assert r.returncode == 0, r.stderr[-2000:]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("USHMEM_", "PYTHONPATH", "OMPI_", "PMI", "RANK", "WORLD_SIZE"))}
    env["PYTHONPATH"] = str(tmp_path / "i")
    code = ("import ushmem; ushmem.init(); me = ushmem.my_pe(); "
            "b = ushmem.create_buffer(8, device='cpu'); "
            "ushmem.putmem(b, bytes([me + 1]) * 8, 8, (me + 1) % 2); ushmem.barrier_all(); "
            "print(f'got {bytes(b)[0]} {ushmem.__file__}', flush=True); b.free(); ushmem.finalize()")
    r = subprocess.run([str(tmp_path / "i" / "bin" / "ushrun"), "-n", "2", sys.executable,
                        "-c", code], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(re.findall(r"got (\d)", r.stdout)) == ["1", "2"], r.stdout
    assert str(tmp_path / "i") in r.stdout
