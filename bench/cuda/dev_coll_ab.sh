#!/bin/bash
# Same-run comparison of builds of bench_dev_coll (device collectives, block
# form), as ab_run.sh is for bench_dev_ushmem: NPES PEs on GPU 0 under a
# private MPS daemon at 100 / NPES percent each (as dev_run.sh runs them), each
# binary ROUNDS times, round r starting with binary r (mod their number: the
# first to run in a round has been seen to run faster), then every row's median
# over the rounds per binary and its ratio to the first binary. All binaries
# must be built against the same library (carry_build.sh AB_BASE / AB_VARIANTS
# with AB_BENCHES=bench_dev_coll).
#   bench/cuda/dev_coll_ab.sh BUILD_DIR OUTDIR BIN...     (first BIN: the base)
# env: NPES (4), ROUNDS (number of BINs), COLL_MAX (32768), COLL_OPS (all)
set -u
B=${1:?usage: dev_coll_ab.sh BUILD_DIR OUTDIR BIN...} O=${2:?}
shift 2
[ $# -gt 0 ] || { echo "usage: dev_coll_ab.sh BUILD_DIR OUTDIR BIN..."; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
mkdir -p "$O" || exit 1
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 COLL_MAX=${COLL_MAX:-32768}
n=${NPES:-4}
rounds=${ROUNDS:-$#}
trap mps_quit EXIT
mps_start devcollab || exit 1
export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$((100 / n))
bins=("$@")
for r in $(seq "$rounds"); do
  for k in $(seq 0 $((${#bins[@]} - 1))); do
    bin=${bins[$(((k + r - 1) % ${#bins[@]}))]}
    USHMEM_MPS=1 USHMEM_DEVICE=0 USHMEM_DEVICE_HEAP_SIZE=$((COLL_MAX * n * 2 / 1048576 + 256))M \
      timeout 150 "$B/tools/ushrun" --timeout 120 -n "$n" "$bin" \
      >"$O/$(basename "$bin").$r.txt" 2>&1 || echo "$(basename "$bin") round $r: exit $?"
  done
done
mps_quit
grep -H -E "FAILED|error|Error|wrong" "$O"/*.txt 2>/dev/null | head -20 | sed 's/^/# PROBLEM: /'
names=()
for bin in "$@"; do names+=("$(basename "$bin")"); done
/usr/bin/python3 - "$O" "$rounds" "$n" "${names[@]}" <<'PY'
import sys, statistics, collections
o, rounds, n, names = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
vals = collections.OrderedDict()
for i, name in enumerate(names):
    for r in range(1, rounds + 1):
        try:
            lines = open("%s/%s.%d.txt" % (o, name, r)).read().splitlines()
        except OSError:
            continue
        for ln in lines:
            p = ln.split()
            if len(p) == 5 and p[0] == "R":
                vals.setdefault((p[1], int(p[3])), [[] for _ in names])[i].append(float(p[4]))
print("### device collectives, %s PEs, block form: us per call, median of %d rounds" % (n, rounds))
print()
print("| collective | bytes | " + " | ".join(names) + " | " +
      " | ".join("%s / %s" % (x, names[0]) for x in names[1:]) + " |")
print("|---|---|" + "---|" * (2 * len(names) - 1))
for (c, b), per in vals.items():
    med = [statistics.median(v) if v else None for v in per]
    cells = ["%.3f" % m if m is not None else "-" for m in med]
    rat = ["%.2f" % (m / med[0]) if m is not None and med[0] else "-" for m in med[1:]]
    print("| %s | %d | %s | %s |" % (c.replace("coll_", ""), b, " | ".join(cells), " | ".join(rat)))
PY
