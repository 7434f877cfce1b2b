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
/* MPI_Comm_free under the MPI lock, unless MPI is finalized; *comm is
 * MPI_COMM_NULL after. */
void ushmemi_mpi_comm_free(MPI_Comm *comm);

/* Report a failed MPI call as "PE n: call: what: <MPI error string>" and
 * return USHMEM_ESYS. */
int ushmemi_mpi_fail(const char *call, const char *what, int mpi_rc);

/* ---- One of ushmem's threads in MPI at a time ----
 * Open MPI's osc/ucx (4.1, and 5.0 as of open-mpi/ompi#13347) drives its
 * UCX worker in single-thread mode whatever thread level MPI granted, and
 * every MPI call that progresses (a test, a probe, a flush) progresses that
 * worker: two threads doing so at once can handle one incoming message
 * twice. Seen as a 4-byte put applied again after its target had reset the
 * word (tests/mpi/mpi_flag_once.c, 4 PEs, 2000 rounds: about 1 run
 * in 7, none in 144 since this lock, none without the helper threads), with
 * ushmem's own threads (the application's, the proxy thread's MPI_Test, the
 * progress thread's MPI_Iprobe) as the two. So every MPI call ushmem makes
 * holds this lock, and no thread holding it blocks on anything another
 * thread of this process has to do: a blocking send, receive, wait or
 * collective is the nonblocking call completed by ushmemi_mpi_wait, which
 * takes the lock for one MPI_Test at a time. (MPI_Win_flush stays blocking:
 * it waits for the target's progress only, which the target's lock holder
 * makes.) The application's own MPI calls are not serialized with ours:
 * docs/mpi.md. */
void ushmemi_mpi_lock(void);
/* Lets a waiting thread in before returning. */
void ushmemi_mpi_unlock(void);
/* Polls that may be skipped (a waiting PE's progress, the progress
 * thread's): 1 (and the lock) unless a thread holds the lock or waits for
 * it, which then progresses MPI anyway. The proxy's receiver takes the lock:
 * a thread of ours may be waiting for its answer. */
int ushmemi_mpi_trylock(void);
/* rc = call, under the lock. */
#define USHMEMI_MPI_LOCKED(rc, call)                                                               \
    do {                                                                                           \
        ushmemi_mpi_lock();                                                                        \
        (rc) = (call);                                                                             \
        ushmemi_mpi_unlock();                                                                      \
    } while (0)
/* MPI_Wait / MPI_Waitall, one locked MPI_Test at a time (st may be
 * MPI_STATUS_IGNORE). The MPI return code. */
int ushmemi_mpi_wait(MPI_Request *req, MPI_Status *st);
int ushmemi_mpi_waitall(int n, MPI_Request *req);
/* A blocking call as its nonblocking form: rc = icall (which starts req)
 * under the lock, then, if it started, req completed by ushmemi_mpi_wait. */
#define USHMEMI_MPI_COMPLETED(rc, req, st, icall)                                                  \
    do {                                                                                           \
        USHMEMI_MPI_LOCKED(rc, icall);                                                             \
        if ((rc) == MPI_SUCCESS)                                                                   \
            (rc) = ushmemi_mpi_wait(&(req), st);                                                   \
    } while (0)
/* Cancels req (a receive nobody will answer) and completes it. */
void ushmemi_mpi_cancel(MPI_Request *req);
/* Blocking byte send and receive on comm, completed the same way. */
int ushmemi_mpi_send(const void *buf, int n, int pe, int tag, MPI_Comm comm);
int ushmemi_mpi_recv(void *buf, int n, int pe, int tag, MPI_Comm comm, MPI_Status *st);

extern const ushmemi_transport_ops_t ushmemi_mpi_transport_ops;
extern const ushmemi_transport_ops_t ushmemi_proxy_transport_ops; /* src/transport/proxy */
/* Why the mpi transport has no RMA windows (the MPI cannot create them over
 * ordinary memory), or NULL when it has them. */
const char *ushmemi_mpi_no_rma(void);
int ushmemi_mpi_bootstrap(ushmemi_bootstrap_t *bs, const char *call);

#endif
