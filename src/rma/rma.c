/* Remote memory access. For peers whose segments are mapped here (shm) a put
 * is a memcpy into the peer's copy and a get a memcpy out of it; the calls
 * complete before returning, so the _nbi forms are the blocking ones and quiet
 * only has to order what the CPU may still hold in its store buffers. */
#include <string.h>

#include "core/core.h"
#include "core/prims.h"
#include "core/team.h"
#include "transport/transport.h"

_Noreturn static void rma_fail(const void *addr, size_t n, int pe, const char *call)
{
    if (!ushmemi_g.initialized)
        ushmemi_fatal(call, "OpenSHMEM library not initialized");
    if (pe < 0 || pe >= ushmemi_g.n_pes)
        ushmemi_fatal(call, "PE %d out of range (n_pes %d)", pe, ushmemi_g.n_pes);
    for (int s = 0; s < USHMEMI_NSEG; s++) {
        const ushmemi_seg_t *seg = &ushmemi_g.seg[s];
        uintptr_t off = (uintptr_t)addr - (uintptr_t)seg->base;
        if (off < seg->size && n > seg->size - off)
            ushmemi_fatal(call, "%zu bytes at %p run past the end of the symmetric %s", n, addr,
                          s == USHMEMI_SEG_HEAP      ? "heap"
                          : s == USHMEMI_SEG_DEVHEAP ? "device heap"
                                                     : "data segment");
        if (off < seg->size && s == USHMEMI_SEG_DEVHEAP && ushmemi_devmem &&
            ushmemi_devmem->unmapped_why(pe))
            ushmemi_fatal(call, "%s", ushmemi_devmem->unmapped_why(pe));
        if (off < seg->size)
            ushmemi_fatal(call, "PE %d's memory is not mapped in this process (transport %s)", pe,
                          ushmemi_pe_transport_name(pe));
    }
    ushmemi_fatal(call, "%p is not a symmetric address (not on the symmetric heap nor a global)",
                  addr);
}

/* The peer's copy of [addr, addr+n), or a fatal error naming what is wrong. */
static inline char *remote_addr(const void *addr, size_t n, int pe, const char *call)
{
    if (USHMEMI_LIKELY((unsigned)pe < (unsigned)ushmemi_g.n_pes)) {
        for (int s = 0; s < USHMEMI_NSEG; s++) {
            const ushmemi_seg_t *seg = &ushmemi_g.seg[s];
            uintptr_t off = (uintptr_t)addr - (uintptr_t)seg->base;
            if (off < seg->size) {
                if (USHMEMI_LIKELY(n <= seg->size - off && seg->peer[pe]))
                    return seg->peer[pe] + off;
                if (n <= seg->size - off && (ushmemi_remote_tl || ushmemi_proxy_tl))
                    return NULL; /* mpi hook: not mapped here: rma_remote() moves it */
                break;
            }
        }
    }
    rma_fail(addr, n, pe, call);
}

/* pe's memory is not mapped here (remote_addr() said NULL): move the bytes
 * with the transport that reaches that memory on pe (host: mpi; device heap:
 * the proxy). Blocking unless nbi (then: at quiet). */
static const ushmemi_transport_ops_t *rma_remote(int is_put, void *sym, void *local, size_t n,
                                                 int pe, int nbi, const char *call)
{
    const ushmemi_transport_ops_t *t = ushmemi_route(sym, pe);
    int rc = !t || !t->put ? USHMEM_EUNREACH
             : is_put      ? t->put(sym, local, n, pe, nbi)
                           : t->get(local, sym, n, pe, nbi);
    if (USHMEMI_UNLIKELY(rc))
        ushmemi_fatal(
            call, "PE %d (transport %s): %s", pe, t ? t->name : ushmemi_pe_transport_name(pe),
            rc == USHMEM_EUNREACH && ushmemi_devheap_has(sym)
                ? "its device heap is not reachable from here"
            : rc == USHMEM_EUNSUPPORTED ? "only its host heap and globals are reachable from here"
                                        : ushmemi_strerror(rc));
    return t;
}

