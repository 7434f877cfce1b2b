/* Entry point of libushmem_mpi.so: the one symbol the core looks up. */
#ifdef USHMEM_MPI_MODULE /* only in libushmem_mpi.so; the core's source glob compiles nothing */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/relax.h"
#include "transport/mpi/mpi_priv.h"

#define MODULE_API __attribute__((visibility("default")))

const ushmemi_mpi_core_t *ushmemi_mpi_core;
MPI_Comm ushmemi_mpi_comm = MPI_COMM_NULL;
static int comm_users; /* bootstrap and transport: both hold it while initialized */

int ushmemi_mpi_fail(const char *call, const char *what, int mpi_rc)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(mpi_rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "MPI error %d", mpi_rc);
    MERR(call, "%s: %s", what, msg);
    return USHMEM_ESYS;
}

/* ---- the MPI lock (mpi_priv.h) ----
 * A mutex, made fair enough for threads that poll: a thread that unlocks
 * while others wait lets one of them in before it can take the lock again
 * (else a thread in ushmemi_mpi_wait's loop, relocking at once, could keep
 * a sleeping waiter out for long: the proxy thread that should answer it). */

static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int mpi_lock_waiting;          /* threads in ushmemi_mpi_lock */
static _Atomic unsigned long mpi_lock_grants; /* acquisitions so far */

void ushmemi_mpi_lock(void)
{
    atomic_fetch_add_explicit(&mpi_lock_waiting, 1, memory_order_relaxed);
    pthread_mutex_lock(&mpi_lock);
    atomic_fetch_sub_explicit(&mpi_lock_waiting, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&mpi_lock_grants, 1, memory_order_relaxed);
}

void ushmemi_mpi_unlock(void)
{
    unsigned long g = atomic_load_explicit(&mpi_lock_grants, memory_order_relaxed);
    pthread_mutex_unlock(&mpi_lock);
    /* Someone waits: until one of them has it (a woken waiter may take some
     * microseconds to run; where threads outnumber CPUs it needs ours). */
    for (unsigned i = 0;
         atomic_load_explicit(&mpi_lock_waiting, memory_order_relaxed) &&
         atomic_load_explicit(&mpi_lock_grants, memory_order_relaxed) == g && i < 4096;
         i++) {
        if (i % 64 == 63)
            sched_yield();
        else
            ushmemi_cpu_relax();
    }
}

int ushmemi_mpi_trylock(void)
{
    if (atomic_load_explicit(&mpi_lock_waiting, memory_order_relaxed) ||
        pthread_mutex_trylock(&mpi_lock) != 0)
        return 0;
    atomic_fetch_add_explicit(&mpi_lock_grants, 1, memory_order_relaxed);
    return 1;
}

int ushmemi_mpi_wait(MPI_Request *req, MPI_Status *st)
{
    for (unsigned spins = 0;; spins++) {
        int flag = 0, rc;
        USHMEMI_MPI_LOCKED(rc, MPI_Test(req, &flag, st));
        if (rc != MPI_SUCCESS || flag)
            return rc;
        /* let a thread waiting for the lock in; a long wait gives the CPU
         * up now and then (PEs may outnumber cores) */
        if (spins % 1024 == 1023)
            sched_yield();
        else
            ushmemi_cpu_relax();
    }
}

