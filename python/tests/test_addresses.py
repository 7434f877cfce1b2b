"""Ints taken as addresses (issue 22, item 16): bools, negative ints and values past the
user address space (2**64 - 1 ...) are refused with TypeError (bools) or ValueError naming
the call and the argument, wherever an int is an address: the local and the symmetric side
of RMA, signals, atomics, collectives, free, ptr, buffer_of, SymmetricBuffer(ptr=) ...;
they used to crash the interpreter. A local int address in the never-mapped first page is
refused too, while real addresses keep working. interop.numpy.array with a dtype holding
Python objects raises before it allocates: no symmetric memory leaks.

Checks are local and raise alike on every PE before anything collective happens."""
import numpy as np
import pytest

import ushmem
import ushmem.interop.numpy as unp

BAD = [True, False, -1, -(2 ** 70), 2 ** 64 - 1, 2 ** 64, 2 ** 63, 2 ** 56]


def _calls(me, sym, sig):
    """(call name, argument name, function of the bad address)."""
    W = ushmem.TEAM_WORLD
    return [
        ("getmem", "dest", lambda a: ushmem.getmem(a, sym, 8, me)),
        ("getmem", "source", lambda a: ushmem.getmem(bytearray(8), a, 8, me)),
        ("putmem", "source", lambda a: ushmem.putmem(sym, a, 8, me)),
        ("putmem", "dest", lambda a: ushmem.putmem(a, b"x" * 8, 8, me)),
        ("getmem_nbi", "dest", lambda a: ushmem.getmem_nbi(a, sym, 8, me)),
        ("putmem_on_stream", "source", lambda a: ushmem.putmem_on_stream(sym, a, 8, me)),
        ("putmem_signal", "source",
         lambda a: ushmem.putmem_signal(sym, a, 8, sig, 1, ushmem.SIGNAL_SET, me)),
        ("putmem_signal", "sig_addr",
         lambda a: ushmem.putmem_signal(sym, b"x" * 8, 8, a, 1, ushmem.SIGNAL_SET, me)),
        ("signal_fetch", "sig_addr", lambda a: ushmem.signal_fetch(a)),
        ("signal_wait_until", "sig_addr", lambda a: ushmem.signal_wait_until(a, 0, 0)),
        ("int64_atomic_fetch", "dest", lambda a: ushmem.int64_atomic_fetch(a, me)),
        ("int64_atomic_add", "dest", lambda a: ushmem.int64_atomic_add(a, 1, me)),
        ("ptr", "dest", lambda a: ushmem.ptr(a, me)),
        ("get_peer_buffer", "buf", lambda a: ushmem.get_peer_buffer(a, me, 8)),
        ("get_heap_bases", "buf", lambda a: ushmem.get_heap_bases(a)),
        ("addr_accessible", "addr", lambda a: ushmem.addr_accessible(a, me)),
        ("buffer_register", "addr", lambda a: ushmem.buffer_register(a, 16)),
        ("buffer_unregister", "addr", lambda a: ushmem.buffer_unregister(a)),
        ("free", "addr", lambda a: ushmem.free(a)),
        ("buffer_of", "addr", lambda a: ushmem.buffer_of(a)),
        ("SymmetricBuffer", "ptr", lambda a: ushmem.SymmetricBuffer(8, ptr=a, own_data=False)),
        ("fcollectmem", "dest", lambda a: ushmem.fcollectmem(W, a, sym, 8)),
        ("broadcastmem", "source", lambda a: ushmem.broadcastmem(W, sym, a, 8, 0)),
    ]


def test_bad_int_addresses_raise(me, npes, data, sym_bytes):
    sym = sym_bytes(8 * npes)
    sig = sym_bytes(8, zero=True)
    wrong = []
    for name, arg, call in _calls(me, sym, sig):
        for bad in BAD:
            want = TypeError if isinstance(bad, bool) else ValueError
            try:
                call(bad)
            except want as e:
                if name not in str(e) or arg not in str(e):
                    wrong.append((name, arg, bad, str(e)))
            except BaseException as e:  # noqa: BLE001 - collected, reported below
                wrong.append((name, arg, bad, f"{type(e).__name__}: {e}"))
            else:
                wrong.append((name, arg, bad, "no exception"))
    # A local address in the never-mapped first page is refused too (it is no memory).
    for call in (lambda: ushmem.getmem(1, sym, 8, me), lambda: ushmem.putmem(sym, 8, 8, me)):
        with pytest.raises(ValueError, match="first page"):
            call()
    # Real int addresses still work, both sides, with random data.
    mine = np.frombuffer(data.bytes(me, 8), np.uint8).copy()
    back = np.zeros(8, np.uint8)
    right, left = (me + 1) % npes, (me - 1) % npes
    ushmem.putmem(sym.ptr, mine.ctypes.data, 8, right)
    ushmem.barrier_all()
    ushmem.getmem(back.ctypes.data, sym.ptr, 8, me)
    ushmem.barrier_all()
    assert not wrong, wrong
    assert back.tobytes() == data.bytes(left, 8)


def test_numpy_object_dtype_allocates_nothing(me, npes):
    before = ushmem.live_allocations()
    errors = []
    for dtype in (object, np.dtype([("n", np.int64), ("o", object)])):
        try:
            unp.array((4,), dtype=dtype)
        except TypeError as e:
            errors.append(str(e))
    after = ushmem.live_allocations()
    a = unp.zeros((4,), np.int64)  # the heap still works, alike on every PE
    ushmem.putmem(a, np.arange(4, dtype=np.int64) + me, 32, (me + 1) % npes)
    ushmem.barrier_all()
    got = a.copy()
    ushmem.barrier_all()
    unp.free_array(a)
    assert after == before
    assert len(errors) == 2 and all("object" in e for e in errors), errors
    assert got.tolist() == [i + (me - 1) % npes for i in range(4)]
