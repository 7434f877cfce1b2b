/* Data-movement collectives on teams: broadcast, collect, fcollect, alltoall,
 * alltoalls, their untyped names and the deprecated active-set forms.
 *
 * Small data on mapped teams goes through push.c (one synchronization). On
 * mapped teams of up to USHMEMI_FLAT_SYNC_PES members, broadcast, fcollect
 * and alltoall pull straight from the members' sources with flags of their
 * own (pull_blocks): arrival, then "done reading your source". Otherwise:
 * broadcast is a binomial tree: each member waits for its parent's flag, pulls
 * the data from the parent's dest (the root's source for the root's children)
 * and flags its own children, largest subtree first. The others start with a
 * team sync (every source is ready, every dest may be written), then each PE
 * pulls what it needs straight from the members' symmetric sources: O(n)
 * copies per PE, but only two log-depth syncs. Every collective ends with a
 * team sync (or the done-reading flags), so on return nobody still reads
 * this PE's source or dest and nobody writes into it: the PE may reuse them
 * and start the next collective at once. Device-heap buffers go to the GPU
 * stream collectives (src/transport/cuda), or to staged.c when a member's
 * device heap is not mapped here. */
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"

static int bcast(shmem_team_t team, void *dest, const void *src, size_t nbytes, int root,
                 int root_dest, const char *call)
{
    /* Device-heap buffers: on the GPU (both the team and the active-set
     * form), or staged when a member's device heap is not mapped here. */
    int on_dev = USHMEMI_COLL_ON_DEVICE(dest, src), staged = ushmemi_coll_staged(team, on_dev);
    if (on_dev && !staged)
        return ushmemi_devmem->broadcast(team, dest, src, nbytes, root, call);
    if (!ushmemi_coll_team_ok(team, call))
        return USHMEM_EINVAL;
    USHMEMI_COLL_CHECK(team, call, .kind = USHMEMI_COLL_BCAST, .root = root, .count = nbytes);
    int n = team->size, me = team->my_pe;
    if (root < 0 || root >= n) {
        ushmemi_error(call, "PE_root %d out of range for a team of %d PEs", root, n);
        return USHMEM_EINVAL;
    }
    ushmemi_coll_sym(dest, nbytes, "dest", call);
    ushmemi_coll_sym(src, nbytes, "source", call);
    if (staged)
        return ushmemi_coll_staged_bcast(team, dest, src, nbytes, root, root_dest, call);
    int v = me - root < 0 ? me - root + n : me - root; /* rank relative to the root */
    if (nbytes == 0 || n == 1) {
        if (nbytes && root_dest && dest != src)
            memmove(dest, src, nbytes);
        ushmemi_team_sync(team, call); /* still a synchronizing call */
        return 0;
    }
    ushmemi_push_t p;
    if (ushmemi_push_begin(team, nbytes, 1, &p)) {
        /* The root writes into its cell of every member, they copy it out. */
        if (v == 0) {
            for (int k = 1; k < n; k++)
                ushmemi_push_send(team, &p, (root + k) % n, root, src, nbytes, call);
            if (root_dest && dest != src)
                memmove(dest, src, nbytes);
        } else {
            memcpy(dest, ushmemi_push_recv(&p, root, call), nbytes);
        }
        ushmemi_push_end(team, &p, 0);
        return 0;
    }
    if (n <= USHMEMI_FLAT_SYNC_PES && ushmemi_coll_mapped(team)) {
        /* As pull_blocks, with one source: the root flags its arrival, the
         * others copy from it and flag it when done. */
        uint64_t epoch = ++team->pull_epoch;
        _Atomic uint64_t *flag = ushmemi_team_my_slot(team)->sync_flag;
        ushmemi_waiter_t w = USHMEMI_WAITER(call, team, NULL, -1);
        if (v == 0) {
            atomic_thread_fence(memory_order_seq_cst);
            for (int k = 1; k < n; k++)
                ushmemi_flag_put(&flag[USHMEMI_FLAG_ARRIVE + root], epoch,
                                 ushmemi_team_world_pe(team, (root + k) % n), call);
            if (root_dest && dest != src)
                memmove(dest, src, nbytes);
            for (int k = 1; k < n; k++) {
                w.addr = &flag[USHMEMI_FLAG_READ + (root + k) % n];
                w.pe = ushmemi_team_world_pe(team, (root + k) % n);
                while (atomic_load_explicit(&flag[USHMEMI_FLAG_READ + (root + k) % n],
                                            memory_order_acquire) < epoch)
                    ushmemi_wait_poll(&w);
                ushmemi_wait_done(&w);
            }
        } else {
            w.addr = &flag[USHMEMI_FLAG_ARRIVE + root];
            w.pe = ushmemi_team_world_pe(team, root);
            while (atomic_load_explicit(&flag[USHMEMI_FLAG_ARRIVE + root], memory_order_acquire) <
                   epoch)
                ushmemi_wait_poll(&w);
            ushmemi_wait_done(&w);
            int pe = ushmemi_team_world_pe(team, root);
            memcpy(dest, ushmemi_xlate(src, pe), nbytes);
            ushmemi_flag_put(&flag[USHMEMI_FLAG_READ + me], epoch, pe, call);
        }
        return 0;
    }
    uint64_t epoch = ++team->coll_epoch;
    if (v == 0) {
        if (root_dest && dest != src)
            memmove(dest, src, nbytes);
    } else {
        ushmemi_team_slot_t *mine = ushmemi_team_my_slot(team);
        int pv = v & (v - 1), parent = (pv + root) % n;
        ushmemi_waiter_t w =
            USHMEMI_WAITER(call, team, &mine->bcast_flag, ushmemi_team_world_pe(team, parent));
        while (atomic_load_explicit(&mine->bcast_flag, memory_order_acquire) < epoch)
            ushmemi_wait_poll(&w);
        ushmemi_wait_done(&w);
        if (pv == 0)
            ushmemi_coll_get(dest, src, team, root, nbytes, call);
        else
            ushmemi_coll_get(dest, dest, team, parent, nbytes, call);
    }
    atomic_thread_fence(memory_order_seq_cst);
    /* Children of v are v + 2^k for 2^k below v's lowest set bit (any k for
     * the root); the largest subtree is started first. */
    int top = 1;
    if (v)
        top = (v & -v) >> 1;
    else
        while (top * 2 < n)
            top *= 2;
    for (int m = top; m >= 1; m >>= 1) {
        if (v + m >= n)
            continue;
        int pe = ushmemi_team_world_pe(team, (v + m + root) % n);
        ushmemi_flag_put(&ushmemi_team_my_slot(team)->bcast_flag, epoch, pe, call);
    }
    ushmemi_team_sync(team, call);
    return 0;
}

