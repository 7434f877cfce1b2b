/* Bootstrap tests. The program forks its own PEs (no launcher), sets the
 * environment a launcher would, and checks the collectives, the unique-id and
 * torchrun paths, refusal of a wrong secret, the timeout when nobody listens,
 * and the liveness monitor. Every sub-test runs in fresh processes under an
 * alarm() timeout; each child's stderr is captured and checked for the one
 * line that should explain a failure.
 *
 * Build (standalone, before the core links):
 *   gcc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes \
 *       -Wmissing-prototypes -Wvla -Werror -pthread -Iinclude -Isrc \
 *       tests/bootstrap/test_bootstrap.c src/bootstrap/\*.c src/core/env.c src/core/error.c
 * Run: ./a.out [-v] [-r N] [key]   (-v: print every PE's stderr; -r: repeat;
 * key: run only the tests it names, e.g. monitor) */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "bootstrap/star.h"
#include "core/mac.h"
#include "core/state.h"

/* error.c reads the core's global state, which lives in a core file this
 * standalone build does not link. Weak, so that linking the real core later
 * needs no change here. */
__attribute__((weak)) ushmemi_state_t ushmemi_g;

#define MAX_PES 8

typedef struct {
    const char *mode; /* launcher, torchrun, uid, mpi, none */
    int n;
    char addr[128];
    char secret[40];
    int master_port;       /* torchrun: MASTER_PORT (ushmem uses + 1) */
    int timeout;           /* USHMEM_BOOTSTRAP_TIMEOUT, 0: default */
    int victim;            /* monitor tests: the PE that leaves */
    const char *abort_msg; /* monitor tests: what the victim's abort says */
    int uid_pipe;          /* uid tests: where the maker writes the id */
    int hold_fd;           /* uid tests: the maker keeps its port until this closes, -1: no */
    shmemx_uniqueid_t uid;
} job_t;

typedef int (*body_fn)(int rank, job_t *j);

typedef struct {
    pid_t pid;
    int cap; /* memfd holding the child's stderr */
    int status;
    int exited;
    double t_exit;
} kid_t;

static int g_verbose, g_failures, g_tests;
static int g_rank = -1;       /* in a child: its rank */
static _Atomic int *g_counts; /* shared by all processes: barrier checks */
static volatile sig_atomic_t g_alarm;

static const char *const managed_env[] = {"USHMEM_RANK",
                                          "USHMEM_NPES",
                                          "USHMEM_LOCAL_RANK",
                                          "USHMEM_LOCAL_SIZE",
                                          "USHMEM_BOOTSTRAP_ADDR",
                                          "USHMEM_SECRET",
                                          "USHMEM_BOOTSTRAP",
                                          "USHMEM_BOOTSTRAP_TIMEOUT",
                                          "USHMEM_MASTER_ADDR",
                                          "USHMEM_MASTER_PORT",
                                          "MASTER_ADDR",
                                          "MASTER_PORT",
                                          "RANK",
                                          "WORLD_SIZE",
                                          "LOCAL_RANK",
                                          "TORCHELASTIC_RUN_ID",
                                          "OMPI_COMM_WORLD_RANK",
                                          "PMI_RANK",
                                          "PMIX_RANK",
                                          "USHMEM_MPI_MODULE"};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "PE %d: check failed at %s:%d: %s\n", g_rank, __FILE__, __LINE__, #c); \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

/* ---- the environment each kind of launcher gives a PE ---- */
static void setenv_int(const char *name, long v)
{
    char s[32];
    snprintf(s, sizeof s, "%ld", v);
    setenv(name, s, 1);
}

static void set_env(const job_t *j, int rank)
{
    for (size_t i = 0; i < sizeof managed_env / sizeof managed_env[0]; i++)
        unsetenv(managed_env[i]);
    if (j->timeout)
        setenv_int("USHMEM_BOOTSTRAP_TIMEOUT", j->timeout);
    if (!strcmp(j->mode, "launcher")) {
        setenv_int("USHMEM_RANK", rank);
        setenv_int("USHMEM_NPES", j->n);
        setenv_int("USHMEM_LOCAL_RANK", rank);
        if (j->addr[0])
            setenv("USHMEM_BOOTSTRAP_ADDR", j->addr, 1);
        if (j->secret[0])
            setenv("USHMEM_SECRET", j->secret, 1);
    } else if (!strcmp(j->mode, "torchrun")) {
        setenv_int("RANK", rank);
        setenv_int("WORLD_SIZE", j->n);
        setenv_int("LOCAL_RANK", rank);
        setenv("MASTER_ADDR", "127.0.0.1", 1);
        setenv_int("MASTER_PORT", j->master_port);
    } else if (!strcmp(j->mode, "mpi")) {
        setenv_int("OMPI_COMM_WORLD_RANK", rank);
        /* the case without the MPI module (tests/mpi runs it for real) */
        setenv("USHMEM_MPI_MODULE", "/nonexistent/libushmem_mpi.so", 1);
    }
}

static int pe_init(job_t *j, int rank, ushmemi_bootstrap_t *bs)
{
    set_env(j, rank);
    CHECK(ushmemi_env_load() == 0);
    memset(bs, 0, sizeof *bs);
    if (!strcmp(j->mode, "uid"))
        return ushmemi_bootstrap_init_uid(bs, rank, j->n, &j->uid);
    return ushmemi_bootstrap_init_env(bs);
}

/* ---- checks a PE runs ---- */
static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void fill(unsigned char *p, size_t len, int rank, size_t salt)
{
    uint64_t s = (uint64_t)rank * 1000003u + salt * 7919u + 17;
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)splitmix(&s);
}

