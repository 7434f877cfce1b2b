#!/bin/bash
# Issue 22, item 7: another user who creates /tmp/ushmem-<uid> first (a file,
# a symlink, a directory of theirs) must not make one-host torchrun-style
# jobs fail: rank 0 falls back to $HOME/.ushmem. The directory is removed
# after the job, and a secret file left by a SIGKILLed rank 0 is deleted by
# the next job. Runs in a private mount namespace with its own /tmp (so the
# squatting cannot disturb other jobs on the host): needs root and unshare,
# else it says SKIP and passes.
set -u
: "${BUILD_DIR:?}"
job="$BUILD_DIR/tests/sec_job"
[ -x "$job" ] || { echo "FAIL: $job is not built"; exit 1; }
if [ -z "${USH_PRIVATE_TMP:-}" ]; then
  if [ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null; then
    # The new /tmp is empty; a checkout or build folder that lives under the
    # old one (a fresh clone in mktemp -d) is bound back at the same path, so
    # the script, the job and its rpath keep working.
    stash=$(mktemp -d /dev/shm/ushmem-test.XXXXXX) || exit 1
    unshare -m --propagation private env USH_PRIVATE_TMP=1 STASH="$stash" bash -c '
      set -e
      mount --bind /tmp "$STASH"
      mount -t tmpfs -o mode=1777 tmpfs /tmp
      for p in "$0" "$BUILD_DIR"; do
        case $p in /tmp/?*) top=${p#/tmp/}; top=/tmp/${top%%/*}
          [ -e "$top" ] || { mkdir -p "$top"; mount --bind "$STASH/${top#/tmp/}" "$top"; } ;;
        esac
      done
      exec bash "$0"' "$0"
    rc=$?
    rmdir "$stash" 2>/dev/null
    exit $rc
  fi
  echo "SKIP: needs root and unshare -m (a private /tmp to squat /tmp/ushmem-<uid> in)"
  exit 0
fi
uid=$(id -u)
other=$(getent passwd ushstranger | cut -d: -f3)
other=${other:-1001}
sq=/tmp/ushmem-$uid
HOME=$(mktemp -d)
export HOME SHMEM_SYMMETRIC_SIZE=16M
unset XDG_RUNTIME_DIR USHMEM_SECRET USHMEM_TRANSPORTS USHMEM_FAKE_HOSTS
fail=0
ok() { echo "PASS $*"; }
bad() { echo "FAIL $*"; fail=1; }
read -r eph _ </proc/sys/net/ipv4/ip_local_port_range
port=$((10000 + (RANDOM * 7) % (${eph:-32768} - 10100)))

job() { # run a 2-PE torchrun-style job on the next port; stderr in $HOME/err
  local r pids=() rc=0
  port=$((port + 2))
  for r in 0 1; do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port timeout 30 "$job" >/dev/null 2>"$HOME/err.$r" &
    pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r" || rc=1; done
  cat "$HOME"/err.* >"$HOME/err"
  return $rc
}

squat() { # what another user left at /tmp/ushmem-<uid>
  rm -rf "$sq"
  case $1 in
    file) touch "$sq" && chown "$other:$other" "$sq" ;;
    symlink) mkdir -p /tmp/theirs && chown "$other" /tmp/theirs && ln -s /tmp/theirs "$sq" ;;
    dir) mkdir -m 0777 "$sq" && chown "$other:$other" "$sq" ;;
  esac
}

squat none
if job; then ok "no squatter: the job succeeds"; else bad "no squatter: the job failed"; cat "$HOME/err"; fi
[ -e "$sq" ] && bad "$sq is left after the job" || ok "$sq is removed after the job"

for kind in file symlink dir; do
  squat $kind
  if job; then
    ok "$sq squatted ($kind): the job succeeds"
  else
    bad "$sq squatted ($kind): the job failed"; head -3 "$HOME/err"
  fi
  [ -e "$HOME/.ushmem" ] && bad "$HOME/.ushmem is left after the job" \
    || ok "$kind: the fallback directory is removed after the job"
done
squat none

# A SIGKILLed rank 0 leaves its secret file; the next job deletes it.
RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
  MASTER_PORT=$((port + 2)) USHMEM_BOOTSTRAP_TIMEOUT=30 "$job" >/dev/null 2>&1 &
pid=$!
# Wait for the published file, not the temporary one it is renamed from
# (torchrun-<hex>.XXXXXX, kept a minute for a writer that may still run): a
# kill between mkostemp and rename would leave only that.
published() { ls "$sq" 2>/dev/null | grep -qx 'torchrun-[0-9a-f]*'; }
for ((w = 0; w < 200; w++)); do
  published && break
  sleep 0.05
done
kill -KILL $pid; wait $pid 2>/dev/null
port=$((port + 2))
if published; then
  job || bad "the job after a SIGKILLed rank 0 failed"
  if [ -e "$sq" ]; then
    bad "a SIGKILLed rank 0's secret file outlives the next job: $(ls "$sq")"
  else
    ok "the next job deleted a SIGKILLed rank 0's secret file"
  fi
else
  bad "rank 0 wrote no secret file in $sq"
fi

# $XDG_RUNTIME_DIR, when private, is used and kept.
mkdir -m 0700 "$HOME/xdg"
if XDG_RUNTIME_DIR=$HOME/xdg job && [ -d "$HOME/xdg" ] && [ ! -e "$sq" ] &&
  [ -z "$(ls "$HOME/xdg")" ]; then
  ok "XDG_RUNTIME_DIR is used, emptied and kept"
else
  bad "XDG_RUNTIME_DIR leg"; head -3 "$HOME/err"
fi
rm -rf "$HOME"
exit $fail
