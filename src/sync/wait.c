/* Point-to-point synchronization: wait/test on symmetric variables that peers
 * update with stores or atomics. Loads are acquire loads, so data a peer wrote
 * before updating the variable (and fenced) is visible once the wait returns. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "core/prims.h"
#include "core/relax.h"
#include "core/team.h"
#include "sync/sigfmt.h"
#include "sync/stacks.h"
#include "transport/transport.h"

/* The wait policy (one for every wait in the library; docs/waits.md has the
 * measurements behind it):
 *  1. Spin with `pause` for the first FAST_POLLS polls: no clock, no state.
 *     A wait that ends here costs what it did before the policy existed.
 *  2. Spin on, reading the clock every CLOCK_POLLS polls, until the wait has
 *     lasted USHMEM_WAIT_SPIN_US. Spinning keeps our CPU: when the CPUs are
 *     taken by other programs, a yield hands our time slice to them and the
 *     peer that answers in 100 ns then waits milliseconds for us (measured:
 *     yielding after 4096 polls made the ping-pong p99 500x OSHMEM's on a
 *     loaded machine). When a PE of this job is queued on our own CPU (the
 *     peers' /proc/<pid>/stat, first after SCHED_CHECK_NS, then every
 *     SCHED_EVERY_NS), move off that CPU (move_off_this_cpu); yield only when
 *     the affinity mask has no other CPU.
 *  3. When this job alone has more PEs on the host than CPUs, the PE we wait
 *     for most likely needs our CPU: yield at once instead of spinning
 *     (4 PEs on 2 cores, barrier_all: 3.4 us yielding at once, 13-19 us after
 *     64 polls).
 *  4. After USHMEM_WAIT_SPIN_US, sleep: each sleep 1/16 of the wait so far
 *     (at least SLEEP_MIN_NS, at most USHMEM_WAIT_SLEEP_MAX_US), so a late
 *     wake adds at most ~6% to a long wait and a job stuck forever costs
 *     about one wake-up per millisecond.
 * A long wait also watches for peers that left: see check_departed(). */
enum { FAST_POLLS = 64, CLOCK_POLLS = 64 };
#define SLEEP_MIN_NS          ((int64_t)20000)
#define SCHED_CHECK_NS        ((int64_t)50000)   /* first check of our CPU's queue */
#define SCHED_EVERY_NS        ((int64_t)2000000) /* later checks */
#define DEPART_CHECK_NS       ((int64_t)100000000)
#define DEPART_EVERY_NS       ((int64_t)10000000)
#define DEPART_GRACE_NS       ((int64_t)1000000000)
#define SCHED_PEERS_PER_CHECK 4

enum { PH_SPIN, PH_YIELD, PH_SLEEP };
/* What a wait needs (see ushmemi_waiter_t): every member of a team; any PE
 * (point-to-point); the holder of a lock. */
enum { WK_TEAM, WK_P2P, WK_LOCK };

/* The slow path's state of the wait in progress on this thread (waits do not
 * nest: nothing inside wait_poll waits). */
typedef struct {
    int64_t t0, next_sched, next_depart, depart_seen;
    uint64_t lock_key; /* WK_LOCK: ushmemi_sym_key of the lock */
    unsigned polls;
    int phase, kind, sched_next_pe, published;
} wait_state_t;
static _Thread_local wait_state_t tw;

/* Until when (ns) waits start by yielding because a PE of this job was found
 * queued on our CPU: once found, every round trip would pay the check's delay
 * again; re-checked when the window ends. */
#define COLOC_WINDOW_NS ((int64_t)5000000)
#define COLOC_LOST_NS   ((int64_t)300000)
static _Atomic int64_t coloc_until;

/* Counters (shmemx_wait_stats): updated on the slow path only. */
static struct {
    _Atomic uint64_t slow_waits, polls, yields, sleeps, sched_yields, moves, longest_ns;
    const char *_Atomic longest_call;
} stats;

static void hang_report_install(void);

void ushmemi_wait_setup(int local_pes)
{
    cpu_set_t cpus;
    int ncpu = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
    const char *pol = ushmemi_env.wait_policy ? ushmemi_env.wait_policy : "auto";
    if (!strcmp(pol, "yield"))
        ushmemi_g.wait_oversub = 1;
    else if (!strcmp(pol, "spin"))
        ushmemi_g.wait_oversub = 0;
    else {
        if (strcmp(pol, "auto"))
            ushmemi_error("shmem_init",
                          "USHMEM_WAIT_POLICY=%s is not auto, spin or yield; using auto", pol);
        ushmemi_g.wait_oversub = local_pes > ncpu;
    }
    /* The application's thread, the proxy's receiver and its request
     * thread per PE (src/transport/proxy/idle.h). */
    ushmemi_g.proxy_awake = !ushmemi_g.wait_oversub && local_pes * 3 <= ncpu;
    long spin = ushmemi_env.wait_spin_us < 0 ? 0 : ushmemi_env.wait_spin_us;
    long smax = ushmemi_env.wait_sleep_max_us < 1 ? 1 : ushmemi_env.wait_sleep_max_us;
    ushmemi_g.wait_spin_ns = (int64_t)spin * 1000;
    ushmemi_g.wait_spin_set = getenv("USHMEM_WAIT_SPIN_US") != NULL;
    ushmemi_g.wait_sleep_max_ns = (int64_t)smax * 1000;
    hang_report_install();
    ushmemi_stacks_install();
}

