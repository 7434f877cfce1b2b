/* The reverse-offload request ring: GPU threads (producers) hand requests to a
 * host proxy thread of the same process (the consumer) through pinned host
 * memory. README.md, "The request ring", tells the protocol in prose.
 *
 * This header holds the shared layout, the consumer, and a host producer that
 * follows the device producer (ring_device.cuh) step for step, so the unit
 * test (tests/unit/test_proxy_ring.c) checks the protocol the GPU will run
 * with CPU threads in its place. The layout is plain fixed-width words with no
 * _Atomic, so CUDA code sees the same structs; every access to a shared word
 * goes through the __atomic builtins (on the device: ld.acquire.sys,
 * __threadfence_system and volatile stores).
 *
 * Tickets are 64-bit and never wrap; slot = ticket & mask. A word that says
 * "ticket t" holds t + 1, so the zeroed region means "nothing yet" and a word
 * left over from the previous lap (t + 1 - cap) never matches. */
#ifndef USHMEM_PROXY_RING_H
#define USHMEM_PROXY_RING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sched.h>
#include <time.h> /* clock_gettime, nanosleep: POSIX (the build defines _GNU_SOURCE) */

#include "core/relax.h"

/* Ring-local codes, equal to the USHMEM_E* codes of the same meaning
 * (core/internal.h, checked by the unit test) so callers can pass them on;
 * the header stays free of the core's headers for the CUDA build. */
#define USHMEMI_RING_EINVAL    (-1)  /* USHMEM_EINVAL */
#define USHMEMI_RING_ETIMEDOUT (-5)  /* USHMEM_ETIMEOUT: the consumer did not answer in time */
#define USHMEMI_RING_EABORT    (-11) /* USHMEM_ESTATE: the consumer shut the ring down */

#define USHMEMI_RING_WORDS   7          /* payload words per request */
#define USHMEMI_RING_FOREVER UINT64_MAX /* timeout_ns: no timeout */
#define USHMEMI_RING_MAX_CAP (1u << 24)

#ifdef __cplusplus
#define USHMEMI_RING_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define USHMEMI_RING_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* One request: a cache line, so a producer's stores never share a line with
 * another slot's. seq is the validity word (ticket + 1), stored last. */
typedef struct {
    uint64_t w[USHMEMI_RING_WORDS]; /* meaning is the proxy's */
    uint64_t seq;
} ushmemi_ring_desc_t;

/* The result of a fetching request, and the slot's release. */
typedef struct {
    uint64_t value;
    uint64_t seq; /* consumer: ticket + 1 once value is written */
    /* ticket + 1 once the slot may be reused: the producer writes it after
     * reading value; for a request without a result the consumer writes it. */
    uint64_t ack;
    uint64_t pad;
} ushmemi_ring_ret_t;

USHMEMI_RING_STATIC_ASSERT(sizeof(ushmemi_ring_desc_t) == 64, "descriptor is one cache line");
USHMEMI_RING_STATIC_ASSERT(sizeof(ushmemi_ring_ret_t) == 32, "return slot is 32 bytes");

/* What producers need: pointers and sizes only, copied by value into kernels.
 * Fixed after init. */
typedef struct {
    /* Tickets handed out. Producers fetch_add it: on the GPU it belongs in
     * device memory (a device atomic, not a PCIe round trip per request). */
    uint64_t *head;
    /* Producers' shared copy of *free_upto, raised with max. On the GPU it sits
     * next to head, so the common case (room in the ring) reads no host
     * memory; of the producers it refuses, only the one whose ticket equals
     * it reads *free_upto (ushmemi_ring_reserve). */
    uint64_t *free_cache;
    uint64_t *free_upto;  /* consumer: tickets below this may be written */
    uint64_t *abort_word; /* consumer: nonzero once the ring is shut down */
    ushmemi_ring_desc_t *slots;
    ushmemi_ring_ret_t *ret;
    uint64_t mask; /* cap - 1 */
    uint32_t cap;
} ushmemi_ring_t;

