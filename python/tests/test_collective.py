"""Multi-PE: put/get on stream, barriers, peer views, the torch RMA wrappers,
alltoall, broadcast, fcollect. Every PE checks what it received against the
sender's reproducible random data."""
import numpy as np
import pytest

import ushmem
from conftest import device_sync

pytestmark = pytest.mark.requires_multi_pe


def test_put_get_on_stream_all_pairs(me, npes, data, sym_bytes):
    n = 777
    inbox = sym_bytes(n * npes)
    for pe in range(npes):  # my block in everybody's inbox
        ushmem.putmem_on_stream(inbox[me * n:(me + 1) * n], data.bytes(me, n, f"to{pe}"), n, pe,
                                None)
    ushmem.barrier_all_on_stream(None)
    device_sync()  # with a device bound, None is the legacy default stream: wait for it
    blocks = [bytes(inbox[j * n:(j + 1) * n]) for j in range(npes)]
    pulled = []
    for pe in range(npes):  # what I sent to pe, read back from pe
        out = bytearray(n)
        ushmem.getmem_on_stream(out, inbox[me * n:(me + 1) * n], n, pe, None)
        pulled.append(bytes(out))
    ushmem.barrier_all()
    for j in range(npes):
        assert blocks[j] == data.bytes(j, n, f"to{me}"), f"block from PE {j}"
        assert pulled[j] == data.bytes(me, n, f"to{j}"), f"read back from PE {j}"


def test_barrier_counts(me, npes, sym_bytes):
    ctr = sym_bytes(8, zero=True)
    ushmem.barrier_all()
    seen = []
    for r in range(1, 6):
        for pe in range(npes):
            ushmem.uint64_atomic_inc(ctr, pe)
        ushmem.barrier_all()  # all increments of round r are complete everywhere
        seen.append(ushmem.uint64_atomic_fetch(ctr, me))
        ushmem.barrier_all()  # nobody starts round r+1 before all have read
    assert seen == [npes * r for r in range(1, 6)]


@pytest.mark.requires_mapped_peers
def test_peer_views_read_write(me, npes, data, sym_bytes):
    n = 4096
    buf = sym_bytes(n * npes)
    views = [ushmem.get_peer_buffer(buf, pe) for pe in range(npes)]
    for pe, v in enumerate(views):  # store my block straight into every peer's memory
        memoryview(v)[me * n:(me + 1) * n] = data.bytes(me, n, str(pe))
    ushmem.barrier_all()
    mine = [bytes(buf[j * n:(j + 1) * n]) for j in range(npes)]
    theirs = [bytes(views[pe][pe * n:(pe + 1) * n]) for pe in range(npes)]
    ushmem.barrier_all()
    for j in range(npes):
        assert mine[j] == data.bytes(j, n, str(me))
        assert theirs[j] == data.bytes(j, n, str(j))


def _blocks(data, sender, receivers, k, dtype, tag):
    return np.concatenate([data.array(sender, k, dtype, f"{tag}->{r}") for r in receivers])


@pytest.mark.requires_torch
def test_torch_put_get(me, npes, data, device):
    """device "cuda": CUDA tensors on the device heap, on the current stream."""
    import torch
    import ushmem.interop.torch as ut
    right, left = (me + 1) % npes, (me - 1) % npes
    results = []
    for dt, npdt in ((torch.float32, np.float32), (torch.int64, np.int64),
                     (torch.float64, np.float64), (torch.int16, np.int16)):
        t = ut.create_tensor((5, 7), dt, device=device)
        src = torch.from_numpy(data.array(me, 35, npdt, str(dt)).reshape(5, 7)).to(device)
        ut.put(t, src, right)
        ut.barrier_all()
        got = torch.empty(5, 7, dtype=dt, device=device)
        ut.get(got, t, right)  # right's copy holds what I put there
        results.append((dt, npdt, t.cpu().clone(), got.cpu()))
        ut.barrier_all()
        ut.free_tensor(t)
    for dt, npdt, recv, got in results:
        assert np.array_equal(recv.numpy(), data.array(left, 35, npdt, str(dt)).reshape(5, 7))
        assert np.array_equal(got.numpy(), data.array(me, 35, npdt, str(dt)).reshape(5, 7))


@pytest.mark.requires_torch
def test_torch_mismatches_raise(device):
    import torch
    import ushmem.interop.torch as ut
    t = ut.create_tensor((4, 4), torch.float32, device=device)
    cases = [
        ("dtype", lambda: ut.put(t, torch.zeros(4, 4, dtype=torch.float64, device=device), 0)),
        ("shape", lambda: ut.put(t, torch.zeros(2, 8, device=device), 0)),
        ("size", lambda: ut.alltoall(ushmem.TEAM_WORLD, t, torch.zeros(3, device=device), None)),
        ("contiguous", lambda: ut.get(torch.zeros(4, 4, device=device).t(), t, 0)),
        ("shape", lambda: ut.broadcast(ushmem.TEAM_WORLD, t, torch.zeros(16, device=device), 0)),
        ("dtype", lambda: ut.reduce(ushmem.TEAM_WORLD, t, t.to(torch.int16))),
        ("dtype", lambda: ut.reduce(ushmem.TEAM_WORLD, t.to(torch.int16), t.to(torch.int16))),
    ]
    for word, call in cases:
        with pytest.raises(ValueError, match=word):
            call()
    with pytest.raises(TypeError):
        ut.put(t, [1.0] * 16, 0)
    ut.free_tensor(t)


@pytest.mark.requires_torch
def test_torch_alltoall(me, npes, data, device):
    import torch
    import ushmem.interop.torch as ut
    k = 6  # elements per PE pair
    src = ut.create_tensor((npes * k,), torch.int32, device=device)
    dst = ut.create_tensor((npes * k,), torch.int32, device=device)
    src.copy_(torch.from_numpy(_blocks(data, me, range(npes), k, np.int32, "a2a")))
    ut.alltoall(ushmem.TEAM_WORLD, dst, src)
    got = dst.cpu().clone()
    ut.barrier_all()
    ut.free_tensor(src)
    ut.free_tensor(dst)
    want = np.concatenate([data.array(j, k, np.int32, f"a2a->{me}") for j in range(npes)])
    assert np.array_equal(got.numpy(), want)


@pytest.mark.requires_torch
def test_torch_broadcast_every_root(me, npes, data, device):
    import torch
    import ushmem.interop.torch as ut
    src = ut.create_tensor((3, 11), torch.float64, device=device)
    dst = ut.create_tensor((3, 11), torch.float64, device=device)
    src.copy_(torch.from_numpy(data.array(me, 33, np.float64).reshape(3, 11)))
    got = []
    for root in range(npes):
        ut.broadcast(ushmem.TEAM_WORLD, dst, src, root)
        got.append(dst.cpu().clone())
    ut.barrier_all()  # (device) every PE copied dst out before it is freed
    ut.free_tensor(src)
    ut.free_tensor(dst)
    for root in range(npes):
        assert np.array_equal(got[root].numpy(), data.array(root, 33, np.float64).reshape(3, 11))


def test_bytes_collectives(me, npes, data, sym_bytes):
    n = 100
    src, dst = sym_bytes(n * npes), sym_bytes(n * npes)
    ushmem.putmem(src, b"".join(data.bytes(me, n, f"->{j}") for j in range(npes)), n * npes, me)
    ushmem.alltoallmem(ushmem.TEAM_WORLD, dst, src, n)
    a2a = bytes(dst)
    ushmem.fcollectmem(ushmem.TEAM_WORLD, dst, src, n)  # my first block, from everyone
    fcol = bytes(dst)
    ushmem.broadcastmem_on_stream(ushmem.TEAM_WORLD, dst, src, n * npes, npes - 1, None)
    bc = bytes(dst)
    ushmem.alltoallmem_on_stream(ushmem.TEAM_WORLD, dst, src, n, None)
    a2a2 = bytes(dst)
    assert a2a == a2a2 == b"".join(data.bytes(j, n, f"->{me}") for j in range(npes))
    assert fcol == b"".join(data.bytes(j, n, "->0") for j in range(npes))
    assert bc == b"".join(data.bytes(npes - 1, n, f"->{j}") for j in range(npes))


