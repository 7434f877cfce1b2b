#!/bin/bash
# Checks ushrun with real processes. Usage: tests/launcher/test_ushrun.sh path/to/ushrun
# Every ushrun run is wrapped in timeout(1) so a launcher bug fails a check instead of hanging.
# shellcheck disable=SC2016 # the $USHMEM_* in single quotes are for the PEs' shells
set -u

USHRUN=${1:?usage: $0 path/to/ushrun}
USHRUN=$(cd "$(dirname "$USHRUN")" && pwd)/$(basename "$USHRUN")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0

pass() { echo "PASS: $1"; }
fail() {
    echo "FAIL: $1"
    shift
    for line in "$@"; do echo "    $line"; done
    failures=$((failures + 1))
}

# run LIMIT ARGS...: runs ushrun under a hard limit; sets rc, secs, and fills $TMP/out, $TMP/err.
run() {
    local limit=$1 start end
    shift
    start=$(date +%s.%N)
    timeout -k 2 "$limit" "$USHRUN" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    rc=$?
    end=$(date +%s.%N)
    secs=$(echo "$end - $start" | bc)
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

# --- environment contract ---
env_cmd='echo "$USHMEM_RANK $USHMEM_NPES $USHMEM_LOCAL_RANK $USHMEM_LOCAL_SIZE'
env_cmd+=' $USHMEM_BOOTSTRAP_ADDR $USHMEM_SECRET $USHMEM_LAUNCHER $USHMEM_LAUNCHER_PID'
env_cmd+=' ${RANK-unset} ${WORLD_SIZE-unset} ${LOCAL_RANK-unset}"'
run 10 -n 4 env -u LOCAL_RANK sh -c "$env_cmd"
if expect_rc "env: exit 0" 0; then
    ranks=$(cut -d' ' -f1 "$TMP/out" | sort -n | tr '\n' ' ')
    distinct_jobs=$(cut -d' ' -f5-6,8 "$TMP/out" | sort -u | wc -l)
    if [ "$ranks" != "0 1 2 3 " ]; then
        fail "env: distinct ranks 0..3" "got '$ranks'"
    elif ! awk '$2 != 4 || $3 != $1 || $4 != 4 || $7 != "ushrun" || $9 != $1 ||
                $10 != 4 || $11 != "unset" { exit 1 }' "$TMP/out"; then
        fail "env: NPES, LOCAL_RANK, LOCAL_SIZE, LAUNCHER, RANK/WORLD_SIZE, no LOCAL_RANK" \
            "$(cat "$TMP/out")"
    elif [ "$distinct_jobs" != 1 ]; then
        fail "env: one address, secret and launcher pid for the job" "$(cat "$TMP/out")"
    elif ! grep -Eq '^0 [0-9 ]+unix:@ushmem-[0-9a-f]+ [0-9a-f]{32} ushrun [0-9]+ ' "$TMP/out"; then
        fail "env: address and secret format" "$(cat "$TMP/out")"
    else
        pass "env: contract"
    fi
fi
addr1=$(cut -d' ' -f5 "$TMP/out" | head -1)

# RANK / WORLD_SIZE describe the job ushrun starts, whatever ushrun inherited (an enclosing
# torchrun's, say); LOCAL_RANK is never set by ushrun (it binds a GPU) and passes through.
RANK=7 WORLD_SIZE=9 run 10 -n 2 sh -c 'echo "$USHMEM_RANK $RANK $WORLD_SIZE"'
if expect_rc "env: inherited RANK/WORLD_SIZE replaced" 0; then
    if [ "$(sort "$TMP/out" | tr '\n' ' ')" = "0 0 2 1 1 2 " ]; then
        pass "env: inherited RANK/WORLD_SIZE replaced"
    else fail "env: inherited RANK/WORLD_SIZE replaced" "$(cat "$TMP/out")"; fi
fi

# With torchrun's variables all present (RANK, WORLD_SIZE from ushrun; MASTER_ADDR/PORT
# inherited, pointing nowhere), a real program still bootstraps over ushrun's variables.
USHCC=$(dirname "$USHRUN")/ushcc
if [ -x "$USHCC" ]; then
    cat >"$TMP/pes.c" <<'C'
#include <shmem.h>
#include <stdio.h>
int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *x = shmem_malloc(sizeof *x);
    *x = -1;
    shmem_barrier_all();
    shmem_long_p(x, me, (me + 1) % n);
    shmem_barrier_all();
    printf("%d %d %ld\n", me, n, *x);
    shmem_free(x);
    shmem_finalize();
    return 0;
}
C
    if "$USHCC" -O1 "$TMP/pes.c" -o "$TMP/pes" 2>"$TMP/cc"; then
        MASTER_ADDR=192.0.2.1 MASTER_PORT=29500 USHMEM_BOOTSTRAP_TIMEOUT=5 \
            run 20 -n 3 "$TMP/pes"
        if expect_rc "bootstrap: ushrun's variables win over RANK/WORLD_SIZE/MASTER_ADDR" 0 10 &&
            [ "$(sort "$TMP/out" | tr '\n' ' ')" = "0 3 2 1 3 0 2 3 1 " ]; then
            pass "bootstrap: ushrun's variables win over RANK/WORLD_SIZE/MASTER_ADDR"
        elif [ "$rc" -eq 0 ]; then
            fail "bootstrap: ushrun's variables win over RANK/WORLD_SIZE/MASTER_ADDR" \
                "$(cat "$TMP/out")"
        fi
    else fail "bootstrap: compile with ushcc" "$(cat "$TMP/cc")"; fi
