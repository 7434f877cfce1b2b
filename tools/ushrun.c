/*
 * ushrun: start N ushmem PEs on this host and stop them all if one fails.
 *
 * Standalone on purpose: it must not depend on libushmem, so a broken library build can still
 * be diagnosed with the launcher. The environment it hands each PE is the contract with
 * src/bootstrap/launcher (see usage() for the list).
 */
#include <errno.h>
#include <fcntl.h>
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef USHMEM_VERSION_STRING
#define USHMEM_VERSION_STRING "0.1.0"
#endif

#define USHRUN_MAX_PES       4096
#define USHRUN_KILL_GRACE_MS 2000
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
    int tag_output;
} job = {.kill_at_ms = -1};

static sigset_t orig_mask;
static pid_t launcher_pid;

static void usage(FILE *f)
{
    fprintf(f, "usage: ushrun -n N [--timeout S] [--tag-output] [--] prog [args...]\n");
    if (f != stdout)
        return;
    fprintf(f,
            "\nStarts N OpenSHMEM PEs of prog on this host. If one fails, stops the others and\n"
            "exits with its status (128+signal for a signal death).\n\n"
            "  -n, -np, --np N   number of PEs (1..%d)\n"
            "  -t, --timeout S   stop the job after S seconds and exit 124 (env USHRUN_TIMEOUT)\n"
            "  --tag-output      prefix each output line with [PE n]\n"
            "  -h, --help        this help\n"
            "  --version         print the version\n\n"
            "Each PE gets USHMEM_RANK, USHMEM_NPES, USHMEM_LOCAL_RANK, USHMEM_LOCAL_SIZE,\n"
            "USHMEM_BOOTSTRAP_ADDR, USHMEM_SECRET, USHMEM_LAUNCHER=ushrun, USHMEM_LAUNCHER_PID.\n",
            USHRUN_MAX_PES);
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

static void report_failure(int rank, pid_t pid, int signaled, int code)
{
    char what[96];

    if (signaled) {
        snprintf(what, sizeof(what), "killed by signal %d (%s)", code, strsignal(code));
        job.result = 128 + code;
    } else {
        snprintf(what, sizeof(what), "exited with status %d", code);
        job.result = code;
    }
    if (job.running > 0)
        fprintf(stderr, "ushrun: PE %d (pid %ld) %s; stopping the other %d %s\n", rank, (long)pid,
                what, job.running, pes_word(job.running));
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
 * only peeked here and reaped by the caller's loop, silently). */
static void report_cause(int rank, pid_t pid, int status)
{
    if (WIFSIGNALED(status)) {
        report_failure(rank, pid, 1, WTERMSIG(status));
        return;
    }
    for (int r = 0; r < job.started; r++) {
        siginfo_t si;
        if (!job.pes[r].running || r == rank)
            continue;
        si.si_pid = 0;
        if (waitid(P_PID, (id_t)job.pes[r].pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            si.si_pid != 0 && (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED)) {
            report_failure(r, job.pes[r].pid, 1, si.si_status);
            return;
        }
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

static void on_signal(int sig)
{
    char ranks[256];

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
    fprintf(stderr, "ushrun: timeout after %g s; stopping %d %s (%s)\n", timeout_s, job.running,
            pes_word(job.running), ranks);
    job.result = USHRUN_EXIT_TIMEOUT;
    start_stopping(SIGTERM);
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

        if (!job.stopping && deadline >= 0 && now >= deadline)
            on_timeout(timeout_s);
        if (job.kill_at_ms >= 0 && now >= job.kill_at_ms) {
            signal_job(SIGKILL);
            job.kill_at_ms = -1;
        }
        if (!job.stopping && deadline >= 0)
            wait_ms = deadline - now;
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
    sigprocmask(SIG_BLOCK, &mask, &orig_mask);
    sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
        fprintf(stderr, "ushrun: signalfd: %s\n", strerror(errno));
        return 1;
    }

    launcher_pid = getpid();
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
