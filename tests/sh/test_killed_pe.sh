#!/bin/bash
# A PE killed mid-job brings the job down within seconds, the message names the
# PE and the cause, and nothing is left in /dev/shm or /tmp. Both under ushrun
# and without it (PEs started by hand with the launcher's environment, where
# only the library's liveness monitor can notice).
set -u
: "${USHRUN:?}" "${BUILD_DIR:?}" "${SRC_DIR:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
cat > "$tmp/victim.c" <<'C'
#include <shmem.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
static long flag;
int main(int argc, char **argv)
{
    shmem_init();
    shmem_barrier_all();
    if (shmem_my_pe() == 1) {
        if (argc > 1 && argv[1][0] == 'e')
            exit(7); /* exit without finalize */
        raise(SIGKILL);
    }
    shmem_long_wait_until(&flag, SHMEM_CMP_NE, 0); /* never satisfied */
    return 0;
}
C
"$BUILD_DIR/tools/ushcc" -O1 "$tmp/victim.c" -o "$tmp/victim" || exit 1
before=$(ls /dev/shm | sort)

check() { # name, condition
  if eval "$2"; then echo "PASS $1"; else echo "FAIL $1"; fail=1; fi
}

start=$(date +%s)
out=$(timeout 30 "$USHRUN" -n 4 "$tmp/victim" 2>&1); rc=$?
el=$(( $(date +%s) - start ))
echo "$out"
check "ushrun: status 137 for SIGKILL (got $rc)" '[ $rc = 137 ]'
check "ushrun: names PE 1 and the signal" 'grep -q "PE 1 .*killed by signal 9" <<<"$out"'
check "ushrun: job ended in ${el}s" '[ $el -le 10 ]'

out=$(timeout 30 "$USHRUN" -n 3 "$tmp/victim" e 2>&1); rc=$?
echo "$out"
check "exit(7) without finalize: status 7 (got $rc)" '[ $rc = 7 ]'

# Without ushrun: start the PEs by hand; the library must end the job itself.
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
start=$(date +%s)
pids=()
for r in 0 1 2; do
  USHMEM_RANK=$r USHMEM_NPES=3 USHMEM_LOCAL_RANK=$r USHMEM_SECRET=$secret \
  USHMEM_BOOTSTRAP_ADDR="unix:@ushmem-test-$$" timeout 30 "$tmp/victim" 2>"$tmp/err$r" &
  pids+=($!)
done
rcs=""
for p in "${pids[@]}"; do wait "$p"; rcs="$rcs $?"; done
el=$(( $(date +%s) - start ))
cat "$tmp"/err*
check "no launcher: all PEs ended in ${el}s (status:$rcs)" '[ $el -le 15 ] && ! grep -qw 124 <<<"$rcs"'
check "no launcher: survivors exit non-zero" '[ "$(echo $rcs | tr " " "\n" | grep -c "^0$")" = 0 ]'
check "no launcher: a message names PE 1" 'cat "$tmp"/err* | grep -q "PE 1"'

# ushmem creates no files at all; other jobs on the machine (Open MPI's
# shared-memory segments, say) may, so look only at what appeared and is not theirs.
new=$(comm -13 <(echo "$before") <(ls /dev/shm | sort) | grep -v -E '^(vader_segment|sm_segment|ompi|psm2|ucx|sem\.)' || true)
check "nothing left in /dev/shm (new: ${new:-none})" '[ -z "$new" ]'
exit $fail
