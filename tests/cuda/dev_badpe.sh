#!/bin/bash
# A device call naming a PE outside the team (here PE n_pes) prints one line
# naming the PE, the call and the reason, then traps: the kernel fails and the
# job exits non-zero. Covers the AMOs' rare path (out of line since 2026-12-06),
# p, putmem and signal_op. Needs no device wait, so it runs without MPS too.
# Skips (77) without a GPU.
# usage: dev_badpe.sh USHRUN DEV_AMO_BINARY
set -u
ushrun=$1 prog=$2
export USHMEM_DEVICE=${USHMEM_DEVICE:-0}
fail=0
for call in shmemx_dev_atomic_fetch_add shmemx_dev_atomic_add shmemx_dev_atomic_compare_swap \
  shmemx_dev_p shmemx_dev_putmem shmemx_dev_signal_op; do
  out=$(timeout 120 "$ushrun" --timeout 90 -n 2 "$prog" badpe "$call" 2>&1)
  rc=$?
  if [ $rc -eq 77 ] && grep -q "SKIP" <<<"$out"; then
    grep -m1 "SKIP" <<<"$out"
    exit 77
  fi
  want="ushmem: PE 0: $call: PE 2 is out of range (the team has 2 PEs)"
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -- "$want" <<<"$out" &&
    grep -q "PE 0: TRAPPED" <<<"$out" && ! grep -q "FAIL" <<<"$out"; then
    echo "PASS $call: $(grep -m1 -F -- "$want" <<<"$out")"
  else
    echo "FAIL $call (exit $rc), wanted '$want' and a trap:"
    echo "$out" | head -20
    fail=1
  fi
done
exit $fail
