#!/bin/bash
# A PE that finalizes early ends only the waits that need it (issue 22, item 3).
# 3 PEs; PE 1 finalizes and returns (legal); PEs 0 and 2 then sync, reduce on
# team {0, 2} and take a lock the other holds, one of them 1.5 s late. Before,
# the job was stopped after 1.1 s with "PE 1 called shmem_finalize while this PE
# waits here". A wait that does need PE 1 (a barrier on the world) still ends
# the job with that line.
set -u
: "${USHRUN:?}" "${BUILD_DIR:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
export SHMEM_SYMMETRIC_SIZE=16M
unset USHMEM_RANK USHMEM_NPES RANK WORLD_SIZE MASTER_ADDR

cat > "$tmp/early.c" <<'C'
#include <shmem.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static long lock, src[4], dst[4];

int main(int argc, char **argv)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_team_t evens;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &evens);
    shmem_barrier_all();
    if (me % 2) { /* PE 1 (and any odd PE) is done */
        shmem_finalize();
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "world")) { /* needs PE 1: must stop */
        shmem_barrier_all();
        return 1;
    }
    int last = shmem_team_n_pes(evens) - 1, r = shmem_team_my_pe(evens);
    if (r == 0)
        usleep(1500000);
    shmem_team_sync(evens);
    src[0] = me;
    if (r == last)
        usleep(1500000);
    shmem_long_sum_reduce(evens, dst, src, 1);
    if (r == last)
        shmem_set_lock(&lock);
    shmem_team_sync(evens);
    if (r == last) {
        usleep(1500000);
        shmem_clear_lock(&lock);
    } else {
        shmem_set_lock(&lock);
        shmem_clear_lock(&lock);
    }
    shmem_team_sync(evens);
    printf("PE %d ok, sum %ld\n", me, dst[0]);
    shmem_team_destroy(evens);
    shmem_finalize();
    return 0;
}
C
"$BUILD_DIR/tools/ushcc" "$tmp/early.c" -o "$tmp/early" || { echo "FAIL compile"; exit 1; }

for np in 3 4; do
  out=$(timeout 60 "$USHRUN" --timeout 30 -n $np "$tmp/early" 2>&1); rc=$?
  if [ $rc -ne 0 ] || [ "$(echo "$out" | grep -c ' ok, sum ')" != $(( (np + 1) / 2 )) ]; then
    echo "FAIL early finalize at $np PEs: status $rc"; echo "$out" | sed 's/^/    /'; fail=1
  else
    echo "ok   early finalize at $np PEs"
  fi
done

out=$(timeout 60 "$USHRUN" --timeout 30 -n 3 "$tmp/early" world 2>&1); rc=$?
pat='^ushmem: PE [02]: shmem_barrier_all: PE 1 called shmem_finalize while this PE waits here \([0-9.]+ s\); stopping the job$'
if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! echo "$out" | grep -Eq "$pat"; then
  echo "FAIL a wait that needs the finalized PE: status $rc"; echo "$out" | sed 's/^/    /'; fail=1
else
  echo "ok   a wait that needs the finalized PE: $(echo "$out" | grep -E "$pat" | head -1)"
fi
exit $fail
