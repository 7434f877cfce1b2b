/* Checks for the spec example tests: a failed check prints
 * "PE n: <file>:<line>: <what>" and exits 1, which makes ushrun stop the job. */
#ifndef USHMEM_SPEC_CHECK_H
#define USHMEM_SPEC_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <shmem.h>

#define SPEC_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", shmem_my_pe(), __FILE__, __LINE__, \
                    #cond);                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#endif
