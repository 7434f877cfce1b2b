/* Unit test of the reverse-offload request ring (src/transport/proxy/ring.h),
 * with CPU threads as the producers the GPU will be. Cases:
 *   wrap      8 producers, 104k requests through rings of 64 and 8 slots
 *             (1000 and 5000 laps): each arrives once, per producer in order,
 *             payload intact, and no producer is ever let more than cap
 *             tickets past the consumer's last completion.
 *   fetch     the same (96k) with ~1/3 fetching requests: the consumer completes
 *             out of order, producers ack after random delays, every result
 *             matches its request.
 *   pressure  the consumer stalls with the ring full: producers block with
 *             exactly the published room used, and go on when it resumes.
 *   shutdown  producers blocked in reserve and in wait_ret return EABORT
 *             within 1 s of ushmemi_ring_shutdown.
 *   dead      the consumer stops without a word: producers with a timeout
 *             return ETIMEDOUT, neither early nor much late.
 *   init      argument checks; the ring's codes equal the USHMEM_E* codes;
 *             one thread by hand: batched and idle publication of releases,
 *             out-of-order completion, a result's slot waits for its ack,
 *             the producers' cached copy, timeout and abort.
 * A watchdog (alarm) fails the test instead of letting it hang. Exit 0 on
 * pass. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "transport/proxy/ring.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond);                       \
            _exit(1);                                                                              \
        }                                                                                          \
    } while (0)

#define MAXP      8
#define MAXHOLD   8 /* requests the consumer holds before completing one */
#define FOREVER   USHMEMI_RING_FOREVER
#define MS        1000000ull
#define ID_SHIFT  40
#define N_SERVED0 2000 /* requests served before a stall, shutdown or death */

enum { FETCH_NEVER, FETCH_ALWAYS, FETCH_THIRD };

/* The watchdog: a case that hangs fails the test, naming itself. */
static const char *volatile g_case = "";

static void watch(const char *name)
{
    g_case = name;
    alarm(30);
}

static void on_alarm(int sig)
{
    static const char msg[] = "test_proxy_ring: watchdog: this case hung: ";
    (void)sig;
    ssize_t n = write(2, msg, sizeof msg - 1);
    n += write(2, g_case, strlen(g_case));
    n += write(2, "\n", 1);
    (void)n;
    _exit(2);
}

