#!/usr/bin/env bash
# bench_mpi.sh: bench/shmem_bench.c three ways on this host, side by side:
#   shm  - ushmem under ushrun (peers map each other: memcpy and CPU atomics)
#   mpi  - ushmem under mpirun with USHMEM_TRANSPORTS=mpi (every peer through MPI-3
#          RMA, as peers on other hosts are reached)
#   osh  - Open MPI's OSHMEM (oshcc/oshrun), when installed
# Each number is the best of REPS runs; latencies (lat_*) lower is better, bandwidths
# (bw_*) higher.
#
# usage: scripts/bench_mpi.sh [-h]
# environment:
#   BUILD        ushmem build directory (default: build)
#   NPES         PEs per run (default 2)
#   REPS         runs per implementation (default 3; QUICK=1: 1)
#   QUICK=1      quick mode (bench -q)
#   MAX_SIZE_MB  largest message in MiB (default 4)
#   MPIRUN       mpirun with its options (default: mpirun --allow-run-as-root --oversubscribe
#                --mca btl self,vader)
#   OSHRUN       Open MPI's launcher with its options (default as in bench_compare.sh)
#   RUN_TIMEOUT  seconds per run (default 120)
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
NPES=${NPES:-2}
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then REPS=${REPS:-1}; else REPS=${REPS:-3}; fi
MAX_SIZE_MB=${MAX_SIZE_MB:-4}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
MPIRUN=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe --mca btl self,vader}
OSHRUN=${OSHRUN:-oshrun --allow-run-as-root --oversubscribe --mca osc ^rdma --mca spml ucx}
[ "${1:-}" = -h ] || [ "${1:-}" = --help ] && { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }

export SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-$((2 * MAX_SIZE_MB + 16))M}
args="-s ${MAX_SIZE_MB}M"
[ "$QUICK" = 1 ] && args="$args -q"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench_mpi.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT

USHCC=$BUILD/tools/ushcc USHRUN=$BUILD/tools/ushrun
[ -x "$USHCC" ] || { echo "bench_mpi: no $USHCC: build ushmem first (make)" >&2; exit 2; }
"$USHCC" -O2 "$ROOT/bench/shmem_bench.c" -o "$WORK/bench.ush" || exit 2
notes=""
have_mpi=1
if [ ! -f "$BUILD/libushmem_mpi.so" ] || ! command -v "${MPIRUN%% *}" >/dev/null; then
    have_mpi=0; notes="$notes mpi: libushmem_mpi.so or mpirun missing;"
fi
have_osh=0
if command -v oshcc >/dev/null && oshcc -O2 "$ROOT/bench/shmem_bench.c" -o "$WORK/bench.osh" \
    >"$WORK/osh.build" 2>&1; then have_osh=1; else notes="$notes OSHMEM: not installed or build failed;"; fi

run() { # impl rep command...
    local impl=$1 rep=$2; shift 2
    if ! timeout -k 5 "$RUN_TIMEOUT" "$@" >"$WORK/$impl.$rep" 2>"$WORK/$impl.$rep.err"; then
        echo "bench_mpi: $impl run $rep failed: $*" >&2
        tail -n 5 "$WORK/$impl.$rep.err" >&2
        rm -f "$WORK/$impl.$rep"
    fi
}
for rep in $(seq 1 "$REPS"); do # interleaved, so machine drift hits all alike
    # shellcheck disable=SC2086 # args and the launchers are word lists on purpose
    run shm "$rep" "$USHRUN" -n "$NPES" "$WORK/bench.ush" $args
    [ $have_mpi = 1 ] && run mpi "$rep" $MPIRUN -n "$NPES" -x USHMEM_TRANSPORTS=mpi \
        -x SHMEM_SYMMETRIC_SIZE "$WORK/bench.ush" $args
    [ $have_osh = 1 ] && run osh "$rep" $OSHRUN -np "$NPES" "$WORK/bench.osh" $args
done
lib=$( [ $have_mpi = 1 ] && "$BUILD/tools/ushmem_info" | sed -n 's/^  mpi *usable: //p' )

awk -v npes="$NPES" -v reps="$REPS" -v args="$args" -v lib="$lib" -v notes="$notes" '
FNR == 1 { impl = FILENAME; sub(/.*\//, "", impl); sub(/\..*/, "", impl); sec = "" }
/^# section / { sec = $3; if (!(sec in seen)) { seen[sec] = 1; order[++ns] = sec } next }
/^# cols / { cols[sec] = $4 (NF > 5 ? " " $5 : ""); next }
/^#/ || NF == 0 || sec == "" { next }
{
    k = impl SUBSEP sec SUBSEP $1
    if (!((sec, $1) in hk)) { hk[sec, $1] = 1; keys[sec, ++nk[sec]] = $1 }
    if (!(k in lat) || $2 + 0 < lat[k] + 0) { lat[k] = $2; bw[k] = (NF > 3 ? $3 : "") }
}
function v(a, i, s, key) { return ((i, s, key) in a) ? a[i, s, key] : "-" }
END {
    printf "# bench/shmem_bench.c %s, %d PEs on one host, best of %d runs\n", args, npes, reps
    printf "# shm: ushmem, ushrun (mapped memory)   mpi: ushmem, mpirun + USHMEM_TRANSPORTS=mpi\n"
    printf "# osh: Open MPI OSHMEM (oshrun)          MPI library: %s\n", lib == "" ? "-" : lib
    if (notes != "") printf "# notes:%s\n", notes
    for (s = 1; s <= ns; s++) {
        sec = order[s]; split(cols[sec], c, " ")
        if (sec == "memcpy") continue
        printf "\n# section %s\n# %-10s %12s %12s %12s", sec, "size", "shm_" c[1], "mpi_" c[1], "osh_" c[1]
        if (c[2] != "") printf " %10s %10s %10s", "shm_" c[2], "mpi_" c[2], "osh_" c[2]
        printf "\n"
        for (i = 1; i <= nk[sec]; i++) {
            key = keys[sec, i]
            printf "  %-10s %12s %12s %12s", key, v(lat, "shm", sec, key), v(lat, "mpi", sec, key), v(lat, "osh", sec, key)
            if (c[2] != "") printf " %10s %10s %10s", v(bw, "shm", sec, key), v(bw, "mpi", sec, key), v(bw, "osh", sec, key)
            printf "\n"
        }
    }
}' "$WORK"/shm.* "$WORK"/mpi.[0-9]* "$WORK"/osh.[0-9]* 2>/dev/null
