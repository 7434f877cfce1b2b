/* Spec example: shmem_p. PE 0 writes e into PE 1's heap double; checked: PE 1 reads
 * e ("OK" in the spec), the others keep pi. */
#include <math.h>

#include "spec_check.h"

static const double e = 2.71828182;
static const double epsilon = 0.00000001;

int main(void)
{
    shmem_init();
    int me = shmem_my_pe();
    double *f = shmem_malloc(sizeof(*f));
    *f = 3.1415927;
    shmem_barrier_all();
    if (me == 0)
        shmem_p(f, e, 1);
    shmem_barrier_all();
    if (me == 1)
        SPEC_CHECK(fabs(*f - e) < epsilon, "*f = %.9f, want e", *f);
    else
        SPEC_CHECK(*f == 3.1415927, "*f = %.9f, want pi untouched", *f);
    shmem_free(f);
    shmem_finalize();
    return 0;
}
