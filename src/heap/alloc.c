/* Symmetric heap allocator; policy and costs are described in alloc.h.
 *
 * Every block, free or live, is a node in an address-ordered doubly linked
 * list that tiles the arena; coalescing only ever looks at list neighbours.
 * A node also sits in exactly one treap: free blocks keyed by (size, offset),
 * which makes "first key >= (need, 0)" the best fit with the lowest offset
 * breaking ties; live blocks keyed by offset, so free() finds its block
 * without trusting anything stored in the arena. One set of tree links
 * suffices because a block is never free and live at once.
 *
 * Treap priorities come from a counter, not from addresses or a clock. Tree
 * shape never changes which block is chosen (only key order does), but
 * keeping it reproducible makes a run on one PE replayable on another. */
#include "heap/alloc.h"

#include <stdint.h>
#include <stdlib.h>

#include "core/internal.h"

typedef struct blk blk_t;
struct blk {
    size_t off, size;
    size_t align;        /* live: alignment asked for, kept by a moving realloc */
    blk_t *prev, *next;  /* address order */
    blk_t *left, *right; /* treap: free tree if is_free, else live tree */
    uint64_t prio;
    int is_free;
};

typedef struct {
    size_t hi, lo;
} tkey_t;

/* A few nodes are kept back so that an operation can reserve every node it
 * may need before it changes anything: a failed malloc then leaves the
 * allocator exactly as it was, rather than half-split. */
#define SPARE_MAX 8

struct ushmemi_alloc {
    size_t arena; /* usable size: a multiple of min_align */
    size_t min_align;
    size_t bytes_free;
    blk_t *head; /* block at offset 0 */
    blk_t *free_root, *live_root;
    blk_t *spare; /* reserve, chained through ->next */
    int nspare;
    uint64_t prio_seq;
};

/* ---- nodes ---- */

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int reserve(ushmemi_alloc_t *a, int k)
{
    while (a->nspare < k) {
        blk_t *b = malloc(sizeof(*b));
        if (!b)
            return USHMEM_ENOMEM;
        b->next = a->spare;
        a->spare = b;
        a->nspare++;
    }
    return 0;
}

/* Only after reserve() said yes. */
static blk_t *take(ushmemi_alloc_t *a)
{
    blk_t *b = a->spare;
    a->spare = b->next;
    a->nspare--;
    *b = (blk_t){.prio = splitmix64(a->prio_seq++)};
    return b;
}

static void give(ushmemi_alloc_t *a, blk_t *b)
{
    if (a->nspare >= SPARE_MAX) {
        free(b);
        return;
    }
    b->next = a->spare;
    a->spare = b;
    a->nspare++;
}

static void link_after(blk_t *x, blk_t *n)
{
    n->prev = x;
    n->next = x->next;
    if (x->next)
        x->next->prev = n;
    x->next = n;
}

static void link_before(ushmemi_alloc_t *a, blk_t *x, blk_t *n)
{
    n->next = x;
    n->prev = x->prev;
    if (x->prev)
        x->prev->next = n;
    else
        a->head = n;
    x->prev = n;
}

static void unlink_blk(ushmemi_alloc_t *a, blk_t *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        a->head = b->next;
    if (b->next)
        b->next->prev = b->prev;
}

/* ---- treaps ---- */

static tkey_t key_of(const blk_t *b)
{
    return b->is_free ? (tkey_t){b->size, b->off} : (tkey_t){b->off, 0};
}

static int key_cmp(tkey_t x, tkey_t y)
{
    if (x.hi != y.hi)
        return x.hi < y.hi ? -1 : 1;
    if (x.lo != y.lo)
        return x.lo < y.lo ? -1 : 1;
    return 0;
}

