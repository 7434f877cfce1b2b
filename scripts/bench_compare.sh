#!/usr/bin/env bash
# bench_compare.sh: build bench/shmem_bench.c with ushcc and with Open MPI's oshcc, run each
# with 2 PEs on this host and print the two tables side by side with ushmem/OSHMEM ratios.
#
# usage: scripts/bench_compare.sh [--json FILE] [-h]
# environment:
#   BENCH_SRC    benchmark source (default: bench/shmem_bench.c; bench/shmem_coll_bench.c)
#   NPES         PEs per run (default 2)
#   USHCC        ushmem compiler wrapper         (default: build/tools/ushcc)
#   USHRUN       ushmem launcher, with its -n    (default: build/tools/ushrun -n 2)
#   OSHCC        Open MPI compiler wrapper       (default: oshcc)
#   OSHRUN       Open MPI launcher, with its -np (default: see OSHRUN_DEFAULT below)
#   QUICK=1      quick mode (bench -q, one run each)
#   REPS         runs per implementation; each number is the best of them (default 3, QUICK 1)
#   MAX_SIZE_MB  largest message in MiB (default 16)
#   BENCH_ARGS   extra shmem_bench arguments, e.g. "-o put,get"
#   RUN_TIMEOUT  seconds per run before it is killed (default 60)
#   BENCH_BUILD_DIR  where binaries and raw outputs go (default: a temporary folder, removed)
#
# Why these OSHMEM flags: Open MPI 4.1's OSHMEM crashes (SIGSEGV) in shmem_finalize with the
# osc/rdma component, so it is excluded; spml/ucx is the only SPML in 4.1 and is named so a
# missing UCX fails loudly instead of silently; root needs --allow-run-as-root and 2 PEs on
# a 2-core machine need --oversubscribe to be safe.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC=${BENCH_SRC:-$ROOT/bench/shmem_bench.c}
NPES=${NPES:-2}
OSHRUN_DEFAULT="oshrun --allow-run-as-root --oversubscribe --mca osc ^rdma --mca spml ucx -np $NPES"

USHCC=${USHCC:-$ROOT/build/tools/ushcc}
USHRUN=${USHRUN:-$ROOT/build/tools/ushrun -n $NPES}
OSHCC=${OSHCC:-oshcc}
OSHRUN=${OSHRUN:-$OSHRUN_DEFAULT}
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then REPS=${REPS:-1}; else REPS=${REPS:-3}; fi
MAX_SIZE_MB=${MAX_SIZE_MB:-16}
BENCH_ARGS=${BENCH_ARGS:-}
RUN_TIMEOUT=${RUN_TIMEOUT:-60}
CFLAGS="-O2 -std=c11 -Wall -Wextra -Werror"
JSON=""

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
    --json) [ $# -ge 2 ] || { echo "bench_compare: --json needs a file" >&2; exit 2; }
        JSON=$2; shift 2 ;;
    --json=*) JSON=${1#--json=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_compare: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done

if [ -n "${BENCH_BUILD_DIR:-}" ]; then
    WORK=$BENCH_BUILD_DIR
    mkdir -p "$WORK" || exit 2
else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench_compare.XXXXXX") || exit 2
    trap 'rm -rf "$WORK"' EXIT
fi

# Both runtimes read SHMEM_SYMMETRIC_SIZE; the bench needs 2 x the largest message.
export SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-$((2 * MAX_SIZE_MB + 16))M}

bench_args="-s ${MAX_SIZE_MB}M"
[ "$QUICK" = 1 ] && bench_args="$bench_args -q"
[ -n "$BENCH_ARGS" ] && bench_args="$bench_args $BENCH_ARGS"

cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1)
[ -n "$cpu_model" ] || cpu_model=unknown
ncpus=$(nproc 2>/dev/null || echo "?")
ncores=$(lscpu -p=core,socket 2>/dev/null | grep -v '^#' | sort -u | wc -l)
run_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)

status=0
ush_note="" osh_note=""
ush_files="" osh_files=""