/* Team waits (barriers, collectives: every member must take part) name
 * their team; of the others, shmem_set_lock needs the lock's holder and the
 * rest are point-to-point waits (any PE may satisfy them). */
static int wait_kind(const ushmemi_waiter_t *w)
{
    if (w->team)
        return WK_TEAM;
    return w->call && (strstr(w->call, "wait") || strstr(w->call, "test")) ? WK_P2P : WK_LOCK;
}

static int team_has(shmem_team_t team, int pe)
{
    int d = pe - team->start;
    return d >= 0 && d % team->stride == 0 && d / team->stride < team->size;
}

/* p holds the lock with this key, as far as its record says (lock.c keeps
 * the last lock taken: a PE holding several may hold any of them). */
static int holds_lock(const ushmemi_sync_region_t *p, uint64_t key)
{
    uint32_t held = atomic_load_explicit(&p->locks_held, memory_order_acquire);
    uint64_t last = atomic_load_explicit(&p->last_lock, memory_order_relaxed);
    return held && key && (held > 1 || last == key || last == 0);
}

static const char *depart_what(uint32_t d)
{
    return d == USHMEMI_DEPART_EXIT ? "exited without calling shmem_finalize"
                                    : "called shmem_finalize";
}

/* A PE that finalized or exited will never write a flag again. A wait that
 * needs a PE that left (a member of the team it waits on, the holder of its
 * lock), or a point-to-point wait after every other PE left, can never end:
 * after a grace period stop the job with a line that says who left and where
 * this PE waits, instead of hanging. (Peers reached only by the mpi transport
 * are not seen here; their deaths reach us through the launcher.) */
static void check_departed(const ushmemi_waiter_t *w, int64_t now, int64_t elapsed)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe, gone = -1, others = 0, left = 0;
    uint32_t how = 0;
    const char *call = w->call;
    if (!call || !strcmp(call, "shmem_finalize"))
        return;
    for (int pe = 0; pe < n; pe++) {
        ushmemi_sync_region_t *p = pe == me ? NULL : ushmemi_peer_sync(pe);
        if (!p)
            continue;
        others++;
        uint32_t d = atomic_load_explicit(&p->depart, memory_order_acquire);
        if (d == USHMEMI_DEPART_RUNNING)
            continue;
        left++;
        /* A PE in shmem_finalize is legitimately done (PE 1 finalizes while
         * PEs 0 and 2 sync on team {0, 2}): it ends only the waits that need
         * it. A PE that left by exit() without finalizing is a failure of the
         * job, whatever this PE waits for (the issue this check exists for: a
         * PE that returns from main while the others wait). */
        int needed = d == USHMEMI_DEPART_EXIT || (tw.kind == WK_TEAM && team_has(w->team, pe)) ||
                     (tw.kind == WK_LOCK && holds_lock(p, tw.lock_key));
        if (needed && (gone < 0 || how != USHMEMI_DEPART_EXIT)) {
            gone = pe;
            how = d;
        }
    }
    int all_left = others > 0 && left == others && others == n - 1;
    int stuck = gone >= 0 || (tw.kind == WK_P2P && all_left);
    if (!stuck) {
        tw.depart_seen = 0;
        return;
    }
    if (!tw.depart_seen) {
        tw.depart_seen = now;
        return;
    }
    if (now - tw.depart_seen < DEPART_GRACE_NS)
        return;
    if (gone < 0) {
        for (int pe = 0; pe < n && gone < 0; pe++) /* name one of them */
            if (pe != me && ushmemi_peer_sync(pe))
                gone = pe;
        how = atomic_load_explicit(&ushmemi_peer_sync(gone)->depart, memory_order_relaxed);
        ushmemi_fatal(call,
                      "every other PE has left (PE %d %s) while this PE still waits here "
                      "(%.1f s); nothing can end this wait, stopping the job",
                      gone, depart_what(how), (double)elapsed * 1e-9);
    }
    if (tw.kind == WK_LOCK && how != USHMEMI_DEPART_EXIT)
        ushmemi_fatal(call,
                      "PE %d %s while holding the lock this PE waits for (%.1f s); stopping "
                      "the job",
                      gone, depart_what(how), (double)elapsed * 1e-9);
    ushmemi_fatal(call, "PE %d %s while this PE waits here (%.1f s); stopping the job", gone,
                  depart_what(how), (double)elapsed * 1e-9);
}

/* Is a PE of this job runnable but queued on cpu, the one we are spinning on?
 * Then our spinning delays the very PE we may be waiting for. */
