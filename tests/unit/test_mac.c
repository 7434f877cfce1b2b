/* Unit test of the keyed hash (src/core/mac.c, SipHash-2-4 with a 128-bit
 * output): the reference test vectors (key 00..0f, message 00..len-1) for the
 * lengths below, every length 0..64 differs from its neighbours and from the
 * same message under another key, and the comparison. Exit 0 on pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mac.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond);                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void hex(char *out, const uint8_t *b)
{
    for (int i = 0; i < USHMEMI_MAC_BYTES; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

int main(void)
{
    static const struct {
        size_t len;
        const char *want;
    } vectors[] = {
        {0, "a3817f04ba25a8e66df67214c7550293"},
        {1, "da87c1d86b99af44347659119b22fc45"},
        {2, "8177228da4a45dc7fca38bdef60affe4"},
    };
    uint8_t key[16], key2[16], msg[64], out[USHMEMI_MAC_BYTES], prev[USHMEMI_MAC_BYTES];
    char got[2 * USHMEMI_MAC_BYTES + 1];
    for (int i = 0; i < 16; i++) {
        key[i] = (uint8_t)i;
        key2[i] = (uint8_t)(i ^ 0x80);
    }
    for (int i = 0; i < 64; i++)
        msg[i] = (uint8_t)i;
    for (size_t v = 0; v < sizeof vectors / sizeof vectors[0]; v++) {
        ushmemi_mac(out, key, msg, vectors[v].len);
        hex(got, out);
        if (strcmp(got, vectors[v].want))
            fprintf(stderr, "length %zu: got %s, want %s\n", vectors[v].len, got, vectors[v].want);
        CHECK(!strcmp(got, vectors[v].want));
    }
    for (size_t len = 0; len <= sizeof msg; len++) {
        uint8_t other[USHMEMI_MAC_BYTES];
        ushmemi_mac(out, key, msg, len);
        ushmemi_mac(other, key2, msg, len);
        CHECK(!ushmemi_mac_equal(out, other, sizeof out));
        if (len)
            CHECK(!ushmemi_mac_equal(out, prev, sizeof out));
        memcpy(prev, out, sizeof out);
    }
    CHECK(ushmemi_mac_equal(prev, prev, sizeof prev));
    memcpy(out, prev, sizeof out);
    out[15] ^= 1;
    CHECK(!ushmemi_mac_equal(out, prev, sizeof out));
    printf("mac: ok\n");
    return 0;
}
