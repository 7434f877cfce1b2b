/* Library setup, teardown and queries. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "core/core.h"
#include "core/prims.h"
#include "heap/heap.h"
#include "transport/cuda/devmem.h"
#include "transport/transport.h"

ushmemi_state_t ushmemi_g;
static ushmemi_bootstrap_t bootstrap;
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int exit_hook_installed;
static int implicit_finalize_wanted; /* start_pes: finalize at exit */
static int leaving_by_exit;          /* finalizing from exit(), not shmem_finalize */
static pid_t init_pid;               /* the process that initialized: see exit_hook */

const ushmemi_bootstrap_t *ushmemi_bootstrap(void)
{
    return &bootstrap;
}

static void fini_locked(void);

/* Exit while initialized: a clean exit(0) finalizes implicitly (start_pes
 * programs rely on that); any other status means this PE is failing, so ask the
 * others to stop rather than let them wait for us forever. */
static void exit_hook(int status, void *arg)
{
    (void)arg;
    /* A child made by fork() without exec inherits this hook, the state and
     * the bootstrap sockets, but it is not the PE: finalizing or aborting from
     * it would tear down its parent's job. */
    if (!ushmemi_g.initialized || getpid() != init_pid)
        return;
    if (status == 0) {
        if (!implicit_finalize_wanted)
            ushmemi_debug("exit", "program exits without shmem_finalize; finalizing implicitly");
        pthread_mutex_lock(&init_lock);
        ushmemi_g.initialized = 1;
        leaving_by_exit = !implicit_finalize_wanted;
        fini_locked();
        pthread_mutex_unlock(&init_lock);
        return;
    }
    char msg[96];
    snprintf(msg, sizeof msg, "PE %d exited with status %d before shmem_finalize", ushmemi_g.my_pe,
             status);
    ushmemi_bootstrap_abort(status, msg);
}

static int init_locked(const ushmemi_bootstrap_t *bs_in, int requested, const char *call)
{
    int rc;

    if (ushmemi_g.initialized) {
        ushmemi_g.initialized++;
        return 0;
    }
    if (ushmemi_env_load() != 0) {
        ushmemi_error(call, "invalid environment (see the lines above)");
        return USHMEM_EINVAL;
    }
    if (bs_in) {
        bootstrap = *bs_in;
    } else {
        rc = ushmemi_bootstrap_init_env(&bootstrap);
        if (rc)
            return rc;
    }
    ushmemi_g.my_pe = bootstrap.rank;
    ushmemi_g.n_pes = bootstrap.nranks;
    ushmemi_g.local_rank = bootstrap.local_rank;
    ushmemi_g.thread_level = requested;

    rc = ushmemi_heap_init(call);
    if (rc)
        goto undo_bootstrap;
    rc = ushmemi_local_agree(call);
    if (rc)
        goto undo_heap;
    rc = ushmemi_dataseg_init(call);
    if (rc)
        goto undo_heap;
    rc = ushmemi_transports_init(call);
    if (rc)
        goto undo_dataseg;
    rc = ushmemi_teams_init(call);
    if (rc)
        goto undo_transports;
    rc = ushmemi_bootstrap_monitor_start();
    if (rc)
        goto undo_teams;
    init_pid = getpid();
    if (!exit_hook_installed) {
        on_exit(exit_hook, NULL);
        exit_hook_installed = 1;
    }
    ushmemi_g.initialized = 1;
    ushmemi_g.ever_initialized = 1;
    if (ushmemi_g.my_pe == 0 && ushmemi_env.version)
        fprintf(stderr, "ushmem %s (OpenSHMEM %d.%d)\n", USHMEM_VERSION_STRING, SHMEM_MAJOR_VERSION,
                SHMEM_MINOR_VERSION);
    if (ushmemi_g.my_pe == 0 && ushmemi_env.info) {
        fprintf(stderr, "ushmem environment:\n");
        ushmemi_env_print(stderr);
    }
    /* Peers read these in long waits (src/sync/wait.c): who we are, and that
     * we have not left. */
    atomic_store_explicit(&ushmemi_g.sync->pid, (int32_t)getpid(), memory_order_relaxed);
    atomic_store_explicit(&ushmemi_g.sync->depart, USHMEMI_DEPART_RUNNING, memory_order_release);
    ushmemi_sync_world();
    return 0;

undo_teams:
    ushmemi_teams_fini();
undo_transports:
    ushmemi_transports_fini();
undo_dataseg:
    ushmemi_dataseg_fini();
undo_heap:
    ushmemi_heap_fini();
undo_bootstrap:
    ushmemi_error(call, "initialization failed: %s", ushmemi_strerror(rc));
    if (bootstrap.ops && bootstrap.nranks > 1) {
        /* The others would wait for us until the bootstrap timeout: end the job. */
        char msg[96];
        snprintf(msg, sizeof msg, "PE %d failed to initialize (%s)", bootstrap.rank,
                 ushmemi_strerror(rc));
        ushmemi_bootstrap_abort(1, msg);
    }
    if (bootstrap.ops)
        bootstrap.ops->fini();
    ushmemi_g.n_pes = 0;
    return rc;
}