/* Block j of dest from member j's source at src_off, for alltoall and
 * fcollect on small mapped teams: instead of a team sync before and after,
 * each member flags its arrival to all (its source is ready), copies from
 * each member as soon as that one has arrived (no waiting for the last one
 * before copying from the others), flags each one when done reading its
 * source, and returns once every member is done reading its own. */
static void pull_blocks(shmem_team_t team, char *dest, const char *src, size_t src_off,
                        size_t nbytes, const char *call)
{
    int n = team->size, me = team->my_pe;
    uint64_t epoch = ++team->pull_epoch;
    _Atomic uint64_t *flag = ushmemi_team_my_slot(team)->sync_flag;
    /* the program's stores into source, streaming ones included, first */
    atomic_thread_fence(memory_order_seq_cst);
    for (int k = 1; k < n; k++)
        ushmemi_flag_put(&flag[USHMEMI_FLAG_ARRIVE + me], epoch,
                         ushmemi_team_world_pe(team, me + k >= n ? me + k - n : me + k), call);
    memmove(dest + (size_t)me * nbytes, src + src_off, nbytes);
    unsigned todo = ((1u << n) - 1) & ~(1u << me);
    ushmemi_waiter_t w = USHMEMI_WAITER(call, team, NULL, -1);
    while (todo) {
        unsigned before = todo;
        for (int k = 1; k < n; k++) {
            int j = me + k >= n ? me + k - n : me + k;
            if (!(todo & 1u << j) ||
                atomic_load_explicit(&flag[USHMEMI_FLAG_ARRIVE + j], memory_order_acquire) < epoch)
                continue;
            int pe = ushmemi_team_world_pe(team, j);
            memcpy(dest + (size_t)j * nbytes, ushmemi_xlate(src + src_off, pe), nbytes);
            ushmemi_flag_put(&flag[USHMEMI_FLAG_READ + me], epoch, pe, call);
            todo &= ~(1u << j);
        }
        if (todo == before)
            ushmemi_wait_poll(&w);
    }
    ushmemi_wait_done(&w);
    for (int k = 1; k < n; k++) {
        int j = me + k >= n ? me + k - n : me + k;
        w.addr = &flag[USHMEMI_FLAG_READ + j];
        w.pe = ushmemi_team_world_pe(team, j);
        while (atomic_load_explicit(&flag[USHMEMI_FLAG_READ + j], memory_order_acquire) < epoch)
            ushmemi_wait_poll(&w);
        ushmemi_wait_done(&w);
    }
}

