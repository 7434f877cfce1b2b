/* Unit test of the symmetric heap allocator (src/heap/alloc.c). Single
 * process, no OpenSHMEM. Exit 0 on pass; the first failure prints file:line
 * and exits 1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "heap/alloc.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond);                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CHECK_RC(expr, want)                                                                       \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != (want)) {                                                                       \
            fprintf(stderr, "%s:%d: FAIL: %s returned %d, want %d\n", __FILE__, __LINE__, #expr,   \
                    rc_, (int)(want));                                                             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CHECK_OK(a) CHECK_RC(ushmemi_alloc_check(a), 0)

#define U 64 /* min_align used throughout */

/* Our own generator, so the sequence is the same under every libc. */
static uint64_t rng_state;
static uint64_t rng(void)
{
    uint64_t x = (rng_state += 0x9e3779b97f4a7c15ull);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
static size_t rnd(size_t n)
{
    return (size_t)(rng() % n);
}

static ushmemi_alloc_t *mk(size_t arena)
{
    ushmemi_alloc_t *a = NULL;
    CHECK_RC(ushmemi_alloc_create(&a, arena, U), 0);
    CHECK(a != NULL);
    return a;
}

/* Reports the caller's line, not this helper's. */
static size_t xalloc_at(ushmemi_alloc_t *a, size_t size, size_t align, int line)
{
    size_t off = (size_t)-1;
    int rc = ushmemi_alloc_alloc(a, size, align, &off);
    if (rc != 0) {
        fprintf(stderr, "%s:%d: FAIL: alloc(%zu, %zu) returned %d\n", __FILE__, line, size, align,
                rc);
        exit(1);
    }
    return off;
}
#define xalloc(a, size, align) xalloc_at((a), (size), (align), __LINE__)

/* ---------------------------------------------------------------------- */

static void test_create_args(void)
{
    ushmemi_alloc_t *a = NULL;
    CHECK_RC(ushmemi_alloc_create(&a, 1 << 20, 0), USHMEM_EINVAL);
    CHECK_RC(ushmemi_alloc_create(&a, 1 << 20, 48), USHMEM_EINVAL);
    CHECK_RC(ushmemi_alloc_create(&a, 0, U), USHMEM_EINVAL);
    CHECK_RC(ushmemi_alloc_create(&a, U - 1, U), USHMEM_EINVAL);
    CHECK(a == NULL); /* outputs untouched on failure */

    /* A ragged tail cannot hold an aligned unit, so it is not offered. */
    a = mk(1000);
    CHECK(ushmemi_alloc_bytes_free(a) == 960);
    CHECK(ushmemi_alloc_largest_free(a) == 960);
    CHECK(xalloc(a, 960, 1) == 0);
    CHECK(ushmemi_alloc_bytes_free(a) == 0);
    CHECK(ushmemi_alloc_largest_free(a) == 0);
    CHECK_OK(a);
    ushmemi_alloc_destroy(a);
    ushmemi_alloc_destroy(NULL);
}

static void test_bad_args(void)
{
    ushmemi_alloc_t *a = mk(1 << 16);
    size_t off = 12345, sz = 777, noff = 999;
    int moved = 7;

    CHECK_RC(ushmemi_alloc_alloc(a, 0, 1, &off), USHMEM_EINVAL);
    CHECK_RC(ushmemi_alloc_alloc(a, 64, 0, &off), USHMEM_EINVAL);
    CHECK_RC(ushmemi_alloc_alloc(a, 64, 3, &off), USHMEM_EINVAL);
    CHECK_RC(ushmemi_alloc_alloc(a, 64, 96, &off), USHMEM_EINVAL);
    /* Sizes whose rounding to min_align would wrap are a caller bug, not
     * mere exhaustion. */
    CHECK_RC(ushmemi_alloc_alloc(a, SIZE_MAX, 1, &off), USHMEM_EINVAL);
    CHECK_RC(ushmemi_alloc_alloc(a, SIZE_MAX - U + 2, 1, &off), USHMEM_EINVAL);
    /* Representable but too large: exhaustion. */
    CHECK_RC(ushmemi_alloc_alloc(a, SIZE_MAX - U + 1, 1, &off), USHMEM_ENOMEM);
    CHECK_RC(ushmemi_alloc_alloc(a, (1 << 16) + 1, 1, &off), USHMEM_ENOMEM);
    CHECK_RC(ushmemi_alloc_alloc(a, SIZE_MAX / 2, (size_t)1 << 63, &off), USHMEM_ENOMEM);
    CHECK(off == 12345);
    CHECK(ushmemi_alloc_bytes_free(a) == 1 << 16);

    /* Offset 0 satisfies every alignment, even the largest power of two. */
    size_t o = xalloc(a, 1, (size_t)1 << 63);
    CHECK(o == 0);
    CHECK_RC(ushmemi_alloc_realloc(a, o, 0, &noff, &moved), USHMEM_EINVAL);
    CHECK_RC(ushmemi_alloc_realloc(a, o, SIZE_MAX, &noff, &moved), USHMEM_EINVAL);
    CHECK_RC(ushmemi_alloc_realloc(a, o, SIZE_MAX - U + 1, &noff, &moved), USHMEM_ENOMEM);
    CHECK(noff == 999 && moved == 7);
    CHECK_RC(ushmemi_alloc_size_of(a, o, &sz), 0);
    CHECK(sz == U);
    CHECK_OK(a);
    ushmemi_alloc_destroy(a);
}

static void test_double_and_foreign_free(void)
{
    ushmemi_alloc_t *a = mk(1 << 16);
    size_t x = xalloc(a, 256, 1);
    size_t y = xalloc(a, 256, 1);
    size_t z = xalloc(a, 256, 1);
    size_t before = ushmemi_alloc_bytes_free(a);
    size_t sz = 0, noff = 0;
    int moved = 0;

    CHECK_RC(ushmemi_alloc_free(a, y + U), USHMEM_ENOTFOUND);   /* interior */
    CHECK_RC(ushmemi_alloc_free(a, y + 1), USHMEM_ENOTFOUND);   /* misaligned */
    CHECK_RC(ushmemi_alloc_free(a, z + 256), USHMEM_ENOTFOUND); /* start of free space */
    CHECK_RC(ushmemi_alloc_free(a, 1 << 16), USHMEM_ENOTFOUND); /* past the arena */
    CHECK_RC(ushmemi_alloc_free(a, SIZE_MAX), USHMEM_ENOTFOUND);
    CHECK(ushmemi_alloc_bytes_free(a) == before);

    CHECK_RC(ushmemi_alloc_free(a, y), 0);
    CHECK_RC(ushmemi_alloc_free(a, y), USHMEM_ENOTFOUND);
    CHECK_RC(ushmemi_alloc_size_of(a, y, &sz), USHMEM_ENOTFOUND);
    CHECK_RC(ushmemi_alloc_realloc(a, y, 64, &noff, &moved), USHMEM_ENOTFOUND);
    CHECK_RC(ushmemi_alloc_free(a, x), 0);
    /* x and y have coalesced: y is now the interior of a free block. */
    CHECK_RC(ushmemi_alloc_free(a, y), USHMEM_ENOTFOUND);
    CHECK_RC(ushmemi_alloc_free(a, x), USHMEM_ENOTFOUND);
    CHECK_RC(ushmemi_alloc_free(a, z), 0);
    CHECK_RC(ushmemi_alloc_free(a, z), USHMEM_ENOTFOUND);
    CHECK(ushmemi_alloc_bytes_free(a) == 1 << 16);
    CHECK_OK(a);

    /* An offset from a different allocator means nothing here. */
    ushmemi_alloc_t *b = mk(1 << 16);
    (void)xalloc(b, 64, 1);
    size_t w = xalloc(b, 64, 1);
    CHECK_RC(ushmemi_alloc_free(a, w), USHMEM_ENOTFOUND);
    ushmemi_alloc_destroy(b);
    ushmemi_alloc_destroy(a);
}

static void test_alignment(void)
{
    ushmemi_alloc_t *a = mk(1 << 20);
    CHECK(xalloc(a, 64, 1) == 0);
    size_t p = xalloc(a, 64, 4096);
    CHECK(p == 4096);
    /* Best fit: the leading fragment [64, 4096) is smaller than the tail. */
    CHECK(xalloc(a, 64, 1) == 64);
    CHECK(xalloc(a, 100, 8) == 128); /* sub-min_align alignment raised to 64 */
    CHECK_OK(a);

    for (size_t al = 1; al <= (1 << 16); al <<= 1) {
        size_t o = xalloc(a, 1 + rnd(3000), al);
        CHECK(o % al == 0 && o % U == 0);
    }
    CHECK_OK(a);
    ushmemi_alloc_destroy(a);
}

static void test_best_fit(void)
{
    /* Holes of 3, 1 and 2 units separated by live blocks. */
    ushmemi_alloc_t *a = mk(16 * U);
    size_t o[16];
    for (int i = 0; i < 16; i++)
        o[i] = xalloc(a, U, 1);
    CHECK_RC(ushmemi_alloc_free(a, o[1]), 0);
    CHECK_RC(ushmemi_alloc_free(a, o[2]), 0);
    CHECK_RC(ushmemi_alloc_free(a, o[3]), 0);
    CHECK_RC(ushmemi_alloc_free(a, o[5]), 0);
    CHECK_RC(ushmemi_alloc_free(a, o[7]), 0);
    CHECK_RC(ushmemi_alloc_free(a, o[8]), 0);
    CHECK(ushmemi_alloc_largest_free(a) == 3 * U);
    CHECK(xalloc(a, U, 1) == o[5]);
    CHECK(xalloc(a, U, 1) == o[7]); /* 2-unit hole, low end */
    CHECK(xalloc(a, 2 * U, 1) == o[1]);
    /* Two 1-unit holes left (o[3], o[8]): equal sizes go lowest offset first. */
    CHECK(xalloc(a, U, 1) == o[3]);
    CHECK(xalloc(a, U, 1) == o[8]);
    CHECK(ushmemi_alloc_bytes_free(a) == 0);
    size_t off = 77;
    CHECK_RC(ushmemi_alloc_alloc(a, 1, 1, &off), USHMEM_ENOMEM);
    CHECK(off == 77);
    CHECK_OK(a);
    ushmemi_alloc_destroy(a);
}

static void test_exhaustion_and_coalescing(void)
{
    enum { N = 1024 };
    size_t arena = N * U;
    ushmemi_alloc_t *a = mk(arena);
    size_t *o = malloc(N * sizeof(*o));
    size_t *perm = malloc(N * sizeof(*perm));
    CHECK(o && perm);

    for (int order = 0; order < 3; order++) {
        size_t n = 0, off;
        int rc;
        while ((rc = ushmemi_alloc_alloc(a, 1 + rnd(U), 1, &off)) == 0) {
            CHECK(n < N);
            o[n++] = off;
        }
        CHECK_RC(rc, USHMEM_ENOMEM);
        CHECK(n == N);
        CHECK(ushmemi_alloc_bytes_free(a) == 0);
        CHECK(ushmemi_alloc_largest_free(a) == 0);

        /* Every other block freed: plenty free, but never two units together. */
        for (size_t i = 0; i < N; i += 2)
            CHECK_RC(ushmemi_alloc_free(a, o[i]), 0);
        CHECK(ushmemi_alloc_bytes_free(a) == arena / 2);
        CHECK(ushmemi_alloc_largest_free(a) == U);
        CHECK_RC(ushmemi_alloc_alloc(a, U + 1, 1, &off), USHMEM_ENOMEM);
        CHECK_OK(a);
        for (size_t i = 0; i < N; i += 2)
            o[i] = xalloc(a, U, 1);

        /* Free all in forward, reverse, then shuffled order. */
        for (size_t i = 0; i < N; i++)
            perm[i] = order == 1 ? N - 1 - i : i;
        if (order == 2)
            for (size_t i = N - 1; i > 0; i--) {
                size_t j = rnd(i + 1), t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
        for (size_t i = 0; i < N; i++)
            CHECK_RC(ushmemi_alloc_free(a, o[perm[i]]), 0);
        CHECK_OK(a);
        CHECK(ushmemi_alloc_bytes_free(a) == arena);
        CHECK(ushmemi_alloc_largest_free(a) == arena);
        size_t full = xalloc(a, arena, 1);
        CHECK(full == 0);
        CHECK_RC(ushmemi_alloc_free(a, full), 0);
    }
    free(o);
    free(perm);
    ushmemi_alloc_destroy(a);
}

static void test_realloc(void)
{
    ushmemi_alloc_t *a = mk(64 * U);
    size_t noff = 0, sz = 0;
    int moved = -1;

    size_t x = xalloc(a, 4 * U, 1);
    size_t y = xalloc(a, 4 * U, 1);
    CHECK_RC(ushmemi_alloc_free(a, y), 0); /* x is followed by free space */

    /* Grow into the following free block. */
    CHECK_RC(ushmemi_alloc_realloc(a, x, 6 * U, &noff, &moved), 0);
    CHECK(noff == x && moved == 0);
    CHECK_RC(ushmemi_alloc_size_of(a, x, &sz), 0);
    CHECK(sz == 6 * U);
    CHECK_OK(a);

    /* Shrink in place; the released tail merges with the free space after. */
    CHECK_RC(ushmemi_alloc_realloc(a, x, 2 * U + 1, &noff, &moved), 0);
    CHECK(noff == x && moved == 0);
    CHECK_RC(ushmemi_alloc_size_of(a, x, &sz), 0);
    CHECK(sz == 3 * U);
    CHECK(ushmemi_alloc_largest_free(a) == 61 * U);
    CHECK_OK(a);

    /* Same-size realloc is a no-op. */
    CHECK_RC(ushmemi_alloc_realloc(a, x, 3 * U, &noff, &moved), 0);
    CHECK(noff == x && moved == 0);

    /* Grow exactly into a free block that is then used up. */
    size_t z = xalloc(a, 2 * U, 1); /* directly after x */
    CHECK(z == x + 3 * U);
    size_t w = xalloc(a, U, 1); /* after z */
    CHECK_RC(ushmemi_alloc_free(a, z), 0);
    CHECK_RC(ushmemi_alloc_realloc(a, x, 5 * U, &noff, &moved), 0);
    CHECK(noff == x && moved == 0);
    CHECK_RC(ushmemi_alloc_size_of(a, x, &sz), 0);
    CHECK(sz == 5 * U);
    CHECK_OK(a);

    /* Shrink with a live neighbour: the tail becomes its own free block
     * and is reused by the next allocation that fits it best. */
    CHECK_RC(ushmemi_alloc_realloc(a, x, 4 * U, &noff, &moved), 0);
    CHECK(noff == x && moved == 0);
    CHECK(xalloc(a, U, 1) == x + 4 * U);
    CHECK_OK(a);

    /* Blocked by a live neighbour: moves, the old block stays live for the
     * caller to copy from. */
    size_t before = ushmemi_alloc_bytes_free(a);
    CHECK_RC(ushmemi_alloc_realloc(a, x, 8 * U, &noff, &moved), 0);
    CHECK(moved == 1 && noff != x);
    CHECK(noff >= w + U || noff + 8 * U <= x);
    CHECK(ushmemi_alloc_bytes_free(a) == before - 8 * U);
    CHECK_RC(ushmemi_alloc_size_of(a, x, &sz), 0);
    CHECK(sz == 4 * U);
    CHECK_RC(ushmemi_alloc_free(a, x), 0);
    CHECK_OK(a);

    /* No room anywhere: ENOMEM, block and outputs untouched. */
    size_t nn = 1234;
    moved = 5;
    CHECK_RC(ushmemi_alloc_realloc(a, noff, 64 * U, &nn, &moved), USHMEM_ENOMEM);
    CHECK(nn == 1234 && moved == 5);
    CHECK_RC(ushmemi_alloc_size_of(a, noff, &sz), 0);
    CHECK(sz == 8 * U);
    CHECK_OK(a);
    ushmemi_alloc_destroy(a);

    /* A moved block keeps the alignment it was allocated with. */
    a = mk(1 << 20);
    size_t q = xalloc(a, U, 8192);
    (void)xalloc(a, U, 1); /* pins q's right neighbour */
    CHECK_RC(ushmemi_alloc_realloc(a, q, 3 * U, &noff, &moved), 0);
    CHECK(moved == 1 && noff % 8192 == 0);
    CHECK_OK(a);
    ushmemi_alloc_destroy(a);
}

/* Two allocators fed the same seeded sequence must return the same offsets.
 * Between steps the second one's metadata is pushed to other heap addresses
 * by unrelated mallocs, so anything keyed on pointers would show. */
static void test_determinism(void)
{
    enum { OPS = 20000, SLOTS = 256 };
    ushmemi_alloc_t *a = mk(4 << 20), *b = mk(4 << 20);
    size_t oa[SLOTS], ob[SLOTS];
    int live[SLOTS] = {0};
    void *noise[64] = {0};

    rng_state = 42;
    for (int i = 0; i < OPS; i++) {
        size_t s = rnd(SLOTS);
        int k = (int)rnd(64);
        free(noise[k]);
        noise[k] = malloc(1 + rnd(200));

        if (!live[s]) {
            size_t sz = 1 + rnd(rnd(4) ? 512 : 65536), al = (size_t)1 << rnd(14);
            int ra = ushmemi_alloc_alloc(a, sz, al, &oa[s]);
            int rb = ushmemi_alloc_alloc(b, sz, al, &ob[s]);
            CHECK(ra == rb);
            if (ra == 0) {
                CHECK(oa[s] == ob[s]);
                live[s] = 1;
            }
        } else if (rnd(3)) {
            CHECK_RC(ushmemi_alloc_free(a, oa[s]), 0);
            CHECK_RC(ushmemi_alloc_free(b, ob[s]), 0);
            live[s] = 0;
        } else {
            size_t sz = 1 + rnd(8192), na = 0, nb = 0;
            int ma = 0, mb = 0;
            int ra = ushmemi_alloc_realloc(a, oa[s], sz, &na, &ma);
            int rb = ushmemi_alloc_realloc(b, ob[s], sz, &nb, &mb);
            CHECK(ra == rb);
            if (ra == 0) {
                CHECK(na == nb && ma == mb);
                if (ma) {
                    CHECK_RC(ushmemi_alloc_free(a, oa[s]), 0);
                    CHECK_RC(ushmemi_alloc_free(b, ob[s]), 0);
                }
                oa[s] = na;
                ob[s] = nb;
            }
        }
        CHECK(ushmemi_alloc_bytes_free(a) == ushmemi_alloc_bytes_free(b));
    }
    for (int k = 0; k < 64; k++)
        free(noise[k]);
    CHECK_OK(a);
    CHECK_OK(b);
    ushmemi_alloc_destroy(a);
    ushmemi_alloc_destroy(b);
}

/* ---- random stress against a shadow model ----
 * The model is an owner map with one entry per min_align unit: it catches any
 * overlap at once, and from it we can recompute exactly what the allocator
 * should report (free bytes, largest free run, whether a request could fit). */

enum { SUNITS = 4096, SSLOTS = 512 };
static int owner[SUNITS]; /* slot + 1, or 0 when free */

typedef struct {
    int live;
    size_t off, size, align;
} slot_t;

static void model_mark(int slot, size_t off, size_t size)
{
    CHECK(off % U == 0 && size % U == 0 && off + size <= (size_t)SUNITS * U);
    for (size_t u = off / U; u < (off + size) / U; u++) {
        CHECK(owner[u] == 0);
        owner[u] = slot + 1;
    }
}

static void model_clear(int slot, size_t off, size_t size)
{
    for (size_t u = off / U; u < (off + size) / U; u++) {
        CHECK(owner[u] == slot + 1);
        owner[u] = 0;
    }
}

/* Could any free run hold `units` units starting at a multiple of align? */
static int model_fits(size_t units, size_t align)
{
    size_t step = align / U;
    for (size_t s = 0; s + units <= SUNITS; s += step) {
        size_t u = 0;
        while (u < units && owner[s + u] == 0)
            u++;
        if (u == units)
            return 1;
    }
    return 0;
}

static void model_compare(const ushmemi_alloc_t *a)
{
    size_t free_units = 0, run = 0, best = 0;
    for (size_t u = 0; u < SUNITS; u++) {
        if (owner[u] == 0) {
            free_units++;
            if (++run > best)
                best = run;
        } else {
            run = 0;
        }
    }
    CHECK(ushmemi_alloc_bytes_free(a) == free_units * U);
    /* Coalescing means the largest free block is the longest free run. */
    CHECK(ushmemi_alloc_largest_free(a) == best * U);
}

static size_t round_u(size_t n)
{
    return (n + U - 1) / U * U;
}

static void test_stress(void)
{
    enum { OPS = 100000 };
    ushmemi_alloc_t *a = mk((size_t)SUNITS * U);
    slot_t *sl = calloc(SSLOTS, sizeof(*sl));
    CHECK(sl != NULL);
    memset(owner, 0, sizeof(owner));
    long n_alloc = 0, n_nomem = 0, n_free = 0, n_inplace = 0, n_moved = 0;

    rng_state = 7;
    for (int i = 0; i < OPS; i++) {
        int s = (int)rnd(SSLOTS);
        slot_t *p = &sl[s];
        /* Mostly small, sometimes large, so the arena keeps running out. */
        size_t sz = 1 + (rnd(8) ? rnd(1024) : rnd(32768));

        if (!p->live) {
            size_t al = rnd(4) ? 1 : (size_t)1 << rnd(13), off = 0;
            size_t eff = al < U ? U : al;
            int rc = ushmemi_alloc_alloc(a, sz, al, &off);
            if (rc == USHMEM_ENOMEM) {
                CHECK(!model_fits(round_u(sz) / U, eff));
                n_nomem++;
            } else {
                CHECK_RC(rc, 0);
                CHECK(off % eff == 0);
                size_t got = 0;
                CHECK_RC(ushmemi_alloc_size_of(a, off, &got), 0);
                CHECK(got == round_u(sz));
                model_mark(s, off, got);
                *p = (slot_t){1, off, got, eff};
                n_alloc++;
            }
        } else if (rnd(2)) {
            CHECK_RC(ushmemi_alloc_free(a, p->off), 0);
            model_clear(s, p->off, p->size);
            p->live = 0;
            n_free++;
        } else {
            size_t noff = 0, need = round_u(sz);
            int moved = -1;
            /* In place is possible exactly when the units after the block
             * that it would grow into are free. */
            size_t end = (p->off + p->size) / U, want_end = (p->off + need) / U;
            int can_inplace = want_end <= SUNITS;
            for (size_t u = end; can_inplace && u < want_end; u++)
                can_inplace = owner[u] == 0;
            int rc = ushmemi_alloc_realloc(a, p->off, sz, &noff, &moved);
            if (rc == USHMEM_ENOMEM) {
                CHECK(!can_inplace && !model_fits(need / U, p->align));
                n_nomem++;
            } else {
                CHECK_RC(rc, 0);
                CHECK(moved == !can_inplace);
                if (moved) {
                    CHECK(noff % p->align == 0);
                    model_mark(s, noff, need); /* old still live: must not overlap */
                    CHECK_RC(ushmemi_alloc_free(a, p->off), 0);
                    model_clear(s, p->off, p->size);
                    n_moved++;
                } else {
                    CHECK(noff == p->off);
                    model_clear(s, p->off, p->size);
                    model_mark(s, noff, need);
                    n_inplace++;
                }
                p->off = noff;
                p->size = need;
            }
        }
        if (i % 97 == 0)
            model_compare(a);
        if (i % 4999 == 0)
            CHECK_OK(a);
    }
    model_compare(a);
    CHECK_OK(a);
    /* The run must actually have exercised every path. */
    CHECK(n_nomem > 100 && n_moved > 100 && n_inplace > 100);

    for (int s = 0; s < SSLOTS; s++)
        if (sl[s].live)
            CHECK_RC(ushmemi_alloc_free(a, sl[s].off), 0);
    CHECK(ushmemi_alloc_bytes_free(a) == (size_t)SUNITS * U);
    CHECK(xalloc(a, (size_t)SUNITS * U, 1) == 0);
    printf("stress: %d ops: %ld alloc, %ld free, %ld realloc in place, %ld moved, %ld ENOMEM\n",
           OPS, n_alloc, n_free, n_inplace, n_moved, n_nomem);
    free(sl);
    ushmemi_alloc_destroy(a);
}

int main(void)
{
    rng_state = 1;
    test_create_args();
    test_bad_args();
    test_double_and_foreign_free();
    test_alignment();
    test_best_fit();
    test_exhaustion_and_coalescing();
    test_realloc();
    test_determinism();
    test_stress();
    printf("test_alloc: PASS\n");
    return 0;
}
