/* ushmem internal core: state, errors, environment, logging. Nothing here is
 * exported; every symbol is ushmemi_* and hidden. */
#ifndef USHMEM_INTERNAL_H
#define USHMEM_INTERNAL_H

#include <stdatomic.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include "shmem.h"
#include "shmemx.h"

#define USHMEMI_API __attribute__((visibility("default")))
/* The pshmem_ profiling name of a hand-written routine: an alias, so it must
 * sit in the file that defines the routine (the typed ones are generated). */
#define USHMEMI_PSHMEM(name)                                                                       \
    extern __typeof__(name) p##name __attribute__((alias(#name), visibility("default")));
#define USHMEMI_LIKELY(x)    __builtin_expect(!!(x), 1)
#define USHMEMI_UNLIKELY(x)  __builtin_expect(!!(x), 0)
#define USHMEMI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define USHMEMI_CACHELINE    64

/* ---- Error codes: one table gives the enum and the messages ---- */
#define USHMEMI_ERRORS(X)                                                                          \
    X(OK, 0, "success")                                                                            \
    X(INVAL, -1, "invalid argument")                                                               \
    X(NOMEM, -2, "out of memory")                                                                  \
    X(SYS, -3, "system call failed")                                                               \
    X(BOOTSTRAP, -4, "bootstrap failed")                                                           \
    X(TIMEOUT, -5, "timed out")                                                                    \
    X(DENIED, -6, "connection refused: wrong secret")                                              \
    X(NOTSYM, -7, "address is not symmetric")                                                      \
    X(BADPE, -8, "PE out of range")                                                                \
    X(OVERLAP, -9, "range overlaps an existing registration")                                      \
    X(NOTFOUND, -10, "not found")                                                                  \
    X(STATE, -11, "library not in the right state for this call")                                  \
    X(UNREACH, -12, "peer not reachable by any transport")                                         \
    X(UNSUPPORTED, -13, "not supported")

enum {
#define USHMEMI_ERR_ENUM(name, val, msg) USHMEM_E##name = (val),
    USHMEMI_ERRORS(USHMEMI_ERR_ENUM)
#undef USHMEMI_ERR_ENUM
};
const char *ushmemi_strerror(int err);

/* ---- Environment: one X-macro table drives parsing, defaults, ushmem_info and docs.
 * X(field, type, default, names, help): names is a "A|B" list, first match wins. ---- */
typedef enum {
    USHMEMI_ENV_SIZE,
    USHMEMI_ENV_INT,
    USHMEMI_ENV_BOOL,
    USHMEMI_ENV_STR
} ushmemi_env_type_t;

