#!/usr/bin/env bash
# bench_noise.sh: waits under load. Builds bench/shmem_noise_bench.c with ushcc and with
# Open MPI's oshcc and runs both, alternating, under each condition:
#   2 PEs with 0, 1, 2 and 4 busy background processes, and 4 PEs (2 ping-pong pairs);
# then a stuck job (PE 1 sleeps STUCK_S seconds while the others wait) for the CPU cost.
# Prints median, p99 and max of the per-iteration times (round trip / barrier), the
# ushmem/OSHMEM ratios, and the CPU seconds per PE of the stuck job.
#
# environment:
#   USHCC, USHRUN_BIN   ushmem wrapper and launcher (default build/tools/ushcc, ushrun)
#   OSHCC, OSHRUN_BIN   Open MPI's (default oshcc, oshrun)
#   CPUS                run everything (PEs and busy processes) on these CPUs with taskset,
#                       e.g. CPUS=0,1 to act as a 2-core machine on a larger one
#   ITERS, DURATION     at most ITERS iterations and DURATION seconds per test (defaults
#                       100000, 3); REPS runs each (default 3)
#   STUCK_S             seconds of the stuck test (default 10; 0 skips it)
#   RUN_TIMEOUT         seconds before one run is killed (default 60)
#   CONDITIONS          default "2:0 2:1 2:2 2:4 4:0" (PEs:busy processes)
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
USHCC=${USHCC:-$ROOT/build/tools/ushcc}
USHRUN_BIN=${USHRUN_BIN:-$ROOT/build/tools/ushrun}
OSHCC=${OSHCC:-oshcc}
OSHRUN_BIN=${OSHRUN_BIN:-oshrun}
ITERS=${ITERS:-100000}
DURATION=${DURATION:-3}
REPS=${REPS:-3}
STUCK_S=${STUCK_S:-10}
RUN_TIMEOUT=${RUN_TIMEOUT:-60}
CONDITIONS=${CONDITIONS:-"2:0 2:1 2:2 2:4 4:0"}
CPUS=${CPUS:-}
TS=""
[ -n "$CPUS" ] && TS="taskset -c $CPUS"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench_noise.XXXXXX") || exit 2
BURNERS=""
cleanup() { [ -n "$BURNERS" ] && kill $BURNERS 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
export SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-16M}

CFLAGS="-O2 -std=c11 -Wall -Wextra -Werror"
ush=0 osh=0
$USHCC $CFLAGS "$ROOT/bench/shmem_noise_bench.c" -o "$WORK/ush" 2>"$WORK/ush.log" && ush=1 ||
    { echo "bench_noise: ushmem build failed:"; cat "$WORK/ush.log"; } >&2
if command -v "$OSHCC" >/dev/null 2>&1; then
    $OSHCC $CFLAGS "$ROOT/bench/shmem_noise_bench.c" -o "$WORK/osh" 2>"$WORK/osh.log" && osh=1 ||
        { echo "bench_noise: OSHMEM build failed:"; cat "$WORK/osh.log"; } >&2
else
    echo "bench_noise: no $OSHCC: OSHMEM columns empty (apt-get install openmpi-bin libopenmpi-dev)" >&2
fi
[ $ush = 1 ] || exit 1

run() { # impl npes args...
    local impl=$1 n=$2; shift 2
    if [ "$impl" = ush ]; then
        $TS timeout -k 5 "$RUN_TIMEOUT" "$USHRUN_BIN" -n "$n" "$WORK/ush" "$@"
    else
        $TS timeout -k 5 "$RUN_TIMEOUT" "$OSHRUN_BIN" --allow-run-as-root --oversubscribe --mca osc ^rdma \
            --mca spml ucx --bind-to none -np "$n" "$WORK/osh" "$@" 2>/dev/null
    fi
}

start_burners() {
    BURNERS=""
    for _ in $(seq 1 "$1"); do
        $TS sh -c 'while :; do :; done' &
        BURNERS="$BURNERS $!"
    done
}
stop_burners() { [ -n "$BURNERS" ] && kill $BURNERS 2>/dev/null; wait $BURNERS 2>/dev/null; BURNERS=""; }

echo "# bench_noise: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs${CPUS:+, run on CPUs $CPUS}; $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "# per-iteration times in ns (round trip for pingpong); each cell: median over $REPS runs of that run's statistic"
echo "# cols condition test ush_median osh_median ratio ush_p99 osh_p99 ratio ush_max osh_max"
for cond in $CONDITIONS; do
    n=${cond%%:*} b=${cond##*:}
    start_burners "$b"
    sleep 0.2
    # Each test in its own run: a hang in one (OSHMEM's 4-PE ping-pong hangs at
    # times) costs only that test's cells.
    for rep in $(seq 1 "$REPS"); do
        for t in pingpong barrier; do
            run ush "$n" -n "$ITERS" -d "$DURATION" -o $t >>"$WORK/ush.$cond.$rep" ||
                echo "bench_noise: ushmem $t run failed ($cond)" >&2
            [ $osh = 1 ] && { run osh "$n" -n "$ITERS" -d "$DURATION" -o $t >>"$WORK/osh.$cond.$rep" ||
                echo "bench_noise: OSHMEM $t run failed ($cond)" >&2; }
        done
    done
    stop_burners
    for test in pingpong barrier; do
        /usr/bin/python3 - "$WORK" "$cond" "$test" "$REPS" <<'PY'
import sys, statistics, glob
work, cond, test, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def stats(impl):
    out = {}
    for f in glob.glob(f"{work}/{impl}.{cond}.*"):
        for line in open(f):
            w = line.split()
            if w and w[0] == test:
                d = dict(zip(w[1::2], w[2::2]))
                for k in ("median_ns", "p99_ns", "max_ns"):
                    out.setdefault(k, []).append(float(d[k]))
    return {k: statistics.median(v) for k, v in out.items()}
u, o = stats("ush"), stats("osh")
def cell(d, k): return f"{d[k]:.0f}" if k in d else "-"
def ratio(k): return f"{u[k] / o[k]:.2f}" if k in u and k in o and o[k] else "-"
pes, busy = cond.split(":")
print(f"{pes}PEs+{busy}busy {test} {cell(u,'median_ns')} {cell(o,'median_ns')} {ratio('median_ns')} "
      f"{cell(u,'p99_ns')} {cell(o,'p99_ns')} {ratio('p99_ns')} {cell(u,'max_ns')} {cell(o,'max_ns')}")
PY
    done
done

if [ "$STUCK_S" -gt 0 ]; then
    echo "# stuck: PE 1 sleeps ${STUCK_S}s; PE 0 in wait_until, the others in barrier_all; CPU seconds per PE"
    for impl in ush osh; do
        [ $impl = osh ] && [ $osh = 0 ] && continue
        run $impl 4 -o none -t "$STUCK_S" | sed "s/^/$impl /"
    done
fi
