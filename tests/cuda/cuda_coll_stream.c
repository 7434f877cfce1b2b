/* Stream-ordered collectives on device memory under each algorithm that
 * USHMEM_CUDA_COLL picks (auto, copy, leader, kernel): alltoallmem,
 * broadcastmem (every root), fcollectmem and typed reductions (int64 sum,
 * uint64 xor, int32 max, double sum bit for bit in member order, int64 min,
 * uint32 or; in place too), mixed with the host-API collectives on
 * device-heap buffers and with barriers on the stream.
 *
 * Each PE's buffers are regions of one device arena. A batch is a plan drawn
 * from a seed that every PE shares: 50 collectives back to back on one
 * non-blocking stream (16 with USHMEM_TEST_QUICK=1), block sizes from 1 B to
 * 1 MiB including odd ones, sources and destinations at random offsets (not
 * 16-byte aligned either), chains where one collective's output is the next
 * one's input, nelems 0. Every PE keeps a host model of every PE's arena and
 * applies the plan to it; after the batch it reads its whole arena back (one
 * stream synchronize) and compares every byte, so a collective that writes
 * too much, too little, in the wrong order or into an idle PE is caught.
 * Teams: SHMEM_TEAM_WORLD, the world reversed, one-PE teams and, at 4 PEs,
 * two pair teams at once, the odd pair alone (PEs 0 and 2 idle) and the team
 * {3,2,1}. Half the batches also run host-API collectives (after a stream
 * synchronize, as they use the library's own stream).
 * USHMEM_TEST_ROUNDS=n repeats the schedule; USHMEM_TEST_VERBOSE=1 times
 * each batch. */
#include "cuda_test.h"

#define MAXPE  8
#define MAXOPS 512
#define BZONE  ((size_t)6 << 20) /* random bytes: sources */
#define DZONE  ((size_t)2 << 20) /* a double in every 8-byte word: double-sum sources */
#define DEST0  (BZONE + DZONE)   /* destinations are handed out from here */
#define ARENA  ((size_t)40 << 20)
#define GUARD  64 /* bytes a nelems-0 destination reserves (must stay unchanged) */

static const size_t sizes[] = {1, 7, 8, 100, 1003, 4096, 65544, 1048576};
#define NSIZES (sizeof sizes / sizeof sizes[0])

enum { C_ALLTOALL, C_BCAST, C_FCOLLECT, C_RED, C_BARRIER_ALL, C_TEAM_BARRIER };
enum { R_I64_SUM, R_U64_XOR, R_I32_MAX, R_F64_SUM, R_I64_MIN, R_U32_OR, NRED };
static const struct {
    const char *name;
    size_t esize;
} reds[NRED] = {{"int64_sum", 8},  {"uint64_xor", 8}, {"int32_max", 4},
                {"double_sum", 8}, {"int64_min", 8},  {"uint32_or", 4}};

/* Team layouts: groups of `size` members each, members in team order. */
enum { T_WORLD, T_REV, T_SELF, T_PAIRS, T_ODD, T_TRIO, NKINDS };
typedef struct {
    const char *name;
    int avail, ngroups, size;
    int pe[MAXPE][MAXPE]; /* world PE of member i of group g */
    shmem_team_t mine;    /* this PE's team, or SHMEM_TEAM_INVALID: idle */
    shmem_team_t extra[MAXPE];
    int nextra; /* teams to destroy at the end */
} layout_t;

typedef struct {
    int kind, red, root;
    int host;    /* the blocking host API (after a stream synchronize) */
    int chain;   /* the source is an earlier collective's output, no host sync since */
    int inplace; /* reduction with dest == source */
    size_t d, s; /* arena offsets */
    size_t n;    /* bytes per block (alltoall, fcollect), bytes (broadcast), elements (reduce) */
} op_t;

typedef struct {
    op_t ops[MAXOPS];
    int nops, ncoll, tn, mixed, nbcast, nzero, root0, full;
    size_t top; /* destinations so far end below this */
    uint64_t st;
} plan_t;

static int me, np;
static unsigned char *img[MAXPE]; /* the model: every PE's arena */
static const char *alg;
static struct {
    long coll, stream, host, chain, inplace, zero, batches;
} total;