int ushmemi_broadcast(shmem_team_t team, void *dest, const void *src, size_t nbytes, int root,
                      const char *call)
{
    return bcast(team, dest, src, nbytes, root, 1, call);
}

int ushmemi_fcollect(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                     const char *call)
{
    int on_dev = USHMEMI_COLL_ON_DEVICE(dest, src), staged = ushmemi_coll_staged(team, on_dev);
    if (on_dev && !staged)
        return ushmemi_devmem->fcollect(team, dest, src, nbytes, call);
    if (!ushmemi_coll_team_ok(team, call))
        return USHMEM_EINVAL;
    USHMEMI_COLL_CHECK(team, call, .kind = USHMEMI_COLL_FCOLLECT, .count = nbytes);
    int n = team->size, me = team->my_pe;
    ushmemi_coll_sym(dest, ushmemi_coll_bytes((size_t)n, nbytes, call), "dest", call);
    ushmemi_coll_sym(src, nbytes, "source", call);
    if (staged)
        return ushmemi_coll_staged_fcollect(team, dest, src, nbytes, call);
    ushmemi_push_t p;
    if (ushmemi_push_begin(team, nbytes, 0, &p)) {
        /* Member j's block arrives in cell j. */
        for (int k = 1; k < n; k++)
            ushmemi_push_send(team, &p, me + k >= n ? me + k - n : me + k, me, src, nbytes, call);
        memmove((char *)dest + (size_t)me * nbytes, src, nbytes);
        for (int k = 1; k < n; k++) {
            int j = me + k >= n ? me + k - n : me + k;
            memcpy((char *)dest + (size_t)j * nbytes, ushmemi_push_recv(&p, j, call), nbytes);
        }
        ushmemi_push_end(team, &p, 1);
        return 0;
    }
    if (nbytes && n <= USHMEMI_FLAT_SYNC_PES && ushmemi_coll_mapped(team)) {
        pull_blocks(team, dest, src, 0, nbytes, call);
        return 0;
    }
    ushmemi_team_sync(team, call);
    if (nbytes)
        for (int k = 0; k < n; k++) {
            /* Start at this PE's own block so the PEs do not all read the
             * same source at the same time. */
            int j = me + k >= n ? me + k - n : me + k;
            char *d = (char *)dest + (size_t)j * nbytes;
            if (j == me)
                memmove(d, src, nbytes);
            else
                ushmemi_coll_get(d, src, team, j, nbytes, call);
        }
    ushmemi_team_sync(team, call);
    return 0;
}

