/* Atomic memory operations and put-with-signal on mapped peers.
 *
 * Atomicity rule (DESIGN.md): every AMO on a mapped peer is a CPU atomic
 * instruction on the shared page, which is atomic against the peer's own CPU
 * atomics and against other PEs' AMOs. When some peer of the job is reached
 * through a transport without mapping (mpi), CPU and MPI atomics on one object
 * would not be atomic with each other, so every AMO and signal update of the
 * job goes through that transport instead (ushmemi_remote_tl; docs/mpi.md). */
#include <string.h>

#include "core/core.h"
#include "core/prims.h"
#include "core/team.h"
#include "transport/transport.h"

static char *amo_target(void *dest, size_t size, int pe, const char *call)
{
    USHMEMI_CHECK_INIT(call);
    if (pe < 0 || pe >= ushmemi_g.n_pes)
        ushmemi_fatal(call, "PE %d out of range (n_pes %d)", pe, ushmemi_g.n_pes);
    if ((uintptr_t)dest % size)
        ushmemi_fatal(call, "dest %p is not aligned to %zu bytes", dest, size);
    if (ushmemi_seg_of(dest, size) < 0)
        ushmemi_fatal(call, "%p is not a symmetric address", dest);
    char *r = ushmemi_xlate(dest, pe);
    if (!r && !ushmemi_remote_tl) /* mpi hook: unmapped peers: amo_remote() */
        ushmemi_fatal(call, "PE %d's memory is not mapped in this process (transport %s)", pe,
                      ushmemi_pe_transport_name(pe));
    return r;
}

_Noreturn static void amo_unmapped(int pe, const char *call)
{
    ushmemi_fatal(call, "PE %d's memory is not mapped in this process (transport %s)", pe,
                  ushmemi_pe_transport_name(pe));
}

/* The AMO through transport t: the job's unmapped transport for host memory
 * (see the top), the proxy for device heaps of unmapped peers, which runs it
 * as a GPU atomic where the word lives. */
static uint64_t amo_via(const ushmemi_transport_ops_t *t, ushmemi_amo_op_t op, int dtype,
                        void *dest, uint64_t value, uint64_t cond, int pe, const char *call)
{
    if (!t)
        amo_unmapped(pe, call);
    ushmemi_amo_desc_t d = {
        .op = op, .dtype = dtype, .remote = dest, .value = value, .cond = cond, .pe = pe};
    int rc = t->amo(&d);
    if (USHMEMI_UNLIKELY(rc))
        ushmemi_fatal(call, "atomic on PE %d (transport %s): %s", pe, t->name,
                      rc == USHMEM_EUNSUPPORTED ? "not supported on this memory"
                                                : ushmemi_strerror(rc));
    return d.result;
}

/* mpi hook: the AMO through the job's unmapped transport (see the top). */
static uint64_t amo_remote(ushmemi_amo_op_t op, int dtype, void *dest, uint64_t value,
                           uint64_t cond, int pe, const char *call)
{
    return amo_via(ushmemi_remote_tl, op, dtype, dest, value, cond, pe, call);
}

/* Signed and unsigned, int and float of one size are the same bit operation
 * for every op we offer (two's complement add; floats only fetch/set/swap). */
uint64_t ushmemi_amo(shmem_ctx_t ctx, ushmemi_amo_op_t op, int dtype, void *dest, uint64_t value,
                     uint64_t cond, int pe, const char *call)
{
    pe = ushmemi_ctx_pe(ctx, pe, call);
    size_t size = USHMEMI_DT_SIZE(dtype);
    char *r = amo_target(dest, size, pe, call);
    if (USHMEMI_DT_KIND(dtype) == USHMEMI_KIND_FLOAT && op != USHMEMI_AMO_FETCH &&
        op != USHMEMI_AMO_SET && op != USHMEMI_AMO_SWAP)
        ushmemi_fatal(call, "operation not defined for floating point");
    if (USHMEMI_UNLIKELY(ushmemi_remote_tl)) { /* mpi hook: every host AMO of the job */
        if (!ushmemi_devheap_has(dest))
            return amo_remote(op, dtype, dest, value, cond, pe, call);
        if (!r) /* device heap of an unmapped peer: the proxy */
            return amo_via(ushmemi_route(dest, pe), op, dtype, dest, value, cond, pe, call);
    }
    if (USHMEMI_UNLIKELY(ushmemi_devmem) && ushmemi_devheap_has(dest)) /* a GPU atomic */
        return ushmemi_devmem->amo(op, size, r, value, cond, call);
    switch (size) {
    case 4: USHMEMI_CPU_AMO(uint32_t, r, op, value, cond); break;
    case 8: USHMEMI_CPU_AMO(uint64_t, r, op, value, cond); break;
    default: break;
    }
    ushmemi_fatal(call, "unsupported AMO size %zu", size);
}

