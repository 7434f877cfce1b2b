"""All-reduce on torch symmetric memory: ushmem's backend against NCCL and ushmem's
own stream reduction, same run, several ranks on one GPU.

    torchrun --nproc-per-node 2 python/bench/bench_symm_mem.py          # python/bench/symm_mem_run.sh
                                                                         # adds MPS and the table

Rows, per size (bytes of float32 per rank, 8 KiB .. 64 MiB): torch's generic
``one_shot_all_reduce`` and ``two_shot_all_reduce_`` on tensors of the USHMEM backend,
``dist.all_reduce`` over NCCL (only when NCCL accepts several ranks on one GPU:
NCCL_MULTI_RANK_GPU_ENABLE=1; else the row says why), and
``ushmem.interop.torch.reduce`` (the library's stream reduction over the world team).
Each figure: µs per call on the current stream, best and mean of --rounds timed
rounds of --iters calls (CUDA events), the worst rank's time. Every result is checked
against a float64 host reduction of the same random inputs first. Rank 0 prints one
line per (op, size): ``row<TAB>op<TAB>bytes<TAB>best_us<TAB>mean_us`` (symm_mem_run.sh
turns them into the table with ratios)."""
import argparse
import os
import sys

import torch
import torch.distributed as dist


def timed(fn, iters, rounds):
    """(best, mean) µs per call across rounds; the max over ranks of each round."""
    times = []
    for _ in range(rounds):
        dist.barrier()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(iters):
            fn()
        b.record()
        b.synchronize()
        t = torch.tensor([a.elapsed_time(b) * 1000.0 / iters], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=cpu_group)
        times.append(float(t))
    return min(times), sum(times) / len(times)


def check(name, got, want, nbytes):
    ok = torch.allclose(got.double().cpu(), want, rtol=3e-2, atol=3e-2 * dist.get_world_size())
    if not ok:
        print(f"bench_symm_mem: rank {dist.get_rank()}: {name} at {nbytes} bytes gives a wrong "
              "result", file=sys.stderr)
        sys.exit(1)


def main():
    global cpu_group
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-bytes", type=int, default=8 << 10)
    ap.add_argument("--max-bytes", type=int, default=64 << 20)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=10)
    a = ap.parse_args()

    dev = int(os.environ.get("USHMEM_BENCH_DEVICE", "0"))
    torch.cuda.set_device(dev)
    use_nccl = nccl_asked = os.environ.get("NCCL_MULTI_RANK_GPU_ENABLE") == "1"
    dist.init_process_group("cpu:gloo,cuda:nccl" if use_nccl else "gloo")
    cpu_group = dist.new_group(backend="gloo")
    me, n = dist.get_rank(), dist.get_world_size()
    if use_nccl:  # NCCL 2.28 refuses several ranks on one GPU whatever the environment says
        try:
            probe = torch.ones(1, device=f"cuda:{dev}")
            dist.all_reduce(probe)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 (any NCCL refusal: the rows are skipped)
            use_nccl = False
            if me == 0:
                print("# NCCL refused: " + str(e).splitlines()[0] + "; ratios are to ushmem "
                      "reduce_on_stream", flush=True)

    import torch.distributed._symmetric_memory as symm_mem
    import ushmem
    import ushmem.interop.torch as ut
    import ushmem.interop.torch_symm_mem as usm
    usm.enable(device=dev)
    world = dist.group.WORLD.group_name
    gen = torch.Generator().manual_seed(1234 + me)

    size = a.min_bytes
    while size <= a.max_bytes:
        numel = size // 4
        x = torch.randn(numel, generator=gen).to(torch.float32)
        parts = [torch.zeros(numel, dtype=torch.float64) for _ in range(n)]
        dist.all_gather(parts, x.double(), group=cpu_group)
        want = torch.stack(parts).sum(0)
        t = symm_mem.empty(numel, dtype=torch.float32, device=f"cuda:{dev}")
        t.copy_(x.to(t.device))
        symm_mem.rendezvous(t, world)
        rows = []

        def one_shot():
            return torch.ops.symm_mem.one_shot_all_reduce(t, "sum", world)
        check("one_shot_all_reduce", one_shot(), want, size)
        rows.append(("symm_mem one_shot_all_reduce (USHMEM)", one_shot))

        def two_shot():
            t.copy_(x.to(t.device))
            return torch.ops.symm_mem.two_shot_all_reduce_(t, "sum", world)
        check("two_shot_all_reduce_", two_shot(), want, size)
        rows.append(("symm_mem two_shot_all_reduce_ (USHMEM) + copy-in", two_shot))

        src = ut.create_tensor((numel,), torch.float32)
        dst = ut.create_tensor((numel,), torch.float32)
        src.copy_(x.to(src.device))

        def ushmem_reduce():
            ut.reduce(ushmem.TEAM_WORLD, dst, src, "sum")
            return dst
        check("ushmem reduce", ushmem_reduce(), want, size)
        rows.append(("ushmem reduce_on_stream", ushmem_reduce))

        if use_nccl:
            y = x.to(f"cuda:{dev}")

            def nccl():
                z = y.clone()
                dist.all_reduce(z)
                return z
            check("nccl all_reduce", nccl(), want, size)
            rows.append(("NCCL all_reduce + clone", nccl))
        elif me == 0 and size == a.min_bytes and not nccl_asked:
            print("# NCCL rows skipped: set NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL refuses "
                  "several ranks on one GPU otherwise)", flush=True)

        for name, fn in rows:
            best, mean = timed(fn, a.iters, a.rounds)
            if me == 0:
                print(f"row\t{name}\t{size}\t{best:.2f}\t{mean:.2f}", flush=True)
        ushmem.barrier_all()
        ut.free_tensor(src)
        ut.free_tensor(dst)
        del t
        size *= 4
    torch.cuda.synchronize()
    dist.barrier()
    ushmem.finalize_with_torch()


if __name__ == "__main__":
    main()
