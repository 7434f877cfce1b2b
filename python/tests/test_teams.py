"""Teams: strided and 2-D splits, translation, TEAM_INVALID, team collectives
with verified data, destroy rules."""
import pytest

import ushmem


def _split(parent, start, stride, size):
    status, team = ushmem.team_split_strided(parent, start, stride, size)
    assert status == 0
    return team


def test_world_and_shared(me, npes):
    assert ushmem.TEAM_WORLD.n_pes() == npes and ushmem.TEAM_WORLD.my_pe() == me
    assert 1 <= ushmem.team_n_pes(ushmem.TEAM_SHARED) <= npes
    assert ushmem.team_translate_pe(ushmem.TEAM_WORLD, me, ushmem.TEAM_SHARED) >= 0
    for t in (ushmem.TEAM_WORLD, ushmem.TEAM_SHARED):  # predefined: destroy is a no-op
        assert t.destroy() is None and ushmem.team_destroy(t) is None
        assert t.valid and t.n_pes() >= 1
    assert ushmem.team_destroy(0) is None and ushmem.TEAM_WORLD.n_pes() == npes


def test_seed_team_handles(me, npes):
    # rocshmem4py's integer handles: TEAM_WORLD == 0, TEAM_INVALID == -1
    assert ushmem.TEAM_WORLD == 0 and 0 == ushmem.TEAM_WORLD and ushmem.TEAM_WORLD != -1
    assert ushmem.TEAM_INVALID == -1 and ushmem.TEAM_INVALID != 0
    assert hash(ushmem.TEAM_WORLD) == hash(0) and hash(ushmem.TEAM_INVALID) == hash(-1)
    assert ushmem.TEAM_SHARED != 0 and ushmem.TEAM_SHARED != -1
    assert ushmem.team_my_pe(0) == me and ushmem.team_n_pes(0) == npes
    assert ushmem.team_translate_pe(0, me, ushmem.TEAM_WORLD) == me
    # TEAM_INVALID: queries answer -1; sync, barrier and collectives return at once
    for t in (ushmem.TEAM_INVALID, -1):
        assert ushmem.team_my_pe(t) == -1 and ushmem.team_n_pes(t) == -1
        assert ushmem.team_translate_pe(t, 0, ushmem.TEAM_WORLD) == -1
        assert ushmem.team_translate_pe(ushmem.TEAM_WORLD, me, t) == -1
        assert ushmem.team_sync(t) is None and ushmem.barrier(t) is None
        assert ushmem.team_destroy(t) is None
    with pytest.raises(TypeError):
        ushmem.team_sync(1)
    with pytest.raises(TypeError):
        ushmem.team_my_pe(True)


