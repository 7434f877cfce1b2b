"""A ring of device-initiated puts: a Triton kernel on each PE stores a block of
data straight into its right neighbour's symmetric CUDA tensor (through the
peer mapping, ushmem.triton.peer_ptr) and then sets the neighbour's signal
word with a system-scope release (ushmem.triton.signal_set). The neighbour
waits in stream order (ushmem.signal_wait_until_on_stream, a stream memory
operation: no kernel spins, so it is right with several PEs on one GPU and no
MPS), then takes what arrived and passes it on in the next step.

    build/tools/ushrun -n 2 python3 examples/python/device_triton.py [--steps K]

(with PYTHONPATH=python and the extension built for that python3; needs torch
with CUDA and triton).
"""
import argparse
import sys

import torch

import ushmem
import ushmem.interop.torch as ut
import ushmem.triton as ust

try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None

if triton is not None:
    @triton.jit
    def put_signal_kernel(src, dst, sig, peer_bases, my_base, pe, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(src + offs, mask=mask)
        # pe's copy of dst, as mapped in this process: plain stores into the peer
        tl.store(ust.peer_ptr(dst + offs, peer_bases, my_base, pe), x, mask=mask)
        # once per program, after all its stores: signal += 1 (release, system scope)
        ust.signal_add(ust.peer_ptr(sig, peer_bases, my_base, pe), 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=0, help="ring steps (default n_pes - 1, min 1)")
    ap.add_argument("--elems", type=int, default=1 << 20, help="float32 elements per PE")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("device_triton: torch has no CUDA here; nothing to do")
        return 0
    if triton is None:
        print("device_triton: triton is not importable here; nothing to do")
        return 0
    ushmem.init(device="cuda")  # the local rank modulo the GPUs
    me, n = ushmem.my_pe(), ushmem.n_pes()
    right = (me + 1) % n
    dev = torch.device("cuda", ushmem.cuda_device())
    s = torch.cuda.current_stream(dev)
    h = ushmem.device_handle()
    if me == 0:
        print(f"device handle: {h}; device waits: {ushmem.device_why() or 'allowed'}",
              flush=True)

    def payload(p):
        return torch.arange(args.elems, dtype=torch.float32, device=dev) + 1000.0 * p

    block = 1024
    grid = (args.elems + block - 1) // block
    inbox = ut.create_tensor((args.elems,), torch.float32, device=dev)  # collective
    sig = ut.create_tensor((1,), torch.int64, device=dev, zero=True)   # the signal word
    a = ust.put_signal_args(inbox, right)  # peer table, my heap base, right's world PE
    carry, ok = payload(me), True
    steps = args.steps or max(1, n - 1)
    ut.barrier_all()  # every inbox and signal exists (and is zero) before any store
    t0 = ushmem.wtime()
    for step in range(1, steps + 1):
        put_signal_kernel[(grid,)](carry, inbox, sig, a.peer_bases, a.my_base, a.pe,
                                   args.elems, BLOCK=block)
        # every program of the left neighbour's kernel adds 1: step * grid in all
        ushmem.signal_wait_until_on_stream(sig, ushmem.CMP_GE, step * grid, s)
        carry = inbox.clone()  # on s, after the wait
        ok &= torch.equal(carry, payload((me - step) % n))
        ut.barrier_all()  # nobody overwrites an inbox before its owner copied it
    dt = ushmem.wtime() - t0
    print(f"PE {me}/{n} on {dev}: {steps} step(s) of {args.elems * 4 >> 10} KiB through "
          f"Triton puts into PE {right}: {'ok' if ok else 'WRONG DATA'} ({dt * 1e3:.1f} ms)",
          flush=True)
    ut.free_tensor(inbox)
    ut.free_tensor(sig)
    ushmem.finalize()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
