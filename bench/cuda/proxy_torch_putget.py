# Issue 20 (bench/cuda/proxy_torch_putget.sh): put, stream barrier, get between
# two PEs on pretend hosts with torch CUDA tensors; prints what each PE saw.
import torch
import ushmem
import ushmem.interop.torch as ut
ushmem.init(device=0)
me, n = ushmem.my_pe(), ushmem.n_pes()
right, left = (me + 1) % n, (me - 1) % n
torch.cuda.set_device(0)
for step, dt in enumerate((torch.float32, torch.int64)):
    t = ut.create_tensor((5, 7), dt, device="cuda")
    src = (torch.arange(35, dtype=dt).reshape(5, 7) + 100 * me).to("cuda")
    print("PE", me, "put", dt, flush=True)
    ut.put(t, src, right)
    ut.barrier_all()
    print("PE", me, "barrier ok", flush=True)
    got = torch.empty(5, 7, dtype=dt, device="cuda")
    ut.get(got, t, right)
    torch.cuda.synchronize()
    print("PE", me, "get ok", t.cpu().flatten()[:3].tolist(), got.cpu().flatten()[:3].tolist(), flush=True)
    ut.barrier_all()
    ut.free_tensor(t)
ushmem.finalize()
