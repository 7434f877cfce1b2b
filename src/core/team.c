/* Teams. SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED are created at init. */
#include <stdlib.h>

#include "core/core.h"
#include "core/team.h"

static struct ushmem_team team_world, team_shared;
USHMEMI_API shmem_team_t SHMEM_TEAM_WORLD = &team_world;
USHMEMI_API shmem_team_t SHMEM_TEAM_SHARED = &team_shared;

int ushmemi_teams_init(const char *call)
{
    (void)call;
    team_world.start = 0;
    team_world.stride = 1;
    team_world.size = ushmemi_g.n_pes;
    team_world.my_pe = ushmemi_g.my_pe;
    /* Every PE this one maps directly; on one host that is the whole job. */
    team_shared = team_world;
    return 0;
}

void ushmemi_teams_fini(void) {}