static void fini_locked(void)
{
    if (ushmemi_g.initialized == 0)
        return;
    if (--ushmemi_g.initialized > 0)
        return;
    /* Every PE is here before anything is released, and nobody's monitor may
     * mistake the teardown below for a dead peer. */
    ushmemi_quiet(SHMEM_CTX_DEFAULT);
    /* Say that we left (peers stuck in a barrier waiting for us then stop the
     * job instead of hanging), and meet the others in finalize's own barrier:
     * it cannot pair with a peer's shmem_barrier_all. */
    atomic_store_explicit(&ushmemi_g.sync->depart,
                          leaving_by_exit ? USHMEMI_DEPART_EXIT : USHMEMI_DEPART_FINALIZE,
                          memory_order_release);
    leaving_by_exit = 0;
    ushmemi_sync_fini();
    ushmemi_wait_report();
    bootstrap.ops->barrier();
    ushmemi_bootstrap_monitor_stop();
    bootstrap.ops->barrier();
    ushmemi_teams_fini();
    ushmemi_transports_fini();
    ushmemi_dataseg_fini();
    ushmemi_heap_fini();
    bootstrap.ops->fini();
    memset(&bootstrap, 0, sizeof bootstrap);
}

static void init_or_die(const ushmemi_bootstrap_t *bs, int requested, const char *call)
{
    pthread_mutex_lock(&init_lock);
    int rc = init_locked(bs, requested, call);
    pthread_mutex_unlock(&init_lock);
    if (rc)
        exit(1);
}

USHMEMI_API void shmem_init(void)
{
    init_or_die(NULL, SHMEM_THREAD_SINGLE, "shmem_init");
}

USHMEMI_API int shmem_init_thread(int requested, int *provided)
{
    if (requested < SHMEM_THREAD_SINGLE || requested > SHMEM_THREAD_MULTIPLE) {
        ushmemi_error("shmem_init_thread", "unknown thread level %d", requested);
        return -1;
    }
    pthread_mutex_lock(&init_lock);
    int rc = init_locked(NULL, requested, "shmem_init_thread");
    /* Every level is provided: the data path is lock-free and the few shared
     * tables take their own locks. */
    if (rc == 0 && requested > ushmemi_g.thread_level)
        ushmemi_g.thread_level = requested;
    pthread_mutex_unlock(&init_lock);
    if (rc == 0 && provided)
        *provided = ushmemi_g.thread_level;
    return rc ? -1 : 0;
}

USHMEMI_API void start_pes(int npes)
{
    (void)npes;
    if (ushmemi_g.initialized)
        return; /* legacy: later calls are no-ops */
    implicit_finalize_wanted = 1;
    init_or_die(NULL, SHMEM_THREAD_SINGLE, "start_pes");
}

USHMEMI_API int shmemx_init_attr(int rank, int nranks, const shmemx_uniqueid_t *uid,
                                 const shmemx_init_attr_t *attr)
{
    static const char call[] = "shmemx_init_attr";
    if (!uid || nranks < 1 || rank < 0 || rank >= nranks) {
        ushmemi_error(call, "bad arguments (rank %d, nranks %d, uid %p)", rank, nranks,
                      (const void *)uid);
        return SHMEMX_ERR_INVALID;
    }
    pthread_mutex_lock(&init_lock);
    int rc;
    if (ushmemi_g.initialized) {
        rc = init_locked(NULL, 0, call);
    } else if ((rc = ushmemi_env_load()) == 0) {
        ushmemi_bootstrap_t bs;
        rc = ushmemi_bootstrap_init_uid(&bs, rank, nranks, uid);
        ushmemi_cuda_request_device(attr ? attr->device : -1); /* cuda hook: device binding */
        if (rc == 0)
            rc = init_locked(&bs, attr ? attr->thread_level : SHMEM_THREAD_SINGLE, call);
    }
    pthread_mutex_unlock(&init_lock);
    if (rc)
        return rc == USHMEM_EINVAL ? SHMEMX_ERR_INVALID : SHMEMX_ERR_BOOTSTRAP;
    return 0;
}

USHMEMI_API int shmemx_get_uniqueid(shmemx_uniqueid_t *uid)
{
    if (!uid) {
        ushmemi_error("shmemx_get_uniqueid", "uid is NULL");
        return SHMEMX_ERR_INVALID;
    }
    if (ushmemi_env_load() != 0)
        return SHMEMX_ERR_INVALID;
    return ushmemi_bootstrap_make_uid(uid) ? SHMEMX_ERR_BOOTSTRAP : 0;
}

