"""Seed test_teams, for ushmem: TeamConfig, strided splits (whole world, even PEs, a split
of a split, recursive halves), TEAM_WORLD / TEAM_INVALID as the ints 0 / -1 with no-op
destroys, translate_pe, team sync / barrier (blocking and stream-ordered) that members
wait in and non-members (TEAM_INVALID) pass at once, store visibility and RMA ordering
through team barriers, and the registry of live teams.

The member-scoping checks time each PE and compare across PEs through symmetric memory;
USHMEM_TEST_TEAM_DELAY_S sets the delay of the late member (default 0.5 s)."""
import os
import time

import pytest

from conftest import requires_multi_pe
from seed_util import Stream, device_sync, load_u64, store_u64

import ushmem
from ushmem import SUCCESS, TEAM_INVALID, TEAM_WORLD, TeamConfig

DELAY_S = float(os.environ.get("USHMEM_TEST_TEAM_DELAY_S", "0.5"))
MEMBER_MIN_FRACTION = 0.5      # waiting members see at least half the delay
NONMEMBER_RATIO = 0.35         # non-members finish in well under the members' time


def _cfg():
    cfg = TeamConfig()
    cfg.num_contexts = 1
    return cfg


def _even_team():
    """Split of the even PEs (every PE calls it): (team, is_member)."""
    n, me = ushmem.n_pes(), ushmem.my_pe()
    status, team = ushmem.team_split_strided(TEAM_WORLD, 0, 2, (n + 1) // 2, _cfg(), 0)
    assert status == SUCCESS
    member = me % 2 == 0
    assert (team != TEAM_INVALID) == member
    return team, member


def _need(n):
    if ushmem.n_pes() < n:
        pytest.skip(f"needs at least {n} PEs")


def _scoping(team, invoke):
    """Team rank 0 enters late; members must wait for it, non-members must not."""
    n, me = ushmem.n_pes(), ushmem.my_pe()
    member = me % 2 == 0
    rank = ushmem.team_my_pe(team) if member else -1
    table, scratch = ushmem.malloc(n * 8), ushmem.malloc(8)
    try:
        ushmem.barrier_all()
        if member and rank == 0:
            time.sleep(DELAY_S)
        t0 = time.perf_counter()
        invoke()
        store_u64(table + me * 8, int((time.perf_counter() - t0) * 1e6))
        ushmem.barrier_all()

        def elapsed(pe):
            ushmem.getmem_on_stream(scratch, table + pe * 8, 8, pe, 0)
            device_sync()
            return load_u64(scratch)
        members = [elapsed(pe) for pe in range(2, n, 2)]
        others = [elapsed(pe) for pe in range(1, n, 2)]
        ushmem.barrier_all()
    finally:
        ushmem.free(scratch)
        ushmem.free(table)
    assert members and others
    assert min(members) >= DELAY_S * 1e6 * MEMBER_MIN_FRACTION, (members, others)
    assert max(others) < min(members) * NONMEMBER_RATIO, (members, others)


def test_team_config_struct():
    cfg = TeamConfig()
    cfg.num_contexts = 4
    assert cfg.num_contexts == 4


@requires_multi_pe
def test_split_strided_world():
    n = ushmem.n_pes()
    status, team = ushmem.team_split_strided(TEAM_WORLD, 0, 1, n, _cfg(), 0)
    assert status == SUCCESS and team != TEAM_INVALID
    assert ushmem.team_n_pes(team) == n and ushmem.team_my_pe(team) == ushmem.my_pe()
    ushmem.barrier_all()
    ushmem.team_destroy(team)
    ushmem.barrier_all()


@requires_multi_pe
def test_split_strided_even_subteam():
    _need(4)
    n, me = ushmem.n_pes(), ushmem.my_pe()
    team, member = _even_team()
    if member:
        assert ushmem.team_my_pe(team) == me // 2
        assert ushmem.team_n_pes(team) == (n + 1) // 2
    else:
        assert team == TEAM_INVALID
    ushmem.barrier_all()
    ushmem.team_destroy(team)  # TEAM_INVALID: a no-op
    ushmem.barrier_all()


@requires_multi_pe
def test_split_strided_subset_parent_then_split():
    _need(4)
    n, me = ushmem.n_pes(), ushmem.my_pe()
    parity = me % 2
    size = n // 2 + (1 if n % 2 and parity == 0 else 0)
    status, parent = ushmem.team_split_strided(TEAM_WORLD, parity, 2, size, _cfg(), 0)
    assert status == SUCCESS and parent != TEAM_INVALID
    assert ushmem.team_n_pes(parent) == size and ushmem.team_my_pe(parent) == me // 2
    pn, pme = ushmem.team_n_pes(parent), ushmem.team_my_pe(parent)
    mid = pn // 2
    start, csize = (0, mid) if pme < mid else (mid, pn - mid)
    status, child = ushmem.team_split_strided(parent, start, 1, csize, _cfg(), 0)
    assert status == SUCCESS and child != TEAM_INVALID
    assert ushmem.team_n_pes(child) == csize and ushmem.team_my_pe(child) == pme - start
    ushmem.barrier_all()
    ushmem.team_destroy(child)
    ushmem.team_destroy(parent)
    ushmem.barrier_all()


@requires_multi_pe
def test_split_strided_recursive_split_world():
    _need(4)
    n, me = ushmem.n_pes(), ushmem.my_pe()
    mid = n // 2
    start, size = (0, mid) if me < mid else (mid, n - mid)
    status, half = ushmem.team_split_strided(TEAM_WORLD, start, 1, size, _cfg(), 0)
    assert status == SUCCESS and half != TEAM_INVALID
    assert ushmem.team_n_pes(half) == size and ushmem.team_my_pe(half) == me - start
    status, leader = ushmem.team_split_strided(half, 0, 1, 1, _cfg(), 0)
    assert status == SUCCESS
    if me - start == 0:
        assert leader != TEAM_INVALID
        assert ushmem.team_n_pes(leader) == 1 and ushmem.team_my_pe(leader) == 0
    else:
        assert leader == TEAM_INVALID
    ushmem.barrier_all()
    ushmem.team_destroy(leader)
    ushmem.team_destroy(half)
    ushmem.barrier_all()


def test_team_invalid_sentinel_distinct_from_world():
    assert TEAM_WORLD == 0 and TEAM_INVALID == -1 and TEAM_WORLD != TEAM_INVALID
    ushmem.team_destroy(TEAM_WORLD)  # both: no-ops
    ushmem.team_destroy(TEAM_INVALID)


@requires_multi_pe
def test_team_translate_pe_round_trip():
    n = ushmem.n_pes()
    status, team = ushmem.team_split_strided(TEAM_WORLD, 0, 1, n, _cfg(), 0)
    assert status == SUCCESS
    assert [ushmem.team_translate_pe(team, pe, TEAM_WORLD) for pe in range(n)] == list(range(n))
    ushmem.barrier_all()
    ushmem.team_destroy(team)
    ushmem.barrier_all()


@requires_multi_pe
def test_team_sync_barrier_member_scoped():
    _need(4)
    team, member = _even_team()
    try:
        _scoping(team, lambda: ushmem.team_sync(team))
        _scoping(team, lambda: ushmem.barrier(team))
    finally:
        ushmem.barrier_all()
        ushmem.team_destroy(team)
        ushmem.barrier_all()


@requires_multi_pe
def test_team_sync_store_visibility():
    _need(4)
    me = ushmem.my_pe()
    team, member = _even_team()
    value, pulled = ushmem.malloc(8), ushmem.malloc(8)
    got = want = None
    try:
        store_u64(value, me + 5000)
        store_u64(pulled, 2**64 - 1)
        ushmem.team_sync(team)  # the only ordering before the read below
        if member and ushmem.team_n_pes(team) > 1:
            tn, tr = ushmem.team_n_pes(team), ushmem.team_my_pe(team)
            prev = ushmem.team_translate_pe(team, (tr - 1) % tn, TEAM_WORLD)
            ushmem.getmem_on_stream(pulled, value, 8, prev, 0)
            device_sync()
            got, want = load_u64(pulled), prev + 5000
        ushmem.barrier_all()
    finally:
        ushmem.free(value)
        ushmem.free(pulled)
        ushmem.barrier_all()
        ushmem.team_destroy(team)
        ushmem.barrier_all()
    assert got == want


def _ring_through_team(team, member, base, put_and_barrier):
    me = ushmem.my_pe()
    inbox, send = ushmem.malloc(8), ushmem.malloc(8)
    got = want = None
    try:
        store_u64(inbox, 0xABCDEF00 + me)
        store_u64(send, me + base)
        ushmem.barrier_all()  # every inbox set before anyone writes into it
        nxt = prev = None
        if member and ushmem.team_n_pes(team) > 1:
            tn, tr = ushmem.team_n_pes(team), ushmem.team_my_pe(team)
            nxt = ushmem.team_translate_pe(team, (tr + 1) % tn, TEAM_WORLD)
            prev = ushmem.team_translate_pe(team, (tr - 1) % tn, TEAM_WORLD)
        put_and_barrier(inbox, send, nxt)
        if prev is not None:
            got, want = load_u64(inbox), prev + base
        ushmem.barrier_all()
    finally:
        ushmem.free(inbox)
        ushmem.free(send)
        ushmem.barrier_all()
        ushmem.team_destroy(team)
        ushmem.barrier_all()
    assert got == want


@requires_multi_pe
def test_team_barrier_rma_ordering():
    _need(4)
    team, member = _even_team()

    def step(inbox, send, nxt):
        if nxt is not None:
            ushmem.putmem_on_stream(inbox, send, 8, nxt, 0)
            device_sync()  # the stream's put is complete before the host barrier
        ushmem.barrier(team)
    _ring_through_team(team, member, 7000, step)


@requires_multi_pe
def test_team_barrier_on_stream_rma_ordering():
    _need(4)
    team, member = _even_team()

    def step(inbox, send, nxt):
        with Stream() as s:
            if nxt is not None:
                ushmem.putmem_on_stream(inbox, send, 8, nxt, s.handle)
            ushmem.barrier_on_stream(team, s.handle)  # non-members: TEAM_INVALID, a no-op
            s.synchronize()
        with Stream() as s2:
            ushmem.barrier_on_stream(TEAM_INVALID, s2.handle)
            ushmem.team_sync_on_stream(TEAM_INVALID, s2.handle)
            s2.synchronize()
    _ring_through_team(team, member, 9000, step)


@requires_multi_pe
def test_team_sync_barrier_on_stream_member_scoped():
    _need(4)
    team, member = _even_team()

    def on_stream(fn):
        def run():
            with Stream() as s:
                fn(team, s.handle)
                s.synchronize()
        return run
    try:
        _scoping(team, on_stream(ushmem.team_sync_on_stream))
        _scoping(team, on_stream(ushmem.barrier_on_stream))
    finally:
        ushmem.barrier_all()
        ushmem.team_destroy(team)
        ushmem.barrier_all()


@requires_multi_pe
def test_live_teams_registry_drain():
    from ushmem import _live_teams
    n = ushmem.n_pes()
    before = set(_live_teams)
    status, team = ushmem.team_split_strided(TEAM_WORLD, 0, 1, n, _cfg(), 0)
    assert status == SUCCESS
    assert team in _live_teams and team not in before
    ushmem.barrier_all()
    ushmem.team_destroy(team)
    ushmem.barrier_all()
    assert team not in _live_teams
