/* Global and static variables are symmetric: put/get/atomics on .data and
 * .bss objects between processes.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include "test_util.h"

int global_data[256] = {42};   /* .data */
long global_bss_counter;       /* .bss */
static double static_arr[512]; /* static .bss */
static struct {
    int tag;
    char text[61];
} static_struct = {5, "initialized before shmem_init must survive the remap"};

int main(void)
{
    global_data[1] = 4242; /* written before init: must survive */
    shmem_init();
    int me = shmem_my_pe(), np = shmem_n_pes();
    int to = (me + 1) % np, from = (me + np - 1) % np;
    CHECK(global_data[0] == 42 && global_data[1] == 4242, "initial .data lost in remap");
    CHECK(static_struct.tag == 5 &&
              !strcmp(static_struct.text, "initialized before shmem_init must survive the remap"),
          "static initializer lost");

    /* every PE increments PE 0's .bss counter; fetch_add returns distinct values */
    enum { N = 1000 };
    for (int i = 0; i < N; i++)
        shmem_long_atomic_add(&global_bss_counter, 1, 0);
    shmem_barrier_all();
    if (me == 0)
        CHECK(global_bss_counter == (long)N * np, "counter %ld want %ld", global_bss_counter,
              (long)N * np);
    shmem_barrier_all();

    /* put random ints into the next PE's .data array; get the static doubles */
    int src[256];
    test_fill(src, sizeof src, me, 1);
    for (int i = 0; i < 512; i++)
        static_arr[i] = me + i / 1024.0;
    shmem_barrier_all();
    shmem_int_put(global_data, src, 256, to);
    shmem_barrier_all();
    CHECK(test_verify(global_data, sizeof global_data, from, 1, NULL), ".data put from PE %d",
          from);
    double got[512];
    shmem_double_get(got, static_arr, 512, from);
    for (int i = 0; i < 512; i++)
        CHECK(got[i] == from + i / 1024.0, "static .bss get [%d] = %f", i, got[i]);

    /* a ring of swaps on a static struct field */
    shmem_barrier_all();
    int old = shmem_int_atomic_swap(&static_struct.tag, 100 + me, to);
    CHECK(old == 5, "swap returned %d", old);
    shmem_barrier_all();
    CHECK(static_struct.tag == 100 + from, "tag %d after swap from PE %d", static_struct.tag, from);

    /* shmem_ptr on a global gives a pointer we can store through (where
     * peers are mapped; otherwise NULL, and a put does it) */
    int *peer = shmem_ptr(&global_data[255], to);
    CHECK(peer != NULL || !test_all_mapped(), "shmem_ptr on a global");
    shmem_barrier_all();
    if (peer)
        *peer = -me - 1;
    else
        shmem_int_p(&global_data[255], -me - 1, to);
    shmem_barrier_all();
    CHECK(global_data[255] == -from - 1, "store through shmem_ptr: %d", global_data[255]);
    shmem_finalize();
    return 0;
}