#define USHMEMI_ENV_TABLE(X)                                                                       \
    X(heap_size, SIZE, "512M", "SHMEM_SYMMETRIC_SIZE|USHMEM_HEAP_SIZE",                            \
      "Host symmetric heap size per PE (K/M/G/T suffixes)")                                        \
    X(device_heap_size, SIZE, "1G", "USHMEM_DEVICE_HEAP_SIZE",                                     \
      "Device symmetric heap size per PE (CUDA builds)")                                           \
    X(local_heap_size, SIZE, "0", "USHMEM_LOCAL_HEAP_SIZE",                                        \
      "Part of the host heap set aside for shmemx_malloc_local (blocks one PE allocates and "      \
      "frees alone); the same on every PE")                                                        \
    X(device_local_heap_size, SIZE, "0", "USHMEM_DEVICE_LOCAL_HEAP_SIZE",                          \
      "Part of the device heap set aside for shmemx_malloc_local (the torch symmetric-memory "     \
      "backend allocates there); the same on every PE")                                            \
    X(transports, STR, "shm", "USHMEM_TRANSPORTS",                                                 \
      "Comma-separated transports in order of preference (shm,cuda,mpi)")                          \
    X(bootstrap, STR, "auto", "USHMEM_BOOTSTRAP",                                                  \
      "How PEs find each other: auto, launcher, torchrun, uid, mpi, single")                       \
    X(bootstrap_bind, STR, "", "USHMEM_BOOTSTRAP_BIND",                                            \
      "TCP bootstrap root listens on: empty = the address peers dial (unique id, MASTER_ADDR), "   \
      "any = all interfaces, or an IP")                                                            \
    X(bootstrap_timeout, INT, "60", "USHMEM_BOOTSTRAP_TIMEOUT",                                    \
      "Seconds to wait for all PEs to join before failing (0: forever)")                           \
    X(debug, BOOL, "0", "SHMEM_DEBUG|USHMEM_DEBUG",                                                \
      "Print a message for every failed call; check that every PE makes the same symmetric "       \
      "allocation and the same collective call (kind, team, root, count, type, operator: a "       \
      "mismatch ends the job with one line naming both PEs and both calls)")                       \
    X(info, BOOL, "0", "SHMEM_INFO|USHMEM_INFO", "Print the environment table at init (PE 0)")     \
    X(version, BOOL, "0", "SHMEM_VERSION|USHMEM_VERSION", "Print the library version at init")     \
    X(master_addr, STR, "", "USHMEM_MASTER_ADDR|MASTER_ADDR",                                      \
      "Rendezvous host for torchrun-style launch")                                                 \
    X(master_port, INT, "0", "USHMEM_MASTER_PORT", "Rendezvous port (default: MASTER_PORT + 1)")   \
    X(static_data, BOOL, "1", "USHMEM_STATIC_DATA",                                                \
      "Make the executable's global and static variables symmetric (remap at init)")               \
    X(device, INT, "-1", "USHMEM_DEVICE", "CUDA device to bind (-1: LOCAL_RANK or none)")          \
    X(cuda_ipc, STR, "vmm", "USHMEM_CUDA_IPC", "How device heaps are shared: vmm or legacy")       \
    X(device_wait, STR, "auto", "USHMEM_DEVICE_WAIT",                                              \
      "Device-side waits/barriers: auto (when no PEs share a GPU, or MPS shares fit), "            \
      "timesliced (always: slow without MPS), off")                                                \
    X(device_scope, STR, "auto", "USHMEM_DEVICE_SCOPE",                                            \
      "Memory scope of device barriers and collectives: auto (GPU scope where every PE of the "    \
      "job is on this PE's GPU, else system), sys (always system scope)")                          \
    X(device_wait_timeout, INT, "60", "USHMEM_DEVICE_WAIT_TIMEOUT",                                \
      "Seconds one device-side wait may last before its kernel traps, and the proxy's wait for "   \
      "its own copy or atomic on this GPU before the job ends (0: no limit)")                      \
    X(cuda_coll, STR, "auto", "USHMEM_CUDA_COLL",                                                  \
      "Collectives on device memory: auto, copy (every PE copies, two stream barriers), leader "   \
      "(one PE copies for all), kernel (one kernel copies and synchronizes on the device)")        \
    X(cuda_barrier, STR, "auto", "USHMEM_CUDA_BARRIER",                                            \
      "Barriers on a stream: auto, rounds (log2 n rounds of stream memory operations), mesh (one " \
      "round: every PE signals and waits for every other), kernel (one small kernel does the "     \
      "mesh round on the device; where device waits are safe)")                                    \
    X(wait_policy, STR, "auto", "USHMEM_WAIT_POLICY",                                              \
      "Waits: auto (spin, or yield at once when the job has more PEs on a host than CPUs), "       \
      "spin, yield; either ends in sleeping back-off")                                             \
    X(wait_spin_us, INT, "2000", "USHMEM_WAIT_SPIN_US",                                            \
      "Microseconds a wait spins (or yields) before it sleeps with back-off (with peers over "     \
      "MPI waits sleep only where this is set)")                                                   \
    X(wait_sleep_max_us, INT, "1000", "USHMEM_WAIT_SLEEP_MAX_US",                                  \
      "Longest single sleep of a long wait (bounds the extra latency; 1/16 of the wait so far)")   \
    X(wait_stats, BOOL, "0", "USHMEM_WAIT_STATS",                                                  \
      "Print each PE's wait counters at finalize (spins, yields, sleeps, longest wait)")           \
    X(mpi_module, STR, "", "USHMEM_MPI_MODULE",                                                    \
      "Path of libushmem_mpi.so (default: beside libushmem.so)")                                   \
    X(mpi_progress, INT, "100", "USHMEM_MPI_PROGRESS",                                             \
      "mpi transport: microseconds between MPI progress calls of a helper thread (0: none)")       \
    X(fake_hosts, INT, "0", "USHMEM_FAKE_HOSTS",                                                   \
      "Testing: split the PEs into k pretend hosts by rank (mixed shm/mpi routes)")                \
    X(proxy_host, BOOL, "0", "USHMEM_PROXY_HOST",                                                  \
      "Testing: carry host memory of unmapped peers through the staged proxy too (no GPU needed)") \
    X(proxy_idle_us, INT, "50", "USHMEM_PROXY_IDLE_US",                                            \
      "Staged proxy: longest sleep (us) of an idle proxy thread between polls (0: spin)")          \
    X(proxy_spin_us, INT, "2000", "USHMEM_PROXY_SPIN_US",                                          \
      "Staged proxy: for this long (us) after its last work a proxy thread keeps polling (with "   \
      "short pauses where the host has 3 CPUs per PE, else naps of at most 4 us)")                 \
    X(proxy_context, STR, "own", "USHMEM_PROXY_CONTEXT",                                           \
      "Where the proxy writes other hosts' puts, signals and atomics into this PE's device heap: " \
      "own (a CUDA context of its own, never held up by the application's stream waits), "         \
      "primary (the application's context)")                                                       \
    X(proxy_trace, BOOL, "0", "USHMEM_PROXY_TRACE",                                                \
      "Debugging: time each step of the proxy's requests (other hosts) and print each PE's "       \
      "means at finalize")                                                                         \
    X(hang_stacks, BOOL, "0", "USHMEM_HANG_STACKS",                                                \
      "Debugging: the hang report (ushrun --timeout, SIGUSR1 to ushrun) also prints every "        \
      "thread's call stack")

typedef struct {
#define USHMEMI_ENV_FIELD_SIZE                           size_t
#define USHMEMI_ENV_FIELD_INT                            long
#define USHMEMI_ENV_FIELD_BOOL                           int
#define USHMEMI_ENV_FIELD_STR                            const char *
#define USHMEMI_ENV_FIELD(field, type, def, names, help) USHMEMI_ENV_FIELD_##type field;
    USHMEMI_ENV_TABLE(USHMEMI_ENV_FIELD)
#undef USHMEMI_ENV_FIELD
} ushmemi_env_t;

extern ushmemi_env_t ushmemi_env __attribute__((visibility("hidden")));
int ushmemi_env_load(void); /* parse into ushmemi_env; 0 or USHMEM_EINVAL (message printed) */
void ushmemi_env_print(FILE *out); /* table with current values and help */
int ushmemi_parse_size(const char *s, size_t *out);

/* ---- Logging and fatal errors ---- */
/* One line on stderr: "ushmem: PE n: call: reason". */
void ushmemi_error(const char *call, const char *fmt, ...) USHMEMI_PRINTF(2, 3);
/* Called with each error line after it is printed, when set (the Python
 * binding puts the library's reason into its exceptions). */
extern void (*ushmemi_error_hook)(const char *line);
/* Debug-only message (SHMEM_DEBUG). */
void ushmemi_debug(const char *call, const char *fmt, ...) USHMEMI_PRINTF(2, 3);
/* Report and bring the whole job down (all PEs). */
_Noreturn void ushmemi_fatal(const char *call, const char *fmt, ...) USHMEMI_PRINTF(2, 3);

#endif /* USHMEM_INTERNAL_H */
