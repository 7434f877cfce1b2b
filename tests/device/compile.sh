#!/bin/bash
# Compile-only tests of the header-only device API (include/shmemx_device.cuh);
# no GPU needed. One mode per ctest test (tests/device/CMakeLists.txt):
#
#   compile.sh nordc NVCC                  nvcc -c to compute_90 PTX (no ptxas), without -rdc
#   compile.sh rdc NVCC                    nvcc -rdc: two TUs, device link, host link
#   compile.sh clang CLANGXX               clang CUDA, device only, to PTX
#   compile.sh header_c CC DEV_LAYOUT [CXX] the handle type in C and C++, its layout
#   compile.sh regs NVCC FLAGS...          the register counts of test kernels that
#                                          launch 1024-thread blocks (ptxas -v), compiled
#                                          with the build's FLAGS (USHMEM_DEV_TEST_NVCC_FLAGS)
#
# The checked variant (-DSHMEMX_DEVICE_CHECKS) is built by rdc and clang. The PTX may declare
# no external symbol but vprintf (device printf, resolved by ptxas) and define
# no device global (printf's string literals excepted: no linkage, so they
# cannot collide). Prints one PASS/FAIL line per step; exits 1 on a failure,
# 77 (skipped) when the mode's tool is missing.
set -u

here=$(cd "$(dirname "$0")" && pwd)
inc=$(cd "$here/../../include" && pwd)
failures=0

pass() { echo "PASS: $*"; }
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
skip() {
    echo "SKIP: $*"
    exit 77
}
usage() {
    echo "usage: $0 nordc|rdc NVCC | regs NVCC FLAGS... | clang CLANGXX | header_c CC DEV_LAYOUT [CXX]" >&2
    exit 2
}
# A tool given as an empty path or CMake's NAME-NOTFOUND is absent.
have() { [ -n "$1" ] && [ "${1%-NOTFOUND}" = "$1" ] && [ -x "$1" ]; }

