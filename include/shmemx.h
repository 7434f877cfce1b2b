/* ushmem extensions to OpenSHMEM. Everything here is prefixed shmemx_ / SHMEMX_. */
#ifndef SHMEMX_H
#define SHMEMX_H

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HAVE_SHMEMX_WTIME 1

/* Status codes returned by the int-returning extensions (0 is success). */
#define SHMEMX_SUCCESS 0
#define SHMEMX_ERR_INVALID (-1)  /* bad argument */
#define SHMEMX_ERR_OVERLAP (-2)  /* range overlaps an existing registration */
#define SHMEMX_ERR_NOTFOUND (-3) /* address not registered / not symmetric */
#define SHMEMX_ERR_NOMEM (-4)    /* out of memory */
#define SHMEMX_ERR_BOOTSTRAP (-5)
#define SHMEMX_ERR_STATE (-6) /* called in the wrong library state */

/* Unique-id bootstrap: rank 0 calls shmemx_get_uniqueid, ships the blob to the
 * other ranks by any means (MPI, torch.distributed, a file), then every rank
 * calls shmemx_init_attr. The blob holds the root's address and a random secret;
 * connections that do not present the secret are refused. */
#define SHMEMX_UNIQUEID_BYTES 128
typedef struct {
    unsigned char internal[SHMEMX_UNIQUEID_BYTES];
} shmemx_uniqueid_t;

typedef struct {
    int device; /* CUDA device ordinal to bind, or -1 for none */
    int thread_level; /* SHMEM_THREAD_* requested */
} shmemx_init_attr_t;
#define SHMEMX_INIT_ATTR_INITIALIZER {-1, SHMEM_THREAD_SINGLE}

int shmemx_get_uniqueid(shmemx_uniqueid_t *uid);
/* attr may be NULL (defaults). Returns 0 or a negative SHMEMX_ERR_*. */
int shmemx_init_attr(int rank, int nranks, const shmemx_uniqueid_t *uid,
                     const shmemx_init_attr_t *attr);

/* Local registration of a non-symmetric buffer as the local side of transfers. */
int shmemx_buffer_register(void *addr, size_t length);
int shmemx_buffer_unregister(void *addr);
int shmemx_buffer_unregister_all(void);

/* Per-PE addresses of one symmetric object, as valid in this process (NULL where
 * the peer is not mapped here). bases must hold shmem_n_pes() pointers. */
int shmemx_heap_bases(const void *sym_addr, void **bases);

/* Memory kind hints for shmem_malloc_with_hints. */
#define SHMEMX_MALLOC_HOST (1L << 16)
#define SHMEMX_MALLOC_DEVICE (1L << 17)

/* Wall-clock time in seconds. */
double shmemx_wtime(void);

#ifdef __cplusplus
}
#endif

#endif /* SHMEMX_H */
