"""Triton helpers for the device API: kernels that store into peers' symmetric
device memory and signal them, with the semantics of include/shmemx_device.cuh.

    import triton, triton.language as tl
    import ushmem.triton as ust

    @triton.jit
    def put_kernel(src, dst, sig, peer_bases, my_base, pe, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        remote = ust.peer_ptr(dst, peer_bases, my_base, pe)     # pe's copy of dst
        tl.store(remote + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)
        ust.signal_add(ust.peer_ptr(sig, peer_bases, my_base, pe), 1)  # after the data

    a = ust.put_signal_args(dst, pe)        # (peer_bases, my_base, pe, remote): ints
    put_kernel[(grid,)](src, dst, sig, a.peer_bases, a.my_base, a.pe, n, BLOCK=1024)
    # on pe: ushmem.signal_wait_until_on_stream(sig, ushmem.CMP_GE, grid, stream)

Nothing is linked into the kernel and nothing is registered after compiling:
addresses come in as kernel arguments (the handle's peer table, a device array
indexed by world PE) and the memory-model operations are inline PTX
(tl.inline_asm_elementwise), like PyTorch's symm_mem_sync.py.

Memory model (the same as the CUDA header's): data moves with plain stores
through the peer's mapping; signal_set / signal_add first synchronize the
program's threads (a CTA barrier), then one thread publishes the signal with a
system-scope release (st.release.sys / red.release.sys.add), which covers every
store of the program made before it. signal_set_relaxed / signal_add_relaxed are
the OpenSHMEM signal_op semantics (NVSHMEM's nvshmemx_signal_op): a relaxed update
from the program's first thread that orders nothing, for after fence_sys(), whose
fence.sc.sys runs on that same thread (a quiet, then a cheap signal: the pattern
of MoE dispatch kernels). signal_wait_until_ge spins on the
caller's own memory with system-scope acquire loads. System scope is used for
every peer, the same GPU included.

Device-side waits spin: use signal_wait_until_ge only where
ushmem.device_handle().wait_ok (one PE per GPU, or MPS with SM shares that fit);
otherwise wait on the host stream with ushmem.signal_wait_until_on_stream, which
never spins a kernel. Puts and signals are allowed everywhere.

The helpers are program-level (every thread of the program calls them, as
Triton code does): signal_set, signal_add, their _relaxed forms and fence_sys act
once per program;
their signal pointer must be a single pointer, not a block of them.

Importing this module works without Triton (put_signal_args is plain Python);
the @triton.jit helpers raise ImportError when Triton is missing.
"""
from collections import namedtuple

from .device import device_handle

try:
    import triton
    import triton.language as tl
except ImportError as _e:  # the jit helpers below raise on use
    triton = tl = None
    _triton_error = _e
else:
    _triton_error = None

__all__ = ["peer_ptr", "signal_set", "signal_add", "signal_set_relaxed", "signal_add_relaxed",
           "signal_wait_until_ge", "signal_fetch",
           "fence_sys", "put_signal_args", "PeerArgs", "HAVE_TRITON", "signal_wait_until",
           "test_all", "test_all_vector", "test_any", "test_any_vector", "test_some",
           "test_some_vector", "wait_until_all", "wait_until_all_vector", "wait_until_any",
           "wait_until_any_vector", "wait_until_some", "wait_until_some_vector"]

HAVE_TRITON = triton is not None


def _first_thread(op):
    """PTX that runs op (one instruction, operands $1, $2) on the program's first
    thread only ((tid.x | tid.y | tid.z) == 0); $0 is a dummy output."""
    return ("{\n"
            "        .reg .pred %ushmem_p;\n"
            "        .reg .b32 %ushmem_t<3>;\n"
            "        mov.u32 %ushmem_t0, %tid.x;\n"
            "        mov.u32 %ushmem_t1, %tid.y;\n"
            "        mov.u32 %ushmem_t2, %tid.z;\n"
            "        or.b32 %ushmem_t0, %ushmem_t0, %ushmem_t1;\n"
            "        or.b32 %ushmem_t0, %ushmem_t0, %ushmem_t2;\n"
            "        setp.eq.u32 %ushmem_p, %ushmem_t0, 0;\n"
            f"        @%ushmem_p {op};\n"
            "        mov.u32 $0, 0;\n"
            "        }")