int ushmemi_collect(shmem_team_t team, void *dest, const void *src, size_t nbytes, const char *call)
{
    int on_dev = USHMEMI_COLL_ON_DEVICE(dest, src), staged = ushmemi_coll_staged(team, on_dev);
    if (on_dev && !staged)
        ushmemi_fatal(call, "not supported on device memory yet; use host symmetric memory "
                            "(shmem_malloc_with_hints(size, SHMEMX_MALLOC_HOST))");
    if (!ushmemi_coll_team_ok(team, call))
        return USHMEM_EINVAL;
    USHMEMI_COLL_CHECK(team, call, .kind = USHMEMI_COLL_COLLECT, .count = nbytes);
    int n = team->size, me = team->my_pe;
    ushmemi_coll_sym(src, nbytes, "source", call);
    if (staged)
        return ushmemi_coll_staged_collect(team, dest, src, nbytes, call);
    uint64_t *word = &ushmemi_team_my_slot(team)->word[0];
    *word = nbytes;
    uint64_t *sizes = malloc((size_t)n * sizeof *sizes);
    if (!sizes)
        ushmemi_fatal(call, "out of memory");
    ushmemi_team_sync(team, call);
    /* Block sizes differ: my block goes after the blocks of members 0..j-1. */
    size_t total = 0;
    for (int j = 0; j < n; j++) {
        sizes[j] = ushmemi_coll_word(word, team, j, call);
        if (sizes[j] > SIZE_MAX - total)
            ushmemi_fatal(call, "collected size overflows");
        total += sizes[j];
    }
    ushmemi_coll_sym(dest, total, "dest", call);
    size_t off = 0;
    for (int j = 0; j < n; j++) {
        size_t sz = (size_t)sizes[j];
        if (sz && j == me)
            memmove((char *)dest + off, src, sz);
        else if (sz)
            ushmemi_coll_get((char *)dest + off, src, team, j, sz, call);
        off += sz;
    }
    free(sizes);
    ushmemi_team_sync(team, call);
    return 0;
}

int ushmemi_alltoall(shmem_team_t team, void *dest, const void *src, size_t nbytes,
                     const char *call)
{
    int on_dev = USHMEMI_COLL_ON_DEVICE(dest, src), staged = ushmemi_coll_staged(team, on_dev);
    if (on_dev && !staged)
        return ushmemi_devmem->alltoall(team, dest, src, nbytes, call);
    if (!ushmemi_coll_team_ok(team, call))
        return USHMEM_EINVAL;
    USHMEMI_COLL_CHECK(team, call, .kind = USHMEMI_COLL_ALLTOALL, .count = nbytes);
    int n = team->size, me = team->my_pe;
    size_t total = ushmemi_coll_bytes((size_t)n, nbytes, call);
    ushmemi_coll_sym(dest, total, "dest", call);
    ushmemi_coll_sym(src, total, "source", call);
    if (staged)
        return ushmemi_coll_staged_alltoall(team, dest, src, nbytes, call);
    ushmemi_push_t p;
    if (ushmemi_push_begin(team, nbytes, 0, &p)) {
        /* Block j of my source goes to cell `me` of member j; all are sent
         * before dest is written, so dest may be source. */
        for (int k = 1; k < n; k++) {
            int j = me + k >= n ? me + k - n : me + k;
            ushmemi_push_send(team, &p, j, me, (const char *)src + (size_t)j * nbytes, nbytes,
                              call);
        }
        memmove((char *)dest + (size_t)me * nbytes, (const char *)src + (size_t)me * nbytes,
                nbytes);
        for (int k = 1; k < n; k++) {
            int j = me + k >= n ? me + k - n : me + k;
            memcpy((char *)dest + (size_t)j * nbytes, ushmemi_push_recv(&p, j, call), nbytes);
        }
        ushmemi_push_end(team, &p, 1);
        return 0;
    }
    if (nbytes && n <= USHMEMI_FLAT_SYNC_PES && ushmemi_coll_mapped(team)) {
        pull_blocks(team, dest, src, (size_t)me * nbytes, nbytes, call);
        return 0;
    }
    ushmemi_team_sync(team, call);
    if (nbytes)
        for (int k = 0; k < n; k++) {
            int j = me + k >= n ? me + k - n : me + k;
            if (j == me)
                memmove((char *)dest + (size_t)j * nbytes, (const char *)src + (size_t)me * nbytes,
                        nbytes);
            else
                ushmemi_coll_get((char *)dest + (size_t)j * nbytes,
                                 (const char *)src + (size_t)me * nbytes, team, j, nbytes, call);
        }
    ushmemi_team_sync(team, call);
    return 0;
}

