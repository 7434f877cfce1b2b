/* Bad input to the CUDA paths: each case (argv[1]) must end the job with a
 * one-line error naming the call and the reason; cuda_errors.sh checks it.
 * "probe" exits 0 where a GPU is usable and 77 where not. */
#include "cuda_test.h"

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "probe";
    if (tcu_load() != 0)
        return 77;
    if (!strcmp(c, "probe"))
        return 0;
    shmem_init();
    int me = shmem_my_pe(), np = shmem_n_pes();
    char *sym = shmem_malloc(4096);
    uint64_t *sig = shmem_calloc(1, 8);
    char *priv = malloc(4096);
    CUdeviceptr dpriv;
    CUcontext ctx = NULL;
    tcu.cuCtxGetCurrent(&ctx);
    if (!ctx) { /* no device bound by the library (USHMEM_TRANSPORTS=shm) */
        CUdevice dev;
        TCU(tcu.cuDeviceGet(&dev, 0));
        TCU(tcu.cuDevicePrimaryCtxRetain(&ctx, dev));
        TCU(tcu.cuCtxSetCurrent(ctx));
    }
    TCU(tcu.cuMemAlloc(&dpriv, 4096));
    CUstream s = NULL;
    TCU(tcu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    shmem_barrier_all();
    if (me == 0) {
        if (!strcmp(c, "nonsym")) /* host memory that is not symmetric */
            shmemx_putmem_on_stream(priv, sym, 64, 1 % np, s);
        else if (!strcmp(c, "nonsym_dev")) /* device memory that is not symmetric */
            shmemx_putmem_on_stream((void *)(uintptr_t)dpriv, sym, 64, 1 % np, s);
        else if (!strcmp(c, "sigwait_nonsym"))
            shmemx_signal_wait_until_on_stream((uint64_t *)(void *)priv, SHMEM_CMP_EQ, 1, s);
        else if (!strcmp(c, "devwait")) /* device pointer to the host wait path */
            shmem_uint64_wait_until((uint64_t *)(uintptr_t)dpriv, SHMEM_CMP_EQ, 1);
        else if (!strcmp(c, "nodevice")) /* run with USHMEM_TRANSPORTS=shm */
            shmemx_putmem_on_stream(sym, priv, 64, 1 % np, s);
        else if (!strcmp(c, "badpe"))
            shmemx_putmem_on_stream(sym, sym, 64, np, s);
        else if (!strcmp(c, "badcmp"))
            shmemx_signal_wait_until_on_stream(sig, 42, 1, s);
        else if (!strcmp(c, "badsigop"))
            shmemx_putmem_signal_on_stream(sym, sym, 8, sig, 1, 7, 1 % np, s);
        else if (!strcmp(c, "collkernel")) /* USHMEM_CUDA_COLL=kernel, PEs share a GPU, no MPS */
            shmemx_alltoallmem_on_stream(SHMEM_TEAM_WORLD, sym, sym + 2048, 8, s);
        else if (!strcmp(c, "barkernel")) /* USHMEM_CUDA_BARRIER=kernel, as collkernel */
            shmemx_barrier_all_on_stream(s);
        else {
            fprintf(stderr, "unknown case %s\n", c);
            return 2;
        }
        TCU(tcu.cuStreamSynchronize(s));
        fprintf(stderr, "case %s: no error reported\n", c);
        return 3;
    }
    shmem_barrier_all(); /* PE 0 never gets here: the job is stopped */
    shmem_finalize();
    return 0;
}
