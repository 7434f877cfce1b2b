/* Reductions and prefix sums on teams.
 *
 * After a team sync, the elements are split into one contiguous chunk per
 * member. The owner of a chunk reads it from every member's symmetric source
 * (in team order 0..n-1), combines, and writes the result into every
 * member's dest; a final team sync publishes it. Each element is computed
 * once, in one fixed order, so all PEs get bit-identical results (floating
 * point included); the work and the traffic are spread evenly over the PEs
 * and synchronization is two log-depth syncs whatever the size.
 * dest == source is safe: only the owner of a chunk touches that chunk,
 * anywhere, and it reads a block from every member before writing it back.
 * Scans use the same split: the owner walks the members in order, handing
 * member k the running sum before (exscan) or after (inscan) adding k's
 * contribution. */
#include <complex.h>
#include <string.h>

#include "coll/coll.h"

#define BLOCK_BYTES 4096 /* elements per step: BLOCK_BYTES / element size */

typedef ushmemi_coll_comb_t comb_fn; /* coll.h: the staged path calls them too */

/* Signed sums and products wrap (computed in the unsigned type U, at least
 * as wide as unsigned int so that promotions cannot overflow). */
#define INT_COMB(name, T, U)                                                                       \
    static void name(void *acc_, const void *in_, size_t n, ushmemi_redop_t op)                    \
    {                                                                                              \
        T *a = acc_;                                                                               \
        const T *b = in_;                                                                          \
        switch (op) {                                                                              \
        case USHMEMI_OP_AND:                                                                       \
            for (size_t i = 0; i < n; i++)                                                         \
                a[i] &= b[i];                                                                      \
            break;                                                                                 \
        case USHMEMI_OP_OR:                                                                        \
            for (size_t i = 0; i < n; i++)                                                         \
                a[i] |= b[i];                                                                      \
            break;                                                                                 \
        case USHMEMI_OP_XOR:                                                                       \
            for (size_t i = 0; i < n; i++)                                                         \
                a[i] ^= b[i];                                                                      \
            break;                                                                                 \
        case USHMEMI_OP_MAX:                                                                       \
            for (size_t i = 0; i < n; i++)                                                         \
                a[i] = b[i] > a[i] ? b[i] : a[i];                                                  \
            break;                                                                                 \
        case USHMEMI_OP_MIN:                                                                       \
            for (size_t i = 0; i < n; i++)                                                         \
                a[i] = b[i] < a[i] ? b[i] : a[i];                                                  \
            break;                                                                                 \
        case USHMEMI_OP_SUM:                                                                       \
            for (size_t i = 0; i < n; i++)                                                         \
                a[i] = (T)((U)a[i] + (U)b[i]);                                                     \
            break;                                                                                 \
        case USHMEMI_OP_PROD:                                                                      \
            for (size_t i = 0; i < n; i++)                                                         \
                a[i] = (T)((U)a[i] * (U)b[i]);                                                     \
            break;                                                                                 \
        }                                                                                          \
    }

#define FLT_COMB(name, T)                                                                          \
    static void name(void *acc_, const void *in_, size_t n, ushmemi_redop_t op)                    \
    {                                                                                              \
        T *a = acc_;                                                                               \
        const T *b = in_;                                                                          \
        switch (op) {                                                                              \
        case USHMEMI_OP_MAX:                                                                       \
            for (size_t i = 0; i < n; i++)                                                         \
                a[i] = b[i] > a[i] ? b[i] : a[i];                                                  \
            break;                                                                                 \
        case USHMEMI_OP_MIN:                                                                       \
            for (size_t i = 0; i < n; i++)                                                         \
                a[i] = b[i] < a[i] ? b[i] : a[i];                                                  \
            break;                                                                                 \
        case USHMEMI_OP_SUM:                                                                       \
            for (size_t i = 0; i < n; i++)                                                         \
                a[i] += b[i];                                                                      \
            break;                                                                                 \
        case USHMEMI_OP_PROD:                                                                      \
            for (size_t i = 0; i < n; i++)                                                         \
                a[i] *= b[i];                                                                      \
            break;                                                                                 \
        default: break; /* rejected by pick() */                                                   \
        }                                                                                          \
    }

#define CPLX_COMB(name, T)                                                                         \
    static void name(void *acc_, const void *in_, size_t n, ushmemi_redop_t op)                    \
    {                                                                                              \
        T *a = acc_;                                                                               \
        const T *b = in_;                                                                          \
        if (op == USHMEMI_OP_SUM)                                                                  \
            for (size_t i = 0; i < n; i++)                                                         \
                a[i] += b[i];                                                                      \
        else                                                                                       \
            for (size_t i = 0; i < n; i++)                                                         \
                a[i] *= b[i];                                                                      \
    }

