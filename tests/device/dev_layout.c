/* The layout of shmemx_dev_t as this C compiler sees it, one `name offset size`
 * line per field in declaration order, then `shmemx_dev_t 0 sizeof`. The
 * Python binding mirrors the struct with ctypes and compares against this
 * output; compile.sh header_c checks the order, gaps and total size. */
#include <stddef.h>
#include <stdio.h>

#include <shmemx_device_types.h>

/* Every field of shmemx_dev_t, in declaration order. A field missing here
 * shows up as a gap in the check. */
#define DEV_FIELDS(X)                                                                              \
    X(magic)                                                                                       \
    X(version)                                                                                     \
    X(my_pe)                                                                                       \
    X(n_pes)                                                                                       \
    X(team_start)                                                                                  \
    X(team_stride)                                                                                 \
    X(world_pe)                                                                                    \
    X(world_n_pes)                                                                                 \
    X(team_slot)                                                                                   \
    X(flags)                                                                                       \
    X(wait_reason)                                                                                 \
    X(gpu_pes)                                                                                     \
    X(sm_sum)                                                                                      \
    X(sm_total)                                                                                    \
    X(gpu_pci)                                                                                     \
    X(reserved0)                                                                                   \
    X(heap_base)                                                                                   \
    X(heap_size)                                                                                   \
    X(peer_base)                                                                                   \
    X(sync)                                                                                        \
    X(abort_flag)                                                                                  \
    X(wait_timeout_ns)                                                                             \
    X(proxy)                                                                                       \
    X(reserved)                                                                                    \
    X(near_first)                                                                                  \
    X(near_n)                                                                                      \
    X(near_base)

int main(void)
{
#define DEV_FIELD_PRINT(f)                                                                         \
    printf("%s %zu %zu\n", #f, offsetof(shmemx_dev_t, f), sizeof(((shmemx_dev_t *)0)->f));
    DEV_FIELDS(DEV_FIELD_PRINT)
#undef DEV_FIELD_PRINT
    printf("shmemx_dev_t 0 %zu\n", sizeof(shmemx_dev_t));
    return 0;
}
