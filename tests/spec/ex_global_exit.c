/* Spec example: shmem_global_exit. PE 0 needs an input file; when it is missing PE 0
 * calls shmem_global_exit(EXIT_FAILURE) while the other PEs are already in
 * shmem_finalize. Checked by the test command, not here: the job ends at once with
 * status 1 (EXIT_FAILURE), not by the timeout. argv[1] names the file ("input.txt"
 * in the spec); the test passes one that does not exist.
 * SPEC_EXIT: 1 */
#include <stdio.h>
#include <stdlib.h>

#include <shmem.h>

int main(int argc, char **argv)
{
    const char *input = argc > 1 ? argv[1] : "input.txt";
    shmem_init();
    int me = shmem_my_pe();
    if (me == 0) {
        FILE *fp = fopen(input, "r");
        if (fp == NULL) /* the input the program needs is not there */
            shmem_global_exit(EXIT_FAILURE);
        fclose(fp); /* "do something with the file" */
    }
    shmem_finalize();
    return 0;
}