static uint64_t rnd(uint64_t *st)
{
    *st = test_mix(*st);
    return *st;
}

static size_t below(plan_t *p, size_t n)
{
    return n ? (size_t)(rnd(&p->st) % n) : 0;
}

static size_t dest_len(const op_t *o, int tn)
{
    switch (o->kind) {
    case C_ALLTOALL:
    case C_FCOLLECT: return (size_t)tn * o->n;
    case C_BCAST: return o->n;
    case C_RED: return o->n * reds[o->red].esize;
    }
    return 0;
}

/* ---- plans ---- */

static op_t *add(plan_t *p, int kind)
{
    CHECK(p->nops < MAXOPS, "plan too long");
    op_t *o = &p->ops[p->nops++];
    memset(o, 0, sizeof *o);
    o->kind = kind;
    if (kind <= C_RED)
        p->ncoll++;
    return o;
}

/* A block size whose destinations (dmult bytes per byte of block) fit in
 * what is left of the arena and whose source fits in smax bytes; SIZE_MAX
 * when none does (the plan is full). */
static size_t pick(plan_t *p, size_t dmult, size_t smax)
{
    size_t room = ARENA - p->top, i = below(p, NSIZES);
    for (;; i--) {
        size_t need = dmult * (sizes[i] + 8) + 512;
        if (need <= room && sizes[i] + 8 <= smax)
            return sizes[i];
        if (i == 0)
            return SIZE_MAX;
    }
}

/* len bytes at an offset aligned to align: random bytes, doubles (dbl) or,
 * one time in four, anywhere below the destinations handed out so far
 * (earlier outputs included). Never overlaps a destination handed out later. */
static size_t src_at(plan_t *p, size_t len, size_t align, int dbl)
{
    size_t lo = 0, span = BZONE;
    if (dbl) {
        lo = BZONE;
        span = DZONE;
    } else if (below(p, 4) == 0) {
        span = p->top;
    }
    CHECK(len <= span, "source of %zu bytes", len);
    size_t off = lo + below(p, span - len + 1);
    return off - off % align;
}

static size_t dst_at(plan_t *p, size_t len, size_t align)
{
    size_t o = p->top + below(p, 48);
    o += (align - o % align) % align;
    size_t end = o + (len ? len : GUARD);
    CHECK(end + GUARD <= ARENA, "plan: destination of %zu bytes does not fit", len);
    p->top = end;
    return o;
}

static int next_root(plan_t *p)
{
    return (p->root0 + p->nbcast++) % p->tn;
}

static op_t *mem_op(plan_t *p, int kind, size_t d, size_t s, size_t n, int chain)
{
    op_t *o = add(p, kind);
    o->d = d;
    o->s = s;
    o->n = n;
    o->chain = chain;
    if (kind == C_BCAST)
        o->root = next_root(p);
    return o;
}

static op_t *red_op(plan_t *p, int r, size_t d, size_t s, size_t nr, int chain)
{
    op_t *o = add(p, C_RED);
    o->red = r;
    o->d = d;
    o->s = s;
    o->n = nr;
    o->chain = chain;
    o->inplace = d == s;
    return o;
}

static void gen_single(plan_t *p)
{
    int tn = p->tn, kind = (int)below(p, 4);
    int host = p->mixed && below(p, 2) == 0, zero = below(p, 16) == 0;
    if (p->nbcast < tn) { /* each batch starts with a broadcast from every root */
        kind = C_BCAST;
        zero = 0;
    } else if (!p->nzero) { /* and then one with nelems 0 */
        zero = 1;
    }
    p->nzero += zero;
    op_t *o;
    if (kind == C_RED) {
        int r = (int)below(p, NRED), dbl = r == R_F64_SUM;
        size_t es = reds[r].esize, sz = pick(p, 1, dbl ? DZONE : BZONE);
        if (sz == SIZE_MAX) {
            p->full = 1;
            return;
        }
        size_t nr = zero ? 0 : (sz + es - 1) / es;
        int inplace = !dbl && below(p, 4) == 0;
        size_t s = inplace ? 0 : src_at(p, nr * es, es, dbl);
        size_t d = dst_at(p, nr * es, es);
        o = red_op(p, r, d, inplace ? d : s, nr, 0);
    } else {
        size_t smult = kind == C_ALLTOALL ? (size_t)tn : 1;
        size_t dmult = kind == C_BCAST ? 1 : (size_t)tn;
        size_t sz = pick(p, dmult, BZONE / smult);
        if (sz == SIZE_MAX) {
            p->full = 1;
            return;
        }
        if (zero)
            sz = 0;
        size_t s = src_at(p, smult * sz, 1, 0);
        o = mem_op(p, kind, dst_at(p, dmult * sz, 1), s, sz, 0);
    }
    o->host = host;
}

