/* ushmem: OpenSHMEM 1.5 / 1.6 API.
 *
 * Hand-written here: constants, types, setup, memory management, teams,
 * contexts, ordering, barriers, locks, untyped collectives and the deprecated
 * untyped names. The typed families (put/get/p/g/iput/iget, AMOs, wait/test,
 * reductions, ...) and their C11 generic selections are generated from one type
 * table by scripts/gen_api.py into shmem_gen.h, included at the end. */
#ifndef SHMEM_H
#define SHMEM_H

#include <stddef.h>
#include <stdint.h>
#include <complex.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMEM_MAJOR_VERSION  1
#define SHMEM_MINOR_VERSION  6
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define SHMEM_MAX_NAME_LEN   256
#define _SHMEM_MAX_NAME_LEN  SHMEM_MAX_NAME_LEN
#define SHMEM_VENDOR_STRING  "ushmem"
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING

/* Thread levels */
#define SHMEM_THREAD_SINGLE     0
#define SHMEM_THREAD_FUNNELED   1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE   3

/* Comparison operators for wait/test */
#define SHMEM_CMP_EQ  0
#define SHMEM_CMP_NE  1
#define SHMEM_CMP_GT  2
#define SHMEM_CMP_GE  3
#define SHMEM_CMP_LT  4
#define SHMEM_CMP_LE  5
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

/* Signal operators */
#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

/* Deprecated active-set work arrays (sizes in longs) */
#define SHMEM_SYNC_VALUE               0L
#define _SHMEM_SYNC_VALUE              SHMEM_SYNC_VALUE
#define SHMEM_BARRIER_SYNC_SIZE        64
#define SHMEM_BCAST_SYNC_SIZE          64
#define SHMEM_COLLECT_SYNC_SIZE        64
#define SHMEM_REDUCE_SYNC_SIZE         64
#define SHMEM_ALLTOALL_SYNC_SIZE       64
#define SHMEM_ALLTOALLS_SYNC_SIZE      64
#define SHMEM_SYNC_SIZE                64
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE  64
#define _SHMEM_BARRIER_SYNC_SIZE       SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_BCAST_SYNC_SIZE         SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE       SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE        SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* Memory allocation hints (1.5) */
#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE  (1L << 1)

/* Contexts */
#define SHMEM_CTX_SERIALIZED (1L << 0)
#define SHMEM_CTX_PRIVATE    (1L << 1)
#define SHMEM_CTX_NOSTORE    (1L << 2)

typedef struct ushmem_ctx *shmem_ctx_t;
#define SHMEM_CTX_DEFAULT ((shmem_ctx_t)0)
#define SHMEM_CTX_INVALID ((shmem_ctx_t)-1)

/* Teams */
typedef struct ushmem_team *shmem_team_t;
extern shmem_team_t SHMEM_TEAM_WORLD;
extern shmem_team_t SHMEM_TEAM_SHARED;
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)

typedef struct {
    int num_contexts;
} shmem_team_config_t;
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

/* Sessions (1.6): accepted as hints. The 1.6 names are shmem_ctx_session_*;
 * the shmem_session_* names of the 1.6 drafts stay as aliases. */
typedef struct {
    size_t total_ops;
} shmem_ctx_session_config_t;
typedef shmem_ctx_session_config_t shmem_session_config_t;
#define SHMEM_CTX_SESSION_TOTAL_OPS (1L << 0) /* config_mask bit */
#define SHMEM_CTX_SESSION_BATCH     (1L << 0) /* options bit */
#define SHMEM_SESSION_TOTAL_OPS     SHMEM_CTX_SESSION_TOTAL_OPS
#define SHMEM_SESSION_SAME_AMO      SHMEM_CTX_SESSION_BATCH

/* ---- Library setup, exit and query ---- */
void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_query_thread(int *provided);
void shmem_finalize(void);
int shmem_query_initialized(void);
void shmem_global_exit(int status);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
void *shmem_ptr(const void *dest, int pe);
void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);

/* ---- Memory management ---- */
void *shmem_malloc(size_t size);
void *shmem_malloc_with_hints(size_t size, long hints);
void *shmem_calloc(size_t count, size_t size);
void *shmem_align(size_t alignment, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void shmem_free(void *ptr);

/* ---- Teams ---- */
int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
void shmem_team_destroy(shmem_team_t team);

/* ---- Contexts ---- */
int shmem_ctx_create(long options, shmem_ctx_t *ctx);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);

/* ---- Sessions (1.6) ---- */
void shmem_ctx_session_start(shmem_ctx_t ctx, long options,
                             const shmem_ctx_session_config_t *config, long config_mask);
void shmem_ctx_session_stop(shmem_ctx_t ctx);
void shmem_session_start(shmem_ctx_t ctx, long options, const shmem_session_config_t *config,
                         long config_mask);
void shmem_session_stop(shmem_ctx_t ctx);

/* ---- Memory ordering ---- */
void shmem_fence(void);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_quiet(void);
void shmem_ctx_quiet(shmem_ctx_t ctx);
void shmem_pe_quiet(const int *target_pes, size_t npes);
void shmem_ctx_pe_quiet(shmem_ctx_t ctx, const int *target_pes, size_t npes);

/* ---- Signals ---- */
uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* ---- Synchronization ---- */
void shmem_barrier_all(void);
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
int shmem_team_sync(shmem_team_t team);
void shmem_sync_all(void);
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync);

/* ---- Untyped collectives ---- */
int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,
                       int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems);

/* Deprecated active-set collectives */
void shmem_broadcast32(void *dest, const void *source, size_t nelems, int PE_root, int PE_start,
                       int logPE_stride, int PE_size, long *pSync);
void shmem_broadcast64(void *dest, const void *source, size_t nelems, int PE_root, int PE_start,
                       int logPE_stride, int PE_size, long *pSync);
void shmem_collect32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride,
                     int PE_size, long *pSync);
void shmem_collect64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride,
                     int PE_size, long *pSync);
void shmem_fcollect32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride,
                      int PE_size, long *pSync);
void shmem_fcollect64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride,
                      int PE_size, long *pSync);
void shmem_alltoall32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride,
                      int PE_size, long *pSync);
void shmem_alltoall64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride,
                      int PE_size, long *pSync);
void shmem_alltoalls32(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                       int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_alltoalls64(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                       int PE_start, int logPE_stride, int PE_size, long *pSync);

/* ---- Distributed locks ---- */
void shmem_set_lock(long *lock);
void shmem_clear_lock(long *lock);
int shmem_test_lock(long *lock);

/* ---- Deprecated names (still listed by 1.6) ---- */
void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);
void *shmalloc(size_t size);
void shfree(void *ptr);
void *shrealloc(void *ptr, size_t size);
void *shmemalign(size_t alignment, size_t size);
void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void *dest);
void shmem_set_cache_line_inv(void *dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void *dest);

/* Profiling control (accepted, no effect). */
void shmem_pcontrol(const int level, ...);

#ifdef __cplusplus
}
#endif

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)
/* C11: shmem_sync(team) is shmem_team_sync; the four-argument active-set form
 * stays available. Dispatch on the number of arguments. */
#define USHMEM_SYNC_PICK_(_1, _2, _3, _4, name, ...) name
#define shmem_sync(...)                                                                            \
    USHMEM_SYNC_PICK_(__VA_ARGS__, shmem_sync, shmem_sync_3_args_invalid_,                         \
                      shmem_sync_2_args_invalid_, shmem_team_sync, )                               \
    (__VA_ARGS__)
#endif

#include "shmem_gen.h"

#endif /* SHMEM_H */
