#!/bin/bash
# The staged proxy against its floor, in one run: plain MPI between host
# buffers (mpi_floor), the host API to a mapped peer, and the host API to a
# peer on another pretend host (USHMEM_FAKE_HOSTS=2: through the proxy). With
# a GPU (USHMEM_DEVICE set) the symmetric memory is the device heap; without,
# host memory goes through the proxy with USHMEM_PROXY_HOST=1.
# usage: bench/proxy_run.sh BUILD [OUTDIR] [MAX_BYTES]
set -u
B=${1:?usage: proxy_run.sh BUILD [OUTDIR] [MAX_BYTES]}
O=${2:-/tmp/ushmem-proxy-bench}
MAX=${3:-268435456}
mkdir -p "$O"
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader -n 2"
export SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-1G} USHMEM_DEVICE_HEAP_SIZE=${USHMEM_DEVICE_HEAP_SIZE:-1G}
extra=""
[ -z "${USHMEM_DEVICE:-}" ] && extra="USHMEM_PROXY_HOST=1"
timeout 300 $MPIRUN "$B/bench/mpi_floor" "$MAX" >"$O/floor.txt" 2>&1 || echo "mpi_floor failed: $(tail -2 "$O/floor.txt")"
timeout 300 $MPIRUN "$B/bench/proxy_bench" "$MAX" >"$O/mapped.txt" 2>&1 || echo "mapped run failed: $(tail -2 "$O/mapped.txt")"
timeout 300 env USHMEM_FAKE_HOSTS=2 $extra $MPIRUN "$B/bench/proxy_bench" "$MAX" >"$O/proxy.txt" 2>&1 ||
  echo "proxy run failed: $(tail -2 "$O/proxy.txt")"
/usr/bin/python3 - "$O" <<'PY'
import sys, re
o = sys.argv[1]
def load(name):
    rows = {}
    for line in open(f"{o}/{name}.txt", errors="replace"):
        f = line.split()
        if len(f) == 2 and re.match(r"^[a-z_0-9+]+$", f[0]):
            rows[f[0]] = float(f[1])
        elif len(f) == 3 and f[0].endswith("GBps"):
            rows[(f[0], int(f[1]))] = float(f[2])
    return rows
fl, ma, px = load("floor"), load("mapped"), load("proxy")
print(open(f"{o}/proxy.txt").readline().strip())
print("| row | proxy (other host) | mapped peer | MPI floor | proxy - floor or proxy / floor |")
print("|---|---|---|---|---|")
def row(name, key, fkey, kind):
    p, m, f = px.get(key), ma.get(key), fl.get(fkey) if fkey else None
    fmt = lambda v: "-" if v is None else f"{v:.2f}"
    if p is not None and f is not None:
        rel = f"+{p - f:.2f} µs" if kind == "lat" else f"{p / f:.2f}x"
    else:
        rel = "-"
    print(f"| {name} | {fmt(p)} | {fmt(m)} | {fmt(f)} | {rel} |")
row("put 8 B + quiet (µs)", "put8+quiet_us", "mpi_put8+flush_us", "lat")
row("get 8 B (µs)", "get8_us", "mpi_put8+flush_us", "lat")
row("fetch_add 64-bit (µs)", "fetch_add_us", "mpi_put8+flush_us", "lat")
row("put_signal round trip (µs; floor: MPI ping-pong)", "put_signal_rtt_us", "mpi_pingpong_rtt_us", "rtt")
for k in sorted(k for k in px if isinstance(k, tuple)):
    n = k[1]
    label = f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1024 else f"{n} B"
    row(f"put bandwidth {label} (GB/s)", k, ("mpi_put_bw_GBps", n), "bw")
PY