/* The other reduction a chain applies in place: same element type. */
static int partner(plan_t *p, int r)
{
    static const int r8[] = {R_I64_SUM, R_U64_XOR, R_I64_MIN};
    if (r == R_F64_SUM)
        return r;
    if (reds[r].esize == 4)
        return below(p, 2) ? R_I32_MAX : R_U32_OR;
    return r8[below(p, 3)];
}

/* Collectives whose input is the previous one's output, all on the stream. */
static void gen_chain(plan_t *p)
{
    size_t tn = (size_t)p->tn, sz, s, d1, d2;
    int r = (int)below(p, NRED), dbl = r == R_F64_SUM;
    size_t es = reds[r].esize, smax = dbl ? DZONE : BZONE;
    switch (below(p, 6)) {
    case 0: /* alltoall, then alltoall back: the original */
        if ((sz = pick(p, 2 * tn, BZONE / tn)) == SIZE_MAX)
            break;
        s = src_at(p, tn * sz, 1, 0);
        d1 = dst_at(p, tn * sz, 1);
        d2 = dst_at(p, tn * sz, 1);
        mem_op(p, C_ALLTOALL, d1, s, sz, 0);
        mem_op(p, C_ALLTOALL, d2, d1, sz, 1);
        return;
    case 1: /* broadcast, then reduce the output (in place half the time) */
        if ((sz = pick(p, 2, smax)) == SIZE_MAX)
            break;
        sz = (sz + es - 1) / es;
        s = src_at(p, sz * es, es, dbl);
        d1 = dst_at(p, sz * es, es);
        mem_op(p, C_BCAST, d1, s, sz * es, 0);
        d2 = below(p, 2) ? d1 : dst_at(p, sz * es, es);
        red_op(p, r, d2, d1, sz, 1);
        return;
    case 2: /* fcollect, then reduce the result in place */
        if ((sz = pick(p, tn, smax)) == SIZE_MAX)
            break;
        sz = (sz + es - 1) / es;
        s = src_at(p, sz * es, es, dbl);
        d1 = dst_at(p, tn * sz * es, es);
        mem_op(p, C_FCOLLECT, d1, s, sz * es, 0);
        red_op(p, r, d1, d1, tn * sz, 1);
        return;
    case 3: /* reduce, reduce that in place with another op, broadcast it */
        if ((sz = pick(p, 2, smax)) == SIZE_MAX)
            break;
        sz = (sz + es - 1) / es;
        s = src_at(p, sz * es, es, dbl);
        d1 = dst_at(p, sz * es, es);
        red_op(p, r, d1, s, sz, 0);
        red_op(p, partner(p, r), d1, d1, sz, 1);
        mem_op(p, C_BCAST, dst_at(p, sz * es, 1), d1, sz * es, 1);
        return;
    case 4: /* alltoall, then fcollect of the output (blocks of tn x size) */
        if ((sz = pick(p, tn + tn * tn, 65544 + 8)) == SIZE_MAX)
            break;
        s = src_at(p, tn * sz, 1, 0);
        d1 = dst_at(p, tn * sz, 1);
        d2 = dst_at(p, tn * tn * sz, 1);
        mem_op(p, C_ALLTOALL, d1, s, sz, 0);
        mem_op(p, C_FCOLLECT, d2, d1, tn * sz, 1);
        return;
    default: /* double sums: of a source, of that in place, of the result */
        if ((sz = pick(p, 2, DZONE)) == SIZE_MAX)
            break;
        sz = (sz + 7) / 8;
        s = src_at(p, sz * 8, 8, 1);
        d1 = dst_at(p, sz * 8, 8);
        red_op(p, R_F64_SUM, d1, s, sz, 0);
        red_op(p, R_F64_SUM, d1, d1, sz, 1);
        red_op(p, R_F64_SUM, dst_at(p, sz * 8, 8), d1, sz, 1);
        return;
    }
    p->full = 1;
}

