#!/bin/bash
# The deprecated header location OpenSHMEM 1.5 and 1.6 still list: a program that includes
# <mpp/shmem.h> and <mpp/shmemx.h> compiles with ushcc and runs on 2 PEs.
set -u
: "${USHRUN:?}" "${BUILD_DIR:?}" "${SRC_DIR:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$BUILD_DIR/tools/ushcc" -Wall -Werror "$SRC_DIR/tests/tools/mpp_hello.c" -o "$tmp/mpp_hello" ||
  { echo "FAIL: ushcc cannot compile a program that includes <mpp/shmem.h>"; exit 1; }
out=$(SHMEM_SYMMETRIC_SIZE=16M timeout 30 "$USHRUN" -n 2 "$tmp/mpp_hello" 2>&1) ||
  { echo "FAIL: the mpp program failed: $out"; exit 1; }
grep -q "mpp: PE 0 of 2 got 1" <<<"$out" && grep -q "mpp: PE 1 of 2 got 0" <<<"$out" ||
  { echo "FAIL: mpp program output: $out"; exit 1; }
echo "PASS <mpp/shmem.h> and <mpp/shmemx.h> with ushcc, 2 PEs"