/* l gets keys < k, r gets keys >= k. */
static void tree_split(blk_t *t, tkey_t k, blk_t **l, blk_t **r)
{
    if (!t) {
        *l = *r = NULL;
    } else if (key_cmp(key_of(t), k) < 0) {
        tree_split(t->right, k, &t->right, r);
        *l = t;
    } else {
        tree_split(t->left, k, l, &t->left);
        *r = t;
    }
}

/* Every key in l is below every key in r. */
static blk_t *tree_merge(blk_t *l, blk_t *r)
{
    if (!l)
        return r;
    if (!r)
        return l;
    if (l->prio > r->prio) {
        l->right = tree_merge(l->right, r);
        return l;
    }
    r->left = tree_merge(l, r->left);
    return r;
}

static blk_t *tree_insert(blk_t *t, blk_t *n)
{
    if (!t) {
        n->left = n->right = NULL;
        return n;
    }
    if (n->prio > t->prio) {
        tree_split(t, key_of(n), &n->left, &n->right);
        return n;
    }
    if (key_cmp(key_of(n), key_of(t)) < 0)
        t->left = tree_insert(t->left, n);
    else
        t->right = tree_insert(t->right, n);
    return t;
}

/* n must be in t, and its key unchanged since it was inserted. */
static blk_t *tree_erase(blk_t *t, const blk_t *n)
{
    if (t == n)
        return tree_merge(t->left, t->right);
    if (key_cmp(key_of(n), key_of(t)) < 0)
        t->left = tree_erase(t->left, n);
    else
        t->right = tree_erase(t->right, n);
    return t;
}

/* First node whose key is >= k (> k when strict). */
static blk_t *tree_first_ge(blk_t *t, tkey_t k, int strict)
{
    blk_t *best = NULL;
    while (t) {
        int c = key_cmp(key_of(t), k);
        if (c > 0 || (c == 0 && !strict)) {
            best = t;
            t = t->left;
        } else {
            t = t->right;
        }
    }
    return best;
}

static blk_t *find_live(const ushmemi_alloc_t *a, size_t off)
{
    blk_t *t = a->live_root;
    while (t && t->off != off)
        t = off < t->off ? t->left : t->right;
    return t;
}

/* ---- allocation ---- */

static int round_size(const ushmemi_alloc_t *a, size_t size, size_t *need)
{
    if (size == 0 || size > SIZE_MAX - (a->min_align - 1))
        return USHMEM_EINVAL;
    *need = (size + a->min_align - 1) & ~(a->min_align - 1);
    return 0;
}

static int is_pow2(size_t x)
{
    return x != 0 && (x & (x - 1)) == 0;
}

/* Candidates come in (size, offset) order, so the first that fits is the
 * best fit. Offsets are multiples of min_align, so padding never exceeds
 * align - min_align: once a block is that much larger than need it fits, and
 * the scan past the first candidate is bounded by the blocks in between. */
static blk_t *find_fit(const ushmemi_alloc_t *a, size_t need, size_t align, size_t *pad)
{
    blk_t *b = tree_first_ge(a->free_root, (tkey_t){need, 0}, 0);
    while (b) {
        size_t p = (align - (b->off & (align - 1))) & (align - 1);
        if (p <= b->size - need) {
            *pad = p;
            return b;
        }
        b = tree_first_ge(a->free_root, key_of(b), 1);
    }
    return NULL;
}

/* need: already rounded; align: a power of two >= min_align. */
static int alloc_rounded(ushmemi_alloc_t *a, size_t need, size_t align, size_t *off)
{
    size_t pad = 0;
    blk_t *b = find_fit(a, need, align, &pad);
    if (!b)
        return USHMEM_ENOMEM;
    int rc = reserve(a, 2);
    if (rc)
        return rc;

    /* Both fragments border b or a live block (free neighbours are always
     * coalesced), so they need no merging of their own. */
    a->free_root = tree_erase(a->free_root, b);
    if (pad) {
        blk_t *lead = take(a);
        lead->off = b->off;
        lead->size = pad;
        lead->is_free = 1;
        link_before(a, b, lead);
        a->free_root = tree_insert(a->free_root, lead);
        b->off += pad;
        b->size -= pad;
    }
    if (b->size > need) {
        blk_t *tail = take(a);
        tail->off = b->off + need;
        tail->size = b->size - need;
        tail->is_free = 1;
        link_after(b, tail);
        a->free_root = tree_insert(a->free_root, tail);
        b->size = need;
    }
    b->is_free = 0;
    b->align = align;
    a->live_root = tree_insert(a->live_root, b);
    a->bytes_free -= need;
    *off = b->off;
    return 0;
}

