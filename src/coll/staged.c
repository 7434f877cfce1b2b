/* Staged collectives: for device-heap buffers on a team with a member whose
 * device heap is not mapped here (another host: reached through the proxy).
 * The GPU stream collectives (src/transport/cuda) need every member's heap
 * mapped, and the host paths of coll.c/reduce.c copy with memcpy; these use
 * only ushmemi_put/get, which route each peer's copy by memory kind (cuda when
 * mapped, the proxy when not), host temporaries for arithmetic, quiet, and the
 * team sync on the members' host slots.
 *
 * Data moves by push: after an entry team sync (every member has finished
 * reading its dest from before), each member puts its part into the others'
 * dests, then quiets and syncs again, so on return every dest is complete and
 * nobody touches this PE's buffers any more. Reductions and scans pull
 * instead: every member gets the sources it needs into host memory and
 * combines them in team order (the same order as reduce.c: bit-identical
 * results everywhere); a team sync after the last get lets each member write
 * its own dest, so dest may be source. */
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "core/core.h"

/* Host temporaries of reductions read a source in pieces of this size. */
#define STAGE_BYTES ((size_t)1 << 20)

_Atomic int ushmemi_coll_staged_env = -1;

int ushmemi_coll_dev_unmapped(shmem_team_t team)
{
    /* Answers are per peer and fixed once the transports are up: O(size)
     * compares, only for collectives on device memory. */
    for (int i = 0; i < team->size; i++) {
        const char *how = ushmemi_pe_dev_transport_name(ushmemi_team_world_pe(team, i));
        if (strcmp(how, "cuda") != 0 && strcmp(how, "-") != 0)
            return 1;
    }
    return 0;
}

int ushmemi_coll_staged_pick(shmem_team_t team, int on_device)
{
    int env = atomic_load_explicit(&ushmemi_coll_staged_env, memory_order_relaxed);
    if (env < 0) {
        /* Testing knob: the staged algorithms on host memory too. */
        const char *s = getenv("USHMEM_COLL_STAGED");
        env = s && atoi(s) > 0;
        atomic_store_explicit(&ushmemi_coll_staged_env, env, memory_order_relaxed);
    }
    /* A bad team or no library: the caller's checks report it. */
    if (!ushmemi_g.initialized || team == SHMEM_TEAM_INVALID)
        return 0;
    return env || (on_device && ushmemi_coll_dev_unmapped(team));
}

/* n bytes from src (local) into member i's copy of dest; complete at quiet.
 * This PE's own copy: skipped when it is the source already. */
static void push(shmem_team_t team, int i, void *dest, const void *src, size_t n, const char *call)
{
    if (n == 0 || (i == team->my_pe && dest == src))
        return;
    ushmemi_put_nbi(SHMEM_CTX_DEFAULT, dest, src, n, ushmemi_team_world_pe(team, i), call);
}

/* Every push of this PE is complete, then nobody is left writing into any
 * dest. */
static void finish(shmem_team_t team, const char *call)
{
    ushmemi_quiet(SHMEM_CTX_DEFAULT);
    ushmemi_team_sync(team, call);
}

static void *host_tmp(size_t n, const char *call)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        ushmemi_fatal(call, "out of memory (%zu bytes of host staging)", n);
    return p;
}

int ushmemi_coll_staged_bcast(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                              int root, int root_dest, const char *call)
{
    int n = team->size, me = team->my_pe;
    ushmemi_team_sync(team, call);
    if (nbytes == 0)
        return 0;
    if (me == root) {
        for (int k = 1; k < n; k++)
            push(team, (root + k) % n, dest, src, nbytes, call);
        if (root_dest)
            push(team, me, dest, src, nbytes, call);
        ushmemi_quiet(SHMEM_CTX_DEFAULT); /* only the root wrote */
    }
    ushmemi_team_sync(team, call);
    return 0;
}

int ushmemi_coll_staged_fcollect(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                                 const char *call)
{
    int n = team->size, me = team->my_pe;
    char *mine = (char *)dest + (size_t)me * nbytes;
    ushmemi_team_sync(team, call);
    if (nbytes == 0)
        return 0;
    /* Starting at the next member spreads the writers over the targets. */
    for (int k = 0; k < n; k++)
        push(team, (me + 1 + k) % n, mine, src, nbytes, call);
    finish(team, call);
    return 0;
}

int ushmemi_coll_staged_collect(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                                const char *call)
{
    int n = team->size, me = team->my_pe;
    /* Block sizes as coll.c's collect exchanges them: in the team slot's
     * word (host memory), read after the entry sync. */
    uint64_t *word = &ushmemi_team_my_slot(team)->word[0];
    *word = nbytes;
    ushmemi_team_sync(team, call);
    size_t total = 0, off = 0;
    for (int j = 0; j < n; j++) {
        uint64_t sz = j == me ? nbytes : ushmemi_coll_word(word, team, j, call);
        if (sz > SIZE_MAX - total)
            ushmemi_fatal(call, "collected size overflows");
        if (j < me)
            off += (size_t)sz;
        total += (size_t)sz;
    }
    ushmemi_coll_sym(dest, total, "dest", call);
    /* The words are read before the exit sync, so the next collect cannot
     * overwrite one that is still needed. */
    for (int k = 0; nbytes && k < n; k++)
        push(team, (me + 1 + k) % n, (char *)dest + off, src, nbytes, call);
    finish(team, call);
    return 0;
}

