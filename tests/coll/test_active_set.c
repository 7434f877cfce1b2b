/* Deprecated active-set collectives with pSync: barrier, sync, broadcast32/64
 * (the root's dest stays untouched), collect, fcollect, alltoall, alltoalls
 * and *_to_all reductions, over the world, even PEs, odd PEs, a single PE
 * and the first n-1 PEs, with the same pSync reused back to back; PEs outside
 * a set make the same calls, which return at once and write nothing.
 * USHMEM_TEST_NPES: 1 2 3 4 */
#include <complex.h>

#include "test_util.h"

#define N 300

static long psync[SHMEM_REDUCE_SYNC_SIZE]; /* SHMEM_SYNC_VALUE (0) in .bss */
static long psync2[SHMEM_BCAST_SYNC_SIZE];
static int ipwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + N];
static double dpwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + N];
static double _Complex cpwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + N];
static int64_t src64[8 * N], dst64[8 * N + 1];
static int32_t src32[8 * N], dst32[8 * N + 1];
static int isrc[N], idst[N];
static double dsrc[N], ddst[N];
static double _Complex csrc[N], cdst[N];
static long hits[64];

/* A PE outside the set: every active-set routine returns at once and writes
 * nothing (as in the other implementations; the Mellanox verifier relies on it),
 * while the members run the same calls among themselves. */
static void outsider(int start, int logstride, int size, int tag)
{
    for (int i = 0; i < 8 * N + 1; i++)
        dst64[i] = -9;
    for (int i = 0; i < N; i++)
        idst[i] = -9;
    shmem_barrier(start, logstride, size, psync);
    shmem_sync(start, logstride, size, psync);
    shmem_broadcast64(dst64, src64, N, 0, start, logstride, size, psync2);
    shmem_collect64(dst64, src64, N, start, logstride, size, psync);
    shmem_fcollect64(dst64, src64, N, start, logstride, size, psync);
    shmem_alltoall64(dst64, src64, N, start, logstride, size, psync);
    shmem_alltoalls64(dst64, src64, 1, 1, N, start, logstride, size, psync);
    shmem_int_sum_to_all(idst, isrc, N, start, logstride, size, ipwrk, psync);
    for (int i = 0; i < 8 * N + 1; i++)
        CHECK(dst64[i] == -9, "set %d: outsider's dest[%d] written", tag, i);
    for (int i = 0; i < N; i++)
        CHECK(idst[i] == -9, "set %d: outsider's reduction dest[%d] written", tag, i);
}

