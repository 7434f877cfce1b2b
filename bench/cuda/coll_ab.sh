#!/bin/bash
# Same-run A/B of the stream collectives: two builds of bench_coll_ushmem (say
# the commit before a change and after it, each linked with its own
# libushmem.a) run alternately, NPES PEs on GPU 0, without MPS and under
# ushrun --mps, in each USHMEM_CUDA_COLL mode of MODES; ROUNDS rounds (best
# of them is kept). Prints one table per placement: µs per call, A, B, B / A.
# usage: bash bench/cuda/coll_ab.sh USHRUN BIN_A BIN_B OUTDIR
# env: NPES (4), COLL_MAX (65536), COLL_OPS, MODES ("auto copy leader"), ROUNDS (2)
set -u
ushrun=${1:?usage: coll_ab.sh USHRUN BIN_A BIN_B OUTDIR} a=${2:?} b=${3:?} O=${4:?}
NPES=${NPES:-4}
export COLL_MAX=${COLL_MAX:-65536} NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
HEAP_MB=$((COLL_MAX * NPES * 2 / 1048576 + 256))
mkdir -p "$O" || exit 1
unset USHMEM_CUDA_COLL USHMEM_MPS CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY \
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
fails=0
for r in $(seq "${ROUNDS:-2}"); do
  for place in nomps mps; do
    for m in ${MODES:-auto copy leader}; do
      for side in A B; do
        bin=$a
        [ $side = B ] && bin=$b
        mps=()
        [ $place = mps ] && mps=(--mps)
        env $([ $m != auto ] && echo USHMEM_CUDA_COLL=$m) USHMEM_DEVICE=0 \
          USHMEM_DEVICE_HEAP_SIZE=${HEAP_MB}M timeout 150 "$ushrun" "${mps[@]}" --timeout 120 \
          -n "$NPES" "$bin" "$side" >>"$O/${place}_$m.txt" 2>&1 ||
          { echo "$place $m $side round $r: failed"; tail -5 "$O/${place}_$m.txt"; fails=$((fails + 1)); }
      done
    done
  done
done
for place in nomps mps; do
  for m in ${MODES:-auto copy leader}; do
    echo "### $place, USHMEM_CUDA_COLL=$m, $NPES PEs: µs (best of ${ROUNDS:-2})"
    echo
    echo "| metric | bytes | A | B | B / A |"
    echo "|---|---|---|---|---|"
    awk '$1 == "R" && $3 !~ /wall|host/ {
           k = $3 " " $4
           if (!(k in seen)) { seen[k] = 1; order[n++] = k }
           if (!((k, $2) in best) || $5 < best[k, $2]) best[k, $2] = $5
         }
         END {
           for (i = 0; i < n; i++) {
             k = order[i]; split(k, p, " ")
             x = best[k, "A"]; y = best[k, "B"]
             printf "| %s | %s | %s | %s | %s |\n", p[1], p[2], x, y, (x > 0 ? sprintf("%.2f", y / x) : "-")
           }
         }' "$O/${place}_$m.txt"
    echo
  done
done | tee "$O/ab_tables.md"
[ "$fails" = 0 ]
