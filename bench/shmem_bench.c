/* shmem_bench: point-to-point and barrier microbenchmarks in plain OpenSHMEM 1.4.
 *
 * Only <shmem.h> is used, so the same file builds with ushcc and with Open MPI's
 * oshcc and the two can be compared (scripts/bench_compare.sh). PE 0 and PE 1
 * measure; any further PEs only join the barriers.
 *
 * Output grammar (stdout, PE 0 only), meant for scripts:
 *   "# key value ..."          free-form preamble lines
 *   "# section NAME"           starts a section
 *   "# cols C1 C2 ..."         column names of the rows that follow
 *   "V1 V2 ..."                one row; the first column is the row key
 * Sections: pingpong (shmem_long_p + wait_until, ns per half round trip), put
 * (putmem + quiet per op), get (getmem), put_nbi (back-to-back putmem_nbi, one
 * quiet), barrier (barrier_all, all PEs), memcpy (private buffers, one process:
 * the roof for putmem between PEs of one host).
 *
 * Each size is verified once after timing; a mismatch prints an error and ends
 * the job with shmem_global_exit(1), so no speed is reported for a broken
 * transfer. */
#define _POSIX_C_SOURCE 200809L

#include <shmem.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIN_SIZE         ((size_t)8)
#define DEFAULT_MAX_SIZE ((size_t)16 << 20)

enum { SEC_PINGPONG, SEC_PUT, SEC_GET, SEC_PUT_NBI, SEC_BARRIER, SEC_MEMCPY, SEC_COUNT };

static const char *const section_names[SEC_COUNT] = {
    "pingpong", "put", "get", "put_nbi", "barrier", "memcpy",
};

typedef struct {
    size_t max_size;
    double iters_scale;
    int quick;
    int run[SEC_COUNT];
} bench_opts_t;

typedef struct {
    int me;
    int npes;
    char *src;   /* symmetric, max_size bytes */
    char *dst;   /* symmetric, max_size bytes */
    long *flags; /* symmetric: [0] ping (PE 1 waits), [1] pong (PE 0 waits) */
} bench_ctx_t;

/* Called through a volatile pointer so the compiler cannot merge or drop the
 * repeated identical copies of the memcpy baseline. */
static void *(*volatile memcpy_fn)(void *, const void *, size_t) = memcpy;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    switch (*end) {
    case 'k':
    case 'K':
        v <<= 10;
        end++;
        break;
    case 'm':
    case 'M':
        v <<= 20;
        end++;
        break;
    case 'g':
    case 'G':
        v <<= 30;
        end++;
        break;
    default: break;
    }
    if (*end == 'i' || *end == 'B')
        end++;
    if (*end == 'B')
        end++;
    if (*end != '\0' || v < MIN_SIZE)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_sections(const char *arg, int run[SEC_COUNT])
{
    char buf[256];
    if (strlen(arg) >= sizeof(buf))
        return -1;
    strcpy(buf, arg);
    memset(run, 0, SEC_COUNT * sizeof(run[0]));
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int found = 0;
        if (strcmp(tok, "all") == 0) {
            for (int i = 0; i < SEC_COUNT; i++)
                run[i] = 1;
            continue;
        }
        for (int i = 0; i < SEC_COUNT; i++) {
            if (strcmp(tok, section_names[i]) == 0) {
                run[i] = 1;
                found = 1;
            }
        }
        if (!found)
            return -1;
    }
    return 0;
}

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [-s max_size] [-i iters_scale] [-q] [-o section[,section...]]\n"
            "  -s  largest message (K/M/G suffixes; default 16M); needs 2 x this of\n"
            "      symmetric heap (SHMEM_SYMMETRIC_SIZE)\n"
            "  -i  multiply iteration counts (default 1.0)\n"
            "  -q  quick: x4 size steps and fewer iterations\n"
            "  -o  sections: pingpong put get put_nbi barrier memcpy all (default all)\n",
            prog);
}

/* Only PE 0 reports argument errors, but every PE must reach the same decision
 * so that no PE is left alone in a collective. */
