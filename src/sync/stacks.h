/* Every thread's call stack for the hang report (USHMEM_HANG_STACKS). */
#ifndef USHMEM_SYNC_STACKS_H
#define USHMEM_SYNC_STACKS_H

#include <signal.h>

/* The signal each thread answers with its own stack. */
#define USHMEMI_STACK_SIGNAL (SIGRTMIN + 3)

/* The mask ushmem's own threads start with: every signal blocked (they
 * belong to the application's threads) but the stacks' one when
 * USHMEM_HANG_STACKS is set (stacks). */
static inline void ushmemi_helper_thread_mask(sigset_t *all, int stacks)
{
    sigfillset(all);
    if (stacks)
        sigdelset(all, USHMEMI_STACK_SIGNAL);
}

void ushmemi_stacks_install(void); /* at init, when USHMEM_HANG_STACKS is set */
void ushmemi_stacks_report(void);  /* from the hang report's signal handler */

#endif
