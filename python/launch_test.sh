#!/bin/bash
# Run a Python command (usually the test suite) on N PEs under one launcher.
#
#   python/launch_test.sh [-l ushrun|mpirun|torchrun] [-n N] [-t SECONDS] [-b BUILD_DIR]
#                         [-i auto|torch|mpi|raw|uid] -c "pytest tests/ -v"
#
# The command runs in python/ with /usr/bin/python3 (or $USHMEM_PYTHON): a
# leading `pytest` becomes `python -m pytest`, a leading `python`/`python3`
# the chosen interpreter. The package is taken from python/ and its extension
# from BUILD_DIR/python/ushmem (default: build/). -i picks the init tier the
# test suite's conftest uses (USHMEM_TEST_INIT; default: the ladder
# torch -> mpi -> raw). The whole job is killed after -t seconds (default 120).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
launcher=ushrun npes=2 timeout_s=120 build="${USHMEM_BUILD_DIR:-$root/build}" cmd="" tier=""

usage() {
  sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
while getopts "l:n:t:b:i:c:h" opt; do
  case $opt in
    l) launcher=$OPTARG ;;
    n) npes=$OPTARG ;;
    t) timeout_s=$OPTARG ;;
    b) build=$OPTARG ;;
    i) tier=$OPTARG ;;
    c) cmd=$OPTARG ;;
    *) usage ;;
  esac
done
[ -n "$cmd" ] || usage
case $npes in ''|*[!0-9]*) echo "launch_test.sh: -n needs a number" >&2; exit 2 ;; esac
build=$(cd "$build" 2>/dev/null && pwd) || { echo "launch_test.sh: no build directory $build (run make)" >&2; exit 2; }

py=${USHMEM_PYTHON:-/usr/bin/python3}
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
[ -d "$build/python/ushmem" ] && export USHMEM_PYTHON_EXT_DIR="$build/python/ushmem"
export SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-64M}
export USHMEM_STATIC_DATA=0
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}   # torch on few cores: one thread per PE
export PYTHONDONTWRITEBYTECODE=1                # N PEs must not race on .pyc files
export USHMEM_TEST_LAUNCHER=$launcher USHMEM_TEST_NPES=$npes
[ -n "$tier" ] && export USHMEM_TEST_INIT=$tier

# Split the command like the shell would, then make it a python invocation.
eval "set -- $cmd"
case ${1:-} in
  pytest|py.test) shift; set -- -m pytest "$@" ;;
  python|python3|"$py") shift ;;
esac
# "$@" now holds interpreter arguments: -m module ... or script.py ...

cd "$here" || exit 2
kill_after=10
case $launcher in
  ushrun)
    # (ushrun exports RANK and WORLD_SIZE itself: the seed suite reads WORLD_SIZE before init.)
    exec timeout -k $kill_after $((timeout_s + 5)) \
      "$build/tools/ushrun" -n "$npes" --timeout "$timeout_s" --tag-output "$py" "$@" ;;
  mpirun)
    command -v mpirun >/dev/null || { echo "launch_test.sh: mpirun not found (Debian: openmpi-bin)" >&2; exit 2; }
    # Containers often forbid the CMA single-copy path; vader works without it.
    export OMPI_MCA_btl_vader_single_copy_mechanism=none
    export PY_COLORS=${PY_COLORS:-0}  # mpirun gives the ranks a pty: no escape codes in logs
    exec timeout -k $kill_after "$timeout_s" \
      mpirun --allow-run-as-root --oversubscribe --bind-to none --tag-output -n "$npes" \
        -x PYTHONPATH -x USHMEM_PYTHON_EXT_DIR -x SHMEM_SYMMETRIC_SIZE -x USHMEM_STATIC_DATA \
        -x OMP_NUM_THREADS -x PYTHONDONTWRITEBYTECODE -x USHMEM_TEST_LAUNCHER -x USHMEM_TEST_NPES \
        -x PY_COLORS \
        ${USHMEM_TEST_INIT:+-x USHMEM_TEST_INIT} \
        ${USHMEM_USE_TORCH_INIT:+-x USHMEM_USE_TORCH_INIT} "$py" "$@" ;;
  torchrun)
    "$py" -c "import torch.distributed.run" 2>/dev/null || { echo "launch_test.sh: torch.distributed.run not importable by $py (Debian: python3-torch)" >&2; exit 2; }
    # torch 1.13 on Python 3.11 cannot parse its own default "--redirects 0" /
    # "--tee 0" (enum.Flag iteration skips 0), so ask for stdout through a log
    # file, teed to the console with a [rankN] prefix; stderr stays direct.
    logs=$(mktemp -d "${TMPDIR:-/tmp}/ushmem-torchrun.XXXXXX")
    trap 'rm -rf "$logs"' EXIT
    # --standalone would always rendezvous on port 29400: two jobs at once
    # (two checkouts, a user's torchrun) would collide. Take a free port.
    port=$("$py" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
    PYTHONUNBUFFERED=1 timeout -k $kill_after "$timeout_s" \
      "$py" -m torch.distributed.run --nnodes=1 --nproc_per_node="$npes" \
        --rdzv_backend=c10d --rdzv_endpoint="127.0.0.1:$port" --rdzv_id="ushmem-$$" \
        --redirects 1 --tee 1 --log_dir "$logs" "$@"
    exit $? ;;
  *) echo "launch_test.sh: unknown launcher '$launcher' (ushrun, mpirun, torchrun)" >&2; exit 2 ;;
esac
