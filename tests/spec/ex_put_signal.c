/* Spec example: shmem_put_signal. A chain broadcast: PE k waits for PE k-1's data and
 * signal, then sends its own message to PE k+1 with a signal; PE 0 starts and waits
 * for the last PE. Checked: when the signal is seen, the data from the previous PE is
 * all there (message = sender's number). */
#include <stdint.h>

#include "spec_check.h"

int main(void)
{
    shmem_init();
    size_t size = 2 << 10;
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    int pe = (me + 1) % n;
    uint64_t *message = malloc(size * sizeof(uint64_t));
    uint64_t *data = shmem_malloc(size * sizeof(uint64_t));
    static uint64_t sig_addr = 0;
    SPEC_CHECK(message && data, "allocation failed");
    for (size_t i = 0; i < size; i++) {
        message[i] = (uint64_t)me;
        data[i] = 0;
    }
    shmem_barrier_all();
    if (me != 0)
        shmem_uint64_wait_until(&sig_addr, SHMEM_CMP_EQ, 1);
    shmem_putmem_signal(data, message, size * sizeof(uint64_t), &sig_addr, 1, SHMEM_SIGNAL_SET, pe);
    if (me == 0)
        shmem_uint64_wait_until(&sig_addr, SHMEM_CMP_EQ, 1);
    uint64_t from = (uint64_t)((me + n - 1) % n);
    for (size_t i = 0; i < size; i++)
        SPEC_CHECK(data[i] == from, "data[%zu] = %llu after the signal, want %llu", i,
                   (unsigned long long)data[i], (unsigned long long)from);
    SPEC_CHECK(shmem_signal_fetch(&sig_addr) == 1, "signal %llu",
               (unsigned long long)shmem_signal_fetch(&sig_addr));
    free(message);
    shmem_barrier_all(); /* nobody frees data while a put may still land */
    shmem_free(data);
    shmem_finalize();
    return 0;
}
