/* SHMEM_DEBUG: the members of a collective must call the same one with the
 * same arguments (root, count, type, operator, strides); otherwise each
 * finishes silently with its own answer, or reads past a peer's buffer. As the
 * heap's allocation check does (src/heap/heap.c), each member publishes its
 * arguments in its copy of the team slot's words, the team synchronizes, member 0
 * compares with every member it maps and ends the job on the first mismatch;
 * a second sync keeps the next collective from overwriting a record still
 * being read. Collect's counts may differ by design and are not compared. */
#include <stdio.h>
#include <time.h>

#include "coll/coll.h"

/* The record, in the team slot's words (free between operations). */
enum { R_KIND, R_ROOT, R_COUNT, R_ESIZE, R_TYPE_OP, R_DST, R_SST, R_TEAM, R_WORDS };
_Static_assert(R_WORDS <= USHMEMI_TEAM_SLOT_WORDS, "the record fits the slot's words");
#define WAIT_FOR_REPORT_NS ((int64_t)10000000000) /* member 0 ends the job first */

static void encode(uint64_t *rec, shmem_team_t team, const ushmemi_coll_args_t *a)
{
    rec[R_KIND] = (uint64_t)a->kind;
    rec[R_ROOT] = (uint64_t)(int64_t)a->root;
    rec[R_COUNT] = a->count;
    rec[R_ESIZE] = a->esize;
    rec[R_TYPE_OP] = (uint64_t)(uint32_t)a->dtype << 32 | (uint32_t)a->op;
    rec[R_DST] = (uint64_t)a->dst;
    rec[R_SST] = (uint64_t)a->sst;
    rec[R_TEAM] = (uint64_t)(uint32_t)team->start << 32 | (uint32_t)team->size;
}

static int differ(const uint64_t *a, const uint64_t *b)
{
    for (int i = 0; i < R_WORDS; i++)
        if (a[i] != b[i] && !(i == R_COUNT && a[R_KIND] == USHMEMI_COLL_COLLECT &&
                              b[R_KIND] == USHMEMI_COLL_COLLECT))
            return 1;
    return 0;
}

static const char *type_name(int dtype, char *buf, size_t size)
{
    size_t bytes = USHMEMI_DT_SIZE(dtype);
    switch (USHMEMI_DT_KIND(dtype)) {
    case USHMEMI_KIND_SINT: snprintf(buf, size, "int%zu", bytes * 8); break;
    case USHMEMI_KIND_UINT: snprintf(buf, size, "uint%zu", bytes * 8); break;
    case USHMEMI_KIND_FLOAT:
        snprintf(buf, size, "%s", bytes == 4 ? "float" : bytes == 8 ? "double" : "long double");
        break;
    case USHMEMI_KIND_COMPLEX:
        snprintf(buf, size, "%s", bytes == 8 ? "complex float" : "complex double");
        break;
    default: snprintf(buf, size, "type 0x%x", (unsigned)dtype);
    }
    return buf;
}

static const char *op_name(uint64_t op)
{
    static const char *const names[] = {"and", "or", "xor", "max", "min", "sum", "prod"};
    return op < sizeof names / sizeof names[0] ? names[op] : "?";
}

/* "shmem_broadcast(root 0, 16 bytes)": the generic name, the same on both
 * sides (the caller's typed name heads the line). */
