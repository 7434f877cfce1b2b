/* mpi transport (part of libushmem_mpi.so): MPI-3 passive-target RMA on one
 * window per host segment (the symmetric heap and the static data segment,
 * created over the very memory the shm transport shares, so a PE's memory is
 * the same bytes whichever way a peer reaches it). Every window is locked
 * once for the whole job (MPI_Win_lock_all), so each operation is a single
 * MPI call plus, when it must complete before returning, a flush.
 *
 * Completion: blocking put/get/AMO flush their target before returning; _nbi
 * put/get only mark the job as having operations in flight, and fence/quiet
 * flush every window then (MPI orders nothing by itself, so fence is a
 * flush too). Atomicity: AMOs are MPI accumulate-type operations, atomic
 * with each other only; the core routes every AMO of a job through here as
 * soon as one peer uses this transport (docs/mpi.md). See README.md. */
#ifdef USHMEM_MPI_MODULE /* only in libushmem_mpi.so; the core's source glob compiles nothing */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync/stacks.h"
#include "transport/mpi/mpi_priv.h"

#define CALL  "mpi"
#define CHUNK ((size_t)1 << 30) /* MPI counts are int */

static const int win_segs[] = {USHMEMI_SEG_HEAP, USHMEMI_SEG_DATA};
#define NWIN ((int)(sizeof win_segs / sizeof win_segs[0]))

static MPI_Win wins[NWIN];
static int have_win[NWIN];
static int have_comm;
static _Atomic int in_flight; /* _nbi operations issued since the last quiet */
/* [NWIN][n_pes]: targets with _nbi operations in flight. quiet flushes them
 * one by one: Open MPI 4.1's osc/ucx MPI_Win_flush_all leaves gets
 * incomplete once about 64 are outstanding, MPI_Win_flush does not. */
static _Atomic unsigned char *dirty[NWIN];
/* Why there are no windows (this MPI cannot create them), or "". */
static char no_rma[MPI_MAX_ERROR_STRING + 64];

const char *ushmemi_mpi_no_rma(void)
{
    return no_rma[0] ? no_rma : NULL;
}

static int t_init(void)
{
    int rc = ushmemi_mpi_comm_setup(G.my_pe, G.n_pes, "shmem_init");
    have_comm = rc == 0;
    return rc;
}

static void t_fini(void)
{
    if (have_comm)
        ushmemi_mpi_comm_release();
    have_comm = 0;
}

static int t_reachable(int pe, ushmemi_mem_kind_t kind)
{
    (void)pe;
    return kind == USHMEMI_MEM_HOST && have_comm;
}

/* Passive-target progress. Where the MPI library moves RMA in software (UCX
 * without RDMA hardware, emulated atomics), an operation aimed at a PE
 * completes only when that PE calls into MPI. Waiting PEs do (the wait loops
 * call t_progress), but OpenSHMEM also promises completion while the target
 * computes, so a helper thread pokes MPI every USHMEM_MPI_PROGRESS us, but
 * only when the PE made no MPI call of its own since the last look: two
 * threads in MPI at once fight over its locks, and on a busy machine a
 * preempted lock holder stalls the PE's own traffic (measured, 2 PEs on 2
 * cores, put 8 B: 0.8 us alone, 36 us with an unconditional poke every 100
 * us). Needs MPI_THREAD_MULTIPLE (we ask for it when we initialize MPI). */
/* While the PE makes MPI calls of its own the thread wakes less often, its
 * naps doubling up to this many times USHMEM_MPI_PROGRESS: each wake-up
 * takes the CPU from the application where they share one (mpirun binds 2
 * ranks to a core each). A PE that stops calling MPI is poked again within
 * that longest nap. */
#define PROGRESS_BACKOFF 16
static pthread_t prog_thread;
static int prog_started;
static _Atomic int prog_run;
static _Atomic unsigned long activity; /* MPI calls of the data path, for the thread */
#define ACTIVE() atomic_fetch_add_explicit(&activity, 1, memory_order_relaxed)

static void *progress_main(void *arg)
{
    (void)arg;
    long us = ENV.mpi_progress, nap = us;
    unsigned long seen = atomic_load_explicit(&activity, memory_order_relaxed);
    while (atomic_load_explicit(&prog_run, memory_order_acquire)) {
        struct timespec ts = {nap / 1000000, nap % 1000000 * 1000};
        nanosleep(&ts, NULL);
        unsigned long now = atomic_load_explicit(&activity, memory_order_relaxed);
        if (now != seen) { /* the PE drives MPI itself: look less often */
            nap = nap * 2 < us * PROGRESS_BACKOFF ? nap * 2 : us * PROGRESS_BACKOFF;
        } else {
            nap = us;
            if (ushmemi_mpi_trylock()) { /* the PE is not in MPI: poke it */
                int flag;
                MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, ushmemi_mpi_comm, &flag, MPI_STATUS_IGNORE);
                ushmemi_mpi_unlock();
            }
        }
        seen = now;
    }
    return NULL;
}

