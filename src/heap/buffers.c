/* Local buffer registration (shmemx_buffer_register / _unregister /
 * _unregister_all): the table of this process's registered ranges (heap/reg.c),
 * made with the heap at init and dropped with it at finalize, under a lock of
 * its own. No transport looks ranges up today: every path copies from any
 * local memory, registered or not. */
#include <pthread.h>

#include "core/prims.h"
#include "heap/heap.h"
#include "heap/reg.h"

static ushmemi_reg_t *registry;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

int ushmemi_buffers_init(void)
{
    pthread_mutex_lock(&reg_lock);
    int rc = ushmemi_reg_create(&registry);
    pthread_mutex_unlock(&reg_lock);
    return rc;
}

void ushmemi_buffers_fini(void)
{
    pthread_mutex_lock(&reg_lock);
    ushmemi_reg_destroy(registry);
    registry = NULL;
    pthread_mutex_unlock(&reg_lock);
}

static int reg_status(int rc)
{
    switch (rc) {
    case 0: return SHMEMX_SUCCESS;
    case USHMEM_EOVERLAP: return SHMEMX_ERR_OVERLAP;
    case USHMEM_ENOTFOUND: return SHMEMX_ERR_NOTFOUND;
    case USHMEM_ENOMEM: return SHMEMX_ERR_NOMEM;
    default: return SHMEMX_ERR_INVALID;
    }
}

USHMEMI_API int shmemx_buffer_register(void *addr, size_t length)
{
    static const char call[] = "shmemx_buffer_register";
    USHMEMI_CHECK_INIT_STATUS(call);
    if (!addr || length == 0) {
        ushmemi_error(call, "%s", !addr ? "address is NULL" : "length is 0");
        return SHMEMX_ERR_INVALID;
    }
    pthread_mutex_lock(&reg_lock);
    int rc = ushmemi_reg_add(registry, addr, length);
    pthread_mutex_unlock(&reg_lock);
    if (rc)
        ushmemi_error(call, "cannot register [%p, +%zu): %s", addr, length, ushmemi_strerror(rc));
    return reg_status(rc);
}

USHMEMI_API int shmemx_buffer_unregister(void *addr)
{
    static const char call[] = "shmemx_buffer_unregister";
    USHMEMI_CHECK_INIT_STATUS(call);
    if (!addr) {
        ushmemi_error(call, "address is NULL");
        return SHMEMX_ERR_INVALID;
    }
    pthread_mutex_lock(&reg_lock);
    int rc = ushmemi_reg_remove(registry, addr);
    pthread_mutex_unlock(&reg_lock);
    if (rc)
        ushmemi_error(call, "%p is not inside a registered buffer", addr);
    return reg_status(rc);
}

USHMEMI_API int shmemx_buffer_unregister_all(void)
{
    USHMEMI_CHECK_INIT_STATUS("shmemx_buffer_unregister_all");
    pthread_mutex_lock(&reg_lock);
    ushmemi_reg_clear(registry);
    pthread_mutex_unlock(&reg_lock);
    return SHMEMX_SUCCESS;
}
