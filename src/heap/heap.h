/* Symmetric segments of this PE: the heap (memfd-backed) and the executable's
 * writable data segment remapped onto a memfd. */
#ifndef USHMEM_HEAP_H
#define USHMEM_HEAP_H

#include <stddef.h>

#include <shmemx.h>

#include "core/core.h"
#include "heap/alloc.h"

/* Create and map this PE's heap segment (internal region + user arena). */
int ushmemi_heap_init(const char *call);
void ushmemi_heap_fini(void);

/* Remap .data/.bss of the executable onto shared memory (once per process;
 * later inits reuse it). Sets seg[USHMEMI_SEG_DATA]; size 0 when disabled. */
int ushmemi_dataseg_init(const char *call);
void ushmemi_dataseg_fini(void);

/* One line for a failed allocation / resize in heap (its name; size_var: the
 * variable that sizes it); rc as the allocator returned it. */
void ushmemi_heap_alloc_failed(int rc, const ushmemi_alloc_t *a, size_t size, size_t align,
                               const char *heap, const char *size_var, const char *call);
void ushmemi_heap_resize_failed(int rc, const void *ptr, size_t size, const char *heap,
                                const char *size_var, const char *call);

/* Offset of ptr in an arena [base, base+size) if it starts a live allocation;
 * otherwise one line naming `what` and USHMEM_ENOTSYM / USHMEM_ENOTFOUND. */
int ushmemi_arena_offset(const ushmemi_alloc_t *a, const char *base, size_t size, const char *what,
                         const void *ptr, size_t *off, const char *call);

/* Whether an allocation with these memory-kind hints goes to the device heap:
 * SHMEMX_MALLOC_DEVICE, or no SHMEMX_MALLOC_HOST while a device is bound (the
 * default placement of shmem_malloc). shmem_malloc_with_hints and
 * shmemx_malloc_local both choose by it. */
static inline int ushmemi_hints_device(long hints)
{
    return (hints & SHMEMX_MALLOC_DEVICE) ||
           (!(hints & SHMEMX_MALLOC_HOST) && USHMEMI_UNLIKELY(ushmemi_g.cuda_active));
}

/* The reason of every call that needs the device heap on a PE without one. */
#define USHMEMI_NO_DEVICE_HEAP                                                                     \
    "no device heap: no CUDA device is bound to this PE (set USHMEM_DEVICE, LOCAL_RANK or "        \
    "shmemx_init_attr's device)"

/* Registered buffers (heap/buffers.c): the table is made and dropped with the
 * heap. */
int ushmemi_buffers_init(void);
void ushmemi_buffers_fini(void);

/* Local blocks (heap/local.c). A heap's user part [user, user+user_size) is
 * split at init: the local part (its variable's size, rounded to 2 MiB, at the
 * top) and the collective arena below, whose size goes to *collective. */
enum { USHMEMI_LOCAL_HOST, USHMEMI_LOCAL_DEVICE };
int ushmemi_local_split(int which, char *user, size_t user_size, size_t min_align,
                        size_t *collective, const char *call);
void ushmemi_local_fini(int which);
/* 1 if ptr is inside the local part of either heap. */
int ushmemi_local_has(const void *ptr);
/* Init, every PE: the local sizes are the same everywhere, or one line and EINVAL. */
int ushmemi_local_agree(const char *call);

#endif