static void progress_start(const char *call)
{
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    if (ENV.mpi_progress <= 0 || prog_started)
        return;
    if (level < MPI_THREAD_MULTIPLE) {
        MDEBUG(call,
               "mpi: no progress thread (MPI thread level %d): RMA aimed at a PE "
               "completes when it calls ushmem",
               level);
        return;
    }
    sigset_t all, old;
    ushmemi_helper_thread_mask(&all, ENV.hang_stacks);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    atomic_store(&prog_run, 1);
    prog_started = pthread_create(&prog_thread, NULL, progress_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!prog_started)
        MDEBUG(call, "mpi: cannot start the progress thread");
}

static void progress_stop(void)
{
    if (!prog_started)
        return;
    atomic_store(&prog_run, 0);
    pthread_join(prog_thread, NULL);
    prog_started = 0;
}

static void free_windows(void)
{
    for (int w = 0; w < NWIN; w++) {
        if (!have_win[w])
            continue;
        ushmemi_mpi_lock();
        MPI_Win_unlock_all(wins[w]);
        MPI_Win_free(&wins[w]);
        ushmemi_mpi_unlock();
        have_win[w] = 0;
        free((void *)dirty[w]);
        dirty[w] = NULL;
    }
}

static void t_detach(void)
{
    progress_stop();
    free_windows();
    atomic_store(&in_flight, 0);
}

/* Open MPI 4's osc/rdma crashes in 64-bit MPI_Compare_and_swap between
 * processes of one node (open-mpi/ompi#7967, #11349). When we initialize MPI
 * we steer Open MPI to osc/ucx (src/bootstrap/mpi/mpi.c); when the
 * application did, say how to avoid it. */
static void warn_known_bugs(const char *call)
{
    char name[MPI_MAX_OBJECT_NAME] = "", ver[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    if (G.my_pe != 0 || !have_win[0])
        return;
    MPI_Win_get_name(wins[0], name, &len);
    MPI_Get_library_version(ver, &len);
    if (!strncmp(name, "rdma window", 11) && strstr(ver, "Open MPI v4."))
        MERR(call, "warning: Open MPI 4 chose osc/rdma for the symmetric memory; its "
                   "MPI_Compare_and_swap crashes between PEs of one node (open-mpi/ompi#7967): "
                   "run with --mca osc ucx");
}

static int t_attach(void)
{
    static const char call[] = "shmem_init";
    int n = G.n_pes, rc;
    /* Static data is symmetric only if every PE runs the same executable;
     * otherwise every PE drops it alike (as the shm transport does). */
    unsigned long long mine = G.seg[USHMEMI_SEG_DATA].size, *all = calloc((size_t)n, sizeof *all);
    if (!all)
        return USHMEM_ENOMEM;
    MPI_Request req;
    USHMEMI_MPI_COMPLETED(rc, req, MPI_STATUS_IGNORE,
                          MPI_Iallgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all, 1,
                                         MPI_UNSIGNED_LONG_LONG, ushmemi_mpi_comm, &req));
    if (rc != MPI_SUCCESS) {
        free(all);
        return ushmemi_mpi_fail(call, "MPI_Allgather", rc);
    }
    for (int pe = 0; pe < n; pe++) {
        if (all[pe] != mine) {
            MDEBUG(call,
                   "PE %d's static data segment differs in size (different executable?); "
                   "globals are not symmetric in this job",
                   pe);
            G.seg[USHMEMI_SEG_DATA].size = 0;
            break;
        }
    }
    free(all);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "same_disp_unit", "true");
    int ok = 1;
    for (int w = 0; w < NWIN && ok; w++) {
        ushmemi_seg_t *seg = &G.seg[win_segs[w]];
        /* Collective: every PE agrees on which segments exist (sizes were
         * checked above and at heap setup). */
        if (seg->kind != USHMEMI_MEM_HOST || seg->size == 0)
            continue;
        USHMEMI_MPI_LOCKED(rc, MPI_Win_create(seg->base, (MPI_Aint)seg->size, 1, info,
                                              ushmemi_mpi_comm, &wins[w]));
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING] = "";
            int len = 0;
            MPI_Error_string(rc, msg, &len);
            snprintf(no_rma, sizeof no_rma, "MPI_Win_create over the symmetric memory failed: %s",
                     msg);
            ok = 0;
            break;
        }
        MPI_Win_set_errhandler(wins[w], MPI_ERRORS_RETURN);
        have_win[w] = 1;
        dirty[w] = calloc((size_t)n, 1);
        if (!dirty[w]) {
            MPI_Info_free(&info);
            t_detach();
            return USHMEM_ENOMEM;
        }
        USHMEMI_MPI_LOCKED(rc, MPI_Win_lock_all(MPI_MODE_NOCHECK, wins[w]));
        if (rc != MPI_SUCCESS) {
            MPI_Info_free(&info);
            return ushmemi_mpi_fail(call, "MPI_Win_lock_all", rc);
        }
    }
    /* An MPI without RMA over ordinary memory (Open MPI 4 with neither UCX
     * nor an RDMA-capable btl: osc/rdma and osc/sm refuse MPI_Win_create)
     * still carries messages: then the staged proxy moves the host memory
     * of other hosts too (src/transport/proxy). Every PE must decide alike. */
    int all_ok = 0;
    USHMEMI_MPI_COMPLETED(
        rc, req, MPI_STATUS_IGNORE,
        MPI_Iallreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, ushmemi_mpi_comm, &req));
    if (rc != MPI_SUCCESS) {
        MPI_Info_free(&info);
        t_detach();
        return ushmemi_mpi_fail(call, "MPI_Allreduce", rc);
    }
    if (!all_ok) {
        if (ok)
            snprintf(no_rma, sizeof no_rma, "MPI_Win_create failed on another PE");
        free_windows();
        MDEBUG(call, "mpi: no RMA windows (%s): the proxy carries host memory too", no_rma);
    } else {
        no_rma[0] = '\0';
    }
    MPI_Info_free(&info);
    warn_known_bugs(call);
    progress_start(call);
    return 0;
}

