#!/bin/bash
# A program that a PE starts inherits its launcher's variables; its shmem_init
# must not try to join the job again (it used to wait 60 s for the bootstrap,
# then fail with "PE 1 never joined"). It fails at once with a line that says
# why, and runs as a program of its own with USHMEM_BOOTSTRAP=single. A program
# behind a wrapper shell (no exec) still joins. Under ushrun at 2 and 3 PEs,
# every PE starting a child, and under torchrun where torch is installed.
set -u
: "${USHRUN:?}" "${BUILD_DIR:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
export SHMEM_SYMMETRIC_SIZE=16M
unset USHMEM_RANK USHMEM_NPES RANK WORLD_SIZE MASTER_ADDR USHMEM_BOOTSTRAP

cat > "$tmp/pe_child.c" <<'C'
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* argv[1] "child": join (or fail to) and say so. Otherwise every PE starts
 * itself as a child twice: as is (must fail fast) and with
 * USHMEM_BOOTSTRAP=single (must run as PE 0 of 1). */
int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "child")) {
        shmem_init();
        printf("child: PE %d of %d\n", shmem_my_pe(), shmem_n_pes());
        shmem_finalize();
        return 0;
    }
    shmem_init();
    int me = shmem_my_pe(), bad = 0;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' child > child.%d.out", argv[0], me);
    double t0 = now();
    int st = system(cmd);
    double dt = now() - t0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) == 0 || dt > 20) { /* the old way: 60 s */
        printf("PE %d: the inheriting child exited with status %d after %.1f s\n", me, st, dt);
        bad = 1;
    }
    snprintf(cmd, sizeof cmd, "USHMEM_BOOTSTRAP=single '%s' child", argv[0]);
    st = system(cmd);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("PE %d: the single child exited with status %d\n", me, st);
        bad = 1;
    }
    shmem_barrier_all();
    printf("PE %d %s\n", me, bad ? "FAILED" : "ok");
    shmem_finalize();
    return bad;
}
C
"$BUILD_DIR/tools/ushcc" "$tmp/pe_child.c" -o "$tmp/pe_child" || { echo "FAIL compile"; exit 1; }
cd "$tmp" || exit 1
why='shmem_init: bootstrap: this process \(pid [0-9]+\) was started by a PE of its job \(pid [0-9]+\), which has joined it already'

# check NAME NPES OUTPUT RC: every PE ok, one refusal line per PE, one single-PE run per PE
check() {
  local name=$1 np=$2 out=$3 rc=$4
  if [ "$rc" -ne 0 ] || [ "$(grep -c ' ok$' <<<"$out")" != "$np" ] ||
     [ "$(grep -Ec "$why" <<<"$out")" != "$np" ] ||
     [ "$(grep -c '^[^ ]*child: PE 0 of 1$' <<<"$out")" != "$np" ] ||
     grep -q 'child: PE [0-9]* of [2-9]' <<<"$out"; then
    echo "FAIL $name: status $rc"; sed 's/^/    /' <<<"$out"; fail=1
  else
    echo "ok   $name: $(grep -Em1 "$why" <<<"$out" | sed 's/^.*bootstrap: //' | cut -c1-90)..."
  fi
}

for np in 2 3; do
  rm -f child.*.out
  out=$(timeout 60 "$USHRUN" --timeout 40 -n $np ./pe_child 2>&1); rc=$?
  check "ushrun -n $np" $np "$out" $rc
done

# a wrapper shell that does not exec the program: the program still joins
out=$(timeout 60 "$USHRUN" --timeout 40 -n 2 sh -c './pe_child child; true' 2>&1); rc=$?
if [ $rc -ne 0 ] || [ "$(grep -c '^child: PE [01] of 2$' <<<"$out")" != 2 ]; then
  echo "FAIL behind a wrapper shell: status $rc"; sed 's/^/    /' <<<"$out"; fail=1
else
  echo "ok   behind a wrapper shell: both PEs joined"
fi

if /usr/bin/python3 -c "import torch.distributed.run" 2>/dev/null; then
  port=$(/usr/bin/python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  mkdir -p logs
  # torch 1.13 on Python 3.11 needs explicit --redirects/--tee (see python/launch_test.sh)
  out=$(timeout 90 /usr/bin/python3 -m torch.distributed.run --nnodes=1 --nproc_per_node=2 \
          --rdzv_backend=c10d --rdzv_endpoint="127.0.0.1:$port" --rdzv_id="pe-child-$$" \
          --redirects 1 --tee 1 --log_dir logs --no_python ./pe_child 2>&1); rc=$?
  out=$(sed -E 's/^\[[a-z]+[0-9]+\]://' <<<"$out")
  check "torchrun, 2 ranks" 2 "$out" $rc
else
  echo "skip torchrun: torch.distributed.run not importable by /usr/bin/python3"
fi
exit $fail