def test_member_scoped_code_on_invalid_team(me, npes, sym_bytes):
    # Seed-style code: every PE runs the team's calls; non-members hold TEAM_INVALID,
    # for which they are no-ops (no exception, no deadlock), while members really sync.
    evens = _split(ushmem.TEAM_WORLD, 0, 2, (npes + 1) // 2)
    n = 16
    src, dst = sym_bytes(n), sym_bytes(n * npes)
    ushmem.putmem(src, bytes([me + 1] * n), n, me)
    ushmem.barrier_all()
    for _ in range(3):
        ushmem.team_sync(evens)
        ushmem.barrier(evens)
        ushmem.fcollectmem(evens, dst, src, n)
    if me % 2 == 0:
        got = bytearray(n * evens.n_pes())
        ushmem.getmem(got, dst, len(got), me)
        assert got == b"".join(bytes([2 * j + 1] * n) for j in range(evens.n_pes()))
    else:
        assert evens == -1 and ushmem.team_n_pes(evens) == -1
    ushmem.barrier_all()
    ushmem.team_destroy(evens)


def test_even_odd_split(me, npes):
    evens = _split(ushmem.TEAM_WORLD, 0, 2, (npes + 1) // 2)
    odds = _split(ushmem.TEAM_WORLD, 1, 2, npes // 2) if npes > 1 else ushmem.TEAM_INVALID
    mine, other = (evens, odds) if me % 2 == 0 else (odds, evens)
    assert mine.valid and mine.my_pe() == me // 2
    assert other is ushmem.TEAM_INVALID and not other
    for j in range(mine.n_pes()):
        assert mine.translate_pe(j) == 2 * j + me % 2
        assert ushmem.team_translate_pe(mine, j, ushmem.TEAM_WORLD) == 2 * j + me % 2
    assert ushmem.team_translate_pe(ushmem.TEAM_WORLD, me, mine) == me // 2
    assert ushmem.team_my_pe(other) == -1  # TEAM_INVALID, as the spec and the seed
    assert ushmem.team_sync(other) is None
    # non-members of a team take part in nested splits with TEAM_INVALID
    status, nested = ushmem.team_split_strided(ushmem.TEAM_INVALID, 0, 1, 1)
    assert status != 0 and nested is ushmem.TEAM_INVALID
    mine.sync()
    ushmem.barrier(mine)
    ushmem.team_destroy(mine)
    ushmem.team_destroy(other)  # TEAM_INVALID: nothing to do
    assert not mine.valid
    with pytest.raises(ushmem.Error):
        mine.destroy()
    with pytest.raises(ushmem.Error):
        mine.n_pes()


def test_team_collectives_verified(me, npes, data, sym_bytes):
    # the reversed world: team PE i is world PE npes-1-i
    rev = _split(ushmem.TEAM_WORLD, npes - 1, -1, npes) if npes > 1 else \
        _split(ushmem.TEAM_WORLD, 0, 1, 1)
    tme = rev.my_pe()
    n = 64
    src, dst = sym_bytes(n * npes), sym_bytes(n * npes)
    ushmem.putmem(src, b"".join(data.bytes(me, n, f"->{j}") for j in range(npes)), n * npes, me)
    ushmem.alltoallmem(rev, dst, src, n)
    a2a = bytes(dst)
    ushmem.broadcastmem(rev, dst, src, n, 0)  # team root 0 == world PE npes-1
    bc = bytes(dst[:n])
    ushmem.team_destroy(rev)
    world_of = [npes - 1 - i for i in range(npes)]
    assert tme == npes - 1 - me
    assert a2a == b"".join(data.bytes(world_of[i], n, f"->{tme}") for i in range(npes))
    assert bc == data.bytes(npes - 1, n, "->0")


def test_split_2d(me, npes):
    xrange_ = 2
    status, xt, yt = ushmem.team_split_2d(ushmem.TEAM_WORLD, xrange_)
    assert status == 0 and xt and yt
    assert xt.my_pe() == me % xrange_ and yt.my_pe() == me // xrange_
    assert xt.n_pes() == min(xrange_, npes - (me // xrange_) * xrange_)
    xt.sync()
    yt.sync()
    xt.destroy()
    yt.destroy()


def test_config_and_bad_splits(npes):
    cfg = ushmem.TeamConfig(num_contexts=2)
    status, t = ushmem.team_split_strided(ushmem.TEAM_WORLD, 0, 1, npes, cfg,
                                          ushmem.TEAM_NUM_CONTEXTS)
    assert status == 0 and t.n_pes() == npes
    t.destroy()
    for args in ((0, 1, npes + 1), (npes, 1, 1), (0, 0, 2) if npes > 1 else (-1, 1, 1),
                 (0, 1, 0)):
        with pytest.raises(ValueError, match="invalid triple"):
            ushmem.team_split_strided(ushmem.TEAM_WORLD, *args)
    with pytest.raises(ValueError):
        ushmem.team_split_strided(ushmem.TEAM_WORLD, 0, 1, npes, None, ushmem.TEAM_NUM_CONTEXTS)
    with pytest.raises(TypeError):
        ushmem.team_split_strided("world", 0, 1, 1)
    with pytest.raises(ValueError):
        ushmem.team_split_2d(ushmem.TEAM_WORLD, 0)
    ushmem.barrier_all()


def test_many_teams_recycled(npes):
    for _ in range(40):  # more than the library's live-team slots if never destroyed
        t = _split(ushmem.TEAM_WORLD, 0, 1, npes)
        t.sync()
        t.destroy()