# The jit helpers read these as compile-time constants (Triton lets a kernel use a
# global only when it is a tl.constexpr).
_const = tl.constexpr if tl is not None else str
_ASM_SET = _const(_first_thread("st.release.sys.global.u64 [$1], $2"))
_ASM_ADD = _const(_first_thread("red.release.sys.global.add.u64 [$1], $2"))
_ASM_SET_RELAXED = _const(_first_thread("st.relaxed.sys.global.u64 [$1], $2"))
_ASM_ADD_RELAXED = _const(_first_thread("red.relaxed.sys.global.add.u64 [$1], $2"))
_ASM_FENCE = _const(_first_thread("fence.sc.sys"))


PeerArgs = namedtuple("PeerArgs", "peer_bases my_base pe remote")
PeerArgs.__doc__ = """Kernel arguments for reaching one peer's copy of a symmetric tensor:
peer_bases (device address of the handle's uint64 peer table, indexed by world PE),
my_base (this PE's device heap base), pe (the peer's index in that table: its world PE)
and remote (the tensor's address on the peer, as mapped here). The first three are
peer_ptr's arguments after the pointer."""


def _address_span(obj):
    """(address, nbytes) of a torch tensor, a SymmetricBuffer or an int address."""
    if isinstance(obj, bool):
        raise TypeError("expected a tensor, a SymmetricBuffer or an int address, not bool")
    if isinstance(obj, int):
        return obj, 1
    if hasattr(obj, "data_ptr") and hasattr(obj, "element_size"):  # torch.Tensor
        if not obj.is_contiguous():
            raise ValueError("the tensor must be contiguous")
        return obj.data_ptr(), max(1, obj.numel() * obj.element_size())
    if hasattr(obj, "ptr") and hasattr(obj, "nbytes"):  # SymmetricBuffer
        return obj.ptr, max(1, obj.nbytes)
    raise TypeError(f"expected a tensor, a SymmetricBuffer or an int address, "
                    f"not {type(obj).__name__}")


def put_signal_args(tensor, pe, team=None):
    """The ints a kernel needs to store into PE pe's copy of a symmetric device tensor
    (and of any other symmetric device object, e.g. a signal word) through peer_ptr:
    a PeerArgs(peer_bases, my_base, pe, remote). pe is a PE of team (None: TEAM_WORLD);
    the returned pe is its world PE, which indexes the peer table. Checks that the
    tensor lies in this PE's device heap (ValueError) and that pe's heap is mapped here
    (ushmem.Error ERR_UNREACHABLE: another host, or GPUs without peer access)."""
    h = device_handle(team)
    addr, nbytes = _address_span(tensor)
    off = addr - h.heap_base
    if not (0 <= off and off + nbytes <= h.heap_size):
        raise ValueError(f"put_signal_args: [{addr:#x}, +{nbytes}) is not in this PE's device "
                         f"heap [{h.heap_base:#x}, +{h.heap_size:#x}) (make it with "
                         "ushmem.interop.torch.create_tensor(..., device='cuda'))")
    remote = h.peer_address(addr, pe)
    return PeerArgs(h.peer_base_ptr, int(h.heap_base), h.world_pe_of(pe), remote)


def _missing(name):
    def missing(*args, **kwargs):
        raise ImportError(f"ushmem.triton.{name} needs Triton, which is not importable here "
                          f"({_triton_error}); install triton (it comes with PyTorch's CUDA "
                          "wheels)")
    missing.__name__ = missing.__qualname__ = name
    return missing


# Without Triton each helper is a stub that raises ImportError when called.
_jit = triton.jit if triton is not None else (lambda fn: _missing(fn.__name__))


