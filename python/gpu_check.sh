#!/bin/bash
# The Python package on a GPU machine, in one go: build the extension for the
# interpreter that has torch with CUDA (with the CUDA kernels when nvcc is
# there), then the test suite with 2 PEs sharing GPU 0 (raw init with
# init(device=0), and torchrun with init_with_torch + LOCAL_RANK), then the
# CUDA example.   python/gpu_check.sh [OUTDIR]   (logs there; prints a summary)
# env: BUILD_ONLY=1 (build the extension and the torch backend, run nothing),
#      MODES=nomps (skip the torch backend's legs under a private MPS daemon),
#      LEGS=REGEX (run only the legs whose names match, e.g. LEGS=symm-mps),
#      USHMEM_GPU_BUILD (build folder), USHMEM_CACHE_DIR (the torch backend's build)
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
O=${1:-${OUT:-/tmp/ushmem-pygpu}}
mkdir -p "$O"
B=${USHMEM_GPU_BUILD:-$root/build-pygpu}
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export USHMEM_DEVICE_HEAP_SIZE=${USHMEM_DEVICE_HEAP_SIZE:-512M} PYTHONUNBUFFERED=1

# The interpreter with torch and CUDA.
PY=""
for c in ${USHMEM_PYTHON:-} python3 /opt/*/.venv/bin/python3 /usr/bin/python3; do
  command -v "$c" >/dev/null 2>&1 || continue
  if "$c" -c "import torch, numpy, pytest; assert torch.cuda.is_available()" 2>/dev/null; then
    PY=$(command -v "$c"); break
  fi
done
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "python: ${PY:-none with torch+CUDA+numpy+pytest}"
  [ -n "$PY" ] && "$PY" -c "import sys, torch, numpy; print(sys.version.split()[0], 'torch', torch.__version__, 'numpy', numpy.__version__)"
} >"$O/info.txt" 2>&1
cat "$O/info.txt"
[ -n "$PY" ] || exit 1

# Build: the library objects, ushrun and the extension for $PY.
t0=$SECONDS
cmake -S "$root" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE="$PY" \
  >"$O/build.log" 2>&1 && cmake --build "$B" -j"$(nproc)" --target ushrun ushmem_obj \
  >>"$O/build.log" 2>&1 && cmake --build "$B" -j"$(nproc)" --target ushmem_python >>"$O/build.log" 2>&1
if ! ls "$B"/python/ushmem/_ushmem*.so >/dev/null 2>&1; then
  # CMake found no Python.h for $PY: try the interpreter's own include directory.
  inc=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
  ext=$("$PY" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  echo "fallback build: include $inc ($(ls "$inc"/Python.h 2>&1))" >>"$O/build.log"
  mkdir -p "$B/python/ushmem"
  gcc -O2 -shared -fPIC -fvisibility=hidden -std=gnu11 -I"$inc" -I"$root/include" \
    "$root"/python/ushmem/_*.c "$B"/CMakeFiles/ushmem_obj.dir/src/*/*.o \
    "$B"/CMakeFiles/ushmem_obj.dir/src/*/*/*.o -Wl,--version-script="$root/python/ushmem/_ushmem.map" \
    -lpthread -ldl -o "$B/python/ushmem/_ushmem$ext" >>"$O/build.log" 2>&1
fi
grep -aE "CUDA kernels|Python extension|error" "$O/build.log" | head -5
ls "$B"/python/ushmem/_ushmem*.so >/dev/null 2>&1 || { echo "BUILD FAILED"; tail -30 "$O/build.log"; exit 1; }
echo "build: $((SECONDS - t0))s"
USHMEM_DEVICE=0 PYTHONPATH="$root/python" USHMEM_PYTHON_EXT_DIR="$B/python/ushmem" timeout 30 "$PY" -c \
  "import ushmem; ushmem.init(); print('probe: cuda_device', ushmem.cuda_device()); ushmem.finalize()" 2>&1 | tail -3

leg() { # name, launch_test.sh arguments...
  local name=$1; shift
  [[ "$name" =~ ${LEGS:-.} ]] || return 0
  local t=$SECONDS
  USHMEM_PYTHON=$PY "$root/python/launch_test.sh" -b "$B" "$@" >"$O/$name.log" 2>&1
  local rc=$?
  printf '%-12s exit %s  %3ss  %s\n' "$name" $rc $((SECONDS - t)) \
    "$(grep -aE "[0-9]+ (passed|failed)" "$O/$name.log" | tail -1 | sed 's/^\[[^]]*\] *//')"
  [ $rc -eq 0 ] || grep -aE "FAILED|Error|error|Traceback" "$O/$name.log" | head -20
}
# The torch symmetric-memory backend: built once here (cached in USHMEM_CACHE_DIR), so
# that a compile error shows whole and the test legs do not spend their time compiling.
export USHMEM_CACHE_DIR=${USHMEM_CACHE_DIR:-$O/cache}
t=$SECONDS
PYTHONPATH="$root/python" USHMEM_PYTHON_EXT_DIR="$B/python/ushmem" timeout 600 "$PY" -c \
  "import ushmem.interop.torch_symm_mem as m; print('torch backend:', m.load())" >"$O/symm_build.log" 2>&1
printf 'symm-build   exit %s  %3ss\n' $? $((SECONDS - t))
grep -aE "error|Error" "$O/symm_build.log" | head -30
# BUILD_ONLY=1: stop here (a GPU run can build beside other work, then test in a later call).
[ "${BUILD_ONLY:-0}" = 1 ] && exit 0
USHMEM_TEST_DEVICE=0 leg cuda-raw-2 -l ushrun -n 2 -t 120 -i raw -c "pytest -q -ra tests"
leg cuda-torchrun-2 -l torchrun -n 2 -i torch -t 90 -c "pytest -q -ra tests/test_cuda.py tests/test_collective.py"
leg symm-torchrun-2 -l torchrun -n 2 -i torch -t 300 -c "pytest -q -ra tests/test_torch_symm_mem.py tests/test_local_blocks.py"
leg symm-torchrun-4 -l torchrun -n 4 -i torch -t 300 -c "pytest -q -ra tests/test_torch_symm_mem.py"
# The same under a private MPS daemon (MODES="nomps" skips these legs): torch's own kernels
# (one/two-shot all-reduce) spin on signal pads, which only MPS makes cheap.
if [ "${MODES:-nomps mps}" != nomps ]; then
  . "$root/bench/cuda/common.sh"
  trap mps_quit EXIT
  for n in 2 4; do
    if mps_start symm-check; then
      CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$((100 / n)) \
        leg symm-mps-$n -l torchrun -n $n -i torch -t 300 -c "pytest -q -ra tests/test_torch_symm_mem.py"
      mps_quit
    else
      echo "symm-mps-$n: no MPS daemon"
    fi
  done
fi
# The seed suite (tests/seed): its buffers and tensors on the device heap here.
leg seed-torchrun-2 -l torchrun -n 2 -t 90 -c "pytest -q -ra --confcutdir=tests/seed tests/seed"
leg example-2 -l ushrun -n 2 -t 45 -c "python $root/examples/python/ring_torch_cuda.py"
if [ -f "$O/example-2.log" ]; then cat "$O/example-2.log"; fi
