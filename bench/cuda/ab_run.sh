#!/bin/bash
# Same-run comparison of builds of bench_dev_ushmem or bench_dev_coll (say,
# before and after a header change): runs each binary in turn ROUNDS times
# (default 3) with NPES PEs (default 2) on GPU 0 under a private MPS daemon at
# 100 / NPES % per PE, as dev_run.sh does, and prints each row's median over
# the rounds for every binary and its ratio to the first. bench_dev_coll reads
# COLL_MAX and COLL_OPS from the environment and ignores MAXBW. Each run
# allocates its heap anew, so a row that moves with where its words land moves
# for every binary alike; what stays is the code's difference. All binaries
# must be built against the same library. Also writes each binary's SASS of
# the kernels named in SASS_FUNS (cuobjdump -fun, comma-separated) to OUTDIR.
# Round r starts with binary r (mod their number): use as many rounds as
# binaries, or a multiple, so that each leads equally often.
#   bench/cuda/ab_run.sh BUILD_DIR OUTDIR MAXBW BIN...     (first BIN: the base)
set -u
B=$1 O=$2 MAX=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
mkdir -p "$O"
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
if [ -n "${SASS_FUNS:-}" ]; then
  for bin in "$@"; do
    IFS=, read -ra funs <<<"$SASS_FUNS"
    for f in "${funs[@]}"; do
      cuobjdump -sass -fun "$f" "$bin" >"$O/$(basename "$bin").$f.sass" 2>&1
    done
  done
fi
trap mps_quit EXIT
mps_start ab || exit 1
n=${NPES:-2}
export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$((100 / n))
# Each round starts one binary further along: whichever binary ran first in a
# round was 6-8% faster in the small put_lat rows (2026-12-06, H100: the same
# binary twice, 1.07-1.08x apart), so a fixed order favoured the base.
bins=("$@")
for r in $(seq "${ROUNDS:-3}"); do
  for k in $(seq 0 $((${#bins[@]} - 1))); do
    bin=${bins[$(((k + r - 1) % ${#bins[@]}))]}
    USHMEM_MPS=1 USHMEM_DEVICE=0 USHMEM_DEVICE_HEAP_SIZE=${HEAP_MB:-1024}M \
      timeout 120 "$B/tools/ushrun" --timeout 100 -n "$n" "$bin" "$MAX" \
      >"$O/$(basename "$bin").$r.txt" 2>&1 || echo "$(basename "$bin") round $r: exit $?"
  done
done
mps_quit
# A variant that moves wrong data (the benchmark's put_bw check) or fails must not pass as a
# number: its lines go first.
grep -H -E "check failed|FAILED|error|Error|wrong" "$O"/*.txt 2>/dev/null | head -20 |
  sed 's/^/# PROBLEM: /'
names=()
for bin in "$@"; do names+=("$(basename "$bin")"); done
/usr/bin/python3 - "$O" "${ROUNDS:-3}" "${names[@]}" <<'PY'
import sys, statistics, collections
o, n, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = {v: collections.defaultdict(list) for v in names}
order = []
for v in names:
    for r in range(1, n + 1):
        try:
            lines = open(f"{o}/{v}.{r}.txt", errors="replace").readlines()
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) >= 5 and f[0] == "R":
                k = " ".join(f[1:4])
                rows[v][k].append(float(f[4]))
                if k not in order:
                    order.append(k)
print("| row | " + " | ".join(names) + " | " + " | ".join(f"{v} / {names[0]}" for v in names[1:]) + " |")
print("|---" * (1 + 2 * len(names) - 1) + "|")
for k in order:
    med = [statistics.median(rows[v][k]) if rows[v].get(k) else float("nan") for v in names]
    print(f"| {k} | " + " | ".join(f"{m:.3f}" for m in med) + " | " +
          " | ".join(f"{m / med[0]:.2f}" for m in med[1:]) + " |")
PY
