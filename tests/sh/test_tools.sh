#!/bin/bash
# ushcc builds a plain OpenSHMEM program (with extra cc flags), the example
# runs under ushrun, ushmem_info prints the env table, and the shared library
# exports only the public API.
set -u
: "${USHRUN:?}" "${BUILD_DIR:?}" "${SRC_DIR:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "PASS $1"; }; bad() { echo "FAIL $1"; fail=1; }

"$BUILD_DIR/tools/ushcc" -O2 -Wall -Werror -DRING_EXTRA=1 "$SRC_DIR/examples/c/ring.c" -o "$tmp/ring" && ok "ushcc compiles the example" || bad "ushcc"
"$BUILD_DIR/tools/ushcc" -c "$SRC_DIR/examples/c/ring.c" -o "$tmp/ring.o" && "$BUILD_DIR/tools/ushcc" "$tmp/ring.o" -o "$tmp/ring2" && ok "ushcc -c then link" || bad "ushcc -c"
out=$(SHMEM_SYMMETRIC_SIZE=16M timeout 30 "$USHRUN" -n 4 "$tmp/ring" 2>&1)
for pe in 0 1 2 3; do
  grep -q "PE $pe of 4 got $(( (pe + 3) % 4 )) from PE $(( (pe + 3) % 4 ))" <<<"$out" || { bad "ring output PE $pe: $out"; }
done
grep -q "sum of PE numbers on PE 0: 6" <<<"$out" && ok "ring example" || bad "ring sum: $out"

out=$("$BUILD_DIR/tools/ushmem_info")
grep -q "SHMEM_SYMMETRIC_SIZE" <<<"$out" && grep -q "shm" <<<"$out" && ok "ushmem_info" || bad "ushmem_info: $out"
out=$(timeout 30 "$USHRUN" -n 3 "$BUILD_DIR/tools/ushmem_info" --peers 2>&1)
grep -q "PE 2 *host memory: shm" <<<"$out" && ok "ushmem_info --peers" || bad "ushmem_info --peers: $out"

# The README's environment table is the generated one.
want=$("$BUILD_DIR/tools/ushmem_info" --env-markdown)
have=$(sed -n '/<!-- env-table/,/<!-- \/env-table/p' "$SRC_DIR/README.md" | sed '1d;$d')
[ "$want" = "$have" ] && ok "README env table matches ushmem_info" || bad "README env table drifted: run ushmem_info --env-markdown"

# Exported symbols: only the OpenSHMEM API (shmem_, pshmem_, shmemx_, the
# deprecated names) and the team handles.
bad_syms=$(nm -D --defined-only "$BUILD_DIR/libushmem.so" | awk '{print $3}' |
  grep -v -E '^(p?shmemx?_|p?start_pes$|_my_pe$|_num_pes$|shmalloc$|shfree$|shrealloc$|shmemalign$|SHMEM_TEAM_(WORLD|SHARED)$|_init$|_fini$)' || true)
[ -z "$bad_syms" ] && ok "exports" || bad "unexpected exports: $bad_syms"
# Every exported shmem_ routine has its pshmem_ profiling name, and start_pes its pstart_pes.
syms=$(nm -D --defined-only "$BUILD_DIR/libushmem.so" | awk '$2 == "T" {print $3}')
missing=$(grep -E '^(shmem_|start_pes$)' <<<"$syms" | sed 's/^/p/' | sort |
  comm -23 - <(grep -E '^p(shmem_|start_pes$)' <<<"$syms" | sort))
[ -z "$missing" ] && ok "profiling name for every shmem_ routine and start_pes" || bad "no profiling name: $(echo $missing | head -c 400)"
exit $fail
