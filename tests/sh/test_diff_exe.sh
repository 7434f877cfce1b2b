#!/bin/bash
# PEs that run different executables (issue 22, item 10): globals are symmetric
# only when every PE has the same data-segment layout. Before, a put landed in
# another variable when the segments had the same size, and a global was "not a
# symmetric address" when they did not. Now shmem_init fails at once with one
# line naming both PEs; the same executable everywhere still runs, and so do
# different executables with USHMEM_STATIC_DATA=0 (no symmetric globals).
set -u
: "${USHRUN:?}" "${BUILD_DIR:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
export SHMEM_SYMMETRIC_SIZE=16M

# a and b: the same sizes, the two arrays in the other order; c: bigger .data.
prog() { # name, declarations
  cat > "$tmp/$1.c" <<C
#include <shmem.h>
#include <stdio.h>
$2
int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_int_p(&first[1], 100 + me, (me + 1) % n);
    shmem_barrier_all();
    printf("PE %d got %d\n", me, first[1]);
    shmem_finalize();
    return 0;
}
C
  "$BUILD_DIR/tools/ushcc" "$tmp/$1.c" -o "$tmp/$1" || { echo "FAIL compile $1"; exit 1; }
}
prog a 'int first[64] = {1}; int second[64] = {2};'
prog b 'int second[64] = {2}; int first[64] = {1};'
prog c 'int first[64] = {1}; int second[4096] = {2};'

# PE 0 runs $1, the others $2
cat > "$tmp/mpmd.sh" <<'SH'
#!/bin/sh
[ "$USHMEM_RANK" = 0 ] && exec "$1"
exec "$2"
SH
chmod +x "$tmp/mpmd.sh"

differ() { # name, exe of PE 0, exe of the others, npes, what
  local name=$1 t0=$(date +%s%N) why=""
  out=$(timeout 60 "$USHRUN" --timeout 30 -n "$4" "$tmp/mpmd.sh" "$tmp/$2" "$tmp/$3" 2>&1); rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  local pat="^ushmem: PE 1: shmem_init: PE 0 and PE 1 run different executables \\(static data of [0-9]+ and [0-9]+ bytes, $5\\); every PE must run the same program$"
  [ $rc -ne 0 ] || why="exit status 0"
  [ $rc -ne 124 ] || why="hung"
  [ "$ms" -lt 20000 ] || why="${why:+$why; }took ${ms} ms"
  grep -Eq -- "$pat" <<<"$out" || why="${why:+$why; }no line matching '$pat'"
  [ "$(grep -c "different executables" <<<"$out")" -eq 1 ] || why="${why:+$why; }not exactly one line"
  ! grep -q " got " <<<"$out" || why="${why:+$why; }a PE ran on"
  if [ -z "$why" ]; then echo "PASS $name: $(grep -E -m1 -- "$pat" <<<"$out")"
  else echo "FAIL $name ($why; rc $rc): $out"; fail=1; fi
}
differ "same sizes, other layout" a b 2 "laid out differently"
differ "other sizes" a c 3 "other sizes"

# the same executable on every PE (through the same wrapper) runs
out=$(timeout 60 "$USHRUN" --timeout 30 -n 3 "$tmp/mpmd.sh" "$tmp/b" "$tmp/b" 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c " got 10[0-2]" <<<"$out")" -eq 3 ]; then echo "PASS same executable"
else echo "FAIL same executable (rc $rc): $out"; fail=1; fi

# no symmetric globals (USHMEM_STATIC_DATA=0): nothing to compare; the heap-only part of a
# program may differ, so init succeeds (the put into a global is then refused, as it should)
out=$(USHMEM_STATIC_DATA=0 timeout 60 "$USHRUN" --timeout 30 -n 2 "$tmp/mpmd.sh" "$tmp/a" "$tmp/c" 2>&1); rc=$?
if ! grep -q "different executables" <<<"$out" && grep -q "not a symmetric address" <<<"$out"; then
  echo "PASS USHMEM_STATIC_DATA=0 skips the check"
else echo "FAIL USHMEM_STATIC_DATA=0 (rc $rc): $out"; fail=1; fi
exit $fail
