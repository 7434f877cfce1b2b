"""A child made by os.fork() that ends (sys.exit, an uncaught exception, os._exit) must
leave its parent's job alone (issue 22, item 2): the library's exit hook used to run in
the child when the interpreter exited, so sys.exit(0) finalized the parent's PE and
sys.exit(3) ended the whole job with status 3. The job is a 2-PE ushrun job of its own
(with a timeout), so run in 1-PE legs only."""
import os
import subprocess
import sys

import pytest

import ushmem
from ushmem import _launcher

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

alone = pytest.mark.skipif(not ushmem.is_initialized() or ushmem.n_pes() != 1,
                           reason="starts a 2-PE job of its own: run in 1-PE jobs only")

JOB = """
import os, sys
import ushmem
ushmem.init()
me, n = ushmem.my_pe(), ushmem.n_pes()
buf = ushmem.create_buffer(8 * n, device="cpu")
cases = [("sys.exit", 0), ("sys.exit", 3), ("raise", 1), ("os._exit", 0), ("os._exit", 3)]
for how, code in cases:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        if how == "sys.exit":
            sys.exit(code)  # unwinds to the top: atexit, module teardown, then C exit()
        if how == "raise":
            raise RuntimeError("child fails on purpose")
        os._exit(code)
    _, ws = os.waitpid(pid, 0)
    got = os.waitstatus_to_exitcode(ws)
    assert got == code, f"PE {me}: child {how}({code}) ended with {got}"
    ushmem.barrier_all()  # this PE is still in the job after each child
right, left = (me + 1) % n, (me + n - 1) % n
ushmem.putmem(buf.ptr + 8 * me, (1000 + me).to_bytes(8, "little"), 8, right)
ushmem.barrier_all()
got = bytearray(8)
ushmem.getmem(got, buf.ptr + 8 * me, 8, right)
mine = bytes(memoryview(buf)[8 * left:8 * left + 8])
assert int.from_bytes(mine, "little") == 1000 + left, mine
assert int.from_bytes(got, "little") == 1000 + me, got
ushmem.barrier_all()
buf.free()
ushmem.finalize()
print(f"PE {me}: fork ok")
"""


@alone
def test_forked_child_exit_leaves_job_alone():
    ushrun = _launcher.ushrun_path()
    if ushrun is None:
        pytest.skip("ushrun is not built")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("USHMEM_RANK", "USHMEM_NPES", "USHMEM_LOCAL", "USHMEM_BOOT",
                                "USHMEM_SECRET", "USHMEM_LAUNCHER", "OMPI_", "PMI", "RANK",
                                "WORLD_SIZE", "LOCAL_", "MASTER_", "TORCHELASTIC"))}
    env["PYTHONPATH"] = HERE + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([ushrun, "--timeout", "60", "-n", "2", sys.executable, "-W", "ignore",
                        "-c", JOB], env=env, capture_output=True, text=True, timeout=90)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert out.count("fork ok") == 2, out
    assert "child fails on purpose" in out  # the child's traceback, and nothing worse