static int peer_queued_here(int cpu)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    if (cpu < 0 || n > 4096)
        return 0;
    for (int k = 0, seen = 0; k < n && seen < SCHED_PEERS_PER_CHECK; k++) {
        int pe = (tw.sched_next_pe + k) % n;
        ushmemi_sync_region_t *p = pe == me ? NULL : ushmemi_peer_sync(pe);
        if (!p || !ushmemi_g.is_local[pe])
            continue;
        seen++;
        int32_t pid = atomic_load_explicit(&p->pid, memory_order_relaxed);
        if (pid <= 0)
            continue;
        char path[40], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        /* "pid (comm) S ..." : comm may hold spaces, so start after the last ')';
         * the CPU it last ran on (or is queued on) is field 39. */
        char *q = strrchr(buf, ')');
        if (!q || q[1] != ' ')
            continue;
        char state = q[2];
        int field = 3, pcpu = -1;
        for (char *c = q + 2; *c && field < 39; c++)
            if (*c == ' ' && ++field == 39)
                pcpu = atoi(c + 1);
        if (state == 'R' && pcpu == cpu) {
            tw.sched_next_pe = (pe + 1) % n;
            return 1;
        }
    }
    tw.sched_next_pe = (tw.sched_next_pe + SCHED_PEERS_PER_CHECK) % n;
    return 0;
}

/* Leave the CPU a peer of ours is queued on: allow every CPU of our mask but
 * this one (the kernel moves us at once), then restore the mask. Yielding
 * instead keeps the two PEs on one CPU for good (the load balancer sees no
 * gain in moving either while another program holds the other CPU): every
 * round trip then costs two context switches (measured, 2 PEs + 1 busy
 * process on 2 CPUs: 3.6 us per round trip yielding, 0.3 us once apart).
 * 0 when the mask has no other CPU (then waits yield). */
static int move_off_this_cpu(int cpu)
{
    cpu_set_t mask, away;
    if (sched_getaffinity(0, sizeof mask, &mask) != 0 || CPU_COUNT(&mask) < 2 ||
        !CPU_ISSET(cpu, &mask))
        return 0;
    away = mask;
    CPU_CLR(cpu, &away);
    if (sched_setaffinity(0, sizeof away, &away) != 0)
        return 0;
    sched_setaffinity(0, sizeof mask, &mask);
    return 1;
}

static void note_longest(int64_t elapsed, const char *call)
{
    uint64_t e = (uint64_t)elapsed;
    if (e > atomic_load_explicit(&stats.longest_ns, memory_order_relaxed)) {
        atomic_store_explicit(&stats.longest_ns, e, memory_order_relaxed);
        atomic_store_explicit(&stats.longest_call, call, memory_order_relaxed);
    }
}

/* ---- The hang report ----
 * ushrun sends SIGURG to every PE on --timeout and when it gets SIGUSR1 (the
 * default action of SIGURG is to ignore it, so a PE that is not a ushmem
 * program, or not initialized yet, is unharmed). Each PE writes one line:
 * the blocking call it waits in, on what, for which PE and team, for how
 * long; or that it is not in ushmem. A wait publishes itself here when it
 * reaches the slow path (after FAST_POLLS polls: a wait that ends sooner
 * costs nothing more) and ushmemi_wait_done takes it back. Each thread
 * fills its own record (copies, so the handler never reads a waiter's
 * stack) and publishes a pointer to it; a report racing with that thread's
 * next wait may mix two waits, which is harmless for a diagnosis. With
 * several threads waiting, the latest wait is reported. */
typedef struct {
    const ushmemi_waiter_t *owner;
    const char *call;
    const volatile void *addr;
    uint64_t key; /* ushmemi_sym_key(addr) */
    int pe, team_slot, team_start, team_stride, team_size;
    int64_t t0;
} blocked_t;
static _Thread_local blocked_t my_blocked;
static blocked_t *_Atomic blocked; /* the latest published record, NULL: none */

static void publish(const ushmemi_waiter_t *w)
{
    blocked_t *b = &my_blocked;
    b->owner = w;
    b->call = w->call;
    b->addr = w->addr;
    b->key = w->addr ? ushmemi_sym_key(w->addr) : 0;
    b->pe = w->pe;
    b->team_slot = w->team ? w->team->slot : -1;
    if (w->team) {
        b->team_start = w->team->start;
        b->team_stride = w->team->stride;
        b->team_size = w->team->size;
    }
    b->t0 = tw.t0;
    atomic_store_explicit(&blocked, b, memory_order_release);
    tw.published = 1;
}

void ushmemi_wait_unpublish(ushmemi_waiter_t *w)
{
    blocked_t *mine = &my_blocked;
    if (mine->owner == w)
        atomic_compare_exchange_strong_explicit(&blocked, &mine, NULL, memory_order_release,
                                                memory_order_relaxed);
    tw.published = 0;
}

static struct {
    const char *_Atomic what;
    _Atomic int pe;
    _Atomic int64_t t0;
} activity[USHMEMI_ACT_SLOTS];

void ushmemi_activity(int slot, const char *what, int pe)
{
    if (what) {
        atomic_store_explicit(&activity[slot].pe, pe, memory_order_relaxed);
        atomic_store_explicit(&activity[slot].t0, ushmemi_now_ns(), memory_order_relaxed);
    }
    atomic_store_explicit(&activity[slot].what, what, memory_order_release);
}

