#!/bin/bash
# Checks ushrun --mps against a fake nvidia-cuda-mps-control (CI has no GPU and no MPS).
# Usage: tests/launcher/test_ushrun_mps.sh path/to/ushrun
# Every ushrun run is wrapped in timeout(1) so a launcher bug fails a check instead of hanging.
# shellcheck disable=SC2016 # the $USHMEM_* and $CUDA_* in single quotes are for the PEs' shells
set -u

USHRUN=${1:?usage: $0 path/to/ushrun}
USHRUN=$(cd "$(dirname "$USHRUN")" && pwd)/$(basename "$USHRUN")
# Under /tmp, not $TMPDIR: ushrun passes over a $TMPDIR too long for MPS's socket paths.
TMP=$(mktemp -d /tmp/test-ushrun-mps.XXXXXX)
failures=0

cleanup() {
    # Fake daemons a failed check may have left behind.
    [ -f "$TMP/all-pids" ] && xargs -r kill -9 <"$TMP/all-pids" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

pass() { echo "PASS: $1"; }
fail() {
    echo "FAIL: $1"
    shift
    for line in "$@"; do echo "    $line"; done
    failures=$((failures + 1))
}

# The fake: `-d` starts a background loop (the "daemon") that records its pid in the log
# directory and, like the real one, in the pipe directory's pid file, then creates the control
# FIFO; without -d it reads commands, and "quit" kills the loop and removes the control FIFO.
# FAKE_MPS_FAIL: -d fails. FAKE_MPS_DELAY: seconds before control appears. FAKE_MPS_NEVER_UP:
# control never appears. FAKE_MPS_IGNORE_QUIT: quit is recorded but does nothing.
mkdir -p "$TMP/bin" "$TMP/tmpdir" "$TMP/empty"
cat >"$TMP/bin/nvidia-cuda-mps-control" <<'EOF'
#!/bin/bash
rec=${FAKE_MPS_RECORD:?}
pipe=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}
if [ "${1-}" = -d ]; then
    if [ -n "${FAKE_MPS_FAIL-}" ]; then
        echo "fake: cannot start" >&2
        exit 1
    fi
    (
        echo "$BASHPID" >"$CUDA_MPS_LOG_DIRECTORY/fake.pid"
        echo "$BASHPID" >"$pipe/nvidia-cuda-mps-control.pid"
        echo "$BASHPID" >>"$rec.all-pids"
        echo "start $BASHPID $pipe $CUDA_MPS_LOG_DIRECTORY" >>"$rec"
        sleep "${FAKE_MPS_DELAY:-0}"
        [ -n "${FAKE_MPS_NEVER_UP-}" ] || mkfifo "$pipe/control"
        while :; do sleep 0.5; done
    ) </dev/null &
    exit 0
fi
while read -r cmd; do
    [ "$cmd" = quit ] || continue
    echo "quit $pipe" >>"$rec"
    [ -n "${FAKE_MPS_IGNORE_QUIT-}" ] && exit 0
    kill "$(cat "$CUDA_MPS_LOG_DIRECTORY/fake.pid")"
    rm -f "$pipe/control" "$pipe/nvidia-cuda-mps-control.pid"
done
EOF
chmod +x "$TMP/bin/nvidia-cuda-mps-control"

export PATH="$TMP/bin:$PATH"
export TMPDIR="$TMP/tmpdir" # ushrun's private directories go here: empty after every job
export FAKE_MPS_RECORD="$TMP/record"
# Never pick up a real daemon of this machine (the default /tmp/nvidia-mps).
export CUDA_MPS_PIPE_DIRECTORY="$TMP/no-daemon"
unset CUDA_MPS_LOG_DIRECTORY CUDA_MPS_ACTIVE_THREAD_PERCENTAGE USHRUN_GPUS CUDA_VISIBLE_DEVICES \
    USHRUN_VERBOSE USHRUN_MPS USHRUN_TIMEOUT USHMEM_MPS FAKE_MPS_FAIL FAKE_MPS_DELAY \
    FAKE_MPS_NEVER_UP FAKE_MPS_IGNORE_QUIT

