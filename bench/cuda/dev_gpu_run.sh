#!/bin/bash
# The device API on a GPU machine, in one go (one device call): build (library,
# CUDA tests, Python extension for the interpreter with torch), the CUDA tests
# with 2 and 4 PEs on GPU 0 without MPS, the device-API tests again under
# `ushrun --mps` (USHRUN_MPS=1: a private MPS daemon per job), compute-sanitizer
# memcheck on two of them, the ring example, the Python device tests (Triton)
# under MPS, then the benchmark against NVSHMEM (bench/cuda/dev_run.sh).
# usage: bench/cuda/dev_gpu_run.sh [OUTDIR]   STAGES="tests mps sanitize example python bench"
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
O=${1:-${OUT:-/tmp/ushmem-devgpu}}
mkdir -p "$O"
B=${USHMEM_GPU_BUILD:-$root/build-devgpu}
STAGES=${STAGES:-tests mps bench example sanitize python}
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
PY=""
for c in /opt/torch/.venv/bin/python3 python3; do
  "$c" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null && { PY=$(command -v "$c"); break; }
done
{
  date -u; nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv,noheader
  nvcc --version | tail -1; echo "python: ${PY:-none}"
} | tee "$O/info.txt"
t0=$SECONDS
cmake -S "$root" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${PY:+-DPython3_EXECUTABLE=$PY} \
  >"$O/build.log" 2>&1 &&
  cmake --build "$B" -j"$(nproc)" --target ushmem ushmem_static ushrun >>"$O/build.log" 2>&1 ||
  { tail -40 "$O/build.log"; exit 1; }
# the rest (tests, Python) may fail to build without stopping the stages that need only the library
rest=(-- -k)
[ "$STAGES" = python ] && rest=(--target ushmem_python) # the extension alone (device_call.sh PY=1)
cmake --build "$B" -j"$(nproc)" "${rest[@]}" >>"$O/build.log" 2>&1 || grep -E "error|Error" "$O/build.log" | head -20
echo "built in $((SECONDS - t0)) s"
export USHMEM_DEVICE=0 USHMEM_DEVICE_HEAP_SIZE=256M SHMEM_SYMMETRIC_SIZE=64M

if has tests; then
  (cd "$B" && timeout 300 ctest -R '^cuda/' --output-on-failure --timeout 150) >"$O/ctest.log" 2>&1
  echo "== CUDA tests, no MPS"; grep -E "Test +#|tests passed" "$O/ctest.log"
fi
if has mps; then
  (cd "$B" && USHRUN_MPS=1 timeout 300 ctest -R '^cuda/(dev|coll_stream/auto)' --output-on-failure --timeout 150) \
    >"$O/ctest_mps.log" 2>&1
  echo "== device-API tests and the collectives (kernel path) under ushrun --mps"; grep -E "Test +#|tests passed" "$O/ctest_mps.log"
fi
if has bench; then
  unset USHMEM_DEVICE_HEAP_SIZE
  timeout 280 bash "$root/bench/cuda/dev_run.sh" "$B" "$O/bench" >"$O/bench.log" 2>&1
  echo "bench exit $?"
  cp "$O/bench/dev_tables.md" "$O/" 2>/dev/null
  grep -E "^\| (floor|p ping|putmem_signal|fetch_add|barrier)" "$O/bench/dev_tables.md" 2>/dev/null
fi
if has example; then
  nvcc -O2 -std=c++17 -arch=sm_90 -I"$root/include" "$root/examples/cuda/ring_device.cu" \
    -o "$B/ring_device" -L"$B" -lushmem -Xlinker -rpath="$B" >"$O/example.log" 2>&1
  for n in 2 4; do
    timeout 60 "$B/tools/ushrun" --mps --timeout 50 -n $n "$B/ring_device" >>"$O/example.log" 2>&1
    echo "ring_device --mps -n $n: exit $?"
  done
  tail -6 "$O/example.log"
fi
if has sanitize; then
  SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  # USHMEM_DEVICE_WAIT=timesliced: without MPS the device waits (litmus, barriers,
  # collectives) run too, slowly; 2026-12-06 on an H200: dev_coll's 126 cases per
  # team and dev_amo's litmus and barriers under memcheck, 0 errors
  for t in dev_rma dev_amo dev_coll; do
    USHMEM_DEVICE_WAIT=timesliced timeout 200 "$B/tools/ushrun" --timeout 180 -n 2 "$SAN" \
      --tool memcheck --error-exitcode 9 "$B/tests/cuda/$t" >"$O/sanitizer_$t.log" 2>&1
    echo "compute-sanitizer memcheck $t np2: exit $? ($(grep -c 'ERROR SUMMARY: 0 errors' "$O/sanitizer_$t.log") clean PEs)"
  done
fi
if has python && [ -n "$PY" ]; then
  for mode in plain mps; do
    env $([ $mode = mps ] && echo USHRUN_MPS=1) USHMEM_PYTHON="$PY" USHMEM_TEST_DEVICE=0 USHMEM_DEVICE_HEAP_SIZE=512M \
      timeout 200 "$root/python/launch_test.sh" -b "$B" -l ushrun -n 2 -t 180 -i raw \
      -c "pytest -q -ra tests/test_device.py" >"$O/pytest_$mode.log" 2>&1
    echo "python test_device.py 2 PEs ($mode): exit $?: $(grep -E 'passed|failed' "$O/pytest_$mode.log" | tail -1)"
  done
fi
echo "total $((SECONDS - t0)) s"
