/* Spec example (1.6): shmem_ctx_session_start/stop. Random XOR updates to a table spread
 * over all PEs, inside a session on a private context (a hint that a batch of AMOs
 * follows), then quiet + sync since session_stop does neither. Checked: every PE
 * replays all PEs' rand() sequences and finds its part of the table exact.
 * N_UPDATES is 2^14 here (2^18 in the spec) to keep the sanitizer runs short. The
 * spec's option list also names SHMEM_CTX_SESSION_SAME_AMO, which 1.6 does not
 * define; only SHMEM_CTX_SESSION_BATCH is passed. */
#include <stdint.h>

#include "spec_check.h"

#define N_UPDATES (1lu << 14)
#define N_INDICES (1lu << 10)
#define N_VALUES  (1lu << 31)

int main(void)
{
    shmem_init();
    uint64_t *table = shmem_calloc(N_INDICES, sizeof(uint64_t));
    int mype = shmem_my_pe();
    int npes = shmem_n_pes();
    srand((unsigned)mype);
    shmem_ctx_t ctx;
    int ret = shmem_ctx_create(0, &ctx);
    SPEC_CHECK(ret == 0, "shmem_ctx_create returned %d", ret);
    shmem_ctx_session_config_t config;
    long config_mask;
    config.total_ops = N_UPDATES;
    config_mask = SHMEM_CTX_SESSION_TOTAL_OPS;
    long options = SHMEM_CTX_SESSION_BATCH;
    shmem_ctx_session_start(ctx, options, &config, config_mask);
    for (size_t i = 0; i < N_UPDATES; i++) {
        int random_pe = rand() % npes;
        size_t random_idx = (size_t)rand() % N_INDICES;
        uint64_t random_val = (uint64_t)rand() % N_VALUES;
        shmem_ctx_uint64_atomic_xor(ctx, &table[random_idx], random_val, random_pe);
    }
    shmem_ctx_session_stop(ctx);
    shmem_ctx_quiet(ctx); /* session_stop does not quiet the context */
    shmem_sync_all();     /* session_stop does not synchronize */

    uint64_t *want = calloc(N_INDICES, sizeof(uint64_t));
    for (int pe = 0; pe < npes; pe++) {
        srand((unsigned)pe);
        for (size_t i = 0; i < N_UPDATES; i++) {
            int random_pe = rand() % npes;
            size_t random_idx = (size_t)rand() % N_INDICES;
            uint64_t random_val = (uint64_t)rand() % N_VALUES;
            if (random_pe == mype)
                want[random_idx] ^= random_val;
        }
    }
    for (size_t i = 0; i < N_INDICES; i++)
        SPEC_CHECK(table[i] == want[i], "table[%zu] = 0x%llx, want 0x%llx", i,
                   (unsigned long long)table[i], (unsigned long long)want[i]);
    free(want);
    shmem_ctx_destroy(ctx);
    shmem_free(table);
    shmem_finalize();
    return 0;
}
