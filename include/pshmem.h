/* pshmem.h: the pshmem_ profiling names of every OpenSHMEM routine (the name
 * tools include, as with other OpenSHMEM implementations). */
#ifndef PSHMEM_H
#define PSHMEM_H
#include <shmem.h>
#include "pshmem_gen.h"
#endif
