/* The floor the staged proxy is measured against: what plain MPI costs
 * between two ranks' host buffers with the same MPI on the same machine.
 * mpirun -n 2 ./mpi_floor [max_bytes]. Rows (median of REPS batches):
 *   mpi_put8+flush_us   MPI_Put of 8 bytes + MPI_Win_flush
 *   mpi_pingpong_rtt_us 8-byte MPI_Send / MPI_Recv round trip
 *   mpi_put_bw_GBps N   N-byte MPI_Put back to back, one flush per batch */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS 7

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v)
{
    qsort(v, REPS, sizeof *v, cmp);
    return v[REPS / 2];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    size_t maxsz = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)64 << 20;
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np != 2) {
        if (me == 0)
            fprintf(stderr, "mpi_floor: run with 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    char *win_mem, *src = malloc(maxsz);
    MPI_Win win;
    MPI_Win_allocate((MPI_Aint)maxsz, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_mem, &win);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    for (size_t i = 0; i < maxsz; i++)
        src[i] = (char)(i * 7 + 1);
    double t[REPS];
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        int iters = 2000;
        for (int r = 0; r < REPS; r++) {
            double t0 = MPI_Wtime();
            for (int i = 0; i < iters; i++) {
                MPI_Put(src, 8, MPI_BYTE, 1, 0, 8, MPI_BYTE, win);
                MPI_Win_flush(1, win);
            }
            t[r] = (MPI_Wtime() - t0) * 1e6 / iters;
        }
        printf("mpi_put8+flush_us %.3f\n", median(t));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int iters = 2000;
    char b8[8] = {0};
    for (int r = 0; r < REPS; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (me == 0) {
                MPI_Send(b8, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(b8, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(b8, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(b8, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        t[r] = (MPI_Wtime() - t0) * 1e6 / iters;
    }
    if (me == 0)
        printf("mpi_pingpong_rtt_us %.3f\n", median(t));
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        for (size_t n = 8; n <= maxsz; n *= 8) {
            size_t total = n < ((size_t)64 << 20) ? (size_t)64 << 20 : n;
            int batch = (int)(total / n);
            if (batch > 20000)
                batch = 20000;
            for (int r = 0; r < REPS; r++) {
                double t0 = MPI_Wtime();
                for (int i = 0; i < batch; i++)
                    MPI_Put(src, (int)n, MPI_BYTE, 1, 0, (int)n, MPI_BYTE, win);
                MPI_Win_flush(1, win);
                t[r] = (double)n * batch / ((MPI_Wtime() - t0) * 1e9);
            }
            printf("mpi_put_bw_GBps %zu %.3f\n", n, median(t));
            if (n < 1024 * 1024 && n * 8 > 1024 * 1024 && maxsz >= 1024 * 1024)
                n = 1024 * 1024 / 8;
        }
        /* the data landed */
        MPI_Win_flush(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 1 && memcmp(win_mem, src, 8)) {
        fprintf(stderr, "mpi_floor: data differs\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(src);
    MPI_Finalize();
    return 0;
}