INT_COMB(comb_s8, int8_t, unsigned)
INT_COMB(comb_s16, int16_t, unsigned)
INT_COMB(comb_s32, int32_t, uint32_t)
INT_COMB(comb_s64, int64_t, uint64_t)
INT_COMB(comb_u8, uint8_t, unsigned)
INT_COMB(comb_u16, uint16_t, unsigned)
INT_COMB(comb_u32, uint32_t, uint32_t)
INT_COMB(comb_u64, uint64_t, uint64_t)
FLT_COMB(comb_f32, float)
FLT_COMB(comb_f64, double)
FLT_COMB(comb_fld, long double)
CPLX_COMB(comb_c32, float _Complex)
CPLX_COMB(comb_c64, double _Complex)

static const char *const op_names[] = {"and", "or", "xor", "max", "min", "sum", "prod"};

/* The combine function for dtype and op, or NULL (with an error line). */
static comb_fn pick(int dtype, ushmemi_redop_t op, const char *call)
{
    size_t size = USHMEMI_DT_SIZE(dtype);
    comb_fn fn = NULL;
    int bitwise = op == USHMEMI_OP_AND || op == USHMEMI_OP_OR || op == USHMEMI_OP_XOR;
    if ((unsigned)op > USHMEMI_OP_PROD) {
        ushmemi_error(call, "unknown reduction operator %d", (int)op);
        return NULL;
    }
    switch (USHMEMI_DT_KIND(dtype)) {
    case USHMEMI_KIND_SINT:
        fn = size == 1   ? comb_s8
             : size == 2 ? comb_s16
             : size == 4 ? comb_s32
             : size == 8 ? comb_s64
                         : NULL;
        break;
    case USHMEMI_KIND_UINT:
        fn = size == 1   ? comb_u8
             : size == 2 ? comb_u16
             : size == 4 ? comb_u32
             : size == 8 ? comb_u64
                         : NULL;
        break;
    case USHMEMI_KIND_FLOAT:
        if (!bitwise)
            fn = size == sizeof(float)         ? comb_f32
                 : size == sizeof(double)      ? comb_f64
                 : size == sizeof(long double) ? comb_fld
                                               : NULL;
        break;
    case USHMEMI_KIND_COMPLEX:
        if (op == USHMEMI_OP_SUM || op == USHMEMI_OP_PROD)
            fn = size == sizeof(float _Complex)    ? comb_c32
                 : size == sizeof(double _Complex) ? comb_c64
                                                   : NULL;
        break;
    default: break;
    }
    if (!fn)
        ushmemi_error(call, "%s reduction not supported for this type (dtype 0x%x)", op_names[op],
                      dtype);
    return fn;
}

/* This PE's share of n elements among size members: [*lo, *lo + return). */
static size_t my_chunk(size_t nelems, shmem_team_t team, size_t *lo)
{
    size_t n = (size_t)team->size, me = (size_t)team->my_pe;
    size_t q = nelems / n, r = nelems % n;
    *lo = me * q + (me < r ? me : r);
    return q + (me < r);
}

static int check_bufs(void *dest, const void *src, size_t nbytes, const char *call)
{
    ushmemi_coll_sym(dest, nbytes, "dest", call);
    ushmemi_coll_sym(src, nbytes, "source", call);
    const char *d = dest, *s = src;
    if (nbytes && d != s && d < s + nbytes && s < d + nbytes) {
        ushmemi_error(call, "dest and source overlap without being the same array");
        return 0;
    }
    return 1;
}