static void check_allgather(const ushmemi_bootstrap_t *bs, size_t len, int in_place)
{
    int n = bs->nranks;
    unsigned char *out = malloc(len * (size_t)n + 1), *in = malloc(len + 1);
    unsigned char *expect = malloc(len + 1);
    CHECK(out && in && expect);
    memset(out, 0xEE, len * (size_t)n);
    unsigned char *src = in_place ? out + (size_t)bs->rank * len : in;
    fill(src, len, bs->rank, len);
    CHECK(bs->ops->allgather(src, out, len) == 0);
    for (int k = 0; k < n; k++) {
        fill(expect, len, k, len);
        CHECK(memcmp(out + (size_t)k * len, expect, len) == 0);
    }
    free(out);
    free(in);
    free(expect);
}

static void check_bcast(const ushmemi_bootstrap_t *bs, size_t len)
{
    unsigned char *buf = malloc(len + 1), *expect = malloc(len + 1);
    CHECK(buf && expect);
    for (int root = 0; root < bs->nranks; root++) {
        fill(expect, len, root, len + 1);
        if (bs->rank == root)
            memcpy(buf, expect, len);
        else
            memset(buf, 0xEE, len);
        CHECK(bs->ops->bcast(buf, len, root) == 0);
        CHECK(memcmp(buf, expect, len) == 0);
    }
    free(buf);
    free(expect);
}

static void check_barriers(const ushmemi_bootstrap_t *bs, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        atomic_fetch_add(&g_counts[i], 1);
        CHECK(bs->ops->barrier() == 0);
        /* Nobody leaves barrier i before everyone entered it. */
        CHECK(atomic_load(&g_counts[i]) == bs->nranks);
    }
}

static void run_collectives(const ushmemi_bootstrap_t *bs)
{
    static const size_t lens[] = {0, 1, 7, 64, 4096, 1 << 20};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        check_allgather(bs, lens[i], 0);
        check_allgather(bs, lens[i], 1);
    }
    static const size_t blens[] = {0, 1, 1000, 300000};
    for (size_t i = 0; i < sizeof blens / sizeof blens[0]; i++)
        check_bcast(bs, blens[i]);
    check_barriers(bs, 100);
}

/* What shmem_finalize will do: the monitor must not fire on a clean exit. */
static void finalize(const ushmemi_bootstrap_t *bs)
{
    CHECK(bs->ops->barrier() == 0);
    ushmemi_bootstrap_monitor_stop();
    ushmemi_bootstrap_monitor_stop(); /* idempotent */
    CHECK(bs->ops->barrier() == 0);
    bs->ops->fini();
}

static _Noreturn void spin_forever(void)
{
    volatile unsigned long x = 0;
    for (;;)
        x++;
}

/* ---- PE bodies ---- */
static int body_full(int rank, job_t *j)
{
    ushmemi_bootstrap_t bs;
    int rc = pe_init(j, rank, &bs), lr = -1, ls = -1;
    CHECK(rc == 0);
    CHECK(bs.rank == rank && bs.nranks == j->n);
    CHECK(ushmemi_bootstrap_local_info(&lr, &ls) == 0);
    CHECK(lr == rank && ls == j->n); /* all PEs are on this host */
    CHECK(bs.local_rank == rank);
    const char *want = !strcmp(j->mode, "none") ? "single" : j->mode;
    CHECK(!strcmp(bs.ops->name, want));
    CHECK(ushmemi_bootstrap_monitor_start() == 0);
    CHECK(ushmemi_bootstrap_monitor_start() == 0); /* second start: no-op */
    run_collectives(&bs);
    finalize(&bs);
    CHECK(ushmemi_bootstrap_local_info(&lr, &ls) == USHMEM_ESTATE);
    ushmemi_bootstrap_monitor_stop(); /* after fini: still safe */
    return 0;
}

static int body_uid_root(int rank, job_t *j)
{
    CHECK(ushmemi_bootstrap_make_uid(&j->uid) == 0);
    CHECK(write(j->uid_pipe, &j->uid, sizeof j->uid) == (ssize_t)sizeof j->uid);
    close(j->uid_pipe);
    return body_full(rank, j);
}

/* Makes an id for another process to use as rank 0; keeps the id's port
 * until the parent closes hold_fd's other end (if hold_fd >= 0). */
static int body_uid_maker(int rank, job_t *j)
{
    (void)rank;
    CHECK(ushmemi_bootstrap_make_uid(&j->uid) == 0);
    CHECK(write(j->uid_pipe, &j->uid, sizeof j->uid) == (ssize_t)sizeof j->uid);
    close(j->uid_pipe);
    if (j->hold_fd >= 0) {
        char c;
        while (read(j->hold_fd, &c, 1) > 0) {
        }
    }
    return 0;
}

static int body_uid_busy_port(int rank, job_t *j)
{
    ushmemi_bootstrap_t bs;
    CHECK(pe_init(j, rank, &bs) == USHMEM_EBOOTSTRAP);
    return 0;
}

static int body_uid_garbage(int rank, job_t *j)
{
    ushmemi_bootstrap_t bs;
    fill(j->uid.internal, sizeof j->uid.internal, 42, 42);
    CHECK(pe_init(j, rank, &bs) == USHMEM_EINVAL);
    return 0;
}

static int body_intruder(int rank, job_t *j)
{
    ushmemi_bootstrap_t bs;
    memcpy(j->secret, "00112233445566778899aabbccddeeff", 33);
    double t0 = now_s();
    CHECK(pe_init(j, rank, &bs) == USHMEM_EDENIED);
    CHECK(now_s() - t0 < 3.0); /* refused at once, not after the timeout */
    return 0;
}

static int body_expect_timeout(int rank, job_t *j)
{
    ushmemi_bootstrap_t bs;
    double t0 = now_s();
    CHECK(pe_init(j, rank, &bs) == USHMEM_ETIMEOUT);
    double dt = now_s() - t0;
    CHECK(dt >= j->timeout - 0.5 && dt < j->timeout + 2.0);
    return 0;
}

static int body_expect_unsupported(int rank, job_t *j)
{
    ushmemi_bootstrap_t bs;
    CHECK(pe_init(j, rank, &bs) == USHMEM_EUNSUPPORTED);
    return 0;
}