static void activity_report(void)
{
    static const char *const who[] = {"the kernels' request thread", "the proxy thread"};
    for (int i = 0; i < USHMEMI_ACT_SLOTS; i++) {
        const char *what = atomic_load_explicit(&activity[i].what, memory_order_acquire);
        if (!what)
            continue;
        char lb[384];
        line_t l = {lb, sizeof lb, 0};
        int64_t ms =
            (ushmemi_now_ns() - atomic_load_explicit(&activity[i].t0, memory_order_relaxed)) /
            1000000;
        put_s(&l, "ushmem: PE ");
        put_i(&l, ushmemi_g.my_pe);
        put_s(&l, ": ");
        put_s(&l, who[i]);
        put_s(&l, ": ");
        put_s(&l, what);
        int pe = atomic_load_explicit(&activity[i].pe, memory_order_relaxed);
        if (pe >= 0) {
            put_s(&l, ", PE ");
            put_i(&l, pe);
        }
        put_s(&l, ", for ");
        put_u(&l, (uint64_t)(ms < 0 ? 0 : ms) / 1000, 10);
        put_s(&l, ".");
        put_u(&l, (uint64_t)(ms < 0 ? 0 : ms) % 1000 / 100, 10);
        put_s(&l, " s\n");
        ssize_t rc = write(2, l.buf, l.len);
        (void)rc;
    }
}

static void hang_report(int sig)
{
    (void)sig;
    int saved = errno;
    char lb[384];
    line_t l = {lb, sizeof lb, 0};
    put_s(&l, "ushmem: PE ");
    put_i(&l, ushmemi_g.my_pe);
    const blocked_t *b = atomic_load_explicit(&blocked, memory_order_acquire);
    const ushmemi_waiter_t *w = b ? b->owner : NULL;
    if (!ushmemi_g.initialized) {
        put_s(&l, ": not in ushmem (finalized)");
    } else if (!w) {
        put_s(&l, ": computing, not in ushmem");
    } else {
        put_s(&l, ": ");
        put_s(&l, b->call);
        put_s(&l, ": waiting");
        if (b->addr) {
            put_s(&l, b->team_slot < 0 ? " on " : " on flag ");
            put_u(&l, (uint64_t)(uintptr_t)b->addr, 16);
            if (b->key) {
                static const char *const seg_name[] = {"heap", "data segment", "device heap"};
                unsigned s = (unsigned)(b->key >> 56) - 1;
                put_s(&l, " (");
                put_s(&l, s < 3 ? seg_name[s] : "segment");
                put_s(&l, " offset ");
                put_u(&l, b->key & (((uint64_t)1 << 56) - 1), 16);
                put_s(&l, ")");
            }
        }
        if (b->team_slot < 0 && b->pe < 0 && wait_kind(w) == WK_LOCK) {
            int holder = -1;
            for (int pe = 0; pe < ushmemi_g.n_pes && holder < 0; pe++) {
                ushmemi_sync_region_t *p = ushmemi_peer_sync(pe);
                if (p && atomic_load_explicit(&p->locks_held, memory_order_relaxed) &&
                    atomic_load_explicit(&p->last_lock, memory_order_relaxed) == b->key)
                    holder = pe;
            }
            if (holder >= 0) {
                put_s(&l, ", held by PE ");
                put_i(&l, holder);
            }
        } else if (b->pe >= 0) {
            put_s(&l, ", for PE ");
            put_i(&l, b->pe);
        } else if (b->team_slot < 0) {
            put_s(&l, ", for any PE");
        }
        if (b->team_slot == USHMEMI_TEAM_SLOT_WORLD) {
            put_s(&l, ", team world");
        } else if (b->team_slot == USHMEMI_TEAM_SLOT_SHARED) {
            put_s(&l, ", team shared");
        } else if (b->team_slot >= 0) {
            /* "team {0, 2}"; a large one "team {0, 2, 4, ..., 62}" */
            int size = b->team_size;
            put_s(&l, ", team {");
            for (int i = 0; i < size; i++) {
                if (size > 8 && i == 3) {
                    put_s(&l, ", ...");
                    i = size - 1;
                }
                put_s(&l, i ? ", " : "");
                put_i(&l, b->team_start + i * b->team_stride);
            }
            put_s(&l, "}");
        }
        int64_t ms = (ushmemi_now_ns() - b->t0) / 1000000;
        put_s(&l, ", for ");
        put_u(&l, (uint64_t)(ms < 0 ? 0 : ms) / 1000, 10);
        put_s(&l, ".");
        put_u(&l, (uint64_t)(ms < 0 ? 0 : ms) % 1000 / 100, 10);
        put_s(&l, " s");
    }
    l.buf[l.len++] = '\n';
    ssize_t rc = write(2, l.buf, l.len);
    (void)rc;
    activity_report();
    ushmemi_stacks_report();
    errno = saved;
}

/* Once per process, and only if nobody else handles SIGURG. */
static void hang_report_install(void)
{
    static int installed;
    struct sigaction old, sa;
    if (installed || sigaction(SIGURG, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
        old.sa_handler != SIG_DFL)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = hang_report;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGURG, &sa, NULL) == 0)
        installed = 1;
}

