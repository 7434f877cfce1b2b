/* The host symmetric heap: one memfd per PE (internal region, then the user
 * arena), and the collective allocation routines over it.
 *
 * memfd rather than shm_open: the memory has no name in the file system, so
 * nothing is left behind in /dev/shm whatever way the job ends. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/prims.h"
#include "heap/alloc.h"
#include "heap/heap.h"
#include "transport/cuda/devmem.h"

static ushmemi_alloc_t *arena;
static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;

#define HEAP_MIN_ALIGN 64
#define HOST_HEAP      "symmetric heap", "SHMEM_SYMMETRIC_SIZE" /* for the failure lines */
/* The user arena starts on this boundary in every PE, so shmem_align can honour
 * any alignment up to it with the same offset everywhere. */
#define HEAP_ARENA_ALIGN ((size_t)1 << 30)

/* Map the memfd so that base + USHMEMI_INTERNAL_SIZE is HEAP_ARENA_ALIGN-aligned:
 * reserve address space with room to slide, map inside it, trim the rest. */
static void *map_arena_aligned(size_t len, int fd)
{
    size_t slack = HEAP_ARENA_ALIGN;
    char *res =
        mmap(NULL, len + slack, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (res == MAP_FAILED)
        return MAP_FAILED;
    uintptr_t user = ((uintptr_t)res + USHMEMI_INTERNAL_SIZE + slack - 1) & ~(uintptr_t)(slack - 1);
    char *base = (char *)(user - USHMEMI_INTERNAL_SIZE);
    if (mmap(base, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, fd, 0) ==
        MAP_FAILED) {
        munmap(res, len + slack);
        return MAP_FAILED;
    }
    if (base > res)
        munmap(res, (size_t)(base - res));
    if (res + len + slack > base + len)
        munmap(base + len, (size_t)(res + len + slack - (base + len)));
    return base;
}

int ushmemi_heap_init(const char *call)
{
    ushmemi_seg_t *seg = &ushmemi_g.seg[USHMEMI_SEG_HEAP];
    size_t user = ushmemi_env.heap_size;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t total;
    int rc;

    if (user == 0 || user > SIZE_MAX - USHMEMI_INTERNAL_SIZE - page) {
        ushmemi_error(call, "symmetric heap size %zu is not usable (SHMEM_SYMMETRIC_SIZE)", user);
        return USHMEM_EINVAL;
    }
    total = (USHMEMI_INTERNAL_SIZE + user + page - 1) & ~(page - 1);
    int fd = memfd_create("ushmem-heap", MFD_CLOEXEC);
    if (fd < 0) {
        ushmemi_error(call, "memfd_create: %s", strerror(errno));
        return USHMEM_ESYS;
    }
    if (ftruncate(fd, (off_t)total) != 0) {
        ushmemi_error(call, "cannot size the heap to %zu bytes: %s", total, strerror(errno));
        rc = USHMEM_ENOMEM;
        goto close_fd;
    }
    void *base = map_arena_aligned(total, fd);
    if (base == MAP_FAILED) {
        ushmemi_error(call, "cannot map a %zu-byte heap: %s", total, strerror(errno));
        rc = USHMEM_ENOMEM;
        goto close_fd;
    }
    size_t collective;
    rc = ushmemi_local_split(USHMEMI_LOCAL_HOST, (char *)base + USHMEMI_INTERNAL_SIZE,
                             total - USHMEMI_INTERNAL_SIZE, HEAP_MIN_ALIGN, &collective, call);
    if (rc)
        goto unmap;
    rc = ushmemi_alloc_create(&arena, collective, HEAP_MIN_ALIGN);
    if (rc)
        goto unmap;
    rc = ushmemi_buffers_init();
    if (rc)
        goto destroy_arena;
    seg->peer = calloc((size_t)ushmemi_g.n_pes, sizeof *seg->peer);
    if (!seg->peer) {
        rc = USHMEM_ENOMEM;
        goto destroy_reg;
    }
    seg->base = base;
    seg->size = total;
    seg->kind = USHMEMI_MEM_HOST;
    seg->fd = fd;
    seg->peer[ushmemi_g.my_pe] = base;
    ushmemi_g.sync = base;
    ushmemi_g.barrier_epoch = 0;
    return 0;

destroy_reg:
    ushmemi_buffers_fini();
destroy_arena:
    ushmemi_alloc_destroy(arena);
    arena = NULL;
unmap:
    ushmemi_local_fini(USHMEMI_LOCAL_HOST);
    munmap(base, total);
close_fd:
    close(fd);
    return rc;
}

void ushmemi_heap_fini(void)
{
    ushmemi_seg_t *seg = &ushmemi_g.seg[USHMEMI_SEG_HEAP];
    if (!seg->base)
        return;
    if (seg->fd >= 0)
        close(seg->fd);
    munmap(seg->base, seg->size);
    free(seg->peer);
    memset(seg, 0, sizeof *seg);
    seg->fd = -1;
    ushmemi_g.sync = NULL;
    ushmemi_buffers_fini();
    ushmemi_alloc_destroy(arena);
    arena = NULL;
    ushmemi_local_fini(USHMEMI_LOCAL_HOST);
}

static char *arena_base(void)
{
    return ushmemi_g.seg[USHMEMI_SEG_HEAP].base + USHMEMI_INTERNAL_SIZE;
}

/* Allocation with the spec's semantics: collective, identical offsets on every
 * PE (the allocator is deterministic), barrier before returning so no PE can
 * touch the new object on a peer that has not allocated it yet. */
/* SHMEM_DEBUG: every PE must ask for the same size and alignment, or the heaps
 * silently stop being symmetric. Each PE publishes its request in its internal
 * region, with the number of this allocation call (word 2; 0 outside one, so a
 * PE whose barrier or other collective met this call's barrier is named as not
 * allocating rather than by its previous request); after a barrier each
 * compares with every peer it maps; a second barrier keeps the next call from
 * overwriting a request still being read. */
static void debug_check_request(size_t size, size_t align, const char *call)
{
    static _Atomic uint64_t calls;
    _Atomic uint64_t *mine = ushmemi_g.sync->alloc_check;
    uint64_t nth = atomic_fetch_add(&calls, 1) + 1;
    atomic_store(&mine[0], size);
    atomic_store(&mine[1], align);
    atomic_store(&mine[2], nth);
    ushmemi_sync_world();
    for (int pe = 0; pe < ushmemi_g.n_pes; pe++) {
        const ushmemi_sync_region_t *peer = ushmemi_peer_sync(pe);
        if (!peer)
            continue;
        uint64_t pnth = atomic_load(&peer->alloc_check[2]);
        uint64_t psize = atomic_load(&peer->alloc_check[0]);
        uint64_t palign = atomic_load(&peer->alloc_check[1]);
        if (pnth == 0)
            ushmemi_fatal(call,
                          "PE %d is not in a symmetric allocation (it is in another collective "
                          "call) while this PE asks for %zu bytes: every PE must make the same "
                          "allocation calls in the same order",
                          pe, size);
        if (pnth != nth)
            ushmemi_fatal(call,
                          "PE %d is in its symmetric allocation call %llu, this PE in its call "
                          "%llu: every PE must make the same allocation calls in the same order",
                          pe, (unsigned long long)pnth, (unsigned long long)nth);
        if (psize != size || palign != align)
            ushmemi_fatal(call,
                          "PE %d asked for %llu bytes (alignment %llu), this PE for %zu (%zu): "
                          "symmetric allocations must be the same on every PE",
                          pe, (unsigned long long)psize, (unsigned long long)palign, size, align);
    }
    ushmemi_sync_world();
    atomic_store(&mine[2], 0);
}

static void *heap_alloc(size_t size, size_t align, const char *call)
{
    size_t off = 0;
    int rc;

    USHMEMI_CHECK_INIT(call);
    if (ushmemi_env.debug && ushmemi_g.n_pes > 1)
        debug_check_request(size, align, call);
    if (size == 0) {
        ushmemi_sync_world();
        return NULL;
    }
    pthread_mutex_lock(&heap_lock);
    rc = ushmemi_alloc_alloc(arena, size, align, &off);
    pthread_mutex_unlock(&heap_lock);
    ushmemi_sync_world();
    if (rc) {
        ushmemi_heap_alloc_failed(rc, arena, size, align, HOST_HEAP, call);
        return NULL;
    }
    return arena_base() + off;
}

void ushmemi_heap_alloc_failed(int rc, const ushmemi_alloc_t *a, size_t size, size_t align,
                               const char *heap, const char *size_var, const char *call)
{
    if (rc == USHMEM_ENOMEM)
        ushmemi_error(call,
                      "%s exhausted: %zu bytes requested, largest free block %zu of %zu free "
                      "(raise %s)",
                      heap, size, ushmemi_alloc_largest_free(a), ushmemi_alloc_bytes_free(a),
                      size_var);
    else
        ushmemi_error(call, "invalid request: size %zu, alignment %zu", size, align);
}

void ushmemi_heap_resize_failed(int rc, const void *ptr, size_t size, const char *heap,
                                const char *size_var, const char *call)
{
    if (rc == USHMEM_ENOMEM)
        ushmemi_error(call, "cannot resize %p to %zu bytes: the %s is exhausted (raise %s)", ptr,
                      size, heap, size_var);
    else if (rc != USHMEM_ENOTSYM && rc != USHMEM_ENOTFOUND) /* those: the offset check said why */
        ushmemi_error(call, "cannot resize %p to %zu bytes: %s", ptr, size, ushmemi_strerror(rc));
}

/* Offset in an arena of a pointer an allocation returned, or report why it is
 * not one. Shared by the host heap and the device heap (devheap.c). */
int ushmemi_arena_offset(const ushmemi_alloc_t *a, const char *base, size_t size, const char *what,
                         const void *ptr, size_t *off, const char *call)
{
    uintptr_t p = (uintptr_t)ptr, b = (uintptr_t)base;
    size_t live;
    if (p < b || p - b >= size) {
        ushmemi_error(call, "%p is not on the %s", ptr, what);
        return USHMEM_ENOTSYM;
    }
    if (ushmemi_alloc_size_of(a, p - b, &live) != 0) {
        ushmemi_error(call, "%p is not a live symmetric allocation (double free?)", ptr);
        return USHMEM_ENOTFOUND;
    }
    *off = p - b;
    return 0;
}

static int heap_offset(const void *ptr, size_t *off, const char *call)
{
    return ushmemi_arena_offset(arena, arena_base(),
                                ushmemi_g.seg[USHMEMI_SEG_HEAP].size - USHMEMI_INTERNAL_SIZE,
                                "symmetric heap", ptr, off, call);
}

/* cuda hook: with a CUDA device bound, allocations default to the device heap
 * (src/heap/devheap.c); SHMEMX_MALLOC_HOST asks for host memory. */
#define DEVICE_DEFAULT() USHMEMI_UNLIKELY(ushmemi_g.cuda_active)

USHMEMI_API void *shmem_malloc(size_t size)
{
    if (DEVICE_DEFAULT())
        return ushmemi_devheap_alloc(size, 1, 0, "shmem_malloc");
    return heap_alloc(size, 1, "shmem_malloc");
}

USHMEMI_API void *shmem_malloc_with_hints(size_t size, long hints)
{
    /* Atomics/signal hints need nothing special on mapped memory; the memory
     * kind hints choose the heap (default: as shmem_malloc). */
    int device = ushmemi_hints_device(hints);
    if (device && ushmemi_g.cuda_active)
        return ushmemi_devheap_alloc(size, 1, 0, "shmem_malloc_with_hints");
    if (device)
        ushmemi_debug("shmem_malloc_with_hints",
                      "SHMEMX_MALLOC_DEVICE requested but no device heap; using host memory");
    return heap_alloc(size, 1, "shmem_malloc_with_hints");
}

USHMEMI_API void *shmem_calloc(size_t count, size_t size)
{
    if (count && size > SIZE_MAX / count) {
        USHMEMI_CHECK_INIT("shmem_calloc");
        ushmemi_sync_world();
        ushmemi_error("shmem_calloc", "count %zu x size %zu overflows", count, size);
        return NULL;
    }
    if (DEVICE_DEFAULT())
        return ushmemi_devheap_alloc(count * size, 1, 1, "shmem_calloc");
    void *p = heap_alloc(count * size, 1, "shmem_calloc");
    if (p)
        memset(p, 0, count * size);
    /* Nobody may write into a peer's block before that peer has zeroed it. */
    if (p)
        ushmemi_sync_world();
    return p;
}

USHMEMI_API void *shmem_align(size_t alignment, size_t size)
{
    if (alignment == 0 || (alignment & (alignment - 1)) || alignment > HEAP_ARENA_ALIGN) {
        USHMEMI_CHECK_INIT("shmem_align");
        ushmemi_sync_world();
        ushmemi_error("shmem_align", "alignment %zu must be a power of two no larger than %zu",
                      alignment, HEAP_ARENA_ALIGN);
        return NULL;
    }
    if (DEVICE_DEFAULT())
        return ushmemi_devheap_alloc(size, alignment, 0, "shmem_align");
    return heap_alloc(size, alignment, "shmem_align");
}

USHMEMI_API void shmem_free(void *ptr)
{
    static const char call[] = "shmem_free";
    size_t off;
    USHMEMI_CHECK_INIT(call);
    /* Barrier first: peers may still be accessing the block. */
    ushmemi_quiet(SHMEM_CTX_DEFAULT);
    ushmemi_sync_world();
    if (!ptr)
        return;
    if (USHMEMI_UNLIKELY(ushmemi_local_has(ptr))) {
        ushmemi_error(call, "%p is a local block: free it with shmemx_free_local", ptr);
        return;
    }
    if (USHMEMI_UNLIKELY(ushmemi_g.cuda_active) && ushmemi_devheap_has(ptr)) { /* cuda hook */
        ushmemi_devheap_free(ptr, call);
        return;
    }
    pthread_mutex_lock(&heap_lock);
    if (heap_offset(ptr, &off, call) == 0)
        ushmemi_alloc_free(arena, off);
    pthread_mutex_unlock(&heap_lock);
}

USHMEMI_API void *shmem_realloc(void *ptr, size_t size)
{
    static const char call[] = "shmem_realloc";
    size_t off, old_size, new_off;
    int moved = 0, rc;

    USHMEMI_CHECK_INIT(call);
    if (!ptr && DEVICE_DEFAULT())
        return ushmemi_devheap_alloc(size, 1, 0, call);
    if (!ptr)
        return heap_alloc(size, 1, call);
    if (size == 0) {
        shmem_free(ptr);
        return NULL;
    }
    ushmemi_quiet(SHMEM_CTX_DEFAULT);
    ushmemi_sync_world();
    if (USHMEMI_UNLIKELY(ushmemi_local_has(ptr))) {
        ushmemi_error(call, "%p is a local block: shmem_realloc takes collective blocks only", ptr);
        ushmemi_sync_world();
        return NULL;
    }
    if (USHMEMI_UNLIKELY(ushmemi_g.cuda_active) && ushmemi_devheap_has(ptr)) /* cuda hook */
        return ushmemi_devheap_realloc(ptr, size, call);
    pthread_mutex_lock(&heap_lock);
    rc = heap_offset(ptr, &off, call);
    if (rc == 0) {
        ushmemi_alloc_size_of(arena, off, &old_size);
        rc = ushmemi_alloc_realloc(arena, off, size, &new_off, &moved);
    }
    if (rc == 0 && moved) {
        memmove(arena_base() + new_off, ptr, old_size < size ? old_size : size);
        ushmemi_alloc_free(arena, off);
    }
    pthread_mutex_unlock(&heap_lock);
    ushmemi_sync_world();
    if (rc) {
        ushmemi_heap_resize_failed(rc, ptr, size, HOST_HEAP, call);
        return NULL;
    }
    return arena_base() + new_off;
}

USHMEMI_API void *shmalloc(size_t size)
{
    if (DEVICE_DEFAULT())
        return ushmemi_devheap_alloc(size, 1, 0, "shmalloc");
    return heap_alloc(size, 1, "shmalloc");
}

USHMEMI_API void shfree(void *ptr)
{
    shmem_free(ptr);
}

USHMEMI_API void *shrealloc(void *ptr, size_t size)
{
    return shmem_realloc(ptr, size);
}

USHMEMI_API void *shmemalign(size_t alignment, size_t size)
{
    return shmem_align(alignment, size);
}

/* pshmem_ profiling names */
USHMEMI_PSHMEM(shmem_malloc)
USHMEMI_PSHMEM(shmem_malloc_with_hints)
USHMEMI_PSHMEM(shmem_calloc)
USHMEMI_PSHMEM(shmem_align)
USHMEMI_PSHMEM(shmem_free)
USHMEMI_PSHMEM(shmem_realloc)