/* Monitor: the victim leaves without finalize, the others spin. */
static int body_leave(int rank, job_t *j)
{
    ushmemi_bootstrap_t bs;
    CHECK(pe_init(j, rank, &bs) == 0);
    CHECK(ushmemi_bootstrap_monitor_start() == 0);
    CHECK(bs.ops->barrier() == 0);
    if (rank == j->victim)
        _exit(9);
    spin_forever();
}

/* Monitor: the victim leaves; the others block in a bootstrap barrier (the
 * main thread holds the bootstrap lock). */
static int body_leave_during_barrier(int rank, job_t *j)
{
    ushmemi_bootstrap_t bs;
    CHECK(pe_init(j, rank, &bs) == 0);
    CHECK(ushmemi_bootstrap_monitor_start() == 0);
    CHECK(bs.ops->barrier() == 0);
    if (rank == j->victim)
        _exit(9);
    bs.ops->barrier();
    CHECK(!"barrier returned although a PE died");
    return 3;
}

/* shmem_global_exit(7) on the victim; the others spin. */
static int body_global_exit(int rank, job_t *j)
{
    ushmemi_bootstrap_t bs;
    CHECK(pe_init(j, rank, &bs) == 0);
    CHECK(ushmemi_bootstrap_monitor_start() == 0);
    CHECK(bs.ops->barrier() == 0);
    if (rank == j->victim) {
        ushmemi_bootstrap_abort(7, j->abort_msg);
        _exit(7);
    }
    spin_forever();
}

/* Rank 0 in a barrier, the others in an allgather: root must say so. */
static int body_mismatch(int rank, job_t *j)
{
    ushmemi_bootstrap_t bs;
    CHECK(pe_init(j, rank, &bs) == 0);
    if (rank == 0) {
        CHECK(bs.ops->barrier() == USHMEM_EBOOTSTRAP);
        CHECK(bs.ops->barrier() == USHMEM_EBOOTSTRAP); /* stays failed */
        ushmemi_bootstrap_abort(3, "mismatch seen");
        _exit(0);
    }
    uint64_t x = 1, all[MAX_PES];
    bs.ops->allgather(&x, all, sizeof x);
    CHECK(!"allgather returned although root aborted");
    return 4;
}

/* ---- parent side ---- */
static void on_alarm(int sig)
{
    (void)sig;
    g_alarm = 1;
}

static void kid_spawn(kid_t *k, body_fn fn, int rank, job_t *j)
{
    memset(k, 0, sizeof *k);
    k->cap = memfd_create("pe-stderr", 0);
    if (k->cap < 0) {
        perror("memfd_create");
        exit(1);
    }
    fflush(NULL);
    k->pid = fork();
    if (k->pid < 0) {
        perror("fork");
        exit(1);
    }
    if (k->pid == 0) {
        dup2(k->cap, STDERR_FILENO);
        signal(SIGALRM, SIG_DFL);
        alarm(30); /* a PE that hangs dies even if the parent does not kill it */
        g_rank = rank;
        exit(fn(rank, j));
    }
}

/* Wait for every kid, at most timeout seconds; then kill the rest. */
static int kids_wait(kid_t *k, int n, unsigned timeout)
{
    int left = 0;
    for (int i = 0; i < n; i++)
        left += !k[i].exited;
    g_alarm = 0;
    alarm(timeout);
    while (left > 0 && !g_alarm) {
        int status;
        pid_t p = waitpid(-1, &status, 0);
        if (p < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < n; i++) {
            if (k[i].pid == p && !k[i].exited) {
                k[i].exited = 1;
                k[i].status = status;
                k[i].t_exit = now_s();
                left--;
            }
        }
    }
    alarm(0);
    if (left == 0)
        return 0;
    for (int i = 0; i < n; i++) {
        if (!k[i].exited) {
            kill(k[i].pid, SIGKILL);
            waitpid(k[i].pid, &k[i].status, 0);
            k[i].exited = 1;
            k[i].t_exit = now_s();
        }
    }
    return -1;
}

