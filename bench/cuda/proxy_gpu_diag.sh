#!/bin/bash
# Issue 20, GPU debugging: the given tests with PEs on two pretend hosts
# (under a private MPS daemon unless NOMPS=1); a test still running after
# LIMIT-15 s gets a hang report (SIGURG: each PE's ushmem wait) and every
# thread's stack (gdb, else eu-stack), then is stopped.
# usage (device machine, repository root; after proxy_gpu_quick.sh built):
#   OUT=dir SPECS="2 dev_rma,4 cuda_heap" LIMIT=60 bash bench/cuda/proxy_gpu_diag.sh
set -u
root=$(pwd); O=$OUT; B=${B:-$root/build-proxygpu}
mkdir -p "$O"
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
. bench/cuda/common.sh
export USHMEM_DEVICE=0 USHMEM_DEVICE_HEAP_SIZE=512M SHMEM_SYMMETRIC_SIZE=64M USHMEM_TEST_QUICK=1 \
  USHMEM_TEST_LITMUS_ROUNDS=2000 USHMEM_TEST_BARRIER_EPOCHS=200 USHMEM_DEVICE_WAIT_TIMEOUT=${WAITT:-40} \
  USHMEM_HANG_STACKS=1
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader"
L=${LIMIT:-60}
stacks() { # $1: program name; $2: log
  local p tk
  for p in $(pgrep -f "$B/tests/cuda/$1\$" | head -4); do
    echo "---- pid $p" >>"$2"
    if command -v gdb >/dev/null; then
      timeout 20 gdb -p "$p" -batch -ex "thread apply all bt 14" >>"$2" 2>&1
    elif command -v eu-stack >/dev/null; then
      timeout 20 eu-stack -p "$p" >>"$2" 2>&1
    else
      for tk in /proc/$p/task/*; do echo "$tk $(cat $tk/comm) $(cat $tk/wchan)"; done >>"$2"
    fi
  done
}
trap mps_quit EXIT
IFS=, read -ra specs <<<"${SPECS:-2 dev_rma}"
for spec in "${specs[@]}"; do
  set -- $spec; n=$1; t=$2
  log=$O/${t}_np$n.log
  [ "${NOMPS:-0}" = 1 ] || mps_start diag || exit 1 # a fresh daemon each: a crash can take one down
  env USHMEM_FAKE_HOSTS=2 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$((100 / n)) $MPIRUN -n $n "$B/tests/cuda/$t" >"$log" 2>&1 &
  job=$!
  for _ in $(seq $((L - 15))); do kill -0 $job 2>/dev/null || break; sleep 1; done
  if kill -0 $job 2>/dev/null; then
    echo "==== still running after $((L - 15)) s: hang report, stacks" >>"$log"
    pkill -URG -f "$B/tests/cuda/$t\$"; sleep 1
    stacks "$t" "$O/${t}_np${n}_stacks.txt"
    kill $job; sleep 2; pkill -9 -f "$B/tests/cuda/$t\$"
  fi
  wait $job; rc=$?
  mps_quit >/dev/null
  echo "== $t np$n: exit $rc"
  grep -v "^\[vm\|^ *[0-9]* */lib\|^---\|^$\|^  \|: thread [0-9]* (" "$log" | tail -${TAILN:-10} | cut -c1-250
  # crash backtraces (Open MPI's): libushmem's frames by name
  for a in $(grep -o 'libushmem.so.0(+0x[0-9a-f]*)' "$log" | sort -u | sed 's/.*(+\(0x[0-9a-f]*\))/\1/'); do
    echo "  $a: $(addr2line -f -C -e "$B/libushmem.so.0" "$a" 2>&1 | tr '\n' ' ')"
  done
  for a in $(grep -o "tests/cuda/$t(+0x[0-9a-f]*)" "$log" | sort -u | sed 's/.*(+\(0x[0-9a-f]*\))/\1/'); do
    echo "  $t $a: $(addr2line -f -i -s -C -e "$B/tests/cuda/$t" "$a" 2>&1 | tr '\n' ' ')"
  done
  python3 bench/cuda/stack_lines.py "$log" "$B" | sort | uniq -c | cut -c1-400 | tee "$O/${t}_np${n}_threads.txt" | grep -v "event_base_loop\|cuda-EvtHandlr\|cuda0000" | head -${STACKN:-40}
  [ -f "$O/${t}_np${n}_stacks.txt" ] && grep -E "^#[0-9]+ .* in (ushmemi|t_|serve|proxy|consumer|carry|staged|quiet|MPI_|PMPI_|cu[A-Z]|shmem)" "$O/${t}_np${n}_stacks.txt" | awk '{$1="";$2=""; print}' | cut -c1-120 | sort | uniq -c | sort -rn | head -25
done
