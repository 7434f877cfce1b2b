/* How the proxy's threads wait when there is nothing to do (staged.c's
 * receiver, devring.c's request thread). While the last piece of work is
 * less than spin_ns old (the next request or message usually comes within a
 * round trip) the thread stays awake: it polls again after a pause of
 * gap_ns, a busy wait on the clock. A nap would cost far more than its
 * length (a wake-up takes 5-50 us on a virtual machine) and add it to every
 * hop. The pause matters for a thread that polls with MPI_Test: one that
 * spins in MPI_Test holds the MPI library's locks that the PE's other
 * threads need to send; a thread that polls memory (the request ring)
 * needs none (gap_ns 0). Only where the host has a CPU for each of these
 * threads (ushmemi_g.proxy_awake); else, as after spin_ns without work, it
 * naps, doubling from 1 us up to 4 us within spin_ns, then up to max_ns, so
 * idle PEs leave the CPU to the application. The threads ask for 1 us timer
 * slack (the default 50 us would turn every nap into 50 us). Header only:
 * staged.c is in libushmem_mpi.so. */
#ifndef USHMEM_PROXY_IDLE_H
#define USHMEM_PROXY_IDLE_H

#include <sys/prctl.h>
#include <time.h>

typedef struct {
    long polls;        /* empty polls since the last piece of work */
    long nap_ns;       /* the last nap */
    long max_ns;       /* longest nap (< 1 s); 0: always spin */
    long spin_ns;      /* stay awake this long after work before napping */
    long gap_ns;       /* while awake: pause between polls; < 0: never awake, nap */
    long long last_ns; /* when the last piece of work came */
} ushmemi_proxy_idle_t;

static inline long long ushmemi_proxy_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* At the start of the thread. */
static inline void ushmemi_proxy_idle_init(ushmemi_proxy_idle_t *w, long max_ns, long spin_ns,
                                           long gap_ns)
{
    w->polls = w->nap_ns = 0;
    w->max_ns = max_ns;
    w->spin_ns = spin_ns;
    w->gap_ns = gap_ns;
    w->last_ns = ushmemi_proxy_now_ns();
    (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
}

/* A busy wait of ns on the clock. */
static inline void ushmemi_proxy_pause(long ns)
{
    long long t0 = ushmemi_proxy_now_ns();
    while (ushmemi_proxy_now_ns() - t0 < ns)
        ;
}

/* An empty poll. */
static inline void ushmemi_proxy_idle(ushmemi_proxy_idle_t *w)
{
    if (w->max_ns <= 0 || ++w->polls <= 64)
        return;
    long long now = ushmemi_proxy_now_ns();
    long cap = w->max_ns;
    if (now - w->last_ns < w->spin_ns) {
        if (w->gap_ns < 0) {
            cap = cap < 4000 ? cap : 4000;
        } else {
            ushmemi_proxy_pause(w->gap_ns);
            return;
        }
    }
    w->nap_ns = w->nap_ns ? (w->nap_ns * 2 < cap ? w->nap_ns * 2 : cap) : 1000;
    struct timespec ts = {0, w->nap_ns};
    nanosleep(&ts, NULL);
}

/* Work came: spin again. */
static inline void ushmemi_proxy_busy(ushmemi_proxy_idle_t *w)
{
    w->last_ns = ushmemi_proxy_now_ns();
    w->polls = w->nap_ns = 0;
}

#endif
