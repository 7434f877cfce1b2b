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
 * coll.c/reduce.c), the team has 2..USHMEMI_PUSH_MAX_PES members, and the
 * data fits a cell (an area split evenly among the members) and is under the
 * measured limit (push_max): all of it is the same on every member, so all
 * take the same path and count the same sequence numbers. */

#include "coll/coll.h"

#define CELL_HDR 16 /* sequence number, padding: data stays 16-byte aligned */

typedef struct {
    _Atomic uint64_t seq;
    uint64_t pad;
} cell_t;

_Static_assert(sizeof(cell_t) == CELL_HDR, "cell header");

/* The most data a PE copies in or out on the push path of team, or 0 for
 * only USHMEMI_PUSH_OWN_BYTES per cell; -1: no push path. Mapped peers are on
 * this host, so every member computes the same value. */
static long push_max(shmem_team_t team)
{
    for (int i = 0; i < team->size; i++)
        if (!ushmemi_coll_region(ushmemi_team_world_pe(team, i)))
            return -1;
    /* When PEs share cores, a wait usually lasts until the scheduler runs the
     * PE waited for, so saving a synchronization beats copying everything
     * twice up to a few KiB in all (4 PEs on 2 cores: alltoall of 512 B
     * blocks 3.7 us push vs 5.6 pull, 8 KiB blocks 9.6 vs 5.6; broadcast of
     * 2 KiB 3.9 vs 5.3). With a core
     * each, a wait is a few cache-line transfers, and pulling a source the
     * reader still has cached (a repeated collective) beats pushing beyond a
     * few lines (2 PEs: 8 B 0.28 us push vs 0.32 pull; 128 B 0.36 vs 0.45;
     * 512 B 0.56 vs 0.44; 2 KiB 1.0 vs 0.47), a broadcast beyond one line
     * (128 B: 0.36 push vs 0.33 pull from the root; 32 B 0.30 vs 0.35). */
    /* "Share cores" as the waits judge it (src/sync/wait.c): this job's PEs on
     * the host against the CPUs of our affinity mask (taskset and cpusets
     * count, not only the CPUs online), or USHMEM_WAIT_POLICY=yield. */
    if (ushmemi_g.wait_oversub)
        return USHMEMI_PUSH_SHARED_TOTAL;
    return 0;
}

int ushmemi_coll_mapped(shmem_team_t team)
{
    if (USHMEMI_UNLIKELY(!team->push_known)) {
        team->push_max = push_max(team);
        team->push_known = 1;
    }
    return team->push_max >= 0;
}

int ushmemi_push_begin(shmem_team_t team, size_t nbytes, int one_writer, ushmemi_push_t *p)
{
    int n = team->size, big = team->slot < USHMEMI_PUSH_BIG_SLOTS;
    /* One cell per member at fixed places: a cell's flag word never holds
     * data of another collective, whatever the sizes were. */
    size_t area = big ? USHMEMI_PUSH_BIG_AREA : USHMEMI_PUSH_AREA;
    size_t stride = area / (size_t)n & ~(size_t)(USHMEMI_CACHELINE - 1);
    if (n < 2 || n > USHMEMI_PUSH_MAX_PES || nbytes == 0 || nbytes > stride - CELL_HDR)
        return 0;
    ushmemi_coll_mapped(team); /* sets push_max */
    /* A broadcast reader copies one cell, the root n - 1; the others copy n
     * cells in and n - 1 out. */
    if (team->push_max < 0 ||
        (team->push_max == 0
             ? nbytes > (one_writer ? USHMEMI_PUSH_OWN_BCAST : USHMEMI_PUSH_OWN_BYTES)
             : nbytes * (one_writer ? 1 : (size_t)n) > (size_t)team->push_max))
        return 0;
    p->team = team;
    p->seq = ++team->push_seq;
    p->stride = stride;
    int par = (int)(p->seq & 1);
    p->off = big ? offsetof(ushmemi_coll_region_t, push_big) + area * (size_t)(2 * team->slot + par)
                 : offsetof(ushmemi_coll_region_t, slot) +
                       sizeof(ushmemi_team_slot_t) * (size_t)team->slot +
                       offsetof(ushmemi_team_slot_t, push_area) + area * (size_t)par;
    return 1;
}

static inline cell_t *cell_at(ushmemi_coll_region_t *r, const ushmemi_push_t *p, int cell)
{
    return (cell_t *)((char *)r + p->off + (size_t)cell * p->stride);
}

void *ushmemi_push_mine(shmem_team_t team, const ushmemi_push_t *p)
{
    return cell_at(ushmemi_coll_region(ushmemi_g.my_pe), p, team->my_pe) + 1;
}

void ushmemi_push_send(shmem_team_t team, const ushmemi_push_t *p, int to, int cell,
                       const void *data, size_t nbytes, const char *call)
{
    ushmemi_coll_region_t *r = ushmemi_coll_region(ushmemi_team_world_pe(team, to));
    ushmemi_team_slot_t *slot = &r->slot[team->slot];
    if (team->push_safe + 2 < p->seq) {
        /* r may still be reading this area for collective seq - 2 */
        ushmemi_waiter_t w =
            USHMEMI_WAITER(call, team, &slot->push_done, ushmemi_team_world_pe(team, to));
        while (atomic_load_explicit(&slot->push_done, memory_order_acquire) + 2 < p->seq)
            ushmemi_wait_poll(&w);
        ushmemi_wait_done(&w);
    }
    cell_t *c = cell_at(r, p, cell);
    /* Cells are small, so memcpy uses ordinary stores, which x86 keeps in
     * order with the release store below (no fence for streaming stores). */
    memcpy(c + 1, data, nbytes);
    atomic_store_explicit(&c->seq, p->seq, memory_order_release);
}

const void *ushmemi_push_recv(const ushmemi_push_t *p, int cell, const char *call)
{
    cell_t *c = cell_at(ushmemi_coll_region(ushmemi_g.my_pe), p, cell);
    ushmemi_waiter_t w =
        USHMEMI_WAITER(call, p->team, &c->seq, ushmemi_team_world_pe(p->team, cell));
    while (atomic_load_explicit(&c->seq, memory_order_acquire) < p->seq)
        ushmemi_wait_poll(&w);
    ushmemi_wait_done(&w);
    return c + 1;
}

void ushmemi_push_end(shmem_team_t team, const ushmemi_push_t *p, int heard_all)
{
    atomic_store_explicit(&ushmemi_team_my_slot(team)->push_done, p->seq, memory_order_release);
    /* Every member wrote its part of seq: each one finished seq - 1. */
    if (heard_all && team->push_safe < p->seq - 1)
        team->push_safe = p->seq - 1;
}
