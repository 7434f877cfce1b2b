/* Spec example: MPI interoperability, a communicator whose ranks are the PE numbers
 * (MPI_Comm_split of MPI_COMM_WORLD keyed by shmem_my_pe). Checked: each PE's rank in
 * it equals its PE number, and an MPI_Allreduce over it sums the PE numbers. Run under
 * mpirun (tests/mpi/CMakeLists.txt). */
#include <mpi.h>

#include "../spec_check.h"

int main(int argc, char *argv[])
{
    MPI_Init(&argc, &argv);
    shmem_init();
    int mype = shmem_my_pe();
    int npes = shmem_n_pes();
    MPI_Comm shmem_comm;
    MPI_Comm_split(MPI_COMM_WORLD, 0, mype, &shmem_comm);
    int myrank, size, sum = -1;
    MPI_Comm_rank(shmem_comm, &myrank);
    MPI_Comm_size(shmem_comm, &size);
    SPEC_CHECK(myrank == mype && size == npes, "PE %d is rank %d of %d", mype, myrank, size);
    MPI_Allreduce(&mype, &sum, 1, MPI_INT, MPI_SUM, shmem_comm);
    SPEC_CHECK(sum == npes * (npes - 1) / 2, "sum of PE numbers %d", sum);
    MPI_Comm_free(&shmem_comm);
    shmem_finalize();
    MPI_Finalize();
    return 0;
}
