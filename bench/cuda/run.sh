#!/bin/bash
# Build and run the CUDA benchmark for ushmem and NVSHMEM on this machine (2 PEs
# on GPU 0) and print the comparison tables. usage: bench/cuda/run.sh BUILD_DIR [MAXBYTES]
# NVSHMEM comes from the nvidia-nvshmem-cu13 Python package.
# MULTI_GPU=1 (bench/cuda/multi_gpu.sh): no USHMEM_DEVICE; each PE binds GPU
# LOCAL_RANK % device count (local_rank.sh), NVSHMEM's PE r GPU r % count, and
# bench_peer adds the raw cudaMemcpyPeerAsync baseline (GPU 0 -> GPU 1).
set -u
B=${1:-build}
MAX=${2:-1073741824}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/common.sh"
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
find_nvshmem
if [ "${MULTI_GPU:-0}" = 1 ]; then
  unset USHMEM_DEVICE LOCAL_RANK
  bind=() wrap=("$here/local_rank.sh")
else
  bind=(USHMEM_DEVICE=0) wrap=()
fi
nvcc -O2 -arch=sm_90 -I"$root/include" "$here/bench_ushmem.cu" -o "$B/bench_ushmem_cuda" \
    "$B/libushmem.a" -ldl -lpthread || exit 1
: >"$B/bench_nvshmem.txt"
if [ -n "$NV" ] && [ -d "$NV/include" ]; then
  nvcc -O2 -arch=sm_90 -rdc=true -I"$NV/include" "$here/bench_nvshmem.cu" -o "$B/bench_nvshmem" \
      -L"$NV/lib" -l:libnvshmem_host.so.3 -lnvshmem_device -Xlinker -rpath="$NV/lib" || NV=""
else
  echo "NVSHMEM (nvidia-nvshmem-cu13) not found: its column stays empty"; NV=""
fi
env ${bind[@]+"${bind[@]}"} USHMEM_DEVICE_HEAP_SIZE=$((MAX * 2 / 1048576 + 64))M \
  "$B/tools/ushrun" --timeout 300 -n 2 ${wrap[@]+"${wrap[@]}"} "$B/bench_ushmem_cuda" "$MAX" | tee "$B/bench_ushmem.txt"
# the same puts with the legacy CUDA IPC mapping (USHMEM_CUDA_IPC=legacy)
env ${bind[@]+"${bind[@]}"} USHMEM_CUDA_IPC=legacy USHMEM_DEVICE_HEAP_SIZE=$((MAX * 2 / 1048576 + 64))M \
  "$B/tools/ushrun" --timeout 300 -n 2 ${wrap[@]+"${wrap[@]}"} "$B/bench_ushmem_cuda" "$MAX" ushmem_legacy_ipc | tee -a "$B/bench_ushmem.txt"
: >"$B/bench_peer.txt"
if [ "${MULTI_GPU:-0}" = 1 ]; then
  nvcc -O2 -arch=sm_90 "$here/bench_peer.cu" -o "$B/bench_peer" &&
    timeout 300 "$B/bench_peer" "$MAX" | tee "$B/bench_peer.txt"
fi
if [ -n "$NV" ]; then
  LD_LIBRARY_PATH="$NV/lib:${LD_LIBRARY_PATH:-}" NVSHMEM_SYMMETRIC_SIZE=$((MAX * 2 / 1048576 + 512))M \
    timeout 300 "$B/bench_nvshmem" "$MAX" | tee "$B/bench_nvshmem.txt"
fi
echo "== $(date -u +%Y-%m-%dT%H:%MZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
python3 "$here/table.py" "$B/bench_ushmem.txt" "$B/bench_nvshmem.txt" "$B/bench_peer.txt"
