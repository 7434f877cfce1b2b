/* Per-peer transport selection: an ordered table, first that reaches wins. */
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <shmemx.h>

#include "core/core.h"
#include "core/local.h"
#include "transport/cuda/devmem.h"
#include "transport/mpi/mpi.h"
#include "transport/proxy/devring.h"
#include "transport/proxy/hands.h"
#include "transport/transport.h"

static const ushmemi_transport_ops_t *const all_transports[] = {
    &ushmemi_transport_shm,
    &ushmemi_transport_cuda, /* cuda hook: device heaps only (reachable for DEVICE) */
    &ushmemi_transport_mpi,  /* mpi hook: peers not mapped here (other hosts); module */
};
#define NTRANSPORTS (sizeof all_transports / sizeof all_transports[0])

static const ushmemi_transport_ops_t *active[NTRANSPORTS];
static size_t nactive;
static const ushmemi_transport_ops_t **peer_tl;   /* [n_pes] host memory route */
static const ushmemi_transport_ops_t **peer_dev;  /* [n_pes] device heap route when unmapped */
const ushmemi_transport_ops_t *ushmemi_remote_tl; /* mpi hook: see core.h */
const ushmemi_devmem_ops_t *ushmemi_devmem;       /* cuda: see transport.h */
const ushmemi_transport_ops_t *ushmemi_proxy_tl;  /* see core.h */

/* The proxy's two threads (kernels' requests, other hosts' requests) carry
 * every operation on another host's device heap; bound to one CPU with the
 * application (mpirun binds each rank to one core by default with few
 * ranks), every request waits for them to be scheduled: on the H200, a
 * device put + quiet took 34-49 us bound and 14 us unbound. One line, once. */
static void warn_bound(const char *call)
{
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) != 0 || CPU_COUNT(&cpus) >= 3)
        return;
    ushmemi_error(call,
                  "warning: this PE may run on %d CPU(s) only, which the proxy's two threads "
                  "(device memory of PEs on other hosts) share with the application: every "
                  "operation to another host waits for them (run mpirun --bind-to none, or give "
                  "each rank 3 CPUs: --map-by slot:PE=3)",
                  CPU_COUNT(&cpus));
}

/* The staged proxy joins wherever the mpi transport is active (every PE
 * agrees on that, and its attach is collective). Device heaps that the cuda
 * transport did not map (PEs on other hosts) are reached through it; so is
 * unmapped host memory when the MPI can make no RMA windows, or with
 * USHMEM_PROXY_HOST (testing), and then it also carries every AMO of the
 * job, so they all run where their word lives. */
static int proxy_attach(const char *call)
{
    const ushmemi_transport_ops_t *p = ushmemi_proxy_ops();
    int n = ushmemi_g.n_pes, rc;
    if (!p) {
        ushmemi_error(call, "the staged proxy is in the MPI module, which cannot be loaded");
        return USHMEM_EUNSUPPORTED;
    }
    peer_dev = calloc((size_t)n, sizeof *peer_dev);
    if (!peer_dev)
        return USHMEM_ENOMEM;
    if ((rc = p->init()) != 0)
        goto undo_alloc;
    if ((rc = p->attach()) != 0)
        goto undo_init;
    const ushmemi_seg_t *dev = &ushmemi_g.seg[USHMEMI_SEG_DEVHEAP];
    for (int pe = 0; pe < n; pe++) {
        if (dev->size && dev->peer && !dev->peer[pe] && p->reachable(pe, USHMEMI_MEM_DEVICE))
            peer_dev[pe] = p;
        if (!(peer_tl[pe]->caps & USHMEMI_CAP_MAP) && p->reachable(pe, USHMEMI_MEM_HOST))
            peer_tl[pe] = p;
    }
    /* The same answer on every PE (USHMEM_PROXY_HOST, or an MPI that could
     * create no windows anywhere): then the proxy is every AMO's way too. */
    if (ushmemi_remote_tl && p->reachable(ushmemi_g.my_pe, USHMEMI_MEM_HOST))
        ushmemi_remote_tl = p;
    ushmemi_proxy_tl = p;
    ushmemi_debug(call, "device heaps of unmapped PEs: %s", p->describe ? p->describe() : p->name);
    /* Kernels reach those heaps through the request ring (device API). */
    int unmapped_dev = 0;
    for (int pe = 0; pe < n; pe++)
        unmapped_dev |= peer_dev[pe] != NULL;
    int gpu_proxied = unmapped_dev && ushmemi_g.cuda_active;
    /* Other hosts' writes into this heap: their CUDA context (if it is to be
     * one of their own) made now, not at the first (~0.2 s on the H200). */
    if (gpu_proxied)
        ushmemi_proxy_hands_prepare(call);
    /* Testing without a GPU: the same ring in host memory (USHMEM_PROXY_HOST). */
    int host_ring = !ushmemi_g.cuda_active && ushmemi_env.proxy_host;
    if ((gpu_proxied || host_ring) && (rc = ushmemi_devring_start(call)) != 0) {
        ushmemi_proxy_tl = NULL;
        p->detach();
        goto undo_init;
    }
    if (gpu_proxied)
        warn_bound(call);
    return 0;
undo_init:
    p->fini();
undo_alloc:
    free(peer_dev);
    peer_dev = NULL;
    return rc;
}

