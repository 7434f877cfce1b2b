#!/bin/bash
# For the GPU machine (the device tool): build here (nvcc needs no GPU) into
# build-gpu, then copy what the GPU runs need into build-carry (under the
# device tool's 64 MiB carry limit: no object files, no static library, no
# Python extension, only the CUDA tests of the C suite). Pass build-carry as
# the run's carry, then on the device machine make the build's absolute paths
# valid before using it:
#   mkdir -p /work; [ -e /work/main ] || ln -s "$PWD" /work/main
#   [ -e build-gpu ] || ln -s build-carry build-gpu
# and run from /work/main/build-gpu (ctest works there, e.g. ctest -R '^cuda/').
# Saves the 30-100 s of building on every cold device machine. BENCH=1 adds
# the ushmem device benchmarks (bench_dev_ushmem, bench_dev_coll,
# bench_moe_ushmem; then: PREBUILT=1 bench/cuda/dev_run.sh /work/main/build-gpu
# OUTDIR, or PREBUILT=1 bench/cuda/moe_run.sh /work/main/build-gpu OUTDIR).
# AB_BASE=REV adds bench_dev_ushmem_base, AB_VARIANTS bench_dev_ushmem_NAME (below);
# AB_BENCHES ("bench_dev_ushmem") names the benchmarks they are built for
# (bench_dev_coll: device_call.sh COLLAB=N, bench/cuda/ab_run.sh with NPES).
#   bench/cuda/carry_build.sh   (repository root, checked out at /work/main)
# bench/cuda/device_call.sh runs the tests and benchmarks from it in one call.
set -eu
. bench/cuda/common.sh
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-gpu -j"$(nproc)" >/tmp/carry_build.log 2>&1 || { tail -20 /tmp/carry_build.log; exit 1; }
# BENCH=1: also the ushmem device benchmarks (for PREBUILT=1 bench/cuda/dev_run.sh, moe_run.sh)
if [ "${BENCH:-0}" = 1 ]; then
  build_ushmem_benches build-gpu /tmp/carry_build.log || { tail -20 /tmp/carry_build.log; exit 1; }
fi
# AB_BASE=REV: also bench_dev_ushmem_base, the same benchmark built against the
# device headers of commit REV and linked with this library, for a same-run
# comparison (device_call.sh AB=1, bench/cuda/ab_run.sh). REV's handle must be
# this one (same SHMEMX_DEV_VERSION and struct shmemx_dev): refused otherwise.
handle_layout() {
  sed -n '/^#define SHMEMX_DEV_VERSION/p;/^typedef struct shmemx_dev {/,/^} shmemx_dev_t;/p' "$1"
}
if [ -n "${AB_BASE:-}" ]; then
  abinc=$(mktemp -d /tmp/ab_include.XXXXXX)
  git archive "$AB_BASE" include | tar -x -C "$abinc" || { echo "AB_BASE=$AB_BASE: no such commit"; exit 1; }
  if [ "$(handle_layout "$abinc/include/shmemx_device_types.h")" != \
    "$(handle_layout include/shmemx_device_types.h)" ]; then
    echo "AB_BASE=$AB_BASE: its handle (shmemx_dev_t, SHMEMX_DEV_VERSION) differs from this one"
    exit 1
  fi
  # shellcheck disable=SC2086
  BENCH_INCLUDE="$abinc/include" BENCH_SUFFIX=_base build_ushmem_benches build-gpu \
    /tmp/carry_build.log ${AB_BENCHES:-bench_dev_ushmem} || { tail -20 /tmp/carry_build.log; exit 1; }
  rm -rf "$abinc"
fi
# AB_VARIANTS="NAME:FLAGS ...": also bench_dev_ushmem_NAME, built from this tree
# with the nvcc FLAGS (commas for spaces), e.g. the header's A/B knobs:
#   AB_VARIANTS="a:-DUSHMEMI_DEV_SOME_KNOB=1 b:-DUSHMEMI_DEV_SOME_KNOB=2,-DOTHER=1"
# device_call.sh AB=1 runs them after bench_dev_ushmem_base and bench_dev_ushmem.
for v in ${AB_VARIANTS:-}; do
  name=${v%%:*}
  flags=${v#*:}
  case "$name" in "" | *[!a-z0-9_]*) echo "AB_VARIANTS: bad name in '$v'"; exit 1 ;; esac
  # shellcheck disable=SC2086
  BENCH_DEFS=${flags//,/ } BENCH_SUFFIX=_$name build_ushmem_benches build-gpu \
    /tmp/carry_build.log ${AB_BENCHES:-bench_dev_ushmem} || { tail -20 /tmp/carry_build.log; exit 1; }
done
rm -rf build-carry
cp -a build-gpu build-carry
rm -rf build-carry/CMakeFiles/ushmem_obj.dir build-carry/libushmem.a build-carry/python
find build-carry -name "*.o" -delete
for d in build-carry/tests/*/; do
  case "$d" in */cuda/) ;; *) find "$d" -type f -perm -u+x -delete ;; esac
done
# the CPU tests' programs and build records (ctest reads only CTestTestfile.cmake)
find build-carry/tests -maxdepth 1 -type f -perm -u+x -delete
rm -rf build-carry/tests/CMakeFiles
# Debug info is most of each binary's size and no GPU run reads it.
find build-carry -type f -perm -u+x -exec sh -c 'file -b "$1" | grep -q "^ELF" && strip --strip-debug "$1"' _ {} \; 2>/dev/null || true
find build-carry -name "*.so*" -type f -exec strip --strip-debug {} \; 2>/dev/null || true
du -sh build-carry