# run LIMIT ARGS...: runs ushrun under a hard limit; sets rc, secs, and fills $TMP/out, $TMP/err.
run() {
    local limit=$1 start end
    shift
    : >"$FAKE_MPS_RECORD"
    start=$(date +%s.%N)
    timeout -k 2 "$limit" "$USHRUN" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    rc=$?
    end=$(date +%s.%N)
    secs=$(echo "$end - $start" | bc)
    cat "$FAKE_MPS_RECORD.all-pids" >>"$TMP/all-pids" 2>/dev/null
    rm -f "$FAKE_MPS_RECORD.all-pids"
}

# expect NAME WANT_RC [MAX_SECS]
expect_rc() {
    local name=$1 want=$2 max=${3:-}
    if [ "$rc" -ne "$want" ]; then
        fail "$name" "exit status $rc, want $want" "stdout: $(head -c 400 "$TMP/out")" \
            "stderr: $(head -c 400 "$TMP/err")"
        return 1
    fi
    if [ -n "$max" ] && [ "$(echo "$secs > $max" | bc)" = 1 ]; then
        fail "$name" "took ${secs}s, limit ${max}s"
        return 1
    fi
    return 0
}

alive() { ps -o stat= -p "$1" 2>/dev/null | grep -qv '^Z'; }
# A SIGKILLed process takes a moment to die on a loaded machine: alive after 3 s is alive.
still_alive() {
    local i
    for i in $(seq 30); do
        alive "$1" || return 1
        sleep 0.1
    done
    return 0
}

# The last job's fake daemon: "start PID PIPE LOG" from the record.
daemon_field() { grep '^start ' "$FAKE_MPS_RECORD" | tail -1 | cut -d' ' -f"$1"; }

