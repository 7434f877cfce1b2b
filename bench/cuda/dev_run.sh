#!/bin/bash
# Device-API benchmark, ushmem (bench_dev_ushmem.cu) against NVSHMEM
# (bench_dev_nvshmem.cu), 2 PEs on GPU 0, and the device collectives
# (bench_dev_coll.cu against bench_dev_coll_nvshmem.cu, block form, 8 B .. 4 MiB
# per PE) with DEV_COLL_NPES PEs (default "2 4") at 100 / PEs percent each:
#  1. builds the library (if BUILD_DIR has none yet, or incrementally) and both programs
#     (NVSHMEM from the nvidia-nvshmem-cu13 Python package, as bench/cuda/run.sh);
#  2. starts a private MPS control daemon (its own pipe and log folders) and runs
#     both with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50, so device waits are allowed
#     (ushmem: shmemx_dev_why() is NULL; NVSHMEM: full MPG);
#  3. quits the daemon (also on any exit: trap), then runs the ushmem one again
#     without MPS: the rows that need no device wait (DEV_NV_NOMPS=1: NVSHMEM too);
#  4. prints the tables (dev_table.py); raw output and tables are saved in OUTDIR.
# Never changes GPU settings (no nvidia-smi -c): MPS works in the default compute mode.
# usage: bash bench/cuda/dev_run.sh BUILD_DIR OUTDIR [MAX_BW_BYTES (default 1 GiB)]
# env: DEV_COLL_NPES ("2 4"; empty: no collective rows), COLL_MAX (4194304), COLL_OPS,
#      DEV_P2P (1; 0: the collectives alone, without bench_dev_ushmem/_nvshmem)
set -u
B=${1:?usage: dev_run.sh BUILD_DIR OUTDIR [MAX_BW_BYTES]}
O=${2:?usage: dev_run.sh BUILD_DIR OUTDIR [MAX_BW_BYTES]}
MAX=${3:-1073741824}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/common.sh"
mkdir -p "$B" "$O" || exit 1
B=$(cd "$B" && pwd)
O=$(cd "$O" && pwd)
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
# heaps: two MAX_BW_BYTES buffers per PE, plus room (3G for 1 GiB)
HEAP_MB=$((MAX * 2 / 1048576 + 1024))
t_start=$SECONDS

