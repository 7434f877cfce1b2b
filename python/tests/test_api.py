"""The API's conventions: every public callable has a docstring and a signature, keyword
arguments work (a sample of each calling convention), SIGNAL_/CMP_/THREAD_ constants are
IntEnum members equal to the ints, __all__, the call counters of dump_stats(), and the
shipped type stub (ushmem/__init__.pyi, py.typed) matches the module."""
import inspect
import io
import os

import pytest

import ushmem

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _public(obj):
    return [(n, getattr(obj, n)) for n in dir(obj) if not n.startswith("_")]


def test_docstrings_and_signatures():
    import ushmem.interop.numpy as un
    missing, unsigned = [], []
    modules = [ushmem, un]
    try:
        import ushmem.interop.torch as ut
        modules.append(ut)
    except ImportError:
        pass
    for mod in modules:
        names = mod.__all__ if hasattr(mod, "__all__") else [n for n, _ in _public(mod)]
        for name in names:
            obj = getattr(mod, name)
            if not callable(obj) or getattr(obj, "__module__", "").split(".")[0] not in (
                    "ushmem", ""):
                continue
            if not (inspect.getdoc(obj) or "").strip():
                missing.append(f"{mod.__name__}.{name}")
            if not inspect.isclass(obj):
                try:
                    inspect.signature(obj)
                except (TypeError, ValueError):
                    unsigned.append(f"{mod.__name__}.{name}")
    for cls in (ushmem.SymmetricBuffer, ushmem.Team, ushmem.TeamConfig):
        for name, obj in _public(cls):
            if not (inspect.getdoc(obj) or "").strip():
                missing.append(f"{cls.__name__}.{name}")
    assert not missing, f"no docstring: {missing}"
    assert not unsigned, f"no signature: {unsigned}"
    assert "stream=None" in str(inspect.signature(ushmem.putmem_on_stream))
    assert str(inspect.signature(ushmem.int32_atomic_compare_swap)) == "(dest, cond, value, pe)"
    assert "own_data=True" in str(inspect.signature(ushmem.SymmetricBuffer))
    assert ushmem.putmem.__text_signature__ == "($module, dest, source, nbytes, pe)"


def test_keyword_arguments(me, npes):
    right = (me + 1) % npes
    b = ushmem.create_buffer(64, device="cpu", zero=True)
    ushmem.putmem_on_stream(b, bytes([me + 1] * 8), 8, right, stream=None)
    ushmem.putmem(dest=b[8:16], source=b"abcdefgh", nbytes=8, pe=me)
    ushmem.barrier_on_stream(ushmem.TEAM_WORLD, stream=None)
    ushmem.barrier_all_on_stream(stream=None)
    old = ushmem.int64_atomic_fetch_add(dest=b[16:24], value=me + 2, pe=right)
    ushmem.barrier_all()
    got = ushmem.int64_atomic_fetch(source=b[16:24], pe=me)
    view = ushmem.get_peer_buffer(b, me, nbytes=8)
    n = ushmem.team_n_pes(team=ushmem.TEAM_WORLD)
    tp = ushmem.team_translate_pe(src_team=ushmem.TEAM_WORLD, src_pe=me, dest_team=0)
    t = ushmem.TEAM_WORLD.translate_pe(me)
    out = bytearray(8)
    ushmem.getmem(out, source=b, nbytes=8, pe=me)
    errors = []
    for call in (lambda: ushmem.putmem(b, b"x", 1, me, pe=me),  # given twice
                 lambda: ushmem.putmem(b, b"x", nbytes=1),  # pe missing
                 lambda: ushmem.putmem_on_stream(b, b"x", 1, me, strem=None),  # misspelt
                 lambda: ushmem.my_pe(1),
                 lambda: ushmem.team_my_pe()):
        try:
            call()
        except TypeError as e:
            errors.append(str(e))
    ushmem.barrier_all()
    b.free()
    assert old == 0 and got == (me - 1) % npes + 2
    assert bytes(out) == bytes([(me - 1) % npes + 1] * 8) and len(view) == 8
    assert n == npes and tp == me and t == me
    assert len(errors) == 5, errors
    assert "multiple values for argument 'pe'" in errors[0]
    assert "missing required argument 'pe'" in errors[1]
    assert "unexpected keyword argument 'strem'" in errors[2]


