#!/bin/bash
# `cmake --install build --prefix P`: the installed ushcc (and ushc++) and ushmem.pc name P (the prefix chosen
# at install time, not the configured /usr/local). Programs built with the installed ushcc
# (and with pkg-config) run on 2 PEs under the installed ushrun; the installed ushcc still
# works through a symlink and after the tree is moved.
set -u
: "${BUILD_DIR:?}" "${SRC_DIR:?}"
cmake=${CMAKE:-cmake}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
tmp=$(cd "$tmp" && pwd -P)
fail=0
ok() { echo "PASS $1"; }; bad() { echo "FAIL $1"; fail=1; }
p=$tmp/prefix

"$cmake" --install "$BUILD_DIR" --prefix "$p" >"$tmp/install.log" 2>&1 ||
  { echo "FAIL cmake --install: $(tail -n 10 "$tmp/install.log")"; exit 1; }
for f in bin/ushcc bin/ushc++ bin/ushcxx bin/ushrun include/shmem.h include/mpp/shmem.h include/mpp/shmemx.h \
  lib/cmake/ushmem/ushmemConfig.cmake; do
  [ -e "$p/$f" ] || bad "not installed: $f"
done

# Builds the ring example and the <mpp/...> program with the ushcc at $1, runs both on 2 PEs.
builds_and_runs() {
  local cc=$1 what=$2 out
  out=$("$cc" --showme ring.c 2>&1)
  case $out in
  *"$SRC_DIR"* | *"$BUILD_DIR"* | *" -I/usr/local/"*) bad "$what: ushcc names the wrong tree: $out"; return ;;
  esac
  "$cc" -O1 "$SRC_DIR/examples/c/ring.c" -o "$tmp/ring" 2>"$tmp/cc.err" &&
    "$cc" "$SRC_DIR/tests/tools/mpp_hello.c" -o "$tmp/mpp" 2>>"$tmp/cc.err" ||
    { bad "$what: compile: $(head -c 400 "$tmp/cc.err")"; return; }
  out=$(SHMEM_SYMMETRIC_SIZE=16M timeout 30 "$p/bin/ushrun" -n 2 "$tmp/ring" 2>&1) &&
    grep -q "PE 1 of 2 got 0 from PE 0" <<<"$out" || { bad "$what: ring: $out"; return; }
  out=$(SHMEM_SYMMETRIC_SIZE=16M timeout 30 "$p/bin/ushrun" -n 2 "$tmp/mpp" 2>&1) &&
    grep -q "mpp: PE 0 of 2 got 1" <<<"$out" || { bad "$what: mpp: $out"; return; }
  ok "$what: builds and runs on 2 PEs"
}

out=$("$p/bin/ushcc" --showme:compile)
[ "$out" = "-I$p/include" ] && ok "installed ushcc --showme:compile: $out" ||
  bad "installed ushcc --showme:compile: '$out', want -I$p/include"
builds_and_runs "$p/bin/ushcc" "installed ushcc"
ln -s "$p/bin/ushcc" "$tmp/ushcc-link"
builds_and_runs "$tmp/ushcc-link" "installed ushcc through a symlink"

# The installed C++ wrapper: a C++ program (the standard library linked) on 2 PEs.
printf '%s\n' '#include <shmem.h>' '#include <iostream>' \
  'int main() { shmem_init(); std::cout << "c++ PE " << shmem_my_pe() << std::endl;' \
  '  shmem_finalize(); return 0; }' >"$tmp/hello.cpp"
out=$("$p/bin/ushc++" --showme:compile)
[ "$out" = "-I$p/include" ] || bad "installed ushc++ --showme:compile: '$out', want -I$p/include"
if ! "$p/bin/ushc++" --version >/dev/null 2>&1; then
  echo "SKIP installed ushc++ program: no C++ compiler"
elif "$p/bin/ushc++" "$tmp/hello.cpp" -o "$tmp/hello_cpp" 2>"$tmp/cxx.err"; then
  out=$(SHMEM_SYMMETRIC_SIZE=16M timeout 30 "$p/bin/ushrun" -n 2 "$tmp/hello_cpp" 2>&1)
  [ "$(grep -c '^c++ PE [01]$' <<<"$out")" = 2 ] && ok "installed ushc++: a C++ program runs on 2 PEs" ||
    bad "installed ushc++ program: $out"
