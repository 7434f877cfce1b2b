/* Which launcher started us, and where its PEs meet: ushrun, torchrun,
 * mpirun (the MPI bootstrap, in libushmem_mpi.so), or nothing (one PE).
 * Without the MPI module, mpirun is still recognised so that we can say why
 * instead of starting N jobs of one PE. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bootstrap/star.h"
#include "core/internal.h"
#include "transport/mpi/mpi.h"

#define CALL "shmem_init"

static const char *env_str(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* A required (or, with required = 0, optional: *out unchanged when unset)
 * integer in [lo, hi]. */
static int env_int(const char *name, long lo, long hi, int required, int *out)
{
    const char *v = env_str(name);
    if (!v) {
        if (required) {
            ushmemi_bootstrap_error(CALL, "%s is not set", name);
            return USHMEM_EINVAL;
        }
        return 0;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        ushmemi_bootstrap_error(CALL, "%s='%s' is not an integer in %ld..%ld", name, v, lo, hi);
        return USHMEM_EINVAL;
    }
    *out = (int)x;
    return 0;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int parse_secret(const char *name, uint8_t out[USHMEMI_BS_SECRET_BYTES])
{
    const char *v = env_str(name);
    if (!v || strlen(v) != 2 * USHMEMI_BS_SECRET_BYTES) {
        ushmemi_bootstrap_error(CALL, "%s is %s; the launcher must set it to %d hex digits", name,
                                v ? "malformed" : "not set", 2 * USHMEMI_BS_SECRET_BYTES);
        return USHMEM_EINVAL;
    }
    for (int i = 0; i < USHMEMI_BS_SECRET_BYTES; i++) {
        int hi = hex_digit(v[2 * i]), lo = hex_digit(v[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            ushmemi_bootstrap_error(CALL,
                                    "%s is malformed; the launcher must set it to %d hex "
                                    "digits",
                                    name, 2 * USHMEMI_BS_SECRET_BYTES);
            return USHMEM_EINVAL;
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

static int check_rank(const char *what, int rank, int nranks)
{
    if (rank < nranks)
        return 0;
    ushmemi_bootstrap_error(CALL, "%s: rank %d is not below the job size %d", what, rank, nranks);
    return USHMEM_EINVAL;
}

static int init_single(ushmemi_bootstrap_t *bs)
{
    ushmemi_bs_config_t cfg = {
        .source = USHMEMI_BS_SINGLE, .rank = 0, .nranks = 1, .local_rank = 0, .listen_fd = -1};
    return ushmemi_bootstrap_star_init(bs, &cfg);
}

/* ushrun: USHMEM_RANK, USHMEM_NPES, USHMEM_LOCAL_RANK, USHMEM_BOOTSTRAP_ADDR,
 * USHMEM_SECRET. */
static int init_launcher(ushmemi_bootstrap_t *bs)
{
    ushmemi_bs_config_t cfg = {.source = USHMEMI_BS_LAUNCHER, .local_rank = -1, .listen_fd = -1};
    int rc = env_int("USHMEM_RANK", 0, INT32_MAX - 1, 1, &cfg.rank);
    if (!rc)
        rc = env_int("USHMEM_NPES", 1, INT32_MAX, 1, &cfg.nranks);
    if (!rc)
        rc = check_rank("USHMEM_RANK", cfg.rank, cfg.nranks);
    if (!rc)
        rc = env_int("USHMEM_LOCAL_RANK", 0, INT32_MAX - 1, 0, &cfg.local_rank);
    if (rc)
        return rc;
    if (cfg.nranks == 1)
        return ushmemi_bootstrap_star_init(bs, &cfg);
    const char *addr = env_str("USHMEM_BOOTSTRAP_ADDR");
    if (!addr) {
        ushmemi_bootstrap_error(CALL, "USHMEM_BOOTSTRAP_ADDR is not set; start the job with "
                                      "ushrun");
        return USHMEM_EINVAL;
    }
    rc = ushmemi_bootstrap_addr_parse(addr, "USHMEM_BOOTSTRAP_ADDR", &cfg.addr);
    if (!rc)
        rc = parse_secret("USHMEM_SECRET", cfg.secret);
    return rc ? rc : ushmemi_bootstrap_star_init(bs, &cfg);
}

/* torchrun: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT.
 *
 * We meet on MASTER_PORT + 1 (or USHMEM_MASTER_PORT): MASTER_PORT belongs to
 * torch's TCPStore, which rank 0 (or the elastic agent) already listens on.
 *
 * The secret is a hash of MASTER_ADDR, MASTER_PORT and TORCHELASTIC_RUN_ID,
 * which every rank of the job sees and nothing else announces. It is NOT a
 * security boundary: anyone who can read the job's environment or guess those
 * values can compute it. It keeps PEs of two jobs that happen to share a port
 * from joining each other, nothing more. Use the unique-id path (random
 * secret) when that matters. */
static int init_torchrun(ushmemi_bootstrap_t *bs)
{
    ushmemi_bs_config_t cfg = {.source = USHMEMI_BS_TORCHRUN, .local_rank = -1, .listen_fd = -1};
    int rc = env_int("RANK", 0, INT32_MAX - 1, 1, &cfg.rank);
    if (!rc)
        rc = env_int("WORLD_SIZE", 1, INT32_MAX, 1, &cfg.nranks);
    if (!rc)
        rc = check_rank("RANK", cfg.rank, cfg.nranks);
    if (!rc)
        rc = env_int("LOCAL_RANK", 0, INT32_MAX - 1, 0, &cfg.local_rank);
    if (rc)
        return rc;
    if (cfg.nranks == 1)
        return ushmemi_bootstrap_star_init(bs, &cfg);

    const char *host = ushmemi_env.master_addr && *ushmemi_env.master_addr ? ushmemi_env.master_addr
                                                                           : env_str("MASTER_ADDR");
    if (!host) {
        ushmemi_bootstrap_error(CALL, "torchrun: MASTER_ADDR (or USHMEM_MASTER_ADDR) is not set");
        return USHMEM_EINVAL;
    }
    long port = ushmemi_env.master_port;
    const char *what = "USHMEM_MASTER_PORT";
    if (port == 0) {
        int mp = 0;
        rc = env_int("MASTER_PORT", 1, 65534, 1, &mp);
        if (rc)
            return rc;
        port = mp + 1L;
        what = "MASTER_PORT + 1";
    }
    rc = ushmemi_bootstrap_addr_tcp(host, port, what, &cfg.addr);
    if (rc)
        return rc;
    const char *parts[] = {"ushmem-torchrun-v1", env_str("MASTER_ADDR"), env_str("MASTER_PORT"),
                           env_str("TORCHELASTIC_RUN_ID")};
    ushmemi_bootstrap_hash(cfg.secret, parts, 4);
    return ushmemi_bootstrap_star_init(bs, &cfg);
}

static int mpi_detected(void)
{
    return env_str("OMPI_COMM_WORLD_RANK") || env_str("PMI_RANK") || env_str("PMIX_RANK");
}

static int torchrun_detected(void)
{
    return env_str("RANK") && env_str("WORLD_SIZE") && env_str("MASTER_ADDR");
}

int ushmemi_bootstrap_init_env(ushmemi_bootstrap_t *bs)
{
    const char *want =
        ushmemi_env.bootstrap && *ushmemi_env.bootstrap ? ushmemi_env.bootstrap : "auto";
    int automatic = !strcasecmp(want, "auto");
    if (automatic) {
        if (env_str("USHMEM_RANK"))
            want = "launcher";
        else if (mpi_detected())
            want = "mpi";
        else if (torchrun_detected())
            want = "torchrun";
        else
            want = "single";
    }
    if (!strcasecmp(want, "launcher"))
        return init_launcher(bs);
    if (!strcasecmp(want, "torchrun"))
        return init_torchrun(bs);
    if (!strcasecmp(want, "single"))
        return init_single(bs);
    if (!strcasecmp(want, "mpi")) {
        /* mpi hook: the MPI bootstrap lives in libushmem_mpi.so (loaded now) */
        int rc = ushmemi_mpi_bootstrap_init(bs, CALL);
        if (rc != USHMEM_EUNSUPPORTED)
            return rc;
        const char *why = "";
        ushmemi_mpi_load(&why);
        if (automatic)
            ushmemi_bootstrap_error(CALL,
                                    "launched by mpirun, but the MPI module cannot be "
                                    "loaded (%s); use ushrun, or build ushmem with MPI",
                                    why);
        else
            ushmemi_bootstrap_error(CALL,
                                    "USHMEM_BOOTSTRAP=mpi: the MPI module cannot be "
                                    "loaded (%s)",
                                    why);
        return USHMEM_EUNSUPPORTED;
    }
    if (!strcasecmp(want, "uid")) {
        ushmemi_bootstrap_error(CALL, "USHMEM_BOOTSTRAP=uid: the unique-id bootstrap starts with "
                                      "shmemx_get_uniqueid and shmemx_init_attr, not shmem_init");
        return USHMEM_EINVAL;
    }
    ushmemi_bootstrap_error(CALL,
                            "USHMEM_BOOTSTRAP='%s' is not one of auto, launcher, torchrun, "
                            "uid, mpi, single",
                            want);
    return USHMEM_EINVAL;
}