# ---- build ----
{
  gpu_info
} >"$O/info.txt" 2>&1
cat "$O/info.txt"
# PREBUILT=1: BUILD_DIR already holds ushrun and the ushmem benchmarks (built
# elsewhere with the same nvcc, bench/cuda/carry_build.sh); only the NVSHMEM
# ones are compiled here.
if [ "${PREBUILT:-0}" != 1 ]; then
  if [ ! -f "$B/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$B" -DUSHMEM_BUILD_PYTHON=OFF >"$O/build.log" 2>&1 ||
      { tail -40 "$O/build.log"; exit 1; }
  fi
  cmake --build "$B" -j"$(nproc)" >>"$O/build.log" 2>&1 || { tail -40 "$O/build.log"; exit 1; }
  build_ushmem_benches "$B" "$O/build.log" || { tail -40 "$O/build.log"; exit 1; }
fi
find_nvshmem
[ -n "$NV" ] && [ ! -d "$NV/include" ] && NV=""
NVC=$NV
if [ "${DEV_P2P:-1}" = 0 ]; then
  NV="" # the point-to-point programs do not run
elif [ -n "$NV" ]; then
  nvcc -O2 -std=c++17 -arch=sm_90 -rdc=true -I"$NV/include" "$here/bench_dev_nvshmem.cu" \
      -o "$B/bench_dev_nvshmem" -L"$NV/lib" -l:libnvshmem_host.so.3 -lnvshmem_device \
      -Xlinker -rpath="$NV/lib" >>"$O/build.log" 2>&1 ||
    { echo "bench_dev_nvshmem: build failed (its columns stay empty)"; tail -40 "$O/build.log"; NV=""; }
else
  echo "NVSHMEM (nvidia-nvshmem-cu13) not found: its columns stay empty"; NV=""
fi
if [ -n "$NVC" ] && [ -n "${DEV_COLL_NPES-2 4}" ]; then
  nvcc -O2 -std=c++17 -arch=sm_90 -rdc=true -I"$NVC/include" "$here/bench_dev_coll_nvshmem.cu" \
      -o "$B/bench_dev_coll_nvshmem" -L"$NVC/lib" -l:libnvshmem_host.so.3 -lnvshmem_device \
      -Xlinker -rpath="$NVC/lib" >>"$O/build.log" 2>&1 ||
    { echo "bench_dev_coll_nvshmem: build failed (its columns stay empty)"; tail -40 "$O/build.log"; NVC=""; }
fi
echo "built in $((SECONDS - t_start)) s"

fails=0
run_ushmem() { # OUTFILE [VAR=VALUE...]
  local out=$1; shift
  local t0=$SECONDS
  env "$@" USHMEM_DEVICE=0 USHMEM_DEVICE_HEAP_SIZE=${HEAP_MB}M \
    timeout 300 "$B/tools/ushrun" --timeout 240 -n 2 "$B/bench_dev_ushmem" "$MAX" 2>&1 | tee "$out"
  local rc=${PIPESTATUS[0]}
  echo "bench_dev_ushmem: exit $rc, $((SECONDS - t0)) s" | tee -a "$out"
  [ "$rc" = 0 ] || fails=$((fails + 1))
}
run_nvshmem() { # OUTFILE
  local out=$1
  local t0=$SECONDS
  LD_LIBRARY_PATH="$NV/lib:${LD_LIBRARY_PATH:-}" NVSHMEM_SYMMETRIC_SIZE=${HEAP_MB}M \
    timeout 300 "$B/bench_dev_nvshmem" "$MAX" 2>&1 | tee "$out"
  local rc=${PIPESTATUS[0]}
  echo "bench_dev_nvshmem: exit $rc, $((SECONDS - t0)) s" | tee -a "$out"
  [ "$rc" = 0 ] || fails=$((fails + 1))
}

# ---- under MPS ----
if ! command -v nvidia-cuda-mps-control >/dev/null; then
  echo "nvidia-cuda-mps-control is not on PATH: cannot run under MPS"; exit 1
fi
if [ -e /tmp/nvidia-mps/control ]; then
  echo "note: a system MPS daemon (/tmp/nvidia-mps) is running; the no-MPS run would join it"
fi
trap mps_quit EXIT
trap 'exit 130' INT TERM
mps_start devbench || exit 1
export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
echo "== under MPS ($MPSDIR), CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50"
: >"$O/dev_ushmem_mps.txt"
: >"$O/dev_nvshmem_mps.txt"
: >"$O/dev_ushmem_nomps.txt"
if [ "${DEV_P2P:-1}" != 0 ]; then
  run_ushmem "$O/dev_ushmem_mps.txt" USHMEM_MPS=1
  [ -n "$NV" ] && run_nvshmem "$O/dev_nvshmem_mps.txt"
fi
# device collectives, N PEs at 100 / N percent each (ushmem: device waits allowed; NVSHMEM: full MPG)
COLL_MAX=${COLL_MAX:-4194304}
coll=()
for n in ${DEV_COLL_NPES-2 4}; do
  pct=$((100 / n))
  echo "== device collectives, $n PEs, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct"
  out=$O/dev_coll_ushmem_np$n.txt
  t0=$SECONDS
  env CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$pct" USHMEM_MPS=1 USHMEM_DEVICE=0 COLL_MAX="$COLL_MAX" \
    USHMEM_DEVICE_HEAP_SIZE=$((COLL_MAX * n * 2 / 1048576 + 256))M \
    timeout 300 "$B/tools/ushrun" --timeout 240 -n "$n" "$B/bench_dev_coll" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  echo "bench_dev_coll np$n: exit $rc, $((SECONDS - t0)) s" | tee -a "$out"
  [ "$rc" = 0 ] || fails=$((fails + 1))
  coll+=(--coll-ushmem "$out")
  out=$O/dev_coll_nvshmem_np$n.txt
  : >"$out"
  if [ -n "$NVC" ]; then
    t0=$SECONDS
    env CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$pct" NPES="$n" COLL_MAX="$COLL_MAX" \
      LD_LIBRARY_PATH="$NVC/lib:${LD_LIBRARY_PATH:-}" \
      NVSHMEM_SYMMETRIC_SIZE=$((COLL_MAX * n * 2 / 1048576 + 512))M \
      timeout 300 "$B/bench_dev_coll_nvshmem" 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    echo "bench_dev_coll_nvshmem np$n: exit $rc, $((SECONDS - t0)) s" | tee -a "$out"
    [ "$rc" = 0 ] || fails=$((fails + 1))
  fi
  coll+=(--coll-nvshmem "$out")
done
mps_quit
sleep 1

# ---- without MPS: the rows that need no device wait ----
nvx=()
if [ "${DEV_P2P:-1}" != 0 ]; then
  echo "== without MPS"
  run_ushmem "$O/dev_ushmem_nomps.txt"
fi
if [ "${DEV_NV_NOMPS:-0}" = 1 ] && [ -n "$NV" ]; then # NV is empty with DEV_P2P=0
  run_nvshmem "$O/dev_nvshmem_nomps.txt"
  nvx=(--nvshmem-nomps "$O/dev_nvshmem_nomps.txt")
fi

{
  echo "== $(date -u +%Y-%m-%dT%H:%MZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1), 2 PEs on GPU 0"
  echo
  python3 "$here/dev_table.py" --ushmem "$O/dev_ushmem_mps.txt" --nvshmem "$O/dev_nvshmem_mps.txt" \
    --ushmem-nomps "$O/dev_ushmem_nomps.txt" ${nvx[@]+"${nvx[@]}"} ${coll[@]+"${coll[@]}"}
} | tee "$O/dev_tables.md"
echo "total $((SECONDS - t_start)) s; $fails run(s) failed; raw output in $O"
[ "$fails" = 0 ]