static void proxy_detach(void)
{
    ushmemi_devring_stop();
    if (ushmemi_proxy_tl) {
        ushmemi_proxy_tl->detach();
        ushmemi_proxy_tl->fini();
    }
    ushmemi_proxy_tl = NULL;
    free(peer_dev);
    peer_dev = NULL;
}

static const ushmemi_transport_ops_t *find_transport(const char *name, size_t len)
{
    for (size_t i = 0; i < NTRANSPORTS; i++)
        if (strlen(all_transports[i]->name) == len && !strncmp(all_transports[i]->name, name, len))
            return all_transports[i];
    return NULL;
}

/* USHMEM_TRANSPORTS filters and orders the table. */
static int select_transports(const char *call)
{
    const char *p = ushmemi_env.transports;
    nactive = 0;
    while (p && *p) {
        size_t len = strcspn(p, ",");
        if (len) {
            const ushmemi_transport_ops_t *t = find_transport(p, len);
            if (!t) {
                ushmemi_error(call,
                              "USHMEM_TRANSPORTS: unknown transport '%.*s' (known: shm, cuda, mpi)",
                              (int)len, p);
                return USHMEM_EINVAL;
            } else if (t->unusable_reason && t->unusable_reason()) {
                ushmemi_debug(call, "transport %s unusable: %s", t->name, t->unusable_reason());
            } else if (nactive < NTRANSPORTS) {
                active[nactive++] = t;
            }
        }
        p += len + (p[len] == ',');
    }
    /* cuda hook: unless USHMEM_TRANSPORTS says otherwise, the cuda transport
     * is always in the list, last. It loads CUDA only when this PE is asked
     * to bind a device, and its attach is collective, so every PE must have
     * it: it is not checked for usability here. */
    if (!getenv("USHMEM_TRANSPORTS") && nactive < NTRANSPORTS)
        active[nactive++] = &ushmemi_transport_cuda;
    /* mpi hook: likewise the mpi transport joins, last, when some PE runs on
     * another host. is_local is the same host map on every PE, so they all
     * decide alike (its attach is collective); it loads libushmem_mpi.so. */
    int remote = 0;
    for (int pe = 0; pe < ushmemi_g.n_pes; pe++)
        remote |= !ushmemi_g.is_local[pe];
    if (!getenv("USHMEM_TRANSPORTS") && remote && nactive < NTRANSPORTS &&
        !ushmemi_transport_mpi.unusable_reason())
        active[nactive++] = &ushmemi_transport_mpi;
    if (!nactive) {
        ushmemi_error(call, "USHMEM_TRANSPORTS='%s' leaves no usable transport",
                      ushmemi_env.transports);
        return USHMEM_EINVAL;
    }
    return 0;
}

