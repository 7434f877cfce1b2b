#!/bin/bash
# A PE killed while its proxy, or its peers' proxies, carry requests (device
# heap of another pretend host): the job ends within 15 s, with a line naming
# the dead rank, and no survivor runs on.
# usage: proxy_killed.sh PROGRAM MPIRUN [MPIRUN ARGS...]   (exit 77: no GPU)
set -u
prog=$1; shift
"$prog" probe >/dev/null; rc=$?
[ $rc -eq 77 ] && { echo "SKIP: no usable GPU"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: probe exited $rc"; exit 1; }
fail=0
for mode in target origin; do
  victim=0; [ $mode = origin ] && victim=2
  start=$(date +%s)
  out=$(USHMEM_FAKE_HOSTS=2 timeout 90 "$@" -n 4 "$prog" $mode 2>&1); rc=$?
  el=$(($(date +%s) - start))
  if grep -q "needs 4 PEs on two pretend hosts" <<<"$out"; then echo "SKIP: $out"; exit 77; fi
  named=$(grep -m1 -E "rank $victim .*signal 9|PE $victim .*(killed|signal 9|died|gone|exited)" <<<"$out")
  if [ $rc -ne 0 ] && [ -n "$named" ] && [ $el -le 20 ] && ! grep -q "still running after" <<<"$out"; then
    echo "PASS $mode: job ended in ${el} s (exit $rc): $named"
  else
    echo "FAIL $mode: exit $rc after ${el} s, named: '${named}'"; echo "$out" | grep -v "^\[vm" | head -30; fail=1
  fi
done
exit $fail