int ushmemi_alloc_create(ushmemi_alloc_t **ap, size_t arena_size, size_t min_align)
{
    if (!ap || !is_pow2(min_align))
        return USHMEM_EINVAL;
    size_t arena = arena_size & ~(min_align - 1);
    if (arena == 0)
        return USHMEM_EINVAL;

    ushmemi_alloc_t *a = calloc(1, sizeof(*a));
    if (!a)
        return USHMEM_ENOMEM;
    a->arena = arena;
    a->min_align = min_align;
    if (reserve(a, 1)) {
        free(a);
        return USHMEM_ENOMEM;
    }
    blk_t *b = take(a);
    b->size = arena;
    b->is_free = 1;
    a->head = b;
    a->free_root = tree_insert(NULL, b);
    a->bytes_free = arena;
    *ap = a;
    return 0;
}

void ushmemi_alloc_destroy(ushmemi_alloc_t *a)
{
    if (!a)
        return;
    blk_t *b = a->head;
    while (b) {
        blk_t *next = b->next;
        free(b);
        b = next;
    }
    b = a->spare;
    while (b) {
        blk_t *next = b->next;
        free(b);
        b = next;
    }
    free(a);
}

int ushmemi_alloc_alloc(ushmemi_alloc_t *a, size_t size, size_t align, size_t *off)
{
    size_t need;
    if (!a || !off || !is_pow2(align) || round_size(a, size, &need))
        return USHMEM_EINVAL;
    if (align < a->min_align)
        align = a->min_align;
    return alloc_rounded(a, need, align, off);
}

int ushmemi_alloc_free(ushmemi_alloc_t *a, size_t off)
{
    if (!a)
        return USHMEM_EINVAL;
    blk_t *b = find_live(a, off);
    if (!b)
        return USHMEM_ENOTFOUND;

    a->live_root = tree_erase(a->live_root, b);
    b->is_free = 1;
    a->bytes_free += b->size;
    if (b->prev && b->prev->is_free) {
        blk_t *p = b->prev;
        a->free_root = tree_erase(a->free_root, p);
        p->size += b->size;
        unlink_blk(a, b);
        give(a, b);
        b = p;
    }
    if (b->next && b->next->is_free) {
        blk_t *n = b->next;
        a->free_root = tree_erase(a->free_root, n);
        b->size += n->size;
        unlink_blk(a, n);
        give(a, n);
    }
    a->free_root = tree_insert(a->free_root, b);
    return 0;
}

