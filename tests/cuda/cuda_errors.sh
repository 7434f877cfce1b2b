#!/bin/bash
# Each bad-input case stops the job with a clear one-line error.
# usage: cuda_errors.sh USHRUN CUDA_ERRORS_BINARY
set -u
ushrun=$1 prog=$2
"$prog" probe >/dev/null; rc=$?
[ $rc -eq 77 ] && { echo "SKIP: no usable GPU"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: probe exited $rc"; exit 1; }
fail=0
check() { # case, expected text, extra env...
  local c=$1 want=$2; shift 2
  out=$(env "$@" timeout 60 "$ushrun" -n 2 "$prog" "$c" 2>&1); rc=$?
  if [ $rc -ne 0 ] && grep -q -- "$want" <<<"$out"; then
    echo "PASS $c: $(grep -m1 -- "$want" <<<"$out")"
  else
    echo "FAIL $c (exit $rc), wanted '$want':"; echo "$out" | head -20; fail=1
  fi
}
check nonsym "shmemx_putmem_on_stream: dest .* is not a symmetric address"
check nonsym_dev "shmemx_putmem_on_stream: dest .* is not a symmetric address"
check sigwait_nonsym "shmemx_signal_wait_until_on_stream: sig_addr .* is not a symmetric address"
check devwait "is device memory that is not on the symmetric heap"
check devwait "shmem_uint64_wait_until: ivar .* is not memory this process can read" USHMEM_TRANSPORTS=shm
check nodevice "needs a bound CUDA device" USHMEM_TRANSPORTS=shm
check badpe "PE 2 out of range"
check badcmp "unknown comparison operator 42"
check badsigop "unknown signal operator 7"
check collkernel "USHMEM_CUDA_COLL=kernel needs device-side waits: 2 PEs share GPU" USHMEM_CUDA_COLL=kernel
check badcoll "USHMEM_CUDA_COLL='fast': use auto, copy, leader or kernel" USHMEM_CUDA_COLL=fast
check barkernel "USHMEM_CUDA_BARRIER=kernel needs device-side waits: 2 PEs share GPU" USHMEM_CUDA_BARRIER=kernel
check badbarrier "USHMEM_CUDA_BARRIER='fast': use auto, rounds, mesh or kernel" USHMEM_CUDA_BARRIER=fast
check badproxyctx "USHMEM_PROXY_CONTEXT='shared': use own or primary" USHMEM_PROXY_CONTEXT=shared
exit $fail
