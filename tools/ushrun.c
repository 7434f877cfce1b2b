/*
 * ushrun: start N ushmem PEs on this host and stop them all if one fails.
 *
 * Standalone on purpose: it must not depend on libushmem, so a broken library build can still
 * be diagnosed with the launcher. The environment it hands each PE is the contract with
 * src/bootstrap/launcher (see usage() for the list).
 *
 * --mps (or USHRUN_MPS=1) runs the job under NVIDIA MPS, which several PEs on one GPU need for
 * device-side waits (docs/ushrun_mps.md): before the PEs start, ushrun starts a private MPS
 * control daemon in a fresh temporary directory (or reuses one already running), gives each PE
 * an equal share of its GPU's SMs, and after the job stops that daemon however the job ended.
 * It never changes GPU settings such as the compute mode.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef USHMEM_VERSION_STRING
#define USHMEM_VERSION_STRING "0.1.0"
#endif

#define USHRUN_MAX_PES       4096
#define USHRUN_KILL_GRACE_MS 2000
/* The hang report: every ushmem PE answers SIGURG with one line saying where
 * it waits (src/sync/wait.c). SIGURG because its default action is to ignore
 * it: a PE that is not initialized, or not a ushmem program, is unharmed. */
#define USHRUN_REPORT_SIGNAL SIGURG
#define USHRUN_REPORT_MS     500 /* on a timeout, time given to the reports */
/* A line longer than this is emitted in pieces, so one chatty PE cannot exhaust memory. */
#define USHRUN_MAX_LINE     (64 * 1024)
#define USHRUN_EXIT_USAGE   2
#define USHRUN_EXIT_TIMEOUT 124
#define USHRUN_EXIT_NOEXEC  127

/* One captured output stream of one PE (only with --tag-output). */
typedef struct {
    int fd;     /* read end of the pipe, -1 once closed */
    int out_fd; /* where prefixed lines go: 1 or 2 */
    char prefix[24];
    size_t prefix_len;
    char *line; /* bytes after the last newline seen */
    size_t len, cap;
} ushrun_stream_t;

typedef struct {
    pid_t pid;
    int running;
    ushrun_stream_t out, err;
} ushrun_pe_t;

typedef struct {
    int npes;
    double timeout_s; /* 0: none */
    int tag_output;
    int mps;
    char **argv; /* program and its arguments */
} ushrun_opts_t;

static struct {
    ushrun_pe_t *pes;
    int started; /* PEs forked so far */
    int running; /* forked and not yet reaped */
    pid_t pgid;
    int stopping;
    int result;
    int64_t kill_at_ms; /* when to SIGKILL stragglers; -1: not armed */
    int64_t stop_at_ms; /* timeout: when to stop, after the reports; -1: not armed */
    int tag_output;
} job = {.kill_at_ms = -1, .stop_at_ms = -1};

static sigset_t orig_mask;
static pid_t launcher_pid;

static void usage(FILE *f)
{
    fprintf(f, "usage: ushrun -n N [--timeout S] [--tag-output] [--mps] [--] prog [args...]\n");
    if (f != stdout)
        return;
    fprintf(f,
            "\nStarts N OpenSHMEM PEs of prog on this host. If one fails, stops the others and\n"
            "exits with its status (128+signal for a signal death).\n\n"
            "  -n, -np, --np N   number of PEs (1..%d)\n"
            "  -t, --timeout S   stop the job after S seconds and exit 124 (env USHRUN_TIMEOUT);\n"
            "                    each PE first prints the call it waits in (as on SIGUSR1)\n"
            "  --tag-output      prefix each output line with [PE n]\n"
            "  --mps             run the PEs under NVIDIA MPS (env USHRUN_MPS=1), see below\n"
            "  -h, --help        this help\n"
            "  --version         print the version\n\n"
            "Each PE gets USHMEM_RANK, USHMEM_NPES, USHMEM_LOCAL_RANK, USHMEM_LOCAL_SIZE,\n"
            "USHMEM_BOOTSTRAP_ADDR, USHMEM_SECRET, USHMEM_LAUNCHER=ushrun, USHMEM_LAUNCHER_PID,\n"
            "and RANK and WORLD_SIZE (torch's names; not LOCAL_RANK, which binds a GPU).\n",
            USHRUN_MAX_PES);
    fputs("\nWith --mps, ushrun starts nvidia-cuda-mps-control -d in a private temporary\n"
          "directory and quits it when the job ends, unless a daemon already runs at\n"
          "$CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps): that one is used and left\n"
          "running. Each PE also gets USHMEM_MPS=1, CUDA_MPS_PIPE_DIRECTORY,\n"
          "CUDA_MPS_LOG_DIRECTORY (own daemon only) and, unless already set,\n"
          "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = 100 / PEs per GPU. GPUs are counted from\n"
          "USHRUN_GPUS, else CUDA_VISIBLE_DEVICES, else the /dev/nvidiaN devices.\n"
          "USHRUN_VERBOSE=1 says which daemon is used. GPU settings (compute mode) are never\n"
          "changed. See docs/ushrun_mps.md.\n",
          f);
}