int ushmemi_alloc_realloc(ushmemi_alloc_t *a, size_t off, size_t new_size, size_t *new_off,
                          int *moved)
{
    size_t need;
    if (!a || !new_off || !moved || round_size(a, new_size, &need))
        return USHMEM_EINVAL;
    blk_t *b = find_live(a, off);
    if (!b)
        return USHMEM_ENOTFOUND;

    if (need <= b->size) {
        size_t rest = b->size - need;
        if (rest) {
            blk_t *n = b->next;
            if (n && n->is_free) {
                a->free_root = tree_erase(a->free_root, n);
                n->off -= rest;
                n->size += rest;
                a->free_root = tree_insert(a->free_root, n);
            } else {
                int rc = reserve(a, 1);
                if (rc)
                    return rc;
                n = take(a);
                n->off = b->off + need;
                n->size = rest;
                n->is_free = 1;
                link_after(b, n);
                a->free_root = tree_insert(a->free_root, n);
            }
            /* The live tree is keyed by offset alone: no re-insertion. */
            b->size = need;
            a->bytes_free += rest;
        }
        *new_off = off;
        *moved = 0;
        return 0;
    }

    size_t grow = need - b->size;
    blk_t *n = b->next;
    if (n && n->is_free && n->size >= grow) {
        a->free_root = tree_erase(a->free_root, n);
        if (n->size == grow) {
            unlink_blk(a, n);
            give(a, n);
        } else {
            n->off += grow;
            n->size -= grow;
            a->free_root = tree_insert(a->free_root, n);
        }
        b->size = need;
        a->bytes_free -= grow;
        *new_off = off;
        *moved = 0;
        return 0;
    }

    size_t o;
    int rc = alloc_rounded(a, need, b->align, &o);
    if (rc)
        return rc;
    *new_off = o;
    *moved = 1;
    return 0;
}

int ushmemi_alloc_size_of(const ushmemi_alloc_t *a, size_t off, size_t *size)
{
    if (!a || !size)
        return USHMEM_EINVAL;
    const blk_t *b = find_live(a, off);
    if (!b)
        return USHMEM_ENOTFOUND;
    *size = b->size;
    return 0;
}

size_t ushmemi_alloc_bytes_free(const ushmemi_alloc_t *a)
{
    return a ? a->bytes_free : 0;
}

size_t ushmemi_alloc_largest_free(const ushmemi_alloc_t *a)
{
    const blk_t *t = a ? a->free_root : NULL;
    if (!t)
        return 0;
    while (t->right)
        t = t->right;
    return t->size;
}

/* ---- consistency check ---- */

/* Returns the node count, or -1 on a violation. lo/hi bound the keys
 * (exclusive) that ancestors allow here. */
static long check_tree(const blk_t *t, int want_free, const tkey_t *lo, const tkey_t *hi,
                       uint64_t max_prio)
{
    if (!t)
        return 0;
    tkey_t k = key_of(t);
    if (t->is_free != want_free || t->prio > max_prio)
        return -1;
    if ((lo && key_cmp(k, *lo) <= 0) || (hi && key_cmp(k, *hi) >= 0))
        return -1;
    long l = check_tree(t->left, want_free, lo, &k, t->prio);
    long r = check_tree(t->right, want_free, &k, hi, t->prio);
    if (l < 0 || r < 0)
        return -1;
    return l + r + 1;
}

int ushmemi_alloc_check(const ushmemi_alloc_t *a)
{
    if (!a || !a->head || a->head->prev)
        return USHMEM_EINVAL;
    size_t expect_off = 0, free_sum = 0;
    long nfree = 0, nlive = 0;
    for (const blk_t *b = a->head; b; b = b->next) {
        if (b->off != expect_off || b->size == 0 || b->size > a->arena - b->off)
            return USHMEM_EINVAL;
        if ((b->off | b->size) & (a->min_align - 1))
            return USHMEM_EINVAL;
        if (b->next && b->next->prev != b)
            return USHMEM_EINVAL;
        if (b->is_free) {
            if (b->next && b->next->is_free)
                return USHMEM_EINVAL;
            free_sum += b->size;
            nfree++;
        } else {
            if (b->off & (b->align - 1))
                return USHMEM_EINVAL;
            nlive++;
        }
        expect_off = b->off + b->size;
    }
    if (expect_off != a->arena || free_sum != a->bytes_free)
        return USHMEM_EINVAL;
    if (check_tree(a->free_root, 1, NULL, NULL, UINT64_MAX) != nfree)
        return USHMEM_EINVAL;
    if (check_tree(a->live_root, 0, NULL, NULL, UINT64_MAX) != nlive)
        return USHMEM_EINVAL;
    return 0;
}
