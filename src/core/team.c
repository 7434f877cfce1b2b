/* Teams: SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED, strided and 2-D splits, and the
 * cached teams behind the deprecated active-set collectives. How slots are
 * agreed on is described in team.h. */
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "core/core.h"
#include "core/prims.h"
#include "core/team.h"
#include "transport/cuda/devmem.h"

static struct ushmem_team team_world, team_shared;
USHMEMI_API shmem_team_t SHMEM_TEAM_WORLD = &team_world;
USHMEMI_API shmem_team_t SHMEM_TEAM_SHARED = &team_shared;

/* Slots used by the live teams this PE belongs to. */
static uint64_t slot_map[USHMEMI_TEAM_MAP_WORDS];

/* Active-set teams created by this PE, by packed triple. */
static struct {
    uint64_t key;
    shmem_team_t team;
} aset_cache[USHMEMI_ASET_MAX];

static void slot_mark(int s)
{
    slot_map[s / 64] |= 1ULL << (s % 64);
}

static void slot_clear(int s)
{
    slot_map[s / 64] &= ~(1ULL << (s % 64));
}

static void team_set(struct ushmem_team *t, int start, int stride, int size, int slot)
{
    memset(t, 0, sizeof *t);
    t->start = start;
    t->stride = size == 1 ? 1 : stride;
    t->size = size;
    t->slot = slot;
    t->my_pe = -1;
    int d = ushmemi_g.my_pe - start;
    if (d % t->stride == 0 && d / t->stride >= 0 && d / t->stride < size)
        t->my_pe = d / t->stride;
}

/* The PEs mapped here, if they form an arithmetic progression (they do on one
 * host under every launcher we know); otherwise just this PE, which is still a
 * correct, if small, shared team. */
static void shared_team_init(void)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    int first = -1, stride = 0, count = 0, ok = 1, prev = -1;
    for (int pe = 0; pe < n; pe++) {
        if (pe != me && !ushmemi_g.seg[USHMEMI_SEG_HEAP].peer[pe])
            continue;
        if (first < 0)
            first = pe;
        else if (count == 1)
            stride = pe - prev;
        else if (pe - prev != stride)
            ok = 0;
        prev = pe;
        count++;
    }
    if (ok)
        team_set(&team_shared, first, count > 1 ? stride : 1, count, USHMEMI_TEAM_SLOT_SHARED);
    else
        team_set(&team_shared, me, 1, 1, USHMEMI_TEAM_SLOT_SHARED);
    team_shared.predefined = 1;
}

int ushmemi_teams_init(const char *call)
{
    (void)call;
    memset(slot_map, 0, sizeof slot_map);
    memset(aset_cache, 0, sizeof aset_cache);
    team_set(&team_world, 0, 1, ushmemi_g.n_pes, USHMEMI_TEAM_SLOT_WORLD);
    team_world.predefined = 1;
    slot_mark(USHMEMI_TEAM_SLOT_WORLD);
    shared_team_init();
    slot_mark(USHMEMI_TEAM_SLOT_SHARED);
    return 0;
}

void ushmemi_teams_fini(void)
{
    for (int i = 0; i < USHMEMI_ASET_MAX; i++) {
        if (aset_cache[i].team && aset_cache[i].team != &team_world) {
            ushmemi_ctx_destroy_team(aset_cache[i].team);
            free(aset_cache[i].team);
        }
        aset_cache[i].team = NULL;
    }
    /* Teams the program did not destroy are leaked on purpose: the handles
     * are the program's, and a later shmem_init starts from a clean map. */
    ushmemi_ctx_destroy_team(&team_world);
    ushmemi_ctx_destroy_team(&team_shared);
}

int ushmemi_team_check(shmem_team_t team, const char *call)
{
    if (USHMEMI_UNLIKELY(!ushmemi_g.initialized)) {
        ushmemi_error(call, "OpenSHMEM library not initialized");
        return 0;
    }
    if (team == SHMEM_TEAM_INVALID) {
        /* Defined by the spec (what a non-member of a split holds): no
         * operation, a non-zero status where the routine returns one. */
        ushmemi_debug(call, "team is SHMEM_TEAM_INVALID: nothing to do");
        return 0;
    }
    return 1;
}

/* ---- queries ---- */

USHMEMI_API int shmem_team_my_pe(shmem_team_t team)
{
    if (!ushmemi_g.initialized || team == SHMEM_TEAM_INVALID)
        return -1;
    return team->my_pe;
}

USHMEMI_API int shmem_team_n_pes(shmem_team_t team)
{
    if (!ushmemi_g.initialized || team == SHMEM_TEAM_INVALID)
        return -1;
    return team->size;
}

