/* Communication contexts. Over mapped memory every put and atomic completes
 * in the call, so a context carries no resources of its own: it records its
 * team (PE numbers given with it are relative to that team) and its options.
 * SHMEM_CTX_DEFAULT is NULL and means the world team. */
#include <pthread.h>
#include <stdlib.h>

#include "core/prims.h"
#include "core/team.h"

#define KNOWN_OPTIONS (SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE)

/* Contexts may be created and destroyed by several threads at once. */
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;

int ushmemi_ctx_pe_team(shmem_ctx_t ctx, int pe, const char *call)
{
    if (ctx == SHMEM_CTX_DEFAULT)
        return pe;
    if (ctx == SHMEM_CTX_INVALID)
        ushmemi_fatal(call, "ctx is SHMEM_CTX_INVALID");
    shmem_team_t team = ctx->team;
    if (team == SHMEM_TEAM_WORLD)
        return pe;
    if (pe < 0 || pe >= team->size)
        ushmemi_fatal(call, "PE %d out of range for the context's team (%d PEs)", pe, team->size);
    return ushmemi_team_world_pe(team, pe);
}

static int ctx_new(shmem_team_t team, long options, shmem_ctx_t *ctx, const char *call)
{
    if (!ctx) {
        ushmemi_error(call, "ctx is NULL");
        return USHMEM_EINVAL;
    }
    *ctx = SHMEM_CTX_INVALID;
    if (!ushmemi_team_check(team, call))
        return USHMEM_EINVAL;
    if (options & ~KNOWN_OPTIONS) {
        ushmemi_error(call, "unknown options 0x%lx", options & ~KNOWN_OPTIONS);
        return USHMEM_EINVAL;
    }
    struct ushmem_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        ushmemi_error(call, "out of memory");
        return USHMEM_ENOMEM;
    }
    c->team = team;
    c->options = options;
    pthread_mutex_lock(&ctx_lock);
    c->next = team->ctxs;
    team->ctxs = c;
    pthread_mutex_unlock(&ctx_lock);
    *ctx = c;
    return 0;
}

USHMEMI_API int shmem_ctx_create(long options, shmem_ctx_t *ctx)
{
    return ctx_new(SHMEM_TEAM_WORLD, options, ctx, "shmem_ctx_create");
}

/* Local, not collective (OpenSHMEM 1.5); SHMEM_TEAM_NUM_CONTEXTS is a hint. */
USHMEMI_API int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)
{
    return ctx_new(team, options, ctx, "shmem_team_create_ctx");
}

static void ctx_unlink(struct ushmem_ctx *c)
{
    for (struct ushmem_ctx **pp = &c->team->ctxs; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            return;
        }
}

USHMEMI_API void shmem_ctx_destroy(shmem_ctx_t ctx)
{
    static const char call[] = "shmem_ctx_destroy";
    if (ctx == SHMEM_CTX_INVALID)
        return;
    if (ctx == SHMEM_CTX_DEFAULT) {
        ushmemi_error(call, "SHMEM_CTX_DEFAULT cannot be destroyed");
        return;
    }
    /* Destroying a context completes its outstanding operations. */
    ushmemi_quiet(ctx);
    pthread_mutex_lock(&ctx_lock);
    ctx_unlink(ctx);
    pthread_mutex_unlock(&ctx_lock);
    free(ctx);
}

void ushmemi_ctx_destroy_team(shmem_team_t team)
{
    pthread_mutex_lock(&ctx_lock);
    struct ushmem_ctx *c = team->ctxs;
    team->ctxs = NULL;
    pthread_mutex_unlock(&ctx_lock);
    if (c)
        ushmemi_debug("shmem_team_destroy", "destroying contexts still open on the team");
    while (c) {
        struct ushmem_ctx *next = c->next;
        ushmemi_quiet(c);
        free(c);
        c = next;
    }
}

