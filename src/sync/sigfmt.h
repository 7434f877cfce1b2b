/* Async-signal-safe formatting into a caller's buffer (the hang report and
 * its stacks: no stdio, no malloc). Output past the buffer is dropped. */
#ifndef USHMEM_SYNC_SIGFMT_H
#define USHMEM_SYNC_SIGFMT_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *buf;
    size_t cap;
    size_t len;
} line_t;

static inline void put_s(line_t *l, const char *s)
{
    while (s && *s && l->len < l->cap - 1)
        l->buf[l->len++] = *s++;
}

/* base 10, or 16 with "0x" in front */
static inline void put_u(line_t *l, uint64_t v, unsigned base)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    if (base == 16)
        put_s(l, "0x");
    while (n > 0 && l->len < l->cap - 1)
        l->buf[l->len++] = tmp[--n];
}

static inline void put_i(line_t *l, int v)
{
    if (v < 0) {
        put_s(l, "-");
        v = -v;
    }
    put_u(l, (uint64_t)v, 10);
}

#endif
