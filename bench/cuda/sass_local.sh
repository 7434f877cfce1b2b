#!/bin/bash
# SASS of a CUDA file on a machine without a GPU or cuobjdump (the CI image:
# nvcc 13 without its binary tools). Compiles FILE.cu to an sm_90 cubin with
# the flags of bench/cuda/common.sh and disassembles it with nvdisasm 11.8 from
# Debian's non-free nvidia-cuda-toolkit package (fetched once with apt-get
# download, unpacked under SASS_TOOLS; nothing is installed). nvcc 13 writes
# ELF ABI version 8, whose e_flags hold the SM in bits 8-15; nvdisasm 11.8
# reads version 7 (SM in bits 0-7 and 16-23), so a copy of the cubin gets the
# old header before it is read. The instructions themselves are the same
# sm_90 encoding.
# usage: bash bench/cuda/sass_local.sh FILE.cu OUT.sass [FUNCTION_REGEX [nvcc flags...]]
#   FUNCTION_REGEX: keep only kernels whose mangled name matches (awk regex)
# env: SASS_TOOLS (default /tmp/ushmem-sass-tools)
set -u
f=${1:?usage: sass_local.sh FILE.cu OUT.sass [FUNCTION_REGEX [nvcc flags...]]}
o=${2:?usage: sass_local.sh FILE.cu OUT.sass [FUNCTION_REGEX [nvcc flags...]]}
pat=${3:-}
shift $(($# < 3 ? $# : 3))
root=$(cd "$(dirname "$0")/../.." && pwd)
T=${SASS_TOOLS:-/tmp/ushmem-sass-tools}
dis=$T/usr/bin/nvdisasm

if [ ! -x "$dis" ]; then
  mkdir -p "$T" || exit 1
  # a sources file of its own that adds non-free, for this one download
  src=$(mktemp -d)
  sed 's/^Components: main$/Components: main non-free/' /etc/apt/sources.list.d/debian.sources \
    >"$src/debian.sources" 2>/dev/null ||
    { echo "no /etc/apt/sources.list.d/debian.sources to start from"; exit 1; }
  opts=(-o "Dir::Etc::sourcelist=/dev/null" -o "Dir::Etc::sourceparts=$src"
    -o "Dir::State::Lists=$src/lists" -o "Dir::Cache=$src/cache")
  mkdir -p "$src/lists/partial" "$src/cache/archives/partial"
  (apt-get "${opts[@]}" update -qq && cd "$T" &&
    apt-get "${opts[@]}" download nvidia-cuda-toolkit) >"$T/fetch.log" 2>&1 ||
    { tail -5 "$T/fetch.log"; rm -rf "$src"; exit 1; }
  dpkg -x "$T"/nvidia-cuda-toolkit_*.deb "$T" && rm -f "$T"/nvidia-cuda-toolkit_*.deb
  rm -rf "$src"
  [ -x "$dis" ] || { echo "nvdisasm not found in the package"; exit 1; }
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nvcc -O2 -std=c++17 -arch=sm_90 -I"$root/include" "$f" -cubin -o "$tmp/a.cubin" "$@" || exit 1
/usr/bin/python3 - "$tmp/a.cubin" "$tmp/b.cubin" <<'EOF' || exit 1
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
if b[:4] != b'\x7fELF' or b[4] != 2:
    sys.exit('not a 64-bit ELF cubin')
flags, = struct.unpack_from('<I', b, 48)
if b[8] >= 8:  # ABI version 8: SM in bits 8-15
    sm = (flags >> 8) & 0xff
    b[8] = 7
    # version 7: SM, TEXMODE_UNIFIED | 64BIT_ADDRESS, virtual SM
    struct.pack_into('<I', b, 48, sm | 0x500 | (sm << 16))
open(sys.argv[2], 'wb').write(b)
EOF
"$dis" -c "$tmp/b.cubin" >"$tmp/all.sass" || exit 1
if [ -n "$pat" ]; then
  awk -v p="$pat" '/^        \.global/{on = ($2 ~ p)} on && !/^[[:space:]]*$/ && !/ NOP ;/' \
    "$tmp/all.sass" >"$o"
else
  grep -v -e '^[[:space:]]*$' -e ' NOP ;' "$tmp/all.sass" >"$o"
fi
echo "$(grep -c '^        \.global' "$o") kernel(s), $(wc -l <"$o") lines: $o"
