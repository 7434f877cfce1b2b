/* Distributed locks: a ticket lock kept in the symmetric long on PE 0.
 * The high 32 bits hand out tickets, the low 32 bits say which ticket is
 * served: FIFO, so every PE gets the lock in bounded time under contention,
 * and the whole state fits the long (which starts at 0: free, ticket 0).
 * All updates are remote atomics on PE 0's copy (ushmemi_amo), so they stay
 * atomic with each other on whatever transport reaches PE 0. */
#include "core/prims.h"

#define DT_LONG    USHMEMI_DT(USHMEMI_KIND_SINT, sizeof(long))
#define TICKET     ((uint64_t)1 << 32)
#define SERVING(v) ((uint32_t)(v))
#define NEXT(v)    ((uint32_t)((v) >> 32))

_Static_assert(sizeof(long) == 8, "the lock state needs a 64-bit long");

static void check_lock(long *lock, const char *call)
{
    USHMEMI_CHECK_INIT(call);
    if (!lock)
        ushmemi_fatal(call, "lock is NULL");
    if ((uintptr_t)lock % sizeof(long))
        ushmemi_fatal(call, "lock %p is not %zu-byte aligned", (void *)lock, sizeof(long));
    if (ushmemi_seg_of(lock, sizeof *lock) < 0)
        ushmemi_fatal(call, "lock %p is not a symmetric object", (void *)lock);
}

/* Which locks this PE holds, for peers that wait in shmem_set_lock while a
 * PE has left (src/sync/wait.c, check_departed): only the holder that left
 * makes their wait hopeless. One key is kept: a PE holding several locks
 * counts as holding each of them. */
static void note_held(long *lock, int taken)
{
    ushmemi_sync_region_t *me = ushmemi_g.sync;
    uint64_t key = ushmemi_sym_key(lock);
    if (taken) {
        atomic_store_explicit(&me->last_lock, key, memory_order_relaxed);
        atomic_fetch_add_explicit(&me->locks_held, 1, memory_order_release);
        return;
    }
    if (atomic_load_explicit(&me->last_lock, memory_order_relaxed) == key)
        atomic_store_explicit(&me->last_lock, 0, memory_order_relaxed);
    if (atomic_load_explicit(&me->locks_held, memory_order_relaxed))
        atomic_fetch_sub_explicit(&me->locks_held, 1, memory_order_release);
}

static uint64_t lock_amo(ushmemi_amo_op_t op, long *lock, uint64_t value, uint64_t cond,
                         const char *call)
{
    return ushmemi_amo(SHMEM_CTX_DEFAULT, op, DT_LONG, lock, value, cond, 0, call);
}

USHMEMI_API void shmem_set_lock(long *lock)
{
    static const char call[] = "shmem_set_lock";
    check_lock(lock, call);
    /* Adding to the high half never carries into the low half; a carry out
     * of bit 63 is dropped, so tickets simply wrap. */
    uint32_t ticket = NEXT(lock_amo(USHMEMI_AMO_ADD, lock, TICKET, 0, call));
    ushmemi_waiter_t w = USHMEMI_WAITER(call, NULL, lock, -1);
    while (SERVING(lock_amo(USHMEMI_AMO_FETCH, lock, 0, 0, call)) != ticket)
        ushmemi_wait_poll(&w);
    ushmemi_wait_done(&w);
    note_held(lock, 1);
}

USHMEMI_API int shmem_test_lock(long *lock)
{
    static const char call[] = "shmem_test_lock";
    check_lock(lock, call);
    uint64_t v = lock_amo(USHMEMI_AMO_FETCH, lock, 0, 0, call);
    if (NEXT(v) != SERVING(v))
        return 1; /* held or queued for */
    /* Take the next ticket only if nobody took it meanwhile. */
    if (lock_amo(USHMEMI_AMO_CSWAP, lock, v + TICKET, v, call) != v)
        return 1;
    note_held(lock, 1);
    return 0;
}

USHMEMI_API void shmem_clear_lock(long *lock)
{
    static const char call[] = "shmem_clear_lock";
    check_lock(lock, call);
    /* Updates made while holding the lock are complete before the next
     * holder can see the lock free. */
    ushmemi_quiet(SHMEM_CTX_DEFAULT);
    /* Only the holder changes the low half, so reading it here is stable.
     * Serving 0xffffffff -> 0 must not carry into the ticket half: adding
     * 2^64 - 2^32 + 1 wraps the low half and cancels the carry. */
    uint64_t v = lock_amo(USHMEMI_AMO_FETCH, lock, 0, 0, call);
    uint64_t inc = SERVING(v) == UINT32_MAX ? (uint64_t)0 - TICKET + 1 : 1;
    note_held(lock, 0);
    lock_amo(USHMEMI_AMO_ADD, lock, inc, 0, call);
}

/* pshmem_ profiling names */
USHMEMI_PSHMEM(shmem_set_lock)
USHMEMI_PSHMEM(shmem_test_lock)
USHMEMI_PSHMEM(shmem_clear_lock)
