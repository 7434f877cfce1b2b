/* Symmetric segments of this PE: the heap (memfd-backed) and the executable's
 * writable data segment remapped onto a memfd. */
#ifndef USHMEM_HEAP_H
#define USHMEM_HEAP_H

#include <stddef.h>

#include "heap/alloc.h"

/* Create and map this PE's heap segment (internal region + user arena). */
int ushmemi_heap_init(const char *call);
void ushmemi_heap_fini(void);

/* Remap .data/.bss of the executable onto shared memory (once per process;
 * later inits reuse it). Sets seg[USHMEMI_SEG_DATA]; size 0 when disabled. */
int ushmemi_dataseg_init(const char *call);
void ushmemi_dataseg_fini(void);

/* Offset of ptr in an arena [base, base+size) if it starts a live allocation;
 * otherwise one line naming `what` and USHMEM_ENOTSYM / USHMEM_ENOTFOUND. */
int ushmemi_arena_offset(const ushmemi_alloc_t *a, const char *base, size_t size, const char *what,
                         const void *ptr, size_t *off, const char *call);

#endif