static void kid_output(const kid_t *k, char *buf, size_t size)
{
    ssize_t n = pread(k->cap, buf, size - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
}

static int kid_says(const kid_t *k, const char *what)
{
    static char buf[1 << 16];
    kid_output(k, buf, sizeof buf);
    return strstr(buf, what) != NULL;
}

static int exited_with(const kid_t *k, int code)
{
    return WIFEXITED(k->status) && WEXITSTATUS(k->status) == code;
}

static void describe_status(const kid_t *k, char *buf, size_t size)
{
    if (WIFEXITED(k->status))
        snprintf(buf, size, "exit %d", WEXITSTATUS(k->status));
    else if (WIFSIGNALED(k->status))
        snprintf(buf, size, "signal %d", WTERMSIG(k->status));
    else
        snprintf(buf, size, "status %#x", k->status);
}

/* Print the verdict; on failure (or -v) every kid's status and stderr. */
static void report(const char *name, const char *why, kid_t *k, int n)
{
    g_tests++;
    if (why)
        g_failures++;
    printf("%s %d - %s%s%s\n", why ? "not ok" : "ok", g_tests, name, why ? ": " : "",
           why ? why : "");
    if (why || g_verbose) {
        static char buf[1 << 16];
        for (int i = 0; i < n; i++) {
            char st[32];
            describe_status(&k[i], st, sizeof st);
            kid_output(&k[i], buf, sizeof buf);
            printf("    [child %d, %s]\n", i, st);
            for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
                printf("      %s\n", line);
        }
    }
    for (int i = 0; i < n; i++)
        close(k[i].cap);
    fflush(stdout);
}

static void job_init(job_t *j, const char *mode, int n)
{
    static int seq;
    memset(j, 0, sizeof *j);
    j->mode = mode;
    j->n = n;
    j->uid_pipe = -1;
    j->hold_fd = -1;
    snprintf(j->addr, sizeof j->addr, "unix:@ushmem-test-%d-%d", (int)getpid(), ++seq);
    uint64_t s = (uint64_t)now_s() * 1000003u ^ (uint64_t)getpid() << 20 ^ (uint64_t)seq;
    for (int i = 0; i < 16; i++)
        snprintf(j->secret + 2 * i, 3, "%02x", (unsigned)(splitmix(&s) & 0xff));
    memset((void *)g_counts, 0, 4096);
}

/* A TCP port nobody listens on right now. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        perror("free_port");
        exit(1);
    }
    close(fd);
    return ntohs(sa.sin_port);
}

static const char *all_exited_0(kid_t *k, int n)
{
    for (int i = 0; i < n; i++)
        if (!exited_with(&k[i], 0))
            return "a PE failed";
    return NULL;
}

static void run_job(const char *name, job_t *j, body_fn fn, unsigned timeout)
{
    kid_t k[MAX_PES];
    for (int r = 0; r < j->n; r++)
        kid_spawn(&k[r], fn, r, j);
    const char *why = kids_wait(k, j->n, timeout) ? "timed out" : all_exited_0(k, j->n);
    report(name, why, k, j->n);
}

static void test_collectives(const char *mode)
{
    for (int n = 1; n <= 4; n++) {
        job_t j;
        char name[96];
        job_init(&j, mode, n);
        if (!strcmp(mode, "torchrun"))
            j.master_port = free_port() - 1;
        snprintf(name, sizeof name, "%s: allgather, bcast, 100 barriers, finalize, %d PE%s", mode,
                 n, n > 1 ? "s" : "");
        run_job(name, &j, body_full, 60);
    }
}

static void test_single(void)
{
    job_t j;
    job_init(&j, "none", 1);
    run_job("no launcher: single PE", &j, body_full, 20);
}

static void test_launcher_tcp(void)
{
    job_t j;
    job_init(&j, "launcher", 3);
    snprintf(j.addr, sizeof j.addr, "tcp:127.0.0.1:%d", free_port());
    run_job("launcher over tcp:127.0.0.1, 3 PEs", &j, body_full, 60);
}

static void test_uid(int n)
{
    job_t j;
    kid_t k[MAX_PES];
    int p[2];
    char name[64];
    job_init(&j, "uid", n);
    if (pipe(p) != 0)
        exit(1);
    j.uid_pipe = p[1];
    kid_spawn(&k[0], body_uid_root, 0, &j); /* rank 0 makes the id */
    close(p[1]);
    const char *why = NULL;
    if (read(p[0], &j.uid, sizeof j.uid) != (ssize_t)sizeof j.uid)
        why = "rank 0 sent no unique id";
    close(p[0]);
    for (int r = 1; r < n; r++)
        kid_spawn(&k[r], body_full, r, &j);
    int nk = why ? 1 : n;
    if (kids_wait(k, nk, 60))
        why = "timed out";
    else if (!why)
        why = all_exited_0(k, nk);
    snprintf(name, sizeof name, "uid: shmemx_get_uniqueid on rank 0, %d PEs", n);
    report(name, why, k, nk);
}

/* Rank 0 is not the process that made the id. */
static void test_uid_not_maker(int port_free)
{
    job_t j;
    kid_t k[3];
    int p[2], hold[2];
    job_init(&j, "uid", 2);
    if (pipe(p) != 0 || pipe(hold) != 0)
        exit(1);
    j.uid_pipe = p[1];
    j.hold_fd = port_free ? -1 : hold[0];
    kid_spawn(&k[2], body_uid_maker, 0, &j);
    close(p[1]);
    close(hold[0]);
    const char *why = NULL;
    if (read(p[0], &j.uid, sizeof j.uid) != (ssize_t)sizeof j.uid)
        why = "the maker sent no unique id";
    close(p[0]);
    int nk;
    if (port_free) {
        waitpid(k[2].pid, &k[2].status, 0); /* its port is free again */
        k[2].exited = 1;
        kid_spawn(&k[0], body_full, 0, &j);
        kid_spawn(&k[1], body_full, 1, &j);
        nk = 2;
    } else {
        kid_spawn(&k[0], body_uid_busy_port, 0, &j);
        nk = 1;
    }
    if (kids_wait(k, nk, 30))
        why = "timed out";
    else if (!why)
        why = all_exited_0(k, nk);
    if (!why && !port_free && !kid_says(&k[0], "did not create this unique id"))
        why = "no clear message";
    close(hold[1]); /* the maker may go */
    kids_wait(&k[2], 1, 10);
    if (port_free)
        report("uid: rank 0 did not make the id, port free: it binds the port itself", why, k, 2);
    else
        report("uid: rank 0 did not make the id, port taken: clear error", why, k, 1);
    close(k[2].cap);
}

static void test_uid_garbage(void)
{
    job_t j;
    kid_t k;
    job_init(&j, "uid", 2);
    kid_spawn(&k, body_uid_garbage, 1, &j);
    const char *why = kids_wait(&k, 1, 10) ? "timed out" : all_exited_0(&k, 1);
    if (!why && !kid_says(&k, "unique id is not valid"))
        why = "no clear message";
    report("uid: a garbage id is rejected", why, &k, 1);
}

static void test_wrong_secret(void)
{
    job_t j;
    kid_t k[3];
    job_init(&j, "launcher", 2);
    kid_spawn(&k[0], body_full, 0, &j);
    kid_spawn(&k[1], body_intruder, 1, &j);
    /* The real rank 1 joins only after the intruder was turned away. */
    const char *why = kids_wait(&k[1], 1, 20) ? "the intruder timed out" : NULL;
    kid_spawn(&k[2], body_full, 1, &j);
    if (kids_wait(k, 3, 30))
        why = "timed out";
    else if (!why)
        why = all_exited_0(k, 3);
    if (!why && !kid_says(&k[0], "refused a connection from"))
        why = "root did not log the refusal";
    if (!why && !kid_says(&k[0], "wrong secret"))
        why = "root did not say why";
    if (!why && !kid_says(&k[1], "root refused this PE: wrong secret"))
        why = "the intruder did not say why";
    report("wrong secret: refused with EDENIED, the job still completes", why, k, 3);
}

