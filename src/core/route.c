/* Per-peer transport selection: an ordered table, first that reaches wins. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/local.h"
#include "transport/cuda/devmem.h"
#include "transport/transport.h"

static const ushmemi_transport_ops_t *const all_transports[] = {
    &ushmemi_transport_shm,
    &ushmemi_transport_cuda, /* cuda hook: device heaps only (reachable for DEVICE) */
};
#define NTRANSPORTS (sizeof all_transports / sizeof all_transports[0])

static const ushmemi_transport_ops_t *active[NTRANSPORTS];
static size_t nactive;
static const ushmemi_transport_ops_t **peer_tl; /* [n_pes] host memory route */

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
                if (!strncmp(p, "mpi", len))
                    ushmemi_debug(call, "transport '%.*s' is not built into this library", (int)len,
                                  p);
                else {
                    ushmemi_error(call,
                                  "USHMEM_TRANSPORTS: unknown transport '%.*s' (known: shm, cuda)",
                                  (int)len, p);
                    return USHMEM_EINVAL;
                }
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
    if (!nactive) {
        ushmemi_error(call, "USHMEM_TRANSPORTS='%s' leaves no usable transport",
                      ushmemi_env.transports);
        return USHMEM_EINVAL;
    }
    return 0;
}

int ushmemi_transports_init(const char *call)
{
    int rc = select_transports(call);
    if (rc)
        return rc;
    rc = ushmemi_locality_init(call);
    if (rc)
        return rc;
    peer_tl = calloc((size_t)ushmemi_g.n_pes, sizeof *peer_tl);
    if (!peer_tl)
        return USHMEM_ENOMEM;
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
    for (int pe = 0; pe < ushmemi_g.n_pes; pe++) {
        for (i = 0; i < nactive && !peer_tl[pe]; i++)
            if (active[i]->reachable(pe, USHMEMI_MEM_HOST))
                peer_tl[pe] = active[i];
        if (!peer_tl[pe]) {
            ushmemi_error(call,
                          "PE %d is not reachable with transports '%s' (it runs on "
                          "another host; the mpi transport is needed)",
                          pe, ushmemi_env.transports);
            rc = USHMEM_EUNREACH;
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
        const char *why =
            all_transports[i]->unusable_reason ? all_transports[i]->unusable_reason() : NULL;
        fprintf(out, "  %-6s %s%s\n", all_transports[i]->name, why ? "unusable: " : "usable",
                why ? why : "");
    }
    fprintf(out, "  %-6s not built (multi-host; see issue \"Multi-host\")\n", "mpi");
}
