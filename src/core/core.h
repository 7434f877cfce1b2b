/* Core lifecycle pieces wired together by init.c. */
#ifndef USHMEM_CORE_H
#define USHMEM_CORE_H

#include "bootstrap/bootstrap.h"
#include "core/state.h"

#ifndef USHMEM_VERSION_STRING
#define USHMEM_VERSION_STRING "0.1.0"
#endif

const ushmemi_bootstrap_t *ushmemi_bootstrap(void);

/* Transport selection (src/core/route.c): one transport per peer. */
int ushmemi_transports_init(const char *call);
void ushmemi_transports_fini(void);
int ushmemi_pe_reachable(int pe);
const char *ushmemi_pe_transport_name(int pe);

/* Teams (src/core/team.c): SHMEM_TEAM_WORLD / SHMEM_TEAM_SHARED live here. */
int ushmemi_teams_init(const char *call);
void ushmemi_teams_fini(void);

#endif