/* The consumer: the producers' view plus counters only its thread touches. */
typedef struct {
    ushmemi_ring_t ring;
    uint64_t tail;      /* next ticket to poll */
    uint64_t free;      /* every ticket below is released */
    uint64_t published; /* free as last written to *free_upto (minus cap) */
    uint64_t batch;     /* publish after this many releases (or when idle) */
} ushmemi_ring_consumer_t;

/* The region: four control words, each on its own line (producers hammer head
 * and free_cache; the consumer writes free_upto), then the slots, then the
 * return area. */
#define USHMEMI_RING_CTRL_BYTES 256

static inline size_t ushmemi_ring_bytes(uint32_t cap)
{
    return USHMEMI_RING_CTRL_BYTES + (size_t)cap * sizeof(ushmemi_ring_desc_t) +
           (size_t)cap * sizeof(ushmemi_ring_ret_t);
}

/* Lays the ring out over mem (64-byte aligned, ushmemi_ring_bytes(cap) bytes,
 * e.g. from cuMemHostAlloc) and zeroes it. cap: a power of two. Returns 0 or
 * USHMEMI_RING_EINVAL. The CUDA build may then point c->ring.head and
 * c->ring.free_cache at device words holding 0 and cap before handing
 * c->ring to kernels. */
static inline int ushmemi_ring_init(ushmemi_ring_consumer_t *c, void *mem, size_t bytes,
                                    uint32_t cap)
{
    if (!c || !mem || cap == 0 || cap > USHMEMI_RING_MAX_CAP || (cap & (cap - 1)) ||
        ((uintptr_t)mem & 63) || bytes < ushmemi_ring_bytes(cap))
        return USHMEMI_RING_EINVAL;
    memset(mem, 0, ushmemi_ring_bytes(cap));
    char *base = (char *)mem;
    ushmemi_ring_t *r = &c->ring;
    r->head = (uint64_t *)(base + 0);
    r->free_cache = (uint64_t *)(base + 64);
    r->free_upto = (uint64_t *)(base + 128);
    r->abort_word = (uint64_t *)(base + 192);
    r->slots = (ushmemi_ring_desc_t *)(base + USHMEMI_RING_CTRL_BYTES);
    r->ret = (ushmemi_ring_ret_t *)(base + USHMEMI_RING_CTRL_BYTES +
                                    (size_t)cap * sizeof(ushmemi_ring_desc_t));
    r->mask = cap - 1;
    r->cap = cap;
    *r->free_cache = cap;
    *r->free_upto = cap;
    c->tail = 0;
    c->free = 0;
    c->published = 0;
    c->batch = cap >= 4 ? cap / 4 : 1;
    return 0;
}

/* ---- Waiting (host). The device uses __nanosleep and %globaltimer. ---- */

static inline uint64_t ushmemi_ring_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spin briefly, then yield, then sleep: host producers are test stand-ins for
 * GPU threads and may outnumber the cores, and the consumer must get a core. */
