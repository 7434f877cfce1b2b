/* shm transport: peers on this host map each other's segments.
 *
 * Every host segment is a memfd; the descriptors go to every local peer through
 * ushmemi_fd_exchange (abstract unix sockets, SCM_RIGHTS), which maps them and
 * closes them. After attach nothing of the exchange remains: no socket, no
 * name, no file. See README.md beside this file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/core.h"
#include "core/local.h"
#include "transport/transport.h"

typedef struct {
    uint64_t seg_size[USHMEMI_NSEG];
} shm_card_t;

static shm_card_t *cards; /* [n_pes] after attach */

static int shm_init(void)
{
    return 0;
}

static void shm_fini(void) {}

static int shm_reachable(int pe, ushmemi_mem_kind_t kind)
{
    return kind == USHMEMI_MEM_HOST && ushmemi_g.is_local && ushmemi_g.is_local[pe];
}

/* Host segments we share, in segment order: both sides agree on the order. */
static int host_segments(int *segs)
{
    int k = 0;
    for (int s = 0; s < USHMEMI_NSEG; s++)
        if (ushmemi_g.seg[s].size && ushmemi_g.seg[s].kind == USHMEMI_MEM_HOST)
            segs[k++] = s;
    return k;
}

static int map_peer(int pe, int *fds, int nfd, void *arg)
{
    const char *call = arg;
    int segs[USHMEMI_NSEG], nseg = host_segments(segs), rc = 0;
    if (nfd != nseg) {
        ushmemi_error(call, "shm: PE %d sent %d segments, expected %d", pe, nfd, nseg);
        rc = USHMEM_EBOOTSTRAP;
    }
    for (int k = 0; k < nfd && rc == 0; k++) {
        int s = segs[k];
        size_t size = cards[pe].seg_size[s];
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fds[k], 0);
        if (p == MAP_FAILED) {
            ushmemi_error(call, "shm: cannot map PE %d's symmetric %s (%zu bytes): %s%s", pe,
                          s == USHMEMI_SEG_HEAP ? "heap" : "data", size, strerror(errno),
                          s == USHMEMI_SEG_HEAP ? "; lower SHMEM_SYMMETRIC_SIZE" : "");
            rc = USHMEM_ENOMEM;
            break;
        }
        ushmemi_g.seg[s].peer[pe] = p;
    }
    for (int k = 0; k < nfd; k++)
        close(fds[k]);
    return rc;
}

static int shm_attach(void)
{
    static const char call[] = "shmem_init";
    int n = ushmemi_g.n_pes;
    shm_card_t mine;
    int rc = 0;

    cards = calloc((size_t)n, sizeof *cards);
    if (!cards)
        return USHMEM_ENOMEM;
    for (int s = 0; s < USHMEMI_NSEG; s++)
        mine.seg_size[s] = ushmemi_g.seg[s].size;
    rc = ushmemi_bootstrap()->ops->allgather(&mine, cards, sizeof mine);
    if (rc)
        return rc;
    /* Symmetric static data needs the same executable everywhere: otherwise
     * every PE drops it, consistently, since all see the same cards. */
    for (int pe = 0; pe < n; pe++) {
        if (cards[pe].seg_size[USHMEMI_SEG_DATA] != mine.seg_size[USHMEMI_SEG_DATA]) {
            ushmemi_debug(call,
                          "PE %d's static data segment differs in size (different "
                          "executable?); globals are not symmetric in this job",
                          pe);
            ushmemi_g.seg[USHMEMI_SEG_DATA].size = 0;
            for (int q = 0; q < n; q++)
                cards[q].seg_size[USHMEMI_SEG_DATA] = 0;
            break;
        }
    }
    for (int pe = 0; pe < n && rc == 0; pe++) {
        if (cards[pe].seg_size[USHMEMI_SEG_HEAP] != mine.seg_size[USHMEMI_SEG_HEAP]) {
            ushmemi_error(call,
                          "PE %d has a %llu-byte heap, this PE %llu: set the same "
                          "SHMEM_SYMMETRIC_SIZE on every PE",
                          pe, (unsigned long long)cards[pe].seg_size[USHMEMI_SEG_HEAP],
                          (unsigned long long)mine.seg_size[USHMEMI_SEG_HEAP]);
            rc = USHMEM_EINVAL;
        }
    }
    /* Still take part in the exchange on error (with nothing to send) so
     * nobody waits; the exchange's final agreement fails the job everywhere. */
    int segs[USHMEMI_NSEG], fds[USHMEMI_NSEG], nseg = host_segments(segs);
    for (int k = 0; k < nseg; k++)
        fds[k] = ushmemi_g.seg[segs[k]].fd;
    int xrc = ushmemi_fd_exchange(fds, rc ? 0 : nseg, map_peer, (void *)call, call);
    return rc ? rc : xrc;
}

static void shm_detach(void)
{
    for (int s = 0; s < USHMEMI_NSEG; s++) {
        ushmemi_seg_t *seg = &ushmemi_g.seg[s];
        if (!seg->peer || !cards || seg->kind != USHMEMI_MEM_HOST)
            continue;
        for (int pe = 0; pe < ushmemi_g.n_pes; pe++) {
            if (pe != ushmemi_g.my_pe && seg->peer[pe]) {
                munmap(seg->peer[pe], cards[pe].seg_size[s]);
                seg->peer[pe] = NULL;
            }
        }
    }
    free(cards);
    cards = NULL;
}

static const char *shm_unusable_reason(void)
{
    return NULL; /* memfd + unix sockets: always present on Linux */
}

static int shm_quiet(void)
{
    atomic_thread_fence(memory_order_seq_cst);
    return 0;
}

const ushmemi_transport_ops_t ushmemi_transport_shm = {
    .name = "shm",
    .caps = USHMEMI_CAP_MAP,
    .unusable_reason = shm_unusable_reason,
    .init = shm_init,
    .fini = shm_fini,
    .reachable = shm_reachable,
    .attach = shm_attach,
    .detach = shm_detach,
    .fence = shm_quiet,
    .quiet = shm_quiet,
};
