/* Error strings and the one-line reporting every layer uses. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "core/state.h"
#include "transport/cuda/devmem.h"

const char *ushmemi_strerror(int err)
{
    switch (err) {
#define USHMEMI_ERR_CASE(name, val, msg)                                                           \
    case (val): return msg;
        USHMEMI_ERRORS(USHMEMI_ERR_CASE)
#undef USHMEMI_ERR_CASE
    }
    return "unknown error";
}

void (*ushmemi_error_hook)(const char *line);

static void vreport(const char *call, const char *fmt, va_list ap)
{
    char line[512];
    int n;
    const char *rank = NULL;
    if (ushmemi_g.n_pes == 0) {
        /* Not initialized (yet): the launcher's environment still says who we are. */
        static const char *const rank_vars[] = {"USHMEM_RANK", "RANK", "OMPI_COMM_WORLD_RANK",
                                                "PMI_RANK"};
        for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0] && !rank; i++)
            rank = getenv(rank_vars[i]);
    }
    if (ushmemi_g.n_pes > 0)
        n = snprintf(line, sizeof line, "ushmem: PE %d: %s: ", ushmemi_g.my_pe, call);
    else if (rank)
        n = snprintf(line, sizeof line, "ushmem: PE %s: %s: ", rank, call);
    else
        n = snprintf(line, sizeof line, "ushmem: %s: ", call);
    if (n < 0 || (size_t)n >= sizeof line)
        n = 0;
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    /* One write so lines from several PEs do not interleave mid-line. */
    fprintf(stderr, "%s\n", line);
    fflush(stderr);
    if (ushmemi_error_hook)
        ushmemi_error_hook(line);
}

void ushmemi_error(const char *call, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(call, fmt, ap);
    va_end(ap);
}

void ushmemi_debug(const char *call, const char *fmt, ...)
{
    if (!ushmemi_env.debug)
        return;
    va_list ap;
    va_start(ap, fmt);
    vreport(call, fmt, ap);
    va_end(ap);
}

_Noreturn void ushmemi_fatal(const char *call, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(call, fmt, ap);
    va_end(ap);
    if (ushmemi_g.cuda_active)
        ushmemi_cuda_dev_abort();
    if (ushmemi_g.n_pes > 1)
        ushmemi_bootstrap_abort(1, "fatal error");
    _exit(1);
}
