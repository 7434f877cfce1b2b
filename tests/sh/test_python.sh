#!/bin/bash
# The Python binding's contract at the process level (the pytest suite itself
# runs under `make check-python`): the extension exports nothing but its init
# function; errors raise instead of aborting (no init, mpirun without MPI
# bootstrap, an unreachable unique id); a failing PE stops the job instead of
# hanging it; exiting without finalize is clean; the overhead benchmark runs; the
# ring example runs on 2 PEs.
set -u
: "${USHRUN:?}" "${BUILD_DIR:?}" "${SRC_DIR:?}"
py=/usr/bin/python3
ext=$(ls "$BUILD_DIR"/python/ushmem/_ushmem*.so 2>/dev/null | head -1)
if [ -z "$ext" ] || ! "$py" -c "import numpy" 2>/dev/null; then
  echo "SKIP: the Python extension is not built (python3-dev, python3-numpy missing)"
  exit 0
fi
export PYTHONPATH="$SRC_DIR/python" USHMEM_PYTHON_EXT_DIR="$BUILD_DIR/python/ushmem"
export SHMEM_SYMMETRIC_SIZE=32M OMP_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1
unset USHMEM_RANK USHMEM_NPES RANK WORLD_SIZE MASTER_ADDR OMPI_COMM_WORLD_RANK
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
pass() { echo "PASS $1"; }
bad() { echo "FAIL $1"; shift; printf '%s\n' "$@" | sed 's/^/    /'; fail=1; }

# 1. Only PyInit__ushmem is exported (the embedded libushmem stays private).
syms=$(nm -D --defined-only "$ext" | awk '$2 ~ /[TDBRW]/ {print $3}' | grep -v '^_\(init\|fini\|edata\|end\|_bss_start\)$')
[ "$syms" = "PyInit__ushmem" ] && pass "exports only PyInit__ushmem" || bad "exports" "$syms"

# 2. Not initialized: calls raise ushmem.Error(ERR_STATE), the interpreter lives.
out=$(timeout 30 "$py" - 2>&1 <<'PY'
import ushmem
for call in (ushmem.my_pe, ushmem.barrier_all, lambda: ushmem.create_buffer(8),
             lambda: ushmem.putmem(0, b"x", 1, 0), ushmem.finalize):
    try:
        call()
        print("no error")
    except ushmem.Error as e:
        assert e.code == ushmem.ERR_STATE, e
print("alive")
PY
)
[ "$out" = "alive" ] && pass "not initialized raises" || bad "not initialized raises" "$out"

