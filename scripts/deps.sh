#!/bin/sh
# Install what a make target needs on Debian 12 (as root, with apt-get), or say
# what to install.   usage: scripts/deps.sh build|check|demo|bench
set -eu
what=${1:-build}

pkgs="build-essential cmake"
case "$what" in
  check) pkgs="$pkgs clang-format bc procps coreutils util-linux python3-dev python3-pytest \
python3-numpy python3-torch python3-mpi4py openmpi-bin libopenmpi-dev autoconf pkgconf" ;;
  demo) pkgs="$pkgs util-linux python3-dev python3-torch openmpi-bin libopenmpi-dev" ;;
  bench) pkgs="$pkgs util-linux openmpi-bin libopenmpi-dev" ;;
esac

missing=""
if command -v dpkg >/dev/null 2>&1; then
  for p in $pkgs; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
  done
else
  command -v cc >/dev/null 2>&1 && command -v cmake >/dev/null 2>&1 || missing=" $pkgs"
fi
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ushmem: installing with apt-get:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
  echo "ushmem: missing packages:$missing" >&2
  echo "ushmem: install them with: sudo apt-get install$missing" >&2
  exit 1
fi
