/* Private to libushmem_mpi.so (the MPI module). The core's symbols are
 * hidden, so module code reaches the runtime state, environment and error
 * reporting through the table the core passed at load time: use G, ENV,
 * MERR and MDEBUG here, never ushmemi_g or ushmemi_error (the module is
 * linked with --no-undefined, which catches a slip). */
#ifndef USHMEM_MPI_PRIV_H
#define USHMEM_MPI_PRIV_H

#include <mpi.h>

#include "transport/mpi/mpi_module.h"

extern const ushmemi_mpi_core_t *ushmemi_mpi_core;
#define G           (*ushmemi_mpi_core->g)
#define ENV         (*ushmemi_mpi_core->env)
#define MERR(...)   ushmemi_mpi_core->error(__VA_ARGS__)
#define MDEBUG(...) ushmemi_mpi_core->debug(__VA_ARGS__)

/* The communicator every MPI call of ushmem uses: a duplicate of
 * MPI_COMM_WORLD (made by the bootstrap, or by the transport when the
 * application initialized MPI and another bootstrap started ushmem), so our
 * traffic never matches the application's. MPI_COMM_NULL when none. */
extern MPI_Comm ushmemi_mpi_comm;
/* Make ushmemi_mpi_comm if needed: MPI must be initialized and its world
 * must be the job (rank my_pe of n_pes). 0 or a negative code after a line. */
int ushmemi_mpi_comm_setup(int my_pe, int n_pes, const char *call);
/* Each successful setup is matched by one release; the last frees the comm. */
void ushmemi_mpi_comm_release(void);

/* Report a failed MPI call as "PE n: call: what: <MPI error string>" and
 * return USHMEM_ESYS. */
int ushmemi_mpi_fail(const char *call, const char *what, int mpi_rc);

extern const ushmemi_transport_ops_t ushmemi_mpi_transport_ops;
extern const ushmemi_transport_ops_t ushmemi_proxy_transport_ops; /* src/transport/proxy */
/* Why the mpi transport has no RMA windows (the MPI cannot create them over
 * ordinary memory), or NULL when it has them. */
const char *ushmemi_mpi_no_rma(void);
int ushmemi_mpi_bootstrap(ushmemi_bootstrap_t *bs, const char *call);

#endif
