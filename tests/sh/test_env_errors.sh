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
# Local blocks (shmemx_malloc_local): the local part's size must be the same on
# every PE and leave room for collective allocations; without one, a call says
# which variable to set; shmem_free refuses a local block
cat > "$tmp/wrapl.sh" <<SH
#!/bin/sh
[ "\$USHMEM_RANK" = 1 ] && export USHMEM_LOCAL_HEAP_SIZE=4M
exec "$tmp/p"
SH
chmod +x "$tmp/wrapl.sh"
out=$(USHMEM_LOCAL_HEAP_SIZE=2M SHMEM_SYMMETRIC_SIZE=16M timeout 30 "$USHRUN" -n 2 "$tmp/wrapl.sh" 2>&1); rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "shmem_init: PE 1 has USHMEM_LOCAL_HEAP_SIZE=4194304, this PE 2097152: set the same value on every PE" <<<"$out"; then echo "PASS local part sizes differ"
else echo "FAIL local part sizes differ (rc $rc): $out"; fail=1; fi
expect "local part too large" "USHMEM_LOCAL_HEAP_SIZE=16777216 leaves nothing of the .* host heap for collective allocations" USHMEM_LOCAL_HEAP_SIZE=16M SHMEM_SYMMETRIC_SIZE=16M
printf '#include <stdio.h>\n#include <shmem.h>\n#include <shmemx.h>\nint main(void){shmem_init();void *p=shmemx_malloc_local(64,0,0);printf("local %%s\\n",p?"yes":"no");if(p){shmem_free(p);printf("free status %%d\\n",shmemx_free_local(p));}shmem_finalize();return 0;}\n' > "$tmp/l.c"
"$BUILD_DIR/tools/ushcc" "$tmp/l.c" -o "$tmp/l" || exit 1
out=$(SHMEM_SYMMETRIC_SIZE=16M timeout 30 "$USHRUN" -n 2 "$tmp/l" 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c "^local no$" <<<"$out")" -eq 2 ] &&
   grep -q "^ushmem: PE 1: shmemx_malloc_local: the host heap has no local part: set USHMEM_LOCAL_HEAP_SIZE" <<<"$out"; then echo "PASS no local part"
else echo "FAIL no local part (rc $rc): $out"; fail=1; fi
out=$(USHMEM_LOCAL_HEAP_SIZE=2M SHMEM_SYMMETRIC_SIZE=16M timeout 30 "$USHRUN" -n 2 "$tmp/l" 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c "^free status 0$" <<<"$out")" -eq 2 ] &&
   grep -q "^ushmem: PE 0: shmem_free: 0x[0-9a-f]* is a local block: free it with shmemx_free_local$" <<<"$out"; then echo "PASS shmem_free of a local block"
else echo "FAIL shmem_free of a local block (rc $rc): $out"; fail=1; fi
exit $fail
