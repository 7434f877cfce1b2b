#!/bin/bash
# ushcc reads only USHMEM_CC, never CC (build systems export CC=ushcc), and refuses at once,
# with one line, a compiler that is ushcc itself: by real path (also through a symlink) and,
# when something in between hides it, by the marker each ushcc leaves for its compiler. The
# C++ wrapper ushc++ (= ushcxx) does the same with USHMEM_CXX, and builds a C++ program.
set -u
: "${BUILD_DIR:?}" "${SRC_DIR:?}"
ushcc=$BUILD_DIR/tools/ushcc
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "PASS $1"; }; bad() { echo "FAIL $1"; fail=1; }

# Runs ushcc with the given environment assignments and arguments; it must fail within 10 s
# with exactly one line on stderr that names ushcc and says why.
refuses() {
  local what=$1 why=$2; shift 2
  timeout -s KILL 10 env "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 137 ]; then
    bad "$what: status $rc (137: still running after 10 s), stderr: $(head -c 300 "$tmp/err")"
  elif [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -q -E "^ush(cc|c\+\+): .*($why)" "$tmp/err"; then
    bad "$what: want one line 'ushcc: ...$why...' (ushc++ for it), got: $(head -c 300 "$tmp/err")"
  else
    ok "$what: $(cat "$tmp/err")"
  fi
}

refuses "USHMEM_CC=ushcc" "is ushcc itself" USHMEM_CC="$ushcc" "$ushcc" --version
ln -s "$ushcc" "$tmp/mycc"
refuses "USHMEM_CC=symlink to ushcc" "is ushcc itself" USHMEM_CC="$tmp/mycc" "$ushcc" --version
refuses "USHMEM_CC='sh ushcc' (hidden)" "runs ushcc again" USHMEM_CC="sh $ushcc" "$ushcc" -c x.c
# A copy of ushcc elsewhere (the installed one calling the build tree's, say): the copy sees
# the marker, or itself in USHMEM_CC.
cp "$ushcc" "$tmp/ushcc-copy"
refuses "USHMEM_CC=another ushcc" "runs ushcc again|is ushcc itself" USHMEM_CC="$tmp/ushcc-copy" "$ushcc" --version

# CC is not read: CC=ushcc (what ./configure CC=ushcc exports) and a CC that does not exist.
out=$(CC="$ushcc" timeout 10 "$ushcc" --version 2>&1) && [ -n "$out" ] &&
  ok "CC=ushcc ushcc --version: $(head -n 1 <<<"$out")" || bad "CC=ushcc ushcc --version: $out"
printf '#include <shmem.h>\nint main(void) { shmem_init(); shmem_finalize(); return 0; }\n' >"$tmp/p.c"
CC=/nonexistent/cc timeout 30 "$ushcc" "$tmp/p.c" -o "$tmp/p" && "$tmp/p" &&
  ok "CC=/nonexistent/cc is ignored" || bad "CC=/nonexistent/cc: ushcc read CC"

# USHMEM_CC is read, split on blanks like make's CC.
printf '#!/bin/sh\necho "$*" >"%s/args"\nexec cc "$@"\n' "$tmp" >"$tmp/wrapcc"
chmod +x "$tmp/wrapcc"
USHMEM_CC="$tmp/wrapcc -DWRAPPED=1" timeout 30 "$ushcc" "$tmp/p.c" -o "$tmp/p2" &&
  grep -q -- "-DWRAPPED=1" "$tmp/args" && ok "USHMEM_CC with arguments is used" ||
  bad "USHMEM_CC not used: $(cat "$tmp/args" 2>/dev/null)"

# ushc++ / ushcxx: the C++ wrapper, with its own variable (USHMEM_CXX; CXX never read) and marker.
cxx=$BUILD_DIR/tools/ushc++
for w in ushc++ ushcxx; do
  [ -x "$BUILD_DIR/tools/$w" ] || bad "$w is not in $BUILD_DIR/tools"
done
cat >"$tmp/p.cpp" <<'CPP'
#include <shmem.h>
#include <iostream>
#include <vector>
int main()
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *x = static_cast<long *>(shmem_calloc(4, sizeof(long)));
    std::vector<long> y{100L + me, 1, 2, 3};
    shmem_long_put(x, y.data(), y.size(), (me + 1) % n);
    shmem_barrier_all();
    std::cout << "PE " << me << " got " << x[0] << std::endl;
    shmem_free(x);
    shmem_finalize();
    return 0;
}
CPP
if ! "$cxx" --version >/dev/null 2>&1; then
  echo "SKIP the C++ program: no C++ compiler ($("$cxx" --showme x.cpp | cut -d' ' -f1) is missing)"
elif CXX=/nonexistent/c++ timeout 60 "$BUILD_DIR/tools/ushcxx" -std=c++17 -Wall -Wextra -Werror \
     "$tmp/p.cpp" -o "$tmp/pcpp" 2>"$tmp/err"; then
  out=$(SHMEM_SYMMETRIC_SIZE=16M timeout 30 "$BUILD_DIR/tools/ushrun" -n 2 "$tmp/pcpp" 2>&1)
  grep -q "^PE 0 got 101$" <<<"$out" && grep -q "^PE 1 got 100$" <<<"$out" &&
    ok "ushcxx builds a C++ program (iostream, vector) that runs on 2 PEs" ||
    bad "C++ program on 2 PEs: $out"
else
  bad "ushcxx -std=c++17 p.cpp: $(head -c 400 "$tmp/err")"
fi
refuses "USHMEM_CXX=ushc++" "is ushc\+\+ itself" USHMEM_CXX="$cxx" "$cxx" --version
out=$(USHMEM_CXX="$tmp/wrapcc -DWRAPPED_CXX=1" timeout 30 "$cxx" --showme -c x.cpp)
[ "$out" = "$tmp/wrapcc -DWRAPPED_CXX=1 -I$SRC_DIR/include -c x.cpp" ] &&
  ok "USHMEM_CXX is read: $out" || bad "USHMEM_CXX not read: '$out'"
exit $fail
