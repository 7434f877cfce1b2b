#!/bin/sh
# make demo: run the C example with 4 PEs, then print the benchmark table
# (against Open MPI's OSHMEM when it is installed).
set -eu
build=${1:-build}
echo "== ushmem demo: examples/c/ring.c on 4 PEs"
"$build/tools/ushcc" -O2 examples/c/ring.c -o "$build/ring"
SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-64M} "$build/tools/ushrun" -n 4 --timeout 60 "$build/ring"
echo
echo "== benchmark (2 PEs)"
if command -v oshcc >/dev/null 2>&1; then
  USHCC="$build/tools/ushcc" USHRUN="$build/tools/ushrun -n 2" QUICK=${QUICK:-1} scripts/bench_compare.sh
else
  "$build/tools/ushrun" -n 2 "$build/bench/shmem_bench" -q
fi
