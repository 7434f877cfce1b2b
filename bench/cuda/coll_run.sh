#!/bin/bash
# Stream-ordered collectives on device memory (issue 13): ushmem's algorithms
# (USHMEM_CUDA_COLL=auto|copy|leader|kernel) against NVSHMEM, NPES PEs (default
# 2) on GPU 0, without MPS and under MPS, in one run:
#  1. builds bench_coll_ushmem.cu against BUILD_DIR/libushmem.a (BUILD_DIR must
#     already hold the built library and tools/ushrun) and bench_coll_nvshmem.cu
#     (NVSHMEM from the nvidia-nvshmem-cu13 Python package, as run.sh);
#  2. without MPS: ushmem (auto), ushmem_copy, ushmem_leader, NVSHMEM;
#  3. under a private MPS control daemon (own pipe and log folders, as dev_run.sh;
#     CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = 100 / NPES, 50 for 2 PEs): ushmem (auto),
#     ushmem_copy, ushmem_leader, ushmem_kernel, NVSHMEM; the daemon is told to
#     quit at the end (also on any exit: trap);
#  4. prints the tables (coll_table.py); raw output and tables are saved in OUTDIR.
# Every program runs under a timeout (COLL_RUN_TIMEOUT s, default 120); a failed
# run is reported and the script goes on (its columns show "-"); exit status 1
# if any run failed. Never changes GPU settings (no nvidia-smi -c).
# Time: about 10-20 s per ushmem run and 20-60 s per NVSHMEM run (its init, and
# without MPS each of its collectives takes a GPU time slice; repetitions are
# capped at COLL_REP_MS, default 100 ms) with COLL_MAX=4 MiB: 2-4 minutes in all.
# The stream barrier also runs under each USHMEM_CUDA_BARRIER algorithm
# (rounds, mesh; kernel under MPS: barrier rows only, labelled ushmem_bar_ALG).
# PREBUILT=1: BUILD_DIR already holds bench_coll_ushmem (carry_build.sh BENCH=1);
# COLL_OPS=none: barriers only.
# usage: bash bench/cuda/coll_run.sh BUILD_DIR OUTDIR
# env: NPES (2), COLL_MAX (4194304 bytes per PE), COLL_OPS, COLL_REP_MS, COLL_RUN_TIMEOUT
set -u
B=${1:?usage: coll_run.sh BUILD_DIR OUTDIR}
O=${2:?usage: coll_run.sh BUILD_DIR OUTDIR}
NPES=${NPES:-2}
COLL_MAX=${COLL_MAX:-4194304}
T_RUN=${COLL_RUN_TIMEOUT:-120}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/common.sh"
mkdir -p "$O" || exit 1
B=$(cd "$B" && pwd) || exit 1
O=$(cd "$O" && pwd) || exit 1
if [ ! -x "$B/tools/ushrun" ] ||
  { [ ! -f "$B/libushmem.a" ] && { [ "${PREBUILT:-0}" != 1 ] || [ ! -x "$B/bench_coll_ushmem" ]; }; }; then
  echo "$B has no libushmem.a (or, with PREBUILT=1, bench_coll_ushmem) or tools/ushrun: build first"
  exit 1
fi
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 COLL_MAX NPES
# The runs set these themselves; none leaks in from the caller.
unset USHMEM_CUDA_COLL USHMEM_MPS CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY \
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
# heaps: two buffers of COLL_MAX x NPES bytes per PE, plus room
HEAP_MB=$((COLL_MAX * NPES * 2 / 1048576 + 256))
NV_HEAP_MB=$((COLL_MAX * NPES * 2 / 1048576 + 512))
PY=python3
command -v python3 >/dev/null || PY=/usr/bin/python3
t_start=$SECONDS

# ---- build ----
{
  gpu_info
  echo "NPES=$NPES COLL_MAX=$COLL_MAX USHMEM_DEVICE_HEAP_SIZE=${HEAP_MB}M NVSHMEM_SYMMETRIC_SIZE=${NV_HEAP_MB}M"
} >"$O/info.txt" 2>&1
cat "$O/info.txt"
: >"$O/build.log"
if [ "${PREBUILT:-0}" = 1 ] && [ -x "$B/bench_coll_ushmem" ]; then
  echo "PREBUILT=1: using $B/bench_coll_ushmem"
else
  nvcc -O2 -arch=sm_90 -I"$root/include" "$here/bench_coll_ushmem.cu" -o "$B/bench_coll_ushmem" \
      "$B/libushmem.a" -ldl -lpthread >>"$O/build.log" 2>&1 ||
    { echo "bench_coll_ushmem: build failed"; tail -40 "$O/build.log"; exit 1; }
fi
find_nvshmem
if [ -n "$NV" ] && [ -d "$NV/include" ]; then
  nvcc -O2 -arch=sm_90 -rdc=true -I"$NV/include" "$here/bench_coll_nvshmem.cu" \
      -o "$B/bench_coll_nvshmem" -L"$NV/lib" -l:libnvshmem_host.so.3 -lnvshmem_device \
      -Xlinker -rpath="$NV/lib" >>"$O/build.log" 2>&1 ||
    { echo "bench_coll_nvshmem: build failed (its columns stay empty)"; tail -40 "$O/build.log"; NV=""; }