static void wait_slow(ushmemi_waiter_t *w)
{
    int64_t now;
    if (w->spins != UINT_MAX) { /* first slow poll of this wait */
        w->spins = UINT_MAX;
        now = ushmemi_now_ns();
        tw = (wait_state_t){
            .t0 = now,
            .next_sched = now + SCHED_CHECK_NS,
            .next_depart = now + DEPART_CHECK_NS,
            .phase = ushmemi_g.wait_oversub ||
                             now < atomic_load_explicit(&coloc_until, memory_order_relaxed)
                         ? PH_YIELD
                         : PH_SPIN,
            .kind = wait_kind(w),
            .sched_next_pe = (ushmemi_g.my_pe + 1) % (ushmemi_g.n_pes ? ushmemi_g.n_pes : 1)};
        if (tw.kind == WK_LOCK)
            tw.lock_key = ushmemi_sym_key(w->addr);
        atomic_fetch_add_explicit(&stats.slow_waits, 1, memory_order_relaxed);
    }
    if (USHMEMI_UNLIKELY(!tw.published))
        publish(w);
    if (tw.phase == PH_SPIN) {
        if (++tw.polls % CLOCK_POLLS) {
            ushmemi_cpu_relax();
            return;
        }
        atomic_fetch_add_explicit(&stats.polls, CLOCK_POLLS, memory_order_relaxed);
    }
    now = ushmemi_now_ns();
    int64_t elapsed = now - tw.t0;
    note_longest(elapsed, w->call);
    if (USHMEMI_UNLIKELY(now >= tw.next_depart)) {
        tw.next_depart = now + DEPART_EVERY_NS;
        check_departed(w, now, elapsed);
    }
    /* mpi hook: with peers over MPI a waiting PE is the progress engine of
     * the RMA aimed at it (an MPI that moves RMA in software: Open MPI's
     * osc/ucx without RDMA hardware), and one that sleeps leaves it to the
     * progress thread's pokes. 4 PEs on 2 cores: test_amo_all 87 s sleeping
     * after 2 ms, 1.9 s not sleeping; the Mellanox lock stress (PE 0, home of
     * the lock, waits in a barrier for the others) 82 s sleeping after 1 s,
     * 5.1 s not sleeping. So such waits never sleep, unless
     * USHMEM_WAIT_SPIN_US is set: they spin, or yield where oversubscribed. */
    int64_t spin_ns = ushmemi_g.wait_spin_ns;
    if (USHMEMI_UNLIKELY(ushmemi_remote_tl) && !ushmemi_g.wait_spin_set)
        spin_ns = INT64_MAX;
    if (tw.phase != PH_SLEEP && elapsed >= spin_ns)
        tw.phase = PH_SLEEP;
    switch (tw.phase) {
    case PH_SPIN:
        if (now >= tw.next_sched) {
            tw.next_sched = now + SCHED_EVERY_NS;
            int cpu = ushmemi_g.local_size > 1 ? sched_getcpu() : -1;
            if (cpu >= 0 && peer_queued_here(cpu)) {
                if (move_off_this_cpu(cpu)) {
                    atomic_fetch_add_explicit(&stats.moves, 1, memory_order_relaxed);
                    return;
                }
                atomic_store_explicit(&coloc_until, now + COLOC_WINDOW_NS, memory_order_relaxed);
                atomic_fetch_add_explicit(&stats.sched_yields, 1, memory_order_relaxed);
                atomic_fetch_add_explicit(&stats.yields, 1, memory_order_relaxed);
                tw.phase = PH_YIELD;
                sched_yield();
                return;
            }
        }
        ushmemi_cpu_relax();
        return;
    case PH_YIELD:
        atomic_fetch_add_explicit(&stats.yields, 1, memory_order_relaxed);
        if (!ushmemi_g.wait_oversub) {
            /* Yielding because a peer was found on our CPU. A yield that
             * lasted long gave the CPU to another program, not to our peer
             * (who would have come back as soon as it waited): the peer has
             * moved; spin again rather than lose a time slice per wait. */
            atomic_fetch_add_explicit(&stats.sched_yields, 1, memory_order_relaxed);
            sched_yield();
            if (ushmemi_now_ns() - now > COLOC_LOST_NS) {
                atomic_store_explicit(&coloc_until, 0, memory_order_relaxed);
                tw.phase = PH_SPIN;
                tw.next_sched = now + SCHED_EVERY_NS;
            }
            return;
        }
        sched_yield();
        return;
    default: {
        int64_t d = elapsed / 16;
        if (d < SLEEP_MIN_NS)
            d = SLEEP_MIN_NS;
        if (d > ushmemi_g.wait_sleep_max_ns)
            d = ushmemi_g.wait_sleep_max_ns;
        atomic_fetch_add_explicit(&stats.sleeps, 1, memory_order_relaxed);
        struct timespec ts = {(time_t)(d / 1000000000), (long)(d % 1000000000)};
        nanosleep(&ts, NULL);
        return;
    }
    }
}

void ushmemi_wait_poll(ushmemi_waiter_t *w)
{
    /* mpi hook: RMA aimed at this PE may need its MPI progress to complete */
    if (USHMEMI_UNLIKELY(ushmemi_remote_tl))
        ushmemi_remote_tl->progress();
    if (USHMEMI_LIKELY(w->spins < FAST_POLLS) && !ushmemi_g.wait_oversub) {
        /* pause even on the first polls: without it the CPU speculates ahead
         * on the flag and pays a pipeline flush when the line arrives
         * (measured: ping-pong 48 ns with, 72 ns without). */
        w->spins++;
        ushmemi_cpu_relax();
        return;
    }
    wait_slow(w);
}

