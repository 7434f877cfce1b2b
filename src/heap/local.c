/* Local blocks: allocations one PE makes alone (shmemx_malloc_local), from a
 * part at the top of each symmetric heap set aside at init
 * (USHMEM_LOCAL_HEAP_SIZE for the host heap, USHMEM_DEVICE_LOCAL_HEAP_SIZE for
 * the device heap). The collective arena below it keeps its deterministic
 * offsets; a local block sits at whatever offset this PE's own allocator gave
 * it, so peers reach it once they learn that offset (shmemx_heap_offset here,
 * shmemx_heap_addr there): every peer that maps a heap maps all of it.
 *
 * This is what a framework that allocates outside collective calls needs (the
 * torch symmetric-memory backend: torch's allocator is not collective and frees
 * from garbage collection): allocation and free never wait for a peer. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/core.h"
#include "core/prims.h"
#include "heap/alloc.h"
#include "heap/heap.h"

/* The local part starts on this boundary: blocks may ask for alignments up to it. */
#define LOCAL_ALIGN ((size_t)SHMEMX_LOCAL_ALIGN_MAX)

typedef struct {
    ushmemi_alloc_t *a; /* NULL: no local part in this heap */
    char *user;         /* the heap's user part: offsets count from here */
    size_t user_size;
    char *base; /* the local part: [base, base + size) */
    size_t size;
} local_part_t;

static local_part_t parts[2]; /* USHMEMI_LOCAL_HOST, USHMEMI_LOCAL_DEVICE */
static pthread_mutex_t local_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const heap_name[2] = {"host", "device"};
static const char *const size_var[2] = {"USHMEM_LOCAL_HEAP_SIZE", "USHMEM_DEVICE_LOCAL_HEAP_SIZE"};

static size_t wanted(int which)
{
    return which == USHMEMI_LOCAL_DEVICE ? ushmemi_env.device_local_heap_size
                                         : ushmemi_env.local_heap_size;
}

int ushmemi_local_split(int which, char *user, size_t user_size, size_t min_align,
                        size_t *collective, const char *call)
{
    local_part_t *p = &parts[which];
    size_t want = wanted(which);
    *collective = user_size;
    p->user = user;
    p->user_size = user_size;
    if (want == 0)
        return 0;
    uintptr_t end = (uintptr_t)user + user_size;
    uintptr_t start = want < end ? (end - want) & ~(uintptr_t)(LOCAL_ALIGN - 1) : 0;
    if (start <= (uintptr_t)user) {
        ushmemi_error(call,
                      "%s=%zu leaves nothing of the %zu-byte %s heap for collective "
                      "allocations: make it smaller or the heap larger",
                      size_var[which], want, user_size, heap_name[which]);
        return USHMEM_EINVAL;
    }
    int rc = ushmemi_alloc_create(&p->a, end - start, min_align);
    if (rc) {
        ushmemi_error(call, "cannot set up the local part of the %s heap: %s", heap_name[which],
                      ushmemi_strerror(rc));
        return rc;
    }
    p->base = (char *)start;
    p->size = end - start;
    *collective = start - (uintptr_t)user;
    return 0;
}

void ushmemi_local_fini(int which)
{
    local_part_t *p = &parts[which];
    pthread_mutex_lock(&local_lock);
    if (p->a)
        ushmemi_alloc_destroy(p->a);
    *p = (local_part_t){0};
    pthread_mutex_unlock(&local_lock);
}

static int in_part(const local_part_t *p, const void *ptr)
{
    uintptr_t a = (uintptr_t)ptr, b = (uintptr_t)p->base;
    return p->a && a >= b && a - b < p->size;
}

int ushmemi_local_has(const void *ptr)
{
    return in_part(&parts[USHMEMI_LOCAL_HOST], ptr) || in_part(&parts[USHMEMI_LOCAL_DEVICE], ptr);
}

/* The sizes of the local parts decide where the collective arenas end, so
 * they must be the same on every PE, as the heap sizes are. */
int ushmemi_local_agree(const char *call)
{
    int n = ushmemi_g.n_pes, rc = 0;
    if (n < 2)
        return 0;
    uint64_t mine[2] = {ushmemi_env.local_heap_size, ushmemi_env.device_local_heap_size};
    uint64_t(*all)[2] = calloc((size_t)n, sizeof *all);
    if (!all)
        return USHMEM_ENOMEM;
    rc = ushmemi_bootstrap()->ops->allgather(mine, all, sizeof mine);
    for (int pe = 0; pe < n && rc == 0; pe++)
        for (int w = 0; w < 2 && rc == 0; w++)
            if (all[pe][w] != mine[w]) {
                ushmemi_error(
                    call, "PE %d has %s=%llu, this PE %llu: set the same value on every PE", pe,
                    size_var[w], (unsigned long long)all[pe][w], (unsigned long long)mine[w]);
                rc = USHMEM_EINVAL;
            }
    free(all);
    return rc;
}

static int no_device_heap(int which, const char *call)
{
    if (which == USHMEMI_LOCAL_DEVICE && !ushmemi_g.cuda_active) {
        ushmemi_error(call, USHMEMI_NO_DEVICE_HEAP);
        return 1;
    }
    return 0;
}

