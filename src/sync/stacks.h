/* Every thread's call stack for the hang report (USHMEM_HANG_STACKS). */
#ifndef USHMEM_SYNC_STACKS_H
#define USHMEM_SYNC_STACKS_H

void ushmemi_stacks_install(void); /* at init, when USHMEM_HANG_STACKS is set */
void ushmemi_stacks_report(void);  /* from the hang report's signal handler */

#endif
