/* Which launcher started us, and where its PEs meet: ushrun, torchrun,
 * mpirun (the MPI bootstrap, in libushmem_mpi.so), or nothing (one PE).
 * Without the MPI module, mpirun is still recognised so that we can say why
 * instead of starting N jobs of one PE. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

/* ---- the torchrun secret ----
 *
 * torchrun gives the ranks nothing private in common: its environment and its
 * TCPStore are open to every local user. So on one host (LOCAL_WORLD_SIZE ==
 * WORLD_SIZE, or a loopback MASTER_ADDR) rank 0 makes 16 random bytes and
 * hands them over in a file only this user can read ($XDG_RUNTIME_DIR or
 * /tmp/ushmem-<uid>, mode 0700, checked), removed once everyone joined. The
 * file names its writer (pid and start time), so a file left by a dead job is
 * never taken for a live one. Across hosts, USHMEM_SECRET (same value on every
 * rank) is the secret; without it the secret is derived from MASTER_ADDR,
 * MASTER_PORT and TORCHELASTIC_RUN_ID, which anyone can compute: rank 0 says
 * so. ushmem.init_with_torch() needs none of this (a unique id travels over
 * the process group). */
static int private_dir(char *out, size_t size)
{
    const char *xdg = env_str("XDG_RUNTIME_DIR");
    struct stat sb;
    if (xdg && strlen(xdg) < size && stat(xdg, &sb) == 0 && S_ISDIR(sb.st_mode) &&
        sb.st_uid == geteuid() && !(sb.st_mode & 077)) {
        snprintf(out, size, "%s", xdg);
        return 0;
    }
    snprintf(out, size, "/tmp/ushmem-%u", (unsigned)geteuid());
    if (mkdir(out, 0700) != 0 && errno != EEXIST) {
        ushmemi_bootstrap_error(CALL, "torchrun: cannot create %s: %s", out, strerror(errno));
        return USHMEM_ESYS;
    }
    if (lstat(out, &sb) != 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() ||
        (sb.st_mode & 077)) {
        ushmemi_bootstrap_error(CALL,
                                "torchrun: %s is not a directory private to this user "
                                "(someone else made it?); set USHMEM_SECRET or XDG_RUNTIME_DIR",
                                out);
        return USHMEM_EDENIED;
    }
    return 0;
}

