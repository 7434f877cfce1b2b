#!/bin/sh
# One formatter for the tree. --check fails on any difference.
set -eu
cd "$(dirname "$0")/.."
files=$(git ls-files '*.c' '*.h' '*.cu' '*.cuh' 2>/dev/null | grep -v -e '^include/shmem_gen.h' -e '^include/pshmem_gen.h' -e '^src/gen/' || true)
[ -n "$files" ] || exit 0
if [ "${1:-}" = "--check" ]; then
  # shellcheck disable=SC2086
  clang-format --dry-run --Werror $files
else
  # shellcheck disable=SC2086
  clang-format -i $files
fi
