#!/bin/bash
# Run a command with LOCAL_RANK set from ushrun's USHMEM_LOCAL_RANK (ushrun sets
# only the latter), so that ushmem binds PE i to GPU LOCAL_RANK % device count
# (docs/cuda.md: USHMEM_DEVICE unset). An existing LOCAL_RANK (torchrun) wins.
#   ushrun -n 4 bench/cuda/local_rank.sh PROGRAM ARGS...
export LOCAL_RANK=${LOCAL_RANK:-${USHMEM_LOCAL_RANK:?local_rank.sh: run it under ushrun}}
exec "$@"