/* The window holding [addr, addr+n) and its displacement there. */
static int locate(const void *addr, size_t n, int *w_out, MPI_Aint *disp)
{
    for (int w = 0; w < NWIN; w++) {
        const ushmemi_seg_t *seg = &G.seg[win_segs[w]];
        uintptr_t off = (uintptr_t)addr - (uintptr_t)seg->base;
        if (have_win[w] && off < seg->size && n <= seg->size - off) {
            *w_out = w;
            *disp = (MPI_Aint)off;
            return 0;
        }
    }
    return USHMEM_EUNSUPPORTED; /* device memory, or not symmetric */
}

static int flush(int pe, int w, const char *what)
{
    int rc;
    USHMEMI_MPI_LOCKED(rc, MPI_Win_flush(pe, wins[w]));
    return rc == MPI_SUCCESS ? 0 : ushmemi_mpi_fail(CALL, what, rc);
}

/* After the MPI call, target first: see t_quiet. */
static void mark_in_flight(int w, int pe)
{
    atomic_store_explicit(&dirty[w][pe], 1, memory_order_relaxed);
    atomic_store_explicit(&in_flight, 1, memory_order_release);
}

static int t_put(void *remote, const void *src, size_t n, int pe, int nbi)
{
    int w, rc = 0;
    MPI_Aint disp;
    if (locate(remote, n, &w, &disp))
        return USHMEM_EUNSUPPORTED;
    ACTIVE();
    for (size_t done = 0; done < n && rc == MPI_SUCCESS; done += CHUNK) {
        int c = (int)(n - done < CHUNK ? n - done : CHUNK);
        USHMEMI_MPI_LOCKED(rc, MPI_Put((const char *)src + done, c, MPI_BYTE, pe,
                                       disp + (MPI_Aint)done, c, MPI_BYTE, wins[w]));
    }
    if (rc != MPI_SUCCESS)
        return ushmemi_mpi_fail(CALL, "MPI_Put", rc);
    if (nbi) {
        mark_in_flight(w, pe);
        return 0;
    }
    return flush(pe, w, "MPI_Win_flush after MPI_Put");
}

static int t_get(void *dest, const void *remote, size_t n, int pe, int nbi)
{
    int w, rc = 0;
    MPI_Aint disp;
    if (locate(remote, n, &w, &disp))
        return USHMEM_EUNSUPPORTED;
    ACTIVE();
    for (size_t done = 0; done < n && rc == MPI_SUCCESS; done += CHUNK) {
        int c = (int)(n - done < CHUNK ? n - done : CHUNK);
        USHMEMI_MPI_LOCKED(rc, MPI_Get((char *)dest + done, c, MPI_BYTE, pe, disp + (MPI_Aint)done,
                                       c, MPI_BYTE, wins[w]));
    }
    if (rc != MPI_SUCCESS)
        return ushmemi_mpi_fail(CALL, "MPI_Get", rc);
    if (nbi) {
        mark_in_flight(w, pe);
        return 0;
    }
    return flush(pe, w, "MPI_Win_flush after MPI_Get");
}