# check_stopped NAME [quit|killed]: the last job's daemon was asked to quit (or, never up, not
# asked), is gone, and ushrun's temporary directory is removed.
check_stopped() {
    local name="$1: daemon stopped, directory removed" how=${2:-quit} pid pipe
    pid=$(daemon_field 2)
    pipe=$(daemon_field 3)
    if [ -z "$pid" ]; then
        fail "$name" "no daemon was started" "stderr: $(head -c 400 "$TMP/err")"
    elif [ "$how" = quit ] && ! grep -qx "quit $pipe" "$FAKE_MPS_RECORD"; then
        fail "$name" "the daemon was not asked to quit" "record: $(cat "$FAKE_MPS_RECORD")"
    elif [ "$how" = killed ] && grep -q '^quit' "$FAKE_MPS_RECORD"; then
        fail "$name" "quit sent to a daemon that never came up"
    elif still_alive "$pid"; then
        fail "$name" "daemon $pid still running"
    elif [ -n "$(ls -A "$TMPDIR")" ]; then
        fail "$name" "left in \$TMPDIR: $(ls -A "$TMPDIR")"
        rm -rf "${TMPDIR:?}"/*
    else
        pass "$name"
    fi
}

# --- (1) what the PEs see ---
pe_env='echo "$USHMEM_RANK ${USHMEM_MPS-unset} ${CUDA_MPS_PIPE_DIRECTORY-unset}'
pe_env+=' ${CUDA_MPS_LOG_DIRECTORY-unset} ${CUDA_MPS_ACTIVE_THREAD_PERCENTAGE-unset}"'
# check_env NAME NPES WANT_PCT [PIPE LOG]: every PE printed USHMEM_MPS=1, the pipe and log
# directories (default: the started daemon's) and the percentage.
check_env() {
    local name=$1 npes=$2 pct=$3 pipe=${4:-$(daemon_field 3)} log=${5:-$(daemon_field 4)}
    if ! expect_rc "$name" 0; then
        return 1
    elif [ "$(wc -l <"$TMP/out")" != "$npes" ] || [ -z "$pipe" ] ||
        ! awk -v p="$pipe" -v l="$log" -v c="$pct" \
            '$2 != 1 || $3 != p || $4 != l || $5 != c { exit 1 }' "$TMP/out"; then
        fail "$name" "want '1 $pipe $log $pct' from $npes PEs, got:" "$(cat "$TMP/out")"
        return 1
    fi
    pass "$name"
}

for c in "4 2 50" "4 1 25" "3 2 50" "3 1 33" "7 2 25" "2 8 100"; do
    read -r n g want <<<"$c"
    USHRUN_GPUS=$g run 10 -n "$n" --mps sh -c "$pe_env"
    check_env "-n $n, USHRUN_GPUS=$g -> $want%" "$n" "$want" && check_stopped "-n $n"
done
run 10 -n 1 --mps sh -c "$pe_env"
check_env "-n 1 -> 100%" 1 100
CUDA_VISIBLE_DEVICES=0,1 run 10 -n 4 --mps sh -c "$pe_env"
check_env "CUDA_VISIBLE_DEVICES=0,1 -n 4 -> 50%" 4 50
CUDA_VISIBLE_DEVICES=GPU-a,GPU-b,GPU-c,GPU-d run 10 -n 4 --mps sh -c "$pe_env"
check_env "CUDA_VISIBLE_DEVICES of 4 -n 4 -> 100%" 4 100
USHRUN_GPUS=1 CUDA_VISIBLE_DEVICES=0,1 run 10 -n 4 --mps sh -c "$pe_env"
check_env "USHRUN_GPUS wins over CUDA_VISIBLE_DEVICES" 4 25
USHRUN_MPS=1 USHRUN_GPUS=2 run 10 -n 2 sh -c "$pe_env"
check_env "USHRUN_MPS=1 is --mps" 2 100 && check_stopped "USHRUN_MPS=1"

USHRUN_MPS=0 run 10 -n 2 sh -c "$pe_env"
if expect_rc "no --mps: nothing MPS" 0 && [ ! -s "$FAKE_MPS_RECORD" ] &&
    awk -v p="$CUDA_MPS_PIPE_DIRECTORY" '$2 != "unset" || $3 != p || $5 != "unset" { exit 1 }' \
        "$TMP/out"; then
    pass "no --mps: nothing MPS"
elif [ "$rc" -eq 0 ]; then fail "no --mps: nothing MPS" "$(cat "$TMP/out" "$FAKE_MPS_RECORD")"; fi

run 10 -n 1 --mps sh -c 'stat -c %a "$(dirname "$CUDA_MPS_PIPE_DIRECTORY")"
    stat -c %a "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"'
if expect_rc "private directory" 0 && [ "$(tr '\n' ' ' <"$TMP/out")" = "700 700 700 " ] &&
    case $(daemon_field 3) in "$TMPDIR"/ushrun-mps-*/pipe) true ;; *) false ;; esac then
    pass "private directory: under \$TMPDIR, mode 0700"
elif [ "$rc" -eq 0 ]; then
    fail "private directory" "modes: $(cat "$TMP/out")" "pipe: $(daemon_field 3)"
fi

# --- (5) a percentage the user chose is kept ---
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=70 USHRUN_GPUS=1 run 10 -n 4 --mps sh -c "$pe_env"
check_env "user's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=70 kept" 4 70

# --- (2) the daemon is stopped however the job ends ---
run 10 -n 2 --mps true
expect_rc "job succeeds -> 0" 0 && check_stopped "job succeeds"
run 10 -n 2 --mps sh -c 'exit $((USHMEM_RANK == 1 ? 3 : 0))'
if expect_rc "PE exits 3 -> 3" 3 &&
    grep -q '^ushrun: PE 1 (pid [0-9]*) exited with status 3' "$TMP/err"; then
    check_stopped "PE exits 3"
elif [ "$rc" -eq 3 ]; then fail "PE exits 3" "stderr: $(cat "$TMP/err")"; fi
run 20 -n 2 --mps --timeout 1 sleep 60
if expect_rc "--timeout 1 -> 124" 124 6 &&
    grep -q '^ushrun: timeout after 1 s; stopping 2 PEs' "$TMP/err"; then
    check_stopped "--timeout"