void ushmemi_amo_nbi(shmem_ctx_t ctx, ushmemi_amo_op_t op, int dtype, void *fetch, void *dest,
                     uint64_t value, uint64_t cond, int pe, const char *call)
{
    uint64_t old = ushmemi_amo(ctx, op, dtype, dest, value, cond, pe, call);
    if (!fetch)
        ushmemi_fatal(call, "fetch is NULL");
    if (USHMEMI_UNLIKELY(ushmemi_devmem) && /* fetch in device memory */
        ushmemi_devmem->get(fetch, &old, USHMEMI_DT_SIZE(dtype), 0, 0, call))
        return;
    memcpy(fetch, &old, USHMEMI_DT_SIZE(dtype)); /* little-endian: low bytes */
}

void ushmemi_signal_op(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                       const char *call)
{
    pe = ushmemi_ctx_pe(ctx, pe, call);
    uint64_t *r = (uint64_t *)amo_target(sig_addr, sizeof *sig_addr, pe, call);
    if (USHMEMI_UNLIKELY(ushmemi_remote_tl)) { /* mpi hook: signals are AMOs too */
        if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)
            ushmemi_fatal(call, "unknown signal operator %d", sig_op);
        ushmemi_amo_op_t op = sig_op == SHMEM_SIGNAL_SET ? USHMEMI_AMO_SET : USHMEMI_AMO_ADD;
        if (!ushmemi_devheap_has(sig_addr)) {
            amo_remote(op, USHMEMI_DT(USHMEMI_KIND_UINT, 8), sig_addr, signal, 0, pe, call);
            return;
        }
        if (!r) { /* device heap of an unmapped peer: the proxy */
            amo_via(ushmemi_route(sig_addr, pe), op, USHMEMI_DT(USHMEMI_KIND_UINT, 8), sig_addr,
                    signal, 0, pe, call);
            return;
        }
    }
    if (USHMEMI_UNLIKELY(ushmemi_devmem) && ushmemi_devheap_has(sig_addr) && /* device heap */
        (sig_op == SHMEM_SIGNAL_SET || sig_op == SHMEM_SIGNAL_ADD)) {
        ushmemi_devmem->signal(r, signal, sig_op, call);
        return;
    }
    if (sig_op == SHMEM_SIGNAL_SET)
        __atomic_store_n(r, signal, __ATOMIC_RELEASE);
    else if (sig_op == SHMEM_SIGNAL_ADD)
        __atomic_fetch_add(r, signal, __ATOMIC_RELEASE);
    else
        ushmemi_fatal(call, "unknown signal operator %d", sig_op);
}

/* The data must be visible before the signal: the full fence also orders the
 * non-temporal stores a large memcpy uses. */
void ushmemi_put_signal(shmem_ctx_t ctx, void *dest, const void *src, size_t nbytes,
                        uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, int nbi,
                        const char *call)
{
    (void)nbi;
    if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)
        ushmemi_fatal(call, "unknown signal operator %d", sig_op);
    int wpe = ushmemi_ctx_pe(ctx, pe, call);
    if (USHMEMI_UNLIKELY(ushmemi_proxy_tl) && nbytes && !ushmemi_xlate(dest, wpe)) {
        /* dest is not mapped: the transport that carries the data must have
         * completed it before the signal, unless it carries both in order */
        const ushmemi_transport_ops_t *t = ushmemi_route(dest, wpe);
        uint64_t *sr = (uint64_t *)amo_target(sig_addr, sizeof *sig_addr, wpe, call);
        if (t && t->put_signal && !sr && ushmemi_route(sig_addr, wpe) == t) {
            if (ushmemi_seg_of(dest, nbytes) < 0)
                ushmemi_fatal(call, "%zu bytes at %p are not symmetric memory", nbytes, dest);
            int rc = t->put_signal(dest, src, nbytes, sig_addr, signal, sig_op, wpe);
            if (rc)
                ushmemi_fatal(call, "PE %d (transport %s): %s", wpe, t->name, ushmemi_strerror(rc));
            return;
        }
        ushmemi_put(ctx, dest, src, nbytes, pe, call);
        if (t && t->quiet())
            ushmemi_fatal(call, "completing the data for PE %d failed", wpe);
        ushmemi_signal_op(ctx, sig_addr, signal, sig_op, pe, call);
        return;
    }
    ushmemi_put(ctx, dest, src, nbytes, pe, call);
    atomic_thread_fence(memory_order_seq_cst);
    ushmemi_signal_op(ctx, sig_addr, signal, sig_op, pe, call);
}

/* mpi hook: store v into PE pe's copy of the symmetric flag (barriers and
 * collectives; one writer per flag): a release store when mapped here, else
 * the transport's atomic SET, complete on return. */
void ushmemi_flag_put(_Atomic uint64_t *flag, uint64_t v, int pe, const char *call)
{
    _Atomic uint64_t *r = ushmemi_xlate((const void *)flag, pe);
    if (USHMEMI_LIKELY(r)) {
        atomic_store_explicit(r, v, memory_order_release);
        return;
    }
    if (!ushmemi_remote_tl)
        amo_unmapped(pe, call);
    amo_remote(USHMEMI_AMO_SET, USHMEMI_DT(USHMEMI_KIND_UINT, 8), (void *)flag, v, 0, pe, call);
}
