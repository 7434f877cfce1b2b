/* Small collectives with one synchronization: every member writes its
 * contribution (data, then a release store of the collective's sequence
 * number) straight into a cell of each reader's slot, and each reader waits
 * only on the flags of the cells it needs, then copies or combines from its
 * own memory. Nobody reads or writes another PE's user buffers, so nothing
 * needs a final team sync: a member returns as soon as its own part is done.
 *
 * Reuse of cells: a slot holds two areas, picked by the parity of the
 * sequence number, so collective s+1 never writes cells that a slow reader
 * may still be reading for s. Before writing collective s's cell on member r,
 * the writer checks that r has finished reading s-2 (r's push_done), unless
 * it already knows that every member has (team->push_safe: raised when this
 * PE heard from every member, whose contribution to s proves it finished
 * s-1, and by every team sync). In the all-to-all patterns the check is
 * therefore free; a broadcast root running ahead of its readers waits there.
 *
 * Applies when every member is mapped here (else the transport paths of
 * coll.c/reduce.c), the team has 2..USHMEMI_PUSH_MAX_PES members and the
 * data fits a cell (an area split evenly among the members): all of this is the same on every
 * member, so all of them take the same path and count the same sequence numbers. */
#include "coll/coll.h"

#define CELL_HDR 16 /* sequence number, padding: data stays 16-byte aligned */

typedef struct {
    _Atomic uint64_t seq;
    uint64_t pad;
} cell_t;

_Static_assert(sizeof(cell_t) == CELL_HDR, "cell header");

static int all_mapped(shmem_team_t team)
{
    for (int i = 0; i < team->size; i++)
        if (!ushmemi_coll_region(ushmemi_team_world_pe(team, i)))
            return 0;
    return 1;
}

int ushmemi_push_begin(shmem_team_t team, size_t nbytes, ushmemi_push_t *p)
{
    int n = team->size;
    /* One cell per member at fixed places: a cell's flag word never holds
     * data of another collective, whatever the sizes were. */
    size_t stride = USHMEMI_PUSH_AREA / (size_t)n & ~(size_t)(USHMEMI_CACHELINE - 1);
    if (n < 2 || n > USHMEMI_PUSH_MAX_PES || nbytes == 0 || nbytes > stride - CELL_HDR)
        return 0;
    if (USHMEMI_UNLIKELY(team->push_mapped == 0))
        team->push_mapped = all_mapped(team) ? 1 : -1;
    if (team->push_mapped < 0)
        return 0;
    p->seq = ++team->push_seq;
    p->stride = stride;
    p->off = offsetof(ushmemi_team_slot_t, push_area) + (size_t)(p->seq & 1) * USHMEMI_PUSH_AREA;
    return 1;
}

static inline cell_t *cell_at(ushmemi_team_slot_t *slot, const ushmemi_push_t *p, int cell)
{
    return (cell_t *)((char *)slot + p->off + (size_t)cell * p->stride);
}

void ushmemi_push_send(shmem_team_t team, const ushmemi_push_t *p, int to, int cell,
                       const void *data, size_t nbytes, const char *call)
{
    ushmemi_team_slot_t *slot =
        &ushmemi_coll_region(ushmemi_team_world_pe(team, to))->slot[team->slot];
    if (team->push_safe + 2 < p->seq) {
        /* r may still be reading this area for collective seq - 2 */
        ushmemi_waiter_t w = {0, call};
        while (atomic_load_explicit(&slot->push_done, memory_order_acquire) + 2 < p->seq)
            ushmemi_wait_poll(&w);
    }
    cell_t *c = cell_at(slot, p, cell);
    /* Cells are small, so memcpy uses ordinary stores, which x86 keeps in
     * order with the release store below (no fence for streaming stores). */
    memcpy(c + 1, data, nbytes);
    atomic_store_explicit(&c->seq, p->seq, memory_order_release);
}

const void *ushmemi_push_recv(shmem_team_t team, const ushmemi_push_t *p, int cell,
                              const char *call)
{
    cell_t *c = cell_at(ushmemi_team_my_slot(team), p, cell);
    ushmemi_waiter_t w = {0, call};
    while (atomic_load_explicit(&c->seq, memory_order_acquire) < p->seq)
        ushmemi_wait_poll(&w);
    return c + 1;
}

void ushmemi_push_end(shmem_team_t team, const ushmemi_push_t *p, int heard_all)
{
    atomic_store_explicit(&ushmemi_team_my_slot(team)->push_done, p->seq, memory_order_release);
    /* Every member wrote its part of seq: each one finished seq - 1. */
    if (heard_all && team->push_safe < p->seq - 1)
        team->push_safe = p->seq - 1;
}
