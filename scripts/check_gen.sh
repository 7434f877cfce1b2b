#!/usr/bin/env bash
# Fail when the checked-in typed API differs from what scripts/gen_api.py
# writes now (someone edited a generated file, or changed the generator
# without regenerating). Fix: /usr/bin/python3 scripts/gen_api.py
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$python" "$root/scripts/gen_api.py" --outdir "$tmp" >/dev/null

status=0
for f in include/shmem_gen.h include/pshmem_gen.h src/gen/api_gen.c; do
    if [ ! -f "$root/$f" ]; then
        echo "check_gen: $f is missing" >&2
        status=1
    elif ! diff -u "$root/$f" "$tmp/$f" >"$tmp/diff" 2>&1; then
        echo "check_gen: $f differs from scripts/gen_api.py output:" >&2
        head -n 40 "$tmp/diff" >&2
        status=1
    fi
done
if [ "$status" -ne 0 ]; then
    echo "check_gen: generated files drifted; run: $python scripts/gen_api.py" >&2
fi
exit "$status"