static int parse_args(int argc, char **argv, int me, bench_opts_t *o)
{
    o->max_size = DEFAULT_MAX_SIZE;
    o->iters_scale = 1.0;
    o->quick = 0;
    for (int i = 0; i < SEC_COUNT; i++)
        o->run[i] = 1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = (i + 1 < argc) ? argv[i + 1] : NULL;
        if (strcmp(a, "-q") == 0) {
            o->quick = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            if (me == 0)
                usage(stdout, argv[0]);
            return 1;
        } else if (strcmp(a, "-s") == 0 && val) {
            if (parse_size(val, &o->max_size)) {
                if (me == 0)
                    fprintf(stderr, "shmem_bench: bad size '%s' (minimum %zu)\n", val, MIN_SIZE);
                return -1;
            }
            i++;
        } else if (strcmp(a, "-i") == 0 && val) {
            char *end;
            o->iters_scale = strtod(val, &end);
            if (*end != '\0' || !(o->iters_scale > 0.0)) {
                if (me == 0)
                    fprintf(stderr, "shmem_bench: bad iteration scale '%s'\n", val);
                return -1;
            }
            i++;
        } else if (strcmp(a, "-o") == 0 && val) {
            if (parse_sections(val, o->run)) {
                if (me == 0)
                    fprintf(stderr, "shmem_bench: bad section list '%s'\n", val);
                return -1;
            }
            i++;
        } else {
            if (me == 0)
                usage(stderr, argv[0]);
            return -1;
        }
    }
    return 0;
}

/* Iterations for one size: many for small messages, a bounded byte volume for
 * large ones. */
static long iters_for(const bench_opts_t *o, size_t size)
{
    long max_it = o->quick ? 2000 : 50000;
    long min_it = o->quick ? 4 : 20;
    double budget = o->quick ? 64.0 * (1 << 20) : 2048.0 * (1 << 20);
    double it = budget / (double)size;
    if (it > (double)max_it)
        it = (double)max_it;
    it *= o->iters_scale;
    if (it < (double)min_it)
        it = (double)min_it;
    return (long)it;
}

static long warmup_for(long iters)
{
    return iters / 10 + 2;
}

/* Sizes: powers of 2 from 8 B (x4 steps in quick mode); max_size is always the
 * last one even when it is not on the step grid. */
static size_t next_size(const bench_opts_t *o, size_t size)
{
    if (size >= o->max_size)
        return 0;
    size_t next = size * (o->quick ? 4 : 2);
    return next > o->max_size ? o->max_size : next;
}

/* A pattern that differs per size and per section, so stale data from an
 * earlier step never verifies. */
static unsigned char pattern_byte(size_t i, size_t size, unsigned salt)
{
    return (unsigned char)((i * 131u + size * 7u + salt * 29u + (i >> 8)) & 0xffu);
}

static void fill_pattern(char *buf, size_t size, unsigned salt)
{
    for (size_t i = 0; i < size; i++)
        buf[i] = (char)pattern_byte(i, size, salt);
}

static void check_pattern(const bench_ctx_t *c, const char *what, const char *buf, size_t size,
                          unsigned salt)
{
    for (size_t i = 0; i < size; i++) {
        unsigned char want = pattern_byte(i, size, salt);
        unsigned char got = (unsigned char)buf[i];
        if (got != want) {
            fprintf(stderr,
                    "shmem_bench: PE %d: %s: WRONG DATA at size %zu: byte %zu is 0x%02x, "
                    "expected 0x%02x\n",
                    c->me, what, size, i, got, want);
            fflush(stderr);
            shmem_global_exit(1);
            exit(1); /* not reached on a conforming implementation */
        }
    }
}

static void fail(const bench_ctx_t *c, const char *what, const char *msg, long a, long b)
{
    fprintf(stderr, "shmem_bench: PE %d: %s: %s (got %ld, expected %ld)\n", c->me, what, msg, a, b);
    fflush(stderr);
    shmem_global_exit(1);
    exit(1);
}

static void section_header(const bench_ctx_t *c, const char *name, const char *cols)
{
    if (c->me == 0) {
        printf("# section %s\n# cols %s\n", name, cols);
        fflush(stdout);
    }
}

static void print_row(size_t size, double sec_per_op, double bytes_per_op, long iters)
{
    double us = sec_per_op * 1e6;
    double gbps = sec_per_op > 0 ? bytes_per_op / sec_per_op / 1e9 : 0.0;
    printf("%-10zu %12.4f %12.4f %10ld\n", size, us, gbps, iters);
    fflush(stdout);
}

