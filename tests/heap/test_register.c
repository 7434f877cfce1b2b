/* shmemx_buffer_register / unregister / unregister_all statuses.
 * USHMEM_TEST_NPES: 1 2 */
#include "test_util.h"
#include <shmemx.h>

int main(void)
{
    CHECK(shmemx_buffer_register((void *)16, 16) == SHMEMX_ERR_STATE, "register before init");
    shmem_init();
    char *buf = malloc(1 << 16);
    CHECK(shmemx_buffer_register(NULL, 10) == SHMEMX_ERR_INVALID, "null");
    CHECK(shmemx_buffer_register(buf, 0) == SHMEMX_ERR_INVALID, "zero length");
    CHECK(shmemx_buffer_register(buf, 4096) == SHMEMX_SUCCESS, "register");
    CHECK(shmemx_buffer_register(buf + 100, 10) == SHMEMX_ERR_OVERLAP, "inside");
    CHECK(shmemx_buffer_register(buf + 4000, 200) == SHMEMX_ERR_OVERLAP, "straddle");
    CHECK(shmemx_buffer_register(buf + 4096, 4096) == SHMEMX_SUCCESS, "adjacent is fine");
    CHECK(shmemx_buffer_unregister(buf + 5000) == SHMEMX_SUCCESS, "unregister by interior addr");
    CHECK(shmemx_buffer_unregister(buf + 5000) == SHMEMX_ERR_NOTFOUND, "unregister twice");
    CHECK(shmemx_buffer_unregister(NULL) == SHMEMX_ERR_INVALID, "unregister null");
    CHECK(shmemx_buffer_register(buf + 8192, 100) == SHMEMX_SUCCESS, "register 3");
    CHECK(shmemx_buffer_unregister_all() == SHMEMX_SUCCESS, "unregister_all");
    CHECK(shmemx_buffer_unregister(buf) == SHMEMX_ERR_NOTFOUND, "gone after unregister_all");
    CHECK(shmemx_buffer_register(buf, 4096) == SHMEMX_SUCCESS, "register after clear");
    /* a registered buffer works as the local side of transfers */
    long *sym = shmem_malloc(4096);
    int np = shmem_n_pes(), me = shmem_my_pe();
    test_fill(buf, 4096, me, 3);
    shmem_barrier_all();
    shmem_putmem(sym, buf, 4096, (me + 1) % np);
    shmem_barrier_all();
    CHECK(test_verify(sym, 4096, (me + np - 1) % np, 3, NULL), "put from registered buffer");
    CHECK(shmemx_buffer_unregister(buf + 4095) == SHMEMX_SUCCESS, "unregister by last byte");
    shmem_free(sym);
    free(buf);
    shmem_finalize();
    return 0;
}