static void make_plan(plan_t *p, int batch, int tn, int mixed, int ncoll)
{
    memset(p, 0, sizeof *p);
    p->st = test_mix(test_seed() ^ 0xC011ull ^ ((uint64_t)batch << 20));
    p->tn = tn;
    p->mixed = mixed;
    p->top = DEST0;
    p->root0 = (int)below(p, (size_t)tn);
    while (p->ncoll < ncoll && !p->full) {
        if (p->nbcast >= tn && below(p, 10) < 4)
            gen_chain(p);
        else
            gen_single(p);
        if (below(p, 6) == 0)
            add(p, below(p, 2) ? C_BARRIER_ALL : C_TEAM_BARRIER);
    }
}

/* ---- the model ---- */

static uint64_t dbl_word(uint64_t x)
{
    /* +-(0 .. 2^53) x 2^(e-52), e in [-20, 20]: no NaN, no infinity, and sums
     * of such values round differently in different orders */
    int64_t m = (int64_t)(x >> 11) - ((int64_t)1 << 52);
    int e = (int)(x & 63) % 41 - 20;
    uint64_t sb = (uint64_t)(1023 + e - 52) << 52;
    double scale, v;
    memcpy(&scale, &sb, 8);
    v = (double)m * scale;
    memcpy(&x, &v, 8);
    return x;
}

static void gen_image(unsigned char *a, size_t used, int pe, int batch)
{
    uint64_t key = test_mix(test_seed() ^ ((uint64_t)pe << 48) ^ ((uint64_t)batch << 24) ^ 0xA5);
    for (size_t w = 0; w < used / 8; w++) {
        uint64_t x = test_mix(key ^ w);
        if (w * 8 >= BZONE && w * 8 < DEST0)
            x = dbl_word(x);
        memcpy(a + w * 8, &x, 8);
    }
}

static void combine(int r, unsigned char *acc, const unsigned char *v)
{
    uint64_t a = 0, b = 0;
    memcpy(&a, acc, reds[r].esize);
    memcpy(&b, v, reds[r].esize);
    switch (r) {
    case R_I64_SUM: a += b; break; /* wraps, as two's complement int64 does */
    case R_U64_XOR: a ^= b; break;
    case R_I64_MIN: a = (int64_t)b < (int64_t)a ? b : a; break;
    case R_U32_OR: a |= b; break;
    case R_I32_MAX: a = (int32_t)(uint32_t)b > (int32_t)(uint32_t)a ? b : a; break;
    case R_F64_SUM: {
        double x, y;
        memcpy(&x, &a, 8);
        memcpy(&y, &b, 8);
        x += y;
        memcpy(&a, &x, 8);
        break;
    }
    }
    memcpy(acc, &a, reds[r].esize);
}

/* Apply o to the model for the team whose members are m[0..tn-1]. */
static void model(const op_t *o, const int *m, int tn, unsigned char *tmp)
{
    size_t n = o->n;
    switch (o->kind) {
    case C_ALLTOALL:
        for (int i = 0; i < tn; i++)
            for (int j = 0; j < tn; j++)
                memcpy(img[m[j]] + o->d + (size_t)i * n, img[m[i]] + o->s + (size_t)j * n, n);
        break;
    case C_FCOLLECT:
        for (int i = 0; i < tn; i++)
            for (int j = 0; j < tn; j++)
                memcpy(img[m[j]] + o->d + (size_t)i * n, img[m[i]] + o->s, n);
        break;
    case C_BCAST:
        for (int j = 0; j < tn; j++)
            if (m[j] != m[o->root])
                memcpy(img[m[j]] + o->d, img[m[o->root]] + o->s, n);
        memmove(img[m[o->root]] + o->d, img[m[o->root]] + o->s, n);
        break;
    case C_RED: {
        size_t es = reds[o->red].esize, len = n * es;
        memcpy(tmp, img[m[0]] + o->s, len); /* acc = v0; acc op= v1; ... in member order */
        for (int i = 1; i < tn; i++)
            for (size_t k = 0; k < n; k++)
                combine(o->red, tmp + k * es, img[m[i]] + o->s + k * es);
        for (int j = 0; j < tn; j++)
            memcpy(img[m[j]] + o->d, tmp, len);
        break;
    }
    }
}

/* ---- running ---- */

static int red_call(int r, int host, shmem_team_t t, void *d, const void *s, size_t n, CUstream st)
{
#define RED_CASE(ID, N)                                                                            \
    case ID:                                                                                       \
        return host ? shmem_##N##_reduce(t, d, s, n)                                               \
                    : shmemx_##N##_reduce_on_stream(t, d, s, n, st);
    switch (r) {
        RED_CASE(R_I64_SUM, int64_sum)
        RED_CASE(R_U64_XOR, uint64_xor)
        RED_CASE(R_I32_MAX, int32_max)
        RED_CASE(R_F64_SUM, double_sum)
        RED_CASE(R_I64_MIN, int64_min)
        RED_CASE(R_U32_OR, uint32_or)
    }
#undef RED_CASE
    return -1;
}

static const char *op_name(const op_t *o, char *buf, size_t len)
{
    static const char *const mem[] = {"alltoallmem", "broadcastmem", "fcollectmem"};
    const char *base = o->kind == C_RED ? reds[o->red].name : mem[o->kind];
    snprintf(buf, len, "%s%s%s%s%s", o->host ? "shmem_" : "shmemx_", base,
             o->kind == C_RED ? "_reduce" : "", o->host ? "" : "_on_stream",
             o->inplace ? " in place" : "");
    return buf;
}

static void run_op(const op_t *o, shmem_team_t t, char *base, CUstream s)
{
    char name[96];
    int rc = 0;
    if (o->kind == C_BARRIER_ALL) {
        shmemx_barrier_all_on_stream(s);
        return;
    }
    if (t == SHMEM_TEAM_INVALID)
        return;
    if (o->kind == C_TEAM_BARRIER) {
        shmemx_barrier_on_stream(t, s);
        return;
    }
    if (o->host) /* the host API runs on the library's stream: ours must be done */
        TCU(tcu.cuStreamSynchronize(s));
    char *d = base + o->d;
    const char *sp = base + o->s;
    switch (o->kind) {
    case C_ALLTOALL:
        rc = o->host ? shmem_alltoallmem(t, d, sp, o->n)
                     : shmemx_alltoallmem_on_stream(t, d, sp, o->n, s);
        break;
    case C_BCAST:
        rc = o->host ? shmem_broadcastmem(t, d, sp, o->n, o->root)
                     : shmemx_broadcastmem_on_stream(t, d, sp, o->n, o->root, s);
        break;
    case C_FCOLLECT:
        rc = o->host ? shmem_fcollectmem(t, d, sp, o->n)
                     : shmemx_fcollectmem_on_stream(t, d, sp, o->n, s);
        break;
    case C_RED: rc = red_call(o->red, o->host, t, d, sp, o->n, s); break;
    }
    CHECK(rc == 0, "%s (nelems %zu) returned %d", op_name(o, name, sizeof name), o->n, rc);
}

/* The last collective of the plan whose destination on this PE covers off. */
static int writer_of(const plan_t *p, size_t off, int tn)
{
    for (int k = p->nops - 1; k >= 0; k--) {
        const op_t *o = &p->ops[k];
        size_t len = dest_len(o, tn);
        if (o->kind <= C_RED && off >= o->d && off < o->d + (len ? len : GUARD))
            return k;
    }
    return -1;
}

/* The collective whose destination on this PE ends closest below off. */
static int ends_before(const plan_t *p, size_t off, int tn)
{
    int best = -1;
    size_t best_end = 0;
    for (int k = 0; k < p->nops; k++) {
        const op_t *o = &p->ops[k];
        size_t len = dest_len(o, tn), end = o->d + (len ? len : GUARD);
        if (o->kind <= C_RED && end <= off && end >= best_end) {
            best = k;
            best_end = end;
        }
    }
    return best;
}

