/* ushmem device API: waits and tests on several words (OpenSHMEM 1.5's
 * wait_until_all/any/some, their _vector forms and test_all/any/some), in
 * device form. docs/device.md is the user guide; shmemx_device.cuh includes
 * this header.
 *
 * As shmemx_dev_wait_until: the words are this PE's own (symmetric), each is
 * read with a system-scope acquire load, a wait checks the job's abort word and
 * USHMEM_DEVICE_WAIT_TIMEOUT as it spins, and waits refuse (one line, then a
 * trap) where device waits are off; tests never spin and are always allowed.
 * One thread calls each. status (may be NULL): nonzero entries leave that
 * index out. Types: 2-, 4- and 8-byte integers (templates), and the
 * type-named forms of the OpenSHMEM point-to-point synchronization types
 * (shmemx_dev_TYPENAME_wait_until_all, ...).
 *
 * Fairness: test_any and wait_until_any start their scan past the index this
 * PE returned last (one word per PE in the device sync area, as the host's
 * one counter per process), so indices that stay satisfied come round-robin. */
#ifndef SHMEMX_DEVICE_WAIT_CUH
#define SHMEMX_DEVICE_WAIT_CUH

#include "shmemx_device.cuh"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__) || (defined(__clang__) && defined(__CUDA__))

#define USHMEMI_DEV_SIZE_MAX (~(size_t)0) /* SIZE_MAX, NVRTC too */

template <typename T> struct ushmemi_dev_wait_type {
    enum { ok = 0 };
};
#define USHMEMI_DEV_WAIT_TYPE(T)                                                                   \
    template <> struct ushmemi_dev_wait_type<T> {                                                  \
        enum { ok = 1 };                                                                           \
    };
USHMEMI_DEV_WAIT_TYPE(short)
USHMEMI_DEV_WAIT_TYPE(unsigned short)
USHMEMI_DEV_WAIT_TYPE(int)
USHMEMI_DEV_WAIT_TYPE(unsigned int)
USHMEMI_DEV_WAIT_TYPE(long)
USHMEMI_DEV_WAIT_TYPE(unsigned long)
USHMEMI_DEV_WAIT_TYPE(long long)
USHMEMI_DEV_WAIT_TYPE(unsigned long long)
#undef USHMEMI_DEV_WAIT_TYPE