/* Integers and floats of one size are the same bits for every op offered
 * (fetch/set/swap on floats; two's complement add), so unsigned types do. */
static int t_amo(ushmemi_amo_desc_t *d)
{
    size_t size = USHMEMI_DT_SIZE(d->dtype);
    int w, rc;
    MPI_Aint disp;
    MPI_Datatype type = size == 8 ? MPI_UINT64_T : size == 4 ? MPI_UINT32_T : MPI_DATATYPE_NULL;
    if (type == MPI_DATATYPE_NULL || locate(d->remote, size, &w, &disp))
        return USHMEM_EUNSUPPORTED;
    union {
        uint32_t u32;
        uint64_t u64;
    } v, c, r;
    memset(&r, 0, sizeof r);
    if (size == 8) {
        v.u64 = d->value;
        c.u64 = d->cond;
    } else {
        v.u32 = (uint32_t)d->value;
        c.u32 = (uint32_t)d->cond;
    }
    MPI_Win win = wins[w];
    ACTIVE();
    ushmemi_mpi_lock();
    switch (d->op) {
    case USHMEMI_AMO_FETCH:
        rc = MPI_Fetch_and_op(NULL, &r, type, d->pe, disp, MPI_NO_OP, win);
        break;
    case USHMEMI_AMO_SET:
        rc = MPI_Accumulate(&v, 1, type, d->pe, disp, 1, type, MPI_REPLACE, win);
        break;
    case USHMEMI_AMO_SWAP:
        rc = MPI_Fetch_and_op(&v, &r, type, d->pe, disp, MPI_REPLACE, win);
        break;
    case USHMEMI_AMO_CSWAP: rc = MPI_Compare_and_swap(&v, &c, &r, type, d->pe, disp, win); break;
    case USHMEMI_AMO_ADD: rc = MPI_Fetch_and_op(&v, &r, type, d->pe, disp, MPI_SUM, win); break;
    case USHMEMI_AMO_AND: rc = MPI_Fetch_and_op(&v, &r, type, d->pe, disp, MPI_BAND, win); break;
    case USHMEMI_AMO_OR: rc = MPI_Fetch_and_op(&v, &r, type, d->pe, disp, MPI_BOR, win); break;
    case USHMEMI_AMO_XOR: rc = MPI_Fetch_and_op(&v, &r, type, d->pe, disp, MPI_BXOR, win); break;
    default: ushmemi_mpi_unlock(); return USHMEM_EINVAL;
    }
    ushmemi_mpi_unlock();
    if (rc != MPI_SUCCESS)
        return ushmemi_mpi_fail(CALL, "MPI atomic operation", rc);
    rc = flush(d->pe, w, "MPI_Win_flush after an atomic operation");
    d->result = size == 8 ? r.u64 : r.u32;
    return rc;
}

/* Another thread may issue an _nbi operation while we flush: it marks its
 * target and then in_flight after its MPI call, so either our flush covers
 * it or the marks survive for the next quiet. */
static int t_quiet(void)
{
    if (!atomic_exchange_explicit(&in_flight, 0, memory_order_acq_rel))
        return 0;
    ACTIVE();
    for (int w = 0; w < NWIN; w++) {
        if (!have_win[w])
            continue;
        for (int pe = 0; pe < G.n_pes; pe++) {
            if (!atomic_load_explicit(&dirty[w][pe], memory_order_relaxed) ||
                !atomic_exchange_explicit(&dirty[w][pe], 0, memory_order_relaxed))
                continue;
            int rc = flush(pe, w, "MPI_Win_flush at quiet");
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* Waiting PEs drive MPI's progress engine: with an MPI whose RMA needs the
 * target's help (emulated atomics, some UCX paths), an operation aimed at a
 * PE that only waits would otherwise never complete. */
static void t_progress(void)
{
    ACTIVE();
    if (!ushmemi_mpi_trylock())
        return; /* another thread of ours is in MPI: it progresses */
    int flag;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, ushmemi_mpi_comm, &flag, MPI_STATUS_IGNORE);
    ushmemi_mpi_unlock();
}

static const char *t_unusable_reason(void)
{
    return NULL;
}

const ushmemi_transport_ops_t ushmemi_mpi_transport_ops = {
    .name = "mpi",
    .caps = 0,
    .unusable_reason = t_unusable_reason,
    .init = t_init,
    .fini = t_fini,
    .reachable = t_reachable,
    .attach = t_attach,
    .detach = t_detach,
    .put = t_put,
    .get = t_get,
    .amo = t_amo,
    .fence = t_quiet,
    .quiet = t_quiet,
    .progress = t_progress,
};

#endif /* USHMEM_MPI_MODULE */