USHMEMI_API void *shmemx_malloc_local(size_t size, size_t alignment, long hints)
{
    static const char call[] = "shmemx_malloc_local";
    USHMEMI_CHECK_INIT(call);
    int which = ushmemi_hints_device(hints) ? USHMEMI_LOCAL_DEVICE : USHMEMI_LOCAL_HOST;
    if (no_device_heap(which, call))
        return NULL;
    local_part_t *p = &parts[which];
    if (size == 0) {
        ushmemi_debug(call, "size 0: no block");
        return NULL;
    }
    if (alignment & (alignment - 1) || alignment > LOCAL_ALIGN) {
        ushmemi_error(call, "alignment %zu must be 0 or a power of two no larger than %zu",
                      alignment, LOCAL_ALIGN);
        return NULL;
    }
    if (!p->a) { /* set at init only */
        ushmemi_error(call,
                      "the %s heap has no local part: set %s (bytes of the heap set aside "
                      "for local blocks, the same on every PE)",
                      heap_name[which], size_var[which]);
        return NULL;
    }
    size_t off = 0, largest = 0;
    pthread_mutex_lock(&local_lock);
    int rc = ushmemi_alloc_alloc(p->a, size, alignment ? alignment : 1, &off);
    if (rc)
        largest = ushmemi_alloc_largest_free(p->a);
    pthread_mutex_unlock(&local_lock);
    if (rc) {
        ushmemi_error(call,
                      "the local part of the %s heap is exhausted: %zu bytes requested, "
                      "largest free block %zu of %zu (raise %s)",
                      heap_name[which], size, largest, p->size, size_var[which]);
        return NULL;
    }
    return p->base + off;
}

USHMEMI_API int shmemx_free_local(void *ptr)
{
    static const char call[] = "shmemx_free_local";
    USHMEMI_CHECK_INIT_STATUS(call);
    if (!ptr)
        return SHMEMX_SUCCESS;
    int rc = USHMEM_ENOTSYM;
    pthread_mutex_lock(&local_lock);
    for (int w = 0; w < 2; w++)
        if (in_part(&parts[w], ptr))
            rc = ushmemi_alloc_free(parts[w].a, (size_t)((char *)ptr - parts[w].base));
    pthread_mutex_unlock(&local_lock);
    if (rc == USHMEM_ENOTSYM) {
        ushmemi_error(call, "%p is not a local block (from shmemx_malloc_local)", ptr);
        return SHMEMX_ERR_NOTFOUND;
    }
    if (rc) {
        ushmemi_error(call, "%p is not a live local block (double free?)", ptr);
        return SHMEMX_ERR_NOTFOUND;
    }
    return SHMEMX_SUCCESS;
}

USHMEMI_API long shmemx_heap_offset(const void *addr, size_t *offset)
{
    static const char call[] = "shmemx_heap_offset";
    USHMEMI_CHECK_INIT_STATUS(call);
    if (!addr || !offset) {
        ushmemi_error(call, "%s is NULL", !addr ? "addr" : "offset");
        return SHMEMX_ERR_INVALID;
    }
    for (int w = 0; w < 2; w++) {
        const local_part_t *p = &parts[w];
        uintptr_t a = (uintptr_t)addr, u = (uintptr_t)p->user;
        if (p->user && a >= u && a - u < p->user_size) {
            *offset = a - u;
            return w == USHMEMI_LOCAL_DEVICE ? SHMEMX_MALLOC_DEVICE : SHMEMX_MALLOC_HOST;
        }
    }
    ushmemi_error(call, "%p is not on this PE's host or device symmetric heap", addr);
    return SHMEMX_ERR_NOTFOUND;
}

USHMEMI_API void *shmemx_heap_addr(size_t offset, long hints)
{
    static const char call[] = "shmemx_heap_addr";
    USHMEMI_CHECK_INIT(call);
    int which = (hints & SHMEMX_MALLOC_DEVICE) ? USHMEMI_LOCAL_DEVICE : USHMEMI_LOCAL_HOST;
    if (no_device_heap(which, call))
        return NULL;
    const local_part_t *p = &parts[which];
    if (!p->user || offset >= p->user_size) {
        ushmemi_error(call, "offset %zu is past the %zu-byte %s heap", offset, p->user_size,
                      heap_name[which]);
        return NULL;
    }
    return p->user + offset;
}

USHMEMI_API int shmemx_heap_local_part(long hints, size_t *offset, size_t *size)
{
    static const char call[] = "shmemx_heap_local_part";
    USHMEMI_CHECK_INIT_STATUS(call);
    if (!offset || !size) {
        ushmemi_error(call, "%s is NULL", !offset ? "offset" : "size");
        return SHMEMX_ERR_INVALID;
    }
    int which = (hints & SHMEMX_MALLOC_DEVICE) ? USHMEMI_LOCAL_DEVICE : USHMEMI_LOCAL_HOST;
    if (no_device_heap(which, call))
        return SHMEMX_ERR_NOTFOUND;
    const local_part_t *p = &parts[which];
    *offset = p->a ? (size_t)(p->base - p->user) : 0;
    *size = p->a ? p->size : 0;
    return SHMEMX_SUCCESS;
}