# 3. Launched by mpirun but raw init(): a clear Error, not exit(1).
out=$(OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 USHMEM_MPI_MODULE=/nonexistent/libushmem_mpi.so \
  timeout 30 "$py" -c "
import ushmem
try:
    ushmem.init()
except ushmem.Error as e:
    print('raised', e.code == ushmem.ERR_BOOTSTRAP, 'init_with_mpi' in str(e))
print('alive')" 2>&1)
grep -q "raised True True" <<<"$out" && grep -q alive <<<"$out" && pass "raw init under mpirun raises" \
  || bad "raw init under mpirun raises" "$out"

# 4. A unique id nobody serves: init_attr raises within the bootstrap timeout.
out=$(USHMEM_BOOTSTRAP_TIMEOUT=3 timeout 30 "$py" -c "
import ushmem, multiprocessing as mp
uid = ushmem.get_uniqueid()          # rank 0 of a 2-rank job that never starts
try:
    ushmem.init_attr(1, 2, uid[:8] + bytes(8) + uid[16:])   # wrong port/secret
except ushmem.Error as e:
    print('raised', e.code)
try:
    ushmem.init_attr(0, 1, b'x' * 128)
except ushmem.Error as e:
    print('raised', e.code)
print('alive')" 2>&1)
[ "$(grep -c '^raised' <<<"$out")" = 2 ] && grep -q alive <<<"$out" && pass "bad unique id raises" \
  || bad "bad unique id raises" "$out"

# 5. An exception on one PE stops the whole job quickly (no hang in a barrier).
cat >"$tmp/die.py" <<'PY'
import ushmem
ushmem.init()
if ushmem.my_pe() == 1:
    raise SystemExit("PE 1 gives up")
ushmem.barrier_all()   # PE 0 would wait forever for PE 1
PY
start=$SECONDS
out=$(timeout 60 "$USHRUN" -n 2 --timeout 50 "$py" "$tmp/die.py" 2>&1); rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $((SECONDS - start)) -lt 30 ]; then pass "failing PE stops the job"
else bad "failing PE stops the job (rc $rc, $((SECONDS - start)) s)" "$out"; fi

# 5b. global_exit(3) on one PE ends every PE with status 3.
cat >"$tmp/gexit.py" <<'PY'
import ushmem
ushmem.init()
if ushmem.my_pe() == 0:
    ushmem.global_exit(3)
ushmem.barrier_all()
PY
out=$(timeout 60 "$USHRUN" -n 2 --timeout 50 "$py" "$tmp/gexit.py" 2>&1); rc=$?
[ $rc -eq 3 ] && pass "global_exit(3)" || bad "global_exit(3) (rc $rc)" "$out"

# 6. Exit without finalize, buffers alive: clean (implicit finalize), status 0.
cat >"$tmp/noexit.py" <<'PY'
import ushmem
ushmem.init()
keep = ushmem.create_buffer(64)
ushmem.putmem(keep, b"bye", 3, (ushmem.my_pe() + 1) % ushmem.n_pes())
ushmem.barrier_all()
PY
out=$(timeout 60 "$USHRUN" -n 2 --timeout 50 "$py" "$tmp/noexit.py" 2>&1) && pass "exit without finalize" \
  || bad "exit without finalize (rc $?)" "$out"

# 6b. A subprocess of a PE (it inherits ushrun's variables) that calls init(): an
#     ushmem.Error at once that says why, its PE goes on; with USHMEM_BOOTSTRAP=single it
#     runs as one PE.
cat >"$tmp/child.py" <<'PY'
import os, subprocess, sys, time, ushmem
ushmem.init()
code = ("import ushmem\n"
        "try:\n    ushmem.init()\n    print('joined', ushmem.my_pe(), ushmem.n_pes())\n"
        "except ushmem.Error as e:\n    print('refused:', e)\n")
t0 = time.time()
r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
dt = time.time() - t0
env = dict(os.environ, USHMEM_BOOTSTRAP="single")
s = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
ushmem.barrier_all()
# one write: print() makes two (text, newline) where output is unbuffered, and the
# other PE's line could land between them
sys.stdout.write(f"PE {ushmem.my_pe()}: {dt:.1f} s; {r.stdout.strip()} | single: "
                 f"{s.stdout.strip()}\n")
sys.stdout.flush()
ushmem.finalize()
PY
out=$(timeout 90 "$USHRUN" -n 2 --timeout 80 "$py" "$tmp/child.py" 2>&1)
if [ "$(grep -Ec "^PE [01]: [0-9.]+ s; refused: .*was started by a PE of its job .* \| single: joined 0 1$" <<<"$out")" = 2 ] &&
   ! grep -Eq "^PE [01]: ([2-9][0-9]|[0-9]{3,})\.[0-9] s" <<<"$out"; then # (the old way: 60 s)
  pass "a PE's subprocess: refused at once with ushmem.Error, single-PE with USHMEM_BOOTSTRAP=single"
else
  bad "a PE's subprocess calling init()" "$out"
fi

# 7. The per-call overhead benchmark runs and prints its table (numbers, not a timed
#    assertion: make check's python leg prints them).
out=$(timeout 60 "$USHRUN" -n 1 --timeout 50 "$py" "$SRC_DIR/python/bench/bench_overhead.py" \
        -n 20000 -r 5 2>&1) && grep -q "my_pe()" <<<"$out" &&
  pass "overhead benchmark: $(grep 'my_pe()' <<<"$out" | xargs)" || bad "overhead benchmark" "$out"

# 8. The torch ring example on 2 PEs.
if "$py" -c "import torch" 2>/dev/null; then
  out=$(timeout 90 "$USHRUN" -n 2 --timeout 80 "$py" "$SRC_DIR/examples/python/ring_torch.py" 2>&1) \
    && pass "ring_torch.py on 2 PEs" || bad "ring_torch.py on 2 PEs" "$out"
else
  echo "SKIP ring_torch.py (no torch)"
fi
exit $fail
