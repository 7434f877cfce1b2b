/* A large zeroed static array costs nothing at shmem_init (issue 22, item 11):
 * the data segment is moved into a memfd, and all-zero pages (every page of an
 * untouched .bss) are left as holes instead of being copied. Before, every page
 * was written, so a 1 GiB .bss took ~10 s and 1 GiB of RAM per PE. Checked: the
 * time inside shmem_init, the growth of this PE's resident memory (VmRSS,
 * RssShmem) across it, and that the array is still symmetric (a peer's put at
 * a random offset lands; a get of the peer's copy sees its value), and that
 * the non-zero pages around it (.data, a written .bss page) survive the move.
 * USHMEM_TEST_NPES: 1 2 3 */
#include <time.h>

#include "test_util.h"

#define BIG_BYTES ((size_t)512 << 20)
#define BIG_N     (BIG_BYTES / sizeof(long))

static long big[BIG_N];                 /* .bss, never touched before init */
static long small_bss[4096];            /* .bss, one page written before init */
long data_words[64] = {7, 8, 9};        /* .data */
static const long limit_kb = 64L << 10; /* growth allowed: 1/8 of the array */
static const double limit_s = 3.0;

/* A "Name:   N kB" line of /proc/self/status, in kB (0 when absent). */
static long status_kb(const char *name)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    long kb = 0;
    size_t len = strlen(name);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, name, len) && line[len] == ':')
            kb = atol(line + len + 1);
    if (f)
        fclose(f);
    return kb;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
    small_bss[1000] = 12345;
    long rss0 = status_kb("VmRSS"), shm0 = status_kb("RssShmem");
    double t0 = now_s();
    shmem_init();
    double took = now_s() - t0;
    long rss1 = status_kb("VmRSS"), shm1 = status_kb("RssShmem");
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(took < limit_s, "shmem_init took %.2f s with a %zu MiB .bss (limit %.1f s)", took,
          BIG_BYTES >> 20, limit_s);
    CHECK(rss1 - rss0 < limit_kb, "VmRSS grew by %ld kB across shmem_init (%zu MiB .bss)",
          rss1 - rss0, BIG_BYTES >> 20);
    CHECK(shm1 - shm0 < limit_kb, "RssShmem grew by %ld kB across shmem_init", shm1 - shm0);
    CHECK(data_words[0] == 7 && data_words[2] == 9 && small_bss[1000] == 12345,
          "non-zero data lost in the move");
    CHECK(big[0] == 0 && big[BIG_N / 2] == 0 && big[BIG_N - 1] == 0, "zero .bss is not zero");

    /* The next PE puts into our array at an offset all PEs can compute. */
    size_t off = (size_t)(test_mix(test_seed()) % BIG_N);
    int to = (me + 1) % n, from = (me + n - 1) % n;
    shmem_long_p(&big[off], 1000 + me, to);
    shmem_long_p(&big[BIG_N - 1 - off], 2000 + me, to);
    shmem_barrier_all();
    CHECK(big[off] == 1000 + from, "big[%zu] = %ld, want %d", off, big[off], 1000 + from);
    CHECK(big[BIG_N - 1 - off] == 2000 + from, "big[%zu] = %ld", BIG_N - 1 - off,
          big[BIG_N - 1 - off]);
    CHECK(shmem_long_g(&big[off], to) == 1000 + me, "get from PE %d", to);
    CHECK(shmem_long_g(&small_bss[1000], to) == 12345, "get of a written .bss page");
    shmem_barrier_all();
    if (me == 0)
        printf("shmem_init %.3f s, VmRSS +%ld kB, RssShmem +%ld kB (%zu MiB .bss)\n", took,
               rss1 - rss0, shm1 - shm0, BIG_BYTES >> 20);
    shmem_finalize();
    return 0;
}
