/* Teams, contexts and the layout of the collective part of the internal
 * region ([USHMEMI_COLL_REGION_OFF, USHMEMI_INTERNAL_SIZE) of every heap).
 *
 * A team is a strided slice of the world. Its synchronization state lives in
 * one "slot" of the collective region, at the same index on every member, so
 * a member finds a partner's flags at the same offset in the partner's heap.
 *
 * Slot allocation (team.c): each PE keeps a bitmap of the slots its live teams
 * use. A split is collective over the parent, so the parent's members publish
 * their bitmaps, synchronize, AND them and take the lowest free slot(s): the
 * same answer everywhere, and free on every member of the new team. Members
 * mark it; non-members do not, which is safe because a slot is only ever
 * shared by teams with disjoint membership. Destroy runs a final team sync
 * (after which nobody writes into this PE's slot), zeroes the slot's flags and
 * clears the bit, so the next team to take it starts from epoch 0.
 * Deprecated active sets are not created collectively over a parent: their
 * slots come from a fixed range, assigned by a table of triples kept on PE 0
 * (first user claims an entry with compare-and-swap), and are never freed. */
#ifndef USHMEM_TEAM_H
#define USHMEM_TEAM_H

#include "core/state.h"

#define USHMEMI_TEAM_SLOTS            256
#define USHMEMI_TEAM_SLOT_WORLD       0
#define USHMEMI_TEAM_SLOT_SHARED      1
#define USHMEMI_TEAM_SLOT_SPLIT_FIRST 2   /* [2, 192): teams from splits */
#define USHMEMI_TEAM_SLOT_ASET_FIRST  192 /* [192, 256): active sets */
#define USHMEMI_TEAM_MAP_WORDS        (USHMEMI_TEAM_SLOTS / 64)
#define USHMEMI_TEAM_SLOT_WORDS       8
/* Cells of the small collectives (src/coll/push.c): per slot, two areas of
 * USHMEMI_PUSH_AREA bytes; the world and shared teams' slots use two of
 * USHMEMI_PUSH_BIG_AREA instead (room for 8 KiB of data and 16 cell headers:
 * 2 KiB per cell at 4 PEs). */
#define USHMEMI_PUSH_AREA      1600
#define USHMEMI_PUSH_BIG_SLOTS 2 /* slots 0 and 1 */
#define USHMEMI_PUSH_BIG_AREA  (8192 + 16 * 64)

/* Per-team, per-PE synchronization state. Flags hold epochs that only grow
 * while the team lives, so they never need resetting between operations. */
typedef struct {
    /* team sync: sync_flag[r] is written by the round-r partner */
    _Atomic uint64_t sync_flag[USHMEMI_MAX_ROUNDS];
    /* broadcast: written by this PE's parent in the tree */
    _Alignas(USHMEMI_CACHELINE) _Atomic uint64_t bcast_flag;
    /* values this PE publishes for the others to read during one operation
     * (collect block size, slot bitmap during a split, SHMEM_DEBUG's
     * collective arguments: src/coll/check.c) */
    _Alignas(USHMEMI_CACHELINE) uint64_t word[USHMEMI_TEAM_SLOT_WORDS];
    /* small collectives (src/coll/push.c): the last sequence number whose
     * cells this PE has finished reading */
    _Alignas(USHMEMI_CACHELINE) _Atomic uint64_t push_done;
    /* their cells: one area per sequence parity, written by the members */
    _Alignas(USHMEMI_CACHELINE) unsigned char push_area[2][USHMEMI_PUSH_AREA];
} ushmemi_team_slot_t;

#define USHMEMI_ASET_MAX (USHMEMI_TEAM_SLOTS - USHMEMI_TEAM_SLOT_ASET_FIRST)
typedef struct {
    _Alignas(USHMEMI_CACHELINE) _Atomic uint64_t aset_key[USHMEMI_ASET_MAX]; /* PE 0's copy */
    _Alignas(USHMEMI_CACHELINE) ushmemi_team_slot_t slot[USHMEMI_TEAM_SLOTS];
    /* cells of the world and shared teams, [2 * slot + parity] */
    _Alignas(USHMEMI_CACHELINE) unsigned char push_big[2 * USHMEMI_PUSH_BIG_SLOTS]
                                                      [USHMEMI_PUSH_BIG_AREA];
} ushmemi_coll_region_t;

_Static_assert(sizeof(ushmemi_coll_region_t) <= USHMEMI_COLL_REGION_SIZE,
               "collective state does not fit the internal region");

struct ushmem_ctx;

struct ushmem_team {
    int start, stride, size; /* world PEs start + i*stride, i < size */
    int my_pe;               /* index of this PE in the team */
    int slot;                /* index into ushmemi_coll_region_t.slot */
    int predefined;          /* world, shared, active set: never destroyed */
    uint64_t sync_epoch;     /* team syncs completed */
    uint64_t coll_epoch;     /* broadcasts started */
    uint64_t pull_epoch;     /* overlapped pulls started (src/coll/coll.c) */
    uint64_t push_seq;       /* small collectives started (src/coll/push.c) */
    uint64_t push_safe;      /* every member has finished reading up to this one */
    int push_known;          /* push_max is set */
    long push_max;           /* push path limit, -1: not all mapped (src/coll/push.c) */
    shmem_team_config_t config;
    long config_mask;
    struct ushmem_ctx *ctxs; /* contexts created on this team */
};

struct ushmem_ctx {
    shmem_team_t team;
    long options;
    struct ushmem_ctx *next; /* in team->ctxs */
};

/* The collective region of PE pe's heap as mapped here, or NULL. */
static inline ushmemi_coll_region_t *ushmemi_coll_region(int pe)
{
    char *base = ushmemi_g.seg[USHMEMI_SEG_HEAP].peer[pe];
    return base ? (ushmemi_coll_region_t *)(base + USHMEMI_COLL_REGION_OFF) : NULL;
}

static inline ushmemi_team_slot_t *ushmemi_team_my_slot(shmem_team_t team)
{
    return &((ushmemi_coll_region_t *)(ushmemi_g.seg[USHMEMI_SEG_HEAP].base +
                                       USHMEMI_COLL_REGION_OFF))
                ->slot[team->slot];
}

/* World PE of team member i (0 <= i < team->size). */
static inline int ushmemi_team_world_pe(shmem_team_t team, int i)
{
    return team->start + i * team->stride;
}

/* Dissemination barrier among the members (no quiet); src/coll/team_sync.c.
 * Fatal if a member's memory is not mapped here. */
void ushmemi_team_sync(shmem_team_t team, const char *call);

/* A team handle usable by this PE, or a one-line error (returns 0). */
int ushmemi_team_check(shmem_team_t team, const char *call);

/* Destroy every context created on team (team.c calls it on team destroy). */
void ushmemi_ctx_destroy_team(shmem_team_t team);

/* World PE number for a PE number given with ctx: relative to the context's
 * team (SHMEM_CTX_DEFAULT: the world, unchanged and not checked here). Fatal
 * if out of range for that team or ctx is SHMEM_CTX_INVALID. Every RMA, AMO
 * and signal primitive calls it once on its pe, before anything else; the
 * default context costs one compare. */
int ushmemi_ctx_pe_team(shmem_ctx_t ctx, int pe, const char *call);
static inline int ushmemi_ctx_pe(shmem_ctx_t ctx, int pe, const char *call)
{
    return USHMEMI_LIKELY(ctx == SHMEM_CTX_DEFAULT) ? pe : ushmemi_ctx_pe_team(ctx, pe, call);
}

#endif
