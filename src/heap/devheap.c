/* The device symmetric heap's allocation routines: the same deterministic
 * allocator as the host heap (heap/alloc.c) over the user part of the CUDA
 * device heap the cuda transport creates, with the same collective semantics
 * (identical offsets everywhere, a barrier before returning). Contents are
 * touched only through the driver (clear, realloc's copy). */
#include <pthread.h>
#include <string.h>

#include "heap/alloc.h"
#include "heap/heap.h"
#include "transport/cuda/cuda_priv.h"

static ushmemi_alloc_t *dev_arena;
static char *dev_base;
static size_t dev_size;
/* The user part starts on this boundary (the lowest set bit of its address:
 * 1 MiB past a 2 MiB-aligned device allocation, the same on every PE), so
 * offsets aligned to it are aligned addresses everywhere; shmem_align refuses
 * more on the device heap. */
static size_t dev_align_max;
static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
#define DEV_HEAP "device heap", "USHMEM_DEVICE_HEAP_SIZE" /* for the failure lines */

int ushmemi_devheap_init(char *arena, size_t size, const char *call)
{
    size_t collective;
    int rc = ushmemi_local_split(USHMEMI_LOCAL_DEVICE, arena, size, USHMEMI_CUDA_HEAP_ALIGN,
                                 &collective, call);
    if (rc)
        return rc;
    rc = ushmemi_alloc_create(&dev_arena, collective, USHMEMI_CUDA_HEAP_ALIGN);
    if (rc) {
        ushmemi_local_fini(USHMEMI_LOCAL_DEVICE);
        ushmemi_error(call, "cannot set up the device heap allocator: %s", ushmemi_strerror(rc));
        return rc;
    }
    dev_base = arena;
    dev_size = size;
    uintptr_t a = (uintptr_t)arena;
    dev_align_max = (size_t)(a & -a);
    if (dev_align_max > ((size_t)1 << 30))
        dev_align_max = (size_t)1 << 30;
    return 0;
}

void ushmemi_devheap_fini(void)
{
    if (dev_arena)
        ushmemi_alloc_destroy(dev_arena);
    dev_arena = NULL;
    ushmemi_local_fini(USHMEMI_LOCAL_DEVICE);
    dev_base = NULL;
    dev_size = 0;
    dev_align_max = 0;
}

static void dev_clear(void *p, size_t n, const char *call)
{
    ushmemi_cuda_ctx();
    pthread_mutex_lock(&ushmemi_cuda.lock);
    CU_CHECK(ushmemi_cu.cuMemsetD8Async((CUdeviceptr)(uintptr_t)p, 0, n, ushmemi_cuda.stream),
             call);
    CU_CHECK(ushmemi_cu.cuStreamSynchronize(ushmemi_cuda.stream), call);
    pthread_mutex_unlock(&ushmemi_cuda.lock);
}

void *ushmemi_devheap_alloc(size_t size, size_t align, int zero, const char *call)
{
    size_t off = 0;
    USHMEMI_CHECK_INIT(call);
    if (!dev_arena)
        ushmemi_fatal(call, USHMEMI_NO_DEVICE_HEAP);
    if (size == 0) {
        ushmemi_sync_world();
        return NULL;
    }
    if (align > dev_align_max) {
        ushmemi_sync_world();
        ushmemi_error(call,
                      "alignment %zu is above the device heap's %zu (the boundary its user part "
                      "starts on)",
                      align, dev_align_max);
        return NULL;
    }
    pthread_mutex_lock(&dev_lock);
    int rc = ushmemi_alloc_alloc(dev_arena, size, align, &off);
    pthread_mutex_unlock(&dev_lock);
    if (rc == 0 && zero)
        dev_clear(dev_base + off, size, call);
    /* Nobody may touch a peer's block before the peer has it (and cleared it). */
    ushmemi_sync_world();
    if (rc) {
        ushmemi_heap_alloc_failed(rc, dev_arena, size, align, DEV_HEAP, call);
        return NULL;
    }
    return dev_base + off;
}

static int dev_offset(const void *ptr, size_t *off, const char *call)
{
    return ushmemi_arena_offset(dev_arena, (const char *)dev_base, dev_size,
                                "device symmetric heap", ptr, off, call);
}

/* Called after heap.c's quiet + barrier. */
void ushmemi_devheap_free(void *ptr, const char *call)
{
    size_t off;
    pthread_mutex_lock(&dev_lock);
    if (dev_offset(ptr, &off, call) == 0)
        ushmemi_alloc_free(dev_arena, off);
    pthread_mutex_unlock(&dev_lock);
}

/* Called after heap.c's quiet + barrier, with ptr != NULL and size > 0. */
void *ushmemi_devheap_realloc(void *ptr, size_t size, const char *call)
{
    size_t off, old_size, new_off = 0;
    int moved = 0;
    pthread_mutex_lock(&dev_lock);
    int rc = dev_offset(ptr, &off, call);
    if (rc == 0) {
        ushmemi_alloc_size_of(dev_arena, off, &old_size);
        rc = ushmemi_alloc_realloc(dev_arena, off, size, &new_off, &moved);
    }
    if (rc == 0 && moved) {
        ushmemi_cuda_ctx();
        pthread_mutex_lock(&ushmemi_cuda.lock);
        CU_CHECK(ushmemi_cu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)(dev_base + new_off),
                                          (CUdeviceptr)(uintptr_t)ptr,
                                          old_size < size ? old_size : size, ushmemi_cuda.stream),
                 call);
        CU_CHECK(ushmemi_cu.cuStreamSynchronize(ushmemi_cuda.stream), call);
        pthread_mutex_unlock(&ushmemi_cuda.lock);
        ushmemi_alloc_free(dev_arena, off);
    }
    pthread_mutex_unlock(&dev_lock);
    ushmemi_sync_world();
    if (rc) {
        ushmemi_heap_resize_failed(rc, ptr, size, DEV_HEAP, call);
        return NULL;
    }
    return dev_base + new_off;
}