int ushmemi_mpi_waitall(int n, MPI_Request *req)
{
    for (int i = 0; i < n; i++) {
        int rc = ushmemi_mpi_wait(&req[i], MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

void ushmemi_mpi_cancel(MPI_Request *req)
{
    ushmemi_mpi_lock();
    MPI_Cancel(req);
    ushmemi_mpi_unlock();
    ushmemi_mpi_wait(req, MPI_STATUS_IGNORE);
}

int ushmemi_mpi_send(const void *buf, int n, int pe, int tag, MPI_Comm comm)
{
    MPI_Request req;
    int rc;
    USHMEMI_MPI_COMPLETED(rc, req, MPI_STATUS_IGNORE,
                          MPI_Isend(buf, n, MPI_BYTE, pe, tag, comm, &req));
    return rc;
}

int ushmemi_mpi_recv(void *buf, int n, int pe, int tag, MPI_Comm comm, MPI_Status *st)
{
    MPI_Request req;
    int rc;
    USHMEMI_MPI_COMPLETED(rc, req, st, MPI_Irecv(buf, n, MPI_BYTE, pe, tag, comm, &req));
    return rc;
}

int ushmemi_mpi_comm_setup(int my_pe, int n_pes, const char *call)
{
    if (ushmemi_mpi_comm != MPI_COMM_NULL) {
        comm_users++;
        return 0;
    }
    int inited = 0, finalized = 0, size = 0, rank = -1;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized) {
        MERR(call,
             "mpi transport: MPI is %s; start the job with mpirun (or initialize MPI "
             "before shmem_init)",
             finalized ? "finalized already" : "not initialized");
        return USHMEM_ESTATE;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size != n_pes || rank != my_pe) {
        MERR(call,
             "mpi transport: MPI_COMM_WORLD (rank %d of %d) is not this job (PE %d of %d); "
             "start ushmem with mpirun",
             rank, size, my_pe, n_pes);
        return USHMEM_ESTATE;
    }
    int rc;
    USHMEMI_MPI_LOCKED(rc, MPI_Comm_dup(MPI_COMM_WORLD, &ushmemi_mpi_comm));
    if (rc != MPI_SUCCESS)
        return ushmemi_mpi_fail(call, "MPI_Comm_dup", rc);
    MPI_Comm_set_errhandler(ushmemi_mpi_comm, MPI_ERRORS_RETURN);
    comm_users = 1;
    return 0;
}

void ushmemi_mpi_comm_release(void)
{
    if (ushmemi_mpi_comm == MPI_COMM_NULL || --comm_users > 0)
        return;
    ushmemi_mpi_comm_free(&ushmemi_mpi_comm);
}

void ushmemi_mpi_comm_free(MPI_Comm *comm)
{
    if (*comm == MPI_COMM_NULL)
        return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        ushmemi_mpi_lock();
        MPI_Comm_free(comm);
        ushmemi_mpi_unlock();
    }
    *comm = MPI_COMM_NULL;
}

static const char *library_version(void)
{
    static char buf[MPI_MAX_LIBRARY_VERSION_STRING];
    if (!buf[0]) {
        int len = 0;
        MPI_Get_library_version(buf, &len);
        buf[strcspn(buf, "\n")] = '\0';
        int major = 0, minor = 0;
        MPI_Get_version(&major, &minor);
        size_t n = strlen(buf);
        snprintf(buf + n, sizeof buf - n, " (MPI %d.%d)", major, minor);
    }
    return buf;
}

static const ushmemi_mpi_module_t module = {
    .abi = USHMEMI_MPI_ABI,
    .state_size = sizeof(ushmemi_state_t),
    .env_size = sizeof(ushmemi_env_t),
    .library_version = library_version,
    .bootstrap_init = ushmemi_mpi_bootstrap,
    .transport = &ushmemi_mpi_transport_ops,
    .proxy = &ushmemi_proxy_transport_ops,
};

MODULE_API const ushmemi_mpi_module_t *ushmem_mpi_module_v4(const ushmemi_mpi_core_t *core);
MODULE_API const ushmemi_mpi_module_t *ushmem_mpi_module_v4(const ushmemi_mpi_core_t *core)
{
    if (!core || core->abi != USHMEMI_MPI_ABI || core->state_size != sizeof(ushmemi_state_t) ||
        core->env_size != sizeof(ushmemi_env_t))
        return NULL;
    ushmemi_mpi_core = core;
    return &module;
}

#endif /* USHMEM_MPI_MODULE */