USHMEMI_API int shmem_team_get_config(shmem_team_t team, long config_mask,
                                      shmem_team_config_t *config)
{
    static const char call[] = "shmem_team_get_config";
    if (!ushmemi_team_check(team, call))
        return USHMEM_EINVAL;
    if (!config) {
        ushmemi_error(call, "config is NULL");
        return USHMEM_EINVAL;
    }
    if (config_mask & ~SHMEM_TEAM_NUM_CONTEXTS) {
        ushmemi_error(call, "unknown bits 0x%lx in config_mask",
                      config_mask & ~SHMEM_TEAM_NUM_CONTEXTS);
        return USHMEM_EINVAL;
    }
    if (config_mask & SHMEM_TEAM_NUM_CONTEXTS)
        config->num_contexts = team->config.num_contexts;
    return 0;
}

USHMEMI_API int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)
{
    if (!ushmemi_g.initialized || src_team == SHMEM_TEAM_INVALID ||
        dest_team == SHMEM_TEAM_INVALID || src_pe < 0 || src_pe >= src_team->size)
        return -1;
    int d = ushmemi_team_world_pe(src_team, src_pe) - dest_team->start;
    if (d % dest_team->stride != 0)
        return -1;
    int i = d / dest_team->stride;
    return i >= 0 && i < dest_team->size ? i : -1;
}

USHMEMI_API void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe)
{
    if (!ushmemi_g.initialized || team == SHMEM_TEAM_INVALID || pe < 0 || pe >= team->size)
        return NULL;
    return ushmemi_xlate(dest, ushmemi_team_world_pe(team, pe));
}

/* ---- splits ---- */

typedef struct {
    int start, stride, size; /* in parent numbering */
} triple_t;

static int triple_valid(const triple_t *t, int n)
{
    if (t->size < 1 || t->start < 0 || t->start >= n)
        return 0;
    if (t->stride == 0)
        return t->size == 1;
    long long last = t->start + (long long)(t->size - 1) * t->stride;
    return last >= 0 && last < n;
}

/* Agree with the other members of parent on nslots free slot numbers (see
 * team.h). Collective over parent; the same result on every member. */
static int agree_slots(shmem_team_t parent, int nslots, int *slots, const char *call)
{
    ushmemi_team_slot_t *mine = ushmemi_team_my_slot(parent);
    for (int w = 0; w < USHMEMI_TEAM_MAP_WORDS; w++)
        mine->word[w] = slot_map[w];
    ushmemi_team_sync(parent, call);
    uint64_t used[USHMEMI_TEAM_MAP_WORDS] = {0};
    for (int i = 0; i < parent->size; i++) {
        uint64_t theirs[USHMEMI_TEAM_MAP_WORDS]; /* mpi hook: mapped or not */
        ushmemi_coll_get(theirs, mine->word, parent, i, sizeof theirs, call);
        for (int w = 0; w < USHMEMI_TEAM_MAP_WORDS; w++)
            used[w] |= theirs[w];
    }
    /* Nobody may overwrite its words (next split) before all have read them. */
    ushmemi_team_sync(parent, call);
    int found = 0;
    for (int s = USHMEMI_TEAM_SLOT_SPLIT_FIRST; s < USHMEMI_TEAM_SLOT_ASET_FIRST && found < nslots;
         s++)
        if (!(used[s / 64] & (1ULL << (s % 64))))
            slots[found++] = s;
    if (found < nslots) {
        ushmemi_error(call, "too many live teams (at most %d): destroy unused teams",
                      USHMEMI_TEAM_SLOT_ASET_FIRST - USHMEMI_TEAM_SLOT_SPLIT_FIRST);
        return USHMEM_ENOMEM;
    }
    return 0;
}

/* Build this PE's team for a triple over parent (NULL out if not a member). */
static int make_team(shmem_team_t parent, const triple_t *t, int slot,
                     const shmem_team_config_t *config, long mask, shmem_team_t *out)
{
    int p = parent->my_pe;
    int member = t->stride == 0
                     ? p == t->start
                     : (p - t->start) % t->stride == 0 && (p - t->start) / t->stride >= 0 &&
                           (p - t->start) / t->stride < t->size;
    *out = SHMEM_TEAM_INVALID;
    if (!member)
        return 0;
    struct ushmem_team *team = malloc(sizeof *team);
    if (!team)
        return USHMEM_ENOMEM;
    team_set(team, ushmemi_team_world_pe(parent, t->start), t->stride * parent->stride, t->size,
             slot);
    if (config && (mask & SHMEM_TEAM_NUM_CONTEXTS)) {
        team->config.num_contexts = config->num_contexts;
        team->config_mask = SHMEM_TEAM_NUM_CONTEXTS;
    }
    slot_mark(slot);
    *out = team;
    return 0;
}

