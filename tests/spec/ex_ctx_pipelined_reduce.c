/* Spec example: shmem_ctx_create (pipelined all-reduce with two contexts). Each stage's
 * slice of in_buf is put to every PE on one context while the other context's previous
 * stage is completed and summed. Checked: every out_buf element is the sum of all PE
 * numbers (in_buf is the PE number). */
#include "spec_check.h"

#define LEN  8192 /* full buffer length */
#define PLEN 512  /* length of each pipeline stage */

int in_buf[LEN], out_buf[LEN];

int main(void)
{
    int i, j, *pbuf[2];
    shmem_ctx_t ctx[2];
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    pbuf[0] = shmem_malloc((size_t)(PLEN * npes) * sizeof(int));
    pbuf[1] = shmem_malloc((size_t)(PLEN * npes) * sizeof(int));
    int ret_0 = shmem_ctx_create(0, &ctx[0]);
    int ret_1 = shmem_ctx_create(0, &ctx[1]);
    SPEC_CHECK(ret_0 == 0 && ret_1 == 0, "ctx_create returned %d %d", ret_0, ret_1);
    for (i = 0; i < LEN; i++) {
        in_buf[i] = me;
        out_buf[i] = 0;
    }
    int p_idx = 0, p = 0; /* context and pbuf index (p_idx) of the current stage (p) */
    for (i = 1; i <= npes; i++)
        shmem_put_nbi(ctx[p_idx], &pbuf[p_idx][PLEN * me], &in_buf[PLEN * p], PLEN,
                      (me + i) % npes);
    /* issue stage p, then sum stage p-1 */
    for (p = 1; p < LEN / PLEN; p++) {
        p_idx ^= 1;
        for (i = 1; i <= npes; i++)
            shmem_put_nbi(ctx[p_idx], &pbuf[p_idx][PLEN * me], &in_buf[PLEN * p], PLEN,
                          (me + i) % npes);
        shmem_ctx_quiet(ctx[p_idx ^ 1]);
        shmem_sync_all();
        for (i = 0; i < npes; i++)
            for (j = 0; j < PLEN; j++)
                out_buf[PLEN * (p - 1) + j] += pbuf[p_idx ^ 1][PLEN * i + j];
    }
    shmem_ctx_quiet(ctx[p_idx]);
    shmem_sync_all();
    for (i = 0; i < npes; i++)
        for (j = 0; j < PLEN; j++)
            out_buf[PLEN * (p - 1) + j] += pbuf[p_idx][PLEN * i + j];
    int want = npes * (npes - 1) / 2;
    for (i = 0; i < LEN; i++)
        SPEC_CHECK(out_buf[i] == want, "out_buf[%d] = %d, want %d", i, out_buf[i], want);
    shmem_ctx_destroy(ctx[0]);
    shmem_ctx_destroy(ctx[1]);
    shmem_finalize();
    return 0;
}