/* Bytes spanned by count elements of esize at stride (in elements). */
static size_t span(size_t count, ptrdiff_t stride, size_t esize, const char *call)
{
    if (count == 0)
        return 0;
    size_t s = (size_t)stride;
    if (count - 1 > (SIZE_MAX / esize - 1) / s)
        ushmemi_fatal(call, "strided extent overflows");
    return ((count - 1) * s + 1) * esize;
}

int ushmemi_alltoalls(shmem_team_t team, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                      size_t nelems, size_t esize, const char *call)
{
    int on_dev = USHMEMI_COLL_ON_DEVICE(dest, src), staged = ushmemi_coll_staged(team, on_dev);
    if (on_dev && !staged)
        ushmemi_fatal(call, "not supported on device memory yet; use host symmetric memory "
                            "(shmem_malloc_with_hints(size, SHMEMX_MALLOC_HOST))");
    if (!ushmemi_coll_team_ok(team, call))
        return USHMEM_EINVAL;
    USHMEMI_COLL_CHECK(team, call, .kind = USHMEMI_COLL_ALLTOALLS, .count = nelems, .esize = esize,
                       .dst = dst, .sst = sst);
    if (dst < 1 || sst < 1) {
        ushmemi_error(call, "strides must be at least 1 (dst %td, sst %td)", dst, sst);
        return USHMEM_EINVAL;
    }
    int n = team->size, me = team->my_pe;
    size_t all = ushmemi_coll_bytes((size_t)n, nelems, call);
    ushmemi_coll_sym(dest, span(all, dst, esize, call), "dest", call);
    ushmemi_coll_sym(src, span(all, sst, esize, call), "source", call);
    if (staged)
        return ushmemi_coll_staged_alltoalls(team, dest, src, dst, sst, nelems, esize, call);
    ushmemi_team_sync(team, call);
    /* Element e of the block member j sends me sits at source index
     * (me*nelems + e)*sst on j and lands at dest index (j*nelems + e)*dst. */
    size_t dstep = (size_t)dst * esize, sstep = (size_t)sst * esize;
    for (int k = 0; nelems && k < n; k++) {
        int j = me + k >= n ? me + k - n : me + k;
        const char *sym = (const char *)src + (size_t)me * nelems * sstep;
        const char *s = j == me ? sym : ushmemi_xlate(sym, ushmemi_team_world_pe(team, j));
        char *d = (char *)dest + (size_t)j * nelems * dstep;
        if (!s) { /* mpi hook: member not mapped here: get its elements */
            for (size_t e = 0; e < (dst == 1 && sst == 1 ? 1 : nelems); e++)
                ushmemi_coll_get(d + e * dstep, sym + e * sstep, team, j,
                                 dst == 1 && sst == 1 ? nelems * esize : esize, call);
            continue;
        }
        if (dst == 1 && sst == 1) {
            memmove(d, s, nelems * esize);
            continue;
        }
        for (size_t e = 0; e < nelems; e++)
            memcpy(d + e * dstep, s + e * sstep, esize);
    }
    ushmemi_team_sync(team, call);
    return 0;
}

/* ---- untyped team forms ---- */

USHMEMI_API int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,
                                   int PE_root)
{
    return bcast(team, dest, source, nelems, PE_root, 1, "shmem_broadcastmem");
}

USHMEMI_API int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return ushmemi_collect(team, dest, source, nelems, "shmem_collectmem");
}

USHMEMI_API int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return ushmemi_fcollect(team, dest, source, nelems, "shmem_fcollectmem");
}

USHMEMI_API int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return ushmemi_alltoall(team, dest, source, nelems, "shmem_alltoallmem");
}