static void bench_pingpong(const bench_ctx_t *c, const bench_opts_t *o)
{
    long iters = (long)((o->quick ? 20000 : 500000) * o->iters_scale);
    long warm = warmup_for(iters);
    long total = warm + iters;
    long *ping = &c->flags[0];
    long *pong = &c->flags[1];
    double t0 = 0, t1 = 0;

    if (iters < 1)
        iters = 1;
    warm = warmup_for(iters);
    total = warm + iters;
    section_header(c, "pingpong", "size_B lat_ns iters");
    *ping = 0;
    *pong = 0;
    shmem_barrier_all();

    /* Value v = i + 1 is new every round trip, so a wait can never be satisfied
     * by the previous round's flag. */
    if (c->me == 0) {
        for (long i = 0; i < total; i++) {
            if (i == warm)
                t0 = now_s();
            shmem_long_p(ping, i + 1, 1);
            shmem_long_wait_until(pong, SHMEM_CMP_EQ, i + 1);
        }
        t1 = now_s();
    } else if (c->me == 1) {
        for (long i = 0; i < total; i++) {
            shmem_long_wait_until(ping, SHMEM_CMP_EQ, i + 1);
            shmem_long_p(pong, i + 1, 0);
        }
    }
    shmem_barrier_all();
    if (c->me == 0 && *pong != total)
        fail(c, "pingpong", "final pong flag wrong", *pong, total);
    if (c->me == 1 && *ping != total)
        fail(c, "pingpong", "final ping flag wrong", *ping, total);
    shmem_barrier_all();
    if (c->me == 0) {
        printf("%-10zu %12.1f %10ld\n", sizeof(long), (t1 - t0) / (2.0 * (double)iters) * 1e9,
               iters);
        fflush(stdout);
    }
}

/* put and put_nbi share the structure: PE 0 writes PE 1's dst, PE 1 verifies. */
static void bench_put(const bench_ctx_t *c, const bench_opts_t *o, int nbi)
{
    const char *name = nbi ? "put_nbi" : "put";
    unsigned salt = nbi ? 2u : 1u;

    section_header(c, name, "size_B lat_us bw_GBps iters");
    for (size_t size = MIN_SIZE; size; size = next_size(o, size)) {
        long iters = iters_for(o, size);
        long warm = warmup_for(iters);
        double t0 = 0, t1 = 0;

        if (c->me == 0)
            fill_pattern(c->src, size, salt);
        if (c->me == 1)
            memset(c->dst, 0xa5, size);
        shmem_barrier_all();

        if (c->me == 0) {
            if (nbi) {
                for (long i = 0; i < warm; i++)
                    shmem_putmem_nbi(c->dst, c->src, size, 1);
                shmem_quiet();
                t0 = now_s();
                for (long i = 0; i < iters; i++)
                    shmem_putmem_nbi(c->dst, c->src, size, 1);
                shmem_quiet();
                t1 = now_s();
            } else {
                for (long i = 0; i < warm + iters; i++) {
                    if (i == warm)
                        t0 = now_s();
                    shmem_putmem(c->dst, c->src, size, 1);
                    shmem_quiet();
                }
                t1 = now_s();
            }
        }
        shmem_barrier_all();
        if (c->me == 1)
            check_pattern(c, name, c->dst, size, salt);
        shmem_barrier_all();
        if (c->me == 0)
            print_row(size, (t1 - t0) / (double)iters, (double)size, iters);
    }
}

/* PE 0 reads PE 1's src into its own dst and verifies locally. */
static void bench_get(const bench_ctx_t *c, const bench_opts_t *o)
{
    const unsigned salt = 3u;

    section_header(c, "get", "size_B lat_us bw_GBps iters");
    for (size_t size = MIN_SIZE; size; size = next_size(o, size)) {
        long iters = iters_for(o, size);
        long warm = warmup_for(iters);
        double t0 = 0, t1 = 0;

        if (c->me == 1)
            fill_pattern(c->src, size, salt);
        if (c->me == 0)
            memset(c->dst, 0x5a, size);
        shmem_barrier_all();

        if (c->me == 0) {
            for (long i = 0; i < warm + iters; i++) {
                if (i == warm)
                    t0 = now_s();
                shmem_getmem(c->dst, c->src, size, 1);
            }
            t1 = now_s();
            check_pattern(c, "get", c->dst, size, salt);
            print_row(size, (t1 - t0) / (double)iters, (double)size, iters);
        }
        shmem_barrier_all();
    }
}

