"""finalize() with calls still in progress, and init/finalize cycles (issue 22, items 4
and 12). Every PE takes part (finalize and init are collective).

- finalize() while another thread of the process waits in signal_wait_until refuses:
  ushmem.Error (ERR_STATE) naming the call, ushmem stays initialized, and the wait then
  completes with the data a peer sends (the C library would otherwise end the process).
- Repeated init/finalize with a large heap keeps a bounded amount of address space
  (VmSize): what finalize() keeps reserved for views that outlive it (numpy arrays here)
  goes with the last of them, instead of n_pes heaps staying reserved per cycle."""
import threading
import time
import warnings

import numpy as np

import ushmem

WAIT_S = 30


def test_finalize_refuses_while_a_thread_waits(me, npes, data):
    n = 4096
    dst = ushmem.create_buffer(n, device="cpu", zero=True)
    sig = ushmem.create_buffer(8, device="cpu", zero=True)
    ushmem.barrier_all()  # every signal word zeroed before anyone can set it
    entered, got = threading.Event(), {}

    def waiter():
        entered.set()
        try:
            got["value"] = ushmem.signal_wait_until(sig, ushmem.CMP_EQ, me + 1)
        except BaseException as e:  # checked on the main thread
            got["error"] = e

    th = threading.Thread(target=waiter, daemon=True)
    th.start()
    entered.wait(WAIT_S)
    time.sleep(0.2)  # let it get into the wait (it registers before releasing the GIL)
    refused = None
    try:
        ushmem.finalize()
    except ushmem.Error as e:
        refused = e
    still = ushmem.is_initialized()
    ushmem.barrier_all()  # every PE has tried to finalize
    right, left = (me + 1) % npes, (me - 1) % npes
    ushmem.putmem_signal(dst, data.bytes(me, n), n, sig, right + 1, ushmem.SIGNAL_SET, right)
    th.join(WAIT_S)
    waiting = th.is_alive()
    received = bytes(dst)
    ushmem.barrier_all()
    dst.free()
    sig.free()
    assert refused is not None, "finalize() did not refuse"
    assert refused.code == ushmem.ERR_STATE
    assert "signal_wait_until" in refused.message and "in progress" in refused.message
    assert still
    assert not waiting and "error" not in got, got
    assert got["value"] == me + 1
    assert received == data.bytes(left, n)


def _vm_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no VmSize in /proc/self/status")


def test_init_finalize_cycles_keep_address_space_bounded(me, npes, data, reinit, monkeypatch):
    heap_mib, cycles, n = 1024, 6, 4096
    ushmem.finalize()
    monkeypatch.setenv("SHMEM_SYMMETRIC_SIZE", f"{heap_mib}M")
    sizes, seen, zeros_after = [], [], []
    try:
        for cycle in range(cycles):
            reinit()
            right, left = (me + 1) % npes, (me - 1) % npes
            b = ushmem.create_buffer(n, device="cpu")
            ushmem.putmem(b, data.bytes(me, n, str(cycle)), n, right)
            ushmem.barrier_all()
            arr = np.frombuffer(b, np.uint8)  # a view that outlives finalize()
            seen.append(arr.tobytes() == data.bytes(left, n, str(cycle)))
            b.free()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # "outlive finalize()"
                ushmem.finalize()
            zeros_after.append(not arr.any())  # kept reserved: reads zeros, no crash
            del arr, b
            sizes.append(_vm_mib())
    finally:
        monkeypatch.undo()
        if not ushmem.is_initialized():
            reinit()
    assert all(seen) and all(zeros_after)
    # Without the fix every cycle keeps n_pes heaps (n_pes GiB) of address space.
    growth = sizes[-1] - sizes[1]
    assert growth < heap_mib // 4, (sizes, f"{npes} PEs x {heap_mib} MiB heap")
