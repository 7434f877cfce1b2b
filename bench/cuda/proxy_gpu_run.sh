#!/bin/bash
# Issue 20 on a GPU machine, in one device call: build; the single-host CUDA
# tests (regressions); the proxy test on the device heap with PEs on two
# pretend hosts under mpirun (2, 3, 4 PEs; without and with a private MPS
# daemon); the existing CUDA tests under mpirun on pretend hosts (which work
# across hosts and which do not yet); routes; the proxy benchmark against
# the MPI floor and a mapped peer.
# usage: bench/cuda/proxy_gpu_run.sh [OUTDIR]     STAGES="single proxy cudamix dev devbench bench"
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
O=${1:-${OUT:-/tmp/ushmem-proxygpu}}
mkdir -p "$O"
B=${USHMEM_GPU_BUILD:-$root/build-proxygpu}
STAGES=${STAGES:-single proxy cudamix dev devbench bench}
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
. "$root/bench/cuda/common.sh"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; mpirun --version | head -1; nproc; } | tee "$O/info.txt"
t0=$SECONDS
cmake -S "$root" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$O/build.log" 2>&1 &&
  cmake --build "$B" -j"$(nproc)" -- -k >>"$O/build.log" 2>&1 || grep -E "error|Error" "$O/build.log" | head -20
echo "built in $((SECONDS - t0)) s"
export USHMEM_DEVICE=0 USHMEM_DEVICE_HEAP_SIZE=512M SHMEM_SYMMETRIC_SIZE=64M
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader"
if has single; then
  (cd "$B" && timeout 240 ctest -R '^cuda/' -E 'kernel' --output-on-failure --timeout 150) >"$O/ctest_cuda.log" 2>&1
  echo "== single-host CUDA tests (ushrun)"; grep -E "tests passed|\*\*\*Failed|Timeout" "$O/ctest_cuda.log"
  # the host-memory suite: no device bound (its tests touch shmem_malloc'd memory directly)
  (cd "$B" && env -u USHMEM_DEVICE timeout 200 ctest -R 'mpi_proxy|no_rma|mpi/proxy/(rma|amo|signal|coll)' --output-on-failure --timeout 100) >"$O/ctest_proxyhost.log" 2>&1
  echo "== proxy on host memory (ctest)"; grep -E "tests passed|\*\*\*Failed|Timeout" "$O/ctest_proxyhost.log"
fi
if has proxy; then
  echo "== mpi_proxy on the device heap, pretend hosts"
  for n in 2 3 4; do
    timeout 120 env USHMEM_FAKE_HOSTS=2 $MPIRUN -n $n "$B/tests/mpi/mpi_proxy" >"$O/proxy_np$n.log" 2>&1
    echo "np$n: exit $? $(grep -E 'passed|differ|error|ushmem:' "$O/proxy_np$n.log" | head -3 | tr '\n' ' ')"
  done
  timeout 60 env USHMEM_FAKE_HOSTS=2 $MPIRUN -n 4 "$B/tools/ushmem_info" --peers >"$O/peers.txt" 2>&1
  cat "$O/peers.txt" | head -12
  trap mps_quit EXIT
  if mps_start proxy; then
    for n in 2 4; do
      timeout 120 env USHMEM_FAKE_HOSTS=2 $MPIRUN -n $n "$B/tests/mpi/mpi_proxy" >"$O/proxy_mps_np$n.log" 2>&1
      echo "MPS np$n: exit $? $(grep -E 'passed|differ|error' "$O/proxy_mps_np$n.log" | head -2 | tr '\n' ' ')"
    done
    mps_quit
  fi
fi
if has cudamix; then
  echo "== existing CUDA tests under mpirun, 4 PEs on 2 pretend hosts"
  for t in cuda_heap cuda_coll cuda_stream cuda_coll_stream; do
    timeout 100 env USHMEM_FAKE_HOSTS=2 USHMEM_TEST_QUICK=1 $MPIRUN --timeout 90 -n 4 "$B/tests/cuda/$t" >"$O/mix_$t.log" 2>&1
    echo "$t: exit $? $(grep -m2 -E 'ushmem:|FAIL|differ|passed' "$O/mix_$t.log" | tr '\n' ' ' | cut -c1-300)"
  done
