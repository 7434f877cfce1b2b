/* A child made by fork() (without exec) that calls exit() must leave its
 * parent's job alone (issue 22, item 2): the library's exit hook used to run
 * in the child too, so exit(0) finalized the parent's PE (marked it gone,
 * sent a barrier frame on the parent's bootstrap socket) and exit(3) ended
 * the whole job with status 3. Here every PE forks children that exit with
 * 0 and 3 (through exit(), so atexit/on_exit handlers and destructors run, and
 * by returning from a function called in the child), then the job does a
 * barrier and puts/gets with every other PE and ends with status 0.
 * USHMEM_TEST_NPES: 1 2 3 */
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

static long ring; /* symmetric (global) */
static pid_t pe_pid;

/* LeakSanitizer's exit check in a forked child of a threaded process can wait
 * forever for an allocator lock another thread held at fork time (GCC 12's
 * libasan has no fork handlers): the children skip it; the PE keeps it. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return getpid() != pe_pid;
}

static void child_exit(int status)
{
    fflush(NULL); /* the parent's buffered output is not the child's to print */
    exit(status);
}

int main(void)
{
    pe_pid = getpid();
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *heap = shmem_malloc(sizeof(long) * (size_t)n);
    CHECK(heap, "shmem_malloc");
    static const int statuses[] = {0, 3, 0, 1};
    for (size_t k = 0; k < sizeof statuses / sizeof statuses[0]; k++) {
        fflush(NULL);
        pid_t pid = fork();
        CHECK(pid >= 0, "fork");
        if (pid == 0)
            child_exit(statuses[k]);
        int ws = 0;
        CHECK(waitpid(pid, &ws, 0) == pid, "waitpid");
        CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == statuses[k],
              "child exited with 0x%x, want status %d", ws, statuses[k]);
        /* Still a live PE of the job after each child: a barrier and a round of RMA. */
        shmem_barrier_all();
    }
    for (int pe = 0; pe < n; pe++)
        shmem_long_p(&heap[me], 100 * me + pe, pe);
    shmem_long_p(&ring, me, (me + 1) % n);
    shmem_barrier_all();
    for (int pe = 0; pe < n; pe++) {
        CHECK(heap[pe] == 100 * pe + me, "heap[%d] = %ld", pe, heap[pe]);
        CHECK(shmem_long_g(&heap[me], pe) == 100 * me + pe, "get from PE %d", pe);
    }
    CHECK(ring == (me + n - 1) % n, "ring = %ld", ring);
    CHECK(shmem_long_g(&ring, (me + 1) % n) == me, "get of ring");
    shmem_barrier_all();
    shmem_free(heap);
    shmem_finalize();
    return 0;
}