static void usage_error(const char *fmt, ...)
{
    va_list ap;

    fputs("ushrun: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    usage(stderr);
    exit(USHRUN_EXIT_USAGE);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Set, non-empty and not "0". */
static int env_flag(const char *name)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

static int parse_npes(const char *s)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (s[0] == '\0' || *end != '\0' || errno != 0)
        usage_error("-n: '%s' is not a number", s);
    if (v < 1 || v > USHRUN_MAX_PES)
        usage_error("-n: %ld is out of range 1..%d", v, USHRUN_MAX_PES);
    return (int)v;
}

static double parse_timeout(const char *s, const char *what)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    /* 0 means "no timeout", which lets a user override USHRUN_TIMEOUT from the environment. */
    if (s[0] == '\0' || *end != '\0' || errno != 0 || !(v >= 0) || v > 1e7)
        usage_error("%s: '%s' is not a number of seconds", what, s);
    return v;
}

/* Returns the value of option `name` at argv[*i] ("--np 4", "--np=4", or "-n4" when short). */
static const char *option_value(int argc, char **argv, int *i, const char *name, int is_short)
{
    const char *a = argv[*i];
    size_t len = strlen(name);

    if (a[len] == '=')
        return a + len + 1;
    if (a[len] != '\0')
        return is_short ? a + len : NULL;
    if (*i + 1 >= argc)
        usage_error("option %s needs a value", name);
    return argv[++*i];
}

static int option_is(const char *arg, const char *name, int is_short)
{
    size_t len = strlen(name);

    return strncmp(arg, name, len) == 0 && (arg[len] == '\0' || arg[len] == '=' ||
                                            (is_short && arg[len] >= '0' && arg[len] <= '9'));
}

static void parse_args(int argc, char **argv, ushrun_opts_t *o)
{
    const char *env_timeout = getenv("USHRUN_TIMEOUT");
    int have_timeout = 0;
    int i;

    memset(o, 0, sizeof(*o));
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--version") == 0) {
            printf("ushrun (ushmem) %s\n", USHMEM_VERSION_STRING);
            exit(0);
        } else if (strcmp(a, "--tag-output") == 0) {
            o->tag_output = 1;
        } else if (strcmp(a, "--mps") == 0) {
            o->mps = 1;
        } else if (option_is(a, "-np", 1) || option_is(a, "--np", 0)) {
            o->npes = parse_npes(option_value(argc, argv, &i, a[1] == '-' ? "--np" : "-np", 1));
        } else if (option_is(a, "-n", 1)) {
            o->npes = parse_npes(option_value(argc, argv, &i, "-n", 1));
        } else if (option_is(a, "--timeout", 0) || option_is(a, "-t", 1)) {
            const char *name = a[1] == '-' ? "--timeout" : "-t";

            o->timeout_s = parse_timeout(option_value(argc, argv, &i, name, 1), name);
            have_timeout = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            usage_error("unknown option '%s'", a);
        } else {
            break;
        }
    }
    if (o->npes == 0)
        usage_error("the number of PEs (-n N) is required");
    if (i >= argc)
        usage_error("no program to run");
    if (!have_timeout && env_timeout != NULL && env_timeout[0] != '\0')
        o->timeout_s = parse_timeout(env_timeout, "USHRUN_TIMEOUT");
    if (!o->mps)
        o->mps = env_flag("USHRUN_MPS");
    o->argv = argv + i;
}

static void random_hex(char *out, size_t nbytes)
{
    unsigned char buf[32];
    size_t got = 0;

    while (got < nbytes) {
        ssize_t r = getrandom(buf + got, nbytes - got, 0);

        if (r < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "ushrun: getrandom: %s\n", strerror(errno));
            exit(1);
        }
        got += (size_t)r;
    }
    for (size_t k = 0; k < nbytes; k++)
        snprintf(out + 2 * k, 3, "%02x", buf[k]);
}

static void set_env_int(const char *name, long v)
{
    char buf[32];

    snprintf(buf, sizeof(buf), "%ld", v);
    setenv(name, buf, 1);
}

/* Runs in the child between fork and exec; never returns. */
static void child_exec(int rank, int npes, const char *addr, const char *secret, int out_pipe,
                       int err_pipe, char **argv)
{
    /* One group for all PEs (led by PE 0) so that one kill also reaches whatever they fork.
     * The parent makes the same call, so neither order of the two races with a kill. */
    if (setpgid(0, job.pgid) != 0)
        _exit(1);
    /* If ushrun itself is SIGKILLed nobody else would stop the PEs. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher_pid)
        _exit(1);

    if (rank != 0) {
        int fd = open("/dev/null", O_RDONLY);

        if (fd >= 0 && fd != 0) {
            dup2(fd, 0);
            close(fd);
        }
    } else if (isatty(0)) {
        /* The PEs are not the terminal's foreground group: reading would stop rank 0 with
         * SIGTTIN and hang the job. Ignoring it turns that into a read error (EIO). */
        signal(SIGTTIN, SIG_IGN);
    }
    if (out_pipe >= 0) {
        dup2(out_pipe, 1);
        dup2(err_pipe, 2);
    }

    set_env_int("USHMEM_RANK", rank);
    set_env_int("USHMEM_NPES", npes);
    set_env_int("USHMEM_LOCAL_RANK", rank);
    set_env_int("USHMEM_LOCAL_SIZE", npes);
    setenv("USHMEM_BOOTSTRAP_ADDR", addr, 1);
    setenv("USHMEM_SECRET", secret, 1);
    setenv("USHMEM_LAUNCHER", "ushrun", 1);
    set_env_int("USHMEM_LAUNCHER_PID", launcher_pid);
    /* torch's names, for programs that size themselves before shmem_init (rocshmem4py's
     * tests read WORLD_SIZE). Set like torchrun does: a value inherited from an enclosing
     * job would describe that job. The bootstrap still comes from USHMEM_RANK, which wins
     * over RANK/WORLD_SIZE/MASTER_ADDR in detect.c. Not LOCAL_RANK: it binds a GPU. */
    set_env_int("RANK", rank);
    set_env_int("WORLD_SIZE", npes);

    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &orig_mask, NULL);
    execvp(argv[0], argv);
    fprintf(stderr, "ushrun: cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(USHRUN_EXIT_NOEXEC);
}