/* mpi hook: every PE must agree on whether the mpi transport is active (its
 * attach is collective) and on how atomics are routed (docs/mpi.md). One
 * allgathered byte of flags per PE; *any and *all get their OR and AND. */
enum { AGREE_MPI = 1, AGREE_FAILED = 2 };
static int agree(unsigned char mine, int *any, int *all, const char *call)
{
    int n = ushmemi_g.n_pes;
    unsigned char *bytes = malloc((size_t)n);
    int rc = bytes ? ushmemi_bootstrap()->ops->allgather(&mine, bytes, 1) : USHMEM_ENOMEM;
    if (rc)
        ushmemi_error(call, "transport selection exchange failed: %s", ushmemi_strerror(rc));
    *any = 0;
    *all = 0xff;
    for (int pe = 0; pe < n && !rc; pe++) {
        *any |= bytes[pe];
        *all &= bytes[pe];
    }
    free(bytes);
    return rc;
}

static int mpi_is_active(void)
{
    for (size_t i = 0; i < nactive; i++)
        if (active[i] == &ushmemi_transport_mpi)
            return 1;
    return 0;
}

int ushmemi_transports_init(const char *call)
{
    int rc = ushmemi_locality_init(call); /* mpi hook: before the selection, which uses it */
    if (rc)
        return rc;
    rc = select_transports(call);
    /* Always take part, so that a PE failing here fails the others too. */
    int any = 0, all = 0,
        arc = agree(rc                ? AGREE_FAILED
                    : mpi_is_active() ? AGREE_MPI
                                      : 0,
                    &any, &all, call);
    if (!rc && arc)
        rc = arc;
    else if (!rc && (any & AGREE_FAILED))
        rc = USHMEM_EBOOTSTRAP; /* that PE said why */
    else if (!rc && (any & AGREE_MPI) != (all & AGREE_MPI)) {
        ushmemi_error(call, "the mpi transport is active on some PEs only: set the same "
                            "USHMEM_TRANSPORTS on every PE");
        rc = USHMEM_EINVAL;
    }
    if (rc) {
        ushmemi_locality_fini();
        return rc;
    }
    peer_tl = calloc((size_t)ushmemi_g.n_pes, sizeof *peer_tl);
    if (!peer_tl) {
        ushmemi_locality_fini();
        return USHMEM_ENOMEM;
    }
    size_t i;
    for (i = 0; i < nactive; i++) {
        rc = active[i]->init();
        if (rc)
            goto undo;
        rc = active[i]->attach();
        if (rc) {
            active[i]->fini();
            goto undo;
        }
    }
    /* mpi hook: also note whether a peer is reached through a transport that
     * maps nothing; if any PE does, it carries every AMO of the job (core.h). */
    const ushmemi_transport_ops_t *unmapped = NULL;
    for (int pe = 0; pe < ushmemi_g.n_pes && !rc; pe++) {
        for (i = 0; i < nactive && !peer_tl[pe]; i++)
            if (active[i]->reachable(pe, USHMEMI_MEM_HOST))
                peer_tl[pe] = active[i];
        if (!peer_tl[pe]) {
            const char *why = ushmemi_transport_mpi.unusable_reason();
            ushmemi_error(call,
                          "PE %d is not reachable with transports '%s' (it runs on "
                          "another host; the mpi transport is needed%s%s)",
                          pe, getenv("USHMEM_TRANSPORTS") ? ushmemi_env.transports : "default",
                          why ? ", but " : "", why ? why : "");
            rc = USHMEM_EUNREACH;
        } else if (pe != ushmemi_g.my_pe && !(peer_tl[pe]->caps & USHMEMI_CAP_MAP)) {
            unmapped = peer_tl[pe];
        }
    }
    arc = agree(rc ? AGREE_FAILED : unmapped ? AGREE_MPI : 0, &any, &all, call);
    if (!rc && arc)
        rc = arc;
    else if (!rc && (any & AGREE_FAILED))
        rc = USHMEM_EUNREACH; /* that PE said why */
    if (!rc && (any & AGREE_MPI) && !unmapped)
        unmapped = mpi_is_active() ? &ushmemi_transport_mpi : NULL;
    if (!rc && (any & AGREE_MPI) && !unmapped) {
        ushmemi_error(call, "peers use the mpi transport but this PE cannot");
        rc = USHMEM_EUNREACH;
    }
    if (rc) {
        i = nactive;
        goto undo;
    }
    ushmemi_remote_tl = (any & AGREE_MPI) ? unmapped : NULL;
    if (mpi_is_active()) { /* the same answer on every PE: agreed above */
        rc = proxy_attach(call);
        if (rc) {
            ushmemi_remote_tl = NULL;
            i = nactive;
            goto undo;
        }
    }
    return 0;
undo:
    while (i-- > 0) {
        active[i]->detach();
        active[i]->fini();
    }
    free(peer_tl);
    peer_tl = NULL;
    ushmemi_locality_fini();
    return rc;
}