/* Strided blocks to or from an unmapped peer, complete on return. */
static void rma_remote_strided(int is_put, char *sym, char *local, size_t sym_step,
                               size_t local_step, size_t width, size_t nblocks, int pe,
                               const char *call)
{
    const ushmemi_transport_ops_t *t = NULL;
    for (size_t b = 0; b < nblocks; b++)
        t = rma_remote(is_put, sym + b * sym_step, local + b * local_step, width, pe, 1, call);
    if (t && t->quiet())
        ushmemi_fatal(call, "completing strided transfers to PE %d failed", pe);
}

void ushmemi_put(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe,
                 const char *call)
{
    pe = ushmemi_ctx_pe(ctx, pe, call);
    if (USHMEMI_UNLIKELY(nbytes == 0))
        return;
    char *r = remote_addr(dest, nbytes, pe, call);
    if (USHMEMI_UNLIKELY(!r)) { /* mpi hook */
        rma_remote(1, dest, (void *)src, nbytes, pe, 0, call);
        return;
    }
    if (USHMEMI_UNLIKELY(ushmemi_devmem) && /* device memory on either side */
        ushmemi_devmem->put(r, src, nbytes, ushmemi_devheap_has(dest), 0, call))
        return;
    memcpy(r, src, nbytes);
}

void ushmemi_get(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe,
                 const char *call)
{
    pe = ushmemi_ctx_pe(ctx, pe, call);
    if (USHMEMI_UNLIKELY(nbytes == 0))
        return;
    const char *r = remote_addr(src, nbytes, pe, call);
    if (USHMEMI_UNLIKELY(!r)) { /* mpi hook */
        rma_remote(0, (void *)src, dest, nbytes, pe, 0, call);
        return;
    }
    if (USHMEMI_UNLIKELY(ushmemi_devmem) && /* device memory on either side */
        ushmemi_devmem->get(dest, r, nbytes, ushmemi_devheap_has(src), 0, call))
        return;
    memcpy(dest, r, nbytes);
}

void ushmemi_put_nbi(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe,
                     const char *call)
{
    if (USHMEMI_UNLIKELY(ushmemi_remote_tl) && nbytes) { /* mpi hook: unmapped: done at quiet */
        int wpe = ushmemi_ctx_pe(ctx, pe, call);
        if (!remote_addr(dest, nbytes, wpe, call)) {
            rma_remote(1, dest, (void *)src, nbytes, wpe, 1, call);
            return;
        }
    }
    ushmemi_put(ctx, dest, src, nbytes, pe, call);
}

void ushmemi_get_nbi(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes, int pe,
                     const char *call)
{
    if (USHMEMI_UNLIKELY(ushmemi_remote_tl) && nbytes) { /* mpi hook: unmapped: done at quiet */
        int wpe = ushmemi_ctx_pe(ctx, pe, call);
        if (!remote_addr(src, nbytes, wpe, call)) {
            rma_remote(0, (void *)src, dest, nbytes, wpe, 1, call);
            return;
        }
    }
    ushmemi_get(ctx, dest, src, nbytes, pe, call);
}

/* Element copies of 1/2/4/8 bytes are single loads/stores, so a concurrent
 * reader polling one element never sees it torn. */
static inline void copy_elem(void *d, const void *s, size_t esize)
{
    switch (esize) {
    case 1: __atomic_store_n((uint8_t *)d, *(const uint8_t *)s, __ATOMIC_RELAXED); break;
    case 2: {
        uint16_t v;
        memcpy(&v, s, 2);
        __atomic_store_n((uint16_t *)d, v, __ATOMIC_RELAXED);
        break;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, s, 4);
        __atomic_store_n((uint32_t *)d, v, __ATOMIC_RELAXED);
        break;
    }
    case 8: {
        uint64_t v;
        memcpy(&v, s, 8);
        __atomic_store_n((uint64_t *)d, v, __ATOMIC_RELAXED);
        break;
    }
    default: memcpy(d, s, esize);
    }
}

static inline void load_elem(void *d, const void *s, size_t esize)
{
    switch (esize) {
    case 1: *(uint8_t *)d = __atomic_load_n((const uint8_t *)s, __ATOMIC_RELAXED); break;
    case 2: {
        uint16_t v = __atomic_load_n((const uint16_t *)s, __ATOMIC_RELAXED);
        memcpy(d, &v, 2);
        break;
    }
    case 4: {
        uint32_t v = __atomic_load_n((const uint32_t *)s, __ATOMIC_RELAXED);
        memcpy(d, &v, 4);
        break;
    }
    case 8: {
        uint64_t v = __atomic_load_n((const uint64_t *)s, __ATOMIC_RELAXED);
        memcpy(d, &v, 8);
        break;
    }
    default: memcpy(d, s, esize);
    }
}

