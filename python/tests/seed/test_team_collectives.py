"""Seed test_team_collectives, for ushmem (2 or more PEs, torch): interop.torch's alltoall
and broadcast over TEAM_WORLD with every PE checking its data, and the team-collective
names the seed expects at the top level."""
from conftest import requires_multi_pe, requires_torch
from seed_util import tdev, tsync

import ushmem

try:
    import torch
    from ushmem.interop import torch as ut
except ImportError:
    torch = ut = None

pytestmark = [requires_torch, requires_multi_pe]


def test_world_alltoall_torch_wrapper():
    me, n = ushmem.my_pe(), ushmem.n_pes()
    chunk = 4
    src = ut.create_tensor((n, chunk), torch.int32)
    dst = ut.create_tensor((n, chunk), torch.int32)
    try:
        for pe in range(n):
            src[pe].fill_(me * 100 + pe)  # row pe goes to PE pe
        dst.fill_(-1)
        tsync()
        ut.barrier_all()
        ut.alltoall(ushmem.TEAM_WORLD, dst, src)
        ut.barrier_all()
        tsync()
        want = torch.stack([torch.full((chunk,), pe * 100 + me, dtype=torch.int32,
                                       device=tdev()) for pe in range(n)])
        torch.testing.assert_close(dst, want)
    finally:
        ut.free_tensor(src)
        ut.free_tensor(dst)


def test_world_broadcast_torch_wrapper():
    me = ushmem.my_pe()
    src = ut.create_tensor((16,), torch.int32)
    dst = ut.create_tensor((16,), torch.int32)
    try:
        src.fill_(me)
        dst.fill_(-1)
        if me == 0:
            dst.copy_(src)
        tsync()
        ut.barrier_all()
        ut.broadcast(ushmem.TEAM_WORLD, dst, src, 0)
        ut.barrier_all()
        tsync()
        torch.testing.assert_close(dst, torch.zeros_like(dst))
    finally:
        ut.free_tensor(src)
        ut.free_tensor(dst)


def test_team_collective_symbols_are_exported():
    for name in ("alltoallmem_on_stream", "broadcastmem_on_stream", "barrier", "team_sync",
                 "barrier_on_stream", "team_sync_on_stream", "global_exit", "dump_stats",
                 "reset_stats"):
        assert callable(getattr(ushmem, name, None)), name
