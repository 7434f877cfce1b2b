#!/bin/bash
# Everything one GPU session needs in one call of the device tool, from a
# build made here (BENCH=1 bench/cuda/carry_build.sh, then carry ["build-carry"]):
# the CUDA tests, the probe, the device benchmark and the MoE benchmark, each
# behind its own switch and timeout, and at the end all output in one archive
# ($OUT/all.tgz: the tool returns at most 8 files). Prints the summaries.
#   CT='^cuda/dev_'   ctest regex over build-gpu (default: none); CT_T (280 s)
#   CTM='^cuda/cuda_stream'  the same under ushrun --mps (USHRUN_MPS=1: a private MPS
#                     daemon per job, where device waits are safe); CTM_T (200 s)
#   PROBE=489         bench_dev_probe experiments (PROBE_EXPS, 0-9 a b); PROBE_T (200 s);
#                     PROBE_MAX its MAX_BYTES (256 MiB; 1073741824 for Eb's 1 GiB row)
#   DEV=1             bench/cuda/dev_run.sh without collective rows; DEV_T (250 s)
#   DEVCOLL="2 4"     bench/cuda/dev_run.sh's device collectives alone (DEV_P2P=0) at these
#                     PE counts, beside NVSHMEM's; DEVCOLL_MAX (COLL_MAX, 4194304), DEVCOLL_T (250 s)
#   MOE="2 4 8"       bench/cuda/moe_run.sh at these PE counts; MOE_T (200 s)
#   COLL=4            bench/cuda/coll_run.sh (stream collectives and barriers, with and
#                     without MPS, beside NVSHMEM) with this many PEs; COLL_MAX
#                     (1048576), COLL_OPS (default all; none: barriers only); COLL_T (300 s)
#   PY=1              build the library and Python extension with the machine's
#                     torch interpreter (build-devgpu) and run python/tests/test_device.py
#                     at 2 PEs, without and with MPS (Triton, numba); PY_T (300 s)
#   AB=1              bench/cuda/ab_run.sh: bench_dev_ushmem_base (carry_build.sh
#                     AB_BASE=REV) against bench_dev_ushmem and any
#                     bench_dev_ushmem_NAME (AB_VARIANTS), AB_ROUNDS (3) rounds,
#                     AB_MAX bandwidth sizes (4096); AB_T (150 s)
#   COLLAB=4          bench/cuda/ab_run.sh with NPES=4: bench_dev_coll_base against
#                     bench_dev_coll and any bench_dev_coll_NAME (carry_build.sh with
#                     AB_BENCHES=bench_dev_coll); COLLAB_ROUNDS, COLLAB_MAX (32768),
#                     COLLAB_OPS; COLLAB_T (200 s)
# usage (on the device machine, repository root):
#   CT='^cuda/dev_rma/' PROBE=8 DEV=1 bash bench/cuda/device_call.sh
set -u
: "${OUT:?set OUT to the output folder of the device tool}"
mkdir -p /work
[ -L /work/main ] && rm -f /work/main
[ -e /work/main ] || ln -s "$PWD" /work/main
[ -e build-gpu ] || ln -s build-carry build-gpu
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
cd /work/main || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$SECONDS
if [ -n "${CT:-}" ]; then
  (cd build-gpu && timeout "${CT_T:-280}" ctest -R "$CT" -E kernel --timeout 140 >"$OUT/ctest.txt" 2>&1)
  grep -E "tests passed|Failed|\*\*\*|Timeout" "$OUT/ctest.txt" | head -20
  echo "ctest $((SECONDS - S)) s"
fi
if [ -n "${CTM:-}" ]; then
  (cd build-gpu && USHRUN_MPS=1 timeout "${CTM_T:-200}" ctest -R "$CTM" --timeout 140 \
    >"$OUT/ctest_mps.txt" 2>&1)
  grep -E "tests passed|Failed|\*\*\*|Timeout" "$OUT/ctest_mps.txt" | head -20
  echo "ctest (MPS) $((SECONDS - S)) s"
fi
if [ -n "${PROBE:-}" ]; then
  PREBUILT=1 PROBE_EXPS=$PROBE timeout "${PROBE_T:-200}" bash bench/cuda/probe_run.sh \
    /work/main/build-gpu "$OUT/probe" "${PROBE_MAX:-268435456}" >"$OUT/probe.log" 2>&1
  grep -E "^\| e[0-9]|^\| E|FAILED|checks" "$OUT/probe/probe.txt" | head -80
  echo "probe $((SECONDS - S)) s"