void ushmemi_p(shmem_ctx_t ctx, void *dest, const void *value, size_t esize, int pe,
               const char *call)
{
    pe = ushmemi_ctx_pe(ctx, pe, call);
    char *r = remote_addr(dest, esize, pe, call);
    if (USHMEMI_UNLIKELY(!r)) { /* mpi hook */
        rma_remote(1, dest, (void *)value, esize, pe, 0, call);
        return;
    }
    if (USHMEMI_UNLIKELY(ushmemi_devmem) && /* device memory */
        ushmemi_devmem->put(r, value, esize, ushmemi_devheap_has(dest), 0, call))
        return;
    if (USHMEMI_LIKELY(((uintptr_t)r & (esize - 1)) == 0))
        copy_elem(r, value, esize);
    else
        memcpy(r, value, esize);
}

void ushmemi_get_elem(shmem_ctx_t ctx, void *out, const void *src, size_t esize, int pe,
                      const char *call)
{
    pe = ushmemi_ctx_pe(ctx, pe, call);
    const char *r = remote_addr(src, esize, pe, call);
    if (USHMEMI_UNLIKELY(!r)) { /* mpi hook */
        rma_remote(0, (void *)src, out, esize, pe, 0, call);
        return;
    }
    if (USHMEMI_UNLIKELY(ushmemi_devmem) && /* device memory */
        ushmemi_devmem->get(out, r, esize, ushmemi_devheap_has(src), 0, call))
        return;
    if (USHMEMI_LIKELY(((uintptr_t)r & (esize - 1)) == 0))
        load_elem(out, r, esize);
    else
        memcpy(out, r, esize);
}

/* Extent in bytes of a strided access, for the bounds check. */
static size_t strided_span(ptrdiff_t stride, size_t count, size_t unit, const char *call)
{
    if (count == 0)
        return 0;
    if (stride <= 0)
        ushmemi_fatal(call, "stride %td must be positive", stride);
    size_t s = (size_t)stride;
    if (count - 1 > (SIZE_MAX - unit) / s / unit)
        ushmemi_fatal(call, "strided extent overflows");
    return ((count - 1) * s + 1) * unit;
}

void ushmemi_iput(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                  size_t nelems, size_t esize, int pe, const char *call)
{
    ushmemi_ibput(ctx, dest, src, dst, sst, 1, nelems, esize, pe, call);
}

void ushmemi_iget(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                  size_t nelems, size_t esize, int pe, const char *call)
{
    ushmemi_ibget(ctx, dest, src, dst, sst, 1, nelems, esize, pe, call);
}

void ushmemi_ibput(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                   size_t bsize, size_t nblocks, size_t esize, int pe, const char *call)
{
    pe = ushmemi_ctx_pe(ctx, pe, call);
    if (nblocks == 0 || bsize == 0)
        return;
    size_t span = strided_span(dst, nblocks, esize, call) + (bsize - 1) * esize;
    strided_span(sst, nblocks, esize, call);
    char *r = remote_addr(dest, span, pe, call);
    if (USHMEMI_UNLIKELY(!r)) { /* mpi hook */
        rma_remote_strided(1, dest, (char *)src, (size_t)dst * esize, (size_t)sst * esize,
                           bsize * esize, nblocks, pe, call);
        return;
    }
    if (USHMEMI_UNLIKELY(ushmemi_devmem) && /* device memory */
        ushmemi_devmem->strided(r, (size_t)dst * esize, src, (size_t)sst * esize, bsize * esize,
                                nblocks, ushmemi_devheap_has(dest), call))
        return;
    const char *l = src;
    for (size_t b = 0; b < nblocks; b++) {
        char *d = r + b * (size_t)dst * esize;
        const char *s = l + b * (size_t)sst * esize;
        if (bsize == 1)
            copy_elem(d, s, esize);
        else
            memcpy(d, s, bsize * esize);
    }
}

