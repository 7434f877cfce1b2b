/* Is this process the child of a PE? A program that a PE starts (system(),
 * a Python subprocess) inherits its launcher's variables, so its shmem_init
 * would try to join the job a second time under its parent's rank: as rank 0
 * it waits for the others until the bootstrap times out, otherwise it dials a
 * root that stopped listening. The pid alone cannot tell it apart: wrapper
 * scripts (`ushrun -n 4 sh -c './prog; ...'`) put a shell between the
 * launcher and the program, and that program must join. What does is the
 * parent: a PE that joined maps its symmetric heap (the memfd named
 * "ushmem-heap"), a wrapper never does. So we walk up the parents while they
 * were started with this job's variable (ushrun's USHMEM_SECRET, torchrun's
 * run id), for one that maps a ushmem heap. Everything is read from /proc of
 * our own ancestors (same user); anything unreadable counts as "no". One
 * environment file read for a PE that the launcher started itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "bootstrap/star.h"

#define LINEAGE_DEPTH_MAX 32

/* The parent of pid from /proc/pid/stat ("pid (comm) state ppid ..."; comm
 * may hold spaces and parentheses, so parse after the last ')'), or -1. */
static pid_t parent_of(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')');
    char state;
    long ppid;
    if (!rp || sscanf(rp + 1, " %c %ld", &state, &ppid) != 2)
        return -1;
    return (pid_t)ppid;
}

/* 1 if a record of /proc/pid/<file> (records end with delim) contains needle,
 * or with whole, is exactly needle. */
static int proc_record(pid_t pid, const char *file, int delim, const char *needle, int whole)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, file);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char *rec = NULL;
    size_t cap = 0;
    ssize_t n;
    int found = 0;
    while (!found && (n = getdelim(&rec, &cap, delim, f)) > 0) {
        if (rec[n - 1] == delim)
            rec[n - 1] = '\0';
        found = whole ? strcmp(rec, needle) == 0 : strstr(rec, needle) != NULL;
    }
    free(rec);
    fclose(f);
    return found;
}

/* pid maps a ushmem symmetric heap. */
static int maps_heap(pid_t pid)
{
    return proc_record(pid, "maps", '\n', "/memfd:ushmem-heap", 0);
}

/* pid was started with name=value in its environment. */
static int started_with(pid_t pid, const char *name, const char *value)
{
    char want[256];
    int wn = snprintf(want, sizeof want, "%s=%s", name, value);
    return wn > 0 && (size_t)wn < sizeof want && proc_record(pid, "environ", '\0', want, 1);
}

pid_t ushmemi_bootstrap_pe_ancestor(const char *name, const char *value)
{
    if (!value)
        return 0;
    pid_t p = getppid();
    for (int depth = 0; depth < LINEAGE_DEPTH_MAX && p > 1; depth++) {
        if (!started_with(p, name, value))
            return 0; /* the launcher or beyond: outside the job */
        if (maps_heap(p))
            return p;
        p = parent_of(p);
    }
    return 0;
}