static void fmt_elem(int r, const unsigned char *p, char *buf, size_t len)
{
    uint64_t v = 0;
    memcpy(&v, p, reds[r].esize);
    switch (r) {
    case R_I64_SUM:
    case R_I64_MIN: snprintf(buf, len, "%lld", (long long)v); break;
    case R_I32_MAX: snprintf(buf, len, "%d", (int32_t)(uint32_t)v); break;
    case R_F64_SUM: {
        double x;
        memcpy(&x, &v, 8);
        snprintf(buf, len, "%.17g (0x%016llx)", x, (unsigned long long)v);
        break;
    }
    default: snprintf(buf, len, "0x%llx", (unsigned long long)v); break;
    }
}

/* Compare the arena read back with the model; one line per wrong
 * collective (its first wrong byte or element). Returns the wrong bytes. */
static size_t compare(const unsigned char *got, size_t used, const plan_t *p, const layout_t *L,
                      int g, int batch)
{
    const unsigned char *want = img[me];
    size_t bad = 0;
    int lines = 0;
    if (memcmp(got, want, used) == 0)
        return 0;
    for (size_t off = 0; off < used; off++) {
        if (got[off] == want[off])
            continue;
        bad++;
        if (lines >= 16)
            continue;
        int k = g >= 0 ? writer_of(p, off, L->size) : -1;
        char name[96], from[160] = "", e[64], w[64];
        if (k < 0) {
            int b = g >= 0 && off >= DEST0 ? ends_before(p, off, L->size) : -1;
            if (b >= 0) {
                const op_t *o = &p->ops[b];
                snprintf(from, sizeof from, ", %zu bytes past the dest of op %d (%s, nelems %zu)",
                         off - o->d - dest_len(o, L->size), b, op_name(o, name, sizeof name), o->n);
            }
            fprintf(stderr,
                    "PE %d: MISMATCH batch %d (%s team%s, USHMEM_CUDA_COLL=%s): byte %zu of the "
                    "arena is no collective's destination (%s%s) but changed: expected 0x%02x, "
                    "got 0x%02x\n",
                    me, batch, L->name, g < 0 ? ", this PE idle" : "", alg, off,
                    off < DEST0 ? "source zone" : "gap between destinations", from, want[off],
                    got[off]);
            lines++;
            continue;
        }
        const op_t *o = &p->ops[k];
        size_t len = dest_len(o, L->size), end = o->d + (len ? len : GUARD), i = off - o->d;
        for (size_t q = off + 1; q < end; q++) /* count the rest of this destination */
            bad += got[q] != want[q];
        if (o->kind == C_ALLTOALL || o->kind == C_FCOLLECT)
            snprintf(from, sizeof from, " (block from PE %d)", L->pe[g][o->n ? i / o->n : 0]);
        else if (o->kind == C_BCAST)
            snprintf(from, sizeof from, " (root PE %d)", L->pe[g][o->root]);
        const char *what = "byte";
        if (o->kind == C_RED && len) {
            size_t es = reds[o->red].esize;
            i /= es;
            fmt_elem(o->red, want + o->d + i * es, e, sizeof e);
            fmt_elem(o->red, got + o->d + i * es, w, sizeof w);
            what = "element";
        } else {
            snprintf(e, sizeof e, "0x%02x", want[off]);
            snprintf(w, sizeof w, "0x%02x", got[off]);
        }
        fprintf(stderr,
                "PE %d: MISMATCH %s, nelems %zu%s, %s team, batch %d op %d, USHMEM_CUDA_COLL=%s: "
                "%s %zu of dest (offset %zu)%s: expected %s, got %s\n",
                me, op_name(o, name, sizeof name), o->n, o->chain ? " (chained)" : "", L->name,
                batch, k, alg, len ? what : "guard byte (nelems 0 must change nothing)", i, o->d,
                from, e, w);
        lines++;
        off = end - 1;
    }
    return bad;
}