USHMEMI_API int shmemx_wait_stats(shmemx_wait_stats_t *out)
{
    if (!out)
        return SHMEMX_ERR_INVALID;
    out->slow_waits = atomic_load_explicit(&stats.slow_waits, memory_order_relaxed);
    out->polls = atomic_load_explicit(&stats.polls, memory_order_relaxed);
    out->yields = atomic_load_explicit(&stats.yields, memory_order_relaxed);
    out->sched_yields = atomic_load_explicit(&stats.sched_yields, memory_order_relaxed);
    out->sleeps = atomic_load_explicit(&stats.sleeps, memory_order_relaxed);
    out->moves = atomic_load_explicit(&stats.moves, memory_order_relaxed);
    out->longest_ns = atomic_load_explicit(&stats.longest_ns, memory_order_relaxed);
    const char *c = atomic_load_explicit(&stats.longest_call, memory_order_relaxed);
    out->longest_call = c ? c : "";
    return 0;
}

USHMEMI_API void shmemx_wait_stats_reset(void)
{
    atomic_store_explicit(&stats.slow_waits, 0, memory_order_relaxed);
    atomic_store_explicit(&stats.polls, 0, memory_order_relaxed);
    atomic_store_explicit(&stats.yields, 0, memory_order_relaxed);
    atomic_store_explicit(&stats.sched_yields, 0, memory_order_relaxed);
    atomic_store_explicit(&stats.sleeps, 0, memory_order_relaxed);
    atomic_store_explicit(&stats.moves, 0, memory_order_relaxed);
    atomic_store_explicit(&stats.longest_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&stats.longest_call, NULL, memory_order_relaxed);
}

void ushmemi_wait_report(void)
{
    if (!ushmemi_env.wait_stats)
        return;
    shmemx_wait_stats_t s;
    shmemx_wait_stats(&s);
    ushmemi_error("wait stats",
                  "%llu slow waits, %llu polls, %llu yields (%llu to a PE queued on this CPU), "
                  "%llu moves off a peer's CPU, %llu sleeps, longest wait %.3f ms (%s)",
                  (unsigned long long)s.slow_waits, (unsigned long long)s.polls,
                  (unsigned long long)s.yields, (unsigned long long)s.sched_yields,
                  (unsigned long long)s.moves, (unsigned long long)s.sleeps,
                  (double)s.longest_ns * 1e-6, s.longest_call[0] ? s.longest_call : "-");
}

/* mpi hook: test and signal_fetch also drive the unmapped transport's
 * progress: a PE that polls with shmem_test is waiting too. */
static inline void test_progress(void)
{
    if (USHMEMI_UNLIKELY(ushmemi_remote_tl))
        ushmemi_remote_tl->progress();
}

#define CMP(a, b, cmp)                                                                             \
    ((cmp) == SHMEM_CMP_EQ   ? (a) == (b)                                                          \
     : (cmp) == SHMEM_CMP_NE ? (a) != (b)                                                          \
     : (cmp) == SHMEM_CMP_GT ? (a) > (b)                                                           \
     : (cmp) == SHMEM_CMP_GE ? (a) >= (b)                                                          \
     : (cmp) == SHMEM_CMP_LT ? (a) < (b)                                                           \
                             : (a) <= (b))

#define LOAD_CMP(T, ivar, cmp, value)                                                              \
    do {                                                                                           \
        T a_ = __atomic_load_n((const volatile T *)(ivar), __ATOMIC_ACQUIRE);                      \
        T b_;                                                                                      \
        memcpy(&b_, (value), sizeof b_);                                                           \
        return CMP(a_, b_, cmp);                                                                   \
    } while (0)

static int check_cmp(int cmp, const char *call)
{
    if (cmp < SHMEM_CMP_EQ || cmp > SHMEM_CMP_LE)
        ushmemi_fatal(call, "unknown comparison operator %d", cmp);
    return cmp;
}

int ushmemi_compare(const volatile void *ivar, int dtype, int cmp, const void *value,
                    const char *call)
{
    uint64_t dev_copy; /* device memory is compared through a copy */
    if (USHMEMI_UNLIKELY(ushmemi_devmem) &&
        ushmemi_devmem->load(ivar, USHMEMI_DT_SIZE(dtype), &dev_copy, call))
        ivar = &dev_copy;
    switch (dtype) {
    case USHMEMI_DT(USHMEMI_KIND_SINT, 1): LOAD_CMP(int8_t, ivar, cmp, value);
    case USHMEMI_DT(USHMEMI_KIND_SINT, 2): LOAD_CMP(int16_t, ivar, cmp, value);
    case USHMEMI_DT(USHMEMI_KIND_SINT, 4): LOAD_CMP(int32_t, ivar, cmp, value);
    case USHMEMI_DT(USHMEMI_KIND_SINT, 8): LOAD_CMP(int64_t, ivar, cmp, value);
    case USHMEMI_DT(USHMEMI_KIND_UINT, 1): LOAD_CMP(uint8_t, ivar, cmp, value);
    case USHMEMI_DT(USHMEMI_KIND_UINT, 2): LOAD_CMP(uint16_t, ivar, cmp, value);
    case USHMEMI_DT(USHMEMI_KIND_UINT, 4): LOAD_CMP(uint32_t, ivar, cmp, value);
    case USHMEMI_DT(USHMEMI_KIND_UINT, 8): LOAD_CMP(uint64_t, ivar, cmp, value);
    default: ushmemi_fatal(call, "unsupported type for wait/test (dtype 0x%x)", dtype);
    }
}

