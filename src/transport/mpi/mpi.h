/* What the core sees of MPI (src/transport/mpi/loader.c, built into
 * libushmem): the mpi transport's ops table, the MPI bootstrap and the module
 * loader behind both. The core library never links MPI; everything that calls
 * MPI lives in libushmem_mpi.so, loaded the first time one of these needs it. */
#ifndef USHMEM_MPI_H
#define USHMEM_MPI_H

#include <stdio.h>

#include "bootstrap/bootstrap.h"
#include "transport/transport.h"

/* Forwards to the module's transport; its unusable_reason loads the module
 * and says why it cannot be used (NULL when it can). */
extern const ushmemi_transport_ops_t ushmemi_transport_mpi;

/* The staged proxy's ops (src/transport/proxy/staged.c, in the module), or
 * NULL when the module cannot be loaded. */
const ushmemi_transport_ops_t *ushmemi_proxy_ops(void);

/* Load the module (once). 0, or USHMEM_EUNSUPPORTED with *why set to a
 * sentence naming what was tried and what failed. */
int ushmemi_mpi_load(const char **why);

/* Bootstrap over MPI_COMM_WORLD (detect.c: launched by mpirun, or
 * USHMEM_BOOTSTRAP=mpi). USHMEM_EUNSUPPORTED when the module is absent (no
 * line printed: the caller says what it means); other errors after a line. */
int ushmemi_mpi_bootstrap_init(ushmemi_bootstrap_t *bs, const char *call);

/* One line for ushmem_info: the MPI library found, or why not. */
void ushmemi_mpi_describe(FILE *out);

#endif
