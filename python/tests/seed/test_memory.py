"""Seed test_memory, for ushmem: calloc (zeroed), align (aligned; bad alignments raise),
buffer_register / buffer_unregister / buffer_unregister_all (int status, never raise) on
memory that is not symmetric (cudaMalloc with a GPU, a host block without)."""
import ctypes

import pytest

from seed_util import d2h, device_free, device_malloc

import ushmem


def test_calloc_zero_initialized():
    count = 64
    addr = ushmem.calloc(count, ctypes.sizeof(ctypes.c_int32))
    try:
        assert addr > 0
        got = (ctypes.c_int32 * count)(*([0xABCD] * count))
        d2h(got, addr)
        assert set(got) == {0}, list(got)[:8]
    finally:
        ushmem.free(addr)


def test_calloc_zero_args_raises():
    with pytest.raises(RuntimeError):
        ushmem.calloc(0, 4)


@pytest.mark.parametrize("alignment", [8, 64, 256, 4096])
def test_align_returns_aligned_pointer(alignment):
    addr = ushmem.align(alignment, 1024)
    try:
        assert addr > 0 and addr % alignment == 0, hex(addr)
    finally:
        ushmem.free(addr)


@pytest.mark.parametrize("alignment", [0, 3, 24])
def test_align_invalid_alignment_raises(alignment):
    with pytest.raises(RuntimeError):
        ushmem.align(alignment, 1024)


@pytest.fixture
def blocks():
    made = []

    def make(nbytes=4096):
        made.append(device_malloc(nbytes))
        return made[-1]
    yield make
    for a in made:
        device_free(a)


def test_buffer_register_unregister(blocks):
    a = blocks()
    assert ushmem.buffer_register(a, 4096) == ushmem.SUCCESS
    assert ushmem.buffer_unregister(a) == ushmem.SUCCESS


def test_buffer_register_invalid_args(blocks):
    assert ushmem.buffer_register(0, 4096) != ushmem.SUCCESS
    assert ushmem.buffer_register(blocks(), 0) != ushmem.SUCCESS


def test_buffer_register_overlap_rejected(blocks):
    a = blocks()
    try:
        assert ushmem.buffer_register(a, 4096) == ushmem.SUCCESS
        assert ushmem.buffer_register(a, 4096) != ushmem.SUCCESS
    finally:
        ushmem.buffer_unregister(a)


def test_buffer_unregister_unknown_fails(blocks):
    assert ushmem.buffer_unregister(blocks()) != ushmem.SUCCESS


def test_buffer_unregister_all(blocks):
    addrs = [blocks() for _ in range(3)]
    for a in addrs:
        assert ushmem.buffer_register(a, 4096) == ushmem.SUCCESS
    assert ushmem.buffer_unregister_all() is None
    for a in addrs:
        assert ushmem.buffer_unregister(a) != ushmem.SUCCESS
