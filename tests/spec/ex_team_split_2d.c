/* Spec example: shmem_team_split_2d. SHMEM_TEAM_WORLD is split into x teams (xdim wide)
 * and yz teams, each yz team into y teams (ydim wide) and z teams; the PEs then report
 * their (x, y, z) in order. The spec uses xdim 3, ydim 4 (at least 12 PEs); at fewer PEs
 * this uses 2 x 2, or 2 x 1 (noted in README). Checked: each PE's coordinates are
 * (pe % xdim, (pe / xdim) % ydim, pe / (xdim * ydim)), the spec's expected output,
 * and the printing loop visits every PE exactly once.
 * SPEC_NPES: 2 4 12 */
#include "spec_check.h"

int main(void)
{
    int xdim = 3;
    int ydim = 4;
    static int visits; /* on PE 0 */
    shmem_init();
    int pe = shmem_my_pe();
    int npes = shmem_n_pes();
    if (npes < xdim * ydim) {
        xdim = 2;
        ydim = npes >= 4 ? 2 : 1;
    }
    int zdim = (npes / (xdim * ydim)) + (((npes % (xdim * ydim)) > 0) ? 1 : 0);
    shmem_team_t xteam, yzteam, yteam, zteam;
    int rc = shmem_team_split_2d(SHMEM_TEAM_WORLD, xdim, NULL, 0, &xteam, NULL, 0, &yzteam);
    SPEC_CHECK(rc == 0, "first split returned %d", rc);
    /* no synchronization is needed between these splits: yzteam is ready at once */
    rc = shmem_team_split_2d(yzteam, ydim, NULL, 0, &yteam, NULL, 0, &zteam);
    SPEC_CHECK(rc == 0, "second split returned %d", rc);
    shmem_team_destroy(yzteam);
    int my_x = shmem_team_my_pe(xteam);
    int my_y = shmem_team_my_pe(yteam);
    int my_z = shmem_team_my_pe(zteam);
    SPEC_CHECK(my_x == pe % xdim && my_y == (pe / xdim) % ydim && my_z == pe / (xdim * ydim),
               "(%d, %d, %d) for PE %d in %d x %d", my_x, my_y, my_z, pe, xdim, ydim);
    for (int zdx = 0; zdx < zdim; zdx++)
        for (int ydx = 0; ydx < ydim; ydx++)
            for (int xdx = 0; xdx < xdim; xdx++) {
                if ((my_x == xdx) && (my_y == ydx) && (my_z == zdx)) {
                    printf("(%d, %d, %d) is me = %d\n", my_x, my_y, my_z, pe);
                    shmem_atomic_inc(&visits, 0);
                }
                shmem_team_sync(SHMEM_TEAM_WORLD);
            }
    shmem_barrier_all();
    if (pe == 0)
        SPEC_CHECK(visits == npes, "%d PEs found themselves, want %d", visits, npes);
    shmem_team_destroy(xteam);
    shmem_team_destroy(yteam);
    shmem_team_destroy(zteam);
    shmem_finalize();
    return 0;
}
