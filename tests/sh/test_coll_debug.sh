#!/bin/bash
# SHMEM_DEBUG checks collective arguments (issue 22, item 8). Before, a
# different broadcast root, reduce operator or count, or a broadcast against an
# alltoall finished silently with different answers per PE. Now with
# SHMEM_DEBUG=1 the members compare (kind, team, root, count, type, operator)
# before any data moves and the job ends with one line naming both PEs and both
# calls; matching calls still pass, and without SHMEM_DEBUG nothing is checked.
set -u
: "${USHRUN:?}" "${BUILD_DIR:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
export SHMEM_SYMMETRIC_SIZE=16M
unset USHMEM_RANK USHMEM_NPES RANK WORLD_SIZE MASTER_ADDR

# argv[1] names the call pair; PE 1 makes the "other" call.
cat > "$tmp/coll.c" <<'C'
#include <shmem.h>
#include <stdio.h>
#include <string.h>

static long src[64], dst[64 * 8];
static long asrc[64], adst[64];

int main(int argc, char **argv)
{
    shmem_init();
    int me = shmem_my_pe();
    const char *c = argc > 1 ? argv[1] : "same";
    int other = me == 1;
    if (!strcmp(c, "root"))
        shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 2, other ? 1 : 0);
    else if (!strcmp(c, "op")) {
        if (other)
            shmem_long_max_reduce(SHMEM_TEAM_WORLD, dst, src, 4);
        else
            shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 4);
    } else if (!strcmp(c, "count"))
        shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, other ? 8 : 4);
    else if (!strcmp(c, "kind")) {
        if (other)
            shmem_long_alltoall(SHMEM_TEAM_WORLD, adst, asrc, 2);
        else
            shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 2, 0);
    } else if (!strcmp(c, "fcollect"))
        shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, other ? 3 : 2);
    else if (!strcmp(c, "aset"))
        shmem_broadcast64(dst, src, 2, other ? 1 : 0, 0, 0, shmem_n_pes(), NULL);
    else { /* matching calls, collect with its own count per PE included */
        shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 2, 1);
        shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 4);
        shmem_long_collect(SHMEM_TEAM_WORLD, dst, src, (size_t)me + 1);
        shmem_long_alltoall(SHMEM_TEAM_WORLD, adst, asrc, 2);
        shmem_broadcast64(dst, src, 2, 0, 0, 0, shmem_n_pes(), NULL);
    }
    shmem_barrier_all();
    if (me == 0)
        printf("done %s\n", c);
    shmem_finalize();
    return 0;
}
C
"$BUILD_DIR/tools/ushcc" "$tmp/coll.c" -o "$tmp/coll" || { echo "FAIL compile"; exit 1; }

mismatch() { # case, npes, expected line (regex, after "ushmem: PE 0: <call>: ")
  out=$(SHMEM_DEBUG=1 timeout 60 "$USHRUN" --timeout 30 -n "$2" "$tmp/coll" "$1" 2>&1); rc=$?
  local why=""
  [ $rc -ne 0 ] || why="exit status 0"
  [ $rc -ne 124 ] || why="timed out"
  echo "$out" | grep -Eq "^ushmem: PE 0: [a-z0-9_]+: $3; every member must make the same collective call \(SHMEM_DEBUG\)$" ||
    why="${why:+$why, }no line matching '$3'"
  [ "$(echo "$out" | grep -c 'every member must make')" = 1 ] || why="${why:+$why, }not exactly one line"
  if [ -n "$why" ]; then
    echo "FAIL $1 at $2 PEs: $why"; echo "$out" | sed 's/^/    /'; fail=1
  else
    echo "ok   $1 at $2 PEs: $(echo "$out" | grep 'every member')"
  fi
}

mismatch root 2 'PE 0 called shmem_broadcast\(root 0, 16 bytes\) while PE 1 called shmem_broadcast\(root 1, 16 bytes\) on team world'
mismatch root 3 'PE 0 called shmem_broadcast\(root 0, 16 bytes\) while PE 1 called shmem_broadcast\(root 1, 16 bytes\) on team world'
mismatch op 2 'PE 0 called shmem_sum_reduce\(4 elements of int64\) while PE 1 called shmem_max_reduce\(4 elements of int64\) on team world'
mismatch count 3 'PE 0 called shmem_sum_reduce\(4 elements of int64\) while PE 1 called shmem_sum_reduce\(8 elements of int64\) on team world'
mismatch kind 2 'PE 0 called shmem_broadcast\(root 0, 16 bytes\) while PE 1 called shmem_alltoall\(16 bytes per PE\) on team world'
mismatch fcollect 2 'PE 0 called shmem_fcollect\(16 bytes\) while PE 1 called shmem_fcollect\(24 bytes\) on team world'
mismatch aset 2 'PE 0 called shmem_broadcast\(root 0, 16 bytes\) while PE 1 called shmem_broadcast\(root 1, 16 bytes\) on team world'

for np in 2 3; do
  for dbg in 1 0; do
    out=$(SHMEM_DEBUG=$dbg timeout 60 "$USHRUN" --timeout 30 -n $np "$tmp/coll" same 2>&1); rc=$?
    if [ $rc -ne 0 ] || ! echo "$out" | grep -q "^done same$"; then
      echo "FAIL matching calls at $np PEs (SHMEM_DEBUG=$dbg): status $rc"; echo "$out" | sed 's/^/    /'; fail=1
    else
      echo "ok   matching calls at $np PEs (SHMEM_DEBUG=$dbg)"
    fi
  done
done
# Without SHMEM_DEBUG a mismatch is not checked (the cost stays one branch).
out=$(SHMEM_DEBUG=0 timeout 60 "$USHRUN" --timeout 30 -n 2 "$tmp/coll" root 2>&1); rc=$?
if echo "$out" | grep -q 'every member must make'; then
  echo "FAIL SHMEM_DEBUG=0 checked arguments"; fail=1
else
  echo "ok   SHMEM_DEBUG=0: no check (status $rc)"
fi
exit $fail
