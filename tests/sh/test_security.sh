#!/bin/bash
# Issue 15: a stranger races the sockets of many jobs during init and must get
# nothing (no descriptor, no byte, no admission) and cost nothing (every job
# succeeds, with its data untouched, within a few seconds; refusals are
# logged). Legs: a stranger of the same uid (another process), one of another
# uid (setpriv to uid 1001 when we are root; skipped otherwise, with the
# reason), torchrun-style jobs with the stranger also at the TCP root, and
# mpirun jobs when the MPI module is built. Each leg prints a "figure:" line.
# SEC_JOBS2 / SEC_JOBS8 / SEC_JOBS_TCP change the job counts (100 / 20 / 20).
set -u
: "${USHRUN:?}" "${BUILD_DIR:?}" "${SRC_DIR:?}"
job="$BUILD_DIR/tests/sec_job"
if [ ! -x "$job" ] || [ ! -x "$BUILD_DIR/tests/stranger" ]; then
  echo "FAIL: $BUILD_DIR/tests/sec_job and stranger are not built"; exit 1
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
cp "$BUILD_DIR/tests/stranger" "$tmp/stranger" && chmod 755 "$tmp/stranger"
export SHMEM_SYMMETRIC_SIZE=16M
unset USHMEM_TRANSPORTS USHMEM_FAKE_HOSTS USHMEM_SECRET
N2=${SEC_JOBS2:-100} N8=${SEC_JOBS8:-20} NT=${SEC_JOBS_TCP:-20}
LIMIT_MS=5000 # a job that took longer was delayed (they take ~10-40 ms)
fail=0
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1"; shift; printf '%s\n' "$@" | sed 's/^/    /'; fail=1; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }

# run_jobs LABEL COUNT CMD...: runs CMD COUNT times, stderr to $tmp/LABEL.err;
# sets FAILS, SLOWEST (ms), TOTAL (ms).
run_jobs() {
  local label=$1 count=$2 i s d t0
  shift 2
  FAILS=0 SLOWEST=0
  t0=$(ms)
  for ((i = 0; i < count; i++)); do
    s=$(ms)
    timeout 30 "$@" >/dev/null 2>>"$tmp/$label.err" || FAILS=$((FAILS + 1))
    d=$(( $(ms) - s ))
    [ $d -gt $SLOWEST ] && SLOWEST=$d
  done
  TOTAL=$(( $(ms) - t0 ))
}

# start_stranger LABEL [as-uid] [args]: background stranger, pid in SPID.
start_stranger() {
  local label=$1 as=$2
  shift 2
  # Its summary goes to stdout: a file we open, so another uid can write it.
  if [ -n "$as" ]; then
    setpriv --reuid="$as" --regid="$as" --clear-groups "$tmp/stranger" -t 300 \
      "$@" >"$tmp/$label.sum" 2>"$tmp/$label.stranger" &
  else
    "$tmp/stranger" -t 300 "$@" >"$tmp/$label.sum" 2>"$tmp/$label.stranger" &
  fi
  SPID=$!
  sleep 0.1
}

stop_stranger() { # LABEL -> SRC, SUM
  kill -TERM "$SPID" 2>/dev/null
  wait "$SPID"; SRC=$?
  SUM=$(cat "$tmp/$1.sum" 2>/dev/null || echo "stranger: no summary")
}

# Sum the stranger summaries (names, connects, fds, leaked bytes, admitted).
add_sum() { # SUMLINE
  local -a f
  read -r -a f <<<"${1#stranger: }"
  T_NAMES=$((T_NAMES + ${f[1]:-0})) T_CONN=$((T_CONN + ${f[3]:-0}))
  T_FDS=$((T_FDS + ${f[5]:-0})) T_LEAK=$((T_LEAK + ${f[7]:-0})) T_ADM=$((T_ADM + ${f[9]:-0}))
}
reset_sum() { T_NAMES=0 T_CONN=0 T_FDS=0 T_LEAK=0 T_ADM=0 STRANGER_RC=0; }

check_leg() { # LABEL JOBS ERRFILE: the verdict and the figure line
  local label=$1 jobs=$2 err=$3 refusals local
  refusals=$(grep -c "refused" "$err" 2>/dev/null)
  local=$(grep -c "refused a local connection" "$err" 2>/dev/null)
  echo "figure: $label: jobs $jobs failed $FAILS slowest_ms $SLOWEST total_ms $TOTAL" \
       "refusals_logged $refusals (fd exchange $local, bootstrap $((refusals - local)))" \
       "stranger_names $T_NAMES connects $T_CONN fds $T_FDS leaked_bytes $T_LEAK admitted $T_ADM"
  [ "$FAILS" = 0 ] && ok "$label: all $jobs jobs succeeded, data untouched" \
    || bad "$label: $FAILS of $jobs jobs failed" "$(grep -v refused "$err" | head -5)"
  [ "$SLOWEST" -lt $LIMIT_MS ] && ok "$label: slowest job ${SLOWEST} ms" \
    || bad "$label: a job took ${SLOWEST} ms (limit $LIMIT_MS)"
  [ "$STRANGER_RC" = 0 ] && [ $((T_FDS + T_LEAK + T_ADM)) = 0 ] \
    && ok "$label: the stranger got nothing" \
    || bad "$label: the stranger got something" "$(cat "$tmp"/*.stranger | grep -v '^$' | head -5)"
  if grep -v "refused" "$err" | grep -q "ushmem"; then
    bad "$label: jobs printed other errors" "$(grep -v refused "$err" | head -5)"
  fi
}

