"""ushmem as torch's symmetric-memory backend (ushmem.interop.torch_symm_mem).

Run where torch has CUDA, its symmetric-memory headers and a process group (the
torchrun leg; tier "torch"), with a device bound and a local part in the device heap
(USHMEM_DEVICE_LOCAL_HEAP_SIZE, set by the GPU legs). Skipped elsewhere, saying why.
Every rank checks with random data what its peers wrote."""
import gc
import os

import pytest

import ushmem

pytestmark = [pytest.mark.requires_cuda, pytest.mark.requires_torch,
              pytest.mark.requires_multi_pe]


@pytest.fixture(scope="module")
def sm():
    import torch.distributed as dist
    if not dist.is_initialized():
        pytest.skip("needs a torch process group (torchrun leg)")
    try:
        import torch.distributed._symmetric_memory as symm_mem
        import ushmem.interop.torch_symm_mem as usm
    except ImportError as e:
        pytest.skip(f"torch symmetric memory backend unavailable: {e}")
    if int(os.environ.get("USHMEM_DEVICE_LOCAL_HEAP_SIZE", "0") or 0) == 0:
        pytest.skip("the device heap has no local part (USHMEM_DEVICE_LOCAL_HEAP_SIZE)")
    usm.enable()
    return symm_mem


def _world():
    import torch.distributed as dist
    return dist.group.WORLD.group_name


def _dev():
    return f"cuda:{ushmem.cuda_device()}"


def test_rendezvous_world_peer_writes(sm, me, npes, data):
    import torch
    n = 4096
    t = sm.empty(n, dtype=torch.int32, device=_dev())
    t.zero_()
    h = sm.rendezvous(t, _world())
    assert h.rank == me and h.world_size == npes
    pad = h.get_signal_pad(me, (256,), dtype=torch.int32)
    assert int(pad.abs().sum()) == 0
    right, left = (me + 1) % npes, (me - 1) % npes
    mine = torch.from_numpy(data.array(me, n, "int32")).to(_dev())
    h.barrier(channel=0)
    h.get_buffer(right, (n,), torch.int32, 0).copy_(mine)
    h.barrier(channel=0)
    torch.cuda.current_stream().synchronize()
    want = torch.from_numpy(data.array(left, n, "int32"))
    assert torch.equal(t.cpu(), want)
    del h, t


def test_rendezvous_subgroup(sm, me, npes, data):
    import torch
    import torch.distributed as dist
    members = list(range(0, npes, 2)) if npes > 2 else [0, 1]
    g = dist.new_group(members)
    if me not in members:
        return
    k, m = members.index(me), len(members)
    n = 1000
    t = sm.empty(n, dtype=torch.int64, device=_dev())
    h = sm.rendezvous(t, g.group_name)
    assert h.rank == k and h.world_size == m
    right, left = members[(k + 1) % m], members[(k - 1) % m]
    h.barrier(channel=0)
    h.get_buffer((k + 1) % m, (n,), torch.int64, 0).copy_(
        torch.from_numpy(data.array(me, n, "int64")).to(_dev()))
    h.barrier(channel=0)
    torch.cuda.current_stream().synchronize()
    assert torch.equal(t.cpu(), torch.from_numpy(data.array(left, n, "int64")))
    assert right in members


def test_put_signal_wait_signal(sm, me, npes, data):
    import torch
    n = 333
    t = sm.empty(n, dtype=torch.float32, device=_dev())
    h = sm.rendezvous(t, _world())
    right, left = (me + 1) % npes, (me - 1) % npes
    h.barrier(channel=0)
    h.get_buffer(right, (n,), torch.float32, 0).copy_(
        torch.from_numpy(data.array(me, n, "float32")).to(_dev()))
    h.put_signal(right, channel=1, timeout_ms=20000)
    h.wait_signal(left, channel=1, timeout_ms=20000)
    torch.cuda.current_stream().synchronize()
    assert torch.equal(t.cpu(), torch.from_numpy(data.array(left, n, "float32")))
    pad = h.get_signal_pad(me, (1024,), dtype=torch.int32)
    assert int(pad.abs().sum()) == 0  # waits leave the pad zeroed
    h.barrier(channel=0)


@pytest.mark.parametrize("op", ["one_shot_all_reduce", "two_shot_all_reduce_"])
def test_generic_all_reduce(sm, me, npes, data, op):
    import torch
    import torch.distributed as dist
    n = 8192
    t = sm.empty(n, dtype=torch.bfloat16, device=_dev())
    x = torch.from_numpy(data.array(me, n, "float32")).to(torch.bfloat16).to(_dev())
    t.copy_(x)
    sm.rendezvous(t, _world())
    ref = x.float().cpu()
    parts = [torch.zeros_like(ref) for _ in range(npes)]
    dist.all_gather(parts, ref)
    want = torch.stack(parts).sum(0)
    if op == "one_shot_all_reduce":
        got = torch.ops.symm_mem.one_shot_all_reduce(t, "sum", _world())
    else:
        got = torch.ops.symm_mem.two_shot_all_reduce_(t, "sum", _world())
    torch.cuda.current_stream().synchronize()
    assert torch.allclose(got.float().cpu(), want, rtol=2e-2, atol=2e-2)


def test_free_from_garbage_collection(sm, me):
    import torch
    for i in range(200):
        t = sm.empty(1 << 12, dtype=torch.uint8, device=_dev())
        sm.rendezvous(t, _world())
        del t
        if (i + me) % 7 == 0:  # ranks collect at different times
            gc.collect()
    ushmem.barrier_all()


