#!/bin/sh
# Install what the build and tests need on Debian 12, or say what is missing.
# usage: scripts/deps.sh [build|check|bench]
set -eu
what=${1:-build}

need_cmds="cc make cmake"
need_pkgs="build-essential cmake"
case "$what" in
  check) need_cmds="$need_cmds clang-format bc pgrep timeout"
         need_pkgs="$need_pkgs clang-format bc procps coreutils" ;;
  bench|demo) need_cmds="$need_cmds oshcc mpirun lscpu"
         need_pkgs="$need_pkgs openmpi-bin libopenmpi-dev util-linux" ;;
esac

missing=""
for c in $need_cmds; do
  command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
done
[ -x /usr/bin/python3 ] || missing="$missing /usr/bin/python3"
[ -z "$missing" ] && exit 0

echo "ushmem: missing:$missing"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ushmem: installing with apt-get: $need_pkgs python3"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $need_pkgs python3 >/dev/null
else
  echo "ushmem: install them with: sudo apt-get install $need_pkgs python3" >&2
  exit 1
fi
