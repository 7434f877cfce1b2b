"""Per-call overhead of the Python binding, in ns per call.

    python/launch_test.sh -n 1 -c "python bench/bench_overhead.py"     # or -n 2
    /usr/bin/python3 python/bench/bench_overhead.py                     # alone: 1 PE

Each figure is the best of several timed loops: "per call" is what a Python loop
pays per call (loop included); "binding" subtracts the same loop calling a
trivial builtin (abs), leaving the binding's own cost (argument parsing,
validation, the C call). The target for my_pe and an 8-byte putmem is < 1000 ns
per call.
"""
import argparse
import os
import sys
import time

import ushmem


def per_call(fn, args, n, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn(*args)
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=200_000, help="calls per timed loop")
    ap.add_argument("-r", type=int, default=5, help="timed loops (best is kept)")
    ap.add_argument("--limit-ns", type=float, default=0,
                    help="exit 1 if my_pe or an 8-byte putmem costs more than this")
    a = ap.parse_args()

    ushmem.init()
    me, npes = ushmem.my_pe(), ushmem.n_pes()
    peer = (me + 1) % npes
    buf = ushmem.create_buffer(4096, device="cpu")  # the host path, GPU or not
    sig = ushmem.create_buffer(8, device="cpu", zero=True)
    src8, dst8 = b"\x01" * 8, bytearray(8)
    sym_src = ushmem.create_buffer(8, device="cpu")
    import numpy as np
    arr8 = np.ones(8, np.uint8)
    baseline = per_call(abs, (0,), a.n, a.r)  # loop + a builtin call with 1 argument

    cases = [
        ("my_pe()", ushmem.my_pe, ()),
        ("n_pes()", ushmem.n_pes, ()),
        ("putmem 8 B (buffer <- bytes)", ushmem.putmem, (buf, src8, 8, peer)),
        ("putmem 8 B (buffer <- buffer)", ushmem.putmem, (buf, sym_src, 8, peer)),
        ("putmem 8 B (buffer <- numpy)", ushmem.putmem, (buf, arr8, 8, peer)),
        ("putmem 8 B (int address <- bytes)", ushmem.putmem, (buf.ptr, src8, 8, peer)),
        ("getmem 8 B (bytearray <- buffer)", ushmem.getmem, (dst8, buf, 8, peer)),
        ("putmem_on_stream 8 B, stream=None", ushmem.putmem_on_stream,
         (buf, src8, 8, peer, None)),
        ("uint64_atomic_fetch_add", ushmem.uint64_atomic_fetch_add, (sig, 1, peer)),
        ("int_atomic_fetch", ushmem.int_atomic_fetch, (sig, peer)),
        ("signal_fetch", ushmem.signal_fetch, (sig,)),
        ("quiet()", ushmem.quiet, ()),
    ]
    results = {}
    for name, fn, args in cases:
        results[name] = per_call(fn, args, a.n, a.r)
    ushmem.barrier_all()
    nb = max(1000, a.n // 100)
    results[f"barrier_all() ({npes} PEs)"] = per_call(ushmem.barrier_all, (), nb, 3)
    try:
        import torch
        import ushmem.interop.torch as ut
        t = ut.create_tensor(2, torch.float32, device="cpu")
        s = torch.ones(2)
        ushmem.barrier_all()
        results["interop.torch.put 8 B"] = per_call(ut.put, (t, s, peer), a.n // 10, a.r)
        ushmem.barrier_all()
        ut.free_tensor(t)
    except ImportError:
        pass

    ushmem.barrier_all()
    for b in (buf, sig, sym_src):
        b.free()
    if me == 0:
        print(f"ushmem Python binding overhead, {npes} PE(s), best of {a.r} x {a.n} calls, "
              f"Python {sys.version.split()[0]}; loop + abs(0) costs {baseline:.0f} ns")
        print(f"  {'call':<40} {'per call':>9} {'binding':>9}")
        for name, ns in results.items():
            print(f"  {name:<40} {ns:6.0f} ns {max(ns - baseline, 0):6.0f} ns")
    ushmem.finalize()
    worst = max(results["my_pe()"], results["putmem 8 B (buffer <- bytes)"])
    if a.limit_ns and worst > a.limit_ns:
        print(f"PE {me}: overhead {worst:.0f} ns exceeds --limit-ns {a.limit_ns:.0f}",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    os.environ.setdefault("SHMEM_SYMMETRIC_SIZE", "64M")
    main()