# build NAME CC OUT: compile with CC; prints why on failure.
build() {
    local name=$1 cc=$2 out=$3
    # shellcheck disable=SC2086 # CFLAGS is a word list on purpose
    if ! $cc $CFLAGS "$SRC" -o "$out" >"$WORK/$name.build.log" 2>&1; then
        echo "bench_compare: $name build failed ($cc):" >&2
        tail -n 20 "$WORK/$name.build.log" >&2
        return 1
    fi
}

# run_one NAME "LAUNCHER" BIN REP: one run; prints the output file's path.
run_one() {
    local name=$1 launcher=$2 bin=$3 rep=$4 out="$WORK/$1.out.$4"
    # shellcheck disable=SC2086 # launcher and bench_args are word lists on purpose
    timeout -k 5 "$RUN_TIMEOUT" $launcher "$bin" $bench_args >"$out" 2>"$WORK/$name.err.$rep"
    local rc=$?
    if [ $rc -ne 0 ]; then
        local why="exit $rc"
        [ $rc -eq 124 ] || [ $rc -eq 137 ] && why="timed out after ${RUN_TIMEOUT}s"
        echo "bench_compare: $name run $rep failed ($why): $launcher $bin $bench_args" >&2
        tail -n 20 "$WORK/$name.err.$rep" >&2
        return 1
    fi
    echo "$out"
}

ush_ok=0 osh_ok=0
if [ -x "${USHCC%% *}" ] || command -v "${USHCC%% *}" >/dev/null 2>&1; then
    if build ushmem "$USHCC" "$WORK/shmem_bench.ushmem"; then ush_ok=1; else
        ush_note="build failed"; status=1; fi
else
    ush_note="not built: no ushcc at '$USHCC' (build ushmem first, or set USHCC/USHRUN)"
fi
if command -v "${OSHCC%% *}" >/dev/null 2>&1; then
    if build oshmem "$OSHCC" "$WORK/shmem_bench.oshmem"; then osh_ok=1; else
        osh_note="build failed"; status=1; fi
else
    osh_note="not installed: no '$OSHCC' (apt-get install openmpi-bin libopenmpi-dev)"
fi

# Alternate the two implementations so drift on the machine (VM core placement, other
# load) hits both alike; each number is then the best of REPS runs.
for rep in $(seq 1 "$REPS"); do
    if [ $ush_ok = 1 ]; then
        if f=$(run_one ushmem "$USHRUN" "$WORK/shmem_bench.ushmem" "$rep"); then
            ush_files="$ush_files $f"
        else ush_ok=0; ush_note="run failed"; status=1; fi
    fi
    if [ $osh_ok = 1 ]; then
        if f=$(run_one oshmem "$OSHRUN" "$WORK/shmem_bench.oshmem" "$rep"); then
            osh_files="$osh_files $f"
        else osh_ok=0; osh_note="run failed"; status=1; fi
    fi
done
# A failed rep invalidates that implementation: partial data would mislead.
[ $ush_ok = 1 ] || ush_files=""
[ $osh_ok = 1 ] || osh_files=""

if [ -z "$ush_files" ] && [ -z "$osh_files" ]; then
    echo "bench_compare: nothing to report (ushmem: ${ush_note:-?}; OSHMEM: ${osh_note:-?})" >&2
    exit 1
fi

# The awk program below reads every output file, tagged by impl=ush|osh, keeps per
# (impl, section, key) the row with the lowest latency (column 2), and prints the merged
# table (and the JSON when asked). Bench output grammar: see bench/shmem_bench.c.
# shellcheck disable=SC2086 # file lists are word lists on purpose
awk -v cpu="$cpu_model" -v ncpus="$ncpus" -v ncores="$ncores" -v date="$run_date" \
    -v ushcmd="$USHRUN" -v oshcmd="$OSHRUN" -v ushnote="$ush_note" -v oshnote="$osh_note" \
    -v reps="$REPS" -v quick="$QUICK" -v args="$bench_args" -v json="$JSON" '
