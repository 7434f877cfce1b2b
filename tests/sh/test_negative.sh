#!/bin/bash
# Bad input gets one clear line naming the PE and the call, a non-zero exit and
# no hang (each case runs under ushrun --timeout 20 -n 2); the recoverable ones
# (shmem_free of a stack pointer, double free) are reported and the program
# goes on with a working heap.
set -u
: "${USHRUN:?}" "${BUILD_DIR:?}" "${SRC_DIR:?}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
export SHMEM_SYMMETRIC_SIZE=16M

cat > "$tmp/neg.c" <<'C'
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int global_ints[64];
static long *volatile null_long; /* NULL, hidden from the compiler */

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    int stack_int = 0;
    if (!strcmp(c, "before_init")) {
        shmem_int_put(&stack_int, &stack_int, 1, 0);
        printf("continued after bad call\n");
        return 0;
    }
    shmem_init();
    int me = shmem_my_pe(), np = shmem_n_pes();
    int *sym = shmem_calloc(1024, sizeof(int));
    long *heap_long = malloc(16 * sizeof(long));
    int src[16] = {0};
    shmem_barrier_all();
    if (me == 1) {
        if (!strcmp(c, "put_pe_npes"))
            shmem_int_put(sym, src, 1, np);
        else if (!strcmp(c, "put_pe_neg"))
            shmem_int_put(sym, src, 1, -1);
        else if (!strcmp(c, "p_pe_npes"))
            shmem_long_p((long *)sym, 1, np);
        else if (!strcmp(c, "put_stack"))
            shmem_int_put(&stack_int, src, 1, 0);
        else if (!strcmp(c, "put_malloc"))
            shmem_long_put(heap_long, heap_long, 4, 0);
        else if (!strcmp(c, "get_stack"))
            shmem_int_get(src, &stack_int, 1, 0);
        else if (!strcmp(c, "get_malloc"))
            shmem_getmem(src, heap_long, 8, 0);
        else if (!strcmp(c, "putmem_past_heap")) {
            size_t n = 32u << 20; /* the heap is 16M */
            char *big = calloc(1, n);
            shmem_putmem(sym, big, n, 0);
        } else if (!strcmp(c, "putmem_past_data"))
            shmem_putmem(global_ints, sym, 64u << 20, 0);
        else if (!strcmp(c, "amo_misaligned"))
            shmem_int_atomic_add((int *)((char *)sym + 1), 1, 0);
        else if (!strcmp(c, "amo_misaligned_fetch"))
            (void)shmem_long_atomic_fetch((long *)((char *)sym + 4), 0);
        else if (!strcmp(c, "wait_bad_cmp"))
            shmem_int_wait_until(sym, 42, 0);
        else if (!strcmp(c, "test_bad_cmp"))
            (void)shmem_long_test_any((long *)sym, 4, NULL, -1, 0);
        else if (!strcmp(c, "signal_wait_bad_cmp"))
            (void)shmem_signal_wait_until((uint64_t *)sym, 6, 0);
        else if (!strcmp(c, "put_signal_bad_op"))
            shmem_putmem_signal(sym, src, 4, (uint64_t *)(sym + 512), 1, 7, 0);
        else if (!strcmp(c, "lock_null"))
            shmem_set_lock(null_long);
        else if (!strcmp(c, "signal_fetch_null"))
            (void)shmem_signal_fetch((const uint64_t *)null_long);
        else if (!strcmp(c, "wait_unreadable") || !strcmp(c, "signal_wait_unreadable")) {
            /* what a device pointer is to a PE with no device bound */
            uint64_t *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (c[0] == 'w')
                shmem_uint64_wait_until(none, SHMEM_CMP_EQ, 1);
            else
                (void)shmem_signal_wait_until(none, SHMEM_CMP_EQ, 1);
        }
        else
            goto collective;
        printf("PE %d continued after bad call\n", me);
        fflush(stdout);
    }