fi
if has dev; then
  # The device API (and the GPU tests) with PEs on two pretend hosts: under
  # MPS with the SM shares summing to the GPU (device waits allowed), then
  # without MPS (the PEs' contexts time-slice the GPU: slow, so the short ones).
  export USHMEM_TEST_QUICK=1 USHMEM_TEST_LITMUS_ROUNDS=${LITMUS:-2000} USHMEM_TEST_BARRIER_EPOCHS=200
  trap mps_quit EXIT
  if mps_start devproxy; then
    for n in ${DEV_NP:-2 4}; do
      for t in ${DEV_PROGS:-dev_moe dev_rma dev_amo}; do
        timeout ${DEV_LIMIT:-100} env USHMEM_FAKE_HOSTS=2 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$((100 / n)) \
          $MPIRUN --timeout $((${DEV_LIMIT:-100} - 5)) -n $n "$B/tests/cuda/$t" >"$O/mps_${t}_np$n.log" 2>&1
        echo "MPS $t np$n: exit $? $(grep -c PASS "$O/mps_${t}_np$n.log") PASS lines; $(grep -m3 -E 'FAIL|ushmem:|limit' "$O/mps_${t}_np$n.log" | tr '\n' ' ' | cut -c1-400)"
      done
    done
    mps_quit
  fi
  for t in ${NOMPS_PROGS:-dev_moe}; do
    timeout 60 env USHMEM_FAKE_HOSTS=2 $MPIRUN --timeout 55 -n 2 "$B/tests/cuda/$t" >"$O/nomps_${t}_np2.log" 2>&1
    echo "no MPS $t np2: exit $? $(grep -c PASS "$O/nomps_${t}_np2.log") PASS lines; $(grep -m3 -E 'FAIL|ushmem:|limit' "$O/nomps_${t}_np2.log" | tr '\n' ' ' | cut -c1-400)"
  done
fi
if has devbench; then
  # The device API to a peer on another pretend host (the ring and the
  # proxy) and to a mapped peer, both under MPS (device waits for the
  # ping-pong), and the MPI floor between host buffers, in one run.
  echo "== device API: proxy vs mapped vs MPI floor (2 PEs, MPS 50% each)"
  nvcc -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -I"$root/include" \
    "$root/bench/cuda/bench_dev_proxy.cu" -o "$B/bench_dev_proxy" "$B/libushmem.so" \
    -Xlinker -rpath="$B" >"$O/devbench_build.log" 2>&1 || tail -5 "$O/devbench_build.log"
  trap mps_quit EXIT
  if mps_start devbench; then
    for mode in proxy mapped; do
      fh=""; [ $mode = proxy ] && fh="USHMEM_FAKE_HOSTS=2"
      timeout 150 env $fh USHMEM_DEVICE_HEAP_SIZE=1G CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 \
        $MPIRUN --timeout 140 -n 2 "$B/bench_dev_proxy" ${DEVBENCH_MAX:-67108864} >"$O/devbench_$mode.txt" 2>&1
      echo "$mode: exit $?"; grep -E "^(proxy|mapped)" "$O/devbench_$mode.txt"
    done
    mps_quit
  fi
  timeout 100 $MPIRUN -n 2 "$B/bench/mpi_floor" ${DEVBENCH_MAX:-67108864} >"$O/floor.txt" 2>&1
  echo "MPI floor:"; cat "$O/floor.txt" | head -20
fi
if has bench; then
  unset USHMEM_DEVICE_HEAP_SIZE
  USHMEM_DEVICE_HEAP_SIZE=1G timeout 280 bash "$root/bench/proxy_run.sh" "$B" "$O/bench" 268435456 >"$O/bench.md" 2>&1
  echo "bench exit $?"; cat "$O/bench.md"
fi
echo "total $((SECONDS - t0)) s"
