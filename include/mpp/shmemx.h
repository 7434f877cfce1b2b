/* mpp/shmemx.h: the deprecated location of the extensions header (see mpp/shmem.h). It is
 * <shmemx.h>. */
#include "../shmemx.h"
