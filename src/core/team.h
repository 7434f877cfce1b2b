/* Team representation: a strided slice of the world. */
#ifndef USHMEM_TEAM_H
#define USHMEM_TEAM_H

#include "core/state.h"

struct ushmem_team {
    int start, stride, size; /* world PEs start + i*stride, i < size */
    int my_pe;               /* index of this PE in the team, -1 if not a member */
};

#endif
