#!/bin/bash
# The device-API probe (bench_dev_probe.cu: experiments E1-E9, Ea, Eb on why some
# device rows trail NVSHMEM; docs/device.md "Measured"), 2 PEs on GPU 0:
#  1. builds the library (if BUILD_DIR has none yet, or incrementally) and the
#     probe, unless PREBUILT=1 (BUILD_DIR then holds tools/ushrun and
#     bench_dev_probe from BENCH=1 bench/cuda/carry_build.sh, same nvcc);
#  2. starts a private MPS control daemon (its own pipe and log folders) and
#     runs the probe with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 per PE, so device
#     waits are allowed; the daemon quits on any exit (trap);
#  3. saves the raw output (probe.txt: R lines, then a summary) and, where
#     cuobjdump exists, the SASS of the E1 kernels (e1_sass.txt: does an
#     ld.acquire come with CCTL.IVALL?) and of the E2 kernels (e2_sass.txt).
# Never changes GPU settings (no nvidia-smi -c): MPS works in the default compute mode.
# usage: bash bench/cuda/probe_run.sh BUILD_DIR OUTDIR [MAX_BYTES (default 1 GiB)]
# env: PREBUILT=1, PROBE_EXPS (default 0123456789ab: which experiments)
set -u
B=${1:?usage: probe_run.sh BUILD_DIR OUTDIR [MAX_BYTES]}
O=${2:?usage: probe_run.sh BUILD_DIR OUTDIR [MAX_BYTES]}
MAX=${3:-1073741824}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/common.sh"
mkdir -p "$B" "$O" || exit 1
B=$(cd "$B" && pwd)
O=$(cd "$O" && pwd)
# heap: two MAX_BYTES buffers per PE, E3's 130 MiB of counters, and room
HEAP_MB=$((MAX * 2 / 1048576 + 1024))
t_start=$SECONDS

gpu_info >"$O/info.txt" 2>&1
cat "$O/info.txt"
if [ "${PREBUILT:-0}" != 1 ]; then
  if [ ! -f "$B/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$B" -DUSHMEM_BUILD_PYTHON=OFF >"$O/build.log" 2>&1 ||
      { tail -40 "$O/build.log"; exit 1; }
  fi
  cmake --build "$B" -j"$(nproc)" >>"$O/build.log" 2>&1 || { tail -40 "$O/build.log"; exit 1; }
  build_ushmem_benches "$B" "$O/build.log" bench_dev_probe || { tail -40 "$O/build.log"; exit 1; }
fi
if [ ! -x "$B/bench_dev_probe" ] || [ ! -x "$B/tools/ushrun" ]; then
  echo "$B has no bench_dev_probe or tools/ushrun"; exit 1
fi
echo "built in $((SECONDS - t_start)) s"

# The SASS first: it needs no GPU, and it is there even if the run fails.
if command -v cuobjdump >/dev/null; then
  cuobjdump -sass "$B/bench_dev_probe" >"$O/sass_all.txt" 2>&1
  # cuobjdump starts each kernel with "Function : <mangled name>"
  for k in e1 e2; do
    awk -v pat="Function : .*${k}_" '/Function : /{on = ($0 ~ pat)} on' "$O/sass_all.txt" \
      >"$O/${k}_sass.txt"
  done
  gzip -f "$O/sass_all.txt" 2>/dev/null
  # one line per E1 kernel: its loads, stores, atomics, fences, cache controls and
  # clock reads (CS2R) in program order
  awk '/Function : /{if (f) print f ":" s; f = $3; s = ""}
       /CCTL|MEMBAR|FENCE|ERRBAR|LDG|ATOM|RED|STG|STS|CS2R/ {
         for (i = 1; i <= NF; i++) if ($i ~ /^(CCTL|MEMBAR|FENCE|ERRBAR|LDG|ATOM|RED|STG|STS|CS2R)/) s = s " " $i
       }
       END {if (f) print f ":" s}' "$O/e1_sass.txt" |
    if command -v c++filt >/dev/null; then c++filt; else cat; fi >"$O/e1_sass_summary.txt"
  echo "SASS of the E1 kernels: $O/e1_sass.txt (summary: e1_sass_summary.txt)"
else
  echo "cuobjdump not found: no SASS saved"
fi

if ! command -v nvidia-cuda-mps-control >/dev/null; then
  echo "nvidia-cuda-mps-control is not on PATH: cannot run under MPS"; exit 1
fi
trap mps_quit EXIT
trap 'exit 130' INT TERM
mps_start probe || exit 1
export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
echo "== under MPS ($MPSDIR), CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50"
t0=$SECONDS
env USHMEM_MPS=1 USHMEM_DEVICE=0 USHMEM_DEVICE_HEAP_SIZE=${HEAP_MB}M USHMEM_DEVICE_WAIT_TIMEOUT=20 \
  timeout 300 "$B/tools/ushrun" --timeout 240 -n 2 "$B/bench_dev_probe" "$MAX" 2>&1 |
  tee "$O/probe.txt"
rc=${PIPESTATUS[0]}
echo "bench_dev_probe: exit $rc, $((SECONDS - t0)) s" | tee -a "$O/probe.txt"
mps_quit
fails=$(grep -c '^# FAILED' "$O/probe.txt")
echo "total $((SECONDS - t_start)) s; $fails variant(s) failed their data check; raw output in $O"
[ "$rc" = 0 ]