/* ---- strangers at the root's door ----
 * The parent plays a stranger: it knows where root listens (as anyone on the
 * host can) but not the secret, and tries everything at once while the real
 * PEs join. The job must finish as fast as without it, and root must log a
 * refusal for each connection that said something. */

/* The join MAC as join.c computes it (the wire protocol, version 2). */
static void stranger_mac(uint8_t out[16], const uint8_t *secret, const char *role,
                         const uint8_t *nonce_r, const uint8_t *nonce_p, uint32_t rank,
                         uint32_t nranks)
{
    unsigned char m[8 + 32 + 8];
    memset(m, 0, sizeof m);
    memcpy(m, role, strlen(role));
    memcpy(m + 8, nonce_r, 16);
    memcpy(m + 24, nonce_p, 16);
    for (int i = 0; i < 4; i++) {
        m[40 + i] = (unsigned char)(rank >> (24 - 8 * i));
        m[44 + i] = (unsigned char)(nranks >> (24 - 8 * i));
    }
    ushmemi_mac(out, secret, m, sizeof m);
}

static void be32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (24 - 8 * i));
}

/* Connect to addr (retrying while root is not up yet, at most 10 s). */
static int stranger_connect(const ushmemi_bs_addr_t *a)
{
    for (int i = 0; i < 2000; i++) {
        int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (const struct sockaddr *)&a->sa, a->len) == 0)
            return fd;
        if (fd >= 0)
            close(fd);
        usleep(5000);
    }
    return -1;
}

/* Read root's challenge nonce: 0 on success. */
static int stranger_challenge(int fd, uint8_t nonce[16])
{
    unsigned char b[16 + 24];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = recv(fd, b + got, sizeof b - got, 0);
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    memcpy(nonce, b + 16 + 8, 16);
    return 0;
}

static void stranger_hello(int fd, uint32_t rank, uint32_t nranks, const uint8_t *nonce_p,
                           const uint8_t *mac)
{
    unsigned char b[16 + 48] = {0};
    be32(b, 1);       /* MSG_HELLO */
    be32(b + 12, 48); /* length (low half of the u64) */
    be32(b + 16, 0x55534842u);
    be32(b + 20, 2);
    be32(b + 24, rank);
    be32(b + 28, nranks);
    memcpy(b + 32, nonce_p, 16);
    memcpy(b + 48, mac, 16);
    CHECK(send(fd, b, sizeof b, MSG_NOSIGNAL) == (ssize_t)sizeof b);
}

static int body_rogue(int rank, job_t *j)
{
    ushmemi_bootstrap_t bs;
    set_env(j, rank);
    /* What the old torchrun secret was: anyone could compute it. */
    const char *parts[] = {"ushmem-torchrun-v1", getenv("MASTER_ADDR"), getenv("MASTER_PORT"),
                           getenv("TORCHELASTIC_RUN_ID")};
    uint8_t derived[16];
    char hex[33];
    ushmemi_bootstrap_hash(derived, parts, 4);
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", derived[i]);
    setenv("USHMEM_SECRET", hex, 1);
    CHECK(ushmemi_env_load() == 0);
    memset(&bs, 0, sizeof bs);
    CHECK(ushmemi_bootstrap_init_env(&bs) == USHMEM_EDENIED);
    return 0;
}

/* How long the strangers' 3-PE job takes with nobody at the door (once per
 * run: sanitizer builds are several times slower). */
static double baseline_job_s(void)
{
    static double base = -1;
    if (base >= 0)
        return base;
    job_t j;
    kid_t k[3];
    job_init(&j, "launcher", 3);
    double t0 = now_s();
    for (int r = 0; r < 3; r++)
        kid_spawn(&k[r], body_full, r, &j);
    int failed = kids_wait(k, 3, 60) != 0 || all_exited_0(k, 3) != NULL;
    base = failed ? 5.0 : now_s() - t0;
    for (int r = 0; r < 3; r++)
        close(k[r].cap);
    return base;
}

