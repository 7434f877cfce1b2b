#!/bin/bash
# A device wait that nothing satisfies ends at USHMEM_DEVICE_WAIT_TIMEOUT: with
# the timeout at 1 s, `dev_wait timeout` (a wait_until_any on words nobody sets)
# must print one line per PE naming the PE, the call and the timeout, trap, and
# the job must fail well before ushrun's own timeout. Skips (77) without a GPU
# or where device waits are off (there the gate refuses first: dev_refuse.sh).
# usage: dev_wait_timeout.sh USHRUN DEV_WAIT_BINARY
set -u
ushrun=$1 prog=$2
export USHMEM_DEVICE=${USHMEM_DEVICE:-0} USHMEM_DEVICE_WAIT_TIMEOUT=1
t0=$SECONDS
out=$(timeout 170 "$ushrun" --timeout 120 -n 2 "$prog" timeout 2>&1)
rc=$?
if grep -q "SKIP" <<<"$out" && ! grep -q "TIMEOUT:" <<<"$out"; then
  grep -m1 "SKIP" <<<"$out"
  exit 77
fi
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ $rc -ne 0 ] || bad "the job exited 0"
[ $((SECONDS - t0)) -lt 100 ] || bad "the job took $((SECONDS - t0)) s (the wait did not time out?)"
# Under MPS (USHRUN_MPS=1) the first PE's trap also ends the other PE's kernel
# (cudaErrorLaunchFailure) before its own wait times out, about one run in
# three on an H100: there one line is enough, and every host must still see its
# kernel fail.
lines=0
for pe in 0 1; do
  if grep -q "PE $pe: shmemx_dev_wait_until_any: waited more than 1 s" <<<"$out"; then
    lines=$((lines + 1))
  elif [ "${USHRUN_MPS:-0}" != 1 ]; then
    bad "PE $pe printed no timeout line naming shmemx_dev_wait_until_any"
  fi
  grep -q "PE $pe: TIMEOUT: cudaStreamSynchronize returned" <<<"$out" ||
    bad "PE $pe: the host did not see the kernel fail"
done
[ $lines -ge 1 ] || bad "no PE printed a timeout line naming shmemx_dev_wait_until_any"
if [ $fail -ne 0 ]; then
  echo "--- output (exit $rc) ---"
  echo "$out" | head -40
  exit 1
fi
echo "PASS: device wait timed out on both PEs (job exit $rc):"
grep -F "waited more than" <<<"$out"
exit 0