elif [ "$rc" -eq 124 ]; then fail "--timeout 1 -> 124" "stderr: $(cat "$TMP/err")"; fi

# signal_ushrun SIG WAIT_FILE ARGS...: starts ushrun, waits for WAIT_FILE (if given), sends SIG
# to ushrun itself (not the timeout(1) wrapper); sets rc.
signal_ushrun() {
    local sig=$1 wait_file=$2 pid
    shift 2
    : >"$FAKE_MPS_RECORD"
    timeout -k 2 20 "$USHRUN" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null &
    pid=$!
    for _ in $(seq 50); do
        if [ -z "$wait_file" ] || [ -e "$wait_file" ]; then break; fi
        sleep 0.1
    done
    sleep 0.3
    kill -"$sig" "$(pgrep -P $pid)"
    wait $pid
    rc=$?
    cat "$FAKE_MPS_RECORD.all-pids" >>"$TMP/all-pids" 2>/dev/null
    rm -f "$FAKE_MPS_RECORD.all-pids"
}
signal_ushrun TERM "$TMP/pe.0" -n 2 --mps sh -c "touch $TMP/pe.\$USHMEM_RANK; sleep 60"
if [ $rc -eq 143 ] && grep -q '^ushrun: received signal 15' "$TMP/err"; then
    check_stopped "SIGTERM to ushrun"
else fail "SIGTERM to ushrun -> 143" "exit status $rc" "stderr: $(cat "$TMP/err")"; fi

# A signal while the daemon is still coming up: no PE runs, the daemon is killed.
rm -f "$TMP"/pe.*
FAKE_MPS_DELAY=3 signal_ushrun TERM "" -n 2 --mps sh -c "touch $TMP/pe.\$USHMEM_RANK"
if [ $rc -eq 143 ] && grep -q '^ushrun: received signal 15 .* while starting MPS' "$TMP/err" &&
    ! ls "$TMP"/pe.* >/dev/null 2>&1; then
    check_stopped "SIGTERM while MPS starts" killed
else fail "SIGTERM while MPS starts -> 143, no PE" "exit status $rc" "stderr: $(cat "$TMP/err")"; fi

# A daemon that ignores quit is killed after the grace period; the job's status stays.
FAKE_MPS_IGNORE_QUIT=1 run 20 -n 1 --mps true
if expect_rc "daemon ignoring quit" 0 12 &&
    grep -q '^ushrun: --mps: the MPS control daemon did not quit within 5 s; killing it$' \
        "$TMP/err"; then
    check_stopped "daemon ignoring quit"
elif [ "$rc" -eq 0 ]; then fail "daemon ignoring quit" "stderr: $(cat "$TMP/err")"; fi

# A daemon that fails to start: no PE runs, exit 1, its words shown.
FAKE_MPS_FAIL=1 run 10 -n 1 --mps touch "$TMP/pe.failed"
if [ "$rc" -eq 1 ] && [ ! -e "$TMP/pe.failed" ] && [ -z "$(ls -A "$TMPDIR")" ] &&
    grep -q '^ushrun: --mps: nvidia-cuda-mps-control -d exited with status 1$' "$TMP/err" &&
    grep -q 'fake: cannot start' "$TMP/err"; then
    pass "-d fails -> 1, no PE, directory removed"
else fail "-d fails -> 1, no PE, directory removed" "exit status $rc" "stderr: $(cat "$TMP/err")"; fi
FAKE_MPS_NEVER_UP=1 run 20 -n 1 --mps touch "$TMP/pe.never"
if expect_rc "daemon never up -> 1" 1 15 && [ ! -e "$TMP/pe.never" ] &&
    grep -q '^ushrun: --mps: the MPS control daemon did not come up within 10 s' "$TMP/err"; then
    check_stopped "daemon never up" killed
elif [ "$rc" -eq 1 ]; then fail "daemon never up -> 1" "stderr: $(cat "$TMP/err")"; fi

