/* Registration table behind shmemx_buffer_register / _unregister /
 * _unregister_all: a set of disjoint address ranges of this process.
 *
 * Kept as an array sorted by start address: lookups (on the data path) are a
 * binary search, O(log n); add and remove shift the tail, O(n), which is fine
 * for the handful of buffers a program registers. Not thread-safe: the caller
 * serialises add/remove/clear against everything else. Functions return 0 or a
 * negative USHMEM_E* code unless stated otherwise. */
#ifndef USHMEM_HEAP_REG_H
#define USHMEM_HEAP_REG_H

#include <stddef.h>

typedef struct ushmemi_reg ushmemi_reg_t;

int ushmemi_reg_create(ushmemi_reg_t **r);
void ushmemi_reg_destroy(ushmemi_reg_t *r);

/* EINVAL: addr NULL, len 0, or the range wraps past the end of the address
 * space. EOVERLAP: shares a byte with a registered range (merely touching
 * one is allowed). ENOMEM: the table cannot grow. */
int ushmemi_reg_add(ushmemi_reg_t *r, const void *addr, size_t len);

/* Removes the range containing addr, which may be any byte inside it, so a
 * caller holding an interior pointer can unregister. ENOTFOUND otherwise. */
int ushmemi_reg_remove(ushmemi_reg_t *r, const void *addr);

void ushmemi_reg_clear(ushmemi_reg_t *r);

/* 1 if [addr, addr+len) lies within a single registered range, else 0.
 * len 0 asks whether addr itself is inside one. Ranges that merely touch do
 * not combine: an access spanning two registrations returns 0. */
int ushmemi_reg_lookup(const ushmemi_reg_t *r, const void *addr, size_t len);

size_t ushmemi_reg_count(const ushmemi_reg_t *r);

#endif /* USHMEM_HEAP_REG_H */