USHMEMI_API int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                                   ptrdiff_t sst, size_t nelems)
{
    return ushmemi_alltoalls(team, dest, source, dst, sst, nelems, 1, "shmem_alltoallsmem");
}

/* ---- deprecated active-set forms (pSync is not needed) ---- */

static void must(int rc, const char *call)
{
    if (rc)
        ushmemi_fatal(call, "%s", ushmemi_strerror(rc));
}

/* The active set's team; a PE outside the set returns at once (no-op). */
#define ASET(team, call)                                                                           \
    shmem_team_t team = ushmemi_active_set_team(PE_start, logPE_stride, PE_size, call);            \
    if (team == SHMEM_TEAM_INVALID)                                                                \
        return;

/* The active-set broadcast leaves the root's dest alone. */
#define DEF_BCAST(bits)                                                                            \
    USHMEMI_API void shmem_broadcast##bits(void *dest, const void *source, size_t nelems,          \
                                           int PE_root, int PE_start, int logPE_stride,            \
                                           int PE_size, long *pSync)                               \
    {                                                                                              \
        static const char call[] = "shmem_broadcast" #bits;                                        \
        (void)pSync;                                                                               \
        ASET(team, call)                                                                           \
        must(bcast(team, dest, source, ushmemi_coll_bytes(nelems, bits / 8, call), PE_root, 0,     \
                   call),                                                                          \
             call);                                                                                \
    }

#define DEF_GATHER(name, prim, bits)                                                               \
    USHMEMI_API void shmem_##name##bits(void *dest, const void *source, size_t nelems,             \
                                        int PE_start, int logPE_stride, int PE_size, long *pSync)  \
    {                                                                                              \
        static const char call[] = "shmem_" #name #bits;                                           \
        (void)pSync;                                                                               \
        ASET(team, call)                                                                           \
        must(prim(team, dest, source, ushmemi_coll_bytes(nelems, bits / 8, call), call), call);    \
    }

#define DEF_ALLTOALLS(bits)                                                                        \
    USHMEMI_API void shmem_alltoalls##bits(void *dest, const void *source, ptrdiff_t dst,          \
                                           ptrdiff_t sst, size_t nelems, int PE_start,             \
                                           int logPE_stride, int PE_size, long *pSync)             \
    {                                                                                              \
        static const char call[] = "shmem_alltoalls" #bits;                                        \
        (void)pSync;                                                                               \
        ASET(team, call)                                                                           \
        must(ushmemi_alltoalls(team, dest, source, dst, sst, nelems, bits / 8, call), call);       \
    }

DEF_BCAST(32)
DEF_BCAST(64)
DEF_GATHER(collect, ushmemi_collect, 32)
DEF_GATHER(collect, ushmemi_collect, 64)
DEF_GATHER(fcollect, ushmemi_fcollect, 32)
DEF_GATHER(fcollect, ushmemi_fcollect, 64)
DEF_GATHER(alltoall, ushmemi_alltoall, 32)
DEF_GATHER(alltoall, ushmemi_alltoall, 64)
DEF_ALLTOALLS(32)
DEF_ALLTOALLS(64)

/* pshmem_ profiling names */
USHMEMI_PSHMEM(shmem_broadcastmem)
USHMEMI_PSHMEM(shmem_collectmem)
USHMEMI_PSHMEM(shmem_fcollectmem)
USHMEMI_PSHMEM(shmem_alltoallmem)
USHMEMI_PSHMEM(shmem_alltoallsmem)
USHMEMI_PSHMEM(shmem_broadcast32)
USHMEMI_PSHMEM(shmem_broadcast64)
USHMEMI_PSHMEM(shmem_collect32)
USHMEMI_PSHMEM(shmem_collect64)
USHMEMI_PSHMEM(shmem_fcollect32)
USHMEMI_PSHMEM(shmem_fcollect64)
USHMEMI_PSHMEM(shmem_alltoall32)
USHMEMI_PSHMEM(shmem_alltoall64)
USHMEMI_PSHMEM(shmem_alltoalls32)
USHMEMI_PSHMEM(shmem_alltoalls64)
