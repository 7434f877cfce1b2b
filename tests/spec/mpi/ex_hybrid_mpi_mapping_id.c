/* Spec example: MPI interoperability, mapping PE numbers to MPI ranks. After MPI_Init
 * and shmem_init, every PE contributes its MPI_COMM_WORLD rank to a collect. Checked:
 * the ranks form a permutation of 0..npes-1, and ushmem under mpirun maps PE p to rank
 * p (docs/mpi.md). Run under mpirun (tests/mpi/CMakeLists.txt). */
#include <mpi.h>

#include "../spec_check.h"

int main(int argc, char *argv[])
{
    static long pSync[SHMEM_COLLECT_SYNC_SIZE];
    for (int i = 0; i < SHMEM_COLLECT_SYNC_SIZE; i++)
        pSync[i] = SHMEM_SYNC_VALUE;
    MPI_Init(&argc, &argv);
    shmem_init();
    int mype = shmem_my_pe();
    int npes = shmem_n_pes();
    static int myrank;
    MPI_Comm_rank(MPI_COMM_WORLD, &myrank);
    int *mpi_ranks = shmem_calloc((size_t)npes, sizeof(int));
    shmem_sync_all();
    shmem_collect32(mpi_ranks, &myrank, 1, 0, 0, npes, pSync);
    int seen = 0;
    for (int i = 0; i < npes; i++) {
        SPEC_CHECK(mpi_ranks[i] >= 0 && mpi_ranks[i] < npes && !(seen & (1 << mpi_ranks[i])),
                   "PE %d's MPI rank %d", i, mpi_ranks[i]);
        seen |= 1 << mpi_ranks[i];
        SPEC_CHECK(mpi_ranks[i] == i, "PE %d is MPI rank %d", i, mpi_ranks[i]);
        if (mype == 0)
            printf("PE %d's MPI rank is %d\n", i, mpi_ranks[i]);
    }
    shmem_free(mpi_ranks);
    shmem_finalize();
    MPI_Finalize();
    return 0;
}
