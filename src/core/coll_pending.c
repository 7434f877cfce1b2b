/* TEMPORARY: link placeholders until src/coll/ (teams/collectives, being
 * written now) lands. The owner of src/coll/ deletes this file when its own
 * definitions exist. Every function fails loudly; none is reported as done. */
#include "core/prims.h"

#define PENDING(call) ushmemi_fatal(call, "collectives are not built yet")

int ushmemi_broadcast(shmem_team_t t, void *d, const void *s, size_t n, int r, const char *call)
{
    (void)t, (void)d, (void)s, (void)n, (void)r;
    PENDING(call);
}
int ushmemi_collect(shmem_team_t t, void *d, const void *s, size_t n, const char *call)
{
    (void)t, (void)d, (void)s, (void)n;
    PENDING(call);
}
int ushmemi_fcollect(shmem_team_t t, void *d, const void *s, size_t n, const char *call)
{
    (void)t, (void)d, (void)s, (void)n;
    PENDING(call);
}
int ushmemi_alltoall(shmem_team_t t, void *d, const void *s, size_t n, const char *call)
{
    (void)t, (void)d, (void)s, (void)n;
    PENDING(call);
}
int ushmemi_alltoalls(shmem_team_t t, void *d, const void *s, ptrdiff_t a, ptrdiff_t b, size_t n,
                      size_t e, const char *call)
{
    (void)t, (void)d, (void)s, (void)a, (void)b, (void)n, (void)e;
    PENDING(call);
}
int ushmemi_reduce(shmem_team_t t, void *d, const void *s, size_t n, int dt, ushmemi_redop_t op,
                   const char *call)
{
    (void)t, (void)d, (void)s, (void)n, (void)dt, (void)op;
    PENDING(call);
}
int ushmemi_scan(shmem_team_t t, void *d, const void *s, size_t n, int dt, int ex, const char *call)
{
    (void)t, (void)d, (void)s, (void)n, (void)dt, (void)ex;
    PENDING(call);
}
shmem_team_t ushmemi_active_set_team(int a, int b, int c, const char *call)
{
    (void)a, (void)b, (void)c;
    PENDING(call);
}