@_jit
def peer_ptr(ptr, peer_bases_ptr, my_base, pe):
    """The address of symmetric device pointer ptr (a pointer or a block of pointers)
    on peer pe: peer_base[pe] + (ptr - my_base). peer_bases_ptr: a uint64 table of
    heap bases by PE (an int device address, e.g. PeerArgs.peer_bases, or a tensor);
    my_base: this PE's heap base; pe: an index into the table (scalar or block).
    The own PE's entry is my_base, so ptr comes back unchanged for it."""
    table = tl.cast(peer_bases_ptr, tl.pointer_type(tl.int64))
    base = tl.load(table + pe)
    return tl.cast(base + (tl.cast(ptr, tl.int64) - my_base), ptr.dtype)

@_jit
def signal_set(sig_ptr, value):
    """Set the 64-bit signal word at sig_ptr (usually peer_ptr(sig, ...)) to value with a
    system-scope release, once per program, after all its threads' earlier stores."""
    p = tl.cast(sig_ptr, tl.pointer_type(tl.uint64))
    tl.static_assert(p.numel == 1, "signal_set takes one signal pointer, not a block")
    tl.debug_barrier()
    tl.inline_asm_elementwise(
        asm=_ASM_SET,
        constraints="=r,l,l",
        args=[p, tl.cast(value, tl.uint64)],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )

@_jit
def signal_add(sig_ptr, value):
    """Add value to the 64-bit signal word at sig_ptr with a system-scope release
    reduction, once per program, after all its threads' earlier stores (peer signal
    words need native peer atomics: DeviceHandle.peer_atomics)."""
    p = tl.cast(sig_ptr, tl.pointer_type(tl.uint64))
    tl.static_assert(p.numel == 1, "signal_add takes one signal pointer, not a block")
    tl.debug_barrier()
    tl.inline_asm_elementwise(
        asm=_ASM_ADD,
        constraints="=r,l,l",
        args=[p, tl.cast(value, tl.uint64)],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )

@_jit
def signal_set_relaxed(sig_ptr, value):
    """Set the 64-bit signal word at sig_ptr to value with a relaxed system-scope store
    from the program's first thread, no barrier and no ordering of its own (OpenSHMEM's
    shmem_signal_op, NVSHMEM's nvshmemx_signal_op; shmemx_dev_signal_op_relaxed in CUDA):
    what it announces must be complete first, by fence_sys() in this program before it
    (its fence runs on the same first thread)."""
    p = tl.cast(sig_ptr, tl.pointer_type(tl.uint64))
    tl.static_assert(p.numel == 1, "signal_set_relaxed takes one signal pointer, not a block")
    tl.inline_asm_elementwise(
        asm=_ASM_SET_RELAXED,
        constraints="=r,l,l",
        args=[p, tl.cast(value, tl.uint64)],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )

@_jit
def signal_add_relaxed(sig_ptr, value):
    """Add value to the 64-bit signal word at sig_ptr with a relaxed system-scope
    reduction from the program's first thread, no barrier and no ordering of its own:
    after fence_sys() in this program, as signal_set_relaxed (peer signal words need
    native peer atomics: DeviceHandle.peer_atomics)."""
    p = tl.cast(sig_ptr, tl.pointer_type(tl.uint64))
    tl.static_assert(p.numel == 1, "signal_add_relaxed takes one signal pointer, not a block")
    tl.inline_asm_elementwise(
        asm=_ASM_ADD_RELAXED,
        constraints="=r,l,l",
        args=[p, tl.cast(value, tl.uint64)],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )

@_jit
def signal_wait_until_ge(sig_ptr, value):
    """Spin until this PE's 64-bit signal word at sig_ptr is >= value (unsigned), with
    system-scope acquire loads: what the signaller stored before its release is visible
    afterwards to every thread. Returns the value seen. Only where device waits are
    safe (DeviceHandle.wait_ok); never on a peer's word."""
    p = tl.cast(sig_ptr, tl.pointer_type(tl.uint64))
    return tl.inline_asm_elementwise(
        asm="""{
        .reg .pred %ushmem_q;
        .reg .u64 %ushmem_v;
        ushmem_wait_ge:
        ld.acquire.sys.global.u64 %ushmem_v, [$1];
        setp.lt.u64 %ushmem_q, %ushmem_v, $2;
        @%ushmem_q nanosleep.u32 64;
        @%ushmem_q bra ushmem_wait_ge;
        mov.b64 $0, %ushmem_v;
        }""",
        constraints="=l,l,l",
        args=[p, tl.cast(value, tl.uint64)],
        dtype=tl.uint64,
        is_pure=False,
        pack=1,
    )

@_jit
def signal_fetch(sig_ptr):
    """This PE's 64-bit signal word at sig_ptr, with a system-scope acquire load."""
    p = tl.cast(sig_ptr, tl.pointer_type(tl.uint64))
    return tl.inline_asm_elementwise(
        asm="ld.acquire.sys.global.u64 $0, [$1];",
        constraints="=l,l",
        args=[p],
        dtype=tl.uint64,
        is_pure=False,
        pack=1,
    )

@_jit
def fence_sys():
    """Quiet for the program: every store its threads made before is visible to all PEs
    (CTA barrier, one fence.sc.sys, CTA barrier)."""
    tl.debug_barrier()
    tl.inline_asm_elementwise(
        asm=_ASM_FENCE,
        constraints="=r",
        args=[],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )
    tl.debug_barrier()


# Annotation of compile-time arguments; None without Triton (the helpers are stubs then).
_constexpr = tl.constexpr if tl is not None else None


# ---- Comparisons and multi-word waits (OpenSHMEM 1.5 wait_until/test _all/_any/_some
# and their _vector forms) on arrays of this PE's 64-bit words ----
# cmp is one of ushmem.CMP_EQ .. CMP_LE (0..5) and must be a compile-time constant
# (tl.constexpr in the calling kernel). Words are read with system-scope acquire loads
# (signal_fetch), so what a signaller stored before its release is visible after a
# satisfied test. Values compare as unsigned 64-bit. The _vector forms take a pointer to
# one comparison value per word; the others one value for all. There is no status mask:
# an "any" search starts at index `start` (rotate it between calls so that every
# satisfied index is eventually returned, as the spec asks). The tests never spin; the
# waits spin like signal_wait_until_ge, so only where device waits are allowed.

@_jit
def _satisfied(v, cmp: _constexpr, value):
    tl.static_assert(cmp >= 0 and cmp <= 5, "cmp must be one of ushmem.CMP_EQ .. CMP_LE")
    value = tl.cast(value, tl.uint64)
    if cmp == 0:
        r = v == value
    elif cmp == 1:
        r = v != value
    elif cmp == 2:
        r = v > value
    elif cmp == 3:
        r = v >= value
    elif cmp == 4:
        r = v < value
    else:
        r = v <= value
    return r.to(tl.int32)


@_jit
def _word_ok(ivars, j, cmp: _constexpr, values, VECTOR: _constexpr):
    p = tl.cast(ivars, tl.pointer_type(tl.uint64)) + j
    if VECTOR:
        value = tl.load(tl.cast(values, tl.pointer_type(tl.uint64)) + j)
    else:
        value = values
    return _satisfied(signal_fetch(p), cmp, value)


@_jit
def signal_wait_until(sig_ptr, cmp: _constexpr, value):
    """Spin until this PE's 64-bit word at sig_ptr compares true (cmp: CMP_EQ .. CMP_LE)
    with value; returns the value seen. Only where device waits are allowed."""
    v = signal_fetch(sig_ptr)
    while _satisfied(v, cmp, value) == 0:
        v = signal_fetch(sig_ptr)
    return v


@_jit
def _test_all(ivars, n, cmp: _constexpr, values, VECTOR: _constexpr):
    ok = tl.cast(1, tl.int32)  # not from n: an n of 1 is specialized to a constant
    for i in range(0, n):
        ok = ok & _word_ok(ivars, i, cmp, values, VECTOR)
    return ok


