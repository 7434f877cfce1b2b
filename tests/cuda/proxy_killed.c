/* A PE dies (SIGKILL) while the proxies carry requests to or from it: 4 PEs
 * on two pretend hosts (USHMEM_FAKE_HOSTS=2 under mpirun: PEs 0-1 and 2-3),
 * PEs 2 and 3 stream nbi puts (host and stream API), fetch_adds and quiets
 * into PE 0's device heap through the staged proxy. argv[1] "target": PE 0
 * is killed; "origin": PE 2 is. proxy_killed.sh checks that the job ends
 * within seconds with a line naming the dead rank, and that no survivor
 * reaches its own end (they would stop after 60 s). "probe": 0 where a GPU
 * is usable, else 77. */
#include <signal.h>
#include <time.h>

#include "cuda_test.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "probe";
    if (tcu_load() != 0)
        return 77;
    if (!strcmp(mode, "probe"))
        return 0;
    shmem_init();
    int me = shmem_my_pe(), np = shmem_n_pes();
    if (np != 4 || shmemx_device_route(0) != (me < 2 ? SHMEMX_ROUTE_MAPPED : SHMEMX_ROUTE_PROXY)) {
        if (me == 0)
            fprintf(stderr,
                    "proxy_killed: needs 4 PEs on two pretend hosts (USHMEM_FAKE_HOSTS=2)\n");
        shmem_finalize();
        return 77;
    }
    const size_t N = (size_t)1 << 20;
    char *buf = shmem_malloc(2 * N);
    uint64_t *ctr = shmem_calloc(1, 8);
    CHECK(buf && ctr && tcu_is_device(buf), "device heap allocation failed");
    CUstream s = tcu_stream();
    int victim = !strcmp(mode, "origin") ? 2 : 0;
    shmem_barrier_all();
    double t0 = now();
    uint64_t last = 0;
    long rounds = 0;
    if (me == victim && victim == 0) {
        usleep(300000); /* the others' requests are flowing */
        fprintf(stderr, "proxy_killed: PE 0 (the target) kills itself\n");
        raise(SIGKILL);
    }
    while (now() - t0 < 60) {
        if (me >= 2) { /* the other pretend host streams into PE 0 */
            shmem_putmem_nbi(buf + (size_t)me * 4096, buf + N, N - 8192, 0);
            shmemx_putmem_on_stream(buf + N + (size_t)me * 4096, buf, 65536, 0, s);
            uint64_t v = shmem_uint64_atomic_fetch_add(ctr, 1, 0);
            CHECK(rounds == 0 || v > last || me != 2, "fetch_add went back: %llu after %llu",
                  (unsigned long long)v, (unsigned long long)last);
            last = v;
            if (++rounds % 4 == 0)
                shmem_quiet();
            if (me == victim && now() - t0 > 0.3) {
                fprintf(stderr, "proxy_killed: PE 2 (an origin) kills itself after %ld rounds\n",
                        rounds);
                raise(SIGKILL);
            }
        } else {
            usleep(1000);
        }
    }
    fprintf(stderr, "proxy_killed: PE %d still running after 60 s: the job did not end\n", me);
    return 1;
}
