"""Build the ushmem Python package with its C extension.

    pip install --no-build-isolation ./python        # from the repository root
    pip install --no-build-isolation --no-index ./python    # offline
    python -m build --sdist --no-isolation python    # or: cd python && python setup.py sdist

The extension embeds libushmem: by default it compiles the library's sources
(../src in a checkout, csrc/src in an sdist), so nothing else needs to be built or
installed; with USHMEM_BUILD_DIR=<cmake build dir> it links that build's libushmem.a
instead (PIC objects). When nvcc is found (NVCC, CUDA_HOME/bin, PATH,
/usr/local/cuda/bin; USHMEM_CUDA_KERNELS=0 skips it) the CUDA kernels of the cuda
transport are compiled and embedded as CMake does. The launcher ushrun is built too and
installed as the `ushrun` command. The version is CMakeLists.txt's project(VERSION).
`make` builds the same extension for /usr/bin/python3 without pip.
"""
import glob
import os
import re
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

here = os.path.dirname(os.path.abspath(__file__))
# A checkout has the C sources one level up; an sdist carries them in csrc/.
root = os.path.join(here, "csrc") if os.path.isdir(os.path.join(here, "csrc", "src")) \
    else os.path.dirname(here)
# What an sdist copies from the repository into csrc/.
C_TREE = ["src", "include", "tools/ushrun.c", "CMakeLists.txt"]


def version():
    with open(os.path.join(root, "CMakeLists.txt")) as f:
        m = re.search(r"project\(ushmem\s+VERSION\s+([0-9.]+)", f.read())
    return m.group(1) if m else "0.0.0"


def library():
    """(sources, extra_objects) that put libushmem into the extension."""
    build = os.environ.get("USHMEM_BUILD_DIR")
    if build:
        # pip runs this in python/: a relative path may mean the repository root's
        cands = [os.path.join(os.path.abspath(build), "libushmem.a"),
                 os.path.join(os.path.dirname(here), build, "libushmem.a")]
        lib = next((c for c in cands if os.path.exists(c)), cands[0])
        if not os.path.exists(lib):
            raise SystemExit(f"USHMEM_BUILD_DIR={build}: no libushmem.a there (run make)")
        return [], [lib]
    srcs = sorted(glob.glob(os.path.join(root, "src", "**", "*.c"), recursive=True))
    if not srcs:
        raise SystemExit(f"ushmem: no library sources under {root}/src; build from a checkout "
                         "of the repository or an sdist, or set USHMEM_BUILD_DIR")
    return [os.path.relpath(s, here) for s in srcs], []


def find_nvcc():
    if os.environ.get("USHMEM_CUDA_KERNELS", "1") == "0":
        return None
    for cand in (os.environ.get("NVCC"),
                 os.path.join(os.environ.get("CUDA_HOME", "/nonexistent"), "bin", "nvcc"),
                 shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


class BuildExt(build_ext):
    """build_ext plus: the CUDA kernels (nvcc -fatbin, embedded by fatbin.c) and ushrun."""

    def run(self):
        nvcc = find_nvcc() if not os.environ.get("USHMEM_BUILD_DIR") else None
        if nvcc:
            os.makedirs(self.build_temp, exist_ok=True)
            fatbin = os.path.abspath(os.path.join(self.build_temp, "ushmem_kernels.fatbin"))
            cmd = [nvcc, "-fatbin", "-O3", "-std=c++17", f"-I{os.path.join(root, 'include')}",
                   "-gencode", "arch=compute_80,code=sm_80",
                   "-gencode", "arch=compute_90,code=sm_90",
                   "-gencode", "arch=compute_90,code=compute_90",
                   "-o", fatbin, os.path.join(root, "src", "transport", "cuda", "kernels.cu")]
            print("ushmem: CUDA kernels:", " ".join(cmd))
            subprocess.check_call(cmd)
            for ext in self.extensions:
                ext.define_macros.append(("USHMEM_CUDA_FATBIN", f'"{fatbin}"'))
                ext.depends.append(fatbin)
        else:
            print("ushmem: no nvcc (or USHMEM_CUDA_KERNELS=0): CUDA kernels not built")
        super().run()
        self.build_ushrun()

    def build_ushrun(self):
        out_dir = os.path.join(self.build_lib, "ushmem", "_bin")
        os.makedirs(out_dir, exist_ok=True)
        objs = self.compiler.compile(
            [os.path.relpath(os.path.join(root, "tools", "ushrun.c"), here)],
            output_dir=self.build_temp,
            macros=[("_GNU_SOURCE", None), ("USHMEM_VERSION_STRING", f'"{version()}"')],
            include_dirs=[os.path.join(root, "include")], extra_postargs=["-std=gnu11", "-O2"])
        self.compiler.link_executable(objs, "ushrun", output_dir=out_dir)
        if self.inplace:
            dst = os.path.join(here, "ushmem", "_bin")
            os.makedirs(dst, exist_ok=True)
            shutil.copy2(os.path.join(out_dir, "ushrun"), dst)


class SDist(sdist):
    """sdist plus the repository's C tree (csrc/): the package builds from it alone."""

    def make_release_tree(self, base_dir, files):
        # The extension's ../src sources travel as csrc/ instead.
        super().make_release_tree(base_dir, [f for f in files if not f.startswith("..")])
        src_root = os.path.dirname(here) if root != os.path.join(here, "csrc") else root
        for item in C_TREE:
            s, d = os.path.join(src_root, item), os.path.join(base_dir, "csrc", item)
            os.makedirs(os.path.dirname(d), exist_ok=True)
            if os.path.isdir(s):
                shutil.copytree(s, d, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.o"))
            else:
                shutil.copy2(s, d)


# The binding's files (ushmem/_ushmem.h says what each holds); python/CMakeLists.txt lists
# the same.
USHMEM_EXT_SOURCES = ["_ushmem.c", "_common.c", "_memory.c", "_symbuf.c", "_span.c",
                      "_lifetime.c", "_rma.c", "_teams.c", "_device.c", "_local.c", "_capi.c"]

srcs, objs = library()
ver = version()
ext = Extension(
    "ushmem._ushmem",
    sources=[f"ushmem/{f}" for f in USHMEM_EXT_SOURCES] + srcs,
    depends=["ushmem/_ushmem.h", "ushmem/ushmem_capi.h"],
    include_dirs=[os.path.join(root, "include"), os.path.join(root, "src")],
    define_macros=[("_GNU_SOURCE", None), ("USHMEM_VERSION_STRING", f'"{ver}"')],
    extra_compile_args=["-std=gnu11", "-fvisibility=hidden", "-Wno-unused-parameter"],
    extra_objects=objs,
    extra_link_args=[f"-Wl,--version-script={os.path.join(here, 'ushmem', '_ushmem.map')}"],
    libraries=["pthread", "dl"],
)

setup(version=ver, ext_modules=[ext], cmdclass={"build_ext": BuildExt, "sdist": SDist})
