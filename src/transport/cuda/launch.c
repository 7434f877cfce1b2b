/* shmemx_collective_launch: start a kernel whose CTAs synchronize across PEs
 * (device barriers, collectives, waits) only when every CTA can be resident at
 * once on this PE's share of the GPU (its MPS share included), cooperatively;
 * otherwise fail with a message instead of hanging. */
#include <string.h>

#include "core/local.h"
#include "transport/cuda/cuda_priv.h"

/* The collective launch's residency check, asked of the driver once per
 * kernel shape: a function's occupancy at (threads, shared bytes) and this
 * context's SMs stay fixed while the job runs, and the queries cost more than
 * the launch (they ran on every launch before). Emptied at every init
 * (ushmemi_cuda_launch_reset). */
#define FIT_SLOTS 16
static struct {
    pthread_mutex_t lock;
    int have_ctx, coop, sms; /* this context's: cooperative launch, SMs it may use */
    unsigned next;           /* the slot the next new shape takes (round robin) */
    struct {
        CUfunction f;
        unsigned threads;
        size_t shared;
        int per_sm;
    } slot[FIT_SLOTS];
} fit = {.lock = PTHREAD_MUTEX_INITIALIZER};

void ushmemi_cuda_launch_reset(void)
{
    pthread_mutex_lock(&fit.lock);
    fit.have_ctx = 0;
    fit.next = 0;
    memset(fit.slot, 0, sizeof fit.slot);
    pthread_mutex_unlock(&fit.lock);
}

/* *per_sm, *sms, *coop for f at this shape; a driver status. */
static CUresult fit_get(CUfunction f, unsigned threads, size_t shared, int *per_sm, int *sms,
                        int *coop)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fit.lock);
    if (!fit.have_ctx) {
        cuda_card_t me;
        memset(&me, 0, sizeof me);
        ushmemi_cuda_dev_card(&me);
        fit.sms = me.sm_ctx;
        fit.coop = 0;
        ushmemi_cu.cuDeviceGetAttribute(&fit.coop, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
                                        ushmemi_cuda.dev);
        fit.have_ctx = 1;
    }
    *sms = fit.sms;
    *coop = fit.coop;
    int i = 0;
    while (i < FIT_SLOTS &&
           !(fit.slot[i].f == f && fit.slot[i].threads == threads && fit.slot[i].shared == shared))
        i++;
    if (i < FIT_SLOTS) {
        *per_sm = fit.slot[i].per_sm;
    } else {
        r = ushmemi_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, f, (int)threads, shared);
        if (r == CUDA_SUCCESS) {
            i = (int)(fit.next++ % FIT_SLOTS);
            fit.slot[i].f = f;
            fit.slot[i].threads = threads;
            fit.slot[i].shared = shared;
            fit.slot[i].per_sm = *per_sm;
        }
    }
    pthread_mutex_unlock(&fit.lock);
    return r;
}

USHMEMI_API int shmemx_collective_launch_cu(void *cu_function, unsigned gx, unsigned gy,
                                            unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                            void **args, size_t shared_bytes,
                                            shmemx_stream_t stream)
{
    static const char call[] = "shmemx_collective_launch";
    CUfunction f = (CUfunction)cu_function;
    int per_sm = 0, sms = 0, coop = 0;
    if (!ushmemi_g.initialized || !ushmemi_g.cuda_active) {
        ushmemi_error(call, "needs shmem_init and a bound GPU");
        return SHMEMX_ERR_STATE;
    }
    if (!f || !gx || !gy || !gz || !bx || !by || !bz) {
        ushmemi_error(call, "needs a kernel and a non-empty grid and block");
        return SHMEMX_ERR_INVALID;
    }
    ushmemi_cuda_ctx();
    CUresult r = fit_get(f, bx * by * bz, shared_bytes, &per_sm, &sms, &coop);
    if (r != CUDA_SUCCESS) {
        ushmemi_error(call, "occupancy query failed: %s", ushmemi_cu_errstr(r));
        return SHMEMX_ERR_INVALID;
    }
    unsigned long long blocks = (unsigned long long)gx * gy * gz;
    if (!coop || blocks > (unsigned long long)per_sm * (unsigned long long)sms) {
        ushmemi_error(call,
                      "%llu CTAs of %u threads cannot all be resident on GPU %d (%d per SM x %d "
                      "SMs available to this PE%s): a kernel that synchronizes across PEs would "
                      "hang; launch fewer CTAs",
                      blocks, bx * by * bz, ushmemi_cuda.device, per_sm, sms,
                      coop ? "" : "; no cooperative launch on this GPU");
        return SHMEMX_ERR_INVALID;
    }
    r = ushmemi_cu.cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, (unsigned)shared_bytes,
                                             (CUstream)stream, args);
    if (r != CUDA_SUCCESS) {
        ushmemi_error(call, "cuLaunchCooperativeKernel failed: %s", ushmemi_cu_errstr(r));
        return SHMEMX_ERR_INVALID;
    }
    return 0;
}