void ushmemi_transports_fini(void)
{
    ushmemi_remote_tl = NULL; /* mpi hook */
    proxy_detach();
    for (size_t i = nactive; i-- > 0;) {
        active[i]->detach();
        active[i]->fini();
    }
    nactive = 0;
    free(peer_tl);
    peer_tl = NULL;
    ushmemi_locality_fini();
}

int ushmemi_pe_reachable(int pe)
{
    return peer_tl && peer_tl[pe] != NULL;
}

const ushmemi_transport_ops_t *ushmemi_peer_transport(int pe)
{
    return peer_tl ? peer_tl[pe] : NULL;
}

const ushmemi_transport_ops_t *ushmemi_route(const void *sym, int pe)
{
    if (ushmemi_devheap_has(sym))
        return peer_dev ? peer_dev[pe] : NULL;
    return peer_tl ? peer_tl[pe] : NULL;
}

USHMEMI_API int shmemx_device_route(int pe)
{
    static const char call[] = "shmemx_device_route";
    if (!ushmemi_g.initialized) {
        ushmemi_error(call, "called before shmem_init");
        return -1;
    }
    if (pe < 0 || pe >= ushmemi_g.n_pes) {
        ushmemi_error(call, "PE %d is not in [0, %d)", pe, ushmemi_g.n_pes);
        return -1;
    }
    const ushmemi_seg_t *dev = &ushmemi_g.seg[USHMEMI_SEG_DEVHEAP];
    if (!dev->size || !dev->peer)
        return SHMEMX_ROUTE_NONE;
    if (pe == ushmemi_g.my_pe || dev->peer[pe])
        return SHMEMX_ROUTE_MAPPED;
    /* (a device-heap route through the proxy comes with the kernels' ring:
     * init fails without it) */
    return peer_dev && peer_dev[pe] ? SHMEMX_ROUTE_PROXY : SHMEMX_ROUTE_NONE;
}

const char *ushmemi_pe_dev_transport_name(int pe)
{
    const ushmemi_seg_t *dev = &ushmemi_g.seg[USHMEMI_SEG_DEVHEAP];
    if (!dev->size || !dev->peer)
        return "-";
    if (dev->peer[pe])
        return "cuda";
    return peer_dev && peer_dev[pe] ? peer_dev[pe]->name : "none";
}

const char *ushmemi_pe_transport_name(int pe)
{
    return peer_tl && peer_tl[pe] ? peer_tl[pe]->name : "none";
}

/* For ushmem_info. */
void ushmemi_transport_describe(FILE *out);
void ushmemi_transport_describe(FILE *out)
{
    for (size_t i = 0; i < NTRANSPORTS; i++) {
        if (all_transports[i] == &ushmemi_transport_cuda) { /* cuda hook: driver details */
            ushmemi_cuda_describe(out);
            continue;
        }
        if (all_transports[i] == &ushmemi_transport_mpi) { /* mpi hook: the MPI library */
            ushmemi_mpi_describe(out);
            continue;
        }
        const char *why =
            all_transports[i]->unusable_reason ? all_transports[i]->unusable_reason() : NULL;
        fprintf(out, "  %-6s %s%s\n", all_transports[i]->name, why ? "unusable: " : "usable",
                why ? why : "");
    }
}
