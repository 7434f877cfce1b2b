/* Symmetric heap allocator: hands out offsets inside an arena [0, size).
 *
 * Symmetry rests on determinism: every PE runs the same sequence of calls and
 * must get the same offsets, so nothing here depends on addresses, time or
 * randomness. Metadata lives in private malloc'd memory, never in the arena:
 * a user overrunning a block cannot corrupt the allocator, and a double or
 * foreign free is always detected rather than trusted to a header in the heap.
 *
 * Policy: best fit. The chosen free block is the smallest one that can hold
 * the request at its alignment, lowest offset among equal sizes. Free blocks
 * are coalesced with their neighbours on free, so no two free blocks touch.
 * All offsets and block sizes are multiples of min_align; a block's size is
 * its request rounded up to min_align, and the arena is truncated to a
 * multiple of min_align.
 *
 * Cost, n = number of blocks: alloc, free, realloc, size_of and
 * largest_free are O(log n) expected (treaps). An alignment above min_align
 * may scan free blocks whose size lies in [need, need + align - min_align),
 * which is O(n) in the worst case. bytes_free is O(1).
 *
 * Not thread-safe: the heap layer serialises calls. Functions return 0 or a
 * negative USHMEM_E* code; output parameters are written only on success. */
#ifndef USHMEM_HEAP_ALLOC_H
#define USHMEM_HEAP_ALLOC_H

#include <stddef.h>

typedef struct ushmemi_alloc ushmemi_alloc_t;

/* min_align: a power of two. EINVAL if it is not, or if the arena holds no
 * min_align unit; ENOMEM if metadata cannot be allocated. */
int ushmemi_alloc_create(ushmemi_alloc_t **a, size_t arena_size, size_t min_align);
void ushmemi_alloc_destroy(ushmemi_alloc_t *a);

/* align: a power of two >= 1, raised to min_align; size > 0.
 * EINVAL: bad align, size 0, size overflows when rounded. ENOMEM: no fit (or
 * no memory for metadata). */
int ushmemi_alloc_alloc(ushmemi_alloc_t *a, size_t size, size_t align, size_t *off);

/* off must start a live block; otherwise (double free, interior or foreign
 * offset) ENOTFOUND and nothing changes. */
int ushmemi_alloc_free(ushmemi_alloc_t *a, size_t off);

/* Shrinks in place always; grows in place into a following free block when
 * it is large enough. Otherwise allocates a new block with the alignment the
 * old one was allocated with, sets *moved = 1 and leaves the old block live:
 * the caller copies and then frees it. On error nothing changes.
 * EINVAL: new_size 0 or overflowing. ENOTFOUND: off is not a live block. */
int ushmemi_alloc_realloc(ushmemi_alloc_t *a, size_t off, size_t new_size, size_t *new_off,
                          int *moved);

/* Usable size of the live block at off (its request rounded up to min_align). */
int ushmemi_alloc_size_of(const ushmemi_alloc_t *a, size_t off, size_t *size);

size_t ushmemi_alloc_bytes_free(const ushmemi_alloc_t *a);
/* Size of the largest free block: an allocation of that size at min_align
 * alignment succeeds. */
size_t ushmemi_alloc_largest_free(const ushmemi_alloc_t *a);

/* Walks every block and both trees and verifies the invariants (blocks tile
 * the arena, no two free blocks touch, counters and tree order agree).
 * O(n); for tests and SHMEM_DEBUG. 0 or USHMEM_EINVAL. */
int ushmemi_alloc_check(const ushmemi_alloc_t *a);

#endif /* USHMEM_HEAP_ALLOC_H */