static void test_strangers(const char *mode, int tcp)
{
    enum { SILENT = 20 };
    job_t j;
    kid_t k[MAX_PES + 1];
    ushmemi_bs_addr_t a;
    char name[160];
    int n = 3, fds[SILENT + 8], nfd = 0;
    baseline_job_s(); /* first: job_init resets the barrier counters */
    job_init(&j, mode, n);
    uint8_t secret[16], nonce_a[16], nonce_b[16], mine[16] = {1, 2, 3}, mac[16];
    for (int i = 0; i < 16; i++) {
        unsigned v;
        sscanf(j.secret + 2 * i, "%2x", &v);
        secret[i] = (uint8_t)v;
    }
    int uid_mode = !strcmp(mode, "uid");
    if (uid_mode) {
        /* Rank 0 makes the id; the id says where it listens (the stranger
         * would have learnt the port from ss or /proc/net/tcp). */
        int pp[2];
        CHECK(pipe(pp) == 0);
        j.uid_pipe = pp[1];
        kid_spawn(&k[0], body_uid_root, 0, &j);
        close(pp[1]);
        CHECK(read(pp[0], &j.uid, sizeof j.uid) == (ssize_t)sizeof j.uid);
        close(pp[0]);
        const unsigned char *b = (const unsigned char *)j.uid.internal;
        char spec[64];
        snprintf(spec, sizeof spec, "tcp:%u.%u.%u.%u:%u", b[12], b[13], b[14], b[15],
                 (unsigned)b[8] << 8 | b[9]);
        CHECK(ushmemi_bootstrap_addr_parse(spec, "test", &a) == 0);
        memcpy(secret, b + 28, sizeof secret);
    } else if (!strcmp(mode, "torchrun")) {
        j.master_port = free_port() - 1;
        char spec[64];
        snprintf(spec, sizeof spec, "tcp:127.0.0.1:%d", j.master_port + 1);
        CHECK(ushmemi_bootstrap_addr_parse(spec, "test", &a) == 0);
    } else {
        if (tcp)
            snprintf(j.addr, sizeof j.addr, "tcp:127.0.0.1:%d", free_port());
        CHECK(ushmemi_bootstrap_addr_parse(j.addr, "test", &a) == 0);
    }
    snprintf(name, sizeof name,
             "strangers at a %s%s root: %d silent, 2 half hellos, garbage, a wrong secret, a "
             "replayed hello%s; the job is not delayed",
             mode, tcp && !strcmp(mode, "launcher") ? " tcp" : "", SILENT,
             !strcmp(mode, "torchrun") ? ", a rogue PE" : "");
    if (!uid_mode)
        kid_spawn(&k[0], body_full, 0, &j);
    const char *why = NULL;
    int fd = stranger_connect(&a);
    if (fd < 0)
        why = "root never listened";
    else
        fds[nfd++] = fd; /* silent */
    for (int i = 1; i < SILENT && !why; i++)
        if ((fds[nfd++] = stranger_connect(&a)) < 0)
            why = "cannot connect";
    if (!why) {
        /* Two half hellos: a header, then nothing. */
        for (int i = 0; i < 2; i++) {
            int h = stranger_connect(&a);
            unsigned char b[8] = {0, 0, 0, 1};
            CHECK(h >= 0 && send(h, b, sizeof b, MSG_NOSIGNAL) == (ssize_t)sizeof b);
            fds[nfd++] = h;
        }
        /* Garbage. */
        int g = stranger_connect(&a);
        CHECK(g >= 0 && send(g, "GET / HTTP/1.0\r\n\r\n", 18, MSG_NOSIGNAL) == 18);
        fds[nfd++] = g;
        /* A wrong secret, properly framed. */
        int w = stranger_connect(&a);
        CHECK(w >= 0 && stranger_challenge(w, nonce_a) == 0);
        uint8_t wrong[16] = {0};
        stranger_mac(mac, wrong, "hello", nonce_a, mine, 1, (uint32_t)n);
        stranger_hello(w, 1, (uint32_t)n, mine, mac);
        fds[nfd++] = w;
        /* A hello good for challenge A, replayed on connection B. (In the
         * launcher modes the test knows the secret; a stranger would only
         * have seen the hello.) */
        int ca = stranger_connect(&a), cb = stranger_connect(&a);
        CHECK(ca >= 0 && cb >= 0 && stranger_challenge(ca, nonce_a) == 0 &&
              stranger_challenge(cb, nonce_b) == 0);
        stranger_mac(mac, secret, "hello", nonce_a, mine, 1, (uint32_t)n);
        stranger_hello(cb, 1, (uint32_t)n, mine, mac);
        fds[nfd++] = ca;
        fds[nfd++] = cb;
    }
    int nk = n;
    if (!strcmp(mode, "torchrun")) {
        kid_spawn(&k[n], body_rogue, 1, &j);
        if (kids_wait(&k[n], 1, 20))
            why = "the rogue PE timed out";
        nk = n + 1;
    }
    double t0 = now_s();
    for (int r = 1; r < n; r++)
        kid_spawn(&k[r], body_full, r, &j);
    if (kids_wait(k, n, 30))
        why = "timed out";
    else if (!why)
        why = all_exited_0(k, nk);
    double dt = now_s() - t0, base = baseline_job_s();
    static char slow[96];
    snprintf(slow, sizeof slow, "the job was delayed: %.2f s, %.2f s with nobody at the door", dt,
             base);
    /* Silent connections are dropped after 2 s: a job that waited for them
     * would take that long at least. */
    if (!why && dt > 2 * base + 1.0)
        why = slow;
    static char out[1 << 16];
    kid_output(&k[0], out, sizeof out);
    if (!why && !strstr(out, "not a ushmem bootstrap hello"))
        why = "root did not log the garbage";
    int wrongs = 0;
    for (char *p = out; (p = strstr(p, "wrong secret")) != NULL; p++)
        wrongs++;
    if (!why && wrongs < 2 + (nk > n))
        why = "root did not log the wrong and replayed secrets";
    if (!why && !tcp && strcmp(mode, "torchrun") &&
        !strstr(out, "too many connections from there say nothing"))
        why = "root did not cap one source's silent connections";
    if (!why && !strstr(out, "the job is complete"))
        why = "root did not log the silent connections it dropped";
    if (!why && nk > n && !kid_says(&k[n], "root refused this PE: wrong secret"))
        why = "the rogue PE was not refused";
    for (int i = 0; i < nfd; i++)
        close(fds[i]);
    report(name, why, k, nk);
}

static int body_expect_denied(int rank, job_t *j)
{
    ushmemi_bootstrap_t bs;
    CHECK(pe_init(j, rank, &bs) == USHMEM_EDENIED);
    return 0;
}

/* A stranger holds the root's address and plays root: it sends a challenge
 * and admits whatever comes, but cannot prove it knows the secret. The PE
 * must not join it. */
