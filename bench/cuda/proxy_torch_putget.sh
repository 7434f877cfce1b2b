#!/bin/bash
# Issue 20, GPU debugging: a put from a torch CUDA tensor to a PE on another
# (pretend) host, a stream barrier, a get back (what test_torch_put_get[cuda]
# does), on 2 PEs under mpirun; plain, then under compute-sanitizer memcheck to
# name the kernel that faults. Builds the Python extension for the interpreter
# with torch first.   bash bench/cuda/proxy_torch_putget.sh   (repository root)
root=$(pwd)
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
PY=${USHMEM_PYTHON:-/opt/torch/.venv/bin/python3}
B=${USHMEM_GPU_BUILD:-$root/build-pygpu}
(cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE="$PY" &&
  cmake --build "$B" -j"$(nproc)" --target ushrun ushmem ushmem_obj ushmem_mpi ushmem_python) \
  >/tmp/proxy_torch_build.log 2>&1 || { tail -20 /tmp/proxy_torch_build.log; exit 1; }
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
export USHMEM_FAKE_HOSTS=2 USHMEM_DEVICE_HEAP_SIZE=256M PYTHONPATH=$root/python \
  USHMEM_PYTHON_EXT_DIR=$B/python/ushmem
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none"
echo "== plain"
timeout 60 $MPIRUN -n 2 "$PY" bench/cuda/proxy_torch_putget.py 2>&1 | grep -v "^\[vm" | tail -12
echo "== compute-sanitizer memcheck"
timeout 120 $MPIRUN -n 2 "$SAN" --tool memcheck --print-limit 3 "$PY" bench/cuda/proxy_torch_putget.py \
  2>&1 | grep -v "^\[vm" | grep -E "=====|PE|rror" | head -40
