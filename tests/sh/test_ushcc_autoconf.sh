#!/bin/bash
# A real autoconf project (tests/tools/autoconf) configured with CC=ushcc: ./configure exports
# CC to everything it runs, which once made ushcc run itself forever. It must configure, build
# and run on 2 PEs. Exits 77 (ctest: skipped) only when autoconf or make is not installed.
set -u
: "${USHRUN:?}" "${BUILD_DIR:?}" "${SRC_DIR:?}"
for tool in autoconf make; do
  command -v "$tool" >/dev/null 2>&1 ||
    { echo "SKIP: $tool is not installed (scripts/deps.sh check installs it)"; exit 77; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp -r "$SRC_DIR/tests/tools/autoconf" "$tmp/proj" && cd "$tmp/proj" || exit 1
autoconf >autoconf.log 2>&1 || { echo "FAIL autoconf: $(tail -n 5 autoconf.log)"; exit 1; }
# timeout kills its whole process group: a runaway ushcc chain ends with it.
timeout 60 ./configure CC="$BUILD_DIR/tools/ushcc" >configure.out 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "FAIL ./configure CC=ushcc: status $rc (124: timed out)"
  tail -n 15 configure.out; grep -n -B2 -A8 'error' config.log | tail -n 30
  exit 1
fi
echo "PASS ./configure CC=ushcc"
timeout 60 make >make.out 2>&1 || { echo "FAIL make: $(tail -n 10 make.out)"; exit 1; }
echo "PASS make"
out=$(SHMEM_SYMMETRIC_SIZE=16M timeout 30 "$USHRUN" -n 2 ./hello 2>&1) &&
  grep -q "autoconf hello: 2 PEs, sum 3" <<<"$out" || { echo "FAIL run: $out"; exit 1; }
echo "PASS the autoconf-built program runs on 2 PEs"
