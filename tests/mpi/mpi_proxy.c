/* The staged proxy: symmetric memory of PEs this process does not map,
 * reached through their proxy threads over MPI (src/transport/proxy).
 *
 * With a GPU bound (USHMEM_DEVICE=0, several PEs on pretend hosts:
 * USHMEM_FAKE_HOSTS=2) shmem_malloc returns device memory and the proxy
 * carries every access to the device heaps of the other pretend host. Without
 * one (CI) the test asks for USHMEM_PROXY_HOST=1, which sends unmapped host
 * memory through the same proxy, so the protocol runs on any machine.
 *
 * Every PE writes to every PE (mapped, proxied and itself) and every PE
 * checks what it received, with random data: puts and gets of 1 B .. 3 MiB at
 * odd offsets from host and device sources, _nbi + quiet, p/g, strided,
 * put-with-signal (the signal must never overtake its data), every AMO kind
 * hammered on the same words by all PEs (exact totals: one home per word), and
 * a MoE-style dispatch (fetch_add reserves a row at the destination, put the
 * row, signal add), checked row by row. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define SLOT   ((size_t)4 << 20) /* per-sender region in each PE's buffer */
#define ROUNDS 8                 /* put-with-signal rounds */
#define PSLOT  ((size_t)96 << 10)
#define AMO_K  60
#define ROWS   24 /* rows each PE sends to each destination */
#define ROWB   1024

static const size_t sizes[] = {1, 7, 8, 100, 4096, 8193, 65537, (1 << 20) + 3, (3 << 20) + 5};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* This PE's copy of sym, read through the library (works for device memory). */
static void *snapshot(const void *sym, size_t n)
{
    void *h = malloc(n);
    CHECK(h, "malloc");
    shmem_getmem(h, sym, n, shmem_my_pe());
    return h;
}

static void check_bytes(const char *got, size_t n, int from, int round, const char *what)
{
    size_t bad = 0;
    if (!test_verify(got, n, from, round, &bad)) {
        fprintf(stderr, "PE %d: %s: %zu bytes from PE %d (round %d) differ at byte %zu\n",
                shmem_my_pe(), what, n, from, round, bad);
        exit(1);
    }
}

