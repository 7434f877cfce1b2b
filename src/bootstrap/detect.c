/* Which launcher started us, and where its PEs meet: ushrun, torchrun,
 * mpirun (the MPI bootstrap, in libushmem_mpi.so), or nothing (one PE).
 * Without the MPI module, mpirun is still recognised so that we can say why
 * instead of starting N jobs of one PE. */
#include <arpa/inet.h>
#include <dirent.h>
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

/* A process that a PE of this job started (it inherited the launcher's
 * variables, name among them) cannot join the job: 1 with the reason printed
 * (lineage.c). */
static int started_by_pe(const char *name, const char *launcher)
{
    pid_t pe = ushmemi_bootstrap_pe_ancestor(name, env_str(name));
    if (!pe)
        return 0;
    ushmemi_bootstrap_error(CALL,
                            "this process (pid %ld) was started by a PE of its job (pid %ld), "
                            "which has joined it already: a PE's child inherits %s's variables "
                            "but cannot join the job; set USHMEM_BOOTSTRAP=single to run it as "
                            "a program of its own (one PE)",
                            (long)getpid(), (long)pe, launcher);
    return 1;
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
    if (rc)
        return rc;
    if (started_by_pe("USHMEM_SECRET", "ushrun"))
        return USHMEM_EINVAL;
    return ushmemi_bootstrap_star_init(bs, &cfg);
}

/* ---- the torchrun secret ----
 *
 * torchrun gives the ranks nothing private in common: its environment and its
 * TCPStore are open to every local user. So on one host (LOCAL_WORLD_SIZE ==
 * WORLD_SIZE, or a loopback MASTER_ADDR) rank 0 makes 16 random bytes and
 * hands them over in a file only this user can read, in the first directory
 * private to the user (ours, mode 0700, not a link) of: $XDG_RUNTIME_DIR,
 * /tmp/ushmem-<uid>, $HOME/.ushmem. Another user can take /tmp/ushmem-<uid>
 * first (issue 22, item 7): then rank 0 uses the home one, and the others
 * look in every private candidate, so no name has to travel. The file names
 * its writer (pid and start time): a file left by a dead job is never taken
 * for a live one, and rank 0 deletes such files when it starts (a SIGKILLed
 * rank 0 cannot clean up). Once everyone joined the file is removed, and the
 * directory too when it was not $XDG_RUNTIME_DIR and nothing else is in it.
 * Across hosts, USHMEM_SECRET (same value on every rank) is the secret;
 * without it the secret is derived from MASTER_ADDR, MASTER_PORT and
 * TORCHELASTIC_RUN_ID, which anyone can compute: rank 0 says so.
 * ushmem.init_with_torch() needs none of this (a unique id travels over the
 * process group). */
#define SECRET_DIRS    3
#define SECRET_DIR_MAX 200

/* Ours, mode 0700, a directory and not a link to one; made first if create. */
static int dir_private(const char *path, int create)
{
    struct stat sb;
    if (create && mkdir(path, 0700) != 0 && errno != EEXIST)
        return 0;
    return lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_uid == geteuid() &&
           !(sb.st_mode & 077);
}

/* The candidates, in order; [0] is $XDG_RUNTIME_DIR when it is set (never
 * made or removed by us). */