collective:
    if (!strcmp(c, "malloc_huge") || !strcmp(c, "align_bad") || !strcmp(c, "align_huge") ||
        !strcmp(c, "calloc_overflow") || !strcmp(c, "realloc_huge")) {
        /* every PE makes the call (collective): NULL and a line, then the heap works */
        void *q = NULL;
        if (!strcmp(c, "malloc_huge"))
            q = shmem_malloc((size_t)1 << 40);
        else if (!strcmp(c, "align_bad"))
            q = shmem_align(3, 64);
        else if (!strcmp(c, "align_huge"))
            q = shmem_align((size_t)1 << 31, 64);
        else if (!strcmp(c, "calloc_overflow"))
            q = shmem_calloc(SIZE_MAX / 2, 4);
        int *keep = shmem_malloc(64 * sizeof(int));
        for (int i = 0; i < 64; i++)
            keep[i] = me * 1000 + i;
        if (!strcmp(c, "realloc_huge")) /* a failed realloc leaves the block as it was */
            q = shmem_realloc(keep, (size_t)1 << 40);
        if (q || !keep) {
            printf("PE %d: the bad allocation returned %p\n", me, q);
            return 1;
        }
        printf("PE %d continued\n", me);
        shmem_barrier_all();
        int got[64];
        shmem_int_get(got, keep, 64, (me + 1) % np);
        for (int i = 0; i < 64; i++)
            if (got[i] != ((me + 1) % np) * 1000 + i) {
                printf("PE %d: heap broken after the failed allocation (got[%d] = %d)\n", me, i,
                       got[i]);
                return 1;
            }
        shmem_barrier_all();
        shmem_free(keep);
        printf("PE %d heap ok\n", me);
    } else if (!strcmp(c, "free_stack")) {
        shmem_free(&stack_int);
        printf("PE %d continued\n", me);
    } else if (!strcmp(c, "double_free")) {
        int *p = shmem_malloc(4096);
        shmem_free(p);
        shmem_free(p);
        printf("PE %d continued\n", me);
        /* the heap still works: allocate, move data between PEs, free */
        for (int round = 0; round < 3; round++) {
            int *q = shmem_malloc(1000 * sizeof(int));
            if (!q) {
                printf("PE %d: shmem_malloc failed after double free\n", me);
                return 1;
            }
            for (int i = 0; i < 1000; i++)
                src[i % 16] = i;
            int vals[1000];
            for (int i = 0; i < 1000; i++)
                vals[i] = me * 100000 + round * 1000 + i;
            shmem_int_put(q, vals, 1000, (me + 1) % np);
            shmem_barrier_all();
            int from = (me + np - 1) % np;
            for (int i = 0; i < 1000; i++)
                if (q[i] != from * 100000 + round * 1000 + i) {
                    printf("PE %d: heap broken after double free (q[%d] = %d)\n", me, i, q[i]);
                    return 1;
                }
            shmem_free(q);
        }
        printf("PE %d heap ok\n", me);
    }
    shmem_barrier_all();
    shmem_free(sym);
    free(heap_long);
    shmem_finalize();
    return 0;
}
C
"$BUILD_DIR/tools/ushcc" -O1 -Wall "$tmp/neg.c" -o "$tmp/neg" || { echo "FAIL compile"; exit 1; }

run() { # case -> $out, $rc, $ms
  local t0=$(date +%s%N)
  out=$("$USHRUN" --timeout 20 -n 2 "$tmp/neg" "$1" 2>&1); rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
}

# case, grep -E pattern the error line must match
fatal() {
  local name=$1 pat=$2
  run "$name"
  local why=""
  [ $rc -ne 0 ] || why="exit status 0"
  [ $rc -ne 124 ] || why="hung (ushrun timeout)"
  [ "$ms" -lt 15000 ] || why="took ${ms} ms"
  grep -Eq -- "$pat" <<<"$out" || why="${why:+$why; }no line matching '$pat'"
  ! grep -q "continued after bad call" <<<"$out" || why="${why:+$why; }the bad call returned"
  if [ -z "$why" ]; then echo "PASS $name: $(grep -E -m1 -- "$pat" <<<"$out")"
  else echo "FAIL $name ($why; rc $rc): $out"; fail=1; fi
}