else
    echo "SKIP: bootstrap under torchrun-like variables (no ushcc next to ushrun)"
fi
run 10 -n 1 sh -c 'echo $USHMEM_BOOTSTRAP_ADDR'
if [ -n "$addr1" ] && [ "$(cat "$TMP/out")" != "$addr1" ]; then pass "env: fresh job id per run"; else
    fail "env: fresh job id per run" "both runs used $addr1"; fi

# --- exit status ---
run 10 -n 3 true
expect_rc "all exit 0 -> 0" 0 && pass "all exit 0 -> 0"
run 10 -n 3 sh -c 'exit $((USHMEM_RANK == 2 ? 3 : 0))'
if expect_rc "exit status propagates" 3 &&
    grep -q '^ushrun: PE 2 (pid [0-9]*) exited with status 3' "$TMP/err"; then
    pass "exit status propagates"
elif [ "$rc" -eq 3 ]; then fail "exit status propagates" "stderr: $(cat "$TMP/err")"; fi

# --- a PE killed by a signal stops the others ---
run 20 -n 4 sh -c 'if [ $USHMEM_RANK = 1 ]; then kill -9 $$; else sleep 60; fi'
if expect_rc "SIGKILLed PE stops the job" 137 5; then
    want='^ushrun: PE 1 \(pid [0-9]+\) killed by signal 9 \(Killed\); stopping the other 3 PEs$'
    if [ "$(grep -c '^ushrun:' "$TMP/err")" = 1 ] && grep -Eq "$want" "$TMP/err"; then
        pass "SIGKILLed PE stops the job"
    else fail "SIGKILLed PE stops the job" "stderr: $(cat "$TMP/err")"; fi
fi

# PEs that ignore SIGTERM (and their children) get SIGKILL after the grace period.
run 20 -n 3 sh -c 'if [ $USHMEM_RANK = 0 ]; then sleep 0.3; exit 4; fi
    trap "" TERM; sleep 60 & wait'
expect_rc "SIGTERM-deaf PEs are SIGKILLed" 4 5 && pass "SIGTERM-deaf PEs are SIGKILLed"

# Processes the PEs started die with them (zombies left for init to reap count as dead).
run 20 -n 2 sh -c "sleep 61 & echo \$! > $TMP/gc.\$USHMEM_RANK; [ \$USHMEM_RANK = 0 ] && exit 1; wait"
sleep 0.2
alive=$(cat "$TMP"/gc.* 2>/dev/null | xargs -r ps -o stat= -p | grep -vc '^Z')
if expect_rc "grandchildren stopped" 1 5 && [ -s "$TMP/gc.0" ] && [ "$alive" = 0 ]; then
    pass "grandchildren stopped"
elif [ "$rc" -eq 1 ]; then fail "grandchildren stopped" "$alive still alive"; fi