else
  bad "installed ushc++: $(head -c 400 "$tmp/cxx.err")"
fi

# pkg-config with PKG_CONFIG_PATH into the prefix.
pc=$(find "$p" -name ushmem.pc | head -n 1)
if [ -z "$pc" ]; then
  bad "ushmem.pc not installed"
elif ! command -v pkg-config >/dev/null 2>&1; then
  echo "SKIP pkg-config leg: pkg-config is not installed (scripts/deps.sh check installs it)"
else
  libdir=$(dirname "$(dirname "$pc")")
  PKG_CONFIG_PATH=$(dirname "$pc")
  export PKG_CONFIG_PATH
  flags=$(pkg-config --cflags --libs ushmem | xargs) # one blank between words, none at the end
  [ "$flags" = "-I$p/include -L$libdir -lushmem" ] && ok "pkg-config --cflags --libs ushmem: $flags" ||
    bad "pkg-config --cflags --libs ushmem: '$flags', want '-I$p/include -L$libdir -lushmem'"
  # shellcheck disable=SC2086
  cc "$SRC_DIR/examples/c/ring.c" -o "$tmp/ring_pc" $flags -Wl,-rpath,"$libdir" &&
    out=$(SHMEM_SYMMETRIC_SIZE=16M timeout 30 "$p/bin/ushrun" -n 2 "$tmp/ring_pc" 2>&1) &&
    grep -q "PE 0 of 2 got 1 from PE 1" <<<"$out" && ok "program built with pkg-config runs" ||
    bad "program built with pkg-config: $out"
fi

# find_package(ushmem) from a CMake project: the shared and the static library, both run on 2
# PEs under the ushrun the package names (ushmem_LAUNCHER).
cmake_app() {
  local what=$1 app=$tmp/app.$RANDOM out
  mkdir -p "$app" && cp "$SRC_DIR/examples/c/ring.c" "$app/"
  # shellcheck disable=SC2016 # ${...} are CMake's
  printf '%s\n' 'cmake_minimum_required(VERSION 3.18)' 'project(app C)' \
    'find_package(ushmem 0.1 REQUIRED)' \
    'add_executable(ring ring.c)' 'target_link_libraries(ring PRIVATE ushmem::ushmem)' \
    'add_executable(ring_static ring.c)' \
    'target_link_libraries(ring_static PRIVATE ushmem::ushmem_static)' \
    'file(WRITE ${CMAKE_BINARY_DIR}/launcher "${ushmem_LAUNCHER}")' >"$app/CMakeLists.txt"
  if ! "$cmake" -S "$app" -B "$app/b" -DCMAKE_PREFIX_PATH="$p" >"$tmp/capp.log" 2>&1 ||
     ! "$cmake" --build "$app/b" >>"$tmp/capp.log" 2>&1; then
    bad "$what: $(tail -n 8 "$tmp/capp.log")"; return
  fi
  [ "$(cat "$app/b/launcher")" = "$p/bin/ushrun" ] ||
    { bad "$what: ushmem_LAUNCHER is '$(cat "$app/b/launcher")', want $p/bin/ushrun"; return; }
  for prog in ring ring_static; do
    out=$(SHMEM_SYMMETRIC_SIZE=16M timeout 30 "$p/bin/ushrun" -n 2 "$app/b/$prog" 2>&1) &&
      grep -q "PE 1 of 2 got 0 from PE 0" <<<"$out" || { bad "$what: $prog: $out"; return; }
  done
  ok "$what: ushmem::ushmem and ushmem::ushmem_static build and run on 2 PEs"
}
cmake_app "find_package(ushmem)"

# The installed ushcc finds its prefix from where it is, so a moved tree works too (and the
# CMake package, whose paths are relative to its own location).
mv "$p" "$tmp/moved" && p=$tmp/moved
builds_and_runs "$p/bin/ushcc" "installed ushcc after the tree moved"
cmake_app "find_package(ushmem) after the tree moved"
exit $fail
