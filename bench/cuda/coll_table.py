#!/usr/bin/env python3
"""Markdown tables of the stream-ordered collective benchmark (coll_run.sh):
the R lines of bench_coll_ushmem / bench_coll_nvshmem, one group of tables per
placement (without MPS, under MPS).

usage: coll_table.py [--nomps FILE...] [--mps FILE...]
Each file holds lines "R <impl> <metric> <bytes> <value>"; impl is ushmem
(USHMEM_CUDA_COLL unset: auto), ushmem_copy, ushmem_leader, ushmem_kernel,
ushmem_bar_<alg> (USHMEM_CUDA_BARRIER=<alg>, barrier rows only) or nvshmem. Missing files and values show as "-"."""
import argparse
import os

OPS = (("alltoall_us", "alltoallmem_on_stream"),
       ("broadcast_us", "broadcastmem_on_stream (root 0)"),
       ("fcollect_us", "fcollectmem_on_stream"),
       ("sum_i64_us", "int64_sum_reduce_on_stream (bytes / 8 elements)"))
PLACEMENTS = (("nomps", "without MPS"), ("mps", "under MPS"))
# impl ushmem_bar_<alg>: coll_run.sh's runs with USHMEM_CUDA_BARRIER=<alg>
BARRIER_ALGS = ("rounds", "mesh", "kernel")


def read(paths):
    r, notes = {}, []
    for path in paths:
        if not os.path.isfile(path):
            continue
        with open(path, errors="replace") as f:
            for line in f:
                p = line.split()
                if len(p) == 5 and p[0] == "R":
                    try:
                        r[(p[1], p[2], int(p[3]))] = float(p[4])
                    except ValueError:
                        pass
                elif line.startswith(("# mode", "# note", "# iters")) or ": exit " in line:
                    notes.append(line.strip())
    return r, notes


def human(n):
    for u, s in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << s:
            return "%d %s" % (n >> s, u)
    return "%d B" % n


def f(v):
    return "-" if v is None else "%.2f" % v


def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else "%.2f" % (a / b)


def tables(title, r, notes):
    print("### %s" % title)
    print()
    if not r:
        print("(no results)")
        print()
        return
    for n in notes:
        print("- `%s`" % n)
    if notes:
        print()
    g = r.get
    print("| barrier | ushmem µs | NVSHMEM µs | ushmem / NVSHMEM |")
    print("|---|---|---|---|")
    for name, m in (("barrier_all_on_stream (GPU time)", "barrier_all_on_stream_us"),
                    ("barrier_all_on_stream (host wall)", "barrier_all_on_stream_wall_us"),
                    ("host barrier_all", "host_barrier_all_us")):
        u, n = g(("ushmem", m, 0)), g(("nvshmem", m, 0))
        print("| %s | %s | %s | %s |" % (name, f(u), f(n), ratio(u, n)))
    print()
    algs = [a for a in BARRIER_ALGS if g(("ushmem_bar_" + a, "barrier_all_on_stream_us", 0))]
    if algs:
        nv = g(("nvshmem", "barrier_all_on_stream_us", 0))
        print("barrier_all_on_stream by USHMEM_CUDA_BARRIER (same run):")
        print()
        print("| algorithm | GPU µs | host wall µs | / NVSHMEM (GPU) |")
        print("|---|---|---|---|")
        for a in algs:
            k = "ushmem_bar_" + a
            u = g((k, "barrier_all_on_stream_us", 0))
            print("| %s | %s | %s | %s |" % (a, f(u), f(g((k, "barrier_all_on_stream_wall_us", 0))),
                                            ratio(u, nv)))
        print()
    for m, name in OPS:
        sizes = sorted({k[2] for k in r if k[1] == m})
        if not sizes:
            continue
        print("%s, µs per call (GPU time):" % name)
        print()
        print("| bytes per PE | ushmem µs | NVSHMEM µs | ushmem / NVSHMEM | copy µs | leader µs | kernel µs |")
        print("|---|---|---|---|---|---|---|")
        for s in sizes:
            u, n = g(("ushmem", m, s)), g(("nvshmem", m, s))
            print("| %s | %s | %s | %s | %s | %s | %s |" % (
                human(s), f(u), f(n), ratio(u, n), f(g(("ushmem_copy", m, s))),
                f(g(("ushmem_leader", m, s))), f(g(("ushmem_kernel", m, s)))))
        print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nomps", nargs="*", default=[], help="raw files of the runs without MPS")
    ap.add_argument("--mps", nargs="*", default=[], help="raw files of the runs under MPS")
    a = ap.parse_args()
    for key, title in PLACEMENTS:
        paths = getattr(a, key)
        if paths:
            r, notes = read(paths)
            pcts = sorted({w.split("=", 1)[1] for n in notes if n.startswith("# mode")
                           for w in n.split() if w.startswith("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=")
                           and not w.endswith("(unset)")})
            if pcts:
                title += " (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s)" % ",".join(pcts)
            tables(title, r, notes)


if __name__ == "__main__":
    main()
