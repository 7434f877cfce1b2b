/* The type tables of the OpenSHMEM spec, shared by the typed tests.
 * X(C type, TYPENAME[, extra]) as each list says. */
#ifndef USHMEM_TEST_TYPES_H
#define USHMEM_TEST_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* Standard RMA types ("Standard RMA Types and Names"): kind F (floating) or I. */
#define TEST_RMA_TYPES(X)                                                                          \
    X(float, float, F)                                                                             \
    X(double, double, F)                                                                           \
    X(long double, longdouble, F)                                                                  \
    X(char, char, I)                                                                               \
    X(signed char, schar, I)                                                                       \
    X(short, short, I)                                                                             \
    X(int, int, I)                                                                                 \
    X(long, long, I)                                                                               \
    X(long long, longlong, I)                                                                      \
    X(unsigned char, uchar, I)                                                                     \
    X(unsigned short, ushort, I)                                                                   \
    X(unsigned int, uint, I)                                                                       \
    X(unsigned long, ulong, I)                                                                     \
    X(unsigned long long, ulonglong, I)                                                            \
    X(int8_t, int8, I)                                                                             \
    X(int16_t, int16, I)                                                                           \
    X(int32_t, int32, I)                                                                           \
    X(int64_t, int64, I)                                                                           \
    X(uint8_t, uint8, I)                                                                           \
    X(uint16_t, uint16, I)                                                                         \
    X(uint32_t, uint32, I)                                                                         \
    X(uint64_t, uint64, I)                                                                         \
    X(size_t, size, I)                                                                             \
    X(ptrdiff_t, ptrdiff, I)

/* Standard AMO types: X(type, name). */
#define TEST_AMO_STD_TYPES(X)                                                                      \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(ptrdiff_t, ptrdiff)

/* Extended AMO types: the standard ones plus float and double; X(type, name, kind). */
#define TEST_AMO_EXT_TYPES(X)                                                                      \
    X(float, float, F)                                                                             \
    X(double, double, F)                                                                           \
    X(int, int, I)                                                                                 \
    X(long, long, I)                                                                               \
    X(long long, longlong, I)                                                                      \
    X(unsigned int, uint, I)                                                                       \
    X(unsigned long, ulong, I)                                                                     \
    X(unsigned long long, ulonglong, I)                                                            \
    X(int32_t, int32, I)                                                                           \
    X(int64_t, int64, I)                                                                           \
    X(uint32_t, uint32, I)                                                                         \
    X(uint64_t, uint64, I)                                                                         \
    X(size_t, size, I)                                                                             \
    X(ptrdiff_t, ptrdiff, I)

/* Bitwise AMO types: X(type, name). */
#define TEST_AMO_BIT_TYPES(X)                                                                      \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)

/* Point-to-point synchronization types: X(type, name, how the producer
 * stores: P = shmem_p only, A = shmem_p and atomic_set). */
#define TEST_SYNC_TYPES(X)                                                                         \
    X(short, short, P)                                                                             \
    X(int, int, A)                                                                                 \
    X(long, long, A)                                                                               \
    X(long long, longlong, A)                                                                      \
    X(unsigned short, ushort, P)                                                                   \
    X(unsigned int, uint, A)                                                                       \
    X(unsigned long, ulong, A)                                                                     \
    X(unsigned long long, ulonglong, A)                                                            \
    X(int32_t, int32, A)                                                                           \
    X(int64_t, int64, A)                                                                           \
    X(uint32_t, uint32, A)                                                                         \
    X(uint64_t, uint64, A)                                                                         \
    X(size_t, size, A)                                                                             \
    X(ptrdiff_t, ptrdiff, A)

#endif
