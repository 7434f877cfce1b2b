/* The staged proxy's hands on this PE's own memory (core side).
 *
 * The proxy itself lives in libushmem_mpi.so (staged.c) and cannot see the
 * core's hidden symbols; these functions reach it through the module table
 * (mpi_module.h). They are the memory-kind layer: device heap and CUDA
 * buffers move with the cuda transport's copies and atomics, host memory
 * with memcpy and CPU atomics. An AMO executes where its word lives, so AMOs
 * that arrive through the proxy stay atomic with those of mapped peers and of
 * kernels (the device heap: GPU atomics; host memory: CPU atomics). */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/prims.h"
#include "transport/cuda/devmem.h"
#include "transport/proxy/hands.h"

void ushmemi_proxy_local_copy(void *dst, const void *src, size_t n, const char *call)
{
    if (n == 0)
        return;
    if (ushmemi_g.cuda_active && ushmemi_cuda_proxy_copy(dst, src, n, call))
        return; /* device memory on either side */
    memcpy(dst, src, n);
}

/* Puts from other hosts into the device heap are not waited for one by
 * one: the receiver answers quiets, gets and AMOs (all behind them on the
 * same stream) and reuses its receive buffers only after local_sync, so a
 * stream of puts pipelines with MPI and costs no synchronization each. A
 * write into host memory waits for the enqueued ones first (pending), so
 * one PE's requests still land in the order they came. */
static int pending; /* __atomic builtins */

static void settle(const char *call)
{
    if (__atomic_load_n(&pending, __ATOMIC_RELAXED))
        ushmemi_proxy_local_sync(call);
}

int ushmemi_proxy_local_put(void *sym, const void *src, size_t n, const char *call)
{
    if (n && ushmemi_g.cuda_active && ushmemi_devheap_has(sym)) {
        ushmemi_cuda_proxy_put_async(sym, src, n, call);
        __atomic_store_n(&pending, 1, __ATOMIC_RELAXED);
        return 1;
    }
    settle(call);
    ushmemi_proxy_local_copy(sym, src, n, call);
    return 0;
}

/* The signal of a put with signal, behind its data, never waited for: on
 * the device heap enqueued on the proxy's stream after the copy (returns 1;
 * *value, page-locked, must stay put until local_sync); in host memory a
 * CPU atomic once the copies are done (returns 0). */
int ushmemi_proxy_local_signal(void *sym, const uint64_t *value, int add, const char *call)
{
    if ((uintptr_t)sym % 8)
        ushmemi_fatal(call, "proxy: misaligned signal word %p", sym);
    if (ushmemi_g.cuda_active && ushmemi_devheap_has(sym)) {
        ushmemi_cuda_proxy_signal_async((uint64_t *)sym, value, add, call);
        __atomic_store_n(&pending, 1, __ATOMIC_RELAXED);
        return 1;
    }
    settle(call);
    (void)ushmemi_proxy_local_amo(add ? USHMEMI_AMO_ADD : USHMEMI_AMO_SET,
                                  USHMEMI_DT(USHMEMI_KIND_UINT, 8), sym, *value, 0, call);
    return 0;
}

void ushmemi_proxy_local_sync(const char *call)
{
    if (ushmemi_g.cuda_active)
        ushmemi_cuda_proxy_sync(call);
    __atomic_store_n(&pending, 0, __ATOMIC_RELAXED);
}

uint64_t ushmemi_proxy_local_amo(ushmemi_amo_op_t op, int dtype, void *sym, uint64_t value,
                                 uint64_t cond, const char *call)
{
    size_t size = USHMEMI_DT_SIZE(dtype);
    if ((size != 4 && size != 8) || (uintptr_t)sym % size)
        ushmemi_fatal(call, "proxy: bad atomic (%zu bytes at %p)", size, sym);
    if (ushmemi_g.cuda_active && ushmemi_devheap_has(sym))
        return ushmemi_cuda_proxy_amo(op, size, sym, value, cond, call);
    if (size == 4)
        USHMEMI_CPU_AMO(uint32_t, sym, op, value, cond);
    else
        USHMEMI_CPU_AMO(uint64_t, sym, op, value, cond);
    ushmemi_fatal(call, "proxy: unknown atomic operation %d", (int)op);
}

void ushmemi_proxy_hands_prepare(const char *call)
{
    if (ushmemi_g.cuda_active)
        ushmemi_cuda_proxy_prepare(call);
}

/* A 64-byte header remembers which allocator made the block. */
#define BOUNCE_HDR 64
void *ushmemi_proxy_bounce_alloc(size_t n)
{
    int pinned = 1;
    char *p = ushmemi_cuda_host_alloc(n + BOUNCE_HDR);
    if (!p) {
        pinned = 0;
        p = aligned_alloc(BOUNCE_HDR, (n + 2 * BOUNCE_HDR - 1) / BOUNCE_HDR * BOUNCE_HDR);
    }
    if (!p)
        return NULL;
    *(int *)p = pinned;
    return p + BOUNCE_HDR;
}

void ushmemi_proxy_bounce_free(void *q)
{
    if (!q)
        return;
    char *p = (char *)q - BOUNCE_HDR;
    if (*(int *)p)
        ushmemi_cuda_host_free(p);
    else
        free(p);
}

int ushmemi_proxy_is_device(const void *addr)
{
    return ushmemi_g.cuda_active && ushmemi_cuda_is_device(addr);
}