# --- (3) a daemon already running is used and left running ---
mkdir -p "$TMP/running"
: >"$TMP/running/control"
CUDA_MPS_PIPE_DIRECTORY=$TMP/running USHRUN_GPUS=1 run 10 -n 2 --mps sh -c "$pe_env"
if check_env "running daemon: used" 2 50 "$TMP/running" unset; then
    if [ -s "$FAKE_MPS_RECORD" ] || [ ! -e "$TMP/running/control" ] || [ -s "$TMP/err" ]; then
        fail "running daemon: not started, not quit, nothing said" \
            "record: $(cat "$FAKE_MPS_RECORD")" "stderr: $(cat "$TMP/err")"
    else pass "running daemon: not started, not quit, nothing said"; fi
fi
CUDA_MPS_PIPE_DIRECTORY=$TMP/running USHRUN_VERBOSE=1 run 10 -n 1 --mps true
if expect_rc "running daemon: USHRUN_VERBOSE says so" 0 &&
    grep -q "^ushrun: --mps: using the MPS daemon already running at $TMP/running" "$TMP/err" &&
    [ ! -s "$FAKE_MPS_RECORD" ]; then
    pass "running daemon: USHRUN_VERBOSE says so"
elif [ "$rc" -eq 0 ]; then fail "running daemon: USHRUN_VERBOSE" "stderr: $(cat "$TMP/err")"; fi

# A control file left by a stopped daemon (its pid file names no process) is not used.
mkdir -p "$TMP/stale"
: >"$TMP/stale/control"
sleep 0 &
echo $! >"$TMP/stale/nvidia-cuda-mps-control.pid"
wait
CUDA_MPS_PIPE_DIRECTORY=$TMP/stale run 10 -n 1 --mps sh -c "$pe_env"
check_env "stale control file: own daemon started" 1 100 && check_stopped "stale control file"

# The default pipe directory, when no daemon runs there (skipped where one does).
if [ ! -e /tmp/nvidia-mps/control ]; then
    : >"$FAKE_MPS_RECORD"
    env -u CUDA_MPS_PIPE_DIRECTORY USHRUN_GPUS=1 \
        timeout -k 2 10 "$USHRUN" -n 2 --mps sh -c "$pe_env" >"$TMP/out" 2>"$TMP/err" </dev/null
    rc=$?
    check_env "CUDA_MPS_PIPE_DIRECTORY unset: own daemon started" 2 50 &&
        check_stopped "CUDA_MPS_PIPE_DIRECTORY unset"
fi

# --- (4) errors ---
timeout -k 2 10 env PATH="$TMP/empty" "$USHRUN" -n 1 --mps /bin/true >"$TMP/out" 2>"$TMP/err"
rc=$?
want='ushrun: --mps: nvidia-cuda-mps-control not found on PATH (install the NVIDIA driver utilities or drop --mps)'
if [ "$rc" -eq 2 ] && [ "$(cat "$TMP/err")" = "$want" ] && [ -z "$(ls -A "$TMPDIR")" ]; then
    pass "no nvidia-cuda-mps-control on PATH -> 2, one line"
else fail "no nvidia-cuda-mps-control on PATH -> 2" "exit status $rc" "stderr: $(cat "$TMP/err")"; fi
for bad in abc 0 -1 2x; do
    USHRUN_GPUS=$bad run 10 -n 1 --mps true
    if [ "$rc" -eq 2 ] && grep -q "^ushrun: USHRUN_GPUS: '$bad' is not a number of GPUs" \
        "$TMP/err" && [ ! -s "$FAKE_MPS_RECORD" ]; then
        pass "USHRUN_GPUS=$bad -> 2"
    else fail "USHRUN_GPUS=$bad -> 2" "exit status $rc" "stderr: $(cat "$TMP/err")"; fi
done

run 10 --help
if [ "$rc" -eq 0 ] && grep -q -- '--mps' "$TMP/out"; then pass "--help mentions --mps"; else
    fail "--help mentions --mps" "exit status $rc"; fi

if [ $failures -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all checks passed"