static void run_batch(int batch, layout_t *L, int mixed, int ncoll, char *base, unsigned char *pin,
                      unsigned char *tmp, CUstream s)
{
    static plan_t p;
    double t0 = shmemx_wtime();
    make_plan(&p, batch, L->size, mixed, ncoll);
    size_t used = p.top + GUARD;
    used += (8 - used % 8) % 8;
    for (int pe = 0; pe < np; pe++)
        gen_image(img[pe], used, pe, batch);
    memcpy(pin, img[me], used);
    TCU(tcu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)base, (CUdeviceptr)(uintptr_t)pin, used, s));

    int g = -1; /* my group */
    for (int k = 0; k < L->ngroups; k++)
        for (int i = 0; i < L->size; i++)
            if (L->pe[k][i] == me)
                g = k;
    for (int k = 0; k < p.nops; k++) {
        const op_t *o = &p.ops[k];
        run_op(o, L->mine, base, s);
        if (o->kind > C_RED)
            continue;
        for (int q = 0; q < L->ngroups; q++)
            model(o, L->pe[q], L->size, tmp);
        total.coll++;
        total.host += o->host;
        total.stream += !o->host;
        total.chain += o->chain;
        total.inplace += o->inplace;
        total.zero += o->n == 0;
    }
    TCU(tcu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)pin, (CUdeviceptr)(uintptr_t)base, used, s));
    TCU(tcu.cuStreamSynchronize(s));
    size_t bad = compare(pin, used, &p, L, g, batch);
    CHECK(bad == 0, "batch %d (%s team, %s): %zu wrong bytes (USHMEM_CUDA_COLL=%s)", batch, L->name,
          mixed ? "with host API" : "stream only", bad, alg);
    total.batches++;
    shmem_barrier_all();
    if (me == 0 && getenv("USHMEM_TEST_VERBOSE"))
        fprintf(stderr, "batch %d: %s team, %s, %d collectives, %zu bytes: %.1f ms\n", batch,
                L->name, mixed ? "with host API" : "stream only", p.ncoll, used,
                (shmemx_wtime() - t0) * 1e3);
}

/* ---- teams ---- */

static shmem_team_t split(int start, int stride, int size, layout_t *L)
{
    shmem_team_t t = SHMEM_TEAM_INVALID;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, start, stride, size, NULL, 0, &t) == 0,
          "split (%d, %d, %d)", start, stride, size);
    if (t != SHMEM_TEAM_INVALID) {
        L->mine = t;
        L->extra[L->nextra++] = t;
    }
    return t;
}

static void layouts(layout_t *L)
{
    memset(L, 0, NKINDS * sizeof *L);
    static const char *const names[] = {"world", "reversed", "one-PE",
                                        "pair",  "odd pair", "{3,2,1}"};
    for (int k = 0; k < NKINDS; k++) {
        L[k].name = names[k];
        L[k].mine = SHMEM_TEAM_INVALID;
    }
    L[T_WORLD] = (layout_t){
        .name = names[T_WORLD], .avail = 1, .ngroups = 1, .size = np, .mine = SHMEM_TEAM_WORLD};
    L[T_REV].avail = L[T_REV].ngroups = 1;
    L[T_REV].size = np;
    L[T_SELF].avail = 1;
    L[T_SELF].ngroups = np;
    L[T_SELF].size = 1;
    for (int i = 0; i < np; i++) {
        L[T_WORLD].pe[0][i] = i;
        L[T_REV].pe[0][i] = np - 1 - i;
        L[T_SELF].pe[i][0] = i;
    }
    split(np - 1, -1, np, &L[T_REV]);
    for (int i = 0; i < np; i++)
        split(i, 1, 1, &L[T_SELF]);
    if (np == 4) {
        L[T_PAIRS] = (layout_t){.name = names[T_PAIRS],
                                .avail = 1,
                                .ngroups = 2,
                                .size = 2,
                                .pe = {{0, 2}, {1, 3}},
                                .mine = SHMEM_TEAM_INVALID};
        split(0, 2, 2, &L[T_PAIRS]);
        split(1, 2, 2, &L[T_PAIRS]);
        L[T_ODD] = (layout_t){.name = names[T_ODD],
                              .avail = 1,
                              .ngroups = 1,
                              .size = 2,
                              .pe = {{1, 3}},
                              .mine = SHMEM_TEAM_INVALID};
        split(1, 2, 2, &L[T_ODD]);
        L[T_TRIO] = (layout_t){.name = names[T_TRIO],
                               .avail = 1,
                               .ngroups = 1,
                               .size = 3,
                               .pe = {{3, 2, 1}},
                               .mine = SHMEM_TEAM_INVALID};
        split(3, -1, 3, &L[T_TRIO]);
    }
    /* the model's member order is the library's */
    for (int k = 0; k < NKINDS; k++) {
        if (!L[k].avail || L[k].mine == SHMEM_TEAM_INVALID)
            continue;
        int n = shmem_team_n_pes(L[k].mine), found = 0;
        CHECK(n == L[k].size, "%s team has %d PEs, want %d", L[k].name, n, L[k].size);
        for (int g = 0; g < L[k].ngroups; g++)
            for (int i = 0; i < n; i++)
                if (L[k].pe[g][i] == me) {
                    found = 1;
                    for (int j = 0; j < n; j++)
                        CHECK(shmem_team_translate_pe(L[k].mine, j, SHMEM_TEAM_WORLD) ==
                                  L[k].pe[g][j],
                              "%s team member %d", L[k].name, j);
                    CHECK(shmem_team_my_pe(L[k].mine) == i, "%s team: my index", L[k].name);
                }
        CHECK(found, "%s team: this PE is not in the layout", L[k].name);
    }
}