else
  echo "NVSHMEM (nvidia-nvshmem-cu13) not found: its columns stay empty"; NV=""
fi
echo "built in $((SECONDS - t_start)) s"

fails=0
failed=()
report() { # NAME RC T0 OUTFILE
  echo "$1: exit $2, $((SECONDS - $3)) s" | tee -a "$4"
  if [ "$2" != 0 ]; then
    fails=$((fails + 1))
    failed+=("$1 (exit $2)")
    grep -v '^R ' "$4" | tail -8
  fi
}
run_ushmem() { # PLACEMENT LABEL [VAR=VALUE...]
  local out="$O/$1_$2.txt" label=$2 t0=$SECONDS
  shift 2
  echo "-- $label $*"
  env "$@" USHMEM_DEVICE=0 USHMEM_DEVICE_HEAP_SIZE=${HEAP_MB}M \
    timeout -k 10 $((T_RUN + 20)) "$B/tools/ushrun" --timeout "$T_RUN" -n "$NPES" \
    "$B/bench_coll_ushmem" "$label" >"$out" 2>&1
  report "bench_coll_ushmem $label" $? "$t0" "$out"
}
run_nvshmem() { # PLACEMENT
  local out="$O/$1_nvshmem.txt" t0=$SECONDS
  if [ -z "$NV" ]; then : >"$out"; return; fi
  echo "-- nvshmem"
  LD_LIBRARY_PATH="$NV/lib:${LD_LIBRARY_PATH:-}" NVSHMEM_SYMMETRIC_SIZE=${NV_HEAP_MB}M \
    timeout -k 10 "$T_RUN" "$B/bench_coll_nvshmem" nvshmem >"$out" 2>&1
  local rc=$?
  # NVSHMEM 3.x refuses on-stream collectives for PEs sharing a GPU without
  # MPS ("limited MPG"): its columns stay empty there, not a failure.
  if [ "$rc" != 0 ] && [ "$1" = nomps ] && grep -q "not supported with limited MPG" "$out"; then
    echo "bench_coll_nvshmem: NVSHMEM refuses on-stream collectives without MPS (limited MPG)" |
      tee -a "$out"
    return
  fi
  report "bench_coll_nvshmem" $rc "$t0" "$out"
}

# ---- without MPS ----
if [ -e /tmp/nvidia-mps/control ]; then
  echo "note: a system MPS daemon (/tmp/nvidia-mps) is running; the runs 'without MPS' may join it"
fi
echo "== without MPS"
run_ushmem nomps ushmem
run_ushmem nomps ushmem_copy USHMEM_CUDA_COLL=copy
run_ushmem nomps ushmem_leader USHMEM_CUDA_COLL=leader
for a in rounds mesh; do
  run_ushmem nomps ushmem_bar_$a USHMEM_CUDA_BARRIER=$a COLL_OPS=none
done
run_nvshmem nomps

# ---- under MPS ----
trap mps_quit EXIT
trap 'exit 130' INT TERM
mps_ok=0
if ! command -v nvidia-cuda-mps-control >/dev/null; then
  echo "nvidia-cuda-mps-control is not on PATH: no runs under MPS"
  failed+=("MPS (no nvidia-cuda-mps-control)")
  fails=$((fails + 1))
else
  mps_start collbench && mps_ok=1
  if [ "$mps_ok" = 1 ]; then
    export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=${MPS_PCT:-$((100 / NPES))}
    echo "== under MPS ($MPSDIR), CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
    run_ushmem mps ushmem USHMEM_MPS=1
    run_ushmem mps ushmem_copy USHMEM_MPS=1 USHMEM_CUDA_COLL=copy
    run_ushmem mps ushmem_leader USHMEM_MPS=1 USHMEM_CUDA_COLL=leader
    run_ushmem mps ushmem_kernel USHMEM_MPS=1 USHMEM_CUDA_COLL=kernel
    for a in rounds mesh kernel; do
      run_ushmem mps ushmem_bar_$a USHMEM_MPS=1 USHMEM_CUDA_BARRIER=$a COLL_OPS=none
    done
    run_nvshmem mps
  else
    failed+=("MPS daemon did not start")
    fails=$((fails + 1))
  fi
  mps_quit
fi

# ---- tables ----
{
  echo "== $(date -u +%Y-%m-%dT%H:%MZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1), $NPES PEs on GPU 0, COLL_MAX=$COLL_MAX"
  echo
  "$PY" "$here/coll_table.py" --nomps "$O"/nomps_*.txt --mps "$O"/mps_*.txt
} | tee "$O/coll_tables.md"
echo "total $((SECONDS - t_start)) s; $fails failure(s)${failed[0]+: ${failed[*]}}; raw output in $O"
[ "$fails" = 0 ]
