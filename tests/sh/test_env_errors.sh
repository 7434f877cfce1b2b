#!/bin/bash
# Wrong environment gets a one-line error and a non-zero exit, never a hang.
set -u
: "${USHRUN:?}" "${BUILD_DIR:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
printf '#include <shmem.h>\nint main(void){shmem_init();shmem_finalize();return 0;}\n' > "$tmp/p.c"
"$BUILD_DIR/tools/ushcc" "$tmp/p.c" -o "$tmp/p" || exit 1
expect() { # name, pattern, env...
  local name=$1 pat=$2; shift 2
  out=$(env "$@" timeout 30 "$USHRUN" -n 2 "$tmp/p" 2>&1); rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q -- "$pat" <<<"$out"; then echo "PASS $name"
  else echo "FAIL $name (rc $rc): $out"; fail=1; fi
}
expect "bad heap size" "SHMEM_SYMMETRIC_SIZE='12Q'" SHMEM_SYMMETRIC_SIZE=12Q
expect "unknown transport" "unknown transport 'carrier-pigeon'" USHMEM_TRANSPORTS=carrier-pigeon
expect "bad bool" "SHMEM_DEBUG='maybe'" SHMEM_DEBUG=maybe
expect "unknown bootstrap" "USHMEM_BOOTSTRAP" USHMEM_BOOTSTRAP=smoke-signals
# heap too large to map on this machine
expect "impossible heap" "heap" SHMEM_SYMMETRIC_SIZE=64T
# a singleton run with no launcher at all works
if SHMEM_SYMMETRIC_SIZE=16M timeout 20 "$tmp/p"; then echo "PASS singleton"; else echo "FAIL singleton"; fail=1; fi
# mismatched heap sizes across PEs: clear error
cat > "$tmp/wrap.sh" <<SH
#!/bin/sh
[ "\$USHMEM_RANK" = 1 ] && export SHMEM_SYMMETRIC_SIZE=32M
exec "$tmp/p"
SH
chmod +x "$tmp/wrap.sh"
out=$(SHMEM_SYMMETRIC_SIZE=16M timeout 30 "$USHRUN" -n 2 "$tmp/wrap.sh" 2>&1); rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "same SHMEM_SYMMETRIC_SIZE" <<<"$out"; then echo "PASS mismatched heaps"
else echo "FAIL mismatched heaps (rc $rc): $out"; fail=1; fi
# SHMEM_DEBUG: PEs asking for different allocation sizes get a clear error
printf '#include <shmem.h>\nint main(void){shmem_init();void *p=shmem_malloc(shmem_my_pe()==1?200:100);shmem_free(p);shmem_finalize();return 0;}\n' > "$tmp/m.c"
"$BUILD_DIR/tools/ushcc" "$tmp/m.c" -o "$tmp/m" || exit 1
out=$(SHMEM_DEBUG=1 SHMEM_SYMMETRIC_SIZE=16M timeout 30 "$USHRUN" -n 2 "$tmp/m" 2>&1); rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "shmem_malloc: PE . asked for .* bytes.*must be the same on every PE" <<<"$out"; then echo "PASS debug: mismatched malloc sizes"
else echo "FAIL debug: mismatched malloc sizes (rc $rc): $out"; fail=1; fi
# SHMEM_DEBUG: a PE in a barrier while another allocates is named as not
# allocating, not by the size of its previous (matching) request
printf '#include <shmem.h>\nint main(void){shmem_init();void *a=shmem_malloc(512);if(shmem_my_pe()==0){void *b=shmem_malloc(512);shmem_free(b);}else shmem_barrier_all();shmem_free(a);shmem_finalize();return 0;}\n' > "$tmp/n.c"
"$BUILD_DIR/tools/ushcc" "$tmp/n.c" -o "$tmp/n" || exit 1
out=$(SHMEM_DEBUG=1 SHMEM_SYMMETRIC_SIZE=16M timeout 30 "$USHRUN" -n 2 "$tmp/n" 2>&1); rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "shmem_malloc: PE 1 is not in a symmetric allocation" <<<"$out" &&
   ! grep -q "asked for" <<<"$out"; then echo "PASS debug: PE not allocating"
else echo "FAIL debug: PE not allocating (rc $rc): $out"; fail=1; fi
exit $fail
