/* Every thread's call stack in the hang report (USHMEM_HANG_STACKS=1), for
 * machines without a debugger: the reporting thread signals each other
 * thread of the process, and each writes its own frames with glibc's
 * backtrace (a static function shows as library+offset: addr2line -e on
 * the library names it). Debugging only: backtrace is not async-signal-
 * safe on its first call, which is why installing calls it once. */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "sync/sigfmt.h"
#include "sync/stacks.h"

enum { MAX_FRAMES = 48 };

static int stack_sig;        /* 0: not installed */
static atomic_int writing;   /* one thread writes at a time */
static atomic_int remaining; /* threads asked that have not written yet */

/* "ushmem: PE 3: thread 1234 (name):" and one line per frame below it,
 * "  library(function+0x12) [+0x3456]" (the offset is what addr2line takes),
 * in one write, so the stacks of several PEs do not interleave. */
static __attribute__((noinline)) void write_own_stack(int skip)
{
    void *frames[MAX_FRAMES];
    int n = backtrace(frames, MAX_FRAMES);
    int tid = (int)syscall(SYS_gettid);
    char comm[32] = "?", pb[64];
    static char out[USHMEMI_ACT_SLOTS + 8][MAX_FRAMES * 160 + 128];
    static atomic_int next_buf;
    line_t path = {pb, sizeof pb, 0};
    line_t l = {out[atomic_fetch_add_explicit(&next_buf, 1, memory_order_relaxed) %
                    (sizeof out / sizeof out[0])],
                sizeof out[0], 0};
    put_s(&path, "/proc/self/task/");
    put_i(&path, tid);
    put_s(&path, "/comm");
    path.buf[path.len] = '\0';
    int fd = open(path.buf, O_RDONLY);
    if (fd >= 0) {
        ssize_t r = read(fd, comm, sizeof comm - 1);
        comm[r > 0 ? r - (comm[r - 1] == '\n') : 0] = '\0';
        close(fd);
    }
    put_s(&l, "ushmem: PE ");
    put_i(&l, ushmemi_g.my_pe);
    put_s(&l, ": thread ");
    put_i(&l, tid);
    put_s(&l, " (");
    put_s(&l, comm);
    put_s(&l, "):\n");
    for (int i = skip; i < n; i++) {
        Dl_info di;
        uintptr_t pc = (uintptr_t)frames[i];
        put_s(&l, "  ");
        if (dladdr(frames[i], &di) && di.dli_fname) {
            const char *base = strrchr(di.dli_fname, '/');
            put_s(&l, base ? base + 1 : di.dli_fname);
            if (di.dli_sname && strlen(di.dli_sname) < 80) {
                put_s(&l, "(");
                put_s(&l, di.dli_sname);
                put_s(&l, "+");
                put_u(&l, pc - (uintptr_t)di.dli_saddr, 16);
                put_s(&l, ")");
            }
            put_s(&l, " [+");
            put_u(&l, pc - (uintptr_t)di.dli_fbase, 16);
            put_s(&l, "]");
        } else {
            put_u(&l, pc, 16);
        }
        put_s(&l, "\n");
    }
    while (atomic_exchange_explicit(&writing, 1, memory_order_acquire))
        ;
    ssize_t w = write(2, l.buf, l.len);
    (void)w;
    atomic_store_explicit(&writing, 0, memory_order_release);
}

static void on_stack_signal(int sig)
{
    (void)sig;
    int saved = errno;
    write_own_stack(3); /* itself, this handler and the signal trampoline */
    atomic_fetch_sub_explicit(&remaining, 1, memory_order_release);
    errno = saved;
}

void ushmemi_stacks_install(void)
{
    static int done;
    if (done || !ushmemi_env.hang_stacks)
        return;
    done = 1;
    void *prime[2];
    (void)backtrace(prime, 2);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stack_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(USHMEMI_STACK_SIGNAL, &sa, NULL) == 0)
        stack_sig = USHMEMI_STACK_SIGNAL;
}

/* Directory entries as getdents64 returns them (no malloc: signal context). */
struct dent64 {
    unsigned long long ino;
    long long off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

void ushmemi_stacks_report(void)
{
    if (!stack_sig)
        return;
    long me = syscall(SYS_gettid);
    write_own_stack(4); /* itself, this function, the report, the trampoline */
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return;
    char buf[4096];
    long n;
    while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long at = 0; at < n;) {
            struct dent64 *d = (struct dent64 *)(buf + at);
            at += d->reclen;
            long tid = 0;
            for (const char *c = d->name; *c >= '0' && *c <= '9'; c++)
                tid = tid * 10 + (*c - '0');
            if (tid <= 0 || tid == me)
                continue;
            atomic_fetch_add_explicit(&remaining, 1, memory_order_relaxed);
            if (syscall(SYS_tgkill, (long)getpid(), tid, stack_sig) != 0)
                atomic_fetch_sub_explicit(&remaining, 1, memory_order_relaxed);
        }
    }
    close(fd);
    /* up to 2 s for the others (a thread inside a blocking call answers too) */
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 2000 && atomic_load_explicit(&remaining, memory_order_acquire) > 0; i++)
        nanosleep(&ms, NULL);
}