# --- timeout ---
run 20 -n 2 --timeout 1 sleep 60
if expect_rc "--timeout 1 -> 124" 124 4 &&
    grep -q '^ushrun: timeout after 1 s; stopping 2 PEs' "$TMP/err"; then
    pass "--timeout 1 -> 124"
elif [ "$rc" -eq 124 ]; then fail "--timeout 1 -> 124" "stderr: $(cat "$TMP/err")"; fi
USHRUN_TIMEOUT=1 run 20 -n 1 sleep 60
expect_rc "USHRUN_TIMEOUT=1 -> 124" 124 4 && pass "USHRUN_TIMEOUT=1 -> 124"

# --- signals to ushrun are forwarded ---
start=$(date +%s)
timeout -k 2 20 "$USHRUN" -n 2 sleep 60 >/dev/null 2>"$TMP/err" &
pid=$!
sleep 0.5
# timeout(1) runs ushrun as its child; signal ushrun itself, not the wrapper.
kill -INT "$(pgrep -P $pid)"
wait $pid
rc=$?
if [ $rc -eq 130 ] && [ $(($(date +%s) - start)) -le 5 ]; then pass "SIGINT forwarded -> 130"; else
    fail "SIGINT forwarded -> 130" "exit status $rc" "stderr: $(cat "$TMP/err")"; fi

# --- --tag-output ---
run 10 -n 2 --tag-output sh -c 'echo out$USHMEM_RANK; echo err$USHMEM_RANK >&2; printf tail'
if expect_rc "--tag-output" 0; then
    o=$(sort "$TMP/out" | tr '\n' '|')
    e=$(sort "$TMP/err" | tr '\n' '|')
    if [ "$o" = "[PE 0] out0|[PE 0] tail|[PE 1] out1|[PE 1] tail|" ] &&
        [ "$e" = "[PE 0] err0|[PE 1] err1|" ]; then
        pass "--tag-output"
    else fail "--tag-output" "stdout: $o" "stderr: $e"; fi
fi
run 20 -n 3 --tag-output sh -c 'seq 1 100000'
if expect_rc "--tag-output loses nothing" 0 &&
    [ "$(grep -c '^\[PE [012]\] [0-9]*$' "$TMP/out")" = 300000 ]; then
    pass "--tag-output loses nothing"
elif [ "$rc" -eq 0 ]; then fail "--tag-output loses nothing" "$(wc -l <"$TMP/out") lines"; fi

# --- exec failure ---
run 10 -n 2 /nonexistent/prog
if expect_rc "exec failure -> 127" 127 &&
    grep -q "^ushrun: cannot run '/nonexistent/prog': No such file or directory" "$TMP/err"; then
    pass "exec failure -> 127"
elif [ "$rc" -eq 127 ]; then fail "exec failure -> 127" "stderr: $(cat "$TMP/err")"; fi

# --- argument errors ---
for args in "true" "-n" "-n 0 true" "-n -1 true" "-n 4097 true" "-n abc true" "-n 2x true" \
    "-n 2" "--bogus -n 2 true" "-n 2 --timeout xyz true"; do
    # shellcheck disable=SC2086 # intentional splitting of the test's argument list
    run 10 $args
    if [ "$rc" -eq 2 ] && grep -q '^usage: ushrun' "$TMP/err"; then pass "bad args '$args' -> 2"
    else fail "bad args '$args' -> 2" "exit status $rc" "stderr: $(cat "$TMP/err")"; fi
done
for args in "-np 2 true" "--np 2 true" "--np=2 true" "-n2 -t 5 -- true" "--timeout=5 -n 1 true"; do
    # shellcheck disable=SC2086
    run 10 $args
    expect_rc "args '$args' accepted" 0 && pass "args '$args' accepted"
done
run 10 --help
if [ "$rc" -eq 0 ] && grep -q '^usage: ushrun' "$TMP/out"; then pass "--help"; else
    fail "--help" "exit status $rc"; fi
run 10 --version
if [ "$rc" -eq 0 ] && grep -q '^ushrun' "$TMP/out"; then pass "--version"; else
    fail "--version" "exit status $rc"; fi

if [ $failures -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all checks passed"
