/* SipHash-2-4, 128-bit output variant (Aumasson and Bernstein, 2012): a
 * pseudo-random function of a 128-bit key, enough to prove knowledge of a
 * per-job key over a local socket. Written from the paper's description. */
#include <string.h>

#include "core/mac.h"

static uint64_t rotl(uint64_t x, int b)
{
    return x << b | x >> (64 - b);
}

static uint64_t load_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void store_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void sip_round(uint64_t v[4])
{
    v[0] += v[1];
    v[1] = rotl(v[1], 13) ^ v[0];
    v[0] = rotl(v[0], 32);
    v[2] += v[3];
    v[3] = rotl(v[3], 16) ^ v[2];
    v[0] += v[3];
    v[3] = rotl(v[3], 21) ^ v[0];
    v[2] += v[1];
    v[1] = rotl(v[1], 17) ^ v[2];
    v[2] = rotl(v[2], 32);
}

static void compress(uint64_t v[4], uint64_t m)
{
    v[3] ^= m;
    sip_round(v);
    sip_round(v);
    v[0] ^= m;
}

void ushmemi_mac(uint8_t out[USHMEMI_MAC_BYTES], const uint8_t key[16], const void *msg, size_t len)
{
    const uint8_t *p = msg;
    uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
    uint64_t v[4] = {k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull ^ 0xee,
                     k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull};
    size_t full = len & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8)
        compress(v, load_le64(p + i));
    uint8_t last[8] = {0};
    memcpy(last, p + full, len - full);
    last[7] = (uint8_t)len;
    compress(v, load_le64(last));
    v[2] ^= 0xee;
    for (int i = 0; i < 4; i++)
        sip_round(v);
    store_le64(out, v[0] ^ v[1] ^ v[2] ^ v[3]);
    v[1] ^= 0xdd;
    for (int i = 0; i < 4; i++)
        sip_round(v);
    store_le64(out + 8, v[0] ^ v[1] ^ v[2] ^ v[3]);
}

int ushmemi_mac_equal(const void *a, const void *b, size_t len)
{
    const volatile uint8_t *x = a, *y = b;
    uint8_t diff = 0;
    for (size_t i = 0; i < len; i++)
        diff |= x[i] ^ y[i];
    return diff == 0;
}
