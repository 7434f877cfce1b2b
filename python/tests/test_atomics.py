"""The OpenSHMEM host atomic matrix: every <type>_atomic_<op> the spec defines,
checked against a Python model with random operands, plus concurrent updates
from all PEs and argument errors."""
import numpy as np
import pytest

import ushmem

# name -> (numpy dtype, kind)
INT_TYPES = {
    "int": ("i4", "S"), "long": ("i8", "S"), "longlong": ("i8", "S"),
    "uint": ("u4", "U"), "ulong": ("u8", "U"), "ulonglong": ("u8", "U"),
    "int32": ("i4", "S"), "int64": ("i8", "S"), "uint32": ("u4", "U"),
    "uint64": ("u8", "U"), "size": ("u8", "U"), "ptrdiff": ("i8", "S"),
}
STD_TYPES = dict(INT_TYPES, float=("f4", "F"), double=("f8", "F"))
BIT_TYPES = {k: INT_TYPES[k] for k in ("uint", "ulong", "ulonglong", "int32", "int64", "uint32",
                                       "uint64")}
OPS = {  # op -> the types the spec gives it
    "fetch": STD_TYPES, "set": STD_TYPES, "swap": STD_TYPES, "compare_swap": INT_TYPES,
    "fetch_inc": INT_TYPES, "inc": INT_TYPES, "fetch_add": INT_TYPES, "add": INT_TYPES,
    "fetch_and": BIT_TYPES, "fetch_or": BIT_TYPES, "fetch_xor": BIT_TYPES,
    "and": BIT_TYPES, "or": BIT_TYPES, "xor": BIT_TYPES,
}


def test_matrix_is_complete():
    want = {f"{t}_atomic_{op}" for op, types in OPS.items() for t in types}
    have = {n for n in dir(ushmem) if "_atomic_" in n}
    assert have == want


def _wrap(v, dtype):
    """v reduced to the type's range (two's complement wrap-around)."""
    info = np.iinfo(dtype)
    bits = info.bits
    v &= (1 << bits) - 1
    if info.min < 0 and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _rand(rng, dtype, kind):
    if kind == "F":
        return float(np.asarray(rng.standard_normal(), dtype=dtype))
    info = np.iinfo(dtype)
    return int(rng.integers(info.min, info.max, endpoint=True, dtype=dtype.name))


def _script(rng, name, dtype, kind):
    """A random sequence of (op, args) valid for this type, and the model's results."""
    ops = [op for op, types in OPS.items() if name in types and op != "fetch"]
    value = _rand(rng, dtype, kind)
    steps, results = [("set", (value,))], [None]
    for _ in range(24):
        op = ops[int(rng.integers(len(ops)))]
        v = _rand(rng, dtype, kind)
        old = value
        if op == "set":
            value, ret, args = v, None, (v,)
        elif op == "swap":
            value, ret, args = v, old, (v,)
        elif op == "compare_swap":
            cond = old if rng.integers(2) else v
            value, ret, args = (v if cond == old else old), old, (cond, v)
        elif op in ("fetch_inc", "inc"):
            value, ret, args = _wrap(old + 1, dtype), old, ()
        elif op in ("fetch_add", "add"):
            value, ret, args = _wrap(old + v, dtype), old, (v,)
        else:
            fn = {"and": lambda a, b: a & b, "or": lambda a, b: a | b,
                  "xor": lambda a, b: a ^ b}[op.replace("fetch_", "")]
            value, ret, args = _wrap(fn(old, v), dtype), old, (v,)
        if not op.startswith("fetch") and op not in ("swap", "compare_swap"):
            ret = None
        steps.append((op, args))
        results.append(ret)
        steps.append(("fetch", ()))
        results.append(value)
    return steps, results, value


@pytest.mark.parametrize("name", sorted(STD_TYPES))
def test_type_against_model(name, me, npes, data, sym_bytes):
    """Each PE runs a random script on its right neighbour's copy (one actor per
    slot, so results are exact); the owner then checks the final value."""
    dtype, kind = STD_TYPES[name]
    dtype = np.dtype(dtype)
    buf = sym_bytes(64, zero=True)
    slot = buf[8:8 + dtype.itemsize]  # the actor's target: a view as dest
    right, left = (me + 1) % npes, (me - 1) % npes
    ushmem.barrier_all()
    steps, want, _ = _script(data.rng(me, name), name, dtype, kind)
    got = []
    for op, args in steps:
        got.append(getattr(ushmem, f"{name}_atomic_{op}")(slot, *args, right))
    ushmem.barrier_all()
    final = np.frombuffer(buf, dtype=dtype, count=1, offset=8)[0]
    ushmem.barrier_all()
    assert got == want
    assert final == _script(data.rng(left, name), name, dtype, kind)[2]


@pytest.mark.parametrize("name", ["int", "long", "uint64", "int32", "size"])
def test_concurrent_adds(name, me, npes, sym_bytes):
    """Every PE adds to / increments every PE's counter: totals are exact."""
    dtype = np.dtype(INT_TYPES[name][0])
    buf = sym_bytes(2 * dtype.itemsize, zero=True)
    ctr, inc = buf[:dtype.itemsize], buf[dtype.itemsize:]
    ushmem.barrier_all()
    fetched = []
    for k in range(20):
        for pe in range(npes):
            getattr(ushmem, f"{name}_atomic_add")(ctr, me + 1, pe)
            fetched.append(getattr(ushmem, f"{name}_atomic_fetch_inc")(inc, pe))
    ushmem.barrier_all()
    total = np.frombuffer(buf, dtype=dtype, count=2)
    ushmem.barrier_all()
    assert int(total[0]) == 20 * npes * (npes + 1) // 2
    assert int(total[1]) == 20 * npes
    assert len(set(fetched)) == len(fetched) or npes > 1  # per target they are unique


def test_amo_on_numpy_slices_and_addresses(me, npes):
    import ushmem.interop.numpy as unp
    a = unp.zeros(8, np.int64)
    ushmem.barrier_all()
    right = (me + 1) % npes
    ushmem.int64_atomic_set(a[3:4], 40, right)  # numpy view as dest
    addr = a.__array_interface__["data"][0]
    ushmem.int64_atomic_add(addr + 3 * 8, 2, right)  # int address as dest
    ushmem.barrier_all()
    v = int(a[3])
    ushmem.barrier_all()
    unp.free_array(a)
    assert v == 42


def test_amo_errors(me, npes, sym_bytes):
    buf = sym_bytes(16)
    cases = [
        (ValueError, lambda: ushmem.int_atomic_set(buf, 2 ** 31, me)),
        (ValueError, lambda: ushmem.uint_atomic_set(buf, -1, me)),
        (ValueError, lambda: ushmem.uint64_atomic_add(buf, 2 ** 64, me)),
        (TypeError, lambda: ushmem.int_atomic_add(buf, 1.5, me)),
        (TypeError, lambda: ushmem.double_atomic_set(buf, "x", me)),
        (TypeError, lambda: ushmem.int_atomic_inc(buf, me, 3)),
        (ushmem.Error, lambda: ushmem.int64_atomic_fetch(buf[4:12], me)),  # misaligned
        (ValueError, lambda: ushmem.int64_atomic_fetch(buf[12:], me)),  # too short
        (ushmem.Error, lambda: ushmem.int_atomic_fetch(bytearray(4), me)),  # not symmetric
        (ushmem.Error, lambda: ushmem.int_atomic_fetch(buf, npes)),  # bad PE
    ]
    for exc, call in cases:
        with pytest.raises(exc):
            call()
    ushmem.barrier_all()
