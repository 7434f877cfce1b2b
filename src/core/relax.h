/* A pause for spin loops: tells the CPU this thread is waiting (x86 `pause`,
 * arm64 `yield`), so a sibling hyperthread gets the core's resources and the
 * loop does not flood the memory pipeline. Header only: the core, the MPI
 * module and the proxy's ring (also compiled into tests) use it. */
#ifndef USHMEM_CORE_RELAX_H
#define USHMEM_CORE_RELAX_H

static inline void ushmemi_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif
