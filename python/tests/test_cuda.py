"""CUDA memory (runs on a GPU with a CUDA build of ushmem; skipped elsewhere).
On host-only builds, the CUDA entry points must refuse cleanly: that part runs
everywhere."""
import pytest

import ushmem


def test_cuda_paths_refuse_cleanly_without_cuda(me):
    if ushmem.HAVE_CUDA:
        pytest.skip("CUDA build")
    buf = ushmem.create_buffer(16)
    for call in (lambda: ushmem.create_buffer(16, device="cuda"),
                 lambda: ushmem.SymmetricBuffer(16, device="cuda:0"),
                 lambda: ushmem.putmem_on_stream(buf, b"x", 1, me, 0xdead),
                 lambda: ushmem.signal_wait_until_on_stream(buf[:8], ushmem.CMP_GE, 0, 1),
                 lambda: ushmem.alltoallmem_on_stream(ushmem.TEAM_WORLD, buf, buf, 1, 2),
                 lambda: ushmem.init_attr(0, 1, bytes(128), device=0)):
        with pytest.raises(ushmem.Error) as ei:
            call()
        assert ei.value.code in (ushmem.ERR_UNSUPPORTED, ushmem.ERR_STATE)
    buf.free()


@pytest.mark.requires_cuda
@pytest.mark.requires_torch
def test_cuda_tensor_ring(me, npes, data):
    import numpy as np
    import torch
    import ushmem.interop.torch as ut
    t = ut.create_tensor((64,), torch.float32, device="cuda")
    assert t.is_cuda
    src = torch.from_numpy(data.array(me, 64, np.float32)).cuda()
    ut.put(t, src, (me + 1) % npes)  # on the current stream
    ut.barrier_all()                 # stream-ordered
    torch.cuda.current_stream().synchronize()
    got = t.cpu().numpy()
    ut.barrier_all()
    ut.free_tensor(t)
    assert np.array_equal(got, data.array((me - 1) % npes, 64, np.float32))


@pytest.mark.requires_cuda
def test_cuda_buffer_interfaces():
    buf = ushmem.create_buffer(256, device="cuda")
    cai = buf.__cuda_array_interface__
    assert cai["data"][0] == buf.ptr and cai["shape"] == (256,)
    assert buf.__dlpack_device__()[0] == 2
    assert not hasattr(buf, "__array_interface__")
    with pytest.raises(BufferError):
        memoryview(buf)
    buf.free()