int ushmemi_coll_staged_alltoall(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                                 const char *call)
{
    int n = team->size, me = team->my_pe;
    ushmemi_team_sync(team, call);
    if (nbytes == 0)
        return 0;
    char *d = (char *)dest + (size_t)me * nbytes;
    for (int k = 0; k < n; k++) {
        int j = (me + 1 + k) % n;
        push(team, j, d, (const char *)src + (size_t)j * nbytes, nbytes, call);
    }
    finish(team, call);
    return 0;
}

int ushmemi_coll_staged_alltoalls(shmem_team_t team, void *dest, const void *src, ptrdiff_t dst,
                                  ptrdiff_t sst, size_t nelems, size_t esize, const char *call)
{
    int n = team->size, me = team->my_pe;
    ushmemi_team_sync(team, call);
    if (nelems == 0 || esize == 0)
        return 0;
    /* Element e of my block for member j: source index (j*nelems + e)*sst,
     * lands on j at dest index (me*nelems + e)*dst. */
    size_t dstep = (size_t)dst * esize, sstep = (size_t)sst * esize;
    char *d = (char *)dest + (size_t)me * nelems * dstep;
    for (int k = 0; k < n; k++) {
        int j = (me + 1 + k) % n;
        const char *s = (const char *)src + (size_t)j * nelems * sstep;
        if (dst == 1 && sst == 1)
            push(team, j, d, s, nelems * esize, call);
        else /* complete on return (per element through the proxy) */
            ushmemi_iput(SHMEM_CTX_DEFAULT, d, s, dst, sst, nelems, esize,
                         ushmemi_team_world_pe(team, j), call);
    }
    finish(team, call);
    return 0;
}

/* acc (op) member i's source, in pieces through tmp (STAGE_BYTES). */
static void combine_from(char *acc, const char *src, size_t nelems, size_t esize,
                         ushmemi_coll_comb_t fn, ushmemi_redop_t op, shmem_team_t team, int i,
                         char *tmp, const char *call)
{
    size_t per = STAGE_BYTES / esize;
    int pe = ushmemi_team_world_pe(team, i);
    for (size_t done = 0; done < nelems; done += per) {
        size_t b = nelems - done < per ? nelems - done : per;
        ushmemi_get(SHMEM_CTX_DEFAULT, tmp, src + done * esize, b * esize, pe, call);
        fn(acc + done * esize, tmp, b, op);
    }
}

/* Members [0, upto) combined into a host vector, then written to this PE's
 * dest once nobody reads a source any more. first: member 0's source starts
 * the vector (a reduction); else it starts from zero (a sum scan). */
static int reduce_staged(shmem_team_t team, void *dest, const void *src, size_t nelems,
                         size_t esize, ushmemi_coll_comb_t fn, ushmemi_redop_t op, int upto,
                         int first, const char *call)
{
    size_t nbytes = nelems * esize; /* checked by the caller */
    ushmemi_team_sync(team, call);  /* every source is ready */
    if (nbytes == 0)
        return 0;
    char *acc = host_tmp(nbytes, call);
    char *tmp = host_tmp(nbytes < STAGE_BYTES ? nbytes : STAGE_BYTES, call);
    int k = 0;
    if (first && upto > 0)
        ushmemi_get(SHMEM_CTX_DEFAULT, acc, src, nbytes, ushmemi_team_world_pe(team, k++), call);
    else
        memset(acc, 0, nbytes); /* all-zero bits are 0 for every integer and IEEE type */
    for (; k < upto; k++)
        combine_from(acc, src, nelems, esize, fn, op, team, k, tmp, call);
    free(tmp);
    /* Nobody reads a source after this: dest may be source. Only this PE
     * writes its dest, with a blocking local put (complete on return), so
     * no further sync is needed. */
    ushmemi_team_sync(team, call);
    ushmemi_put(SHMEM_CTX_DEFAULT, dest, acc, nbytes, ushmemi_g.my_pe, call);
    free(acc);
    return 0;
}

int ushmemi_coll_staged_reduce(shmem_team_t team, void *dest, const void *src, size_t nelems,
                               size_t esize, ushmemi_coll_comb_t fn, ushmemi_redop_t op,
                               const char *call)
{
    return reduce_staged(team, dest, src, nelems, esize, fn, op, team->size, 1, call);
}

int ushmemi_coll_staged_scan(shmem_team_t team, void *dest, const void *src, size_t nelems,
                             size_t esize, ushmemi_coll_comb_t fn, int exclusive, const char *call)
{
    int upto = team->my_pe + (exclusive ? 0 : 1);
    return reduce_staged(team, dest, src, nelems, esize, fn, USHMEMI_OP_SUM, upto, 0, call);
}
