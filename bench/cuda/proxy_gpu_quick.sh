#!/bin/bash
# Issue 20, a short GPU check: build, then the given tests with PEs on two
# pretend hosts under a private MPS daemon, each log's tail on stdout.
# usage (device machine, repository root): OUT=dir SPECS="2 dev_rma,4 dev_amo" bash bench/cuda/proxy_gpu_quick.sh
set -u
root=$(pwd); O=$OUT; B=$root/build-proxygpu
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
. bench/cuda/common.sh
t0=$SECONDS
{ [ -f "$B/CMakeCache.txt" ] || cmake -S "$root" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo; } >"$O/build.log" 2>&1
cmake --build "$B" -j16 -- -k >>"$O/build.log" 2>&1 || { grep -E "error" "$O/build.log" | head; }
echo "built in $((SECONDS - t0)) s"
export USHMEM_DEVICE=0 USHMEM_DEVICE_HEAP_SIZE=512M SHMEM_SYMMETRIC_SIZE=64M USHMEM_TEST_QUICK=1 USHMEM_TEST_LITMUS_ROUNDS=2000 USHMEM_TEST_BARRIER_EPOCHS=200 USHMEM_DEVICE_WAIT_TIMEOUT=30
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader"
trap mps_quit EXIT
mps_start g2 || exit 1
IFS=, read -ra specs <<<"${SPECS:-2 dev_rma,2 cuda_heap,2 cuda_stream,4 cuda_coll_stream}"
for spec in "${specs[@]}"; do
  set -- $spec; n=$1; t=$2
  timeout ${LIMIT:-60} env USHMEM_FAKE_HOSTS=2 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$((100 / n)) $MPIRUN --timeout $((${LIMIT:-60} - 4)) -n $n "$B/tests/cuda/$t" >"$O/$t.log" 2>&1
  echo "== MPS $t np$n: exit $?"; grep -v "^\[vm\|^ *[0-9]* */lib\|^---\|^$" "$O/$t.log" | tail -${TAILN:-8} | cut -c1-250
done
mps_quit