USHMEMI_API int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)
{
    static const char call[] = "shmem_ctx_get_team";
    if (!team) {
        ushmemi_error(call, "team is NULL");
        return USHMEM_EINVAL;
    }
    if (ctx == SHMEM_CTX_INVALID) {
        *team = SHMEM_TEAM_INVALID;
        return USHMEM_EINVAL;
    }
    *team = ctx == SHMEM_CTX_DEFAULT ? SHMEM_TEAM_WORLD : ctx->team;
    return 0;
}

USHMEMI_API void shmem_ctx_fence(shmem_ctx_t ctx)
{
    if (ctx != SHMEM_CTX_INVALID)
        ushmemi_fence(ctx);
}

USHMEMI_API void shmem_ctx_quiet(shmem_ctx_t ctx)
{
    if (ctx != SHMEM_CTX_INVALID)
        ushmemi_quiet(ctx);
}

static void pe_quiet(shmem_ctx_t ctx, const int *target_pes, size_t npes, const char *call)
{
    USHMEMI_CHECK_INIT(call);
    if (ctx == SHMEM_CTX_INVALID)
        return;
    if (npes && !target_pes)
        ushmemi_fatal(call, "target_pes is NULL");
    for (size_t i = 0; i < npes; i++) {
        int pe = ushmemi_ctx_pe(ctx, target_pes[i], call);
        if (pe < 0 || pe >= ushmemi_g.n_pes)
            ushmemi_fatal(call, "target_pes[%zu] = %d out of range (n_pes %d)", i, pe,
                          ushmemi_g.n_pes);
    }
    /* Ordering is per job, not per peer, on every transport we have. */
    if (npes)
        ushmemi_quiet(ctx);
}

USHMEMI_API void shmem_pe_quiet(const int *target_pes, size_t npes)
{
    pe_quiet(SHMEM_CTX_DEFAULT, target_pes, npes, "shmem_pe_quiet");
}

USHMEMI_API void shmem_ctx_pe_quiet(shmem_ctx_t ctx, const int *target_pes, size_t npes)
{
    pe_quiet(ctx, target_pes, npes, "shmem_ctx_pe_quiet");
}

/* Sessions are hints: nothing is batched, so start and stop only check. */
USHMEMI_API void shmem_ctx_session_start(shmem_ctx_t ctx, long options,
                                         const shmem_ctx_session_config_t *config, long config_mask)
{
    static const char call[] = "shmem_ctx_session_start";
    (void)options;
    USHMEMI_CHECK_INIT(call);
    if (ctx == SHMEM_CTX_INVALID)
        return;
    if (config_mask && !config)
        ushmemi_error(call, "config_mask is 0x%lx but config is NULL", config_mask);
}

USHMEMI_API void shmem_ctx_session_stop(shmem_ctx_t ctx)
{
    USHMEMI_CHECK_INIT("shmem_ctx_session_stop");
    if (ctx != SHMEM_CTX_INVALID)
        ushmemi_quiet(ctx);
}

/* The names of the 1.6 drafts. */
extern __typeof__(shmem_ctx_session_start) shmem_session_start
    __attribute__((alias("shmem_ctx_session_start"), visibility("default")));
extern __typeof__(shmem_ctx_session_stop) shmem_session_stop
    __attribute__((alias("shmem_ctx_session_stop"), visibility("default")));

/* pshmem_ profiling names */
USHMEMI_PSHMEM(shmem_ctx_create)
USHMEMI_PSHMEM(shmem_team_create_ctx)
USHMEMI_PSHMEM(shmem_ctx_destroy)
USHMEMI_PSHMEM(shmem_ctx_get_team)
USHMEMI_PSHMEM(shmem_ctx_fence)
USHMEMI_PSHMEM(shmem_ctx_quiet)
USHMEMI_PSHMEM(shmem_pe_quiet)
USHMEMI_PSHMEM(shmem_ctx_pe_quiet)
USHMEMI_PSHMEM(shmem_ctx_session_start)
USHMEMI_PSHMEM(shmem_ctx_session_stop)
USHMEMI_PSHMEM(shmem_session_start)
USHMEMI_PSHMEM(shmem_session_stop)
