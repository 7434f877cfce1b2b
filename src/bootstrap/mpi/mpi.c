/* MPI bootstrap (part of libushmem_mpi.so): rank, size and the setup
 * collectives over a duplicate of MPI_COMM_WORLD.
 *
 * MPI is initialized here (MPI_THREAD_MULTIPLE: ushmem provides every thread
 * level) unless the application did it; then it is the application's and we
 * never finalize it. When we initialized it, MPI_Finalize runs at process
 * exit rather than at shmem_finalize, because MPI cannot be initialized
 * twice and OpenSHMEM 1.6 lets a program initialize ushmem again.
 *
 * No liveness monitor: mpirun kills the job when a rank dies, and
 * shmem_global_exit / fatal errors end the job with MPI_Abort. */
#ifdef USHMEM_MPI_MODULE /* only in libushmem_mpi.so; the core's source glob compiles nothing */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/mpi/mpi_priv.h"

static int we_initialized; /* MPI_Init_thread was ours: MPI_Finalize at exit */
static pid_t init_pid;     /* the process that called MPI_Init_thread */
static int local_rank, my_rank;

static int check_len(size_t len, const char *what)
{
    if (len <= INT_MAX)
        return 0;
    MERR("bootstrap", "mpi: %s of %zu bytes is too large", what, len);
    return USHMEM_EINVAL;
}

static int mb_allgather(const void *in, void *out, size_t len)
{
    int rc = check_len(len, "allgather");
    if (rc)
        return rc;
    MPI_Request req;
    USHMEMI_MPI_COMPLETED(
        rc, req, MPI_STATUS_IGNORE,
        MPI_Iallgather(in, (int)len, MPI_BYTE, out, (int)len, MPI_BYTE, ushmemi_mpi_comm, &req));
    return rc == MPI_SUCCESS ? 0 : ushmemi_mpi_fail("bootstrap", "MPI_Allgather", rc);
}

static int mb_bcast(void *buf, size_t len, int root)
{
    int rc = check_len(len, "bcast");
    if (rc)
        return rc;
    MPI_Request req;
    USHMEMI_MPI_COMPLETED(rc, req, MPI_STATUS_IGNORE,
                          MPI_Ibcast(buf, (int)len, MPI_BYTE, root, ushmemi_mpi_comm, &req));
    return rc == MPI_SUCCESS ? 0 : ushmemi_mpi_fail("bootstrap", "MPI_Bcast", rc);
}

static int mb_barrier(void)
{
    MPI_Request req;
    int rc;
    USHMEMI_MPI_COMPLETED(rc, req, MPI_STATUS_IGNORE, MPI_Ibarrier(ushmemi_mpi_comm, &req));
    return rc == MPI_SUCCESS ? 0 : ushmemi_mpi_fail("bootstrap", "MPI_Barrier", rc);
}

static void mb_fini(void)
{
    ushmemi_mpi_comm_release();
}

/* Same wording as the star's abort (bootstrap.h), printed by the PE that
 * aborts; mpirun then stops every rank and exits with status. */
static void mb_abort(int status, const char *msg)
{
    if (msg && msg[0] && !strncmp(msg, "PE ", 3))
        fprintf(stderr, "ushmem: %.200s\n", msg);
    else if (msg && msg[0])
        fprintf(stderr, "ushmem: PE %d: %.200s (exit status %d)\n", my_rank, msg, status);
    else
        fprintf(stderr, "ushmem: PE %d called shmem_global_exit(%d)\n", my_rank, status);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
}

static const ushmemi_bootstrap_ops_t mpi_bootstrap_ops = {
    .name = "mpi",
    .allgather = mb_allgather,
    .bcast = mb_bcast,
    .barrier = mb_barrier,
    .fini = mb_fini,
    .abort = mb_abort,
};

static void finalize_at_exit(void)
{
    /* A child made by fork() runs this too; MPI is its parent's. */
    if (getpid() != init_pid)
        return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Finalize();
}

/* Open MPI 4's osc/rdma crashes in MPI_Compare_and_swap on 64-bit integers
 * between processes of one node (btl/vader's emulated atomics:
 * open-mpi/ompi#7967, #11349; seen with 4.1.4), and no parameter avoids it.
 * osc/ucx works, so when we start MPI ourselves, the user chose no osc and
 * the ucx component is installed, we select it (sm too, for the application's
 * shared-memory windows). See docs/mpi.md. */
static void prefer_working_osc(const char *call)
{
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(ver, &len) != MPI_SUCCESS || !strstr(ver, "Open MPI v4.") ||
        getenv("OMPI_MCA_osc"))
        return;
    Dl_info info;
    if (!dladdr((void *)&MPI_Init_thread, &info) || !info.dli_fname)
        return;
    char lib[PATH_MAX]; /* components sit beside the real file, not a /lib symlink */
    if (!realpath(info.dli_fname, lib))
        return;
    const char *dir = dirname(lib);
    /* upstream, Debian (the library in the multiarch dir, components below) */
    static const char *const sub[] = {"openmpi", "openmpi3", "openmpi/lib/openmpi3"};
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s/mca_osc_ucx.so", dir, sub[i]);
        if (access(path, R_OK) == 0) {
            setenv("OMPI_MCA_osc", "ucx,sm", 0);
            MDEBUG(call, "bootstrap: mpi: Open MPI 4: selecting osc/ucx (osc/rdma's "
                         "compare-and-swap crashes on one node)");
            return;
        }
    }
}

int ushmemi_mpi_bootstrap(ushmemi_bootstrap_t *bs, const char *call)
{
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (finalized) {
        MERR(call, "bootstrap: mpi: MPI is finalized already; it cannot be initialized "
                   "again in this process");
        return USHMEM_ESTATE;
    }
    if (!inited) {
        prefer_working_osc(call);
        int provided = MPI_THREAD_SINGLE;
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS) {
            MERR(call, "bootstrap: mpi: MPI_Init_thread failed (error %d)", rc);
            return USHMEM_EBOOTSTRAP;
        }
        if (provided < MPI_THREAD_MULTIPLE)
            MDEBUG(call, "bootstrap: mpi: MPI provides thread level %d only", provided);
        we_initialized = 1;
        init_pid = getpid();
        atexit(finalize_at_exit);
    }
    int rank = -1, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *said = getenv("OMPI_COMM_WORLD_SIZE");
    if (said && atoi(said) != size) {
        MERR(call,
             "bootstrap: mpi: MPI_COMM_WORLD has %d rank%s but mpirun said "
             "OMPI_COMM_WORLD_SIZE=%s (MPI started as a singleton?)",
             size, size == 1 ? "" : "s", said);
        return USHMEM_EBOOTSTRAP;
    }
    int rc = ushmemi_mpi_comm_setup(rank, size, call);
    if (rc)
        return rc;
    MPI_Comm node;
    local_rank = 0;
    if (MPI_Comm_split_type(ushmemi_mpi_comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_rank(node, &local_rank);
        MPI_Comm_free(&node);
    }
    my_rank = rank;
    bs->rank = rank;
    bs->nranks = size;
    bs->local_rank = local_rank;
    bs->ops = &mpi_bootstrap_ops;
    MDEBUG(call, "bootstrap: mpi: rank %d of %d, local rank %d%s", rank, size, local_rank,
           we_initialized ? "" : " (MPI initialized by the application)");
    return 0;
}

#endif /* USHMEM_MPI_MODULE */