fi
if [ -n "${DEV:-}" ]; then
  DEV_COLL_NPES="" PREBUILT=1 timeout "${DEV_T:-250}" bash bench/cuda/dev_run.sh \
    /work/main/build-gpu "$OUT/dev" >"$OUT/dev.log" 2>&1
  echo "dev rc=$? $((SECONDS - S)) s"
fi
if [ -n "${DEVCOLL:-}" ]; then
  DEV_P2P=0 DEV_COLL_NPES="$DEVCOLL" COLL_MAX=${DEVCOLL_MAX:-4194304} PREBUILT=1 \
    timeout "${DEVCOLL_T:-250}" bash bench/cuda/dev_run.sh /work/main/build-gpu "$OUT/devcoll" \
    >"$OUT/devcoll.log" 2>&1
  echo "devcoll rc=$? $((SECONDS - S)) s"
  grep -E "^\| [a-z]" "$OUT/devcoll/dev_tables.md" 2>/dev/null | head -120
fi
if [ -n "${MOE:-}" ]; then
  MOE_NPES="$MOE" PREBUILT=1 timeout "${MOE_T:-200}" bash bench/cuda/moe_run.sh \
    /work/main/build-gpu "$OUT/moe" >"$OUT/moe.log" 2>&1
  echo "moe rc=$? $((SECONDS - S)) s"
  tail -40 "$OUT/moe.log"
fi
if [ -n "${COLL:-}" ]; then
  NPES=$COLL COLL_MAX=${COLL_MAX:-1048576} PREBUILT=1 timeout "${COLL_T:-300}" \
    bash bench/cuda/coll_run.sh /work/main/build-gpu "$OUT/coll" >"$OUT/coll.log" 2>&1
  echo "coll rc=$? $((SECONDS - S)) s"
  grep -E "exit [^0]|failure" "$OUT/coll.log" | tail -5
  grep -v '^- ' "$OUT/coll/coll_tables.md" 2>/dev/null | cat -s | head -80
fi
if [ -n "${PY:-}" ]; then
  STAGES=python timeout "${PY_T:-300}" bash bench/cuda/dev_gpu_run.sh "$OUT/py" >"$OUT/py.log" 2>&1
  echo "py rc=$? $((SECONDS - S)) s"
  grep -E "^python|exit" "$OUT/py.log" | head
  grep -hE "FAILED|ERROR|SKIPPED" "$OUT"/py/pytest_*.log | head -20
fi
if [ -n "${AB:-}" ]; then
  bins=(/work/main/build-gpu/bench_dev_ushmem_base /work/main/build-gpu/bench_dev_ushmem)
  for b in /work/main/build-gpu/bench_dev_ushmem_*; do
    case "$b" in *_base | *"*") ;; *) bins+=("$b") ;; esac
  done
  ROUNDS=${AB_ROUNDS:-3} timeout "${AB_T:-150}" bash bench/cuda/ab_run.sh /work/main/build-gpu \
    "$OUT/ab" "${AB_MAX:-4096}" "${bins[@]}" >"$OUT/ab.txt" 2>&1
  echo "ab rc=$? $((SECONDS - S)) s"
  grep -E "^# PROBLEM|^\| (row|put_lat|put_bw|fetch|p_ping|put_signal|barrier)" "$OUT/ab.txt" | head -120
fi
if [ -n "${COLLAB:-}" ]; then
  bins=(/work/main/build-gpu/bench_dev_coll_base /work/main/build-gpu/bench_dev_coll)
  for b in /work/main/build-gpu/bench_dev_coll_*; do
    case "$b" in *_base | *_nvshmem | *"*") ;; *) bins+=("$b") ;; esac
  done
  NPES=$COLLAB ROUNDS=${COLLAB_ROUNDS:-${#bins[@]}} COLL_MAX=${COLLAB_MAX:-32768} \
    COLL_OPS=${COLLAB_OPS:-} timeout "${COLLAB_T:-200}" bash bench/cuda/ab_run.sh \
    /work/main/build-gpu "$OUT/collab" 0 "${bins[@]}" >"$OUT/collab.txt" 2>&1
  echo "collab rc=$? $((SECONDS - S)) s"
  grep -E "^# PROBLEM|^\| |exit" "$OUT/collab.txt" | head -80
fi
cd "$OUT" && tar czf /tmp/all.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/all.tgz "$OUT/"