# ushrun_leg LABEL AS_UID: N2 2-PE and N8 8-PE ushrun jobs with a stranger racing.
ushrun_leg() {
  local label=$1 as=$2 f s t
  reset_sum
  : >"$tmp/leg.err"
  start_stranger leg "$as" -s 20 -w 3000
  run_jobs leg "$N2" "$USHRUN" -n 2 "$job"
  f=$FAILS s=$SLOWEST t=$TOTAL
  run_jobs leg "$N8" "$USHRUN" -n 8 "$job"
  FAILS=$((FAILS + f)) SLOWEST=$((SLOWEST > s ? SLOWEST : s)) TOTAL=$((TOTAL + t))
  stop_stranger leg
  STRANGER_RC=$SRC
  add_sum "$SUM"
  check_leg "$label ($N2 x 2 PEs + $N8 x 8 PEs)" $((N2 + N8)) "$tmp/leg.err"
}

# 0. Baseline, nobody racing.
run_jobs base 10 "$USHRUN" -n 2 "$job"
echo "figure: baseline: 10 2-PE jobs, slowest_ms $SLOWEST total_ms $TOTAL"
[ "$FAILS" = 0 ] || bad "baseline jobs fail" "$(head -5 "$tmp/base.err")"

# 1. Same uid (another process of this user).
ushrun_leg "same-uid stranger vs ushrun" ""

# 2. Another uid.
other=$(getent passwd ushstranger | cut -d: -f3)
other=${other:-1001}
as_other=""
if [ "$(id -u)" != 0 ]; then
  echo "SKIP other-uid leg: not root (cannot become uid $other)"
elif ! command -v setpriv >/dev/null; then
  echo "SKIP other-uid leg: setpriv not installed"
elif ! setpriv --reuid="$other" --regid="$other" --clear-groups "$tmp/stranger" -t 0 >/dev/null 2>&1; then
  echo "SKIP other-uid leg: cannot run $tmp/stranger as uid $other"
else
  as_other=$other
  ushrun_leg "uid-$other stranger vs ushrun" "$other"
  grep -q "another user" "$tmp/leg.err" && ok "uid-$other: refusals name another user" \
    || echo "note: no connection of the uid-$other stranger was accepted during these jobs"
fi

# 3. torchrun-style (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...): a stranger
# per job also hammers the TCP root on MASTER_PORT + 1; every other job's
# stranger is the other uid when we can be it (root refuses it at accept: the
# owner of a local TCP socket is in /proc/net/tcp).
torch_job() { # PORT
  local r pids=() rc=0 job=$SEC_JOB
  for r in 0 1; do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$1 "$job" &
    pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r" || rc=1; done
  return $rc
}
export -f torch_job
export SEC_JOB=$job
reset_sum
: >"$tmp/tcp.err"
FT=0 ST=0 TT=0
# Ports below the ephemeral range: the stranger's own connects must not land on them.
read -r eph _ </proc/sys/net/ipv4/ip_local_port_range
eph=${eph:-32768}
for ((i = 0; i < NT; i++)); do
  port=$((10000 + (RANDOM * 7 + 2 * i) % (eph - 10010)))
  start_stranger tcp "$([ $((i % 2)) = 1 ] && echo "$as_other")" -s 24 -w 3000 -p $((port + 1))
  run_jobs tcp 1 bash -c 'torch_job "$0"' "$port"
  FT=$((FT + FAILS)) TT=$((TT + TOTAL))
  [ "$SLOWEST" -gt "$ST" ] && ST=$SLOWEST
  stop_stranger tcp
  [ "$SRC" = 0 ] || STRANGER_RC=$SRC
  add_sum "$SUM"
done
FAILS=$FT SLOWEST=$ST TOTAL=$TT
who="same-uid"
[ -n "$as_other" ] && who="same-uid and uid-$as_other"
check_leg "$who strangers vs torchrun-style jobs ($NT x 2 PEs, TCP root raced too)" "$NT" "$tmp/tcp.err"
if [ -n "$as_other" ]; then
  grep -q "another user (uid $as_other)" "$tmp/tcp.err" \
    && ok "torchrun-style: the uid-$as_other stranger was refused at accept" \
    || bad "torchrun-style: no refusal names uid $as_other" "$(head -3 "$tmp/tcp.err")"
fi

# 4. mpirun, when the MPI module is built.
if [ -f "$BUILD_DIR/libushmem_mpi.so" ] && command -v mpirun >/dev/null; then
  reset_sum
  : >"$tmp/mpi.err"
  start_stranger mpi "" -s 20 -w 3000
  run_jobs mpi 10 mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -n 2 "$job"
  stop_stranger mpi
  STRANGER_RC=$SRC
  add_sum "$SUM"
  check_leg "same-uid stranger vs mpirun jobs (10 x 2 ranks)" 10 "$tmp/mpi.err"
else
  echo "SKIP mpirun leg: libushmem_mpi.so not built or no mpirun"
fi

exit $fail
