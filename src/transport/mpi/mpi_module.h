/* The boundary between the core (libushmem) and the MPI module
 * (libushmem_mpi.so: the mpi transport and the MPI bootstrap).
 *
 * The core never links MPI: it dlopen()s the module when a job needs it and
 * calls its one exported symbol, USHMEMI_MPI_ENTRY, with a table of what the
 * module may use of the core. The core's own symbols are hidden, so the
 * module reaches the runtime state, the environment and the error reporting
 * only through that table. Both sides are built from one tree; abi and
 * state_size catch a module left over from another build. */
#ifndef USHMEM_MPI_MODULE_H
#define USHMEM_MPI_MODULE_H

#include <stddef.h>

#include "bootstrap/bootstrap.h"
#include "core/state.h"
#include "transport/transport.h"

#define USHMEMI_MPI_ABI       6u
#define USHMEMI_MPI_ENTRY     "ushmem_mpi_module_v4"
#define USHMEMI_MPI_FILE_NAME "libushmem_mpi.so"

/* What the core lends the module. */
typedef struct {
    unsigned abi;
    size_t state_size, env_size; /* sizeof as the core was built */
    ushmemi_state_t *g;
    const ushmemi_env_t *env;
    void (*error)(const char *call, const char *fmt, ...) USHMEMI_PRINTF(2, 3);
    void (*debug)(const char *call, const char *fmt, ...) USHMEMI_PRINTF(2, 3);
    /* The staged proxy's hands on this PE's memory (src/transport/proxy). A
     * symmetric address of this PE, or any local buffer (host or device
     * memory): copies complete on return. The AMO runs where the word's home
     * is: a GPU atomic on the device heap, a CPU atomic on host memory. Bad
     * input or a failing CUDA call ends the job with a line. */
    void (*local_copy)(void *dst, const void *src, size_t n, const char *call);
    uint64_t (*local_amo)(ushmemi_amo_op_t op, int dtype, void *sym, uint64_t value, uint64_t cond,
                          const char *call);
    /* Bounce buffers: page-locked when CUDA is active (copies to and from
     * the device heap run at full speed and asynchronously), else malloc. */
    void *(*bounce_alloc)(size_t n);
    void (*bounce_free)(void *p);
    /* 1 when addr is device memory (symmetric or not). */
    int (*is_device)(const void *addr);
    /* A put into this PE's symmetric memory from a page-locked buffer:
     * returns 1 when only enqueued (the device heap, on the proxy's stream,
     * in order with its AMOs), so src must stay put until local_sync;
     * 0 when done (host memory). */
    int (*local_put)(void *sym, const void *src, size_t n, const char *call);
    /* The signal of a put with signal (set, or add when add), after that
     * put's bytes: 1 when only enqueued behind them (the device heap; then
     * *value, page-locked, stays put until local_sync), 0 when done. */
    int (*local_signal)(void *sym, const uint64_t *value, int add, const char *call);
    void (*local_sync)(const char *call);
    void (*activity)(int slot, const char *what, int pe); /* for the hang report */
} ushmemi_mpi_core_t;

/* What the module offers. */
typedef struct {
    unsigned abi;
    size_t state_size, env_size; /* as the module was built: must match the core's */
    /* "Open MPI v4.1.4, ..." (first line of MPI_Get_library_version). */
    const char *(*library_version)(void);
    /* MPI bootstrap over MPI_COMM_WORLD: MPI_Init_thread unless MPI is
     * initialized already (then MPI stays the application's). 0 or a negative
     * USHMEM_E* code after one line. */
    int (*bootstrap_init)(ushmemi_bootstrap_t *bs, const char *call);
    /* The mpi transport (ops for unmapped peers: put, get, amo, quiet...). */
    const ushmemi_transport_ops_t *transport;
    /* The staged proxy (src/transport/proxy): device heaps of unmapped peers. */
    const ushmemi_transport_ops_t *proxy;
} ushmemi_mpi_module_t;

typedef const ushmemi_mpi_module_t *(*ushmemi_mpi_entry_fn)(const ushmemi_mpi_core_t *core);

#endif
