#!/bin/sh
# make demo: the torch ring example on 4 PEs (skipped, with the reason, when the
# extension or torch is missing).   examples/python/run.sh [BUILD_DIR] [NPES]
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
n=${2:-4}
py=${USHMEM_PYTHON:-/usr/bin/python3}
if ! ls "$build"/python/ushmem/_ushmem*.so >/dev/null 2>&1; then
  echo "ushmem: Python demo skipped: extension not built (Debian: python3-dev, then make)"
  exit 0
fi
if ! "$py" -c "import torch" 2>/dev/null; then
  echo "ushmem: Python demo skipped: no torch for $py (Debian: python3-torch)"
  exit 0
fi
echo "== ushmem demo: examples/python/ring_torch.py on $n PEs"
PYTHONPATH="$root/python" USHMEM_PYTHON_EXT_DIR="$build/python/ushmem" \
  SHMEM_SYMMETRIC_SIZE=${SHMEM_SYMMETRIC_SIZE:-64M} OMP_NUM_THREADS=1 \
  exec "$build/tools/ushrun" -n "$n" --timeout 60 "$py" "$root/examples/python/ring_torch.py"
