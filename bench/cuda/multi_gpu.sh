#!/bin/bash
# Issue 7 on the 2-GPU machine (nvidia-h200-x2), in one go: build (as
# gpu_run.sh), the CUDA tests (C, then Python) with 2 PEs on 2 GPUs and with 4
# PEs (2 per GPU), then the benchmark between PEs on different GPUs (ushmem,
# NVSHMEM, raw cudaIpc copy, raw cudaMemcpyPeerAsync) and its table.
#
#   bench/cuda/multi_gpu.sh [OUTDIR]      (logs there, default $OUT; prints a summary)
#   STAGES="build tests pytests bench"    the default; any subset, in this order
#   BENCH_MAX=1073741824 COLL_MAX=16777216   largest put / collective block
#
# Binding: USHMEM_DEVICE stays unset; ushrun sets USHMEM_LOCAL_RANK only, and
# local_rank.sh exports LOCAL_RANK from it, so ushmem binds PE i to GPU
# i % device count (docs/cuda.md). SHMEM_DEBUG=1 on one test run prints each
# PE's "bound CUDA device" line, which the summary checks. The whole script
# fits one 600 s device call on a warm build; split it with STAGES otherwise.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
O=${1:-${OUT:-/tmp/ushmem-multigpu}}
mkdir -p "$O"
B=${USHMEM_GPU_BUILD:-build-gpu}
STAGES=${STAGES:-build tests pytests bench}
LR=$root/bench/cuda/local_rank.sh
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
unset USHMEM_DEVICE LOCAL_RANK CUDA_VISIBLE_DEVICES
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
t0=$SECONDS

{
  date -u; nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv,noheader
  nvidia-smi topo -m; nvcc --version | tail -2; uname -r
} >"$O/info.txt" 2>&1
cat "$O/info.txt"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$ngpu" -ge 2 ] || echo "WARNING: $ngpu GPU(s) visible: this is not the 2-GPU machine"

if has build; then
  cmake -S . -B $B -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUSHMEM_BUILD_PYTHON=OFF >"$O/build.log" 2>&1 &&
    cmake --build $B -j"$(nproc)" >>"$O/build.log" 2>&1 || { tail -40 "$O/build.log"; exit 1; }
  echo "build: $((SECONDS - t0))s"
fi

# The C tests: what ctest runs (tests/cuda/CMakeLists.txt), minus its
# USHMEM_DEVICE=0, plus local_rank.sh; 2 PEs (one per GPU) and 4 (two per GPU).
if has tests; then
  fail=0
  export USHMEM_DEVICE_HEAP_SIZE=256M SHMEM_SYMMETRIC_SIZE=64M
  SHMEM_DEBUG=1 timeout 100 $B/tools/ushrun --timeout 90 -n 4 "$LR" $B/tests/cuda/cuda_heap \
    >"$O/bind.log" 2>&1
  echo "binding (4 PEs, cuda_heap, SHMEM_DEBUG): exit $? :: $(grep -o 'bound CUDA device [0-9]* ([A-Z_]*)' \
    "$O/bind.log" | sort | uniq -c | tr -s ' \n' ' ')"
  for n in 2 4; do
    for t in cuda_heap cuda_stream cuda_coll; do
      s=$SECONDS
      timeout 200 $B/tools/ushrun --timeout 180 -n $n "$LR" $B/tests/cuda/$t >"$O/$t.np$n.log" 2>&1
      rc=$?
      printf 'cuda/%s/np%s (2 GPUs): exit %s  %ss\n' $t $n $rc $((SECONDS - s))
      [ $rc -eq 77 ] && { fail=skip; continue; } # no usable GPU
      [ $rc -eq 0 ] || { fail=1; tail -15 "$O/$t.np$n.log"; }
    done
  done
  # cuda_errors.sh calls "USHRUN -n 2 PROG CASE": put local_rank.sh in front of PROG.
  printf '#!/bin/bash\nexec %q "$1" "$2" %q "${@:3}"\n' "$root/$B/tools/ushrun" "$LR" >$B/ushrun_lr
  chmod +x $B/ushrun_lr
  bash tests/cuda/cuda_errors.sh $B/ushrun_lr $B/tests/cuda/cuda_errors >"$O/cuda_errors.log" 2>&1
  rc=$?
  echo "cuda/errors (2 GPUs): exit $rc"
  [ $rc -eq 0 ] || [ $rc -eq 77 ] || { fail=1; tail -20 "$O/cuda_errors.log"; }
  # The single-GPU configuration still holds on this machine (ctest as shipped).
  (cd $B && timeout 300 ctest -R '^cuda/' --output-on-failure --timeout 150) >"$O/ctest_gpu0.log" 2>&1
  echo "ctest cuda/* (USHMEM_DEVICE=0, as shipped): $(grep -E 'tests passed' "$O/ctest_gpu0.log")"
  unset USHMEM_DEVICE_HEAP_SIZE SHMEM_SYMMETRIC_SIZE
  echo "C tests: $(case $fail in 0) echo PASS ;; skip) echo 'SKIPPED (no GPU)' ;; *) echo FAIL ;; esac)  ($((SECONDS - t0))s)"
