"""Lifetime safety, each case in a fresh interpreter (a crash there fails the test instead
of the suite): views of symmetric memory (memoryview, numpy array, torch tensor, peer
views) used after finalize() read zeros instead of crashing, with a RuntimeWarning;
with SHMEM_DEBUG set, free() poisons the freed range (0xA5), so reading a tensor after
free_tensor shows it. Run in 1-PE jobs only (the subprocess is a 1-PE job of its own)."""
import os
import subprocess
import sys

import pytest

import ushmem

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

alone = pytest.mark.skipif(not ushmem.is_initialized() or ushmem.n_pes() != 1,
                           reason="a check in a fresh process: run in 1-PE jobs only")


def _run(code, **env):
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("USHMEM_RANK", "USHMEM_NPES", "USHMEM_LOCAL", "USHMEM_BOOT",
                                  "USHMEM_SECRET", "USHMEM_LAUNCHER", "OMPI_", "PMI", "RANK",
                                  "WORLD_SIZE", "LOCAL_", "MASTER_", "TORCHELASTIC"))}
    clean.update(env)
    clean["PYTHONPATH"] = HERE + os.pathsep + clean.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-W", "always", "-c", code], env=clean,
                          capture_output=True, text=True, timeout=120)


AFTER_FINALIZE = """
import warnings, numpy as np, ushmem
ushmem.init()
b = ushmem.create_buffer(1 << 16, device="cpu")
ushmem.putmem(b, b"\\x07" * (1 << 16), 1 << 16, 0)
mv = memoryview(b)
arr = np.asarray(b)
view = ushmem.get_peer_buffer(b, 0)
raw = ushmem.malloc(4096)
torch_t = None
try:
    import torch, ushmem.interop.torch as ut
    torch_t = ut.create_tensor((256,), torch.int32, device="cpu")
    torch_t.fill_(5)
except ImportError:
    pass
assert arr[0] == 7 and mv[1] == 7
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    ushmem.finalize()
msgs = [str(x.message) for x in w]
assert any("outlive finalize" in m for m in msgs), msgs
# the warning names this PE (not "PE -1", the library has forgotten it by then) and says
# what writes do (they read back locally; they do not "go nowhere")
assert any("ushmem.finalize: PE 0:" in m and "stays local" in m for m in msgs), msgs
assert not any("PE -1" in m or "nowhere" in m for m in msgs), msgs
# every use below must not crash the interpreter
assert int(arr.sum()) == 0 and mv[5] == 0
arr[:] = 3  # private memory now: reads back here, no peer sees it
assert int(arr[0]) == 3
import ctypes
assert ctypes.string_at(raw, 8) == bytes(8)
if torch_t is not None:
    assert int(torch_t.sum()) == 0
    torch_t.fill_(1)
for call in (lambda: bytes(b), lambda: bytes(view), lambda: ushmem.putmem(b, b"x", 1, 0)):
    try:
        call()
    except (BufferError, ushmem.Error):
        pass
    else:
        raise SystemExit("a finalized buffer was usable")
del mv, arr
ushmem.init()  # the library starts again elsewhere; the old range stays reserved
b2 = ushmem.create_buffer(64, device="cpu"); ushmem.putmem(b2, b"ok", 2, 0); assert bytes(b2[:2]) == b"ok"
b2.free(); ushmem.finalize()
print("ok")
"""


@alone
def test_views_after_finalize_do_not_crash():
    r = _run(AFTER_FINALIZE)
    assert r.returncode == 0 and "ok" in r.stdout, (r.returncode, r.stderr[-3000:])


POISON = """
import ushmem, ctypes
ushmem.init()
b = ushmem.create_buffer(256, device="cpu")
ushmem.putmem(b, bytes(256), 256, 0)
addr = b.ptr
b.free()
after_buffer = ctypes.string_at(addr, 256)
raw = ushmem.calloc(64, 4)
ushmem.free(raw)
after_raw = ctypes.string_at(raw, 256)
res = None
try:
    import torch, ushmem.interop.torch as ut
    t = ut.create_tensor((16,), torch.int32, device="cpu")
    t.fill_(0)
    ut.free_tensor(t)
    res = t.view(torch.uint8).tolist()  # reads freed memory: the poison shows
except ImportError:
    pass
ushmem.finalize()
assert after_buffer == b"\\xa5" * 256, after_buffer[:16]
assert after_raw == b"\\xa5" * 256, after_raw[:16]
assert res is None or res == [0xA5] * 64, res
print("ok")
"""


@alone
def test_debug_poisons_freed_memory():
    r = _run(POISON, SHMEM_DEBUG="1")
    assert r.returncode == 0 and "ok" in r.stdout, (r.returncode, r.stderr[-3000:])


REASON = """
import ushmem
try:
    ushmem.init_attr(0, 1, bytes(ushmem.UNIQUEID_BYTES))
except ushmem.Error as e:
    assert "the library says:" in str(e) and "unique id is not valid" in str(e), e
    assert e.code == ushmem.ERR_INVALID
    print("ok")
"""


@alone
def test_exception_carries_library_reason():
    r = _run(REASON)
    assert r.returncode == 0 and "ok" in r.stdout, (r.returncode, r.stdout, r.stderr[-3000:])
