/* Entry point of libushmem_mpi.so: the one symbol the core looks up. */
#ifdef USHMEM_MPI_MODULE /* only in libushmem_mpi.so; the core's source glob compiles nothing */
#include <stdio.h>
#include <string.h>

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
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &ushmemi_mpi_comm);
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
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Comm_free(&ushmemi_mpi_comm);
    ushmemi_mpi_comm = MPI_COMM_NULL;
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