static void describe(const uint64_t *rec, char *out, size_t size)
{
    char type[32];
    unsigned long long count = (unsigned long long)rec[R_COUNT];
    int dtype = (int)(rec[R_TYPE_OP] >> 32), op = (int)(uint32_t)rec[R_TYPE_OP];
    switch ((int)rec[R_KIND]) {
    case USHMEMI_COLL_BCAST:
        snprintf(out, size, "shmem_broadcast(root %d, %llu bytes)", (int)(int64_t)rec[R_ROOT],
                 count);
        break;
    case USHMEMI_COLL_COLLECT: snprintf(out, size, "shmem_collect(%llu bytes)", count); break;
    case USHMEMI_COLL_FCOLLECT: snprintf(out, size, "shmem_fcollect(%llu bytes)", count); break;
    case USHMEMI_COLL_ALLTOALL:
        snprintf(out, size, "shmem_alltoall(%llu bytes per PE)", count);
        break;
    case USHMEMI_COLL_ALLTOALLS:
        snprintf(out, size, "shmem_alltoalls(%llu elements of %llu bytes, dst %lld, sst %lld)",
                 count, (unsigned long long)rec[R_ESIZE], (long long)rec[R_DST],
                 (long long)rec[R_SST]);
        break;
    case USHMEMI_COLL_REDUCE:
        snprintf(out, size, "shmem_%s_reduce(%llu elements of %s)", op_name((uint64_t)op), count,
                 type_name(dtype, type, sizeof type));
        break;
    case USHMEMI_COLL_SCAN:
        snprintf(out, size, "shmem_sum_%s(%llu elements of %s)", op ? "exscan" : "inscan", count,
                 type_name(dtype, type, sizeof type));
        break;
    default: snprintf(out, size, "an unknown collective (kind %d)", (int)rec[R_KIND]);
    }
}

static void team_name(shmem_team_t team, char *out, size_t size)
{
    if (team->slot == USHMEMI_TEAM_SLOT_WORLD) {
        snprintf(out, size, "world");
        return;
    }
    if (team->slot == USHMEMI_TEAM_SLOT_SHARED) {
        snprintf(out, size, "shared");
        return;
    }
    size_t len = (size_t)snprintf(out, size, "{");
    for (int i = 0; i < team->size && len < size; i++) {
        if (team->size > 8 && i == 3) {
            len += (size_t)snprintf(out + len, size - len, ", ...");
            i = team->size - 1;
        }
        if (len < size)
            len += (size_t)snprintf(out + len, size - len, "%s%d", i ? ", " : "",
                                    ushmemi_team_world_pe(team, i));
    }
    if (len < size)
        snprintf(out + len, size - len, "}");
}

static _Noreturn void report(shmem_team_t team, int pe_a, const uint64_t *a, int pe_b,
                             const uint64_t *b, const char *call)
{
    char da[160], db[160], tn[96];
    describe(a, da, sizeof da);
    describe(b, db, sizeof db);
    team_name(team, tn, sizeof tn);
    ushmemi_fatal(call,
                  "PE %d called %s while PE %d called %s on team %s; every member must make the "
                  "same collective call (SHMEM_DEBUG)",
                  pe_a, da, pe_b, db, tn);
}

void ushmemi_coll_check_args(shmem_team_t team, const ushmemi_coll_args_t *a, const char *call)
{
    int n = team->size, me = team->my_pe;
    if (n < 2)
        return;
    uint64_t *mine = ushmemi_team_my_slot(team)->word;
    encode(mine, team, a);
    ushmemi_team_sync(team, call);
    uint64_t peer[R_WORDS];
    for (int i = me == 0 ? 1 : 0; i < (me == 0 ? n : 1); i++) {
        int pe = ushmemi_team_world_pe(team, i);
        ushmemi_coll_region_t *r = ushmemi_coll_region(pe);
        if (!r) /* mpi hook: not mapped here */
            continue;
        memcpy(peer, r->slot[team->slot].word, sizeof peer);
        if (!differ(mine, peer))
            continue;
        if (me == 0)
            report(team, ushmemi_g.my_pe, mine, pe, peer, call);
        /* One line for the job: member 0 reports and ends it. Should that
         * not happen (it cannot map us), report from here. */
        int64_t t0 = ushmemi_now_ns();
        while (ushmemi_now_ns() - t0 < WAIT_FOR_REPORT_NS) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
        report(team, pe, peer, ushmemi_g.my_pe, mine, call);
    }
    ushmemi_team_sync(team, call);
}
