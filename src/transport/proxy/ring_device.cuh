/* The request ring's producer for CUDA device code: ring.h's host producer,
 * step for step, with the GPU's memory operations. Layout, protocol and error
 * codes are ring.h's; README.md tells the protocol.
 *
 * Where the words live: slots, ret, free_upto and abort_word in pinned host
 * memory mapped into the device (cuMemHostAlloc, DEVICEMAP); head and
 * free_cache in device memory (the host code points ring.head and
 * ring.free_cache there, holding 0 and cap, before the ring reaches a
 * kernel). The device atomics on those two are GPU-scope: they must not sit
 * in host memory, where a GPU atomic is not atomic.
 *
 * Orderings: ld.acquire.sys for every word the host writes;
 * __threadfence_system() before each store the host acts on (seq, ack), so
 * what came before it (payload stores, the read of a result) is visible or
 * done first. */
#ifndef USHMEM_PROXY_RING_DEVICE_CUH
#define USHMEM_PROXY_RING_DEVICE_CUH

#include "transport/proxy/ring.h"

__device__ __forceinline__ uint64_t ushmemi_ring_dev_ld_acquire_sys(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ uint64_t ushmemi_ring_dev_ld_acquire_gpu(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

/* Release: a thread of this GPU that reads the raised value through the
 * acquire above also sees what this thread acquired from free_upto. */
__device__ __forceinline__ void ushmemi_ring_dev_max_release_gpu(uint64_t *p, uint64_t v)
{
    asm volatile("red.release.gpu.max.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/* A store the host acts on (the same as st.release.sys). */
__device__ __forceinline__ void ushmemi_ring_dev_st_release_sys(uint64_t *p, uint64_t v)
{
    __threadfence_system();
    *(volatile uint64_t *)p = v;
}

__device__ __forceinline__ uint64_t ushmemi_ring_dev_now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Each poll of a host word is a PCIe read: back off up to ~1 us between them. */
__device__ __forceinline__ void ushmemi_ring_dev_backoff(unsigned *ns)
{
    __nanosleep(*ns);
    if (*ns < 1024)
        *ns *= 2;
}

/* ushmemi_ring_reserve: waiting threads watch free_cache in device memory;
 * only the one whose ticket equals it reads free_upto over the bus. Publish
 * a ticket before reserving another (the consumer takes tickets in order).
 * After an error the ring is dead. */
__device__ inline int ushmemi_ring_dev_reserve(const ushmemi_ring_t *r, uint64_t *ticket,
                                               uint64_t timeout_ns)
{
    uint64_t t = atomicAdd((unsigned long long *)r->head, 1ull);
    uint64_t start = 0, polled = 0;
    unsigned ns = 32;
    for (;;) {
        uint64_t cached = ushmemi_ring_dev_ld_acquire_gpu(r->free_cache);
        if (t < cached) {
            *ticket = t;
            return 0;
        }
        uint64_t now = ushmemi_ring_dev_now_ns();
        if (!start)
            start = now;
        if (t == cached) {
            if (ushmemi_ring_dev_ld_acquire_sys(r->abort_word))
                return USHMEMI_RING_EABORT;
            uint64_t limit = ushmemi_ring_dev_ld_acquire_sys(r->free_upto);
            if (t < limit) {
                ushmemi_ring_dev_max_release_gpu(r->free_cache, limit);
                *ticket = t;
                return 0;
            }
        } else if (now - polled >= USHMEMI_RING_ABORT_POLL_NS) {
            polled = now;
            if (ushmemi_ring_dev_ld_acquire_sys(r->abort_word))
                return USHMEMI_RING_EABORT;
        }
        if (timeout_ns != USHMEMI_RING_FOREVER && now - start >= timeout_ns)
            return USHMEMI_RING_ETIMEDOUT;
        ushmemi_ring_dev_backoff(&ns);
    }
}

/* ushmemi_ring_publish: the payload, a system fence, then seq. */
__device__ inline void ushmemi_ring_dev_publish(const ushmemi_ring_t *r, uint64_t ticket,
                                                const uint64_t w[USHMEMI_RING_WORDS])
{
    ushmemi_ring_desc_t *d = &r->slots[ticket & r->mask];
    for (int i = 0; i < USHMEMI_RING_WORDS; i++)
        d->w[i] = w[i];
    ushmemi_ring_dev_st_release_sys(&d->seq, ticket + 1);
}

/* ushmemi_ring_wait_ret: the result, then the ack that frees the slot (the
 * fence in the store orders our read of value before it). */
__device__ inline int ushmemi_ring_dev_wait_ret(const ushmemi_ring_t *r, uint64_t ticket,
                                                uint64_t *value, uint64_t timeout_ns)
{
    ushmemi_ring_ret_t *rs = &r->ret[ticket & r->mask];
    uint64_t start = 0, polled = 0;
    unsigned ns = 32;
    for (;;) {
        if (ushmemi_ring_dev_ld_acquire_sys(&rs->seq) == ticket + 1) {
            uint64_t v = *(volatile uint64_t *)&rs->value;
            ushmemi_ring_dev_st_release_sys(&rs->ack, ticket + 1);
            *value = v;
            return 0;
        }
        uint64_t now = ushmemi_ring_dev_now_ns();
        if (!start)
            start = now;
        if (now - polled >= USHMEMI_RING_ABORT_POLL_NS) {
            polled = now;
            if (ushmemi_ring_dev_ld_acquire_sys(r->abort_word))
                return USHMEMI_RING_EABORT;
        }
        if (timeout_ns != USHMEMI_RING_FOREVER && now - start >= timeout_ns)
            return USHMEMI_RING_ETIMEDOUT;
        ushmemi_ring_dev_backoff(&ns);
    }
}

#endif