static void run_set(int start, int logstride, int size, int tag)
{
    int me = shmem_my_pe(), stride = 1 << logstride;
    int d = me - start;
    if (d < 0 || d % stride || d / stride >= size) {
        outsider(start, logstride, size, tag);
        return;
    }
    int idx = d / stride;
#define MEMBER(k) (start + (k)*stride)

    /* barrier: each member bumps a cell on every member, then checks all */
    for (int k = 0; k < size; k++)
        shmem_long_atomic_add(&hits[idx], 1, MEMBER(k));
    shmem_barrier(start, logstride, size, psync);
    for (int k = 0; k < size; k++)
        CHECK(hits[k] == 1, "set %d: barrier: hits[%d] = %ld", tag, k, hits[k]);
    shmem_sync(start, logstride, size, psync);
    hits[idx] = 0;
    for (int k = 0; k < size; k++)
        hits[k] = 0;
    shmem_barrier(start, logstride, size, psync);

    /* broadcast from the last member; the root's dest is not written */
    for (int i = 0; i < N; i++) {
        src64[i] = (int64_t)me << 40 | tag << 20 | i;
        src32[i] = me << 24 | tag << 16 | i;
        dst64[i] = dst32[i] = -7;
    }
    int root = size - 1;
    shmem_broadcast64(dst64, src64, N, root, start, logstride, size, psync2);
    shmem_broadcast32(dst32, src32, N, root, start, logstride, size, psync);
    for (int i = 0; i < N; i++) {
        if (idx == root) {
            CHECK(dst64[i] == -7 && dst32[i] == -7, "set %d: root's dest written", tag);
        } else {
            CHECK(dst64[i] == ((int64_t)MEMBER(root) << 40 | tag << 20 | i), "bcast64 [%d]", i);
            CHECK(dst32[i] == (MEMBER(root) << 24 | tag << 16 | i), "bcast32 [%d]", i);
        }
    }

    /* fcollect and collect (member k gives k+1 elements) */
    shmem_fcollect64(dst64, src64, 10, start, logstride, size, psync);
    for (int k = 0; k < size; k++)
        for (int i = 0; i < 10; i++)
            CHECK(dst64[k * 10 + i] == ((int64_t)MEMBER(k) << 40 | tag << 20 | i), "fcollect64");
    dst32[(size * (size + 1)) / 2] = -9;
    shmem_collect32(dst32, src32, (size_t)idx + 1, start, logstride, size, psync2);
    for (int k = 0, off = 0; k < size; k++)
        for (int i = 0; i <= k; i++, off++)
            CHECK(dst32[off] == (MEMBER(k) << 24 | tag << 16 | i), "collect32 [%d]", off);
    CHECK(dst32[(size * (size + 1)) / 2] == -9, "collect32 wrote past the end");
    shmem_collect64(dst64, src64, 3, start, logstride, size, psync);
    shmem_fcollect32(dst32, src32, 3, start, logstride, size, psync);
    for (int k = 0; k < size; k++)
        for (int i = 0; i < 3; i++) {
            CHECK(dst64[k * 3 + i] == ((int64_t)MEMBER(k) << 40 | tag << 20 | i), "collect64");
            CHECK(dst32[k * 3 + i] == (MEMBER(k) << 24 | tag << 16 | i), "fcollect32");
        }

    /* alltoall: block j of member k's source goes to member j */
    for (int j = 0; j < size; j++)
        for (int i = 0; i < 4; i++) {
            src64[j * 4 + i] = (int64_t)idx << 32 | j << 8 | i;
            src32[j * 4 + i] = idx << 16 | j << 8 | i;
        }
    shmem_alltoall64(dst64, src64, 4, start, logstride, size, psync);
    shmem_alltoall32(dst32, src32, 4, start, logstride, size, psync2);
    for (int k = 0; k < size; k++)
        for (int i = 0; i < 4; i++) {
            CHECK(dst64[k * 4 + i] == ((int64_t)k << 32 | idx << 8 | i), "alltoall64");
            CHECK(dst32[k * 4 + i] == (k << 16 | idx << 8 | i), "alltoall32");
        }
    /* alltoalls: dst stride 2, sst stride 1 */
    for (int i = 0; i < 2 * size * 4; i++)
        dst64[i] = dst32[i] = -1;
    shmem_alltoalls64(dst64, src64, 2, 1, 4, start, logstride, size, psync);
    shmem_alltoalls32(dst32, src32, 2, 1, 4, start, logstride, size, psync);
    for (int k = 0; k < size; k++)
        for (int i = 0; i < 4; i++) {
            CHECK(dst64[(k * 4 + i) * 2] == ((int64_t)k << 32 | idx << 8 | i), "alltoalls64");
            CHECK(dst32[(k * 4 + i) * 2] == (k << 16 | idx << 8 | i), "alltoalls32");
            CHECK(dst64[(k * 4 + i) * 2 + 1] == -1 && dst32[(k * 4 + i) * 2 + 1] == -1,
                  "alltoalls wrote a gap");
        }

    /* reductions */
    for (int i = 0; i < N; i++) {
        isrc[i] = me * 3 + i;
        dsrc[i] = me + 0.5 * i;
        csrc[i] = (me + 1) + 1.0 * I;
    }
    shmem_int_sum_to_all(idst, isrc, N, start, logstride, size, ipwrk, psync);
    shmem_double_max_to_all(ddst, dsrc, N, start, logstride, size, dpwrk, psync2);
    shmem_complexd_prod_to_all(cdst, csrc, N, start, logstride, size, cpwrk, psync);
    shmem_int_xor_to_all(isrc, isrc, N, start, logstride, size, ipwrk, psync2); /* in place */
    for (int i = 0; i < N; i++) {
        int sum = 0, x = 0;
        double _Complex prod = 1;
        for (int k = 0; k < size; k++) {
            sum += MEMBER(k) * 3 + i;
            x ^= MEMBER(k) * 3 + i;
            prod *= (MEMBER(k) + 1) + 1.0 * I;
        }
        CHECK(idst[i] == sum, "int_sum_to_all [%d] = %d, want %d", i, idst[i], sum);
        CHECK(ddst[i] == MEMBER(size - 1) + 0.5 * i, "double_max_to_all [%d]", i);
        CHECK(cdst[i] == prod, "complexd_prod_to_all [%d]", i);
        CHECK(isrc[i] == x, "int_xor_to_all in place [%d]", i);
    }
    shmem_barrier(start, logstride, size, psync);
#undef MEMBER
}

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    for (int rep = 0; rep < 3; rep++) {
        run_set(0, 0, n, 1);
        shmem_barrier_all();
        run_set(0, 1, (n + 1) / 2, 2);
        if (n > 1)
            run_set(1, 1, n / 2, 3);
        shmem_barrier_all();
        run_set(n - 1, 0, 1, 4);
        if (n > 2)
            run_set(0, 0, n - 1, 5);
        shmem_barrier_all(); /* set 6 overlaps sets 4 and 5 */
        if (n > 3)
            run_set(0, 2, 1 + (n - 1) / 4, 6);
        shmem_barrier_all();
    }
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        CHECK(psync[i] == SHMEM_SYNC_VALUE, "pSync not restored");
    if (me == 0)
        printf("test_active_set: OK (%d PEs)\n", n);
    shmem_finalize();
    return 0;
}