int ushmemi_reduce(shmem_team_t team, void *dest, const void *src, size_t nelems, int dtype,
                   ushmemi_redop_t op, const char *call)
{
    int on_dev = USHMEMI_COLL_ON_DEVICE(dest, src), staged = ushmemi_coll_staged(team, on_dev);
    if (on_dev && !staged)
        return ushmemi_devmem->reduce(team, dest, src, nelems, dtype, op, call);
    if (!ushmemi_coll_team_ok(team, call))
        return USHMEM_EINVAL;
    USHMEMI_COLL_CHECK(team, call, .kind = USHMEMI_COLL_REDUCE, .count = nelems, .dtype = dtype,
                       .op = (int)op);
    /* Argument errors are the same on every member: all return before
     * synchronizing, nobody hangs. */
    comb_fn fn = pick(dtype, op, call);
    size_t esize = USHMEMI_DT_SIZE(dtype);
    size_t nbytes = ushmemi_coll_bytes(nelems, esize, call);
    if (!fn || !check_bufs(dest, src, nbytes, call))
        return USHMEM_EINVAL;
    if (staged)
        return ushmemi_coll_staged_reduce(team, dest, src, nelems, esize, fn, op, call);
    _Alignas(64) unsigned char acc[BLOCK_BYTES], in[BLOCK_BYTES];
    int n = team->size;
    ushmemi_push_t p;
    if (ushmemi_push_begin(team, nbytes, 0, &p)) {
        /* Every member sends its whole vector to all and combines them all
         * itself, in team order like the chunk owners below: bit-identical
         * results everywhere. It accumulates in its own cell (dest may be
         * source, which is still needed). */
        int me = team->my_pe;
        char *a = ushmemi_push_mine(team, &p);
        for (int k = 1; k < n; k++)
            ushmemi_push_send(team, &p, me + k >= n ? me + k - n : me + k, me, src, nbytes, call);
        memcpy(a, me == 0 ? src : ushmemi_push_recv(&p, 0, call), nbytes);
        for (int k = 1; k < n; k++)
            fn(a, k == me ? src : ushmemi_push_recv(&p, k, call), nelems, op);
        memcpy(dest, a, nbytes);
        ushmemi_push_end(team, &p, 1);
        return 0;
    }
    ushmemi_team_sync(team, call);

    size_t per = BLOCK_BYTES / esize, lo, cnt = my_chunk(nelems, team, &lo);
    for (size_t done = 0; done < cnt; done += per) {
        size_t b = cnt - done < per ? cnt - done : per;
        size_t off = (lo + done) * esize, bytes = b * esize;
        const char *s = (const char *)src + off;
        ushmemi_coll_get(acc, s, team, 0, bytes, call);
        for (int k = 1; k < n; k++)
            fn(acc, ushmemi_coll_src(s, team, k, bytes, in, call), b, op);
        for (int k = 0; k < n; k++)
            ushmemi_coll_put((char *)dest + off, acc, team, k, bytes, call);
    }
    ushmemi_team_sync(team, call);
    return 0;
}

int ushmemi_scan(shmem_team_t team, void *dest, const void *src, size_t nelems, int dtype,
                 int exclusive, const char *call)
{
    int on_dev = USHMEMI_COLL_ON_DEVICE(dest, src), staged = ushmemi_coll_staged(team, on_dev);
    if (on_dev && !staged)
        ushmemi_fatal(call, "not supported on device memory yet; use host symmetric memory "
                            "(shmem_malloc_with_hints(size, SHMEMX_MALLOC_HOST))");
    if (!ushmemi_coll_team_ok(team, call))
        return USHMEM_EINVAL;
    USHMEMI_COLL_CHECK(team, call, .kind = USHMEMI_COLL_SCAN, .count = nelems, .dtype = dtype,
                       .op = exclusive);
    comb_fn fn = pick(dtype, USHMEMI_OP_SUM, call);
    size_t esize = USHMEMI_DT_SIZE(dtype);
    size_t nbytes = ushmemi_coll_bytes(nelems, esize, call);
    if (!fn || !check_bufs(dest, src, nbytes, call))
        return USHMEM_EINVAL;
    if (staged)
        return ushmemi_coll_staged_scan(team, dest, src, nelems, esize, fn, exclusive, call);
    _Alignas(64) unsigned char acc[BLOCK_BYTES], in[BLOCK_BYTES];
    int n = team->size;
    ushmemi_push_t p;
    if (ushmemi_push_begin(team, nbytes, 0, &p)) {
        /* Member k needs the vectors of members 0..k-1 (and its own), summed
         * from zero in team order as below. */
        int me = team->my_pe;
        char *a = ushmemi_push_mine(team, &p);
        for (int j = me + 1; j < n; j++)
            ushmemi_push_send(team, &p, j, me, src, nbytes, call);
        memset(a, 0, nbytes);
        for (int k = 0; k < me; k++)
            fn(a, ushmemi_push_recv(&p, k, call), nelems, USHMEMI_OP_SUM);
        if (!exclusive)
            fn(a, src, nelems, USHMEMI_OP_SUM);
        memcpy(dest, a, nbytes);
        ushmemi_push_end(team, &p, 0);
        return 0;
    }
    ushmemi_team_sync(team, call);

    size_t per = BLOCK_BYTES / esize, lo, cnt = my_chunk(nelems, team, &lo);
    for (size_t done = 0; done < cnt; done += per) {
        size_t b = cnt - done < per ? cnt - done : per;
        size_t off = (lo + done) * esize, bytes = b * esize;
        memset(acc, 0, bytes); /* all-zero bits are 0 for every integer and IEEE type */
        const char *s = (const char *)src + off;
        char *d = (char *)dest + off;
        for (int k = 0; k < n; k++) {
            if (exclusive) {
                /* read before writing: dest may be source */
                ushmemi_coll_get(in, s, team, k, bytes, call);
                ushmemi_coll_put(d, acc, team, k, bytes, call);
                fn(acc, in, b, USHMEMI_OP_SUM);
            } else {
                fn(acc, ushmemi_coll_src(s, team, k, bytes, in, call), b, USHMEMI_OP_SUM);
                ushmemi_coll_put(d, acc, team, k, bytes, call);
            }
        }
    }
    ushmemi_team_sync(team, call);
    return 0;
}
