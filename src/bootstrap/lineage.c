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

/* pid maps a ushmem symmetric heap. */
static int maps_heap(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/maps", (long)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    int found = 0;
    while (!found && getline(&line, &cap, f) > 0)
        found = strstr(line, "/memfd:ushmem-heap") != NULL;
    free(line);
    fclose(f);
    return found;
}

/* pid was started with name=value in its environment. */
static int started_with(pid_t pid, const char *name, const char *value)
{
    char path[64], want[256];
    snprintf(path, sizeof path, "/proc/%ld/environ", (long)pid);
    int wn = snprintf(want, sizeof want, "%s=%s", name, value);
    if (wn < 0 || (size_t)wn >= sizeof want)
        return 0;
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char *var = NULL;
    size_t cap = 0;
    int found = 0;
    while (!found && getdelim(&var, &cap, '\0', f) > 0)
        found = strcmp(var, want) == 0;
    free(var);
    fclose(f);
    return found;
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