int main(void)
{
    if (!getenv("USHMEM_DEVICE"))
        setenv("USHMEM_PROXY_HOST", "1", 0);
    shmem_init();
    int me = shmem_my_pe(), np = shmem_n_pes();
    size_t big = SLOT * (size_t)np;
    char *buf = shmem_malloc(big);      /* region [from] written by PE from */
    char *src_dev = shmem_malloc(SLOT); /* a symmetric (device when bound) source */
    char *pbuf = shmem_malloc(PSLOT * ROUNDS);
    uint64_t *psig = shmem_calloc(2, sizeof *psig);
    uint64_t *words = shmem_calloc(8, sizeof *words);
    uint32_t *w32 = shmem_calloc(2, sizeof *w32);
    uint64_t *rowctr = shmem_calloc(1, sizeof *rowctr);
    uint64_t *rowsig = shmem_calloc(1, sizeof *rowsig);
    char *rows = shmem_malloc((size_t)np * ROWS * ROWB);
    CHECK(buf && src_dev && pbuf && psig && words && w32 && rowctr && rowsig && rows,
          "shmem_malloc");
    char *host = malloc(SLOT);
    CHECK(host, "malloc");

    int proxied = 0;
    for (int pe = 0; pe < np; pe++)
        proxied += pe != me && shmem_ptr(buf, pe) == NULL;
    if (me == 0)
        printf("PE 0: %d of %d peers reached through the proxy or mpi\n", proxied, np - 1);

    /* ---- put and get, every size, host and symmetric sources, every peer ---- */
    for (size_t si = 0; si < NSIZES; si++) {
        size_t n = sizes[si], off = (si * 13) % 61;
        int round = (int)si;
        test_fill(host, n, me, round);
        shmem_putmem(src_dev + off, host, n, me); /* same bytes in the symmetric source */
        shmem_barrier_all();
        for (int k = 0; k < np; k++) {
            int t = (me + k) % np;
            char *dst = buf + (size_t)me * SLOT + off;
            if (si % 3 == 0)
                shmem_putmem(dst, host, n, t);
            else if (si % 3 == 1)
                shmem_putmem_nbi(dst, src_dev + off, n, t);
            else
                shmem_putmem(dst, src_dev + off, n, t);
        }
        shmem_quiet();
        shmem_barrier_all();
        char *mine = snapshot(buf, big);
        for (int from = 0; from < np; from++)
            check_bytes(mine + (size_t)from * SLOT + off, n, from, round, "put");
        free(mine);
        /* get back what this PE wrote to each peer, into host and symmetric memory */
        for (int k = 0; k < np; k++) {
            int t = (me + k) % np;
            memset(host, 0, n);
            shmem_getmem(host, buf + (size_t)me * SLOT + off, n, t);
            check_bytes(host, n, me, round, "get into host memory");
            shmem_getmem_nbi(src_dev + off, buf + (size_t)me * SLOT + off, n, t);
            shmem_quiet();
            char *g = snapshot(src_dev + off, n);
            check_bytes(g, n, me, round, "get into symmetric memory");
            free(g);
        }
        shmem_barrier_all();
    }

    /* ---- p / g and strided ---- */
    int64_t *elems = (int64_t *)(buf + (size_t)me * SLOT);
    for (int k = 0; k < np; k++) {
        int t = (me + k) % np;
        shmem_int64_p(elems + 3, (int64_t)(me * 1000 + t), t);
        int64_t v[16];
        for (int i = 0; i < 16; i++)
            v[i] = (int64_t)test_mix((uint64_t)(me * 100 + t * 10 + i));
        shmem_int64_iput(elems + 16, v, 3, 1, 16, t); /* every third element from 16 on */
    }
    shmem_barrier_all();
    for (int k = 0; k < np; k++) {
        int t = (me + k) % np;
        CHECK(shmem_int64_g(elems + 3, t) == (int64_t)(me * 1000 + t), "p/g through PE %d", t);
        int64_t v[16];
        shmem_int64_iget(v, elems + 16, 1, 3, 16, t);
        for (int i = 0; i < 16; i++)
            CHECK(v[i] == (int64_t)test_mix((uint64_t)(me * 100 + t * 10 + i)),
                  "strided element %d from PE %d", i, t);
    }
    shmem_barrier_all();

    /* ---- put-with-signal: the data of each round is complete when its signal is ---- */
    int next = (me + 1) % np, prev = (me + np - 1) % np;
    for (int r = 0; r < ROUNDS; r++) {
        size_t n = PSLOT - (size_t)r * 997;
        test_fill(host, n, me, 100 + r);
        shmem_putmem_signal(pbuf + (size_t)r * PSLOT, host, n, &psig[0], 1, SHMEM_SIGNAL_ADD, next);
        shmem_putmem_signal_nbi(pbuf + (size_t)r * PSLOT, host, 0, &psig[1], (uint64_t)r + 1,
                                SHMEM_SIGNAL_SET, next);
    }
    for (int r = 0; r < ROUNDS; r++) {
        shmem_uint64_wait_until(&psig[0], SHMEM_CMP_GE, (uint64_t)r + 1);
        char *got = snapshot(pbuf + (size_t)r * PSLOT, PSLOT - (size_t)r * 997);
        check_bytes(got, PSLOT - (size_t)r * 997, prev, 100 + r, "put-with-signal data");
        free(got);
    }
    shmem_uint64_wait_until(&psig[1], SHMEM_CMP_EQ, ROUNDS);
    shmem_barrier_all();

    /* ---- AMOs: every PE on every PE's words at once ---- */
    for (int i = 0; i < AMO_K; i++) {
        for (int k = 0; k < np; k++) {
            int t = (me + k + i) % np;
            shmem_uint64_atomic_fetch_add(&words[0], 1, t);
            shmem_uint64_atomic_add(&words[1], 3, t);
            shmem_uint32_atomic_inc(&w32[0], t);
            uint64_t old = shmem_uint64_atomic_fetch(&words[2], t), seen;
            while ((seen = shmem_uint64_atomic_compare_swap(&words[2], old, old + 1, t)) != old)
                old = seen;
            if (i == 0) {
                shmem_uint64_atomic_or(&words[3], 1ULL << me, t);
                shmem_uint64_atomic_xor(&words[4], 1ULL << me, t);
                shmem_uint64_atomic_fetch_and(&words[5], ~0ULL, t);
            }
        }
    }
    shmem_barrier_all();
    uint64_t *wl = snapshot(words, 8 * sizeof *words);
    uint32_t *wl32 = snapshot(w32, 2 * sizeof *w32);
    uint64_t all = np >= 64 ? ~0ULL : (1ULL << np) - 1;
    CHECK(wl[0] == (uint64_t)AMO_K * np, "fetch_add total %llu, want %llu",
          (unsigned long long)wl[0], (unsigned long long)AMO_K * np);
    CHECK(wl[1] == 3ULL * AMO_K * np, "add total %llu", (unsigned long long)wl[1]);
    CHECK(wl32[0] == (uint32_t)(AMO_K * np), "32-bit inc total %u", wl32[0]);
    CHECK(wl[2] == (uint64_t)AMO_K * np, "compare_swap increments %llu", (unsigned long long)wl[2]);
    CHECK(wl[3] == all && wl[4] == all && wl[5] == 0, "or/xor/and words");
    free(wl);
    free(wl32);
    for (int k = 0; k < np; k++) {
        int t = (me + k) % np;
        uint64_t old = shmem_uint64_atomic_swap(&words[6], (uint64_t)me + 1, t);
        CHECK(old <= (uint64_t)np, "swap returned %llu", (unsigned long long)old);
    }
    shmem_barrier_all();

    /* ---- MoE-style dispatch: reserve a row with fetch_add, put it, signal ---- */
    for (int r = 0; r < ROWS; r++) {
        for (int k = 1; k <= np; k++) {
            int t = (me + k) % np;
            uint64_t row = shmem_uint64_atomic_fetch_add(rowctr, 1, t);
            CHECK(row < (uint64_t)np * ROWS, "row %llu out of range", (unsigned long long)row);
            test_fill(host, ROWB, me, 1000 + r * np + t);
            memcpy(host, &me, sizeof me); /* the row says who sent it and which it is */
            memcpy(host + sizeof me, &r, sizeof r);
            shmem_putmem_signal(rows + row * ROWB, host, ROWB, rowsig, 1, SHMEM_SIGNAL_ADD, t);
        }
    }
    shmem_uint64_wait_until(rowsig, SHMEM_CMP_EQ, (uint64_t)np * ROWS);
    char *got = snapshot(rows, (size_t)np * ROWS * ROWB);
    int *count = calloc((size_t)np * ROWS, sizeof *count);
    CHECK(count, "calloc");
    for (size_t row = 0; row < (size_t)np * ROWS; row++) {
        int from, r;
        memcpy(&from, got + row * ROWB, sizeof from);
        memcpy(&r, got + row * ROWB + sizeof from, sizeof r);
        CHECK(from >= 0 && from < np && r >= 0 && r < ROWS, "row %zu: bad header", row);
        char *want = malloc(ROWB);
        test_fill(want, ROWB, from, 1000 + r * np + me);
        CHECK(!memcmp(want + 8, got + row * ROWB + 8, ROWB - 8), "row %zu (PE %d, #%d) differs",
              row, from, r);
        free(want);
        count[from * ROWS + r]++;
    }
    for (int i = 0; i < np * ROWS; i++)
        CHECK(count[i] == 1, "row %d of PE %d arrived %d times", i % ROWS, i / ROWS, count[i]);
    free(count);
    free(got);

    shmem_barrier_all();
    if (me == 0)
        printf("PE 0: proxy test passed (%d PEs)\n", np);
    free(host);
    shmem_free(rows);
    shmem_free(rowsig);
    shmem_free(rowctr);
    shmem_free(w32);
    shmem_free(words);
    shmem_free(psig);
    shmem_free(pbuf);
    shmem_free(src_dev);
    shmem_free(buf);
    shmem_finalize();
    return 0;
}
