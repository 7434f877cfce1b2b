/* mpp/shmem.h: the deprecated header location that OpenSHMEM 1.5 and 1.6 still list; older
 * programs and suites (the Cray SMA tests) include <mpp/shmem.h>. It is <shmem.h>. */
#include "../shmem.h"