/* ---- --tag-output ---- */

/* Output of one read is assembled here and written once: one syscall per chunk rather than
 * per line, and each line goes out whole, so lines of different PEs never mix. */
static struct {
    char *p;
    size_t len, cap;
} obuf;

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (p == NULL) {
        fprintf(stderr, "ushrun: out of memory\n");
        exit(1);
    }
    return p;
}

static void obuf_put(const void *p, size_t n)
{
    if (n == 0)
        return; /* p may be NULL */
    if (obuf.len + n > obuf.cap) {
        obuf.cap = 2 * (obuf.len + n);
        obuf.p = xrealloc(obuf.p, obuf.cap);
    }
    memcpy(obuf.p + obuf.len, p, n);
    obuf.len += n;
}

static void obuf_flush(int fd)
{
    const char *p = obuf.p;
    size_t n = obuf.len;

    obuf.len = 0;
    while (n > 0) {
        ssize_t w = write(fd, p, n);

        if (w < 0) {
            if (errno == EINTR)
                continue;
            return; /* reader gone (EPIPE): drop output but keep draining the PEs */
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Emits the pending partial line followed by `n` bytes of `p`. */
static void stream_put_line(ushrun_stream_t *s, const char *p, size_t n)
{
    obuf_put(s->prefix, s->prefix_len);
    obuf_put(s->line, s->len);
    obuf_put(p, n);
    s->len = 0;
}

static void stream_feed(ushrun_stream_t *s, const char *p, size_t n)
{
    const char *nl;

    while (n > 0 && (nl = memchr(p, '\n', n)) != NULL) {
        size_t k = (size_t)(nl - p) + 1;

        stream_put_line(s, p, k);
        p += k;
        n -= k;
    }
    if (n > 0) {
        if (s->len + n > s->cap) {
            s->cap = 2 * (s->len + n);
            s->line = xrealloc(s->line, s->cap);
        }
        memcpy(s->line + s->len, p, n);
        s->len += n;
        if (s->len >= USHRUN_MAX_LINE)
            stream_put_line(s, "\n", 1);
    }
    obuf_flush(s->out_fd);
}

static void stream_close(ushrun_stream_t *s)
{
    if (s->fd < 0)
        return;
    if (s->len > 0) {
        stream_put_line(s, "\n", 1);
        obuf_flush(s->out_fd);
    }
    close(s->fd);
    s->fd = -1;
}

/* Reads at most max_chunks reads' worth, so one chatty PE cannot starve the others; closes the
 * stream at EOF. */
static void stream_read(ushrun_stream_t *s, int max_chunks)
{
    static char buf[65536];

    while (s->fd >= 0 && max_chunks-- > 0) {
        ssize_t r = read(s->fd, buf, sizeof(buf));

        if (r > 0)
            stream_feed(s, buf, (size_t)r);
        else if (r == 0 || (errno != EINTR && errno != EAGAIN))
            stream_close(s);
        else if (errno == EAGAIN)
            return;
    }
}

/* Everything an exited PE wrote is already in its pipe (at most the pipe's capacity, hence the
 * bound); reading it now puts the PE's last words ahead of our "ushrun: PE n ..." report.
 * Grandchildren may hold the pipe open, so this never waits for EOF. */
static void stream_drain(ushrun_stream_t *s)
{
    stream_read(s, 64);
}

static int open_stream(ushrun_stream_t *s, int rank, int out_fd, int *child_end)
{
    int p[2];

    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    s->fd = p[0];
    s->out_fd = out_fd;
    s->prefix_len = (size_t)snprintf(s->prefix, sizeof(s->prefix), "[PE %d] ", rank);
    *child_end = p[1];
    return 0;
}

/* ---- stopping ---- */

static void signal_job(int sig)
{
    /* Only while a PE is unreaped: its zombie keeps the group id from being reused. */
    if (job.running > 0)
        kill(-job.pgid, sig);
}

static void start_stopping(int sig)
{
    job.stopping = 1;
    signal_job(sig);
    job.kill_at_ms = now_ms() + USHRUN_KILL_GRACE_MS;
}

/* Appends "0-3,7" style rank ranges of the running PEs to buf. */
static void running_ranks(char *buf, size_t size)
{
    size_t used = 0;
    int r = 0;

    buf[0] = '\0';
    while (r < job.started && used + 16 < size) {
        int first;

        if (!job.pes[r].running) {
            r++;
            continue;
        }
        first = r;
        while (r + 1 < job.started && job.pes[r + 1].running)
            r++;
        used += (size_t)snprintf(buf + used, size - used, first == r ? "%s%d" : "%s%d-%d",
                                 used ? "," : "", first, r);
        r++;
    }
    if (r < job.started)
        snprintf(buf + used, size - used, ",...");
}

static const char *pes_word(int n)
{
    return n == 1 ? "PE" : "PEs";
}

/* Whether running PE r has ended (its status in *si), without reaping it:
 * the reaping loop does that. */
static int peek_ended(int r, siginfo_t *si)
{
    si->si_pid = 0;
    return waitid(P_PID, (id_t)job.pes[r].pid, si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           si->si_pid != 0;
}

/* PEs not yet ended: job.running less those that exited but are not reaped. */
static int count_alive(void)
{
    int n = 0;
    for (int r = 0; r < job.started; r++) {
        siginfo_t si;
        n += job.pes[r].running && !peek_ended(r, &si);
    }
    return n;
}

static void report_failure(int rank, pid_t pid, int signaled, int code)
{
    char what[96];
    int alive = count_alive();

    if (signaled) {
        snprintf(what, sizeof(what), "killed by signal %d (%s)", code, strsignal(code));
        job.result = 128 + code;
    } else {
        snprintf(what, sizeof(what), "exited with status %d", code);
        job.result = code;
    }
    if (alive > 0)
        fprintf(stderr, "ushrun: PE %d (pid %ld) %s; stopping the other %d %s\n", rank, (long)pid,
                what, alive, pes_word(alive));
    else
        fprintf(stderr, "ushrun: PE %d (pid %ld) %s\n", rank, (long)pid, what);
    start_stopping(SIGTERM);
}

static int rank_of(pid_t pid)
{
    for (int r = 0; r < job.started; r++)
        if (job.pes[r].pid == pid)
            return r;
    return -1;
}

/* Name the cause of a failed job. When a PE is killed, the library makes its
 * peers exit non-zero within milliseconds, and one of those exits may be reaped
 * first; a PE already dead by a signal is the cause, so report that one (it is
 * only peeked here and reaped by the caller's loop, silently). The killed PE's
 * sockets close before it becomes a zombie, so a peer can exit first: look
 * again for up to 200 ms before blaming the PE that exited. */
static void report_cause(int rank, pid_t pid, int status)
{
    if (WIFSIGNALED(status)) {
        report_failure(rank, pid, 1, WTERMSIG(status));
        return;
    }
    for (int tries = 0; tries < 20; tries++) {
        for (int r = 0; r < job.started; r++) {
            siginfo_t si;
            if (!job.pes[r].running || r == rank)
                continue;
            if (peek_ended(r, &si) && (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED)) {
                report_failure(r, job.pes[r].pid, 1, si.si_status);
                return;
            }
        }
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    report_failure(rank, pid, 0, WEXITSTATUS(status));
}

static void reap_children(void)
{
    for (;;) {
        siginfo_t si;
        int status, rank;
        pid_t pid;

        /* Peek first: the last PE's zombie must still exist when we kill the group. */
        si.si_pid = 0;
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0)
            return;
        if (job.stopping && job.running == 1)
            signal_job(SIGKILL); /* grandchildren must not outlive a failed job */
        pid = waitpid(si.si_pid, &status, 0);
        if (pid <= 0)
            return;
        rank = rank_of(pid);
        if (rank < 0)
            continue;
        job.pes[rank].running = 0;
        job.running--;
        if (job.tag_output) {
            stream_drain(&job.pes[rank].out);
            stream_drain(&job.pes[rank].err);
        }
        if (!job.stopping && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
            report_cause(rank, pid, status);
    }
}

/* Every PE prints one line: where it waits, or that it computes. */
static void ask_where(void)
{
    if (job.running > 0)
        kill(-job.pgid, USHRUN_REPORT_SIGNAL);
}

static void on_signal(int sig)
{
    char ranks[256];

    if (sig == SIGUSR1) {
        if (!job.stopping) {
            fprintf(stderr, "ushrun: SIGUSR1: where each PE is:\n");
            ask_where();
        }
        return;
    }
    if (job.stopping) {
        /* A second ^C means "now". */
        signal_job(SIGKILL);
        return;
    }
    running_ranks(ranks, sizeof(ranks));
    fprintf(stderr, "ushrun: received signal %d (%s); stopping %d %s (%s)\n", sig, strsignal(sig),
            job.running, pes_word(job.running), ranks);
    job.result = 128 + sig;
    start_stopping(sig);
}

static void on_timeout(double timeout_s)
{
    char ranks[256];

    running_ranks(ranks, sizeof(ranks));
    fprintf(stderr, "ushrun: timeout after %g s; stopping %d %s (%s); where each PE is:\n",
            timeout_s, job.running, pes_word(job.running), ranks);
    job.result = USHRUN_EXIT_TIMEOUT;
    /* The PEs write their lines, then we stop them (event_loop); meanwhile a
     * PE that ends is not a failure of its own. */
    job.stopping = 1;
    ask_where();
    job.stop_at_ms = now_ms() + USHRUN_REPORT_MS;
}

/* ---- main loop ---- */

static void event_loop(int sfd, double timeout_s)
{
    int64_t deadline = timeout_s > 0 ? now_ms() + (int64_t)(timeout_s * 1000 + 0.5) : -1;
    struct pollfd *fds = calloc((size_t)job.started * 2 + 1, sizeof(*fds));
    ushrun_stream_t **owner = calloc((size_t)job.started * 2 + 1, sizeof(*owner));

    if (fds == NULL || owner == NULL) {
        fprintf(stderr, "ushrun: out of memory\n");
        signal_job(SIGKILL);
        exit(1);
    }
    while (job.running > 0) {
        int64_t now = now_ms(), wait_ms = -1;
        nfds_t n = 1;

        if (!job.stopping && deadline >= 0 && now >= deadline) {
            on_timeout(timeout_s);
            deadline = -1;
        }
        if (job.stop_at_ms >= 0 && now >= job.stop_at_ms) {
            job.stop_at_ms = -1;
            start_stopping(SIGTERM);
        }
        if (job.kill_at_ms >= 0 && now >= job.kill_at_ms) {
            signal_job(SIGKILL);
            job.kill_at_ms = -1;
        }
        if (!job.stopping && deadline >= 0)
            wait_ms = deadline - now;
        if (job.stop_at_ms >= 0 && (wait_ms < 0 || job.stop_at_ms - now < wait_ms))
            wait_ms = job.stop_at_ms - now;
        if (job.kill_at_ms >= 0 && (wait_ms < 0 || job.kill_at_ms - now < wait_ms))
            wait_ms = job.kill_at_ms - now;

        fds[0] = (struct pollfd){.fd = sfd, .events = POLLIN};
        for (int r = 0; job.tag_output && r < job.started; r++) {
            ushrun_stream_t *s[2] = {&job.pes[r].out, &job.pes[r].err};

            for (int k = 0; k < 2; k++) {
                if (s[k]->fd < 0)
                    continue;
                owner[n] = s[k];
                fds[n++] = (struct pollfd){.fd = s[k]->fd, .events = POLLIN};
            }
        }
        if (poll(fds, n, wait_ms > INT_MAX ? INT_MAX : (int)wait_ms) < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "ushrun: poll: %s\n", strerror(errno));
            signal_job(SIGKILL);
            exit(1);
        }
        for (nfds_t k = 1; k < n; k++)
            if (fds[k].revents)
                stream_read(owner[k], 4);
        if (fds[0].revents & POLLIN) {
            struct signalfd_siginfo si;

            while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                if (si.ssi_signo != SIGCHLD)
                    on_signal((int)si.ssi_signo);
            }
            /* SIGCHLDs coalesce, so always reap everything that is ready. */
            reap_children();
        }
    }
    free(fds);
    free(owner);
}

/* Each --tag-output PE holds two pipe ends here; the default soft limit (1024) would cap the
 * job at about 500 PEs. */
static void raise_fd_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* Forks PE `rank`; returns -1 (after saying why) if it could not be started. */
static int start_pe(const ushrun_opts_t *o, int rank, const char *addr, const char *secret)
{
    ushrun_pe_t *pe = &job.pes[rank];
    int out_w = -1, err_w = -1;
    const char *what = "fork";
    pid_t pid = -1;

    pe->out.fd = pe->err.fd = -1;
    if (o->tag_output && (open_stream(&pe->out, rank, 1, &out_w) != 0 ||
                          open_stream(&pe->err, rank, 2, &err_w) != 0))
        what = "pipe";
    else
        pid = fork();
    if (pid == 0)
        child_exec(rank, o->npes, addr, secret, out_w, err_w, o->argv);
    if (out_w >= 0)
        close(out_w);
    if (err_w >= 0)
        close(err_w);
    if (pid < 0) {
        fprintf(stderr, "ushrun: cannot start PE %d: %s: %s\n", rank, what, strerror(errno));
        stream_close(&pe->out);
        stream_close(&pe->err);
        return -1;
    }
    if (rank == 0)
        job.pgid = pid;
    setpgid(pid, job.pgid); /* fails with EACCES once the child has exec'd: it did it itself */
    pe->pid = pid;
    pe->running = 1;
    job.started++;
    job.running++;
    return 0;
}

/* The pipes of --tag-output must not land on fd 0-2 (dup2 onto itself would keep O_CLOEXEC),
 * and a PE should not find its stdout closed because ours was. */
static void ensure_std_fds(void)
{
    for (int fd = 0; fd < 3; fd++) {
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) < 0)
            exit(1);
    }
}

/* ---- --mps ---- */

#define USHRUN_MPS_CONTROL      "nvidia-cuda-mps-control"
#define USHRUN_MPS_PID_FILE     "nvidia-cuda-mps-control.pid"
#define USHRUN_MPS_DEFAULT_PIPE "/tmp/nvidia-mps"
#define USHRUN_MPS_START_MS     10000
#define USHRUN_MPS_STOP_MS      5000
/* MPS puts Unix sockets in the pipe directory and a socket path must fit in 108 bytes, so a
 * longer $TMPDIR is passed over for /tmp. */
#define USHRUN_MPS_MAX_TMPDIR 64

/* The daemon ushrun started; nothing is set while it uses one that was already running. */
static struct {
    pid_t owner; /* atexit handlers also run in a forked child that calls exit() */
    char exe[PATH_MAX];
    char dir[PATH_MAX]; /* the private temporary directory; "" once removed */
    char pipe_dir[PATH_MAX + 8], log_dir[PATH_MAX + 8];
    /* `nvidia-cuda-mps-control -d` runs as a session leader, so a daemon it forks stays in
     * its process group unless it makes its own: a group ushrun can kill if the daemon does
     * not quit. */
    pid_t group;
    int group_unreaped; /* while so, its pid, and so the group id, cannot be reused */
    pid_t daemon_pid;   /* from the daemon's pid file; 0: unknown */
} mps;

static int file_exists(const char *dir, const char *name)
{
    char path[PATH_MAX + 64];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return lstat(path, &st) == 0;
}

static pid_t read_pid_file(const char *dir)
{
    char path[PATH_MAX + 64];
    long pid = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/" USHRUN_MPS_PID_FILE, dir);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "%ld", &pid) != 1 || pid <= 0 || pid > INT_MAX)
        pid = 0;
    fclose(f);
    return (pid_t)pid;
}

/* A daemon that was stopped may leave its control socket behind; a pid file naming no process
 * gives that away. Without a pid file the control file is taken at its word. */
static int mps_daemon_running(const char *pipe_dir)
{
    pid_t pid;

    if (!file_exists(pipe_dir, "control"))
        return 0;
    pid = read_pid_file(pipe_dir);
    return pid == 0 || kill(pid, 0) == 0 || errno == EPERM;
}

/* Whether pid is a live process started with our pipe directory: the daemon's pid file may
 * outlive it and its pid be reused. A zombie's environment reads empty. A daemon whose
 * environment cannot be read is only asked to quit, never waited for or killed. */
static int mps_is_ours(pid_t pid)
{
    char path[64], want[sizeof(mps.pipe_dir) + 32], *buf = NULL;
    size_t len = 0, cap = 0;
    int fd, found = 0;

    if (pid <= 0)
        return 0;
    snprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    for (;;) {
        ssize_t r;

        if (cap - len < 4096) {
            char *p = realloc(buf, 2 * cap + 4096 + 1);

            if (p == NULL)
                break; /* may run in mps_stop, where exit() is not allowed: "not ours" */
            buf = p;
            cap = 2 * cap + 4096;
        }
        r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (buf == NULL)
        return 0;
    snprintf(want, sizeof(want), "CUDA_MPS_PIPE_DIRECTORY=%s", mps.pipe_dir);
    buf[len] = '\0';
    for (size_t k = 0; k < len && !found; k += strlen(buf + k) + 1)
        found = strcmp(buf + k, want) == 0;
    free(buf);
    return found;
}

/* Found before anything starts, so that a missing program is one clear line; the stop then
 * runs the same program as the start. */
static int find_on_path(const char *name, char *out, size_t size)
{
    const char *p = getenv("PATH");

    if (p == NULL)
        p = "/usr/local/bin:/usr/bin:/bin";
    for (;;) {
        const char *end = strchrnul(p, ':');
        int n = (int)(end - p);
        struct stat st;

        if ((size_t)snprintf(out, size, "%.*s%s%s", n, p, n > 0 ? "/" : "./", name) < size &&
            stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
            return 0;
        if (*end == '\0')
            return -1;
        p = end + 1;
    }
}

static int count_gpus(void)
{
    const char *s = getenv("USHRUN_GPUS");
    int n = 0;
    DIR *d;

    if (s != NULL && s[0] != '\0') {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (*end != '\0' || errno != 0 || v < 1 || v > USHRUN_MAX_PES)
            usage_error("USHRUN_GPUS: '%s' is not a number of GPUs", s);
        return (int)v;
    }
    s = getenv("CUDA_VISIBLE_DEVICES");
    if (s != NULL && s[0] != '\0') {
        for (const char *p = s; *p != '\0'; p++)
            if (*p != ',' && (p == s || p[-1] == ','))
                n++;
        if (n > 0)
            return n;
    }
    d = opendir("/dev");
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        const char *p = e->d_name;

        /* nvidia0, nvidia1, ...; not nvidiactl, nvidia-uvm, nvidia-modeset */
        if (strncmp(p, "nvidia", 6) != 0 || p[6] == '\0')
            continue;
        for (p += 6; *p >= '0' && *p <= '9'; p++)
            ;
        n += *p == '\0';
    }
    if (d != NULL)
        closedir(d);
    return n > 0 ? n : 1;
}

/* Runs the control program with the job's pipe and log directories, stdin from in_fd and
 * stdout and stderr to out_fd (both close-on-exec). */
static pid_t mps_spawn(const char *arg, int in_fd, int out_fd, int new_session)
{
    pid_t pid = fork();

    if (pid != 0)
        return pid;
    /* Own session: the terminal's ^C must not reach the daemon before the PEs are done. */
    if (new_session)
        setsid();
    dup2(in_fd, 0);
    dup2(out_fd, 1);
    dup2(out_fd, 2);
    setenv("CUDA_MPS_PIPE_DIRECTORY", mps.pipe_dir, 1);
    setenv("CUDA_MPS_LOG_DIRECTORY", mps.log_dir, 1);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &orig_mask, NULL);
    execl(mps.exe, USHRUN_MPS_CONTROL, arg, (char *)NULL);
    _exit(USHRUN_EXIT_NOEXEC);
}

/* Kills the daemon and whatever it started (only the group when the daemon did not leave it). */
static void mps_kill(void)
{
    if (mps_is_ours(mps.daemon_pid))
        kill(mps.daemon_pid, SIGKILL);
    /* No process with the group's id: the id is not reused, so the group is still ours. */
    if (mps.group_unreaped || (kill(mps.group, 0) != 0 && errno == ESRCH))
        kill(-mps.group, SIGKILL);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* Registered with atexit once the private directory exists, so every way out of ushrun after
 * that (the job done, a PE failed, a timeout, a signal, an error) stops the daemon and removes
 * the directory; the exit status stays what it was. */
static void mps_stop(void)
{
    int64_t deadline = now_ms() + USHRUN_MPS_STOP_MS;
    int asked = 0, quit = 1;
    pid_t client = -1;

    if (mps.dir[0] == '\0' || getpid() != mps.owner)
        return;
    if (mps.daemon_pid == 0)
        mps.daemon_pid = read_pid_file(mps.pipe_dir);
    /* No control file: the daemon never came up and cannot be asked. */
    if (!mps.group_unreaped && file_exists(mps.pipe_dir, "control")) {
        int in[2], null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

        if (null_fd >= 0 && pipe2(in, O_CLOEXEC) == 0) {
            client = mps_spawn(NULL, in[0], null_fd, 0);
            asked = client > 0 && write(in[1], "quit\n", 5) == 5;
            close(in[0]);
            close(in[1]);
        }
        if (null_fd >= 0)
            close(null_fd);
    }
    while (asked) {
        if (client > 0 && waitpid(client, NULL, WNOHANG) == client)
            client = -1;
        if (client < 0 && !mps_is_ours(mps.daemon_pid))
            break;
        if (now_ms() >= deadline) {
            fprintf(stderr,
                    "ushrun: --mps: the MPS control daemon did not quit within %d s; "
                    "killing it\n",
                    USHRUN_MPS_STOP_MS / 1000);
            quit = 0;
            break;
        }
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
    if (!asked || !quit)
        mps_kill();
    if (client > 0) {
        kill(client, SIGKILL);
        waitpid(client, NULL, 0);
    }
    if (mps.group_unreaped)
        waitpid(mps.group, NULL, 0);
    mps.group_unreaped = 0;
    if (nftw(mps.dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0)
        fprintf(stderr, "ushrun: --mps: cannot remove %s: %s\n", mps.dir, strerror(errno));
    mps.dir[0] = '\0';
}

/* What the daemon said, for a failed start: the directory goes away with the exit. */
static void mps_dump(const char *name)
{
    char path[PATH_MAX + 64], buf[2048];
    size_t n;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", mps.dir, name);
    f = fopen(path, "r");
    if (f == NULL)
        return;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (char *line = strtok(buf, "\n"); line != NULL; line = strtok(NULL, "\n"))
        fprintf(stderr, "    %s\n", line);
}

static void mps_start_failed(const char *fmt, ...)
{
    va_list ap;

    fputs("ushrun: --mps: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    mps_dump("start.log");
    mps_dump("log/control.log");
    exit(1); /* mps_stop runs */
}

/* Waits up to ms for a signal. The start can take seconds, and ^C during it must still stop
 * the daemon: it exits, and mps_stop runs. */
static void mps_poll_signals(int sfd, int ms)
{
    struct pollfd p = {.fd = sfd, .events = POLLIN};
    struct signalfd_siginfo si;

    if (poll(&p, 1, ms) <= 0)
        return;
    while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGCHLD)
            continue; /* the -d process: waited for by pid */
        fprintf(stderr, "ushrun: received signal %d (%s) while starting MPS; stopping\n",
                (int)si.ssi_signo, strsignal((int)si.ssi_signo));
        exit(128 + (int)si.ssi_signo);
    }
}

static void mps_start(int sfd)
{
    const char *tmp = getenv("TMPDIR");
    char path[PATH_MAX + 64];
    int64_t deadline;
    int log_fd, null_fd, status;

    if (find_on_path(USHRUN_MPS_CONTROL, mps.exe, sizeof(mps.exe)) != 0) {
        fprintf(stderr, "ushrun: --mps: " USHRUN_MPS_CONTROL " not found on PATH (install the "
                        "NVIDIA driver utilities or drop --mps)\n");
        exit(USHRUN_EXIT_USAGE);
    }
    if (tmp == NULL || tmp[0] != '/' || strlen(tmp) > USHRUN_MPS_MAX_TMPDIR)
        tmp = "/tmp";
    snprintf(mps.dir, sizeof(mps.dir), "%s/ushrun-mps-XXXXXX", tmp);
    if (mkdtemp(mps.dir) == NULL) {
        fprintf(stderr, "ushrun: --mps: cannot create a directory in %s: %s\n", tmp,
                strerror(errno));
        exit(1);
    }
    mps.owner = getpid();
    atexit(mps_stop);
    snprintf(mps.pipe_dir, sizeof(mps.pipe_dir), "%s/pipe", mps.dir);
    snprintf(mps.log_dir, sizeof(mps.log_dir), "%s/log", mps.dir);
    snprintf(path, sizeof(path), "%s/start.log", mps.dir);
    if (mkdir(mps.pipe_dir, 0700) != 0 || mkdir(mps.log_dir, 0700) != 0) {
        fprintf(stderr, "ushrun: --mps: cannot create %s/{pipe,log}: %s\n", mps.dir,
                strerror(errno));
        exit(1);
    }
    /* The daemon must not hold our stdout or stderr: `ushrun | cat` would wait for it. */
    log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (log_fd < 0 || null_fd < 0) {
        fprintf(stderr, "ushrun: --mps: cannot open %s: %s\n", log_fd < 0 ? path : "/dev/null",
                strerror(errno));
        exit(1);
    }
    mps.group = mps_spawn("-d", null_fd, log_fd, 1);
    close(log_fd);
    close(null_fd);
    if (mps.group < 0) {
        fprintf(stderr, "ushrun: --mps: fork: %s\n", strerror(errno));
        exit(1);
    }
    mps.group_unreaped = 1;

    /* Up when `-d` has returned and the control pipe exists. */
    deadline = now_ms() + USHRUN_MPS_START_MS;
    for (;;) {
        if (mps.group_unreaped && waitpid(mps.group, &status, WNOHANG) == mps.group) {
            mps.group_unreaped = 0;
            if (WIFSIGNALED(status))
                mps_start_failed(USHRUN_MPS_CONTROL " -d was killed by signal %d",
                                 WTERMSIG(status));
            if (WEXITSTATUS(status) != 0)
                mps_start_failed(USHRUN_MPS_CONTROL " -d exited with status %d",
                                 WEXITSTATUS(status));
        }
        if (!mps.group_unreaped && file_exists(mps.pipe_dir, "control"))
            break;
        if (now_ms() >= deadline) {
            if (mps.group_unreaped)
                mps_start_failed(USHRUN_MPS_CONTROL " -d did not return within %d s",
                                 USHRUN_MPS_START_MS / 1000);
            mps_start_failed("the MPS control daemon did not come up within %d s (no %s/control)",
                             USHRUN_MPS_START_MS / 1000, mps.pipe_dir);
        }
        mps_poll_signals(sfd, 10);
    }
    mps.daemon_pid = read_pid_file(mps.pipe_dir);
}

/* Uses the daemon running at $CUDA_MPS_PIPE_DIRECTORY, else starts one, and sets what the PEs
 * inherit. Each PE gets 1/k of its GPU's SMs with k PEs on that GPU: device-side waits need
 * the shares on one GPU to sum to at most 100%, or a spinning kernel can starve a peer. */
static void mps_setup(int sfd, int npes)
{
    const char *pipe_dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    const char *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
    int ngpus = count_gpus();
    int per_gpu = (npes + ngpus - 1) / ngpus;
    int share = per_gpu > 100 ? 1 : 100 / per_gpu; /* MPS takes no 0 */
    int verbose = env_flag("USHRUN_VERBOSE");

    if (pipe_dir == NULL || pipe_dir[0] == '\0')
        pipe_dir = USHRUN_MPS_DEFAULT_PIPE;
    if (mps_daemon_running(pipe_dir)) {
        setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1);
        if (verbose)
            fprintf(stderr,
                    "ushrun: --mps: using the MPS daemon already running at %s (left running)\n",
                    pipe_dir);
    } else {
        mps_start(sfd);
        setenv("CUDA_MPS_PIPE_DIRECTORY", mps.pipe_dir, 1);
        setenv("CUDA_MPS_LOG_DIRECTORY", mps.log_dir, 1);
        if (verbose)
            fprintf(stderr, "ushrun: --mps: started an MPS control daemon at %s\n", mps.pipe_dir);
    }
    setenv("USHMEM_MPS", "1", 1);
    if (pct == NULL || pct[0] == '\0')
        set_env_int("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", share);
    if (verbose)
        fprintf(stderr,
                "ushrun: --mps: %d %s on %d GPU%s, %d per GPU; "
                "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s\n",
                npes, pes_word(npes), ngpus, ngpus == 1 ? "" : "s", per_gpu,
                getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
}

int main(int argc, char **argv)
{
    ushrun_opts_t o;
    char jobid[17], secret[33], addr[64];
    sigset_t mask;
    int sfd;

    ensure_std_fds();
    parse_args(argc, argv, &o);
    random_hex(jobid, 8);
    random_hex(secret, 16);
    snprintf(addr, sizeof(addr), "unix:@ushmem-%s", jobid);

    job.tag_output = o.tag_output;
    job.pes = calloc((size_t)o.npes, sizeof(*job.pes));
    if (job.pes == NULL) {
        fprintf(stderr, "ushrun: out of memory\n");
        return 1;
    }
    if (o.tag_output)
        raise_fd_limit();
    /* With --tag-output a closed reader (ushrun ... | head) must not kill us and orphan PEs. */
    signal(SIGPIPE, SIG_IGN);

    /* Blocked before the first fork so no SIGCHLD or ^C can slip past the signalfd. */
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGUSR1); /* the hang report, see ask_where */
    sigprocmask(SIG_BLOCK, &mask, &orig_mask);
    sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
        fprintf(stderr, "ushrun: signalfd: %s\n", strerror(errno));
        return 1;
    }

    launcher_pid = getpid();
    /* After the signal mask: ^C while the daemon starts is seen and stops it. */
    if (o.mps)
        mps_setup(sfd, o.npes);
    for (int r = 0; r < o.npes; r++) {
        if (start_pe(&o, r, addr, secret) != 0) {
            job.result = 1;
            start_stopping(SIGTERM);
            break;
        }
    }
    event_loop(sfd, o.timeout_s);

    /* PEs are gone; collect what they left in the pipes without waiting on grandchildren. */
    for (int r = 0; r < job.started; r++) {
        stream_drain(&job.pes[r].out);
        stream_drain(&job.pes[r].err);
        stream_close(&job.pes[r].out);
        stream_close(&job.pes[r].err);
    }
    return job.result;
}
