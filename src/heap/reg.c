/* Registration table: see reg.h. Ranges are half-open [start, end) in
 * uintptr_t, so comparisons never form a pointer past an object. */
#include "heap/reg.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

typedef struct {
    uintptr_t start, end;
} range_t;

struct ushmemi_reg {
    range_t *v; /* sorted by start; disjoint, so also sorted by end */
    size_t n, cap;
};

int ushmemi_reg_create(ushmemi_reg_t **r)
{
    if (!r)
        return USHMEM_EINVAL;
    ushmemi_reg_t *t = calloc(1, sizeof(*t));
    if (!t)
        return USHMEM_ENOMEM;
    *r = t;
    return 0;
}

void ushmemi_reg_destroy(ushmemi_reg_t *r)
{
    if (!r)
        return;
    free(r->v);
    free(r);
}

/* Index of the last range with start <= a, or n when there is none. */
static size_t last_at_or_below(const ushmemi_reg_t *r, uintptr_t a)
{
    size_t lo = 0, hi = r->n; /* answer is lo - 1 once lo == hi */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->v[mid].start <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? lo - 1 : r->n;
}

int ushmemi_reg_add(ushmemi_reg_t *r, const void *addr, size_t len)
{
    uintptr_t a = (uintptr_t)addr;
    /* end == 0 would be a range reaching the very top of the address space;
     * refusing it lets every end be a plain, non-wrapping uintptr_t. */
    if (!r || !addr || len == 0 || len > UINTPTR_MAX - a)
        return USHMEM_EINVAL;
    uintptr_t e = a + len;

    size_t i = last_at_or_below(r, a);
    size_t ins = i == r->n ? 0 : i + 1; /* insertion point keeps v sorted */
    if (ins > 0 && r->v[ins - 1].end > a)
        return USHMEM_EOVERLAP;
    if (ins < r->n && r->v[ins].start < e)
        return USHMEM_EOVERLAP;

    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 8;
        if (cap > SIZE_MAX / sizeof(range_t))
            return USHMEM_ENOMEM;
        range_t *v = realloc(r->v, cap * sizeof(range_t));
        if (!v)
            return USHMEM_ENOMEM;
        r->v = v;
        r->cap = cap;
    }
    memmove(&r->v[ins + 1], &r->v[ins], (r->n - ins) * sizeof(range_t));
    r->v[ins] = (range_t){a, e};
    r->n++;
    return 0;
}

int ushmemi_reg_remove(ushmemi_reg_t *r, const void *addr)
{
    if (!r)
        return USHMEM_EINVAL;
    uintptr_t a = (uintptr_t)addr;
    size_t i = last_at_or_below(r, a);
    if (i == r->n || a >= r->v[i].end)
        return USHMEM_ENOTFOUND;
    memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof(range_t));
    r->n--;
    return 0;
}

void ushmemi_reg_clear(ushmemi_reg_t *r)
{
    /* Keep the array: programs that unregister_all tend to register again. */
    if (r)
        r->n = 0;
}

int ushmemi_reg_lookup(const ushmemi_reg_t *r, const void *addr, size_t len)
{
    uintptr_t a = (uintptr_t)addr;
    if (!r || len > UINTPTR_MAX - a)
        return 0;
    size_t i = last_at_or_below(r, a);
    if (i == r->n || a >= r->v[i].end)
        return 0;
    return len <= r->v[i].end - a;
}

size_t ushmemi_reg_count(const ushmemi_reg_t *r)
{
    return r ? r->n : 0;
}
