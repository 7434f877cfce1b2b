#!/bin/bash
# make check-python: the Python suite under ushrun with 1, 2 and 4 PEs, under
# torchrun (2 processes, gloo, init_with_torch) and under mpirun (2 ranks,
# init_with_mpi; and on two pretend hosts), each with a timeout; the seed suite (tests/seed) likewise;
# then the overhead benchmark's limit.
#   python/check.sh [BUILD_DIR]     (default build/; `make` builds the extension)
# Each leg's output goes to BUILD_DIR/python/logs/<leg>.log; a failing leg's
# tail is printed. Exit status: the number of failed legs (0: all passed).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:-$here/../build}" 2>/dev/null && pwd) || { echo "ushmem: no build directory ${1:-build} (run make)"; exit 1; }
py=${USHMEM_PYTHON:-/usr/bin/python3}

# What the legs need, as Debian packages.
missing=""
ls "$build"/python/ushmem/_ushmem*.so >/dev/null 2>&1 || missing="$missing python3-dev"
for m in pytest:python3-pytest numpy:python3-numpy torch:python3-torch mpi4py:python3-mpi4py; do
  "$py" -c "import ${m%%:*}" 2>/dev/null || missing="$missing ${m#*:}"
done
command -v mpirun >/dev/null 2>&1 || missing="$missing openmpi-bin"
if [ -n "$missing" ]; then
  echo "ushmem: the Python checks need:$missing"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "ushmem: installing with apt-get:$missing"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      # shellcheck disable=SC2086
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
      exit 1
    case $missing in *python3-dev*)
      echo "ushmem: python3-dev installed; re-run make to build the extension"; exit 1 ;; esac
  else
    echo "ushmem: install them with: sudo apt-get install$missing"
    exit 1
  fi
fi

logs=$build/python/logs
mkdir -p "$logs"
failed=0
leg() { # name, launch_test.sh arguments...
  local name=$1; shift
  local t0=$SECONDS
  "$here/launch_test.sh" -b "$build" "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  local summary
  summary=$(grep -aE "[0-9]+ (passed|failed)" "$logs/$name.log" | tail -1 | sed 's/^\[[^]]*\]\(<[a-z]*>\)\{0,1\}:\{0,1\} *//; s/\[[0-9,]*\]<std[a-z]*>:.*$//; s/\x1b\[[0-9;]*m//g')
  if [ $rc -eq 0 ]; then
    printf 'ushmem: python %-15s ok    %3ss  %s\n' "$name" $((SECONDS - t0)) "$summary"
  else
    printf 'ushmem: python %-15s FAIL  %3ss  (exit %s%s) %s\n' "$name" $((SECONDS - t0)) $rc \
      "$([ $rc -eq 124 ] && echo ', timed out')" "$summary"
    tail -n 40 "$logs/$name.log" | sed 's/^/    /'
    failed=$((failed + 1))
  fi
}
tests="pytest -q tests"
leg ushrun-1 -l ushrun -n 1 -t 90 -c "$tests"
leg ushrun-2 -l ushrun -n 2 -t 90 -c "$tests"
leg ushrun-4 -l ushrun -n 4 -t 120 -c "$tests"
leg torchrun-2 -l torchrun -n 2 -i torch -t 120 -c "$tests"
leg mpirun-2 -l mpirun -n 2 -i mpi -t 120 -c "$tests"
# Each PE on a pretend host of its own: everything through MPI and the proxy.
USHMEM_FAKE_HOSTS=2 leg mpirun-2hosts -l mpirun -n 2 -t 120 -c "$tests"
# The seed suite (rocshmem4py's tests rewritten for ushmem) on its own conftest: its init
# is init_with_torch() with no process group.
seed="pytest -q --confcutdir=tests/seed tests/seed"
leg seed-ushrun-1 -l ushrun -n 1 -t 60 -c "$seed"
leg seed-ushrun-2 -l ushrun -n 2 -t 60 -c "$seed"
leg seed-ushrun-4 -l ushrun -n 4 -t 90 -c "$seed"
leg seed-torchrun-2 -l torchrun -n 2 -t 90 -c "$seed"
leg seed-mpirun-2 -l mpirun -n 2 -t 90 -c "$seed"
USHMEM_FAKE_HOSTS=2 leg seed-mpirun-2hosts -l mpirun -n 2 -t 90 -c "$seed"
# (USHMEM_USE_TORCH_INIT=0 under mpirun runs it over init_with_mpi(), which the mpirun-2
# leg above already uses: left out to keep make check short.)
leg overhead -l ushrun -n 1 -t 60 -c "python bench/bench_overhead.py -n 50000"
[ $failed -eq 0 ] && grep -a "ns" "$logs/overhead.log" | grep -aE "my_pe|putmem 8 B \(buffer <- bytes\)" | sed 's/^\[PE 0\]/ushmem: python overhead  /'
exit $failed