static int check_mask(const shmem_team_config_t *config, long mask, const char *call)
{
    if (mask & ~SHMEM_TEAM_NUM_CONTEXTS) {
        ushmemi_error(call, "unknown bits 0x%lx in config_mask", mask & ~SHMEM_TEAM_NUM_CONTEXTS);
        return 0;
    }
    if ((mask & SHMEM_TEAM_NUM_CONTEXTS) && (!config || config->num_contexts < 0)) {
        ushmemi_error(call, "SHMEM_TEAM_NUM_CONTEXTS set but config is NULL or negative");
        return 0;
    }
    return 1;
}

USHMEMI_API int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                                         const shmem_team_config_t *config, long config_mask,
                                         shmem_team_t *new_team)
{
    static const char call[] = "shmem_team_split_strided";
    if (new_team)
        *new_team = SHMEM_TEAM_INVALID;
    /* An INVALID parent is how non-members of a team take part in nested
     * splits: defined by the spec (non-zero, no team), so no error line. */
    if (parent_team == SHMEM_TEAM_INVALID && ushmemi_g.initialized)
        return USHMEM_EINVAL;
    if (!ushmemi_team_check(parent_team, call))
        return USHMEM_EINVAL;
    if (!new_team) {
        ushmemi_error(call, "new_team is NULL");
        return USHMEM_EINVAL;
    }
    /* Every parent member sees the same arguments, so every one fails here
     * alike, before any synchronization. */
    triple_t t = {start, stride, size};
    if (!triple_valid(&t, parent_team->size)) {
        ushmemi_error(call,
                      "invalid triple (start %d, stride %d, size %d) for a parent team "
                      "of %d PEs",
                      start, stride, size, parent_team->size);
        return USHMEM_EINVAL;
    }
    if (!check_mask(config, config_mask, call))
        return USHMEM_EINVAL;
    int slot;
    int rc = agree_slots(parent_team, 1, &slot, call);
    if (rc)
        return rc;
    rc = make_team(parent_team, &t, slot, config, config_mask, new_team);
    if (rc)
        ushmemi_fatal(call, "out of memory creating a team");
    return 0;
}

USHMEMI_API int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                                    const shmem_team_config_t *xaxis_config, long xaxis_mask,
                                    shmem_team_t *xaxis_team,
                                    const shmem_team_config_t *yaxis_config, long yaxis_mask,
                                    shmem_team_t *yaxis_team)
{
    static const char call[] = "shmem_team_split_2d";
    if (xaxis_team)
        *xaxis_team = SHMEM_TEAM_INVALID;
    if (yaxis_team)
        *yaxis_team = SHMEM_TEAM_INVALID;
    if (parent_team == SHMEM_TEAM_INVALID && ushmemi_g.initialized)
        return USHMEM_EINVAL; /* as in shmem_team_split_strided */
    if (!ushmemi_team_check(parent_team, call))
        return USHMEM_EINVAL;
    if (!xaxis_team || !yaxis_team) {
        ushmemi_error(call, "xaxis_team or yaxis_team is NULL");
        return USHMEM_EINVAL;
    }
    if (xrange <= 0) {
        ushmemi_error(call, "xrange %d must be positive", xrange);
        return USHMEM_EINVAL;
    }
    /* Configs may differ between x teams (spec), so a bad mask on some PEs
     * only: those fail after the collective part, the rest succeed. */
    int n = parent_team->size, p = parent_team->my_pe;
    if (xrange > n)
        xrange = n;
    int slots[2];
    int rc = agree_slots(parent_team, 2, slots, call);
    if (rc)
        return rc;
    if (!check_mask(xaxis_config, xaxis_mask, call) || !check_mask(yaxis_config, yaxis_mask, call))
        return USHMEM_EINVAL;
    /* x team: my row; y team: my column. Rows are disjoint, so they all share
     * one slot; so do the columns. */
    int y = p / xrange, x = p % xrange;
    triple_t row = {y * xrange, 1, n - y * xrange < xrange ? n - y * xrange : xrange};
    triple_t col = {x, xrange, (n - 1 - x) / xrange + 1};
    if (make_team(parent_team, &row, slots[0], xaxis_config, xaxis_mask, xaxis_team) ||
        make_team(parent_team, &col, slots[1], yaxis_config, yaxis_mask, yaxis_team))
        ushmemi_fatal(call, "out of memory creating a team");
    return 0;
}

