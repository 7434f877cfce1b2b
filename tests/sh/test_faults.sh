#!/bin/bash
# Job death without hangs (issue 12): PE 1 fails in one of six ways while the
# other PEs wait in a barrier, a point-to-point wait, a collective or a lock;
# under ushrun, started by hand with torchrun's variables or with a unique id
# (only the library can end the job) and under mpirun. Every PE must exit within LIMIT seconds,
# non-zero, with a line naming PE 1; nothing may be left behind (processes,
# /dev/shm). Also: programs that end without shmem_finalize correctly still exit
# 0, and a PE whose init fails ends the job at once.
# Prints one "FIGURE" line per case (the table in docs/reliability.md).
set -u
: "${USHRUN:?}" "${BUILD_DIR:?}" "${SRC_DIR:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
LIMIT=${LIMIT:-5}
export SHMEM_SYMMETRIC_SIZE=16M
unset USHMEM_RANK USHMEM_NPES RANK WORLD_SIZE MASTER_ADDR OMPI_COMM_WORLD_RANK USHMEM_TRANSPORTS

cat > "$tmp/victim.c" <<'C'
#include <shmem.h>
#include <shmemx.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long flag, lock, bsrc[4], bdst[4];

static void fault(const char *how)
{
    fflush(stdout);
    if (!strcmp(how, "kill9"))
        raise(SIGKILL);
    else if (!strcmp(how, "segv"))
        *(volatile int *)(uintptr_t)8 = 1;
    else if (!strcmp(how, "abort"))
        abort();
    else if (!strcmp(how, "exit0"))
        exit(0);
    else if (!strcmp(how, "exit3"))
        exit(3);
    /* "return": the caller returns from main */
}

/* Unique-id launch (argv[3] = "uid:RANK:NRANKS:FILE"): rank 0 writes the id to
 * FILE, the others wait for it; then shmemx_init_attr. */
static void init_uid(const char *spec)
{
    int rank, nranks;
    char path[512];
    if (sscanf(spec, "uid:%d:%d:%511s", &rank, &nranks, path) != 3)
        exit(2);
    shmemx_uniqueid_t id;
    if (rank == 0) {
        char tmp[520];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "wb");
        if (shmemx_get_uniqueid(&id) != 0 || !f || fwrite(&id, sizeof id, 1, f) != 1)
            exit(2);
        fclose(f);
        rename(tmp, path);
    } else {
        FILE *f = NULL;
        for (int i = 0; i < 2000 && !(f = fopen(path, "rb")); i++)
            usleep(5000);
        if (!f || fread(&id, sizeof id, 1, f) != 1)
            exit(2);
        fclose(f);
    }
    if (shmemx_init_attr(rank, nranks, &id, NULL) != 0)
        exit(2);
}

