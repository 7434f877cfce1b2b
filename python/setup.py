"""Build the ushmem Python package with its C extension.

    pip install --no-build-isolation ./python        # from the repository root

The extension embeds libushmem: by default it compiles the library's sources
from ../src (so nothing else needs to be built or installed); with
USHMEM_BUILD_DIR=<cmake build dir> it links that build's libushmem.a instead
(PIC objects). `make` builds the same extension for /usr/bin/python3 without pip.
"""
import glob
import os
import re

from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)


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
                 os.path.join(root, build, "libushmem.a")]
        lib = next((c for c in cands if os.path.exists(c)), cands[0])
        if not os.path.exists(lib):
            raise SystemExit(f"USHMEM_BUILD_DIR={build}: no libushmem.a there (run make)")
        return [], [lib]
    srcs = sorted(glob.glob(os.path.join(root, "src", "**", "*.c"), recursive=True))
    if not srcs:
        raise SystemExit(f"ushmem: no library sources under {root}/src; build from a checkout "
                         "of the repository, or set USHMEM_BUILD_DIR")
    return [os.path.relpath(s, here) for s in srcs], []


srcs, objs = library()
ver = version()
ext = Extension(
    "ushmem._ushmem",
    sources=["ushmem/_ushmem.c"] + srcs,
    include_dirs=[os.path.join(root, "include"), os.path.join(root, "src")],
    define_macros=[("_GNU_SOURCE", None), ("USHMEM_VERSION_STRING", f'"{ver}"')],
    extra_compile_args=["-std=gnu11", "-fvisibility=hidden", "-Wno-unused-parameter"],
    extra_objects=objs,
    extra_link_args=[f"-Wl,--version-script={os.path.join(here, 'ushmem', '_ushmem.map')}"],
    libraries=["pthread", "dl"],
)

setup(version=ver, ext_modules=[ext])
