/* USHMEM_PROXY_TRACE: where a proxied request's time goes. Each thread of
 * the proxy adds the length of its steps (a request seen, handed to MPI, a
 * copy synchronized, a quiet answered...) to a table of its own; finalize
 * prints one line per step with the count, mean and longest. A message's
 * time in flight is measured across processes with CLOCK_MONOTONIC, so it
 * means something between PEs of one machine (pretend hosts) only. Header
 * only: staged.c lives in libushmem_mpi.so, devring.c in the core. */
#ifndef USHMEM_PROXY_TRACE_H
#define USHMEM_PROXY_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "transport/proxy/idle.h"

#define USHMEMI_TRACE_STEPS 8

typedef struct {
    int on;
    const char *who;
    const char *name[USHMEMI_TRACE_STEPS];
    uint64_t n[USHMEMI_TRACE_STEPS], sum[USHMEMI_TRACE_STEPS], max[USHMEMI_TRACE_STEPS];
    uint64_t nlong[USHMEMI_TRACE_STEPS], sumlong[USHMEMI_TRACE_STEPS]; /* those over 100 us */
} ushmemi_trace_t;

/* Now, when tracing (else 0, and no clock read). */
static inline long long ushmemi_trace_now(const ushmemi_trace_t *t)
{
    return t->on ? ushmemi_proxy_now_ns() : 0;
}

/* Step k took from t0 until now. */
static inline void ushmemi_trace_add(ushmemi_trace_t *t, int k, const char *name, long long t0)
{
    if (!t->on || t0 <= 0)
        return;
    long long d = ushmemi_proxy_now_ns() - t0;
    uint64_t u = d > 0 ? (uint64_t)d : 0;
    t->name[k] = name;
    t->n[k]++;
    t->sum[k] += u;
    if (u > t->max[k])
        t->max[k] = u;
    if (u > 100000) {
        t->nlong[k]++;
        t->sumlong[k] += u;
    }
}

static inline void ushmemi_trace_print(ushmemi_trace_t *t, int pe)
{
    for (int k = 0; t->on && k < USHMEMI_TRACE_STEPS; k++) {
        uint64_t n = t->n[k], nl = t->nlong[k];
        if (n)
            fprintf(stderr,
                    "ushmem: PE %d: proxy trace: %s: %s: %llu, mean %.2f us (%.2f us without the "
                    "%llu over 100 us), max %.1f us\n",
                    pe, t->who, t->name[k], (unsigned long long)n,
                    (double)t->sum[k] / (double)n / 1e3,
                    n > nl ? (double)(t->sum[k] - t->sumlong[k]) / (double)(n - nl) / 1e3 : 0.0,
                    (unsigned long long)nl, (double)t->max[k] / 1e3);
    }
    t->on = 0;
}

#endif