static void test_fake_root(void)
{
    job_t j;
    kid_t k;
    ushmemi_bs_addr_t a;
    job_init(&j, "launcher", 2);
    CHECK(ushmemi_bootstrap_addr_parse(j.addr, "test", &a) == 0);
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(l >= 0 && bind(l, (struct sockaddr *)&a.sa, a.len) == 0 && listen(l, 4) == 0);
    kid_spawn(&k, body_expect_denied, 1, &j);
    const char *why = NULL;
    int c = accept(l, NULL, NULL);
    if (c < 0) {
        why = "the PE never connected";
    } else {
        unsigned char ch[40] = {0}, hello[64], st[17 + 16] = {0};
        be32(ch, 5); /* MSG_CHALLENGE */
        be32(ch + 12, 24);
        be32(ch + 16, 0x55534842u);
        be32(ch + 20, 2);
        be32(st, 2); /* MSG_STATUS {0, a made-up proof} */
        be32(st + 12, 17);
        CHECK(send(c, ch, sizeof ch, MSG_NOSIGNAL) == (ssize_t)sizeof ch);
        CHECK(recv(c, hello, sizeof hello, MSG_WAITALL) == (ssize_t)sizeof hello);
        CHECK(send(c, st, sizeof st, MSG_NOSIGNAL) == (ssize_t)sizeof st);
    }
    if (kids_wait(&k, 1, 20))
        why = "timed out";
    else if (!why)
        why = all_exited_0(&k, 1);
    if (!why && !kid_says(&k, "without proving it knows the job secret"))
        why = "no clear message";
    if (c >= 0)
        close(c);
    close(l);
    report("a fake root that cannot prove the secret: the PE does not join it", why, &k, 1);
}

static void test_nobody_listening(int tcp)
{
    job_t j;
    kid_t k;
    job_init(&j, "launcher", 2);
    j.timeout = 2;
    if (tcp)
        snprintf(j.addr, sizeof j.addr, "tcp:127.0.0.1:%d", free_port());
    kid_spawn(&k, body_expect_timeout, 1, &j);
    const char *why = kids_wait(&k, 1, 10) ? "timed out" : all_exited_0(&k, 1);
    char want[200];
    snprintf(want, sizeof want, "nobody listening at %s after 2 s", j.addr);
    if (!why && !kid_says(&k, want))
        why = "no clear message";
    report(tcp ? "nobody listening (tcp): fails after USHMEM_BOOTSTRAP_TIMEOUT"
               : "nobody listening (unix): fails after USHMEM_BOOTSTRAP_TIMEOUT",
           why, &k, 1);
}

static void test_never_joined(void)
{
    job_t j;
    kid_t k;
    job_init(&j, "launcher", 3);
    j.timeout = 2;
    kid_spawn(&k, body_expect_timeout, 0, &j);
    const char *why = kids_wait(&k, 1, 10) ? "timed out" : all_exited_0(&k, 1);
    if (!why && !kid_says(&k, "PEs 1, 2 never joined (2 s)"))
        why = "no clear message";
    report("root alone: names the PEs that never joined", why, &k, 1);
}

static void test_mpi_detected(void)
{
    job_t j;
    kid_t k;
    job_init(&j, "mpi", 1);
    kid_spawn(&k, body_expect_unsupported, 0, &j);
    const char *why = kids_wait(&k, 1, 10) ? "timed out" : all_exited_0(&k, 1);
    if (!why && !kid_says(&k, "launched by mpirun, but the MPI module cannot be loaded "
                              "(USHMEM_MPI_MODULE=/nonexistent/libushmem_mpi.so: no such file)"))
        why = "no clear message";
    report("mpirun detected: EUNSUPPORTED with a clear message", why, &k, 1);
}

static void test_mismatch(void)
{
    job_t j;
    kid_t k[3];
    job_init(&j, "launcher", 3);
    for (int r = 0; r < 3; r++)
        kid_spawn(&k[r], body_mismatch, r, &j);
    const char *why = kids_wait(k, 3, 20) ? "timed out" : NULL;
    if (!why && !(exited_with(&k[0], 0) && exited_with(&k[1], 3) && exited_with(&k[2], 3)))
        why = "wrong exit statuses (want 0, 3, 3)";
    if (!why && !kid_says(&k[0], "every PE must make the same bootstrap calls"))
        why = "root did not explain the mismatch";
    report("mismatched collectives: root explains, its abort stops the others", why, k, 3);
}

/* The victim leaves; everyone else must be gone within 5 s, non-zero. */
static void test_monitor(const char *name, body_fn fn, int victim, const char *abort_msg,
                         int want_code, const char *root_says)
{
    job_t j;
    kid_t k[3];
    job_init(&j, "launcher", 3);
    j.victim = victim;
    j.abort_msg = abort_msg;
    for (int r = 0; r < 3; r++)
        kid_spawn(&k[r], fn, r, &j);
    const char *why = kids_wait(k, 3, 15) ? "timed out (a PE kept running)" : NULL;
    int victim_code = fn == body_global_exit ? 7 : 9;
    if (!why && !exited_with(&k[victim], victim_code))
        why = "the victim did not exit as planned";
    for (int r = 0; r < 3 && !why; r++) {
        if (r == victim)
            continue;
        if (!exited_with(&k[r], want_code))
            why = "a surviving PE did not exit with the expected status";
        else if (k[r].t_exit - k[victim].t_exit > 5.0)
            why = "a surviving PE took more than 5 s to go";
    }
    if (!why && root_says && !kid_says(&k[0], root_says))
        why = "root did not print the expected line";
    if (!why && victim == 0 && fn == body_leave && !kid_says(&k[1], "PE 0 left the job"))
        why = "PE 1 did not say that root left";
    report(name, why, k, 3);
}

/* Address a listening socket on port is bound to, from /proc/net/tcp (as the
 * kernel stores it); 0 when none listens there: -1 when unreadable. */
static long long listener_addr(int port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    char line[512];
    long long found = -1;
    if (!f)
        return -1;
    found = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned ip, p, st;
        if (sscanf(line, " %*d: %8X:%4X %*8X:%*4X %2X", &ip, &p, &st) == 3 && st == 0x0A &&
            (int)p == port)
            found = (long long)ip | 1LL << 40;
    }
    fclose(f);
    return found;
}

/* TCP roots listen where their peers dial (loopback stays loopback), all
 * interfaces with USHMEM_BOOTSTRAP_BIND=any, and reject a bad value. */