@pytest.mark.requires_torch
def test_torch_reduce(me, npes, data, device):
    """reduce_on_stream through the interop: host memory runs now, device memory on the
    current stream; integer-valued data, so float sums are exact in any order."""
    import torch
    import ushmem.interop.torch as ut
    n = 50
    cases = [(torch.float64, "sum"), (torch.float32, "max"), (torch.int64, "prod"),
             (torch.int32, "or"), (torch.int64, "min")]

    def mine(pe, dt):
        return torch.from_numpy(data.rng(pe, str(dt)).integers(-3, 4, n)).to(dt)
    got = []
    for dt, op in cases:
        src = ut.create_tensor(n, dt, device=device)
        dst = ut.create_tensor(n, dt, device=device)
        src.copy_(mine(me, dt))
        ut.barrier_all()
        ut.reduce(None, dst, src, op)
        got.append(dst.cpu().clone())
        ut.barrier_all()
        ut.free_tensor(src)
        ut.free_tensor(dst)
    fold = {"sum": torch.add, "max": torch.maximum, "prod": torch.mul, "or": torch.bitwise_or,
            "min": torch.minimum}
    for (dt, op), g in zip(cases, got):
        want = mine(0, dt)
        for pe in range(1, npes):
            want = fold[op](want, mine(pe, dt))
        assert torch.equal(g, want), (dt, op)


def test_reduce_on_stream_host_bytes(me, npes, sym_bytes):
    src, dst = sym_bytes(8 * 4), sym_bytes(8 * 4)
    vals = np.array([me + 1, -me, 2 ** 40 + me, 7], dtype=np.int64)
    ushmem.putmem(src, vals.tobytes(), 32, me)
    ushmem.barrier_all()
    ushmem.reduce_on_stream(ushmem.TEAM_WORLD, dst, src, 4, "int64", "sum", None)
    got = np.frombuffer(bytes(dst), dtype=np.int64).copy()
    ushmem.reduce_on_stream(ushmem.TEAM_WORLD, dst, src, 4, "int64", "max")
    mx = np.frombuffer(bytes(dst), dtype=np.int64).copy()
    with pytest.raises(ValueError, match="no and reduction on double"):
        ushmem.reduce_on_stream(ushmem.TEAM_WORLD, dst, src, 4, "double", "and")
    with pytest.raises(TypeError):
        ushmem.reduce_on_stream(ushmem.TEAM_WORLD, dst, src, 4, np.int64, "sum")
    with pytest.raises(ValueError):  # 5 int64 do not fit a 32-byte buffer
        ushmem.reduce_on_stream(ushmem.TEAM_WORLD, dst, src, 5, "int64", "sum")
    with pytest.raises(ValueError, match="aligned"):
        ushmem.reduce_on_stream(ushmem.TEAM_WORLD, dst[4:], src[4:], 2, "int64", "sum")
    ushmem.barrier_all()
    s = sum(range(1, npes + 1))
    assert got.tolist() == [s, -sum(range(npes)), npes * 2 ** 40 + sum(range(npes)), 7 * npes]
    assert mx.tolist() == [npes, 0, 2 ** 40 + npes - 1, 7]


def test_signal_pipeline(me, npes, data, sym_bytes):
    """Chunks with SIGNAL_ADD: the receiver consumes chunk i once the signal reaches i+1."""
    chunks, n = 6, 256
    buf, sig = sym_bytes(chunks * n), sym_bytes(8, zero=True)
    ushmem.barrier_all()
    right, left = (me + 1) % npes, (me - 1) % npes
    received = []
    for i in range(chunks):
        ushmem.putmem_signal(buf[i * n:(i + 1) * n], data.bytes(me, n, str(i)), n, sig, 1,
                             ushmem.SIGNAL_ADD, right)
        ushmem.signal_wait_until_on_stream(sig, ushmem.CMP_GE, i + 1, None)
        received.append(bytes(buf[i * n:(i + 1) * n]))
    ushmem.barrier_all()
    assert received == [data.bytes(left, n, str(i)) for i in range(chunks)]
