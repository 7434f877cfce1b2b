/* Setup and query routines, including 1.6 nested init/finalize.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include <pthread.h>
#include <unistd.h>

#include "test_util.h"
#include <shmemx.h>

static long counter; /* a global: symmetric */
enum { THREADS = 4 };
static int iters = 2000; /* per thread; TEST_ITERS (the MPI runs: 1000) */

static void *bump(void *arg)
{
    (void)arg;
    for (int i = 0; i < iters; i++)
        shmem_long_atomic_inc(&counter, 0);
    return NULL;
}

int main(void)
{
    const char *iters_env = getenv("TEST_ITERS");
    if (iters_env && atoi(iters_env) > 0)
        iters = atoi(iters_env);
    CHECK(!shmem_query_initialized(), "initialized before shmem_init");
    CHECK(shmem_my_pe() == -1 && shmem_n_pes() == -1, "queries before init should be -1");
    int provided = -1;
    CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0, "init_thread failed");
    CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
    int q = -1;
    shmem_query_thread(&q);
    CHECK(q == SHMEM_THREAD_MULTIPLE, "query_thread %d", q);
    CHECK(shmem_query_initialized(), "not initialized after init");
    int me = shmem_my_pe(), np = shmem_n_pes();
    const char *want_np = getenv("USHMEM_NPES"); /* ushrun; mpirun: */
    if (!want_np)
        want_np = getenv("OMPI_COMM_WORLD_SIZE");
    CHECK(want_np && np == atoi(want_np), "n_pes %d, launcher said %s", np, want_np);
    CHECK(me >= 0 && me < np, "my_pe %d", me);
    CHECK(_my_pe() == me && _num_pes() == np, "deprecated queries");

    /* nested init: a second init is counted, the first finalize keeps us up */
    shmem_init();
    shmem_finalize();
    CHECK(shmem_query_initialized(), "finalize of a nested init ended the library");
    shmem_barrier_all();

    int major = 0, minor = 0;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    CHECK(major == 1 && minor >= 5, "version %d.%d", major, minor);
    CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0, "name '%s', want exactly '%s'", name,
          SHMEM_VENDOR_STRING);

    for (int pe = 0; pe < np; pe++)
        CHECK(shmem_pe_accessible(pe), "PE %d not accessible", pe);
    CHECK(!shmem_pe_accessible(np) && !shmem_pe_accessible(-1), "out-of-range PE accessible");
    long *heap = shmem_malloc(64);
    int on_stack = 0;
    long *priv = malloc(64);
    for (int pe = 0; pe < np; pe++) {
        CHECK(shmem_addr_accessible(heap, pe), "heap not accessible on PE %d", pe);
        CHECK(shmem_addr_accessible(&counter, pe), "global not accessible on PE %d", pe);
        CHECK(!shmem_addr_accessible(&on_stack, pe), "stack address accessible");
        CHECK(!shmem_addr_accessible(priv, pe), "malloc address accessible");
    }
    void **bases = malloc(sizeof(void *) * (size_t)np);
    CHECK(shmemx_heap_bases(heap, bases) == 0, "heap_bases");
    CHECK(bases[me] == heap, "own base %p != %p", bases[me], (void *)heap);
    for (int pe = 0; pe < np; pe++)
        CHECK(bases[pe] == shmem_ptr(heap, pe), "heap_bases[%d] != shmem_ptr", pe);
    CHECK(shmemx_heap_bases(priv, bases) != 0, "heap_bases on private memory succeeded");
    /* Device routes: none at all without a device heap (no NVIDIA device here,
     * as in CI), else mapped (this PE included) or through the proxy. */
    int self_route = shmemx_device_route(me);
    if (access("/dev/nvidiactl", F_OK) != 0)
        CHECK(self_route == SHMEMX_ROUTE_NONE, "device route to self without a GPU: %d",
              self_route);
    for (int pe = 0; pe < np; pe++) {
        int r = shmemx_device_route(pe);
        CHECK(self_route == SHMEMX_ROUTE_NONE ? r == SHMEMX_ROUTE_NONE
                                              : r == SHMEMX_ROUTE_MAPPED || r == SHMEMX_ROUTE_PROXY,
              "device route to PE %d: %d (to self: %d)", pe, r, self_route);
    }
    CHECK(shmemx_device_route(np) == -1 && shmemx_device_route(-1) == -1,
          "device route to a PE out of range");
    double t0 = shmemx_wtime();
    CHECK(t0 > 0 && shmemx_wtime() >= t0, "wtime");

    /* THREAD_MULTIPLE: several threads increment PE 0's global at once */
    pthread_t th[THREADS];
    shmem_barrier_all();
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, bump, NULL) == 0, "pthread_create");
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    shmem_barrier_all();
    long total = shmem_long_atomic_fetch(&counter, 0);
    CHECK(total == (long)np * THREADS * iters, "threaded atomic count %ld, want %ld", total,
          (long)np * THREADS * iters);
    free(bases);
    free(priv);
    shmem_free(heap);
    shmem_finalize();
    CHECK(!shmem_query_initialized(), "still initialized after the last finalize");

    /* 1.6: the library may be initialized again after the last finalize */
    shmem_init();
    CHECK(shmem_my_pe() == me && shmem_n_pes() == np, "re-init queries");
    int *again = shmem_malloc(sizeof(int));
    shmem_int_p(again, 77 + me, (me + 1) % np);
    shmem_barrier_all();
    CHECK(*again == 77 + (me + np - 1) % np, "put after re-init: %d", *again);
    shmem_free(again);
    shmem_finalize();
    return 0;
}