/* 0 when this process cannot read [p, p+n) (a device pointer with no device
 * bound, or an address nothing is mapped at): the kernel copies the bytes for
 * us and says EFAULT rather than the wait dying of SIGSEGV. Where the call is
 * not allowed (seccomp), the address is taken as readable. Each thread
 * remembers the last page it found readable, so a test called in a loop on
 * one private word pays the system call once, not per call (n is at most 8
 * and aligned: the word never straddles a page). */
static int host_readable(const volatile void *p, size_t n)
{
    static _Thread_local uintptr_t readable_page = UINTPTR_MAX;
    uintptr_t page = (uintptr_t)p & ~(uintptr_t)4095;
    if (page == readable_page)
        return 1;
    uint64_t sink;
    struct iovec local = {&sink, n}, remote = {(void *)(uintptr_t)p, n};
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)n && errno == EFAULT)
        return 0;
    readable_page = page;
    return 1;
}

static void check_ivar(const volatile void *ivar, int dtype, const char *name, const char *call)
{
    USHMEMI_CHECK_INIT(call);
    if (!ivar)
        ushmemi_fatal(call, "%s is NULL", name);
    if ((uintptr_t)ivar % USHMEMI_DT_SIZE(dtype))
        ushmemi_fatal(call, "%s %p is not aligned to its type", name, (const void *)ivar);
    /* Symmetric host memory is known to be fine, and with a device bound the
     * device layer judges device pointers (ushmemi_compare); anything else (the
     * spec wants ivar symmetric, programs also wait on private words other
     * threads set) is probed once per call. */
    if (USHMEMI_UNLIKELY(ushmemi_seg_of((const void *)ivar, USHMEMI_DT_SIZE(dtype)) < 0) &&
        !ushmemi_devmem && !host_readable(ivar, USHMEMI_DT_SIZE(dtype)))
        ushmemi_fatal(call,
                      "%s %p is not memory this process can read (device memory with no CUDA "
                      "device bound to ushmem? set USHMEM_DEVICE to wait on the device heap)",
                      name, (const void *)ivar);
}

void ushmemi_wait_until(volatile void *ivar, int dtype, int cmp, const void *value,
                        const char *call)
{
    check_ivar(ivar, dtype, "ivar", call);
    check_cmp(cmp, call);
    ushmemi_waiter_t w = USHMEMI_WAITER(call, NULL, ivar, -1);
    while (!ushmemi_compare(ivar, dtype, cmp, value, call))
        ushmemi_wait_poll(&w);
    ushmemi_wait_done(&w);
}

int ushmemi_test(volatile void *ivar, int dtype, int cmp, const void *value, const char *call)
{
    test_progress(); /* mpi hook */
    check_ivar(ivar, dtype, "ivar", call);
    check_cmp(cmp, call);
    return ushmemi_compare(ivar, dtype, cmp, value, call);
}

/* ---- array forms ---- */

static inline volatile void *elem(volatile void *ivars, size_t i, int dtype)
{
    return (volatile char *)ivars + i * USHMEMI_DT_SIZE(dtype);
}

static inline const void *operand(const void *value, const void *values, size_t i, int dtype)
{
    return values ? (const char *)values + i * USHMEMI_DT_SIZE(dtype) : value;
}

static void check_array(volatile void *ivars, size_t nelems, int dtype, int cmp, const void *value,
                        const void *values, const char *call)
{
    USHMEMI_CHECK_INIT(call);
    check_cmp(cmp, call);
    if (nelems && (!ivars || (!value && !values)))
        ushmemi_fatal(call, "ivars or comparison value is NULL");
    if (nelems && (uintptr_t)ivars % USHMEMI_DT_SIZE(dtype))
        ushmemi_fatal(call, "ivars %p is not aligned to its type", (void *)ivars);
}

static inline int included(const int *status, size_t i)
{
    return !status || status[i] == 0;
}

int ushmemi_test_all(volatile void *ivars, size_t nelems, const int *status, int dtype, int cmp,
                     const void *value, const void *values, const char *call)
{
    test_progress(); /* mpi hook */
    check_array(ivars, nelems, dtype, cmp, value, values, call);
    for (size_t i = 0; i < nelems; i++)
        if (included(status, i) && !ushmemi_compare(elem(ivars, i, dtype), dtype, cmp,
                                                    operand(value, values, i, dtype), call))
            return 0;
    return 1;
}

void ushmemi_wait_until_all(volatile void *ivars, size_t nelems, const int *status, int dtype,
                            int cmp, const void *value, const void *values, const char *call)
{
    check_array(ivars, nelems, dtype, cmp, value, values, call);
    ushmemi_waiter_t w = USHMEMI_WAITER(call, NULL, ivars, -1);
    /* Elements once satisfied may change again; the spec asks only that each
     * was observed satisfying the condition, so walk forward and never recheck. */
    for (size_t i = 0; i < nelems; i++) {
        if (!included(status, i))
            continue;
        w.addr = elem(ivars, i, dtype);
        while (!ushmemi_compare(elem(ivars, i, dtype), dtype, cmp, operand(value, values, i, dtype),
                                call))
            ushmemi_wait_poll(&w);
        ushmemi_wait_done(&w);
    }
}

