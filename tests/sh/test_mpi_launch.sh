#!/bin/bash
# mpirun as a launcher and the MPI module (libushmem_mpi.so), at the process
# level: libushmem does not link MPI; ushmem_info names the MPI library; raw
# shmem_init under mpirun works (shm between the ranks of one host); a missing
# module, ushrun asked for the mpi transport, shmem_global_exit and a killed
# rank all end the job with a clear line and the right status, never a hang.
# (The C suite itself runs again over MPI in tests/mpi.) SKIPs without MPI.
set -u
: "${USHRUN:?}" "${BUILD_DIR:?}" "${SRC_DIR:?}"
mod="$BUILD_DIR/libushmem_mpi.so"
if [ ! -f "$mod" ] || ! command -v mpirun >/dev/null; then
  echo "SKIP: libushmem_mpi.so not built (no MPI found at configure time)"
  exit 0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "PASS $1"; }; bad() { echo "FAIL $1"; shift; printf '%s\n' "$@" | sed 's/^/    /'; fail=1; }
export SHMEM_SYMMETRIC_SIZE=16M
unset USHMEM_TRANSPORTS USHMEM_FAKE_HOSTS USHMEM_MPI_MODULE
MPIRUN=(timeout 60 mpirun --allow-run-as-root --oversubscribe --mca btl self,vader)

# 1. The core library has no MPI dependency; the module does.
if ldd "$BUILD_DIR/libushmem.so" | grep -qi "libmpi"; then bad "libushmem.so links MPI"
else ok "libushmem.so does not link MPI"; fi
ldd "$mod" | grep -q "libmpi" && ok "libushmem_mpi.so links MPI" || bad "module without libmpi"

# 2. ushmem_info names the MPI library, or says why not.
out=$("$BUILD_DIR/tools/ushmem_info")
grep -Eq "^  mpi +usable: .*MPI" <<<"$out" && ok "ushmem_info: mpi usable" || bad "ushmem_info" "$out"
out=$(USHMEM_MPI_MODULE=/nonexistent/libushmem_mpi.so "$BUILD_DIR/tools/ushmem_info")
grep -q "mpi *unusable: USHMEM_MPI_MODULE=/nonexistent/libushmem_mpi.so: no such file" <<<"$out" \
  && ok "ushmem_info: why not" || bad "ushmem_info without the module" "$out"

# 3. Raw shmem_init under mpirun: the ring example, and the routes.
"$BUILD_DIR/tools/ushcc" -O2 "$SRC_DIR/examples/c/ring.c" -o "$tmp/ring" || exit 1
out=$("${MPIRUN[@]}" -n 4 "$tmp/ring" 2>&1); rc=$?
[ $rc = 0 ] && grep -q "sum of PE numbers on PE 0: 6" <<<"$out" && ok "mpirun -n 4 ring" \
  || bad "mpirun -n 4 ring (rc $rc)" "$out"
out=$("${MPIRUN[@]}" -n 3 "$BUILD_DIR/tools/ushmem_info" --peers 2>&1)
grep -q "PE 2 *host memory: shm" <<<"$out" && ok "one host under mpirun: shm routes" || bad "routes" "$out"
out=$(USHMEM_FAKE_HOSTS=3 "${MPIRUN[@]}" -n 3 "$BUILD_DIR/tools/ushmem_info" --peers 2>&1)
grep -q "PE 0 *host memory: shm" <<<"$out" && grep -q "PE 2 *host memory: mpi" <<<"$out" && ok "pretend hosts: mpi routes" \
  || bad "fake-host routes" "$out"

# 4. Launched by mpirun without the module: one clear line, non-zero, fast.
out=$(USHMEM_MPI_MODULE=/nonexistent/libushmem_mpi.so "${MPIRUN[@]}" -n 2 "$tmp/ring" 2>&1); rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && grep -q "MPI module cannot be loaded (USHMEM_MPI_MODULE=" <<<"$out" \
  && ok "missing module: clear error" || bad "missing module (rc $rc)" "$out"

# 5. The mpi transport under ushrun (no MPI job): a clear error on every PE.
out=$(USHMEM_TRANSPORTS=mpi timeout 30 "$USHRUN" -n 2 "$tmp/ring" 2>&1); rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && grep -q "start the job with mpirun" <<<"$out" \
  && ok "ushrun + USHMEM_TRANSPORTS=mpi: clear error" || bad "ushrun + mpi (rc $rc)" "$out"

# 6. shmem_global_exit(7) on one rank ends the job with status 7; a killed
#    rank ends it too (mpirun does), both within seconds.
cat > "$tmp/exit.c" <<'C'
#include <shmem.h>
#include <signal.h>
#include <stdlib.h>
static long flag;
int main(int argc, char **argv)
{
    shmem_init();
    shmem_barrier_all();
    if (shmem_my_pe() == 1) {
        if (argv[1][0] == 'g')
            shmem_global_exit(7);
        raise(SIGKILL);
    }
    shmem_long_wait_until(&flag, SHMEM_CMP_NE, 0); /* never satisfied */
    return 0;
}
C
"$BUILD_DIR/tools/ushcc" "$tmp/exit.c" -o "$tmp/exit" || exit 1
for how in g k; do
  for tr in shm mpi; do
    start=$(date +%s)
    out=$(USHMEM_TRANSPORTS=$tr "${MPIRUN[@]}" -n 3 "$tmp/exit" $how 2>&1); rc=$?
    el=$(( $(date +%s) - start ))
    if [ $how = g ]; then
      [ $rc = 7 ] && grep -q "PE 1 called shmem_global_exit(7)" <<<"$out" && [ $el -le 20 ] \
        && ok "global_exit(7) under mpirun ($tr): status 7 in ${el}s" || bad "global_exit ($tr, rc $rc, ${el}s)" "$out"
    else
      [ $rc != 0 ] && [ $rc != 124 ] && [ $el -le 20 ] \
        && ok "killed rank under mpirun ($tr): job ends in ${el}s" || bad "killed rank ($tr, rc $rc, ${el}s)" "$out"
    fi
  done
done
# 7. A rank killed while its peers have requests in flight through its proxy
#    (4 PEs on two pretend hosts, host memory through the staged proxy): the
#    job ends within 5 s, with a line naming the rank.
cat > "$tmp/inflight.c" <<'C'
#include <shmem.h>
#include <signal.h>
#include <unistd.h>
static long buf[4096], ctr;
int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    shmem_barrier_all();
    if (me == 3) {
        usleep(300000); /* let the others' requests flow */
        raise(SIGKILL);
    }
    for (long i = 0;; i++) { /* never ends: the kill must end the job */
        shmem_long_put_nbi(buf, buf, 4096, 3);
        shmem_long_atomic_fetch_add(&ctr, 1, 3);
        shmem_long_get(buf, buf, 64, 3);
        if (i % 8 == 0)
            shmem_quiet();
    }
    return 0;
}
C
"$BUILD_DIR/tools/ushcc" "$tmp/inflight.c" -o "$tmp/inflight" || exit 1
start=$(date +%s%N)
out=$(USHMEM_FAKE_HOSTS=2 USHMEM_PROXY_HOST=1 "${MPIRUN[@]}" -n 4 "$tmp/inflight" 2>&1); rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ $rc != 0 ] && [ $rc != 124 ] && [ $ms -le 5000 ] && grep -Eqi "rank 3|PE 3" <<<"$out" \
  && ok "rank killed with proxy requests in flight: job ends in ${ms} ms, naming it" \
  || bad "killed rank with requests in flight (rc $rc, ${ms} ms)" "$out"
exit $fail
