/* A keyed hash (SipHash-2-4 with a 128-bit output) for proofs of a shared
 * key: a peer shows it knows the key by hashing a message with it, and the
 * key itself never travels. */
#ifndef USHMEM_MAC_H
#define USHMEM_MAC_H

#include <stddef.h>
#include <stdint.h>

#define USHMEMI_MAC_BYTES 16

void ushmemi_mac(uint8_t out[USHMEMI_MAC_BYTES], const uint8_t key[16], const void *msg,
                 size_t len);

/* 1 when a and b (len bytes) are equal; the time does not depend on where they differ. */
int ushmemi_mac_equal(const void *a, const void *b, size_t len);

#endif
