#!/bin/bash
# Hang diagnosis (issue 22, item 9). Before, `ushrun --timeout` said only
# "timeout after 3 s; stopping 3 PEs". Now on the timeout, and on SIGUSR1 sent
# to ushrun, every PE prints one line: the blocking call it waits in, on what,
# for which PE and team, for how long; or "computing, not in ushmem"; with
# USHMEM_HANG_STACKS=1 every thread's call stack as well.
set -u
: "${USHRUN:?}" "${BUILD_DIR:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
export SHMEM_SYMMETRIC_SIZE=16M
unset USHMEM_RANK USHMEM_NPES RANK WORLD_SIZE MASTER_ADDR SHMEM_DEBUG

# PE 0 waits for a flag nobody sets, PE 1 in a barrier, PE 2 computes forever;
# with "lock", PE 2 holds a lock that PE 0 waits for instead.
cat > "$tmp/hang.c" <<'C'
#include <shmem.h>
#include <string.h>

static long flag, lock;
static volatile unsigned long spin;

int main(int argc, char **argv)
{
    shmem_init();
    int me = shmem_my_pe();
    if (argc > 1 && !strcmp(argv[1], "lock")) {
        if (me == 2)
            shmem_set_lock(&lock);
        shmem_barrier_all();
        if (me == 0)
            shmem_set_lock(&lock);
    } else if (me == 0) {
        shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
    }
    if (me == 1)
        shmem_barrier_all();
    for (;;)
        spin++;
}
C
"$BUILD_DIR/tools/ushcc" "$tmp/hang.c" -o "$tmp/hang" || { echo "FAIL compile"; exit 1; }

expect() { # what, output, regex
  if echo "$2" | grep -Eq "$3"; then
    echo "ok   $1: $(echo "$2" | grep -E "$3" | head -1)"
  else
    echo "FAIL $1: no line matching '$3'"; echo "$2" | sed 's/^/    /'; fail=1
  fi
}

t0=$(date +%s%N)
out=$(timeout 60 "$USHRUN" --timeout 3 -n 3 "$tmp/hang" 2>&1); rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $rc -eq 124 ] || { echo "FAIL timeout: status $rc, not 124"; fail=1; }
[ $ms -lt 8000 ] || { echo "FAIL timeout: took $ms ms"; fail=1; }
expect "timeout" "$out" '^ushrun: timeout after 3 s; stopping 3 PEs \(0-2\); where each PE is:$'
expect "wait_until" "$out" '^ushmem: PE 0: shmem_long_wait_until: waiting on 0x[0-9a-f]+ \(data segment offset 0x[0-9a-f]+\), for any PE, for [0-9]+\.[0-9] s$'
expect "barrier" "$out" '^ushmem: PE 1: shmem_barrier_all: waiting on flag 0x[0-9a-f]+ \(heap offset 0x[0-9a-f]+\), for PE [02], team world, for [0-9]+\.[0-9] s$'
expect "computing" "$out" '^ushmem: PE 2: computing, not in ushmem$'
[ "$(echo "$out" | grep -c '^ushmem: PE ')" = 3 ] || { echo "FAIL timeout: not one line per PE"; echo "$out" | sed 's/^/    /'; fail=1; }

# USHMEM_HANG_STACKS=1: every thread's stack below the lines, one block per
# thread (written at once, so PEs do not interleave), through the API call.
out=$(USHMEM_HANG_STACKS=1 timeout 60 "$USHRUN" --timeout 3 -n 3 "$tmp/hang" 2>&1)
expect "stacks: PE 0's thread" "$out" '^ushmem: PE 0: thread [0-9]+ \(hang\):$'
blk=$(echo "$out" | sed -n '/^ushmem: PE 0: thread/,/^[^ ]/p')
expect "stacks: PE 0 in the wait" "$blk" '^  libushmem\.so\.0\(shmem_long_wait_until\+0x[0-9a-f]+\) \[\+0x[0-9a-f]+\]$'
expect "stacks: PE 0 from main" "$blk" '^  hang \[\+0x[0-9a-f]+\]$'
expect "stacks: still the one-line report" "$out" '^ushmem: PE 2: computing, not in ushmem$'

# SIGUSR1 to ushrun: the same report while the job goes on.
timeout 60 "$USHRUN" --timeout 6 -n 3 "$tmp/hang" lock > "$tmp/usr1.out" 2>&1 & pid=$!
sleep 2
kill -USR1 "$(pgrep -P $pid -x ushrun || echo $pid)" 2>/dev/null
sleep 1
mid=$(cat "$tmp/usr1.out")
wait $pid; rc=$?
out=$(cat "$tmp/usr1.out")
expect "SIGUSR1" "$mid" '^ushrun: SIGUSR1: where each PE is:$'
expect "lock" "$mid" '^ushmem: PE 0: shmem_set_lock: waiting on 0x[0-9a-f]+ \(data segment offset 0x[0-9a-f]+\), held by PE 2, for [0-9]+\.[0-9] s$'
expect "lock holder computing" "$mid" '^ushmem: PE 2: computing, not in ushmem$'
if echo "$mid" | grep -q "timeout after"; then echo "FAIL SIGUSR1 stopped the job"; fail=1; fi
[ $rc -eq 124 ] || { echo "FAIL SIGUSR1 job: status $rc, not 124 (the job must go on until its timeout)"; fail=1; }
exit $fail
