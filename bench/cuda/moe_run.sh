#!/bin/bash
# MoE dispatch/combine benchmark (issue 21): ushmem (bench_moe_ushmem.cu)
# against NVSHMEM (bench_moe_nvshmem.cu), N PEs on GPU 0 for each N of MOE_NPES
# (default "2 4 8"), in one run:
#  1. builds the library (if BUILD_DIR has none yet, or incrementally) and
#     bench_moe_ushmem, and bench_moe_nvshmem (NVSHMEM from the
#     nvidia-nvshmem-cu13 Python package, common.sh's find_nvshmem);
#  2. starts a private MPS control daemon (its own pipe and log folders) and,
#     for each N, runs both programs at CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100/N
#     with the same options (MOE_ARGS): ushmem with device waits allowed,
#     NVSHMEM in full MPG; the daemon quits at the end (also on any exit: trap);
#  3. prints the table (moe_table.py: best, mean, median, p90, max per phase,
#     ushmem / NVSHMEM for best and mean); raw output and table are saved in OUTDIR.
# A failed run (a wrong result is one) is reported and the script goes on (its
# cells show "-"); exit status 1 if any failed. Never changes GPU settings (no
# nvidia-smi -c): MPS works in the default compute mode.
# PREBUILT=1: BUILD_DIR already holds tools/ushrun and bench_moe_ushmem, built
# elsewhere with the same nvcc (BENCH=1 bench/cuda/carry_build.sh); only the
# NVSHMEM program is compiled here.
# usage: bash bench/cuda/moe_run.sh BUILD_DIR OUTDIR
# env: MOE_NPES ("2 4 8"), MOE_ARGS (options for both programs, e.g. "-t 4096 -r 100";
#      see moe_usage in moe_common.cuh), MOE_HEAP_MB (1024: each PE's device heap,
#      both libraries), MOE_RUN_TIMEOUT (300 s per program), PREBUILT,
#      MOE_ALSO_RELEASE=1 (ushmem once more with MOE_SIGNAL=release: the
#      dispatch signals as releases; prints its R lines)
set -u
B=${1:?usage: moe_run.sh BUILD_DIR OUTDIR}
O=${2:?usage: moe_run.sh BUILD_DIR OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/common.sh"
mkdir -p "$B" "$O" || exit 1
B=$(cd "$B" && pwd) || exit 1
O=$(cd "$O" && pwd) || exit 1
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
# The runs set these themselves; none leaks in from the caller.
unset USHMEM_MPS CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
NPES_LIST=${MOE_NPES:-2 4 8}
read -r -a ARGS <<<"${MOE_ARGS:-}"
HEAP_MB=${MOE_HEAP_MB:-1024}
T_RUN=${MOE_RUN_TIMEOUT:-300}
PY=python3
command -v python3 >/dev/null || PY=/usr/bin/python3
t_start=$SECONDS

# ---- build ----
{
  gpu_info
  echo "MOE_NPES=\"$NPES_LIST\" MOE_ARGS=\"${MOE_ARGS:-}\" heaps ${HEAP_MB} MiB per PE"
} >"$O/info.txt" 2>&1
cat "$O/info.txt"
: >"$O/build.log"
if [ "${PREBUILT:-0}" != 1 ]; then
  if [ ! -f "$B/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUSHMEM_BUILD_PYTHON=OFF \
      >>"$O/build.log" 2>&1 || { tail -40 "$O/build.log"; exit 1; }
  fi
  cmake --build "$B" -j"$(nproc)" --target ushmem_static ushrun >>"$O/build.log" 2>&1 ||
    { tail -40 "$O/build.log"; exit 1; }
  build_ushmem_benches "$B" "$O/build.log" bench_moe_ushmem || { tail -40 "$O/build.log"; exit 1; }
elif [ ! -x "$B/bench_moe_ushmem" ] || [ ! -x "$B/tools/ushrun" ]; then
  echo "PREBUILT=1, but $B has no bench_moe_ushmem or tools/ushrun (BENCH=1 bench/cuda/carry_build.sh)"
  exit 1
fi
find_nvshmem
if [ -n "$NV" ] && [ -d "$NV/include" ]; then
  nvcc -O2 -std=c++17 -arch=sm_90 -rdc=true -I"$NV/include" "$here/bench_moe_nvshmem.cu" \
      -o "$B/bench_moe_nvshmem" -L"$NV/lib" -l:libnvshmem_host.so.3 -lnvshmem_device \
      -Xlinker -rpath="$NV/lib" >>"$O/build.log" 2>&1 ||
    { echo "bench_moe_nvshmem: build failed (its cells stay empty)"; tail -40 "$O/build.log"; NV=""; }
else
  echo "NVSHMEM (nvidia-nvshmem-cu13) not found: its cells stay empty"; NV=""
fi
echo "built in $((SECONDS - t_start)) s"

# ---- under MPS ----
if ! command -v nvidia-cuda-mps-control >/dev/null; then
  echo "nvidia-cuda-mps-control is not on PATH: cannot run under MPS"; exit 1
fi
trap mps_quit EXIT
trap 'exit 130' INT TERM
mps_start moebench || exit 1
fails=0
runs=()
finish() { # NAME N OUTFILE RC T0
  echo "$1 np$2: exit $4, $((SECONDS - $5)) s" | tee -a "$3"
  [ "$4" = 0 ] || fails=$((fails + 1))
}
# run_ushmem [VAR=VALUE...]: bench_moe_ushmem at $n PEs, $pct % each, under MPS
run_ushmem() {
  env CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$pct" USHMEM_MPS=1 USHMEM_DEVICE=0 \
    USHMEM_DEVICE_HEAP_SIZE="${HEAP_MB}M" "$@" \
    timeout "$T_RUN" "$B/tools/ushrun" --timeout $((T_RUN - 20)) -n "$n" \
    "$B/bench_moe_ushmem" ${ARGS[@]+"${ARGS[@]}"}
}
for n in $NPES_LIST; do
  pct=$((100 / n))
  echo "== $n PEs, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct ($MPSDIR)"
  u=$O/moe_ushmem_np$n.txt
  t0=$SECONDS
  run_ushmem 2>&1 | tee "$u"
  finish bench_moe_ushmem "$n" "$u" "${PIPESTATUS[0]}" "$t0"
  if [ "${MOE_ALSO_RELEASE:-0}" = 1 ]; then # the release-signal form too (its R lines only)
    t0=$SECONDS
    run_ushmem MOE_SIGNAL=release >"$O/moe_ushmem_release_np$n.txt" 2>&1
    finish "bench_moe_ushmem (MOE_SIGNAL=release)" "$n" "$O/moe_ushmem_release_np$n.txt" "$?" "$t0"
    grep "^R moe_" "$O/moe_ushmem_release_np$n.txt" | sed 's/^R /R release: /'
  fi
  v=$O/moe_nvshmem_np$n.txt
  : >"$v"
  if [ -n "$NV" ]; then
    t0=$SECONDS
    env CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$pct" LD_LIBRARY_PATH="$NV/lib:${LD_LIBRARY_PATH:-}" \
      NVSHMEM_SYMMETRIC_SIZE="${HEAP_MB}M" \
      timeout "$T_RUN" "$B/bench_moe_nvshmem" -n "$n" ${ARGS[@]+"${ARGS[@]}"} 2>&1 | tee "$v"
    finish bench_moe_nvshmem "$n" "$v" "${PIPESTATUS[0]}" "$t0"
  fi
  runs+=(--run "$n" "$u" "$v")
done
mps_quit

{
  echo "== $(date -u +%Y-%m-%dT%H:%MZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1), MoE dispatch/combine, all PEs on GPU 0 under MPS"
  echo
  "$PY" "$here/moe_table.py" ${runs[@]+"${runs[@]}"}
} | tee "$O/moe_table.md"
echo "total $((SECONDS - t_start)) s; $fails run(s) failed; raw output in $O"
[ "$fails" = 0 ]
