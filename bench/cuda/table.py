#!/usr/bin/env python3
"""Turn the R lines of bench_ushmem / bench_nvshmem into the comparison tables
(markdown) with ratios against NVSHMEM and the raw CUDA IPC copy."""
import sys

r = {}
for path in sys.argv[1:]:
    for line in open(path):
        p = line.split()
        if len(p) == 5 and p[0] == "R":
            r[(p[1], p[2], int(p[3]))] = float(p[4])


def g(impl, metric, size=0):
    return r.get((impl, metric, size))


def f(v, fmt="%.2f"):
    return "-" if v is None else fmt % v


def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else "%.2f" % (a / b)


def human(n):
    for u, s in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << s:
            return "%d %s" % (n >> s, u)
    return "%d B" % n


sizes = sorted({k[2] for k in r if k[1] == "put_GBps"})
# Two GPUs (bench/cuda/multi_gpu.sh): bench_peer's raw cudaMemcpyPeerAsync is
# one more baseline column; absent on one GPU, so that table stays as it was.
peer = any(k[0] == "raw_peer" for k in r)
print("| size | ushmem µs/op | ushmem GB/s | NVSHMEM GB/s | raw IPC copy GB/s |%s ushmem / NVSHMEM | ushmem / raw IPC |%s"
      % (" raw cudaMemcpyPeer GB/s |" if peer else "", " ushmem / raw peer |" if peer else ""))
print("|---|---|---|---|---|---|---|" + ("---|---|" if peer else ""))
for s in sizes:
    u, n, i = g("ushmem", "put_GBps", s), g("nvshmem", "put_GBps", s), g("raw_ipc", "put_GBps", s)
    p = g("raw_peer", "put_GBps", s)
    print("| %s | %s | %s | %s | %s |%s %s | %s |%s" % (human(s), f(g("ushmem", "put_us", s)), f(u), f(n), f(i),
                                                " %s |" % f(p) if peer else "", ratio(u, n), ratio(u, i),
                                                " %s |" % ratio(u, p) if peer else ""))
print()
print("| small put (8 B), µs per op in stream | value |")
print("|---|---|")
for impl, name in (("ushmem", "ushmem (as shipped: copy kernel <= 16 MiB)"),
                   ("ushmem_memcpy", "ushmem, copy kernel off (cuMemcpyDtoDAsync)"),
                   ("ushmem_legacy_ipc", "ushmem, USHMEM_CUDA_IPC=legacy"),
                   ("nvshmem", "NVSHMEM"), ("raw_map", "raw copy, VMM mapping"), ("raw_ipc", "raw copy, cudaIpc mapping"),
                   ("raw_peer", "raw cudaMemcpyPeerAsync (two GPUs)")):
    if impl != "raw_peer" or peer:
        print("| %s | %s |" % (name, f(g(impl, "put_us", 8), "%.3f")))
print()
print("| measurement | ushmem | NVSHMEM | ushmem / NVSHMEM | target |")
print("|---|---|---|---|---|")
rows = (("barrier_all_on_stream (µs, GPU time)", "barrier_all_on_stream_us", 0, "<= 20"),
        ("barrier_all_on_stream (µs, host wall)", "barrier_all_on_stream_wall_us", 0, ""),
        ("host barrier_all (µs)", "host_barrier_all_us", 0, "<= 2"),
        ("8-byte put + stream sync (µs)", "put8_sync_us", 8, "<= 15"))
for name, m, s, t in rows:
    u, n = g("ushmem", m, s), g("nvshmem", m, s)
    print("| %s | %s | %s | %s | %s |" % (name, f(u, "%.3f"), f(n, "%.3f"), ratio(u, n), t))
for impl in ("ushmem_memcpy", "ushmem_legacy_ipc", "raw_ipc", "raw_peer"):
    k = g(impl, "put8_sync_us", 8)
    if k is not None:
        print("| 8-byte put + stream sync, %s (µs) | %s | | | |" % (impl, f(k, "%.3f")))
print()
print("| size | ushmem, USHMEM_CUDA_IPC=legacy GB/s | raw copy on ushmem's VMM mapping GB/s | ushmem, copy kernel off GB/s | ushmem, copy kernel always GB/s |")
print("|---|---|---|---|---|")
for s in sizes:
    print("| %s | %s | %s | %s | %s |" % (human(s), f(g("ushmem_legacy_ipc", "put_GBps", s)), f(g("raw_map", "put_GBps", s)),
                                   f(g("ushmem_memcpy", "put_GBps", s)), f(g("ushmem_kernel", "put_GBps", s))))

csizes = sorted({k[2] for k in r if k[1] in ("alltoall_us", "broadcast_us")})
if csizes:
    print()
    print("| bytes per PE block | ushmem alltoall µs | NVSHMEM alltoall µs | ushmem / NVSHMEM | ushmem broadcast µs | NVSHMEM broadcast µs | ushmem / NVSHMEM |")
    print("|---|---|---|---|---|---|---|")
    for s in csizes:
        ua, na = g("ushmem", "alltoall_us", s), g("nvshmem", "alltoall_us", s)
        ub, nb = g("ushmem", "broadcast_us", s), g("nvshmem", "broadcast_us", s)
        print("| %s | %s | %s | %s | %s | %s | %s |" % (human(s), f(ua, "%.3f"), f(na, "%.3f"), ratio(ua, na),
                                                   f(ub, "%.3f"), f(nb, "%.3f"), ratio(ub, nb)))