/* Where the next test_any / wait_until_any scan starts. OpenSHMEM 1.5 asks
 * that repeated calls eventually return every satisfying index; a scan that
 * always starts at 0 returns the lowest one forever while it stays satisfied
 * (the spec's test_any example then never sees the others). Each success moves
 * the start past the index it returned, so satisfied indices come round-robin.
 * One counter per PE: calls on other arrays or threads only shift the start,
 * and any start is correct. */
static _Atomic size_t any_next;

size_t ushmemi_test_any(volatile void *ivars, size_t nelems, const int *status, int dtype, int cmp,
                        const void *value, const void *values, const char *call)
{
    test_progress(); /* mpi hook */
    check_array(ivars, nelems, dtype, cmp, value, values, call);
    if (!nelems)
        return SIZE_MAX;
    size_t start = atomic_load_explicit(&any_next, memory_order_relaxed) % nelems;
    for (size_t k = 0, i = start; k < nelems; k++, i = i + 1 == nelems ? 0 : i + 1)
        if (included(status, i) && ushmemi_compare(elem(ivars, i, dtype), dtype, cmp,
                                                   operand(value, values, i, dtype), call)) {
            atomic_store_explicit(&any_next, i + 1, memory_order_relaxed);
            return i;
        }
    return SIZE_MAX;
}

size_t ushmemi_wait_until_any(volatile void *ivars, size_t nelems, const int *status, int dtype,
                              int cmp, const void *value, const void *values, const char *call)
{
    size_t active = 0;
    for (size_t i = 0; i < nelems; i++)
        active += included(status, i);
    if (active == 0) {
        check_array(ivars, nelems, dtype, cmp, value, values, call);
        return SIZE_MAX;
    }
    ushmemi_waiter_t w = USHMEMI_WAITER(call, NULL, ivars, -1);
    for (;;) {
        size_t i = ushmemi_test_any(ivars, nelems, status, dtype, cmp, value, values, call);
        if (i != SIZE_MAX) {
            ushmemi_wait_done(&w);
            return i;
        }
        ushmemi_wait_poll(&w);
    }
}

size_t ushmemi_test_some(volatile void *ivars, size_t nelems, size_t *indices, const int *status,
                         int dtype, int cmp, const void *value, const void *values,
                         const char *call)
{
    test_progress(); /* mpi hook */
    check_array(ivars, nelems, dtype, cmp, value, values, call);
    size_t n = 0;
    for (size_t i = 0; i < nelems; i++)
        if (included(status, i) && ushmemi_compare(elem(ivars, i, dtype), dtype, cmp,
                                                   operand(value, values, i, dtype), call))
            indices[n++] = i;
    return n;
}

size_t ushmemi_wait_until_some(volatile void *ivars, size_t nelems, size_t *indices,
                               const int *status, int dtype, int cmp, const void *value,
                               const void *values, const char *call)
{
    size_t active = 0;
    for (size_t i = 0; i < nelems; i++)
        active += included(status, i);
    if (active == 0) {
        check_array(ivars, nelems, dtype, cmp, value, values, call);
        return 0;
    }
    ushmemi_waiter_t w = USHMEMI_WAITER(call, NULL, ivars, -1);
    for (;;) {
        size_t n =
            ushmemi_test_some(ivars, nelems, indices, status, dtype, cmp, value, values, call);
        if (n) {
            ushmemi_wait_done(&w);
            return n;
        }
        ushmemi_wait_poll(&w);
    }
}

/* ---- signals ---- */

static uint64_t load_signal(const uint64_t *sig_addr, const char *call)
{
    uint64_t v; /* a signal on the device heap is read through a copy */
    if (USHMEMI_UNLIKELY(ushmemi_devmem) && ushmemi_devmem->load(sig_addr, 8, &v, call))
        return v;
    return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

USHMEMI_API uint64_t shmem_signal_fetch(const uint64_t *sig_addr)
{
    USHMEMI_CHECK_INIT("shmem_signal_fetch");
    test_progress(); /* mpi hook */
    if (!sig_addr)
        ushmemi_fatal("shmem_signal_fetch", "sig_addr is NULL");
    if ((uintptr_t)sig_addr % 8)
        ushmemi_fatal("shmem_signal_fetch", "sig_addr %p is not 8-byte aligned",
                      (const void *)sig_addr);
    return load_signal(sig_addr, "shmem_signal_fetch");
}

USHMEMI_API uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)
{
    static const char call[] = "shmem_signal_wait_until";
    const int dt = USHMEMI_DT(USHMEMI_KIND_UINT, 8);
    check_ivar(sig_addr, dt, "sig_addr", call);
    check_cmp(cmp, call);
    /* Return the very value that satisfied the condition: a second read could
     * already see a later update that does not. */
    ushmemi_waiter_t w = USHMEMI_WAITER(call, NULL, sig_addr, -1);
    for (;;) {
        uint64_t v = load_signal(sig_addr, call);
        if (CMP(v, cmp_value, cmp)) {
            ushmemi_wait_done(&w);
            return v;
        }
        ushmemi_wait_poll(&w);
    }
}

/* pshmem_ profiling names */
USHMEMI_PSHMEM(shmem_signal_fetch)
USHMEMI_PSHMEM(shmem_signal_wait_until)