static uint64_t ld(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void st(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static void add(uint64_t *p, int64_t v)
{
    __atomic_fetch_add(p, (uint64_t)v, __ATOMIC_ACQ_REL);
}

static uint64_t rnd(uint64_t *s) /* xorshift64* */
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

static uint64_t mix(const uint64_t *w, int n, uint64_t h)
{
    for (int i = 0; i < n; i++) {
        h ^= w[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
    }
    return h;
}

/* what the consumer answers to a fetching request */
static uint64_t answer(const uint64_t *w, uint64_t ticket)
{
    return mix(w, USHMEMI_RING_WORDS, 0xabcdef) ^ ticket;
}

typedef struct test test_t;

typedef struct {
    test_t *t;
    pthread_t th;
    int id;
    int fetch; /* FETCH_* */
    uint64_t count, rng;
    /* results */
    uint64_t sent;
    int rc;         /* the error that stopped it, or 0 */
    int rc_wait;    /* it came from wait_ret (else reserve) */
    uint64_t rc_ns; /* how long the failing call took */
    uint64_t end_ns;
} prod_t;

struct test {
    ushmemi_ring_consumer_t c;
    void *mem;
    int nprod;
    uint64_t timeout_ns;
    int ack_delay;
    prod_t p[MAXP];
    /* shared with producers (atomics) */
    uint64_t done;    /* consumer: every ticket below has been completed */
    uint64_t granted; /* successful reserves */
    uint64_t in_reserve, in_wait;
    /* consumer only */
    uint64_t expect[MAXP]; /* next sequence number per producer */
    uint64_t rng;
    uint64_t received;
    ushmemi_ring_desc_t hold[MAXHOLD]; /* polled, not completed */
    int nhold;
};

static void *producer(void *arg)
{
    prod_t *p = arg;
    test_t *t = p->t;
    const ushmemi_ring_t *r = &t->c.ring;
    uint64_t w[USHMEMI_RING_WORDS];
    for (uint64_t i = 0; i < p->count; i++) {
        int fetching =
            p->fetch == FETCH_ALWAYS || (p->fetch == FETCH_THIRD && rnd(&p->rng) % 3 == 0);
        w[0] = (uint64_t)p->id << ID_SHIFT | i;
        w[1] = (uint64_t)fetching;
        for (int k = 2; k < USHMEMI_RING_WORDS - 1; k++)
            w[k] = rnd(&p->rng);
        w[USHMEMI_RING_WORDS - 1] = mix(w, USHMEMI_RING_WORDS - 1, 1);

        uint64_t ticket, t0 = ushmemi_ring_now_ns();
        add(&t->in_reserve, 1);
        int rc = ushmemi_ring_reserve(r, &ticket, t->timeout_ns);
        add(&t->in_reserve, -1);
        if (rc) {
            p->rc = rc;
            p->rc_ns = ushmemi_ring_now_ns() - t0;
            break;
        }
        /* the slot's previous lap (ticket - cap) was completed: room is
         * never handed out past what the consumer has finished */
        CHECK(ticket < ld(&t->done) + r->cap);
        add(&t->granted, 1);
        ushmemi_ring_publish(r, ticket, w);

        if (fetching) {
            if (t->ack_delay && rnd(&p->rng) % 4 == 0) {
                /* let later requests' producers ack first */
                unsigned n = (unsigned)(rnd(&p->rng) % 8);
                for (unsigned k = 0; k < n; k++)
                    sched_yield();
            }
            uint64_t v = 0;
            t0 = ushmemi_ring_now_ns();
            add(&t->in_wait, 1);
            rc = ushmemi_ring_wait_ret(r, ticket, &v, t->timeout_ns);
            add(&t->in_wait, -1);
            if (rc) {
                p->rc = rc;
                p->rc_wait = 1;
                p->rc_ns = ushmemi_ring_now_ns() - t0;
                break;
            }
            CHECK(v == answer(w, ticket));
        }
        p->sent++;
    }
    p->end_ns = ushmemi_ring_now_ns();
    return NULL;
}

static void setup(test_t *t, uint32_t cap, int nprod, uint64_t per_prod, int fetch,
                  uint64_t timeout_ns, int ack_delay)
{
    memset(t, 0, sizeof *t);
    size_t bytes = ushmemi_ring_bytes(cap);
    t->mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    CHECK(t->mem);
    CHECK(ushmemi_ring_init(&t->c, t->mem, bytes, cap) == 0);
    t->nprod = nprod;
    t->timeout_ns = timeout_ns;
    t->ack_delay = ack_delay;
    t->rng = 0x1234567ull * cap + 1;
    for (int i = 0; i < nprod; i++) {
        prod_t *p = &t->p[i];
        p->t = t;
        p->id = i;
        p->fetch = fetch;
        p->count = per_prod;
        p->rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1) + cap;
    }
}

static void start(test_t *t)
{
    for (int i = 0; i < t->nprod; i++)
        CHECK(pthread_create(&t->p[i].th, NULL, producer, &t->p[i]) == 0);
}

static void join_all(test_t *t)
{
    for (int i = 0; i < t->nprod; i++)
        CHECK(pthread_join(t->p[i].th, NULL) == 0);
}

/* Checks a polled request; returns whether it is fetching. */
static int verify(test_t *t, const ushmemi_ring_desc_t *d)
{
    uint64_t id = d->w[0] >> ID_SHIFT, seq = d->w[0] & (((uint64_t)1 << ID_SHIFT) - 1);
    CHECK(d->seq == t->received + 1); /* tickets come in order, none skipped */
    CHECK(id < (uint64_t)t->nprod);
    if (seq != t->expect[id])
        fprintf(stderr, "producer %d: got request %llu, want %llu\n", (int)id,
                (unsigned long long)seq, (unsigned long long)t->expect[id]);
    CHECK(seq == t->expect[id]); /* exactly once, in the producer's order */
    CHECK(d->w[1] <= 1);
    CHECK(d->w[USHMEMI_RING_WORDS - 1] == mix(d->w, USHMEMI_RING_WORDS - 1, 1));
    t->expect[id]++;
    t->received++;
    return (int)d->w[1];
}

/* Completes held request i. done moves first: the ring may hand the slot's
 * next lap out as soon as complete returns. */
static void complete_held(test_t *t, int i)
{
    ushmemi_ring_desc_t d = t->hold[i];
    t->hold[i] = t->hold[--t->nhold];
    uint64_t low = t->c.tail;
    for (int k = 0; k < t->nhold; k++)
        if (t->hold[k].seq - 1 < low)
            low = t->hold[k].seq - 1;
    st(&t->done, low);
    int fetching = (int)d.w[1];
    ushmemi_ring_complete(&t->c, d.seq - 1, fetching, fetching ? answer(d.w, d.seq - 1) : 0);
}

/* Serves n more requests, holding up to `hold` of them and completing them
 * in random order (hold 1: in order). */
static void serve(test_t *t, uint64_t n, int hold)
{
    uint64_t until = t->received + n;
    ushmemi_ring_desc_t d;
    while (t->received < until || t->nhold) {
        if (t->received < until && t->nhold < hold && ushmemi_ring_poll(&t->c, &d)) {
            verify(t, &d);
            t->hold[t->nhold++] = d;
            if (t->nhold < hold && t->received < until)
                continue;
        }
        if (t->nhold)
            complete_held(t, hold > 1 ? (int)(rnd(&t->rng) % (uint64_t)t->nhold) : 0);
        else
            sched_yield();
    }
}

static void check_all_sent(test_t *t, uint64_t per_prod)
{
    for (int i = 0; i < t->nprod; i++) {
        CHECK(t->p[i].rc == 0);
        CHECK(t->p[i].sent == per_prod);
        CHECK(t->expect[i] == per_prod);
    }
    CHECK(ld(t->c.ring.head) == per_prod * (uint64_t)t->nprod);
    CHECK(t->c.tail == per_prod * (uint64_t)t->nprod);
}

static void case_stream(const char *name, uint32_t cap, int fetch, int hold, uint64_t total)
{
    const int nprod = 8;
    const uint64_t per_prod = total / nprod;
    static test_t t;
    uint64_t t0 = ushmemi_ring_now_ns();
    watch(name);
    setup(&t, cap, nprod, per_prod, fetch, FOREVER, fetch != FETCH_NEVER);
    start(&t);
    serve(&t, per_prod * nprod, hold);
    join_all(&t);
    check_all_sent(&t, per_prod);
    free(t.mem);
    printf("%-9s cap %-3u %llu requests, %llu laps, %.2f s\n", name, cap,
           (unsigned long long)t.received, (unsigned long long)(t.received / cap),
           (double)(ushmemi_ring_now_ns() - t0) / 1e9);
}

/* Waits (up to 5 s) until the producers are blocked: in_reserve + in_wait
 * reach want and `granted` holds still for 20 ms. */
static void wait_blocked(test_t *t, uint64_t want)
{
    uint64_t deadline = ushmemi_ring_now_ns() + 5000 * MS;
    uint64_t g = ~0ull;
    for (;;) {
        CHECK(ushmemi_ring_now_ns() < deadline);
        uint64_t g2 = ld(&t->granted);
        if (ld(&t->in_reserve) + ld(&t->in_wait) == want && g2 == g)
            return;
        g = g2;
        usleep(20000);
    }
}

static void case_pressure(void)
{
    const uint32_t cap = 8;
    const int nprod = 4;
    const uint64_t per_prod = 5000;
    static test_t t;
    watch("pressure");
    setup(&t, cap, nprod, per_prod, FETCH_NEVER, FOREVER, 0);
    start(&t);
    serve(&t, N_SERVED0, 1);
    /* stalled: every producer ends up waiting in reserve, having used all
     * the room published and not one slot more */
    wait_blocked(&t, (uint64_t)nprod);
    uint64_t g = ld(&t.granted), limit = ld(t.c.ring.free_upto), done = ld(&t.done);
    CHECK(ld(&t.in_reserve) == (uint64_t)nprod);
    CHECK(g == limit);
    CHECK(limit <= done + cap);
    CHECK(limit + t.c.batch > done + cap); /* publication lags by less than a batch */
    usleep(100000);
    CHECK(ld(&t.granted) == g); /* nobody moved while the consumer slept */
    serve(&t, per_prod * nprod - N_SERVED0, 1);
    join_all(&t);
    check_all_sent(&t, per_prod);
    free(t.mem);
    printf("pressure  cap %u: stalled with %llu granted, %llu completed; resumed\n", cap,
           (unsigned long long)g, (unsigned long long)done);
}

/* Half the producers send only fetching requests, half never. Serves
 * N_SERVED0 requests, then keeps the fetching ones without completing them
 * until every producer is stuck: the first held request's producer in
 * wait_ret, and (its slot never freed) the others in reserve once the ring
 * is full. */
static void run_until_stuck(test_t *t, int nprod, uint64_t timeout_ns, int wait_stable)
{
    setup(t, 8, nprod, UINT64_MAX, FETCH_NEVER, timeout_ns, 0);
    for (int i = 0; i < nprod / 2; i++)
        t->p[i].fetch = FETCH_ALWAYS;
    start(t);
    serve(t, N_SERVED0, 1);
    uint64_t end = ushmemi_ring_now_ns() + 50 * MS;
    ushmemi_ring_desc_t d;
    while (ushmemi_ring_now_ns() < end) {
        if (!ushmemi_ring_poll(&t->c, &d)) {
            sched_yield();
            continue;
        }
        if (verify(t, &d)) {
            CHECK(t->nhold < MAXHOLD);
            t->hold[t->nhold++] = d;
            continue;
        }
        t->hold[t->nhold++] = d;
        complete_held(t, t->nhold - 1);
    }
    CHECK(t->nhold >= 1);
    if (wait_stable)
        wait_blocked(t, (uint64_t)nprod);
}

static void case_shutdown(void)
{
    const int nprod = 8;
    static test_t t;
    watch("shutdown");
    run_until_stuck(&t, nprod, FOREVER, 1);
    CHECK(ld(&t.in_wait) >= 1 && ld(&t.in_reserve) >= 1);
    /* off the 20 ms steps of wait_blocked, which the producers' abort
     * polls (every USHMEMI_RING_ABORT_POLL_NS) would otherwise fall on */
    usleep(5000);
    uint64_t t0 = ushmemi_ring_now_ns();
    ushmemi_ring_shutdown(&t.c);
    join_all(&t);
    int n_reserve = 0, n_wait = 0;
    uint64_t worst = 0;
    for (int i = 0; i < nprod; i++) {
        prod_t *p = &t.p[i];
        CHECK(p->rc == USHMEMI_RING_EABORT);
        CHECK(p->end_ns - t0 < 1000 * MS);
        if (p->end_ns - t0 > worst)
            worst = p->end_ns - t0;
        n_wait += p->rc_wait;
        n_reserve += !p->rc_wait;
    }
    CHECK(n_wait >= 1 && n_reserve >= 1);
    free(t.mem);
    printf("shutdown  %d in reserve, %d in wait_ret: all EABORT within %.1f ms\n", n_reserve,
           n_wait, (double)worst / 1e6);
}

static void case_dead(void)
{
    const int nprod = 8;
    const uint64_t timeout = 200 * MS;
    static test_t t;
    watch("dead");
    /* the consumer holds its fetching requests for 50 ms, then never
     * polls again: no shutdown, no answer */
    run_until_stuck(&t, nprod, timeout, 0);
    join_all(&t);
    int n_reserve = 0, n_wait = 0;
    uint64_t worst = 0;
    for (int i = 0; i < nprod; i++) {
        prod_t *p = &t.p[i];
        CHECK(p->rc == USHMEMI_RING_ETIMEDOUT);
        CHECK(p->rc_ns >= timeout);
        CHECK(p->rc_ns < timeout + 1000 * MS);
        if (p->rc_ns > worst)
            worst = p->rc_ns;
        n_wait += p->rc_wait;
        n_reserve += !p->rc_wait;
    }
    CHECK(n_wait >= 1 && n_reserve >= 1);
    free(t.mem);
    printf("dead      %d in reserve, %d in wait_ret: all ETIMEDOUT after at most %.1f ms "
           "(timeout %.0f ms)\n",
           n_reserve, n_wait, (double)worst / 1e6, (double)timeout / 1e6);
}

static void case_init(void)
{
    CHECK(USHMEMI_RING_EINVAL == USHMEM_EINVAL);
    CHECK(USHMEMI_RING_ETIMEDOUT == USHMEM_ETIMEOUT);
    CHECK(USHMEMI_RING_EABORT == USHMEM_ESTATE);
    ushmemi_ring_consumer_t c;
    size_t bytes = ushmemi_ring_bytes(16);
    CHECK(bytes == USHMEMI_RING_CTRL_BYTES + 16 * 64 + 16 * 32);
    char *mem = aligned_alloc(64, bytes + 64);
    CHECK(mem);
    CHECK(ushmemi_ring_init(&c, mem, bytes, 12) == USHMEMI_RING_EINVAL);
    CHECK(ushmemi_ring_init(&c, mem, bytes, 0) == USHMEMI_RING_EINVAL);
    CHECK(ushmemi_ring_init(&c, mem + 8, bytes, 16) == USHMEMI_RING_EINVAL);
    CHECK(ushmemi_ring_init(&c, mem, bytes - 1, 16) == USHMEMI_RING_EINVAL);
    CHECK(ushmemi_ring_init(&c, mem, bytes, 16) == 0);
    CHECK(*c.ring.free_upto == 16 && *c.ring.free_cache == 16 && *c.ring.head == 0);
    CHECK((char *)c.ring.ret + 16 * sizeof(ushmemi_ring_ret_t) == mem + bytes);

    /* one request by hand; a timed-out wait for its result */
    uint64_t w[USHMEMI_RING_WORDS] = {1, 2, 3, 4, 5, 6, 7}, ticket, v;
    ushmemi_ring_desc_t d;
    CHECK(ushmemi_ring_poll(&c, &d) == 0);
    CHECK(ushmemi_ring_reserve(&c.ring, &ticket, 0) == 0 && ticket == 0);
    CHECK(ushmemi_ring_poll(&c, &d) == 0); /* reserved, not published */
    ushmemi_ring_publish(&c.ring, ticket, w);
    CHECK(ushmemi_ring_wait_ret(&c.ring, ticket, &v, 1 * MS) == USHMEMI_RING_ETIMEDOUT);
    CHECK(ushmemi_ring_poll(&c, &d) == 1 && d.seq == 1 && !memcmp(d.w, w, sizeof w));
    ushmemi_ring_complete(&c, 0, 1, 42);
    CHECK(ushmemi_ring_poll(&c, &d) == 0);
    CHECK(*c.ring.free_upto == 16); /* not acked yet */
    CHECK(ushmemi_ring_wait_ret(&c.ring, ticket, &v, 0) == 0 && v == 42);
    CHECK(ushmemi_ring_poll(&c, &d) == 0);
    CHECK(*c.ring.free_upto == 17);

    /* tickets 1..16 fill the ring; releases are published every batch (4)
     * releases, in ticket order whatever the completion order, and at once
     * when the consumer is idle */
    for (uint64_t k = 1; k <= 16; k++) {
        CHECK(ushmemi_ring_reserve(&c.ring, &ticket, 0) == 0 && ticket == k);
        w[0] = k;
        ushmemi_ring_publish(&c.ring, ticket, w);
    }
    CHECK(*c.ring.free_cache == 17);
    for (uint64_t k = 1; k <= 7; k++)
        CHECK(ushmemi_ring_poll(&c, &d) == 1 && d.seq == k + 1 && d.w[0] == k);
    ushmemi_ring_complete(&c, 1, 0, 0);
    ushmemi_ring_complete(&c, 2, 0, 0);
    ushmemi_ring_complete(&c, 3, 0, 0);
    CHECK(*c.ring.free_upto == 17);
    ushmemi_ring_complete(&c, 4, 0, 0);
    CHECK(*c.ring.free_upto == 21);
    ushmemi_ring_complete(&c, 7, 0, 0);
    ushmemi_ring_complete(&c, 6, 0, 0);
    CHECK(c.free == 5);
    ushmemi_ring_complete(&c, 5, 0, 0);
    CHECK(c.free == 8 && *c.ring.free_upto == 21);
    for (uint64_t k = 8; k <= 16; k++)
        CHECK(ushmemi_ring_poll(&c, &d) == 1 && d.w[0] == k);
    CHECK(ushmemi_ring_poll(&c, &d) == 0);
    CHECK(*c.ring.free_upto == 24);

    /* producers take the published room (the first one refused by the
     * cached copy reads free_upto and raises the copy), then time out */
    for (uint64_t k = 17; k < 24; k++)
        CHECK(ushmemi_ring_reserve(&c.ring, &ticket, 0) == 0 && ticket == k);
    CHECK(*c.ring.free_cache == 24);
    CHECK(ushmemi_ring_reserve(&c.ring, &ticket, 1 * MS) == USHMEMI_RING_ETIMEDOUT);
    ushmemi_ring_shutdown(&c);
    CHECK(ushmemi_ring_reserve(&c.ring, &ticket, FOREVER) == USHMEMI_RING_EABORT);
    CHECK(ushmemi_ring_wait_ret(&c.ring, 8, &v, FOREVER) == USHMEMI_RING_EABORT);
    free(mem);
    printf("init      ok\n");
}

int main(void)
{
    signal(SIGALRM, on_alarm);
    setvbuf(stdout, NULL, _IOLBF, 0);
    watch("init");
    case_init();
    /* 200k requests in all; the small ring is the slow one (a producer
     * preempted between reserve and publish stops everyone) */
    case_stream("wrap", 64, FETCH_NEVER, 1, 64000);
    case_stream("wrap", 8, FETCH_NEVER, 1, 40000);
    case_stream("fetch", 8, FETCH_THIRD, 4, 40000);
    case_stream("fetch", 64, FETCH_THIRD, MAXHOLD, 56000);
    case_pressure();
    case_shutdown();
    case_dead();
    alarm(0);
    printf("test_proxy_ring: pass\n");
    return 0;
}
