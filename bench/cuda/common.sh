# Shared by the GPU benchmark scripts (run.sh, dev_run.sh, coll_run.sh, moe_run.sh); sourced.

# NV = the folder of the nvidia-nvshmem-cu13 package (include/, lib/), or empty.
find_nvshmem() {
  # nvidia.nvshmem is a namespace package: its folder is __path__[0].
  local findnv='import nvidia.nvshmem as m; print(list(m.__path__)[0])' h
  NV=$(python3 -c "$findnv" 2>/dev/null || /usr/bin/python3 -c "$findnv" 2>/dev/null)
  if [ -z "$NV" ]; then # (dirname of nothing would be ".", this checkout)
    h=$(find / -path '*nvidia/nvshmem/include/nvshmem.h' 2>/dev/null | head -1)
    [ -n "$h" ] && NV=$(dirname "$h")
  fi
  NV=${NV%/include}
  echo "NVSHMEM: ${NV:-not found}"
}

# The machine a run measured (for OUTDIR/info.txt): date, GPU, driver, nvcc.
gpu_info() {
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode --format=csv,noheader
  nvcc --version | tail -2
}

# A private MPS control daemon (its own pipe and log folders under /tmp, never
# the system's; GPU settings untouched). mps_start NAME starts it and exports
# CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY for what runs next; it
# returns non-zero with a line when the daemon or its pipe does not come up.
# mps_quit tells it to quit (kills it after 10 s), keeps its log in $O/mps_log
# and unsets the variables; set `trap mps_quit EXIT` before mps_start.
MPSDIR=
mps_start() {
  MPSDIR=$(mktemp -d "/tmp/$1-mps-XXXXXX") || return 1
  mkdir -p "$MPSDIR/pipe" "$MPSDIR/log"
  export CUDA_MPS_PIPE_DIRECTORY="$MPSDIR/pipe" CUDA_MPS_LOG_DIRECTORY="$MPSDIR/log"
  nvidia-cuda-mps-control -d || { echo "could not start the MPS control daemon"; return 1; }
  for _ in $(seq 100); do
    [ -e "$MPSDIR/pipe/control" ] && return 0
    sleep 0.1
  done
  echo "the MPS control pipe did not appear in 10 s"; cat "$MPSDIR"/log/*.log 2>/dev/null
  return 1
}

mps_quit() {
  [ -n "${MPSDIR:-}" ] || return 0
  local pid
  pid=$(cat "$MPSDIR/pipe/nvidia-cuda-mps-control.pid" 2>/dev/null)
  if [ -e "$MPSDIR/pipe/control" ]; then
    echo quit | CUDA_MPS_PIPE_DIRECTORY="$MPSDIR/pipe" CUDA_MPS_LOG_DIRECTORY="$MPSDIR/log" \
      timeout 20 nvidia-cuda-mps-control >/dev/null 2>&1
  fi
  for _ in $(seq 100); do # up to 10 s for the daemon (and its server) to go
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    echo "the MPS control daemon (pid $pid) did not quit; killing it"
    kill -9 "$pid"
  fi
  cp -r "$MPSDIR/log" "$O/mps_log" 2>/dev/null
  rm -rf "$MPSDIR"
  MPSDIR=
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
}

# build_ushmem_benches BUILD_DIR LOG [NAME...]: the ushmem device benchmarks
# (NAMEs; default bench_dev_ushmem, bench_dev_coll, bench_moe_ushmem,
# bench_dev_probe and the stream collectives' bench_coll_ushmem)
# against BUILD_DIR's libushmem.a; needs no GPU. Non-zero with a line when one
# fails. BENCH_INCLUDE: another include folder for the headers (default the
# repository's); BENCH_SUFFIX: appended to each output name (carry_build.sh
# AB_BASE builds bench_dev_ushmem_base this way); BENCH_DEFS: extra nvcc flags
# (carry_build.sh AB_VARIANTS: the header's A/B knobs).
build_ushmem_benches() {
  local b here inc out=$1 log=$2
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  inc=${BENCH_INCLUDE:-$here/../../include}
  shift 2
  [ $# -gt 0 ] || set -- bench_dev_ushmem bench_dev_coll bench_moe_ushmem bench_dev_probe bench_coll_ushmem
  for b in "$@"; do
    # BENCH_DEFS: extra nvcc flags, unquoted on purpose (several -D words)
    # shellcheck disable=SC2086
    nvcc -O2 -std=c++17 -arch=sm_90 ${BENCH_DEFS:-} -I"$inc" "$here/$b.cu" \
      -o "$out/$b${BENCH_SUFFIX:-}" "$out/libushmem.a" -ldl -lpthread >>"$log" 2>&1 ||
      { echo "$b: build failed"; return 1; }
  done
}
