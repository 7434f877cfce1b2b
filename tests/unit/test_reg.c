/* Unit test of the buffer registration table (src/heap/reg.c). Single
 * process, no OpenSHMEM. Exit 0 on pass; the first failure prints file:line
 * and exits 1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/internal.h"
#include "heap/reg.h"

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

/* Ranges are carved out of one real buffer so every address is a valid
 * pointer into the same object. */
static char buf[4096];
#define P(i) ((const void *)(buf + (i)))

static ushmemi_reg_t *mk(void)
{
    ushmemi_reg_t *r = NULL;
    CHECK_RC(ushmemi_reg_create(&r), 0);
    CHECK(r != NULL && ushmemi_reg_count(r) == 0);
    return r;
}

static void test_args(void)
{
    ushmemi_reg_t *r = mk();
    CHECK_RC(ushmemi_reg_create(NULL), USHMEM_EINVAL);
    CHECK_RC(ushmemi_reg_add(r, NULL, 16), USHMEM_EINVAL);
    CHECK_RC(ushmemi_reg_add(r, P(0), 0), USHMEM_EINVAL);
    /* Would wrap around the top of the address space. */
    CHECK_RC(ushmemi_reg_add(r, P(0), SIZE_MAX), USHMEM_EINVAL);
    CHECK_RC(ushmemi_reg_add(r, (const void *)(UINTPTR_MAX - 15), 16), USHMEM_EINVAL);
    CHECK_RC(ushmemi_reg_add(r, (const void *)(UINTPTR_MAX - 15), 15), 0);
    CHECK(ushmemi_reg_lookup(r, (const void *)(UINTPTR_MAX - 1), 1));
    CHECK(!ushmemi_reg_lookup(r, (const void *)(UINTPTR_MAX - 1), 2));
    CHECK(!ushmemi_reg_lookup(r, (const void *)UINTPTR_MAX, 1));
    CHECK(!ushmemi_reg_lookup(r, (const void *)UINTPTR_MAX, 2)); /* wraps */
    CHECK_RC(ushmemi_reg_remove(r, (const void *)(UINTPTR_MAX - 15)), 0);
    CHECK(ushmemi_reg_count(r) == 0);
    CHECK_RC(ushmemi_reg_remove(r, NULL), USHMEM_ENOTFOUND);
    CHECK_RC(ushmemi_reg_remove(r, P(0)), USHMEM_ENOTFOUND);
    CHECK(!ushmemi_reg_lookup(r, P(0), 1));
    CHECK(!ushmemi_reg_lookup(NULL, P(0), 1));
    CHECK(ushmemi_reg_count(NULL) == 0);
    ushmemi_reg_clear(NULL);
    ushmemi_reg_destroy(NULL);
    ushmemi_reg_destroy(r);
}

static void test_overlap(void)
{
    ushmemi_reg_t *r = mk();
    CHECK_RC(ushmemi_reg_add(r, P(100), 100), 0); /* [100, 200) */

    CHECK_RC(ushmemi_reg_add(r, P(100), 100), USHMEM_EOVERLAP); /* identical */
    CHECK_RC(ushmemi_reg_add(r, P(120), 10), USHMEM_EOVERLAP);  /* inside */
    CHECK_RC(ushmemi_reg_add(r, P(50), 300), USHMEM_EOVERLAP);  /* covers */
    CHECK_RC(ushmemi_reg_add(r, P(50), 51), USHMEM_EOVERLAP);   /* straddles start */
    CHECK_RC(ushmemi_reg_add(r, P(199), 10), USHMEM_EOVERLAP);  /* straddles end */
    CHECK_RC(ushmemi_reg_add(r, P(100), 1), USHMEM_EOVERLAP);   /* first byte */
    CHECK_RC(ushmemi_reg_add(r, P(199), 1), USHMEM_EOVERLAP);   /* last byte */
    CHECK(ushmemi_reg_count(r) == 1);

    /* Touching either edge shares no byte. */
    CHECK_RC(ushmemi_reg_add(r, P(50), 50), 0);  /* [50, 100) */
    CHECK_RC(ushmemi_reg_add(r, P(200), 50), 0); /* [200, 250) */
    CHECK_RC(ushmemi_reg_add(r, P(300), 10), 0); /* [300, 310) */
    CHECK(ushmemi_reg_count(r) == 4);

    /* Gap [250, 300) between two ranges: exact fit is fine, more is not. */
    CHECK_RC(ushmemi_reg_add(r, P(249), 2), USHMEM_EOVERLAP);
    CHECK_RC(ushmemi_reg_add(r, P(299), 2), USHMEM_EOVERLAP);
    CHECK_RC(ushmemi_reg_add(r, P(240), 80), USHMEM_EOVERLAP); /* spans several */
    CHECK_RC(ushmemi_reg_add(r, P(250), 50), 0);
    CHECK(ushmemi_reg_count(r) == 5);

    /* Lookup: within one range only; adjacent ranges do not combine. */
    CHECK(ushmemi_reg_lookup(r, P(100), 100));
    CHECK(ushmemi_reg_lookup(r, P(150), 50));
    CHECK(ushmemi_reg_lookup(r, P(199), 1));
    CHECK(ushmemi_reg_lookup(r, P(150), 0));
    CHECK(!ushmemi_reg_lookup(r, P(150), 51));
    CHECK(!ushmemi_reg_lookup(r, P(90), 20)); /* spans [50,100) and [100,200) */
    CHECK(!ushmemi_reg_lookup(r, P(310), 1));
    CHECK(!ushmemi_reg_lookup(r, P(310), 0));
    CHECK(!ushmemi_reg_lookup(r, P(49), 1));
    CHECK(ushmemi_reg_lookup(r, P(309), 1));
    ushmemi_reg_destroy(r);
}