fi

# The Python suite: raw init under ushrun (LOCAL_RANK from local_rank.sh around
# the interpreter), and torchrun (which sets LOCAL_RANK itself), 2 and 4 PEs.
if has pytests; then
  PY=""
  for c in ${USHMEM_PYTHON:-} python3 /opt/*/.venv/bin/python3 /usr/bin/python3; do
    command -v "$c" >/dev/null 2>&1 || continue
    if "$c" -c "import torch, numpy, pytest; assert torch.cuda.device_count() >= 1" 2>/dev/null; then
      PY=$(command -v "$c"); break
    fi
  done
  if [ -z "$PY" ]; then
    echo "pytests: no python with torch+CUDA+numpy+pytest: NOT RUN"
  else
    PB=${USHMEM_GPU_PYBUILD:-build-pygpu}
    # Build the extension for $PY as python/gpu_check.sh does (fallback included).
    cmake -S . -B "$PB" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE="$PY" \
      >"$O/pybuild.log" 2>&1 && cmake --build "$PB" -j"$(nproc)" --target ushrun ushmem_obj \
      >>"$O/pybuild.log" 2>&1 && cmake --build "$PB" -j"$(nproc)" --target ushmem_python >>"$O/pybuild.log" 2>&1
    if ! ls "$PB"/python/ushmem/_ushmem*.so >/dev/null 2>&1; then
      inc=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
      ext=$("$PY" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
      mkdir -p "$PB/python/ushmem"
      gcc -O2 -shared -fPIC -fvisibility=hidden -std=gnu11 -I"$inc" -I"$root/include" \
        python/ushmem/_*.c "$PB"/CMakeFiles/ushmem_obj.dir/src/*/*.o \
        "$PB"/CMakeFiles/ushmem_obj.dir/src/*/*/*.o -Wl,--version-script=python/ushmem/_ushmem.map \
        -lpthread -ldl -o "$PB/python/ushmem/_ushmem$ext" >>"$O/pybuild.log" 2>&1
    fi
    if ! ls "$PB"/python/ushmem/_ushmem*.so >/dev/null 2>&1; then
      echo "pytests: extension build failed (see $O/pybuild.log)"; tail -20 "$O/pybuild.log"
    else
      printf '#!/bin/bash\nexec %q %q "$@"\n' "$LR" "$PY" >"$PB/python_lr"
      chmod +x "$PB/python_lr"
      export USHMEM_DEVICE_HEAP_SIZE=512M PYTHONUNBUFFERED=1
      leg() { # name, launch_test.sh arguments...
        local name=$1 s=$SECONDS; shift
        USHMEM_PYTHON=${LEG_PY:-$PY} python/launch_test.sh -b "$PB" "$@" >"$O/$name.log" 2>&1
        local rc=$?
        printf 'python %-16s exit %s  %3ss  %s\n' "$name" $rc $((SECONDS - s)) \
          "$(grep -aE '[0-9]+ (passed|failed)' "$O/$name.log" | tail -1 | sed 's/^\[[^]]*\] *//')"
        [ $rc -eq 0 ] || grep -aE 'FAILED|Error|error|Traceback' "$O/$name.log" | head -15
      }
      LEG_PY=$PB/python_lr leg raw-np2 -l ushrun -n 2 -t 150 -i raw -c "pytest -q -ra tests"
      LEG_PY=$PB/python_lr leg raw-np4 -l ushrun -n 4 -t 200 -i raw -c "pytest -q -ra tests/test_cuda.py tests/test_collective.py"
      leg torchrun-np2 -l torchrun -n 2 -i torch -t 120 -c "pytest -q -ra tests/test_cuda.py tests/test_collective.py"
      leg torchrun-np4 -l torchrun -n 4 -i torch -t 150 -c "pytest -q -ra tests/test_cuda.py"
      unset USHMEM_DEVICE_HEAP_SIZE
    fi
  fi
  echo "pytests done ($((SECONDS - t0))s)"
fi

# Benchmark: run.sh in its two-GPU mode (PE 0 on GPU 0 puts to PE 1 on GPU 1).
if has bench; then
  MULTI_GPU=1 COLL_MAX=${COLL_MAX:-16777216} timeout 330 bash bench/cuda/run.sh $B "${BENCH_MAX:-1073741824}" \
    >"$O/bench.log" 2>&1
  echo "bench exit $? ($((SECONDS - t0))s)"
  cp $B/bench_ushmem.txt $B/bench_nvshmem.txt $B/bench_peer.txt "$O/" 2>/dev/null
  grep -E '^# ' "$O/bench.log"
  sed -n '/^== /,$p' "$O/bench.log" | tee "$O/table.md"
  grep -v '^R ' "$O/bench.log" | grep -v '^# ' | sed '/^== /,$d' | head -20
fi