/* A process's start time in clock ticks since boot (field 22 of its stat). */
static unsigned long long start_time(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

static void to_hex(char *out, const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static int secret_file(char *path, size_t size)
{
    char dir[200];
    int rc = private_dir(dir, sizeof dir);
    if (rc)
        return rc;
    const char *parts[] = {"ushmem-torchrun-file", env_str("MASTER_ADDR"), env_str("MASTER_PORT"),
                           env_str("TORCHELASTIC_RUN_ID"), env_str("WORLD_SIZE")};
    uint8_t id[16];
    char hex[33];
    ushmemi_bootstrap_hash(id, parts, 5);
    to_hex(hex, id, 8);
    snprintf(path, size, "%s/torchrun-%s", dir, hex);
    return 0;
}

/* Rank 0: write the secret where only this user's processes can read it. */
static int secret_publish(const char *path, const uint8_t *secret)
{
    char tmp[300], line[96], hex[2 * USHMEMI_BS_SECRET_BYTES + 1];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        ushmemi_bootstrap_error(CALL, "torchrun: cannot create %s: %s", tmp, strerror(errno));
        return USHMEM_ESYS;
    }
    to_hex(hex, secret, USHMEMI_BS_SECRET_BYTES);
    int len = snprintf(line, sizeof line, "%s %ld %llu\n", hex, (long)getpid(),
                       start_time((long)getpid()));
    int ok = fchmod(fd, 0600) == 0 && write(fd, line, (size_t)len) == len;
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        ushmemi_bootstrap_error(CALL, "torchrun: cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return USHMEM_ESYS;
    }
    return 0;
}

/* The others: wait for a file whose writer is alive, this user's, private. */
static int secret_fetch(const char *path, uint8_t *secret)
{
    long t = ushmemi_env.bootstrap_timeout;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        struct stat sb;
        char line[128] = "";
        if (fd >= 0) {
            ssize_t n = -1;
            if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == geteuid() &&
                !(sb.st_mode & 077))
                n = read(fd, line, sizeof line - 1);
            close(fd);
            line[n > 0 ? n : 0] = '\0';
            char hex[2 * USHMEMI_BS_SECRET_BYTES + 1];
            long pid = 0;
            unsigned long long start = 0;
            if (sscanf(line, "%32s %ld %llu", hex, &pid, &start) == 3 && pid > 0 &&
                start_time(pid) == start && start != 0) {
                int ok = 1;
                for (int i = 0; i < USHMEMI_BS_SECRET_BYTES && ok; i++) {
                    int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
                    ok = hi >= 0 && lo >= 0;
                    secret[i] = (uint8_t)(hi << 4 | lo);
                }
                if (ok)
                    return 0;
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (t > 0 && now.tv_sec - t0.tv_sec >= t) {
            ushmemi_bootstrap_error(CALL,
                                    "torchrun: rank 0 did not publish the job secret in %s "
                                    "within %ld s (is rank 0 on this host? across hosts set "
                                    "USHMEM_SECRET)",
                                    path, t);
            return USHMEM_ETIMEOUT;
        }
        poll(NULL, 0, 5);
    }
}

static int loopback(const ushmemi_bs_addr_t *a)
{
    if (a->sa.ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)&a->sa)->sin_addr.s_addr) >> 24) == 127;
    if (a->sa.ss_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)&a->sa)->sin6_addr);
    return 0;
}

/* torchrun: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT.
 *
 * We meet on MASTER_PORT + 1 (or USHMEM_MASTER_PORT): MASTER_PORT belongs to
 * torch's TCPStore, which rank 0 (or the elastic agent) already listens on.
 * The secret: see above. */
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
    int local_world = 0;
    env_int("LOCAL_WORLD_SIZE", 1, INT32_MAX, 0, &local_world);
    char path[300] = "";
    if (env_str("USHMEM_SECRET")) {
        rc = parse_secret("USHMEM_SECRET", cfg.secret);
    } else if (local_world == cfg.nranks || loopback(&cfg.addr)) {
        rc = secret_file(path, sizeof path);
        if (!rc && cfg.rank == 0) {
            if (getrandom(cfg.secret, sizeof cfg.secret, 0) != (ssize_t)sizeof cfg.secret) {
                ushmemi_bootstrap_error(CALL, "getrandom: %s", strerror(errno));
                rc = USHMEM_ESYS;
            } else {
                rc = secret_publish(path, cfg.secret);
            }
        } else if (!rc) {
            rc = secret_fetch(path, cfg.secret);
        }
    } else {
        const char *parts[] = {"ushmem-torchrun-v1", env_str("MASTER_ADDR"), env_str("MASTER_PORT"),
                               env_str("TORCHELASTIC_RUN_ID")};
        ushmemi_bootstrap_hash(cfg.secret, parts, 4);
        if (cfg.rank == 0)
            ushmemi_bootstrap_error(CALL, "warning: torchrun across hosts without USHMEM_SECRET: "
                                          "the job secret is derived from MASTER_ADDR/PORT, so "
                                          "any user who can reach the port can join; set "
                                          "USHMEM_SECRET to the same random value on every rank "
                                          "(or use ushmem.init_with_torch)");
    }
    if (rc)
        return rc;
    rc = ushmemi_bootstrap_star_init(bs, &cfg);
    if (cfg.rank == 0 && path[0])
        unlink(path); /* everyone joined (or the job failed): nobody needs it */
    return rc;
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
