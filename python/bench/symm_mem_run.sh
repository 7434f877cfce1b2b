#!/bin/bash
# All-reduce on torch symmetric memory (python/bench/bench_symm_mem.py): ushmem's
# backend (torch's one_shot / two_shot ops) against NCCL all_reduce and ushmem's own
# stream reduction, 2 and 4 ranks on GPU 0, under a private MPS daemon
# (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100/N) and without it; prints one table per
# (ranks, MPS) with each row's ratio to NCCL's best (to ushmem's stream reduction where NCCL
# refuses several ranks on one GPU, as NCCL 2.28 does). Raw lines and tables go to OUTDIR.
# Never changes GPU settings.
# usage: python/bench/symm_mem_run.sh OUTDIR        env: PY (python with torch 2.x + CUDA),
#        NPES ("2 4"), MAX (67108864), MODES ("mps nomps"); the ushmem package must be
#        importable by PY (PYTHONPATH or installed).
set -u
O=${1:?usage: symm_mem_run.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/bench/cuda/common.sh"
PY=${PY:-python3}
mkdir -p "$O" && O=$(cd "$O" && pwd)
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 NCCL_MULTI_RANK_GPU_ENABLE=1
export USHMEM_CACHE_DIR=${USHMEM_CACHE_DIR:-$O/cache}
trap mps_quit EXIT
{
  gpu_info
  "$PY" -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda)"
} >"$O/info.txt" 2>&1
cat "$O/info.txt"
status=0

table() { # raw file -> table with ratios to NCCL (best)
  awk -F'\t' '$1 == "row" { key[$2] = 1; best[$2, $3] = $4; mean[$2, $3] = $5; sz[$3] = 1 }
    END {
      ref = ("NCCL all_reduce + clone" in key) ? "NCCL all_reduce + clone" : "ushmem reduce_on_stream"
      printf "| op | bytes | best us | mean us | best / %s |\n|---|---|---|---|---|\n", ref
      for (k in key) for (s in sz) if ((k, s) in best) {
        r = ((ref, s) in best) ? sprintf("%.2f", best[k, s] / best[ref, s]) : "-"
        printf "| %s | %s | %s | %s | %s |\n", k, s, best[k, s], mean[k, s], r
      }
    }' "$1" | sort -t'|' -k3,3n -k2,2
}

for mode in ${MODES:-mps nomps}; do
  for n in ${NPES:-2 4}; do
    raw="$O/symm_mem_${mode}_np$n.txt"
    if [ "$mode" = mps ]; then
      mps_start symm || { status=1; continue; }
      export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$((100 / n))
    fi
    echo "== $n ranks, $mode"
    timeout 600 "$PY" -m torch.distributed.run --standalone --nproc-per-node "$n" \
      "$here/bench_symm_mem.py" --max-bytes "${MAX:-67108864}" >"$raw" 2>&1 || {
        echo "symm_mem_run: $n ranks ($mode) failed:"; tail -20 "$raw"; status=1; }
    if [ "$mode" = mps ]; then
      unset CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
      mps_quit
    fi
    grep '^#' "$raw"
    table "$raw" | tee "$O/symm_mem_${mode}_np$n.md"
  done
done
exit $status