def test_alloc_free_cycles_do_not_grow(sm):
    import torch
    local = int(os.environ["USHMEM_DEVICE_LOCAL_HEAP_SIZE"])
    for _ in range(1000):
        t = sm.empty(1 << 20, dtype=torch.uint8, device=_dev())
        del t
    torch.cuda.synchronize()
    big = sm.empty(local * 3 // 4, dtype=torch.uint8, device=_dev())
    assert big.numel() == local * 3 // 4
    del big


def test_ushmem_ops_put_get_signal(sm, me, npes, data):
    """torch.ops.ushmem.put/get/put_signal/wait_signal between world ranks (= PEs): each
    rank owns slot `me` of a symmetric tensor, so no two ranks write one place."""
    import torch
    n = 257
    t = sm.empty(npes * n, dtype=torch.float32, device=_dev())
    sig = sm.empty(1, dtype=torch.int64, device=_dev())
    t.zero_()
    sig.zero_()
    h = sm.rendezvous(t, _world())
    sm.rendezvous(sig, _world())
    right, left = (me + 1) % npes, (me - 1) % npes
    slot = lambda pe: t[pe * n:(pe + 1) * n]  # noqa: E731
    ref = {pe: torch.from_numpy(data.array(pe, n, "float32")) for pe in range(npes)}
    h.barrier(channel=0)
    slot(me).copy_(ref[me].to(_dev()))
    torch.ops.ushmem.put_signal(slot(me), sig, 5, right)
    torch.ops.ushmem.wait_signal(sig, 5)
    torch.cuda.current_stream().synchronize()
    assert torch.equal(slot(left).cpu(), ref[left])
    h.barrier(channel=0)
    torch.ops.ushmem.get(slot(right), right)  # right's own slot holds right's data
    torch.cuda.current_stream().synchronize()
    assert torch.equal(slot(right).cpu(), ref[right])
    h.barrier(channel=0)
    slot(me).mul_(2)
    torch.ops.ushmem.put(slot(me), left)
    h.barrier(channel=0)
    torch.cuda.current_stream().synchronize()
    assert torch.equal(slot(right).cpu(), ref[right] * 2)
    with pytest.raises(RuntimeError, match="is in no rendezvous|not in a block"):
        torch.ops.ushmem.put(torch.zeros(4, device=_dev()), right)


@pytest.mark.parametrize("path", ["kernel", "host"])  # host: the path for other hosts
@pytest.mark.parametrize("hidden", [33, 64])  # rows of 132 B (byte copies) and 256 B (16 B)
def test_all_to_all_vdev(sm, me, npes, data, hidden, path, monkeypatch):
    """torch.ops.ushmem.all_to_all_vdev against a host model: random splits per round
    (zeros included), every rank checks every row it received and out_splits_offsets."""
    import numpy as np
    import torch
    import torch.distributed as dist
    if path == "host":
        monkeypatch.setenv("USHMEM_SYMM_A2AV", "host")
    cap = 16 * npes
    inp = sm.empty((cap, hidden), dtype=torch.float32, device=_dev())
    out = sm.empty((cap, hidden), dtype=torch.float32, device=_dev())
    oso = sm.empty((2, npes), dtype=torch.int64, device=_dev())
    for rnd in range(3):
        tag = f"a2av{hidden}/{path}/{rnd}"
        splits = data.rng(me, tag).integers(0, 16, npes)
        rows = {p: data.array(p, cap * hidden, "float32", tag).reshape(cap, hidden)
                for p in range(npes)}
        inp.copy_(torch.from_numpy(rows[me]).to(_dev()))
        out.fill_(-1.0)
        every = [torch.zeros(npes, dtype=torch.int64) for _ in range(npes)]
        dist.all_gather(every, torch.from_numpy(splits.astype(np.int64)))
        every = [e.numpy() for e in every]
        torch.ops.ushmem.all_to_all_vdev(inp, out, torch.from_numpy(splits).to(_dev()), oso,
                                         _world())
        torch.cuda.current_stream().synchronize()
        got_n = [int(every[p][me]) for p in range(npes)]
        want = np.concatenate([rows[p][int(every[p][:me].sum()):][:got_n[p]]
                               for p in range(npes)])
        assert oso[0].cpu().tolist() == got_n
        assert oso[1].cpu().tolist() == [int(sum(got_n[:p])) for p in range(npes)]
        assert np.array_equal(out.cpu().numpy()[:len(want)], want), (rnd, me)
        assert bool((out[len(want):] == -1.0).all())


def test_fused_all_gather_matmul(sm, me, npes, data):
    """torch's fused all-gather + matmul (its symmetric-memory workspace is allocated
    with a group and rendezvoused without one) against all_gather then matmul."""
    import numpy as np
    import torch
    import torch.distributed as dist
    rows, k, n = 16, 32, 24
    a = torch.from_numpy(data.array(me, rows * k, "float32", "agmm").reshape(rows, k))
    b = torch.from_numpy(data.array(0, k * n, "float32", "agmm_b").reshape(k, n))
    ag, (mm,) = torch.ops.symm_mem.fused_all_gather_matmul(
        a.to(_dev()), [b.to(_dev())], gather_dim=0, group_name=_world())
    torch.cuda.current_stream().synchronize()
    parts = [torch.zeros_like(a) for _ in range(npes)]
    dist.all_gather(parts, a)
    want = torch.cat(parts)
    assert torch.equal(ag.cpu(), want)
    assert np.allclose(mm.cpu().numpy(), (want @ b).numpy(), rtol=1e-3, atol=1e-3)