static int secret_dirs(char dirs[SECRET_DIRS][SECRET_DIR_MAX], int *have_xdg)
{
    int n = 0;
    const char *xdg = env_str("XDG_RUNTIME_DIR"), *home = env_str("HOME");
    *have_xdg = xdg && strlen(xdg) < SECRET_DIR_MAX;
    if (*have_xdg)
        snprintf(dirs[n++], SECRET_DIR_MAX, "%s", xdg);
    snprintf(dirs[n++], SECRET_DIR_MAX, "/tmp/ushmem-%u", (unsigned)geteuid());
    if (home && strlen(home) + sizeof "/.ushmem" <= SECRET_DIR_MAX)
        snprintf(dirs[n++], SECRET_DIR_MAX, "%s/.ushmem", home);
    return n;
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

/* The file's name in any of the directories: the same for all ranks. */
static void secret_name(char *out, size_t size)
{
    const char *parts[] = {"ushmem-torchrun-file", env_str("MASTER_ADDR"), env_str("MASTER_PORT"),
                           env_str("TORCHELASTIC_RUN_ID"), env_str("WORLD_SIZE")};
    uint8_t id[16];
    char hex[17];
    ushmemi_bootstrap_hash(id, parts, 5);
    to_hex(hex, id, 8);
    snprintf(out, size, "torchrun-%s", hex);
}

/* A secret line "hex pid start": 1 if its writer still runs (and *secret, when
 * asked for, holds the bytes), else 0. */
static int secret_parse(const char *line, uint8_t *secret)
{
    char hex[2 * USHMEMI_BS_SECRET_BYTES + 1];
    long pid = 0;
    unsigned long long start = 0;
    if (sscanf(line, "%32s %ld %llu", hex, &pid, &start) != 3 || pid <= 0 || start == 0 ||
        strlen(hex) != 2 * USHMEMI_BS_SECRET_BYTES || start_time(pid) != start)
        return 0;
    for (int i = 0; i < USHMEMI_BS_SECRET_BYTES; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return 0;
        if (secret)
            secret[i] = (uint8_t)(hi << 4 | lo);
    }
    return 1;
}

/* The secret line of a file of ours, private, not a link (dfd: its directory). */
static int secret_read(int dfd, const char *name, char *line, size_t size)
{
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat sb;
    ssize_t n = -1;
    if (fd < 0)
        return -1;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == geteuid() && !(sb.st_mode & 077))
        n = read(fd, line, size - 1);
    close(fd);
    line[n > 0 ? n : 0] = '\0';
    return n > 0 ? 0 : -1;
}

/* Rank 0, before publishing: delete what dead jobs left in dir (their writer
 * is gone), and half-written files older than a minute. */
static void secret_clean(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    time_t old = time(NULL) - 60;
    while ((e = readdir(d)) != NULL) {
        struct stat sb;
        char line[128];
        if (strncmp(e->d_name, "torchrun-", 9) ||
            fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode) ||
            sb.st_uid != geteuid())
            continue;
        int stale = strchr(e->d_name, '.') ? sb.st_mtime < old
                                           : secret_read(dirfd(d), e->d_name, line, sizeof line) ||
                                                 !secret_parse(line, NULL);
        if (stale)
            unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

/* Rank 0: write the secret as dir/name, where only this user can read it.
 * 0, or -errno (nothing printed: the caller tries the next directory). */
static int secret_write(const char *dir, const char *name, const uint8_t *secret)
{
    char tmp[SECRET_DIR_MAX + 64], path[SECRET_DIR_MAX + 64], line[96];
    char hex[2 * USHMEMI_BS_SECRET_BYTES + 1];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path ||
        snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp)
        return -ENAMETOOLONG;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return -errno;
    to_hex(hex, secret, USHMEMI_BS_SECRET_BYTES);
    int len = snprintf(line, sizeof line, "%s %ld %llu\n", hex, (long)getpid(),
                       start_time((long)getpid()));
    int ok = fchmod(fd, 0600) == 0 && write(fd, line, (size_t)len) == len;
    int e = errno;
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        e = ok ? errno : e;
        unlink(tmp);
        return -e;
    }
    return 0;
}

/* Rank 0: publish in the first private candidate (made if missing); *used
 * names the directory. A concurrent job of ours may remove an empty
 * /tmp/ushmem-<uid> between our mkdir and our write: then try again. */
