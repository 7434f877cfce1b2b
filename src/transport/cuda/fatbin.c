/* The kernels (kernels.cu) as built by nvcc at configure time, embedded in
 * the library. Without nvcc the library has no kernels: the paths that need
 * one say so when used (see cuda.c: ushmemi_cuda_kernel). */
#include <stddef.h>

#include "transport/cuda/cuda_priv.h"

#ifdef USHMEM_CUDA_FATBIN
__asm__(".section .rodata\n"
        ".balign 64\n"
        ".globl ushmemi_cuda_fatbin\n"
        ".hidden ushmemi_cuda_fatbin\n"
        "ushmemi_cuda_fatbin:\n"
        ".incbin \"" USHMEM_CUDA_FATBIN "\"\n"
        ".previous\n");
extern const unsigned char ushmemi_cuda_fatbin[];

const void *ushmemi_cuda_kernels_image(void)
{
    return ushmemi_cuda_fatbin;
}
#else
const void *ushmemi_cuda_kernels_image(void)
{
    return NULL;
}
#endif
