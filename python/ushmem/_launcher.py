"""The `ushrun` command of the pip-installed package: runs the ushrun launcher built with
the extension (ushmem/_bin/ushrun), or the one of a source checkout's build tree."""
import os
import sys


def ushrun_path():
    """The ushrun executable: the package's own, else <build>/tools/ushrun next to the
    extension a checkout uses (USHMEM_PYTHON_EXT_DIR, build/python/ushmem), or None."""
    here = os.path.dirname(os.path.abspath(__file__))
    cands = [os.path.join(here, "_bin", "ushrun")]
    from . import _ushmem
    ext_dir = os.path.dirname(os.path.abspath(_ushmem.__file__))
    cands.append(os.path.join(os.path.dirname(os.path.dirname(ext_dir)), "tools", "ushrun"))
    return next((c for c in cands if os.path.isfile(c) and os.access(c, os.X_OK)), None)


def main(argv=None):
    """Run ushrun with argv (default: this command's arguments); does not return."""
    path = ushrun_path()
    if path is None:
        sys.stderr.write("ushrun: the launcher executable is not built (pip install the "
                         "package, or run make in the source tree)\n")
        raise SystemExit(127)
    args = sys.argv[1:] if argv is None else list(argv)
    os.execv(path, [path] + args)


if __name__ == "__main__":
    main()