static int secret_publish(const uint8_t *secret, char *used, size_t size)
{
    char dirs[SECRET_DIRS][SECRET_DIR_MAX], name[64], tried[3 * SECRET_DIR_MAX] = "";
    int xdg, n = secret_dirs(dirs, &xdg);
    secret_name(name, sizeof name);
    for (int i = 0; i < n; i++) {
        int rc = -ENOENT;
        for (int attempt = 0; attempt < 3 && rc == -ENOENT; attempt++) {
            if (!dir_private(dirs[i], !(xdg && i == 0))) {
                rc = -EPERM;
                break;
            }
            secret_clean(dirs[i]);
            rc = secret_write(dirs[i], name, secret);
        }
        if (rc == 0 && strlen(dirs[i]) < size) {
            memcpy(used, dirs[i], strlen(dirs[i]) + 1);
            return 0;
        }
        size_t l = strlen(tried);
        if (snprintf(tried + l, sizeof tried - l, "%s%s (%s)", l ? ", " : "", dirs[i],
                     rc == -EPERM ? "not a directory private to this user" : strerror(-rc)) < 0)
            tried[l] = '\0';
    }
    ushmemi_bootstrap_error(CALL,
                            "torchrun: nowhere to put the job secret: %s; set USHMEM_SECRET "
                            "(the same 32 hex digits on every rank)",
                            tried);
    return USHMEM_EDENIED;
}

/* The others: wait for a file of a live writer in any private candidate. */
static int secret_fetch(uint8_t *secret)
{
    char dirs[SECRET_DIRS][SECRET_DIR_MAX], name[64];
    int xdg, n = secret_dirs(dirs, &xdg);
    long t = ushmemi_env.bootstrap_timeout;
    struct timespec t0, now;
    secret_name(name, sizeof name);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        for (int i = 0; i < n; i++) {
            char line[128];
            int dfd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
            if (dfd < 0)
                continue;
            struct stat sb;
            int ok = fstat(dfd, &sb) == 0 && sb.st_uid == geteuid() && !(sb.st_mode & 077) &&
                     secret_read(dfd, name, line, sizeof line) == 0 && secret_parse(line, secret);
            close(dfd);
            if (ok)
                return 0;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (t > 0 && now.tv_sec - t0.tv_sec >= t) {
            ushmemi_bootstrap_error(CALL,
                                    "torchrun: rank 0 did not publish the job secret (%s in %s%s%s"
                                    "%s%s) within %ld s (is rank 0 on this host? across hosts set "
                                    "USHMEM_SECRET)",
                                    name, dirs[0], n > 1 ? ", " : "", n > 1 ? dirs[1] : "",
                                    n > 2 ? ", " : "", n > 2 ? dirs[2] : "", t);
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
    /* the job variable: torchrun's per-worker error file names this job, attempt and rank
     * (a torchrun started inside a PE gives its workers new ones); else the run id, else the
     * port (both of which have defaults that another job may share) */
    const char *job_var = env_str("TORCHELASTIC_ERROR_FILE") ? "TORCHELASTIC_ERROR_FILE"
                          : env_str("TORCHELASTIC_RUN_ID")   ? "TORCHELASTIC_RUN_ID"
                                                             : "MASTER_PORT";
    if (started_by_pe(job_var, "torchrun"))
        return USHMEM_EINVAL;
    int local_world = 0;
    env_int("LOCAL_WORLD_SIZE", 1, INT32_MAX, 0, &local_world);
    char used[SECRET_DIR_MAX] = "";
    if (env_str("USHMEM_SECRET")) {
        rc = parse_secret("USHMEM_SECRET", cfg.secret);
    } else if (local_world == cfg.nranks || loopback(&cfg.addr)) {
        if (cfg.rank == 0) {
            if (getrandom(cfg.secret, sizeof cfg.secret, 0) != (ssize_t)sizeof cfg.secret) {
                ushmemi_bootstrap_error(CALL, "getrandom: %s", strerror(errno));
                rc = USHMEM_ESYS;
            } else {
                rc = secret_publish(cfg.secret, used, sizeof used);
            }
        } else {
            rc = secret_fetch(cfg.secret);
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
    if (used[0]) { /* everyone joined (or the job failed): nobody needs it */
        char path[SECRET_DIR_MAX + 64], name[64];
        const char *xdg = env_str("XDG_RUNTIME_DIR");
        secret_name(name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", used, name);
        unlink(path);
        if (!xdg || strcmp(xdg, used))
            rmdir(used); /* fails, as it should, while another job of ours uses it */
    }
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