int main(void)
{
    if (tcu_load() != 0)
        return 77;
    shmem_init();
    me = shmem_my_pe();
    np = shmem_n_pes();
    CHECK(np <= MAXPE, "this test runs with up to %d PEs", MAXPE);
    alg = getenv("USHMEM_CUDA_COLL") ? getenv("USHMEM_CUDA_COLL") : "auto (unset)";
    int quick = getenv("USHMEM_TEST_QUICK") && atoi(getenv("USHMEM_TEST_QUICK"));
    int rounds = getenv("USHMEM_TEST_ROUNDS") ? atoi(getenv("USHMEM_TEST_ROUNDS")) : quick ? 1 : 2;
    int ncoll = quick ? 16 : 50;
    CUstream s = tcu_stream();
    char *base = shmem_align(64, ARENA);
    CHECK(base && tcu_is_device(base), "device arena of %zu bytes", ARENA);
    unsigned char *pin = NULL, *tmp = malloc(ARENA);
    TCU(tcu.cuMemHostAlloc((void **)&pin, ARENA, CU_MEMHOSTALLOC_PORTABLE));
    CHECK(tmp != NULL, "allocation");
    for (int pe = 0; pe < np; pe++) {
        img[pe] = malloc(ARENA);
        CHECK(img[pe] != NULL, "model of %zu bytes", ARENA);
    }
    static layout_t L[NKINDS];
    layouts(L);
    double t0 = shmemx_wtime();

    int batch = 0;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < NKINDS; k++)
            for (int mixed = 0; mixed < 2 && L[k].avail; mixed++)
                run_batch(batch++, &L[k], mixed, ncoll, base, pin, tmp, s);

    if (me == 0)
        printf("cuda_coll_stream: %d PEs, USHMEM_CUDA_COLL=%s: %ld collectives checked (%ld on "
               "the stream, %ld host API, %ld chained, %ld in place, %ld with nelems 0) in %ld "
               "batches, %.1f s: OK\n",
               np, alg, total.coll, total.stream, total.host, total.chain, total.inplace,
               total.zero, total.batches, shmemx_wtime() - t0);
    for (int k = 0; k < NKINDS; k++)
        for (int i = 0; i < L[k].nextra; i++)
            shmem_team_destroy(L[k].extra[i]);
    for (int pe = 0; pe < np; pe++)
        free(img[pe]);
    free(tmp);
    TCU(tcu.cuMemFreeHost(pin));
    shmem_free(base);
    TCU(tcu.cuStreamDestroy(s));
    shmem_finalize();
    return 0;
}
