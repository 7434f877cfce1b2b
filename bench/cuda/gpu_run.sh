#!/bin/bash
# Everything the GPU machine is needed for, in one go (one device call):
# build with nvcc, the CUDA tests with 2 and 4 PEs on GPU 0, the benchmark
# against NVSHMEM, then both tests once under compute-sanitizer.
# usage: bench/cuda/gpu_run.sh [OUTDIR]   (writes logs there; prints a summary)
set -u
O=${1:-${OUT:-/tmp/ushmem-gpu}}
mkdir -p "$O"
B=build-gpu
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
{
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -2; uname -r
} >"$O/info.txt" 2>&1
cmake -S . -B $B -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUSHMEM_BUILD_PYTHON=OFF >"$O/build.log" 2>&1 &&
  cmake --build $B -j16 >>"$O/build.log" 2>&1 || { tail -40 "$O/build.log"; exit 1; }
$B/tools/ushmem_info >>"$O/info.txt" 2>&1
head -12 "$O/info.txt"
(cd $B && timeout 200 ctest -R "${TESTS:-^cuda/}" --output-on-failure --timeout 150) >"$O/ctest.log" 2>&1
grep -E "Test +#|tests passed|FAIL|PASS" "$O/ctest.log" | head -40
if [ "${BENCH:-1}" = 1 ]; then
  timeout 240 bash bench/cuda/run.sh $B "${BENCH_MAX:-1073741824}" >"$O/bench.log" 2>&1
  echo "bench exit $?"
  cp $B/bench_ushmem.txt $B/bench_nvshmem.txt "$O/" 2>/dev/null
  sed -n '/^== /,$p' "$O/bench.log"
  grep -v "^R " "$O/bench.log" | grep -v "^== " | head -20
fi
if [ "${SANITIZE:-1}" = 1 ]; then
  SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for t in ${SANITIZE_TESTS:-cuda_heap cuda_stream}; do
    USHMEM_TEST_PUT_FIRST=1 USHMEM_TEST_VERBOSE=1 USHMEM_DEVICE=0 USHMEM_DEVICE_HEAP_SIZE=256M SHMEM_SYMMETRIC_SIZE=64M \
      timeout 130 $B/tools/ushrun --timeout 120 -n 2 "$SAN" --tool memcheck --error-exitcode 9 \
      $B/tests/cuda/$t >>"$O/sanitizer.log" 2>&1
    echo "compute-sanitizer memcheck $t np2: exit $?" | tee -a "$O/sanitizer.log"
  done
  grep -E "ERROR SUMMARY" "$O/sanitizer.log" | sort | uniq -c
fi
