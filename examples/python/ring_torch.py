"""Ring exchange of a CPU tensor with ushmem and PyTorch.

Every PE owns a symmetric tensor; in each of n_pes - 1 steps it puts what it
holds into its right neighbour's copy and waits on a signal, so after the last
step every PE has seen every other PE's tensor. Then an atomic counter and a
broadcast check the result, and a peer view reads the neighbour's copy directly.

    build/tools/ushrun -n 4 /usr/bin/python3 examples/python/ring_torch.py
    torchrun --nproc-per-node 4 examples/python/ring_torch.py        # init_with_torch
    mpirun -n 4 python3 examples/python/ring_torch.py --mpi          # init_with_mpi

(with PYTHONPATH=python and the extension built by `make`).
"""
import sys

import torch

import ushmem
import ushmem.interop.torch as ut


def init():
    if "--mpi" in sys.argv:
        from mpi4py import MPI
        ushmem.init_with_mpi(MPI.COMM_WORLD)
    elif "--torch" in sys.argv:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        ushmem.init_with_torch()
    else:
        ushmem.init()  # ushrun, torchrun, or alone


def main():
    init()
    me, n = ushmem.my_pe(), ushmem.n_pes()
    right = (me + 1) % n
    shape = (3, 4)

    # What PE p contributes: a tensor anybody can recompute from p.
    def payload(p):
        return torch.arange(12, dtype=torch.float32).view(shape) + 100 * p

    # Host memory (CPU tensors) even where a GPU is bound (the default there is the
    # device heap: see ring_torch_cuda.py).
    inbox = ut.create_tensor(shape, torch.float32, device="cpu")  # collective
    flag = ushmem.create_buffer(8, device="cpu", zero=True)       # uint64 signal word
    counter = ushmem.create_buffer(8, device="cpu", zero=True)
    total = torch.zeros(shape)
    carry = payload(me)
    for step in range(1, n):
        # data + signal in one call: the signal is visible only after the data.
        # Tensors, buffers, numpy arrays and int addresses are all accepted.
        ushmem.putmem_signal(inbox, carry, carry.numel() * carry.element_size(), flag,
                             step, ushmem.SIGNAL_SET, right)
        ushmem.signal_wait_until(flag, ushmem.CMP_EQ, step)
        carry = inbox.clone()
        total += carry
        ushmem.barrier_all()  # nobody overwrites an inbox before its owner read it
    expected = sum(payload(p) for p in range(n)) - payload(me)
    ok = torch.equal(total, expected)

    ushmem.uint64_atomic_add(counter, int(ok), 0)  # PE 0 counts the PEs that agree
    ushmem.barrier_all()
    n_ok = torch.tensor([ushmem.uint64_atomic_fetch(counter, 0)], dtype=torch.int64)

    # PE 0 broadcasts the count; everybody reads the neighbour's inbox in place.
    src = ut.create_tensor(1, torch.int64, device="cpu")
    dst = ut.create_tensor(1, torch.int64, device="cpu")
    src.copy_(n_ok)
    ut.broadcast(ushmem.TEAM_WORLD, dst, src, 0)
    peer = ut.get_peer_tensor(inbox, right)  # a view of right's memory (same host)
    neighbour_saw = peer.clone()
    agree = int(dst.item())
    ushmem.barrier_all()

    # one write of the whole line: the PEs share the terminal, and print() makes two
    # writes (text, newline) where Python's output is unbuffered (PYTHONUNBUFFERED)
    sys.stdout.write(f"PE {me}/{n}: received the tensors of {n - 1} other PE(s), sum "
                     f"{'correct' if ok else 'WRONG'}; {agree}/{n} PEs agree; PE {right} last "
                     f"received from PE {(right - (n - 1)) % n if n > 1 else right}: "
                     f"{neighbour_saw[0, :3].tolist()}\n")
    sys.stdout.flush()
    # Tensors over symmetric memory must not be touched after it is freed
    # (and after finalize the heap is unmapped): copy out first, as above.
    for t in (inbox, src, dst):
        ut.free_tensor(t)
    flag.free()
    counter.free()
    ushmem.finalize()
    sys.exit(0 if ok and agree == n else 1)


if __name__ == "__main__":
    main()