def test_intenums():
    assert ushmem.SIGNAL_SET == 0 and ushmem.SIGNAL_ADD == 1
    assert ushmem.SIGNAL_ADD is ushmem.SignalOp.ADD
    assert [int(c) for c in ushmem.ComparisonType] == [
        ushmem.CMP_EQ, ushmem.CMP_NE, ushmem.CMP_GT, ushmem.CMP_GE, ushmem.CMP_LT,
        ushmem.CMP_LE]
    for c in list(ushmem.ComparisonType) + list(ushmem.SignalOp) + list(ushmem.ThreadLevel):
        assert isinstance(c, int) and hash(c) == hash(int(c))
    assert ushmem.ThreadLevel(ushmem.query_thread()) == ushmem.THREAD_MULTIPLE
    assert ushmem._ushmem.CMP_LE == ushmem.CMP_LE == 5


def test_all():
    assert len(ushmem.__all__) == len(set(ushmem.__all__))
    for name in ushmem.__all__:
        assert hasattr(ushmem, name), name
    for name in ("init", "init_with_torch", "init_with_mpi", "finalize_with_torch",
                 "dump_stats", "reset_stats", "SymmetricBuffer", "create_buffer",
                 "get_peer_buffer", "get_heap_bases", "get_peer_ptr_table", "TEAM_WORLD",
                 "TEAM_INVALID", "SUCCESS", "Error", "putmem_signal_on_stream",
                 "device_synchronize", "set_device_from_env", "stats"):
        assert name in ushmem.__all__, name
    assert "os" not in ushmem.__all__ and "enum" not in ushmem.__all__


def test_stats(me, npes):
    right = (me + 1) % npes
    b = ushmem.create_buffer(64, device="cpu", zero=True)
    ushmem.barrier_all()
    ushmem.reset_stats()
    ushmem.putmem(b, b"12345678", 8, right)
    ushmem.putmem_on_stream(b[8:], b"123", 3, right, stream=None)
    ushmem.getmem(bytearray(5), b, 5, right)
    ushmem.int64_atomic_inc(b[16:24], right)
    ushmem.uint32_atomic_fetch(b[24:28], right)
    ushmem.quiet()
    ushmem.barrier_all()
    ushmem.barrier(ushmem.TEAM_WORLD)
    ushmem.sync_all()
    with pytest.raises(ushmem.Error):
        ushmem.putmem(b, b"x", 1, npes + 5)  # failed calls are not counted
    st = ushmem.stats()
    text = io.StringIO()
    ushmem.dump_stats(file=text)
    ushmem.reset_stats()
    after = ushmem.stats()
    ushmem.barrier_all()
    b.free()
    assert (st["puts"], st["put_bytes"], st["gets"], st["get_bytes"]) == (2, 11, 1, 5)
    assert (st["amos"], st["barriers"], st["syncs"], st["quiets"]) == (2, 2, 1, 1)
    assert st["bytes"] == 16
    assert f"PE {me} stats: puts 2 (11 B), gets 1 (5 B), AMOs 2, barriers 2" in text.getvalue()
    assert set(after.values()) == {0}


def test_stub_matches_module():
    from ushmem import _stubgen
    shipped = os.path.join(HERE, "ushmem", "__init__.pyi")
    assert os.path.exists(os.path.join(HERE, "ushmem", "py.typed"))
    out = io.StringIO()
    _stubgen.main(out)
    with open(shipped) as f:
        assert f.read() == out.getvalue(), \
            "ushmem/__init__.pyi is stale: python -m ushmem._stubgen > ushmem/__init__.pyi"