static void bench_barrier(const bench_ctx_t *c, const bench_opts_t *o)
{
    long iters = (long)((o->quick ? 10000 : 200000) * o->iters_scale);
    long warm = warmup_for(iters);
    double t0 = 0, t1;

    if (iters < 1)
        iters = 1;
    section_header(c, "barrier", "npes lat_ns iters");
    shmem_barrier_all();
    for (long i = 0; i < warm + iters; i++) {
        if (i == warm)
            t0 = now_s();
        shmem_barrier_all();
    }
    t1 = now_s();
    if (c->me == 0) {
        printf("%-10d %12.1f %10ld\n", c->npes, (t1 - t0) / (double)iters * 1e9, iters);
        fflush(stdout);
    }
    shmem_barrier_all();
}

static void bench_memcpy(const bench_ctx_t *c, const bench_opts_t *o)
{
    const unsigned salt = 4u;

    section_header(c, "memcpy", "size_B lat_us bw_GBps iters");
    if (c->me == 0) {
        char *a = malloc(o->max_size);
        char *b = malloc(o->max_size);
        if (!a || !b) {
            fprintf(stderr, "shmem_bench: PE 0: memcpy: malloc(%zu) failed\n", o->max_size);
            shmem_global_exit(1);
            exit(1);
        }
        for (size_t size = MIN_SIZE; size; size = next_size(o, size)) {
            long iters = iters_for(o, size);
            long warm = warmup_for(iters);
            double t0 = 0, t1;

            fill_pattern(a, size, salt);
            memset(b, 0x3c, size);
            for (long i = 0; i < warm + iters; i++) {
                if (i == warm)
                    t0 = now_s();
                memcpy_fn(b, a, size);
            }
            t1 = now_s();
            check_pattern(c, "memcpy", b, size, salt);
            print_row(size, (t1 - t0) / (double)iters, (double)size, iters);
        }
        free(b);
        free(a);
    }
    shmem_barrier_all();
}

int main(int argc, char **argv)
{
    bench_opts_t opts;
    bench_ctx_t c;

    shmem_init();
    c.me = shmem_my_pe();
    c.npes = shmem_n_pes();

    int rc = parse_args(argc, argv, c.me, &opts);
    if (rc) {
        shmem_finalize();
        return rc < 0 ? 2 : 0;
    }
    if (c.npes < 2) {
        if (c.me == 0)
            fprintf(stderr, "shmem_bench: needs at least 2 PEs (got %d)\n", c.npes);
        shmem_finalize();
        return 2;
    }

    /* Collective allocations; a NULL on any PE ends the whole job, because the
     * others would otherwise wait for it forever. */
    c.src = shmem_malloc(opts.max_size);
    c.dst = shmem_malloc(opts.max_size);
    c.flags = shmem_malloc(2 * sizeof(long));
    if (!c.src || !c.dst || !c.flags) {
        fprintf(stderr,
                "shmem_bench: PE %d: shmem_malloc of 2 x %zu bytes failed; raise "
                "SHMEM_SYMMETRIC_SIZE or lower -s\n",
                c.me, opts.max_size);
        fflush(stderr);
        shmem_global_exit(3);
        return 3;
    }
    memset(c.src, 0, opts.max_size);
    memset(c.dst, 0, opts.max_size);
    c.flags[0] = c.flags[1] = 0;

    if (c.me == 0) {
        char name[SHMEM_MAX_NAME_LEN + 1] = "";
        int major = 0, minor = 0;
        shmem_info_get_name(name);
        shmem_info_get_version(&major, &minor);
        printf("# shmem_bench vendor \"%s\" spec %d.%d npes %d max_size %zu iters_scale %g "
               "quick %d\n",
               name, major, minor, c.npes, opts.max_size, opts.iters_scale, opts.quick);
        fflush(stdout);
    }
    shmem_barrier_all();

    if (opts.run[SEC_PINGPONG])
        bench_pingpong(&c, &opts);
    if (opts.run[SEC_PUT])
        bench_put(&c, &opts, 0);
    if (opts.run[SEC_GET])
        bench_get(&c, &opts);
    if (opts.run[SEC_PUT_NBI])
        bench_put(&c, &opts, 1);
    if (opts.run[SEC_BARRIER])
        bench_barrier(&c, &opts);
    if (opts.run[SEC_MEMCPY])
        bench_memcpy(&c, &opts);

    shmem_barrier_all();
    shmem_free(c.flags);
    shmem_free(c.dst);
    shmem_free(c.src);
    shmem_finalize();
    return 0;
}
