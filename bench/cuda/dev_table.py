#!/usr/bin/env python3
"""Join the R lines of bench_dev_ushmem / bench_dev_nvshmem into markdown tables
(device API, 2 PEs on one GPU), with ushmem / NVSHMEM ratios.

usage: dev_table.py --ushmem MPS.txt [--nvshmem MPS.txt] [--ushmem-nomps TXT]
                    [--nvshmem-nomps TXT] [--coll-ushmem TXT]... [--coll-nvshmem TXT]...
(--coll-*: bench_dev_coll / bench_dev_coll_nvshmem outputs, "R coll_<name> block<N> <bytes> <µs>",
one table per PE count)
Lines: "R <bench> <variant> <bytes> <value>" (µs, or GB/s for *_bw); "# skipped:"
and "# note:" lines are repeated under the tables. A missing file or number
shows as "-"."""
import argparse
import sys


def load(path):
    r, notes = {}, []
    if not path:
        return r, notes
    try:
        f = open(path, errors="replace")
    except OSError as e:
        notes.append("(%s: %s)" % (path, e.strerror))
        return r, notes
    with f:
        for line in f:
            p = line.split()
            if len(p) == 5 and p[0] == "R":
                try:
                    r[(p[1], p[2], int(p[3]))] = float(p[4])
                except ValueError:
                    pass
            elif line.startswith(("# skipped", "# note", "# floor")):
                notes.append(line.strip())
    return r, notes


def f(v, fmt="%.3f"):
    return "-" if v is None else fmt % v


def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else "%.2f" % (a / b)


def human(n):
    for u, s in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << s and n % (1 << s) == 0:
            return "%d %s" % (n >> s, u)
    return "%d B" % n


def p2p_tables(U, N, UX, NX, nx, g, extra_h, extra_s):
    # 1. latencies
    print("Latency, µs per operation or round trip (lower is better; ratio < 1: ushmem faster). "
          "MPS: both PEs at CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50.")
    print()
    print("| measurement | ushmem (MPS) | NVSHMEM (MPS) | ushmem / NVSHMEM | ushmem no MPS |" + extra_h)
    print("|---|---|---|---|---|" + extra_s)
    rows = (
        ("floor: 1-thread flag round trip, 2 streams of one process (no library)", "floor", "flag_rtt", 0),
        ("p ping-pong round trip (uint64 p + wait_until, 1 thread)", "p_pingpong", "thread", 8),
        ("putmem_signal ping-pong round trip (8 B, 1 thread)", "put_signal_pingpong", "thread", 8),
        ("putmem_signal ping-pong round trip (8 B, block of 512)", "put_signal_pingpong", "block", 8),
        ("fetch_add 64-bit on the peer's word (1 thread; median over 16 words 4 KiB apart)",
         "fetch_add_lat", "thread", 8),
        ("fetch_add, the fastest of the 16 words", "fetch_add_lat", "fastest", 8),
        ("fetch_add, the slowest of the 16 words", "fetch_add_lat", "slowest", 8),
        ("barrier_all_block (1 CTA of 512 per PE)", "barrier_all_lat", "block", 0),
    )
    for name, b, v, s in rows:
        u, n = g(U, b, v, s), g(N, b, v, s)
        line = "| %s | %s | %s | %s | %s |" % (name, f(u), f(n), ratio(u, n), f(g(UX, b, v, s)))
        if nx:
            line += " %s |" % f(g(NX, b, v, s))
        print(line)
    print()

    # 2. put + quiet latency
    print("putmem_nbi + quiet latency, µs per iteration (1 CTA: 1 thread, 1 warp, or a block of 512).")
    print()
    print("| group | size | ushmem (MPS) | NVSHMEM (MPS) | ushmem / NVSHMEM | ushmem no MPS |" + extra_h)
    print("|---|---|---|---|---|---|" + extra_s)
    for v in ("thread", "warp", "block"):
        sizes = sorted({k[2] for d in (U, N, UX, NX) for k in d if k[0] == "put_lat" and k[1] == v})
        for s in sizes:
            u, n = g(U, "put_lat", v, s), g(N, "put_lat", v, s)
            line = "| %s | %s | %s | %s | %s | %s |" % (v, human(s), f(u), f(n), ratio(u, n),
                                                       f(g(UX, "put_lat", v, s)))
            if nx:
                line += " %s |" % f(g(NX, "put_lat", v, s))
            print(line)
    print()

    # 3. bandwidth, one table per CTA count
    variants = sorted({k[1] for d in (U, N, UX, NX) for k in d if k[0] == "put_bw"},
                      key=lambda x: int(x[3:]) if x[3:].isdigit() else 0)
    for v in variants:
        print("putmem_nbi_block bandwidth, %s x 512 threads, GB/s (higher is better; ratio > 1: "
              "ushmem faster). Every iteration copies the same bytes, so sizes whose source and "
              "destination fit in L2 (up to 16 MiB on an H200) run from cache, as in NVSHMEM's "
              "shmem_put_bw. memcpy: one cudaMemcpyAsync D2D to the peer's mapping per "
              "iteration, enqueued by the host (small sizes measure the enqueue rate)." % v[3:])
        print()
        print("| size | ushmem (MPS) | NVSHMEM (MPS) | ushmem / NVSHMEM | memcpy (MPS) | "
              "ushmem / memcpy | ushmem no MPS | memcpy no MPS | ushmem / memcpy, no MPS |" + extra_h)
        print("|---|---|---|---|---|---|---|---|---|" + extra_s)
        sizes = sorted({k[2] for d in (U, N, UX, NX) for k in d if k[0] == "put_bw" and k[1] == v})
        for s in sizes:
            u, n = g(U, "put_bw", v, s), g(N, "put_bw", v, s)
            m, ux, mx = g(U, "memcpy_bw", "d2d", s), g(UX, "put_bw", v, s), g(UX, "memcpy_bw", "d2d", s)
            line = "| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                human(s), f(u, "%.2f"), f(n, "%.2f"), ratio(u, n), f(m, "%.2f"), ratio(u, m),
                f(ux, "%.2f"), f(mx, "%.2f"), ratio(ux, mx))
            if nx:
                line += " %s |" % f(g(NX, "put_bw", v, s), "%.2f")
            print(line)
        print()