void ushmemi_ibget(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                   size_t bsize, size_t nblocks, size_t esize, int pe, const char *call)
{
    pe = ushmemi_ctx_pe(ctx, pe, call);
    if (nblocks == 0 || bsize == 0)
        return;
    size_t span = strided_span(sst, nblocks, esize, call) + (bsize - 1) * esize;
    strided_span(dst, nblocks, esize, call);
    const char *r = remote_addr(src, span, pe, call);
    if (USHMEMI_UNLIKELY(!r)) { /* mpi hook */
        rma_remote_strided(0, (char *)src, dest, (size_t)sst * esize, (size_t)dst * esize,
                           bsize * esize, nblocks, pe, call);
        return;
    }
    if (USHMEMI_UNLIKELY(ushmemi_devmem) && /* device memory */
        ushmemi_devmem->strided(dest, (size_t)dst * esize, r, (size_t)sst * esize, bsize * esize,
                                nblocks, ushmemi_devheap_has(src), call))
        return;
    char *l = dest;
    for (size_t b = 0; b < nblocks; b++) {
        char *d = l + b * (size_t)dst * esize;
        const char *s = r + b * (size_t)sst * esize;
        if (bsize == 1)
            load_elem(d, s, esize);
        else
            memcpy(d, s, bsize * esize);
    }
}

/* Stores to mapped memory are complete when the call returns; a full fence
 * also drains the non-temporal stores large memcpys use, so a later flag
 * store cannot overtake the data. */
void ushmemi_quiet(shmem_ctx_t ctx)
{
    (void)ctx;
    if (USHMEMI_UNLIKELY(ushmemi_devmem)) /* device memory: its nbi copies */
        ushmemi_devmem->quiet();
    if (USHMEMI_UNLIKELY(ushmemi_remote_tl) && ushmemi_remote_tl->quiet()) /* mpi hook */
        ushmemi_fatal("shmem_quiet", "completing transfers to unmapped peers failed");
    if (USHMEMI_UNLIKELY(ushmemi_proxy_tl) && ushmemi_proxy_tl != ushmemi_remote_tl &&
        ushmemi_proxy_tl->quiet())
        ushmemi_fatal("shmem_quiet", "completing transfers through the proxy failed");
    atomic_thread_fence(memory_order_seq_cst);
}

void ushmemi_fence(shmem_ctx_t ctx)
{
    (void)ctx;
    /* mpi hook: MPI orders nothing between flushes, so fence flushes too */
    if (USHMEMI_UNLIKELY(ushmemi_remote_tl) && ushmemi_remote_tl->fence())
        ushmemi_fatal("shmem_fence", "ordering transfers to unmapped peers failed");
    if (USHMEMI_UNLIKELY(ushmemi_proxy_tl) && ushmemi_proxy_tl != ushmemi_remote_tl &&
        ushmemi_proxy_tl->fence())
        ushmemi_fatal("shmem_fence", "ordering transfers through the proxy failed");
    atomic_thread_fence(memory_order_seq_cst);
}

USHMEMI_API void shmem_quiet(void)
{
    ushmemi_quiet(SHMEM_CTX_DEFAULT);
}

USHMEMI_API void shmem_fence(void)
{
    ushmemi_fence(SHMEM_CTX_DEFAULT);
}

USHMEMI_API void *shmem_ptr(const void *dest, int pe)
{
    if (!ushmemi_g.initialized || pe < 0 || pe >= ushmemi_g.n_pes)
        return NULL;
    return ushmemi_xlate(dest, pe);
}

USHMEMI_API int shmemx_heap_bases(const void *sym_addr, void **bases)
{
    USHMEMI_CHECK_INIT_STATUS("shmemx_heap_bases");
    if (!bases || ushmemi_seg_of(sym_addr, 1) < 0) {
        ushmemi_error("shmemx_heap_bases", "%p is not a symmetric address", sym_addr);
        return SHMEMX_ERR_INVALID;
    }
    for (int pe = 0; pe < ushmemi_g.n_pes; pe++)
        bases[pe] = ushmemi_xlate(sym_addr, pe);
    return SHMEMX_SUCCESS;
}

/* pshmem_ profiling names */
USHMEMI_PSHMEM(shmem_quiet)
USHMEMI_PSHMEM(shmem_fence)
USHMEMI_PSHMEM(shmem_ptr)