# case, pattern of the report; the program must finish normally
reported() {
  local name=$1 pat=$2; shift 2
  run "$name"
  local why=""
  [ $rc -eq 0 ] || why="exit status $rc"
  for pe in 0 1; do
    grep -Eq -- "PE $pe: ${pat}" <<<"$out" || why="${why:+$why; }PE $pe: no line matching '$pat'"
    grep -q "PE $pe continued" <<<"$out" || why="${why:+$why; }PE $pe did not continue"
    for extra in "$@"; do
      grep -q "PE $pe $extra" <<<"$out" || why="${why:+$why; }PE $pe: no '$extra'"
    done
  done
  if [ -z "$why" ]; then echo "PASS $name: $(grep -E -m1 -- "$pat" <<<"$out")"
  else echo "FAIL $name ($why): $out"; fail=1; fi
}

addr='0x[0-9a-f]+'
fatal put_pe_npes          "^ushmem: PE 1: shmem_int_put: PE 2 out of range"
fatal put_pe_neg           "^ushmem: PE 1: shmem_int_put: PE -1 out of range"
fatal p_pe_npes            "^ushmem: PE 1: shmem_long_p: PE 2 out of range"
fatal put_stack            "^ushmem: PE 1: shmem_int_put: $addr is not a symmetric address"
fatal put_malloc           "^ushmem: PE 1: shmem_long_put: $addr is not a symmetric address"
fatal get_stack            "^ushmem: PE 1: shmem_int_get: $addr is not a symmetric address"
fatal get_malloc           "^ushmem: PE 1: shmem_getmem: $addr is not a symmetric address"
fatal putmem_past_heap     "^ushmem: PE 1: shmem_putmem: 33554432 bytes at $addr run past the end of the symmetric heap"
fatal putmem_past_data     "^ushmem: PE 1: shmem_putmem: 67108864 bytes at $addr run past the end of the symmetric data segment"
fatal amo_misaligned       "^ushmem: PE 1: shmem_int_atomic_add: dest $addr is not aligned to 4 bytes"
fatal amo_misaligned_fetch "^ushmem: PE 1: shmem_long_atomic_fetch: dest $addr is not aligned to 8 bytes"
fatal wait_bad_cmp         "^ushmem: PE 1: shmem_int_wait_until: unknown comparison operator 42"
fatal test_bad_cmp         "^ushmem: PE 1: shmem_long_test_any: unknown comparison operator -1"
fatal signal_wait_bad_cmp  "^ushmem: PE 1: shmem_signal_wait_until: unknown comparison operator 6"
fatal put_signal_bad_op    "^ushmem: PE 1: shmem_putmem_signal: unknown signal operator 7"
# NULL is named as such (not "(nil)" or "0x(nil)", what printf's %p makes of it)
fatal lock_null            "^ushmem: PE 1: shmem_set_lock: lock is NULL$"
fatal signal_fetch_null    "^ushmem: PE 1: shmem_signal_fetch: sig_addr is NULL$"
# an address the PE cannot read (a device pointer with no device bound): a line, not SIGSEGV
fatal wait_unreadable      "^ushmem: PE 1: shmem_uint64_wait_until: ivar $addr is not memory this process can read"
fatal signal_wait_unreadable "^ushmem: PE 1: shmem_signal_wait_until: sig_addr $addr is not memory this process can read"
# Before shmem_init the library has no PE number of its own, but the launcher's
# environment says which PE this is; the line must still name it.
fatal before_init          "^ushmem: PE [01]: shmem_int_put: .*not initialized"
reported free_stack        "shmem_free: $addr is not on the symmetric heap"
reported double_free       "shmem_free: $addr is not a live symmetric allocation" "heap ok"
# failed symmetric allocations: NULL on every PE, one line each, the heap goes on working
reported malloc_huge       "shmem_malloc: symmetric heap exhausted: 1099511627776 bytes requested, largest free block [0-9]+ of [0-9]+ free \(raise SHMEM_SYMMETRIC_SIZE\)" "heap ok"
reported align_bad         "shmem_align: alignment 3 must be a power of two no larger than 1073741824" "heap ok"
reported align_huge        "shmem_align: alignment 2147483648 must be a power of two no larger than 1073741824" "heap ok"
reported calloc_overflow   "shmem_calloc: count [0-9]+ x size 4 overflows" "heap ok"
reported realloc_huge      "shmem_realloc: cannot resize $addr to 1099511627776 bytes: the symmetric heap is exhausted \(raise SHMEM_SYMMETRIC_SIZE\)" "heap ok"
exit $fail