def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ushmem", required=True, help="bench_dev_ushmem output under MPS")
    ap.add_argument("--nvshmem", help="bench_dev_nvshmem output under MPS")
    ap.add_argument("--ushmem-nomps", help="bench_dev_ushmem output without MPS")
    ap.add_argument("--nvshmem-nomps", help="bench_dev_nvshmem output without MPS")
    ap.add_argument("--coll-ushmem", action="append", default=[],
                    help="bench_dev_coll output (repeatable: one per PE count)")
    ap.add_argument("--coll-nvshmem", action="append", default=[],
                    help="bench_dev_coll_nvshmem output (repeatable)")
    a = ap.parse_args()
    U, un = load(a.ushmem)
    N, nn = load(a.nvshmem)
    UX, uxn = load(a.ushmem_nomps)
    NX, nxn = load(a.nvshmem_nomps) if a.nvshmem_nomps else ({}, [])
    nx = bool(a.nvshmem_nomps)

    def g(d, bench, variant, size):
        return d.get((bench, variant, size))

    extra_h = " NVSHMEM no MPS |" if nx else ""
    extra_s = "---|" if nx else ""

    # 1-3 only when the point-to-point programs ran (dev_run.sh DEV_P2P=0: collectives alone)
    if U or N:
        p2p_tables(U, N, UX, NX, nx, g, extra_h, extra_s)

    # 4. device collectives, one table per PE count
    CU, CN, cun, cnn = {}, {}, [], []
    for paths, d, notes in ((a.coll_ushmem, CU, cun), (a.coll_nvshmem, CN, cnn)):
        for path in paths:
            r, nt = load(path)
            d.update(r)
            notes.extend(nt)
    names = ("alltoall", "broadcast", "fcollect", "sum", "alltoallv")
    variants = sorted({k[1] for d in (CU, CN) for k in d if k[0].startswith("coll_")},
                      key=lambda x: int(x[5:]) if x[5:].isdigit() else 0)
    for v in variants:
        print("Device collectives, %s PEs, block form (1 CTA of 512 per PE), µs per collective "
              "(lower is better; ratio < 1: ushmem faster). Bytes per PE: alltoall(v) the block "
              "for each PE, broadcast the message, fcollect each PE's part, sum the float "
              "array." % v[5:])
        print()
        print("| collective | bytes per PE | ushmem | NVSHMEM | ushmem / NVSHMEM |")
        print("|---|---|---|---|---|")
        for name in names:
            b = "coll_" + name
            sizes = sorted({k[2] for d in (CU, CN) for k in d if k[0] == b and k[1] == v})
            for s in sizes:
                u, n = g(CU, b, v, s), g(CN, b, v, s)
                print("| %s | %s | %s | %s | %s |" % (name, human(s), f(u), f(n), ratio(u, n)))
        print()

    for label, notes in (("ushmem (MPS)", un), ("NVSHMEM (MPS)", nn), ("ushmem no MPS", uxn),
                         ("NVSHMEM no MPS", nxn), ("collectives, ushmem", cun),
                         ("collectives, NVSHMEM", cnn)):
        for n in notes:
            print("- %s: %s" % (label, n.lstrip("# ")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