@_jit
def _test_any(ivars, n, cmp: _constexpr, values, start, VECTOR: _constexpr):
    found = tl.cast(-1, tl.int32)
    for i in range(0, n):
        j = ((start + i) % n).to(tl.int32)
        ok = _word_ok(ivars, j, cmp, values, VECTOR)
        found = tl.where((ok != 0) & (found < 0), j, found)
    return found


@_jit
def _test_some(ivars, n, cmp: _constexpr, values, indices, VECTOR: _constexpr):
    count = tl.cast(0, tl.int32)
    for i in range(0, n):
        ok = _word_ok(ivars, i, cmp, values, VECTOR)
        tl.store(indices + count, tl.cast(i, indices.dtype.element_ty), mask=ok != 0)
        count = count + ok
    return count


@_jit
def test_all(ivars, n, cmp: _constexpr, value):
    """1 if every one of the n words at ivars compares true with value, else 0."""
    return _test_all(ivars, n, cmp, value, False)


@_jit
def test_all_vector(ivars, n, cmp: _constexpr, values):
    """1 if every word i compares true with values[i], else 0."""
    return _test_all(ivars, n, cmp, values, True)


@_jit
def test_any(ivars, n, cmp: _constexpr, value, start):
    """The first index, from start (cyclically), whose word compares true; -1 if none."""
    return _test_any(ivars, n, cmp, value, start, False)


@_jit
def test_any_vector(ivars, n, cmp: _constexpr, values, start):
    """test_any with one comparison value per word."""
    return _test_any(ivars, n, cmp, values, start, True)


@_jit
def test_some(ivars, n, cmp: _constexpr, value, indices):
    """Stores every index whose word compares true into indices[0..count), in order;
    returns count (0: none)."""
    return _test_some(ivars, n, cmp, value, indices, False)


@_jit
def test_some_vector(ivars, n, cmp: _constexpr, values, indices):
    """test_some with one comparison value per word."""
    return _test_some(ivars, n, cmp, values, indices, True)


@_jit
def _wait_all(ivars, n, cmp: _constexpr, values, VECTOR: _constexpr):
    for i in range(0, n):
        while _word_ok(ivars, i, cmp, values, VECTOR) == 0:
            pass


@_jit
def wait_until_all(ivars, n, cmp: _constexpr, value):
    """Spin until every one of the n words compares true with value."""
    _wait_all(ivars, n, cmp, value, False)


@_jit
def wait_until_all_vector(ivars, n, cmp: _constexpr, values):
    """Spin until every word i compares true with values[i]."""
    _wait_all(ivars, n, cmp, values, True)


@_jit
def wait_until_any(ivars, n, cmp: _constexpr, value, start):
    """Spin until some word compares true with value; returns its index (searched from
    start, cyclically)."""
    found = _test_any(ivars, n, cmp, value, start, False)
    while found < 0:
        found = _test_any(ivars, n, cmp, value, start, False)
    return found


@_jit
def wait_until_any_vector(ivars, n, cmp: _constexpr, values, start):
    """wait_until_any with one comparison value per word."""
    found = _test_any(ivars, n, cmp, values, start, True)
    while found < 0:
        found = _test_any(ivars, n, cmp, values, start, True)
    return found


@_jit
def wait_until_some(ivars, n, cmp: _constexpr, value, indices):
    """Spin until at least one word compares true; stores the indices of all that do
    into indices and returns how many."""
    count = _test_some(ivars, n, cmp, value, indices, False)
    while count == 0:
        count = _test_some(ivars, n, cmp, value, indices, False)
    return count


@_jit
def wait_until_some_vector(ivars, n, cmp: _constexpr, values, indices):
    """wait_until_some with one comparison value per word."""
    count = _test_some(ivars, n, cmp, values, indices, True)
    while count == 0:
        count = _test_some(ivars, n, cmp, values, indices, True)
    return count