/* argv: fault (kill9 segv abort exit0 exit3 return), place (barrier wait coll lock) [uid:...] */
int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const char *how = argv[1], *where = argv[2];
    if (argc > 3)
        init_uid(argv[3]);
    else
        shmem_init();
    int me = shmem_my_pe();
    /* When each PE got past init: a slow case's report says where the time went. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    fprintf(stderr, "[victim me=%d] joined at %lld.%03ld\n", me, (long long)ts.tv_sec,
            ts.tv_nsec / 1000000);
    if (!strcmp(where, "lock") && me == 1)
        shmem_set_lock(&lock); /* dies holding it */
    shmem_barrier_all();
    if (me == 1) {
        if (!strcmp(where, "lock"))
            usleep(100000); /* the others queue for the lock first */
        fault(how);
        return 0; /* "return" (and anything that did not end us) */
    }
    if (!strcmp(where, "barrier"))
        shmem_barrier_all();
    else if (!strcmp(where, "wait"))
        shmem_long_wait_until(&flag, SHMEM_CMP_NE, 0);
    else if (!strcmp(where, "coll"))
        shmem_long_broadcast(SHMEM_TEAM_WORLD, bdst, bsrc, 4, 1);
    else if (!strcmp(where, "lock"))
        shmem_set_lock(&lock);
    printf("PE %d: the wait in %s ended although PE 1 failed\n", me, where);
    shmem_finalize();
    return 0;
}
C
cat > "$tmp/clean.c" <<'C'
/* Correct programs that end without shmem_finalize: every PE returns from main
 * (argv[1] = "all"), or PE 0 finalizes and the others return ("mixed"), after
 * real traffic; each PE checks what it received. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    static long v[8];
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    for (int i = 0; i < 8; i++)
        shmem_long_p(&v[i], 1000 * me + i, (me + 1) % n);
    shmem_barrier_all();
    int from = (me + n - 1) % n;
    for (int i = 0; i < 8; i++)
        if (v[i] != 1000 * from + i) {
            printf("PE %d: v[%d] = %ld, want %d\n", me, i, v[i], 1000 * from + i);
            return 1;
        }
    if (argc > 1 && !strcmp(argv[1], "mixed") && me == 0)
        shmem_finalize();
    return 0;
}
C
"$BUILD_DIR/tools/ushcc" -O1 "$tmp/victim.c" -o "$tmp/victim" || exit 1
"$BUILD_DIR/tools/ushcc" -O1 "$tmp/clean.c" -o "$tmp/clean" || exit 1
before=$(ls /dev/shm | sort)

check() { # name, condition
  if eval "$2"; then echo "PASS $1"; else echo "FAIL $1"; fail=1; fi
}
now() { date +%s.%N; }
dt() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# exits NPES (in run_case, PEs started one by one): each PE's status and exit
# time from $tmp/eR into rcs and times, their output into out.
exits() {
  local r rc t
  for r in $(seq 0 $(($1 - 1))); do
    read -r rc t <"$tmp/e$r"
    rcs="$rcs $rc"
    times="$times PE $r exited $(dt "$t0" "$t") s after the start;"
  done
  out=$(cat "$tmp"/o*); rm -f "$tmp"/o* "$tmp"/e*
}

# run_case LAUNCHER FAULT PLACE NPES
run_case() {
  local l=$1 f=$2 p=$3 n=$4 t0 rcs="" out el times=""
  t0=$(now)
  case $l in
  ushrun)
    out=$(timeout 30 "$USHRUN" -n "$n" "$tmp/victim" "$f" "$p" 2>&1); rcs=$? ;;
  torchrun)
    local port=$((20000 + RANDOM % 20000)) pids=() r
    for r in $(seq 0 $((n - 1))); do
      (RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 \
        MASTER_PORT=$port timeout 30 "$tmp/victim" "$f" "$p" >"$tmp/o$r" 2>&1
        echo "$? $(now)" >"$tmp/e$r") &
      pids+=($!)
    done
    wait "${pids[@]}"
    exits "$n" ;;
  uid)
    local pids=() r
    rm -f "$tmp/uid"
    for r in $(seq 0 $((n - 1))); do
      (timeout 30 "$tmp/victim" "$f" "$p" "uid:$r:$n:$tmp/uid" >"$tmp/o$r" 2>&1
        echo "$? $(now)" >"$tmp/e$r") &
      pids+=($!)
    done
    wait "${pids[@]}"
    exits "$n" ;;
  mpirun)
    out=$(timeout 30 mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -n "$n" \
      "$tmp/victim" "$f" "$p" 2>&1); rcs=$? ;;
  esac
  el=$(dt "$t0" "$(now)")
  local left
  left=$(pgrep -f "$tmp/victim" | wc -l)
  local msg
  msg=$(grep -m1 -E "PE 1|rank 1" <<<"$out" | cut -c1-150)
  echo "FIGURE $l $f $p np=$n: ${el}s, status${rcs}, leftover processes $left; $msg"
  # Survivors must exit non-zero (a fault is a failure of the job).
  local ok=1
  for r in $rcs; do [ "$r" = 0 ] && ok=0; [ "$r" = 124 ] && ok=0; done
  awk -v e="$el" -v L="$LIMIT" 'BEGIN { exit !(e <= L) }' || ok=0
  grep -q "ended although PE 1 failed" <<<"$out" && ok=0
  grep -qE "PE 1|rank 1" <<<"$out" || ok=0
  [ "$left" = 0 ] || ok=0
  check "$l: PE 1 $f while the others are in $p: all exited non-zero in ${el}s, PE 1 named" \
    '[ $ok = 1 ]'
  [ $ok = 1 ] && return 0
  # Where the time went: when each PE joined and (without a launcher) exited.
  [ -z "$times" ] || echo "   ${times}"
  awk -v t0="$t0" '/^\[victim me=/ { printf "    %s %s joined %.2f s after the start\n", $1, $2, $5 - t0 }' <<<"$out"
  grep -v '^\[victim me=' <<<"$out" | sed 's/^/    /' | head -20
}

for f in kill9 segv abort exit0 exit3 return; do
  for p in barrier wait coll lock; do
    run_case ushrun "$f" "$p" 3
  done
done
for f in kill9 exit0 return; do
  for p in barrier wait; do
    run_case torchrun "$f" "$p" 3
  done
done
for f in kill9 exit3 exit0 return; do
  for p in barrier coll; do
    run_case uid "$f" "$p" 3
  done
done
if [ -f "$BUILD_DIR/libushmem_mpi.so" ] && command -v mpirun >/dev/null; then
  for f in kill9 exit0 return; do
    run_case mpirun "$f" barrier 2
  done
else
  echo "SKIP mpirun cases: no MPI module built"
fi

# Correct programs without shmem_finalize still succeed.
for mode in all mixed; do
  out=$(timeout 30 "$USHRUN" -n 4 "$tmp/clean" $mode 2>&1); rc=$?
  check "no shmem_finalize ($mode): exit 0 (got $rc)" '[ $rc = 0 ]'
  [ $rc = 0 ] || echo "$out"
done

# A PE whose init fails ends the job at once (all PEs non-zero): 8 PEs whose
# heaps together cannot be mapped.
t0=$(now)
out=$(SHMEM_SYMMETRIC_SIZE=20T timeout 60 "$USHRUN" -n 8 "$tmp/clean" 2>&1); rc=$?
el=$(dt "$t0" "$(now)")
echo "FIGURE init failure (SHMEM_SYMMETRIC_SIZE=20T, 8 PEs): ${el}s, status $rc; $(grep -m1 -i "symmetric" <<<"$out" | cut -c1-150)"
check "failed init: job ended non-zero in ${el}s (<= 10)" \
  '[ $rc != 0 ] && [ $rc != 124 ] && awk -v e="$el" "BEGIN { exit !(e <= 10) }"'

# The same without a launcher (torchrun's variables): only the library can end it.
t0=$(now); pids=(); port=$((20000 + RANDOM % 20000))
for r in $(seq 0 7); do
  SHMEM_SYMMETRIC_SIZE=20T RANK=$r LOCAL_RANK=$r WORLD_SIZE=8 LOCAL_WORLD_SIZE=8 \
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 60 "$tmp/clean" >"$tmp/i$r" 2>&1 &
  pids+=($!)
done
rcs=""; for p in "${pids[@]}"; do wait "$p"; rcs="$rcs $?"; done
el=$(dt "$t0" "$(now)")
echo "FIGURE init failure, torchrun-style by hand (20T, 8 PEs): ${el}s, status$rcs"
check "failed init without launcher: all 8 PEs non-zero in ${el}s (<= 10)" \
  '! grep -qwE "0|124" <<<"$rcs" && awk -v e="$el" "BEGIN { exit !(e <= 10) }"'

new=$(comm -13 <(echo "$before") <(ls /dev/shm | sort) | grep -v -E '^(vader_segment|sm_segment|ompi|psm2|ucx|sem\.)' || true)
check "nothing left in /dev/shm (new: ${new:-none})" '[ -z "$new" ]'
exit $fail