USHMEMI_API void shmem_team_destroy(shmem_team_t team)
{
    static const char call[] = "shmem_team_destroy";
    if (!ushmemi_g.initialized) {
        ushmemi_error(call, "OpenSHMEM library not initialized");
        return;
    }
    if (team == SHMEM_TEAM_INVALID)
        return;
    if (team->predefined) {
        ushmemi_error(call, "%s cannot be destroyed",
                      team == SHMEM_TEAM_WORLD    ? "SHMEM_TEAM_WORLD"
                      : team == SHMEM_TEAM_SHARED ? "SHMEM_TEAM_SHARED"
                                                  : "an active-set team");
        return;
    }
    ushmemi_ctx_destroy_team(team);
    /* After the sync every write into this PE's slot has landed (each flag a
     * partner writes is one this PE waited for), so zeroing is race-free. */
    ushmemi_team_sync(team, call);
    memset(ushmemi_team_my_slot(team), 0, sizeof(ushmemi_team_slot_t));
    if (ushmemi_g.cuda_active) /* device barriers' state: kernels are done with it too */
        ushmemi_cuda_dev_team_reset(team->slot);
    slot_clear(team->slot);
    free(team);
}

/* ---- deprecated active sets ---- */

shmem_team_t ushmemi_active_set_team(int start, int logstride, int size, const char *call)
{
    USHMEMI_CHECK_INIT(call);
    int n = ushmemi_g.n_pes;
    if (start < 0 || logstride < 0 || logstride > 30 || size < 1 || start >= n ||
        (long long)start + ((long long)(size - 1) << logstride) >= n)
        ushmemi_fatal(call,
                      "invalid active set (PE_start %d, logPE_stride %d, PE_size %d) "
                      "for %d PEs",
                      start, logstride, size, n);
    int d = ushmemi_g.my_pe - start;
    if (d < 0 || d % (1 << logstride) || (d >> logstride) >= size) {
        /* As the other implementations do (and the Mellanox verifier's
         * reductions expect): a PE outside the set does nothing. */
        ushmemi_debug(call,
                      "this PE is not in the active set (PE_start %d, logPE_stride %d, "
                      "PE_size %d): nothing to do",
                      start, logstride, size);
        return SHMEM_TEAM_INVALID;
    }
    if (start == 0 && (size == n) && (size == 1 || logstride == 0))
        return SHMEM_TEAM_WORLD;
    uint64_t key =
        1ULL << 63 | (uint64_t)start << 38 | (uint64_t)logstride << 32 | (uint64_t)(uint32_t)size;
    for (int i = 0; i < USHMEMI_ASET_MAX && aset_cache[i].team; i++)
        if (aset_cache[i].key == key)
            return aset_cache[i].team;

    /* First use here: find or claim the triple's entry in PE 0's table, with
     * AMOs (mpi hook: so they go wherever the job's atomics go). */
    _Atomic uint64_t *keys = ushmemi_coll_region(ushmemi_g.my_pe)->aset_key; /* PE 0's, by offset */
    const int dt = USHMEMI_DT(USHMEMI_KIND_UINT, 8);
    int idx = -1;
    for (int i = 0; i < USHMEMI_ASET_MAX && idx < 0; i++) {
        void *k = (void *)&keys[i];
        uint64_t cur = ushmemi_amo(SHMEM_CTX_DEFAULT, USHMEMI_AMO_FETCH, dt, k, 0, 0, 0, call);
        if (cur == 0)
            cur = ushmemi_amo(SHMEM_CTX_DEFAULT, USHMEMI_AMO_CSWAP, dt, k, key, 0, 0, call);
        if (cur == 0 || cur == key)
            idx = i;
    }
    if (idx < 0)
        ushmemi_fatal(call, "more than %d distinct active sets in one job", USHMEMI_ASET_MAX);
    struct ushmem_team *team = malloc(sizeof *team);
    if (!team)
        ushmemi_fatal(call, "out of memory");
    team_set(team, start, 1 << logstride, size, USHMEMI_TEAM_SLOT_ASET_FIRST + idx);
    team->predefined = 1;
    for (int i = 0; i < USHMEMI_ASET_MAX; i++)
        if (!aset_cache[i].team) {
            aset_cache[i].key = key;
            aset_cache[i].team = team;
            break;
        }
    return team;
}

/* pshmem_ profiling names */
USHMEMI_PSHMEM(shmem_team_my_pe)
USHMEMI_PSHMEM(shmem_team_n_pes)
USHMEMI_PSHMEM(shmem_team_get_config)
USHMEMI_PSHMEM(shmem_team_translate_pe)
USHMEMI_PSHMEM(shmem_team_ptr)
USHMEMI_PSHMEM(shmem_team_split_strided)
USHMEMI_PSHMEM(shmem_team_split_2d)
USHMEMI_PSHMEM(shmem_team_destroy)
