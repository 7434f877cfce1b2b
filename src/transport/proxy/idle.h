/* How the proxy's threads wait when there is nothing to do (staged.c's
 * receiver, devring.c's request thread): spin while busy; after 2000 empty
 * polls, nap, doubling from 1 us up to max_ns, so idle PEs leave the CPU to
 * the application. Header only: staged.c is in libushmem_mpi.so. */
#ifndef USHMEM_PROXY_IDLE_H
#define USHMEM_PROXY_IDLE_H

#include <time.h>

typedef struct {
    long polls;  /* empty polls since the last piece of work */
    long nap_ns; /* the last nap */
    long max_ns; /* longest nap (< 1 s); 0: always spin */
} ushmemi_proxy_idle_t;

/* An empty poll. */
static inline void ushmemi_proxy_idle(ushmemi_proxy_idle_t *w)
{
    if (++w->polls <= 2000 || w->max_ns <= 0)
        return;
    w->nap_ns = w->nap_ns ? (w->nap_ns * 2 < w->max_ns ? w->nap_ns * 2 : w->max_ns) : 1000;
    struct timespec ts = {0, w->nap_ns};
    nanosleep(&ts, NULL);
}

/* Work came: spin again. */
static inline void ushmemi_proxy_busy(ushmemi_proxy_idle_t *w)
{
    w->polls = w->nap_ns = 0;
}

#endif
