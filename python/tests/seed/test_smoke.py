"""Seed test_smoke, for ushmem: create_buffer and SymmetricBuffer without torch, copies in
and out of the symmetric heap, stream-ordered put/get to a neighbour, peer buffers."""
import ctypes

import pytest

from conftest import requires_multi_pe
from seed_util import Stream, d2h, device_sync, gpu, h2d

import ushmem

I32 = ctypes.c_int32


def _ints(values):
    return (I32 * len(values))(*values)


def test_create_buffer():
    n = 4096
    b = ushmem.create_buffer(n)
    try:
        assert isinstance(b, ushmem.SymmetricBuffer)
        assert b.ptr > 0 and int(b) == b.ptr
        assert b.nbytes == n and b.size == n
        assert b.own_data is True
        # The seed's buffers are GPU memory with __cuda_array_interface__; host-heap buffers
        # expose __array_interface__ (and the buffer protocol) the same way.
        iface = b.__cuda_array_interface__ if gpu() else b.__array_interface__
        assert iface["data"] == (b.ptr, False)
        assert iface["shape"] == (n,)
        assert iface["version"] == 3
        assert b.get_remote_ptr(ushmem.my_pe()) >= 0
    finally:
        b.free()
        assert b._freed is True


def test_symmetric_buffer_lifecycle():
    n = 2048
    b = ushmem.SymmetricBuffer(n)
    try:
        assert (b.size, b.nbytes) == (n, n)
        assert b.ptr > 0 and int(b) == b.ptr
        assert b.get_remote_ptr(ushmem.my_pe()) >= 0
    finally:
        b.free()
        assert b._freed is True


def test_host_device_roundtrip():
    count = 16
    b = ushmem.create_buffer(count * ctypes.sizeof(I32))
    try:
        h2d(b.ptr, _ints(range(count)))
        device_sync()
        back = (I32 * count)()
        d2h(back, b.ptr)
        device_sync()
        assert list(back) == list(range(count))
    finally:
        b.free()


def _ring():
    me, n = ushmem.my_pe(), ushmem.n_pes()
    return me, n, (me + 1) % n, (me - 1) % n


@requires_multi_pe
def test_putmem_on_stream_peer():
    me, n, right, left = _ring()
    count = 32
    size = count * ctypes.sizeof(I32)
    src = ushmem.create_buffer(size)
    dst = ushmem.create_buffer(size)
    try:
        h2d(src.ptr, _ints([me] * count))
        h2d(dst.ptr, _ints([-1] * count))
        device_sync()
        ushmem.barrier_all()
        with Stream() as s:
            ushmem.putmem_on_stream(dst.ptr, src.ptr, size, right, s.handle)
            ushmem.barrier_all_on_stream(s.handle)
            s.synchronize()
        got = (I32 * count)()
        d2h(got, dst.ptr)
        device_sync()
        assert list(got) == [left] * count, f"PE {me}: {list(got)[:8]}"
    finally:
        src.free()
        dst.free()


@requires_multi_pe
def test_getmem_on_stream_peer():
    me, n, right, left = _ring()
    count = 32
    size = count * ctypes.sizeof(I32)
    src = ushmem.create_buffer(size)
    dst = ushmem.create_buffer(size)
    try:
        h2d(src.ptr, _ints([me] * count))
        h2d(dst.ptr, _ints([-1] * count))
        device_sync()
        with Stream() as s:
            ushmem.barrier_all_on_stream(s.handle)
            ushmem.getmem_on_stream(dst.ptr, src.ptr, size, right, s.handle)
            ushmem.barrier_all_on_stream(s.handle)
            s.synchronize()
        got = (I32 * count)()
        d2h(got, dst.ptr)
        device_sync()
        assert list(got) == [right] * count, f"PE {me}: {list(got)[:8]}"
    finally:
        src.free()
        dst.free()


@requires_multi_pe
def test_get_peer_buffer():
    me, n, right, left = _ring()
    b = ushmem.create_buffer(256)
    try:
        ushmem.barrier_all()
        try:
            peer = ushmem.get_peer_buffer(b, right)
        except RuntimeError:
            pytest.skip("the peer's memory is not mapped in this process")
        assert isinstance(peer, ushmem.SymmetricBuffer)
        assert peer.ptr > 0 and peer.own_data is False and peer.nbytes == 256
    finally:
        b.free()
