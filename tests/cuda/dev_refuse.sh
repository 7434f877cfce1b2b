#!/bin/bash
# Where device-side waits are off (2 PEs sharing a GPU without MPS), a kernel
# calling CALL (default shmemx_dev_signal_wait_until; dev_coll: a collective)
# prints one line per PE naming the PE, the call and the remedies, then traps:
# cudaStreamSynchronize fails and the job exits non-zero. Skips (77) without a
# GPU, or where waits are allowed (MPS with SM shares that fit, one PE per GPU).
# usage: dev_refuse.sh USHRUN PROGRAM [CALL]   (PROGRAM: dev_amo, dev_coll: `PROGRAM refuse`)
set -u
ushrun=$1 prog=$2 call=${3:-shmemx_dev_signal_wait_until}
unset USHMEM_DEVICE_WAIT
export USHMEM_DEVICE=${USHMEM_DEVICE:-0}
out=$(timeout 170 "$ushrun" --timeout 120 -n 2 "$prog" refuse 2>&1)
rc=$?
if [ $rc -eq 77 ] && grep -q "SKIP" <<<"$out"; then
  grep -m1 "SKIP" <<<"$out"
  exit 77
fi
if grep -q "WAITS: allowed" <<<"$out"; then
  echo "SKIP: device-side waits are allowed here (MPS or one PE per GPU): nothing to refuse"
  grep "WAITS:" <<<"$out"
  exit 77
fi
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ $rc -ne 0 ] || bad "the job exited 0"
[ $rc -ne 124 ] || bad "the job timed out (the wait was not refused?)"
grep -q "FAIL" <<<"$out" && bad "the program reported a failure"
for pe in 0 1; do
  why=$(grep "PE $pe: WAITS: refused:" <<<"$out")
  [ -n "$why" ] || bad "PE $pe printed no 'WAITS: refused' line (shmemx_dev_why)"
  if grep -q "under MPS" <<<"$why"; then
    # MPS without SM shares that fit (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE unset): refused too.
    want=("device-side waits are off" "PE $pe: $call:" "ushrun --mps"
          "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")
  else
    grep -q "share GPU" <<<"$why" || bad "PE $pe: shmemx_dev_why() does not say 'share GPU': $why"
    want=("device-side waits are off" "PE $pe: $call:" "ushrun --mps"
          "share GPU")
  fi
  lines=$(grep -F -- "device-side waits are off" <<<"$out" | grep -F -- "PE $pe:")
  count=$(grep -c . <<<"$lines")
  [ -n "$lines" ] || count=0
  [ "$count" -eq 1 ] || bad "PE $pe: $count lines saying 'device-side waits are off', want 1"
  for w in "${want[@]}"; do
    grep -qF -- "$w" <<<"$lines" || bad "PE $pe: the refusal line lacks '$w'"
  done
  grep -q "PE $pe: REFUSED: cudaStreamSynchronize returned" <<<"$out" ||
    bad "PE $pe: the host did not see the kernel fail"
done
if [ $fail -ne 0 ]; then
  echo "--- output (exit $rc) ---"
  echo "$out" | head -40
  exit 1
fi
echo "PASS: device wait ($call) refused on both PEs (job exit $rc):"
grep -F -- "device-side waits are off" <<<"$out"
grep "REFUSED:" <<<"$out"
exit 0