static void test_remove_and_clear(void)
{
    ushmemi_reg_t *r = mk();
    for (int i = 0; i < 10; i++)
        CHECK_RC(ushmemi_reg_add(r, P(i * 100), 50), 0); /* [100i, 100i + 50) */

    CHECK_RC(ushmemi_reg_remove(r, P(350)), USHMEM_ENOTFOUND); /* one past the end */
    CHECK_RC(ushmemi_reg_remove(r, P(375)), USHMEM_ENOTFOUND); /* in a gap */
    CHECK_RC(ushmemi_reg_remove(r, P(349)), 0);                /* last byte */
    CHECK(!ushmemi_reg_lookup(r, P(300), 1));
    CHECK_RC(ushmemi_reg_remove(r, P(300)), USHMEM_ENOTFOUND); /* already gone */
    CHECK_RC(ushmemi_reg_remove(r, P(525)), 0);                /* interior */
    CHECK_RC(ushmemi_reg_remove(r, P(0)), 0);                  /* first range, start */
    CHECK_RC(ushmemi_reg_remove(r, P(900)), 0);                /* last range */
    CHECK(ushmemi_reg_count(r) == 6);
    CHECK(ushmemi_reg_lookup(r, P(100), 50) && ushmemi_reg_lookup(r, P(800), 50));

    /* The freed space can be registered again, even wider than before. */
    CHECK_RC(ushmemi_reg_add(r, P(260), 140), 0); /* [260, 400) */
    CHECK(ushmemi_reg_lookup(r, P(300), 100));
    CHECK_RC(ushmemi_reg_add(r, P(399), 2), USHMEM_EOVERLAP);

    ushmemi_reg_clear(r);
    CHECK(ushmemi_reg_count(r) == 0);
    CHECK(!ushmemi_reg_lookup(r, P(100), 1));
    CHECK_RC(ushmemi_reg_remove(r, P(100)), USHMEM_ENOTFOUND);
    CHECK_RC(ushmemi_reg_add(r, P(0), sizeof(buf)), 0); /* usable after clear */
    CHECK(ushmemi_reg_count(r) == 1);
    ushmemi_reg_destroy(r);
}

/* Random adds and removes against a byte map, enough to grow the array
 * several times and to exercise every insertion position. */
static void test_random(void)
{
    static int owner[sizeof(buf)]; /* range start + 1, or 0 */
    ushmemi_reg_t *r = mk();
    uint64_t x = 12345;
    size_t live = 0;

    for (int i = 0; i < 200000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t a = (size_t)(x >> 33) % sizeof(buf);
        size_t len = 1 + (size_t)(x >> 20) % 24;
        if (a + len > sizeof(buf))
            len = sizeof(buf) - a;
        if ((x >> 10) & 1) {
            int free_all = 1;
            for (size_t k = a; k < a + len; k++)
                free_all &= owner[k] == 0;
            int rc = ushmemi_reg_add(r, P(a), len);
            CHECK_RC(rc, free_all ? 0 : USHMEM_EOVERLAP);
            if (rc == 0) {
                for (size_t k = a; k < a + len; k++)
                    owner[k] = (int)a + 1;
                live++;
            }
        } else {
            int o = owner[a];
            CHECK_RC(ushmemi_reg_remove(r, P(a)), o ? 0 : USHMEM_ENOTFOUND);
            if (o) {
                for (size_t k = (size_t)o - 1; k < sizeof(buf) && owner[k] == o; k++)
                    owner[k] = 0;
                live--;
            }
        }
        int whole = owner[a] != 0;
        for (size_t k = a; k < a + len; k++)
            whole &= owner[k] == owner[a];
        CHECK(ushmemi_reg_lookup(r, P(a), len) == whole);
        CHECK(ushmemi_reg_count(r) == live);
    }
    ushmemi_reg_destroy(r);
}

int main(void)
{
    test_args();
    test_overlap();
    test_remove_and_clear();
    test_random();
    printf("test_reg: PASS\n");
    return 0;
}