function jstr(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
function jnum(v) { return (v == "" || v == "-") ? "null" : v + 0 }
function ratio(u, o) { return (u == "" || o == "" || o + 0 == 0) ? "-" : sprintf("%.3f", u / o) }
function better(name) { return (name ~ /^bw/) ? "higher" : "lower" }
FNR == 1 { sec = "" }
/^# section / { sec = $3; if (!(sec in seen)) { seen[sec] = 1; order[++nsec] = sec } next }
/^# cols / {
    if (!(sec in ncols)) {
        n = 0
        for (i = 3; i <= NF; i++) if ($i != "iters") colname[sec, ++n] = $i
        ncols[sec] = n
    }
    next
}
/^#/ || NF == 0 || sec == "" { next }
{
    key = $1
    if (!((sec, key) in haskey)) { haskey[sec, key] = 1; keys[sec, ++nkeys[sec]] = key }
    id = impl SUBSEP sec SUBSEP key
    if (!(id in best) || $2 + 0 < best[id] + 0) {
        best[id] = $2
        for (i = 2; i <= ncols[sec]; i++) val[id, i] = $(i)
    }
}
function get(im, s, k, i) { return ((im, s, k) in best) ? val[im, s, k, i] : "" }
function show(v) { return v == "" ? "-" : v }
END {
    printf "# ushmem vs OSHMEM: bench/shmem_bench.c, %s\n", args
    printf "# machine: %s, %s CPUs (%s cores); date: %s\n", cpu, ncpus, ncores, date
    printf "# ushmem: %s%s\n", ushcmd, ushnote == "" ? "" : "  [" ushnote "]"
    printf "# OSHMEM: %s%s\n", oshcmd, oshnote == "" ? "" : "  [" oshnote "]"
    printf "# ratio = ushmem/OSHMEM. lat_* ratio: lower is better (< 1: ushmem faster);\n"
    printf "#   bw_* ratio: higher is better (> 1: ushmem faster). Best of %s run(s) each.\n", reps
    if (json != "") {
        printf "{\n  \"date\": %s,\n  \"machine\": {\"cpu\": %s, \"cpus\": %s, \"cores\": %s},\n", \
            jstr(date), jstr(cpu), jnum(ncpus), jnum(ncores) > json
        printf "  \"bench_args\": %s,\n  \"reps\": %s,\n  \"quick\": %s,\n", \
            jstr(args), jnum(reps), (quick == 1 ? "true" : "false") > json
        printf "  \"ushmem\": {\"cmd\": %s, \"note\": %s},\n", jstr(ushcmd), jstr(ushnote) > json
        printf "  \"oshmem\": {\"cmd\": %s, \"note\": %s},\n", jstr(oshcmd), jstr(oshnote) > json
        printf "  \"ratio\": \"ushmem/oshmem; lat_*: lower is better, bw_*: higher is better\",\n" > json
        printf "  \"sections\": {" > json
    }
    for (s = 1; s <= nsec; s++) {
        sec = order[s]; n = ncols[sec]
        printf "\n# section %s\n# cols %s", sec, colname[sec, 1]
        for (i = 2; i <= n; i++)
            printf " ush_%s osh_%s %s_ratio(%s)", colname[sec, i], colname[sec, i], \
                colname[sec, i], better(colname[sec, i])
        printf "\n"
        if (json != "") printf "%s\n    %s: [", (s > 1 ? "," : ""), jstr(sec) > json
        for (k = 1; k <= nkeys[sec]; k++) {
            key = keys[sec, k]
            printf "%-10s", key
            if (json != "") printf "%s\n      {%s: %s", (k > 1 ? "," : ""), jstr(colname[sec, 1]), jnum(key) > json
            for (i = 2; i <= n; i++) {
                u = get("ush", sec, key, i); o = get("osh", sec, key, i); r = ratio(u, o)
                printf " %12s %12s %8s", show(u), show(o), r
                if (json != "")
                    printf ", \"ushmem_%s\": %s, \"oshmem_%s\": %s, \"%s_ratio\": %s", \
                        colname[sec, i], jnum(u), colname[sec, i], jnum(o), colname[sec, i], jnum(r) > json
            }
            printf "\n"
            if (json != "") printf "}" > json
        }
        if (json != "") printf "\n    ]" > json
    }
    if (json != "") { printf "\n  }\n}\n" > json; close(json) }
}' impl=ush $ush_files impl=osh $osh_files || status=1

[ -n "$ush_note" ] && echo "# note: ushmem $ush_note"
[ -n "$osh_note" ] && echo "# note: OSHMEM $osh_note"
[ -n "$JSON" ] && [ -s "$JSON" ] && echo "# json: $JSON"
exit $status