/* One word, acquire (2-, 4- or 8-byte integers). */
template <typename T, int S = sizeof(T)> struct ushmemi_dev_wload;
template <typename T> struct ushmemi_dev_wload<T, 2> {
    static __device__ __forceinline__ T load(const T *p)
    {
        unsigned short v;
        asm volatile("ld.acquire.sys.global.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
        return (T)v;
    }
};
template <typename T> struct ushmemi_dev_wload<T, 4> {
    static __device__ __forceinline__ T load(const T *p)
    {
        return (T)ushmemi_dev_ld_acquire32(p);
    }
};
template <typename T> struct ushmemi_dev_wload<T, 8> {
    static __device__ __forceinline__ T load(const T *p)
    {
        return (T)ushmemi_dev_ld_acquire64(p);
    }
};
template <typename T> SHMEMX_DEV_FN T ushmemi_dev_wait_load(const T *p)
{
    static_assert(ushmemi_dev_wait_type<T>::ok, "device waits take 2-, 4- and 8-byte integers");
    return ushmemi_dev_wload<T>::load(p);
}

/* Whether index i takes part, and its comparison value. */
SHMEMX_DEV_FN bool ushmemi_dev_included(const int *status, size_t i)
{
    return !status || status[i] == 0;
}
template <typename T>
SHMEMX_DEV_FN bool ushmemi_dev_satisfied(const T *ivars, size_t i, int cmp, T value,
                                         const T *values)
{
    return ushmemi_dev_cmp(ushmemi_dev_wait_load(ivars + i), cmp, values ? values[i] : value);
}

template <typename T>
SHMEMX_DEV_FN void ushmemi_dev_check_words(const shmemx_dev_t &d, const T *ivars, size_t nelems,
                                           int cmp, const char *call)
{
    ushmemi_dev_check_cmp(d, cmp, call);
    ushmemi_dev_check_sym(d, ivars, nelems * sizeof(T), call);
}

SHMEMX_DEV_FN size_t *ushmemi_dev_any_next(const shmemx_dev_t &d)
{
    return (size_t *)(uintptr_t)(d.sync + SHMEMX_DEV_ANY_OFF);
}

/* One scan from the fair start: the first satisfied index, or SIZE_MAX. */
template <typename T>
SHMEMX_DEV_FN size_t ushmemi_dev_test_any(const shmemx_dev_t &d, const T *ivars, size_t nelems,
                                          const int *status, int cmp, T value, const T *values)
{
    if (!nelems)
        return USHMEMI_DEV_SIZE_MAX;
    volatile size_t *next = ushmemi_dev_any_next(d);
    size_t start = *next % nelems;
    for (size_t k = 0, i = start; k < nelems; k++, i = i + 1 == nelems ? 0 : i + 1)
        if (ushmemi_dev_included(status, i) &&
            ushmemi_dev_satisfied(ivars, i, cmp, value, values)) {
            *next = i + 1;
            return i;
        }
    return USHMEMI_DEV_SIZE_MAX;
}

template <typename T>
SHMEMX_DEV_FN size_t ushmemi_dev_test_some(const T *ivars, size_t nelems, size_t *indices,
                                           const int *status, int cmp, T value, const T *values)
{
    size_t n = 0;
    for (size_t i = 0; i < nelems; i++)
        if (ushmemi_dev_included(status, i) && ushmemi_dev_satisfied(ivars, i, cmp, value, values))
            indices[n++] = i;
    return n;
}

SHMEMX_DEV_FN bool ushmemi_dev_any_included(const int *status, size_t nelems)
{
    for (size_t i = 0; i < nelems; i++)
        if (ushmemi_dev_included(status, i))
            return true;
    return false;
}

/* Each included index once observed satisfying the condition (walking
 * forward; a word may change again after, as the spec allows). */
template <typename T>
SHMEMX_DEV_FN void ushmemi_dev_wait_all(const shmemx_dev_t &d, const T *ivars, size_t nelems,
                                        const int *status, int cmp, T value, const T *values,
                                        const char *call)
{
    ushmemi_dev_wait_gate(d, call);
    ushmemi_dev_check_words(d, ivars, nelems, cmp, call);
    for (size_t i = 0; i < nelems; i++) {
        if (!ushmemi_dev_included(status, i))
            continue;
        uint64_t t0 = 0;
        for (unsigned polls = 1; !ushmemi_dev_satisfied(ivars, i, cmp, value, values); polls++)
            ushmemi_dev_wait_tick(d, polls, &t0, ivars + i, call);
    }
}

template <typename T>
SHMEMX_DEV_FN size_t ushmemi_dev_wait_any(const shmemx_dev_t &d, const T *ivars, size_t nelems,
                                          const int *status, int cmp, T value, const T *values,
                                          const char *call)
{
    ushmemi_dev_wait_gate(d, call);
    ushmemi_dev_check_words(d, ivars, nelems, cmp, call);
    if (!ushmemi_dev_any_included(status, nelems))
        return USHMEMI_DEV_SIZE_MAX;
    uint64_t t0 = 0;
    for (unsigned polls = 1;; polls++) {
        size_t i = ushmemi_dev_test_any(d, ivars, nelems, status, cmp, value, values);
        if (i != USHMEMI_DEV_SIZE_MAX)
            return i;
        ushmemi_dev_wait_tick(d, polls, &t0, ivars, call);
    }
}

template <typename T>
SHMEMX_DEV_FN size_t ushmemi_dev_wait_some(const shmemx_dev_t &d, const T *ivars, size_t nelems,
                                           size_t *indices, const int *status, int cmp, T value,
                                           const T *values, const char *call)
{
    ushmemi_dev_wait_gate(d, call);
    ushmemi_dev_check_words(d, ivars, nelems, cmp, call);
    if (!ushmemi_dev_any_included(status, nelems))
        return 0;
    uint64_t t0 = 0;
    for (unsigned polls = 1;; polls++) {
        size_t n = ushmemi_dev_test_some(ivars, nelems, indices, status, cmp, value, values);
        if (n)
            return n;
        ushmemi_dev_wait_tick(d, polls, &t0, ivars, call);
    }
}

/* ---- the API: one thread calls each ---- */

/* Until every included ivars[i] satisfies cmp cmp_value (cmp_values[i]). */
template <typename T>
SHMEMX_DEV_FN void shmemx_dev_wait_until_all(const shmemx_dev_t &d, T *ivars, size_t nelems,
                                             const int *status, int cmp, T cmp_value)
{
    ushmemi_dev_wait_all(d, ivars, nelems, status, cmp, cmp_value, (const T *)0,
                         "shmemx_dev_wait_until_all");
}
template <typename T>
SHMEMX_DEV_FN void shmemx_dev_wait_until_all_vector(const shmemx_dev_t &d, T *ivars, size_t nelems,
                                                    const int *status, int cmp, const T *cmp_values)
{
    ushmemi_dev_wait_all(d, ivars, nelems, status, cmp, T(), cmp_values,
                         "shmemx_dev_wait_until_all_vector");
}
/* Until one included index satisfies it: that index (SIZE_MAX when none is
 * included). */
template <typename T>
SHMEMX_DEV_FN size_t shmemx_dev_wait_until_any(const shmemx_dev_t &d, T *ivars, size_t nelems,
                                               const int *status, int cmp, T cmp_value)
{
    return ushmemi_dev_wait_any(d, ivars, nelems, status, cmp, cmp_value, (const T *)0,
                                "shmemx_dev_wait_until_any");
}
template <typename T>
SHMEMX_DEV_FN size_t shmemx_dev_wait_until_any_vector(const shmemx_dev_t &d, T *ivars,
                                                      size_t nelems, const int *status, int cmp,
                                                      const T *cmp_values)
{
    return ushmemi_dev_wait_any(d, ivars, nelems, status, cmp, T(), cmp_values,
                                "shmemx_dev_wait_until_any_vector");
}
/* Until at least one satisfies it: how many, their indices in indices[]
 * (room for nelems); 0 when none is included. */
template <typename T>
SHMEMX_DEV_FN size_t shmemx_dev_wait_until_some(const shmemx_dev_t &d, T *ivars, size_t nelems,
                                                size_t *indices, const int *status, int cmp,
                                                T cmp_value)
{
    return ushmemi_dev_wait_some(d, ivars, nelems, indices, status, cmp, cmp_value, (const T *)0,
                                 "shmemx_dev_wait_until_some");
}
template <typename T>
SHMEMX_DEV_FN size_t shmemx_dev_wait_until_some_vector(const shmemx_dev_t &d, T *ivars,
                                                       size_t nelems, size_t *indices,
                                                       const int *status, int cmp,
                                                       const T *cmp_values)
{
    return ushmemi_dev_wait_some(d, ivars, nelems, indices, status, cmp, T(), cmp_values,
                                 "shmemx_dev_wait_until_some_vector");
}

/* The same questions once: 1 if every included index satisfies it now (also
 * when none is included), else 0. */
template <typename T>
SHMEMX_DEV_FN int shmemx_dev_test_all(const shmemx_dev_t &d, T *ivars, size_t nelems,
                                      const int *status, int cmp, T cmp_value)
{
    ushmemi_dev_check_words(d, ivars, nelems, cmp, "shmemx_dev_test_all");
    for (size_t i = 0; i < nelems; i++)
        if (ushmemi_dev_included(status, i) &&
            !ushmemi_dev_satisfied(ivars, i, cmp, cmp_value, (const T *)0))
            return 0;
    return 1;
}
template <typename T>
SHMEMX_DEV_FN int shmemx_dev_test_all_vector(const shmemx_dev_t &d, T *ivars, size_t nelems,
                                             const int *status, int cmp, const T *cmp_values)
{
    ushmemi_dev_check_words(d, ivars, nelems, cmp, "shmemx_dev_test_all_vector");
    for (size_t i = 0; i < nelems; i++)
        if (ushmemi_dev_included(status, i) &&
            !ushmemi_dev_satisfied(ivars, i, cmp, T(), cmp_values))
            return 0;
    return 1;
}
/* An included index that satisfies it now, or SIZE_MAX. */
template <typename T>
SHMEMX_DEV_FN size_t shmemx_dev_test_any(const shmemx_dev_t &d, T *ivars, size_t nelems,
                                         const int *status, int cmp, T cmp_value)
{
    ushmemi_dev_check_words(d, ivars, nelems, cmp, "shmemx_dev_test_any");
    return ushmemi_dev_test_any(d, ivars, nelems, status, cmp, cmp_value, (const T *)0);
}
template <typename T>
SHMEMX_DEV_FN size_t shmemx_dev_test_any_vector(const shmemx_dev_t &d, T *ivars, size_t nelems,
                                                const int *status, int cmp, const T *cmp_values)
{
    ushmemi_dev_check_words(d, ivars, nelems, cmp, "shmemx_dev_test_any_vector");
    return ushmemi_dev_test_any(d, ivars, nelems, status, cmp, T(), cmp_values);
}
/* How many included indices satisfy it now, their indices in indices[]. */
template <typename T>
SHMEMX_DEV_FN size_t shmemx_dev_test_some(const shmemx_dev_t &d, T *ivars, size_t nelems,
                                          size_t *indices, const int *status, int cmp, T cmp_value)
{
    ushmemi_dev_check_words(d, ivars, nelems, cmp, "shmemx_dev_test_some");
    return ushmemi_dev_test_some(ivars, nelems, indices, status, cmp, cmp_value, (const T *)0);
}
template <typename T>
SHMEMX_DEV_FN size_t shmemx_dev_test_some_vector(const shmemx_dev_t &d, T *ivars, size_t nelems,
                                                 size_t *indices, const int *status, int cmp,
                                                 const T *cmp_values)
{
    ushmemi_dev_check_words(d, ivars, nelems, cmp, "shmemx_dev_test_some_vector");
    return ushmemi_dev_test_some(ivars, nelems, indices, status, cmp, T(), cmp_values);
}

/* Type-named forms: shmemx_dev_TYPENAME_{wait_until,test}_{all,any,some}{,_vector}
 * for OpenSHMEM 1.5's point-to-point synchronization types (Table 9);
 * templates with nothing to deduce, so a program pays only for those it calls. */
/* clang-format off */
#define USHMEMI_DEV_WAIT_TYPES(X)                                                                  \
    X(short, short)                                                                                \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(unsigned short, ushort)                                                                      \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(decltype((char *)0 - (char *)0), ptrdiff)
/* clang-format on */
#define USHMEMI_DEV_TYPED_WAIT(T, N)                                                               \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN void shmemx_dev_##N##_wait_until_all(                                            \
        const shmemx_dev_t &d, T *ivars, size_t nelems, const int *status, int cmp, T cmp_value)   \
    {                                                                                              \
        shmemx_dev_wait_until_all<T>(d, ivars, nelems, status, cmp, cmp_value);                    \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN void shmemx_dev_##N##_wait_until_all_vector(const shmemx_dev_t &d, T *ivars,     \
                                                              size_t nelems, const int *status,    \
                                                              int cmp, const T *cmp_values)        \
    {                                                                                              \
        shmemx_dev_wait_until_all_vector<T>(d, ivars, nelems, status, cmp, cmp_values);            \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN size_t shmemx_dev_##N##_wait_until_any(                                          \
        const shmemx_dev_t &d, T *ivars, size_t nelems, const int *status, int cmp, T cmp_value)   \
    {                                                                                              \
        return shmemx_dev_wait_until_any<T>(d, ivars, nelems, status, cmp, cmp_value);             \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN size_t shmemx_dev_##N##_wait_until_any_vector(const shmemx_dev_t &d, T *ivars,   \
                                                                size_t nelems, const int *status,  \
                                                                int cmp, const T *cmp_values)      \
    {                                                                                              \
        return shmemx_dev_wait_until_any_vector<T>(d, ivars, nelems, status, cmp, cmp_values);     \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN size_t shmemx_dev_##N##_wait_until_some(const shmemx_dev_t &d, T *ivars,         \
                                                          size_t nelems, size_t *indices,          \
                                                          const int *status, int cmp, T cmp_value) \
    {                                                                                              \
        return shmemx_dev_wait_until_some<T>(d, ivars, nelems, indices, status, cmp, cmp_value);   \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN size_t shmemx_dev_##N##_wait_until_some_vector(                                  \
        const shmemx_dev_t &d, T *ivars, size_t nelems, size_t *indices, const int *status,        \
        int cmp, const T *cmp_values)                                                              \
    {                                                                                              \
        return shmemx_dev_wait_until_some_vector<T>(d, ivars, nelems, indices, status, cmp,        \
                                                    cmp_values);                                   \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN int shmemx_dev_##N##_test_all(const shmemx_dev_t &d, T *ivars, size_t nelems,    \
                                                const int *status, int cmp, T cmp_value)           \
    {                                                                                              \
        return shmemx_dev_test_all<T>(d, ivars, nelems, status, cmp, cmp_value);                   \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN int shmemx_dev_##N##_test_all_vector(const shmemx_dev_t &d, T *ivars,            \
                                                       size_t nelems, const int *status, int cmp,  \
                                                       const T *cmp_values)                        \
    {                                                                                              \
        return shmemx_dev_test_all_vector<T>(d, ivars, nelems, status, cmp, cmp_values);           \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN size_t shmemx_dev_##N##_test_any(const shmemx_dev_t &d, T *ivars, size_t nelems, \
                                                   const int *status, int cmp, T cmp_value)        \
    {                                                                                              \
        return shmemx_dev_test_any<T>(d, ivars, nelems, status, cmp, cmp_value);                   \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN size_t shmemx_dev_##N##_test_any_vector(const shmemx_dev_t &d, T *ivars,         \
                                                          size_t nelems, const int *status,        \
                                                          int cmp, const T *cmp_values)            \
    {                                                                                              \
        return shmemx_dev_test_any_vector<T>(d, ivars, nelems, status, cmp, cmp_values);           \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN size_t shmemx_dev_##N##_test_some(const shmemx_dev_t &d, T *ivars,               \
                                                    size_t nelems, size_t *indices,                \
                                                    const int *status, int cmp, T cmp_value)       \
    {                                                                                              \
        return shmemx_dev_test_some<T>(d, ivars, nelems, indices, status, cmp, cmp_value);         \
    }                                                                                              \
    template <int = 0>                                                                             \
    SHMEMX_DEV_FN size_t shmemx_dev_##N##_test_some_vector(                                        \
        const shmemx_dev_t &d, T *ivars, size_t nelems, size_t *indices, const int *status,        \
        int cmp, const T *cmp_values)                                                              \
    {                                                                                              \
        return shmemx_dev_test_some_vector<T>(d, ivars, nelems, indices, status, cmp, cmp_values); \
    }
USHMEMI_DEV_WAIT_TYPES(USHMEMI_DEV_TYPED_WAIT)
#undef USHMEMI_DEV_TYPED_WAIT
#undef USHMEMI_DEV_WAIT_TYPES

#endif /* device compilation */

#endif /* SHMEMX_DEVICE_WAIT_CUH */