USHMEMI_API void shmem_finalize(void)
{
    pthread_mutex_lock(&init_lock);
    if (!ushmemi_g.initialized)
        ushmemi_debug("shmem_finalize", "library is not initialized; ignored");
    fini_locked();
    pthread_mutex_unlock(&init_lock);
}

USHMEMI_API int shmem_query_initialized(void)
{
    return ushmemi_g.initialized > 0;
}

USHMEMI_API void shmem_query_thread(int *provided)
{
    USHMEMI_CHECK_INIT("shmem_query_thread");
    if (provided)
        *provided = ushmemi_g.thread_level;
}

USHMEMI_API void shmem_global_exit(int status)
{
    fflush(NULL);
    if (ushmemi_g.cuda_active)
        ushmemi_cuda_dev_abort(); /* waiting kernels of this PE trap instead of hanging */
    if (ushmemi_g.initialized && ushmemi_g.n_pes > 1) {
        char msg[64];
        snprintf(msg, sizeof msg, "PE %d called shmem_global_exit(%d)", ushmemi_g.my_pe, status);
        ushmemi_bootstrap_abort(status, msg);
    }
    _exit(status);
}

USHMEMI_API int shmem_my_pe(void)
{
    return ushmemi_g.initialized ? ushmemi_g.my_pe : -1;
}

USHMEMI_API int shmem_n_pes(void)
{
    return ushmemi_g.initialized ? ushmemi_g.n_pes : -1;
}

USHMEMI_API int _my_pe(void)
{
    return shmem_my_pe();
}

USHMEMI_API int _num_pes(void)
{
    return shmem_n_pes();
}

USHMEMI_API int shmem_pe_accessible(int pe)
{
    if (!ushmemi_g.initialized || pe < 0 || pe >= ushmemi_g.n_pes)
        return 0;
    return ushmemi_pe_reachable(pe);
}

USHMEMI_API int shmem_addr_accessible(const void *addr, int pe)
{
    if (!shmem_pe_accessible(pe))
        return 0;
    return ushmemi_seg_of(addr, 1) >= 0;
}

USHMEMI_API void shmem_info_get_version(int *major, int *minor)
{
    if (major)
        *major = SHMEM_MAJOR_VERSION;
    if (minor)
        *minor = SHMEM_MINOR_VERSION;
}

USHMEMI_API void shmem_info_get_name(char *name)
{
    /* Exactly the vendor string, as the spec says (tests-sos shmem_info checks
     * it); the library version is in ushmem_info and SHMEM_VERSION=1. */
    if (name)
        snprintf(name, SHMEM_MAX_NAME_LEN, "%s", SHMEM_VENDOR_STRING);
}

USHMEMI_API double shmemx_wtime(void)
{
    return (double)ushmemi_now_ns() * 1e-9;
}

/* Cache management routines are deprecated no-ops on coherent hardware. */
USHMEMI_API void shmem_clear_cache_inv(void) {}
USHMEMI_API void shmem_set_cache_inv(void) {}
USHMEMI_API void shmem_clear_cache_line_inv(void *dest)
{
    (void)dest;
}
USHMEMI_API void shmem_set_cache_line_inv(void *dest)
{
    (void)dest;
}
USHMEMI_API void shmem_udcflush(void) {}
USHMEMI_API void shmem_udcflush_line(void *dest)
{
    (void)dest;
}

/* pshmem_ profiling names (and pstart_pes for the deprecated start_pes) */
USHMEMI_PSHMEM(start_pes)
USHMEMI_PSHMEM(shmem_init)
USHMEMI_PSHMEM(shmem_init_thread)
USHMEMI_PSHMEM(shmem_finalize)
USHMEMI_PSHMEM(shmem_query_initialized)
USHMEMI_PSHMEM(shmem_query_thread)
USHMEMI_PSHMEM(shmem_global_exit)
USHMEMI_PSHMEM(shmem_my_pe)
USHMEMI_PSHMEM(shmem_n_pes)
USHMEMI_PSHMEM(shmem_pe_accessible)
USHMEMI_PSHMEM(shmem_addr_accessible)
USHMEMI_PSHMEM(shmem_info_get_version)
USHMEMI_PSHMEM(shmem_info_get_name)
USHMEMI_PSHMEM(shmem_clear_cache_inv)
USHMEMI_PSHMEM(shmem_set_cache_inv)
USHMEMI_PSHMEM(shmem_clear_cache_line_inv)
USHMEMI_PSHMEM(shmem_set_cache_line_inv)
USHMEMI_PSHMEM(shmem_udcflush)
USHMEMI_PSHMEM(shmem_udcflush_line)

USHMEMI_API void shmem_pcontrol(const int level, ...)
{
    (void)level;
}
USHMEMI_PSHMEM(shmem_pcontrol)