static inline void ushmemi_ring_backoff(unsigned *spins)
{
    unsigned n = (*spins)++;
    if (n < 32) {
        ushmemi_cpu_relax();
    } else if (n < 256) {
        sched_yield();
    } else {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

static inline uint64_t ushmemi_ring_load(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void ushmemi_ring_store(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* ---- Producer (host C; ring_device.cuh is the same algorithm) ----
 * A producer must publish each ticket before reserving the next: a reserved,
 * unpublished ticket stops the consumer, which takes tickets in order. After
 * an error the ring is dead (the ticket taken by a failed reserve is never
 * published): the caller treats it as fatal. */

/* How often a waiting producer that has no other reason to read host memory
 * looks at the abort word: thousands of GPU threads polling host memory
 * would crowd out the requests on the bus, so shutdown reaches them up to
 * this late. */
#define USHMEMI_RING_ABORT_POLL_NS 10000000u

/* Raises *free_cache to limit (a max: it only grows). Release: a producer
 * that reads the new value (acquire) is ordered after what this one
 * acquired from free_upto. */
static inline void ushmemi_ring_raise(uint64_t *free_cache, uint64_t limit)
{
    uint64_t cached = __atomic_load_n(free_cache, __ATOMIC_RELAXED);
    while (cached < limit && !__atomic_compare_exchange_n(free_cache, &cached, limit, 1,
                                                          __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
}

/* Takes the next ticket (one fetch_add: one producer per slot), then waits
 * until the consumer has released the slot's previous lap. 0, EABORT or
 * ETIMEDOUT.
 *
 * Waiting producers watch free_cache. Only the one whose ticket equals it
 * (the first one it refuses; there is one at a time) reads the consumer's
 * free_upto and raises free_cache for everyone behind it: on the GPU that
 * keeps thousands of waiting threads off the bus, where their polls would
 * slow down the very requests they wait for. When free_cache reaches a
 * waiting ticket, its producer takes over. */
static inline int ushmemi_ring_reserve(const ushmemi_ring_t *r, uint64_t *ticket,
                                       uint64_t timeout_ns)
{
    uint64_t t = __atomic_fetch_add(r->head, 1, __ATOMIC_RELAXED);
    uint64_t start = 0, polled = 0;
    unsigned spins = 0;
    for (;;) {
        /* acquire: the consumer's reads of this slot's last lap, ordered
         * before its store to free_upto, come before our stores to the slot */
        uint64_t cached = ushmemi_ring_load(r->free_cache);
        if (t < cached) {
            *ticket = t;
            return 0;
        }
        uint64_t now = ushmemi_ring_now_ns();
        if (!start)
            start = now;
        if (t == cached) {
            if (ushmemi_ring_load(r->abort_word))
                return USHMEMI_RING_EABORT;
            uint64_t limit = ushmemi_ring_load(r->free_upto);
            if (t < limit) {
                ushmemi_ring_raise(r->free_cache, limit);
                *ticket = t;
                return 0;
            }
        } else if (now - polled >= USHMEMI_RING_ABORT_POLL_NS) {
            polled = now;
            if (ushmemi_ring_load(r->abort_word))
                return USHMEMI_RING_EABORT;
        }
        if (timeout_ns != USHMEMI_RING_FOREVER && now - start >= timeout_ns)
            return USHMEMI_RING_ETIMEDOUT;
        ushmemi_ring_backoff(&spins);
    }
}

/* Fills the slot of a reserved ticket. The release store of seq orders the
 * payload before it (on the GPU: __threadfence_system, then the seq store;
 * or st.release.sys). */
static inline void ushmemi_ring_publish(const ushmemi_ring_t *r, uint64_t ticket,
                                        const uint64_t w[USHMEMI_RING_WORDS])
{
    ushmemi_ring_desc_t *d = &r->slots[ticket & r->mask];
    for (int i = 0; i < USHMEMI_RING_WORDS; i++)
        __atomic_store_n(&d->w[i], w[i], __ATOMIC_RELAXED);
    ushmemi_ring_store(&d->seq, ticket + 1);
}

/* For a fetching request, after publish: waits for its result, then acks the
 * slot. The ack is what lets the consumer reuse the slot, so a later lap's
 * result cannot overwrite this one before we read it; the release store
 * orders our read of value before it. 0, EABORT or ETIMEDOUT. */
static inline int ushmemi_ring_wait_ret(const ushmemi_ring_t *r, uint64_t ticket, uint64_t *value,
                                        uint64_t timeout_ns)
{
    ushmemi_ring_ret_t *rs = &r->ret[ticket & r->mask];
    uint64_t start = 0, polled = 0;
    unsigned spins = 0;
    for (;;) {
        if (ushmemi_ring_load(&rs->seq) == ticket + 1) {
            uint64_t v = __atomic_load_n(&rs->value, __ATOMIC_RELAXED);
            ushmemi_ring_store(&rs->ack, ticket + 1);
            *value = v;
            return 0;
        }
        uint64_t now = ushmemi_ring_now_ns();
        if (!start)
            start = now;
        if (now - polled >= USHMEMI_RING_ABORT_POLL_NS) {
            polled = now;
            if (ushmemi_ring_load(r->abort_word))
                return USHMEMI_RING_EABORT;
        }
        if (timeout_ns != USHMEMI_RING_FOREVER && now - start >= timeout_ns)
            return USHMEMI_RING_ETIMEDOUT;
        ushmemi_ring_backoff(&spins);
    }
}

/* ---- Consumer (the proxy thread; one thread) ---- */

/* Moves free over released tickets and, every batch releases or when force
 * is set, tells producers. Batching keeps the consumer from writing a shared
 * line producers read on every release; force (the consumer is idle) makes
 * sure no producer waits on a release that is done but not yet published. */
static inline void ushmemi_ring_release(ushmemi_ring_consumer_t *c, int force)
{
    const ushmemi_ring_t *r = &c->ring;
    /* A fetching request's slot waits for its producer's ack (acquire: its
     * read of the value comes before we let the slot's next lap in); acks
     * come in any order, the scan stops at the first missing one. */
    while (c->free < c->tail && ushmemi_ring_load(&r->ret[c->free & r->mask].ack) == c->free + 1)
        c->free++;
    if (c->free != c->published && (force || c->free - c->published >= c->batch)) {
        c->published = c->free;
        ushmemi_ring_store(r->free_upto, c->free + r->cap);
    }
}

/* Takes the next request, in ticket order: 1 and *out if it is there, else 0
 * (having published any releases, so producers never wait on an idle
 * consumer). The descriptor is copied out, the slot stays held until
 * ushmemi_ring_complete. */
static inline int ushmemi_ring_poll(ushmemi_ring_consumer_t *c, ushmemi_ring_desc_t *out)
{
    const ushmemi_ring_t *r = &c->ring;
    ushmemi_ring_desc_t *d = &r->slots[c->tail & r->mask];
    uint64_t seq = ushmemi_ring_load(&d->seq); /* acquire: pairs with publish */
    if (seq != c->tail + 1) {
        ushmemi_ring_release(c, 1);
        return 0;
    }
    for (int i = 0; i < USHMEMI_RING_WORDS; i++)
        out->w[i] = __atomic_load_n(&d->w[i], __ATOMIC_RELAXED);
    out->seq = seq;
    c->tail++;
    return 1;
}

/* Finishes a polled request (ticket = out->seq - 1 from poll), in any order.
 * fetching: value is its result, and the slot is released once the producer
 * has read it (ushmemi_ring_wait_ret acks); otherwise the slot is released
 * now. */
static inline void ushmemi_ring_complete(ushmemi_ring_consumer_t *c, uint64_t ticket, int fetching,
                                         uint64_t value)
{
    ushmemi_ring_ret_t *rs = &c->ring.ret[ticket & c->ring.mask];
    if (fetching) {
        __atomic_store_n(&rs->value, value, __ATOMIC_RELAXED);
        ushmemi_ring_store(&rs->seq, ticket + 1);
    } else {
        ushmemi_ring_store(&rs->ack, ticket + 1);
    }
    ushmemi_ring_release(c, 0);
}

/* The consumer is going away (job end, fatal error): every producer waiting
 * in reserve or wait_ret returns EABORT. A producer that finds room without
 * waiting may still publish; nothing will carry its request out. */
static inline void ushmemi_ring_shutdown(ushmemi_ring_consumer_t *c)
{
    ushmemi_ring_store(c->ring.abort_word, 1);
}

#endif