static void test_bind(void)
{
    const char *why = NULL;
    ushmemi_bs_addr_t a;
    struct sockaddr_in got;
    socklen_t len = sizeof got;
    int port = free_port(), fd = -1;
    unsetenv("USHMEM_BOOTSTRAP_BIND");
    if (ushmemi_env_load() != 0 || ushmemi_bootstrap_addr_tcp("127.0.0.1", port, "test", &a))
        why = "setup";
    if (!why && ((fd = ushmemi_bootstrap_listen(&a, 4)) < 0 ||
                 getsockname(fd, (struct sockaddr *)&got, &len) != 0 ||
                 got.sin_addr.s_addr != htonl(INADDR_LOOPBACK)))
        why = "default: a root for 127.0.0.1 does not listen on 127.0.0.1 only";
    if (fd >= 0)
        close(fd);
    setenv("USHMEM_BOOTSTRAP_BIND", "any", 1);
    ushmemi_env_load();
    if (!why && ((fd = ushmemi_bootstrap_listen(&a, 4)) < 0 ||
                 getsockname(fd, (struct sockaddr *)&got, &len) != 0 ||
                 got.sin_addr.s_addr != htonl(INADDR_ANY)))
        why = "USHMEM_BOOTSTRAP_BIND=any does not listen on 0.0.0.0";
    if (fd >= 0)
        close(fd);
    setenv("USHMEM_BOOTSTRAP_BIND", "not-an-ip", 1);
    ushmemi_env_load();
    if (!why && (fd = ushmemi_bootstrap_listen(&a, 4)) != -EINVAL)
        why = "USHMEM_BOOTSTRAP_BIND=not-an-ip is not refused";
    if (fd >= 0)
        close(fd);
    unsetenv("USHMEM_BOOTSTRAP_BIND");
    ushmemi_env_load();
    shmemx_uniqueid_t uid;
    if (!why && ushmemi_bootstrap_make_uid(&uid) != 0)
        why = "shmemx_get_uniqueid failed";
    if (!why) {
        const unsigned char *b = uid.internal;
        unsigned uport = (unsigned)b[8] << 8 | b[9];
        uint32_t uip;
        memcpy(&uip, b + 12, sizeof uip);
        long long l = listener_addr((int)uport);
        if (l == 0)
            why = "unique id: nothing listens on its port";
        else if (l > 0 && (uint32_t)l != uip)
            why = "unique id: the root listens on another address than the one it advertises";
    }
    report("bind: roots listen on the address peers dial (USHMEM_BOOTSTRAP_BIND=any: all)", why,
           NULL, 0);
}

static const char *g_only; /* run only the tests whose key contains this */

static int want(const char *key)
{
    return !g_only || strstr(key, g_only);
}

int main(int argc, char **argv)
{
    int repeat = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v"))
            g_verbose = 1;
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (argv[i][0] != '-')
            g_only = argv[i];
        else {
            fprintf(stderr,
                    "usage: %s [-v] [-r repeat] [key: single launcher tcp torchrun "
                    "uid secret strangers nobody joined mpi mismatch bind monitor]\n",
                    argv[0]);
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    g_counts = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_counts == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_alarm}; /* no SA_RESTART: waitpid wakes */
    sigaction(SIGALRM, &sa, NULL);

    for (int rep = 0; rep < repeat; rep++) {
        if (want("single"))
            test_single();
        if (want("launcher"))
            test_collectives("launcher");
        if (want("launcher tcp"))
            test_launcher_tcp();
        if (want("torchrun"))
            test_collectives("torchrun");
        if (want("uid")) {
            test_uid(1);
            test_uid(3);
            test_uid_not_maker(1);
            test_uid_not_maker(0);
            test_uid_garbage();
        }
        if (want("secret"))
            test_wrong_secret();
        if (want("strangers")) {
            test_strangers("launcher", 0);
            test_strangers("launcher", 1);
            test_strangers("torchrun", 1);
            test_strangers("uid", 1);
            test_fake_root();
        }
        if (want("nobody")) {
            test_nobody_listening(0);
            test_nobody_listening(1);
        }
        if (want("joined"))
            test_never_joined();
        if (want("mpi"))
            test_mpi_detected();
        if (want("mismatch"))
            test_mismatch();
        if (want("bind"))
            test_bind();
        if (want("monitor")) {
            test_monitor("monitor: PE 2 exits without finalize, PEs 0 and 1 spinning are "
                         "stopped",
                         body_leave, 2, NULL, 1,
                         "ushmem: PE 2 left the job without shmem_finalize (exited or killed); "
                         "stopping all PEs");
            test_monitor("monitor: root exits without finalize, PEs 1 and 2 spinning are "
                         "stopped",
                         body_leave, 0, NULL, 1, NULL);
            test_monitor("monitor: PE 2 exits while the others wait in a bootstrap barrier",
                         body_leave_during_barrier, 2, NULL, 1, "PE 2 left the job");
            test_monitor("monitor: PE 1 aborts (no message), the others exit 7", body_global_exit,
                         1, NULL, 7, "ushmem: PE 1 called shmem_global_exit(7); stopping all PEs");
            test_monitor("monitor: PE 2 aborts, message names the PE", body_global_exit, 2,
                         "PE 2 called shmem_global_exit(7)", 7,
                         "ushmem: PE 2 called shmem_global_exit(7); stopping all PEs");
            test_monitor("monitor: PE 1 aborts with another message", body_global_exit, 1,
                         "fatal error", 7,
                         "ushmem: PE 1: fatal error (exit status 7); stopping all PEs");
            test_monitor("monitor: root aborts with status 7, the others exit 7", body_global_exit,
                         0, "root gives up", 7, NULL);
        }
    }

    printf("1..%d\n%d of %d failed\n", g_tests, g_failures, g_tests);
    return g_failures ? 1 : 0;
}