work=$(mktemp -d "${TMPDIR:-/tmp}/ushmem_device.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

# step LABEL CMD...: run CMD; PASS, or FAIL with its output. Returns its status.
step() {
    local label=$1 out rc t0=$SECONDS
    shift
    out=$("$@" 2>&1)
    rc=$?
    if [ $rc -eq 0 ]; then
        pass "$label ($((SECONDS - t0)) s)"
    else
        fail "$label (exit $rc): $*"
        printf '%s\n' "$out" | head -n 60 | sed 's/^/  /'
    fi
    return $rc
}

# ptx_offenders FILE: the lines breaking the no-globals, no-externals rule.
# nvcc and NVRTC name string literals $str..., clang _$_str...
ptx_offenders() {
    grep -E '^\s*\.extern\s' "$1" |
        grep -Ev '^\s*\.extern\s+\.func\s.*\svprintf([[:space:](;]|$)'
    # shellcheck disable=SC2016 # $str is literal
    grep -E '^(\.(visible|weak|common)[[:space:]]+)?\.(global|const)[[:space:]]' "$1" |
        grep -Ev '^\.(global|const)[[:space:]][^[]*[[:space:]](\$str|_\$_str)[^[:space:][]*\['
}

# check_ptx LABEL FILE KERNEL...: the rule above, and the kernels are there
# (an empty module would pass the rule).
check_ptx() {
    local label=$1 f=$2 bad k
    shift 2
    if [ ! -s "$f" ]; then
        fail "$label: no PTX ($f)"
        return 1
    fi
    bad=$(ptx_offenders "$f" | cut -c1-160)
    if [ -n "$bad" ]; then
        fail "$label: device globals or external symbols in the PTX"
        printf '%s\n' "$bad" | head -n 20 | sed 's/^/  /'
        return 1
    fi
    for k in "$@"; do
        if ! grep -Eq "^\.(visible|weak)?[[:space:]]*\.entry[[:space:]]+$k\(" "$f"; then
            fail "$label: no kernel $k in the PTX"
            return 1
        fi
    done
    pass "$label: PTX declares only vprintf and defines no device global"
}

# The rule must catch what it is meant to catch.
ptx_self_test() {
    local f=$work/selftest.ptx n
    cat >"$f" <<'EOF'
.extern .func  (.param .b32 func_retval0) vprintf
.extern .func  (.param .b32 func_retval0) vprintf_other
.extern .global .align 4 .u32 ext_var;
.extern .shared .align 16 .b8 dyn_smem[];
.global .align 1 .b8 $str[3] = {104, 105, 0};
.global .align 1 .b8 _$_str1[3] = {104, 105, 0};
.global .align 4 .u32 plain_var;
.visible .global .align 8 .u64 visible_var;
.weak .global .align 1 .u8 weak_var;
.const .align 4 .u32 const_var = 1;
.global .align 1 .u8 _ZN15ushmemi_dev_intIiE2okE;
.visible .entry k(
	.reg .b32 	%r<2>;
EOF
    n=$(ptx_offenders "$f" | wc -l)
    if [ "$n" -ne 8 ]; then
        fail "PTX check self-test: $n offending lines found, 8 expected"
        ptx_offenders "$f" | sed 's/^/  /'
    fi
}

# Warnings are errors: every user of the header would see them.
nvcc_common=(-std=c++17 -I"$inc" -I"$here" -Werror all-warnings -Wno-deprecated-gpu-targets
    -Xcompiler "-Wall,-Wextra")
# Kernels of dev_all.cuh that must be in its PTX (one per header).
kernels=(dev_all dev_all_coll_alltoallmem_block dev_all_waits)
sm90=(-gencode "arch=compute_90,code=sm_90")

mode_nordc() {
    local nvcc=$1 kd
    have "$nvcc" || skip "no nvcc"
    ptx_self_test
    # --keep leaves the PTX (dev_all.compute_NN.ptx, or dev_all.ptx for a
    # single arch): no second compilation for -ptx.
    kd=$work/plain && mkdir -p "$kd"
    # PTX only (code=compute_90: no ptxas, which took two thirds of a minute
    # or more of CI time; the rdc test runs ptxas on the checked build, a
    # superset), the host side compiled too; the clang test builds sm_80.
    if step "nvcc compute_90 -c" "$nvcc" "${nvcc_common[@]}" -gencode "arch=compute_90,code=compute_90" \
        -DDEV_ALL_HOST_LAUNCH --keep --keep-dir "$kd" -c "$here/dev_all.cu" -o "$work/plain.o"; then
        check_ptx "nvcc compute_90" "$kd/dev_all.ptx" "${kernels[@]}"
    fi
    # The checked build (-DSHMEMX_DEVICE_CHECKS) is compiled by the rdc test.
}

# rdc_program NAME NVCC ALL_DEFS OTHER_DEFS ARCH...: dev_all.cu and dev_other.cu
# compiled with -rdc=true, device-linked, then host-linked without a second
# device link (-nodlink), so the dlink object is what resolves the kernels.
rdc_program() {
    local name=$1 nvcc=$2 all_defs=$3 other_defs=$4
    shift 4
    local d=$work/$name
    mkdir -p "$d"
    # shellcheck disable=SC2086 # *_defs: zero or more -D words
    step "$name: nvcc -rdc=true -c dev_all.cu${all_defs:+ $all_defs}" "$nvcc" \
        "${nvcc_common[@]}" "$@" -rdc=true $all_defs -c "$here/dev_all.cu" -o "$d/all.o" || return
    # shellcheck disable=SC2086
    step "$name: nvcc -rdc=true -c dev_other.cu${other_defs:+ $other_defs}" "$nvcc" \
        "${nvcc_common[@]}" "$@" -rdc=true $other_defs -c "$here/dev_other.cu" -o "$d/other.o" ||
        return
    step "$name: nvcc -dlink" "$nvcc" "$@" -dlink "$d/all.o" "$d/other.o" -o "$d/dlink.o" || return
    step "$name: host link" "$nvcc" -nodlink "$d/all.o" "$d/other.o" "$d/dlink.o" -o "$d/prog"
}

mode_rdc() {
    local nvcc=$1
    have "$nvcc" || skip "no nvcc"
    # One program: the checked dev_all with the unchecked dev_other (the two
    # variants link together); the unchecked dev_all is the nordc test's (a
    # second rdc program cost two more minutes of CI).
    rdc_program rdc_checks "$nvcc" "-DSHMEMX_DEVICE_CHECKS" "" "${sm90[@]}"
}

mode_clang() {
    local clang=$1 defs
    have "$clang" || skip "no clang++"
    ptx_self_test
    for defs in "" "-DSHMEMX_DEVICE_CHECKS"; do
        # shellcheck disable=SC2086
        step "clang++ -x cuda sm_80 -S${defs:+ $defs}" "$clang" -x cuda --cuda-gpu-arch=sm_80 \
            -nocudainc -nocudalib --cuda-device-only -std=c++17 -Wno-unknown-cuda-version -Wall \
            -Wextra -Werror -I"$inc" -I"$here" $defs -S "$here/dev_all.cu" -o "$work/clang.ptx" &&
            check_ptx "clang sm_80${defs:+ $defs}" "$work/clang.ptx" "${kernels[@]}"
    done
}

mode_header_c() {
    local cc=$1 layout=$2 cxx=${3:-} std
    local warn=(-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla -Werror
        -pedantic)
    have "$cc" || skip "no C compiler"
    printf '#include <shmemx_device_types.h>\n' >"$work/types.c"
    printf '#include <shmemx_device_types.h>\n#include <shmemx.h>\n' >"$work/both.c"
    # The handle's header promises C99 and later; shmemx.h is C11 like the library.
    for std in c99 c11; do
        step "$cc -std=$std shmemx_device_types.h" "$cc" -std=$std "${warn[@]}" -I"$inc" \
            -c "$work/types.c" -o "$work/types.o"
    done
    step "$cc -std=c11 shmemx_device_types.h + shmemx.h" "$cc" -std=c11 "${warn[@]}" -I"$inc" \
        -c "$work/both.c" -o "$work/both.o"
    if have "$cxx"; then
        for std in c++11 c++17; do
            step "$cxx -std=$std shmemx_device_types.h + shmemx.h" "$cxx" -x c++ -std=$std \
                -Wall -Wextra -Wshadow -Werror -pedantic -I"$inc" -c "$work/both.c" \
                -o "$work/both_cxx.o"
        done
        # Outside CUDA compilers, the device header is just the handle type.
        printf '#include <shmemx_device.cuh>\nshmemx_dev_t d;\n' >"$work/host.cc"
        step "$cxx -std=c++11 shmemx_device.cuh (host compiler)" "$cxx" -std=c++11 -Wall \
            -Wextra -Wshadow -Werror -pedantic -I"$inc" -c "$work/host.cc" -o "$work/host.o"
    else
        echo "SKIP: no C++ compiler (the C++ part)"
    fi

    # dev_layout's `name offset size` lines: fields in declaration order, no
    # overlap and no implicit padding (the ctypes mirror would need it spelled
    # out; a field missing from dev_layout.c shows up as a gap), and the total
    # a multiple of 8 and at most 256 bytes (kernel parameters stay small).
    if ! have "$layout"; then
        fail "dev_layout: not built ($layout)"
        return
    fi
    local out problems
    if ! out=$("$layout"); then
        fail "dev_layout: exit status $?"
        return
    fi
    problems=$(printf '%s\n' "$out" | awk '
        NF != 3 { print "malformed line: " $0; next }
        $1 == "shmemx_dev_t" { total = $3; next }
        {
            if ($2 < end) print $1 " at " $2 " overlaps the previous field (ending at " end ")"
            else if ($2 > end) print "a gap of " $2 - end " bytes before " $1 " at " $2
            end = $2 + $3; n++
        }
        END {
            if (!n) print "no fields"
            if (total == "") { print "no shmemx_dev_t size line"; exit }
            if (end != total) print "the fields end at " end ", sizeof is " total
            if (total % 8) print "sizeof " total " is not a multiple of 8"
            if (total > 256) print "sizeof " total " is over 256"
        }')
    if [ -n "$problems" ]; then
        fail "shmemx_dev_t layout"
        printf '%s\n' "$problems" | sed 's/^/  /'
        printf '%s\n' "$out" | sed 's/^/  | /'
    else
        pass "shmemx_dev_t layout: $(printf '%s\n' "$out" | grep -c .) lines, sizeof $(
            printf '%s\n' "$out" | awk '$1 == "shmemx_dev_t" { print $3 }')"
    fi
}

# A kernel over 64 registers cannot start a block of 1024 threads (65536
# registers per SM): "too many resources requested for launch". ptxas picks the
# count from the code, so a header change can push a user's kernel over it
# (moving the header's rare paths into calls took tests/cuda/dev_rma.cu's k_put
# from 58 to 78). These test kernels launch 1024-thread blocks; they are
# compiled with the build's flags, and each must stay at 64 or below.
regs_1024=("tests/cuda/dev_rma.cu k_put k_get")

mode_regs() {
    local nvcc=$1 root entry file k n out
    shift
    have "$nvcc" || skip "no nvcc"
    [ $# -gt 0 ] || usage
    root=$(cd "$here/../.." && pwd)
    for entry in "${regs_1024[@]}"; do
        file=${entry%% *}
        if ! out=$("$nvcc" "$@" -Xptxas -v -c "$root/$file" -o "$work/regs.o" 2>&1); then
            fail "$file: nvcc -Xptxas -v"
            printf '%s\n' "$out" | head -n 30 | sed 's/^/  /'
            continue
        fi
        # "Compiling entry function '_Z5k_put...'" then "Used N registers": kernel N
        out=$(printf '%s\n' "$out" | awk '
            /Compiling entry function/ { split($0, a, "'"'"'"); name = a[2] }
            /Used [0-9]+ registers/ && name != "" {
                for (i = 1; i <= NF; i++) if ($i == "Used") print name, $(i + 1)
                name = "" }')
        for k in ${entry#* }; do
            n=$(printf '%s\n' "$out" | awk -v k="$k" '$1 ~ "^_Z[0-9]+" k "[0-9A-Z]" { print $2; exit }')
            if [ -z "$n" ]; then
                fail "$file: no register count for kernel $k in ptxas -v"
            elif [ "$n" -gt 64 ]; then
                fail "$file: kernel $k uses $n registers: over 64, its 1024-thread blocks cannot launch"
            else
                pass "$file: kernel $k uses $n registers (1024-thread blocks launch up to 64)"
            fi
        done
    done
}

[ $# -ge 1 ] || usage
mode=$1
shift
case $mode in
nordc | rdc | clang) # the tool may come as an empty argument, or none
    [ $# -le 1 ] || usage
    "mode_$mode" "${1:-}"
    ;;
regs) # NVCC (maybe empty: skipped) then the build's flags
    mode_regs "${1:-}" "${@:2}"
    ;;
header_c)
    [ $# -eq 2 ] || [ $# -eq 3 ] || usage
    mode_header_c "$@"
    ;;
*) usage ;;
esac

if [ $failures -ne 0 ]; then
    echo "$mode: $failures failure(s)"
    exit 1
fi
echo "$mode: all passed"
