"""Ring exchange of CUDA tensors with ushmem and PyTorch, ordered on a stream.

Each PE binds a GPU (several PEs may share one), owns a symmetric CUDA tensor
and, in each of n_pes - 1 steps, puts what it holds into its right
neighbour's copy together with a signal, all enqueued on the current torch
stream: the host never waits inside the loop. A reduction on the stream then
counts the PEs whose sum is right.

    build/tools/ushrun -n 2 python3 examples/python/ring_torch_cuda.py
    torchrun --nproc-per-node 2 examples/python/ring_torch_cuda.py

(with PYTHONPATH=python and the extension built for that python3; needs torch
with CUDA).
"""
import sys

import torch

import ushmem
import ushmem.interop.torch as ut


def main():
    if not torch.cuda.is_available():
        print("ring_torch_cuda: torch has no CUDA here; nothing to do")
        return 0
    ushmem.init(device="cuda")  # the local rank modulo the GPUs
    me, n = ushmem.my_pe(), ushmem.n_pes()
    right = (me + 1) % n
    dev = torch.device("cuda", ushmem.cuda_device())
    s = torch.cuda.current_stream(dev)

    def payload(p):
        return torch.arange(1 << 16, dtype=torch.float32, device=dev) + 1000 * p

    inbox = ut.create_tensor((1 << 16,), torch.float32, device=dev)  # collective
    flag = ushmem.create_buffer(8, device=dev, zero=True)            # uint64 signal on the GPU
    carry, total = payload(me), torch.zeros(1 << 16, device=dev)
    ut.barrier_all()
    for step in range(1, n):
        # data, then the signal, in stream order; the wait is a stream memory operation
        ushmem.putmem_signal_on_stream(inbox, carry, carry.numel() * carry.element_size(), flag,
                                       step, ushmem.SIGNAL_SET, right, s)
        ushmem.signal_wait_until_on_stream(flag, ushmem.CMP_EQ, step, s)
        carry = inbox.clone()  # on s, after the wait
        total += carry
        ut.barrier_all()  # nobody overwrites an inbox before its owner copied it
    expected = sum(payload(p) for p in range(n)) - payload(me)
    ok = ut.create_tensor(1, torch.int32, device=dev)
    agree = ut.create_tensor(1, torch.int32, device=dev)
    ok.copy_(torch.equal(total, expected) * torch.ones(1, dtype=torch.int32, device=dev))
    ut.reduce(None, agree, ok, "sum")  # on the current stream
    n_ok = int(agree.item())           # waits for the stream
    print(f"PE {me}/{n} on {dev}: received {n - 1} CUDA tensor(s) around the ring; "
          f"{n_ok}/{n} PEs agree", flush=True)
    ut.barrier_all()
    for t in (inbox, ok, agree):
        ut.free_tensor(t)
    flag.free()
    ushmem.finalize()
    return 0 if n_ok == n else 1


if __name__ == "__main__":
    sys.exit(main())
