/* Core side of MPI support (built into libushmem, which never links MPI):
 * finding and loading libushmem_mpi.so, and a transport ops table that
 * forwards to the module's.
 *
 * The module is looked for in this order: USHMEM_MPI_MODULE (a path; when
 * set, nothing else is tried), the directory of the library this code is in
 * (libushmem.so and libushmem_mpi.so are installed side by side), then the
 * install and build directories known at build time (for programs linked
 * with the static library). It is opened RTLD_GLOBAL: Open MPI loads its own
 * components with dlopen and they expect libmpi's symbols to be global. */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "transport/mpi/mpi.h"
#include "transport/mpi/mpi_module.h"
#include "core/prims.h"
#include "transport/proxy/hands.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const ushmemi_mpi_module_t *mod;
static char mod_path[PATH_MAX];
static char why_not[1024] = "not loaded";

static const ushmemi_mpi_core_t core_table = {
    .abi = USHMEMI_MPI_ABI,
    .state_size = sizeof(ushmemi_state_t),
    .env_size = sizeof(ushmemi_env_t),
    .g = &ushmemi_g,
    .env = &ushmemi_env,
    .error = ushmemi_error,
    .debug = ushmemi_debug,
    .local_copy = ushmemi_proxy_local_copy,
    .local_amo = ushmemi_proxy_local_amo,
    .bounce_alloc = ushmemi_proxy_bounce_alloc,
    .bounce_free = ushmemi_proxy_bounce_free,
    .is_device = ushmemi_proxy_is_device,
    .local_put = ushmemi_proxy_local_put,
    .local_signal = ushmemi_proxy_local_signal,
    .local_sync = ushmemi_proxy_local_sync,
    .activity = ushmemi_activity,
};

/* 0: loaded; 1: not there (try the next place); -1: there but unusable. */
static int try_open(const char *path, size_t *used)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        const char *err = dlerror();
        /* "cannot open shared object file: No such file" is only a miss; any
         * other failure (libmpi.so.40 missing, bad ELF) is the answer. */
        int missing = err && strstr(err, path) && strstr(err, "No such file");
        *used += (size_t)snprintf(why_not + *used, sizeof why_not - *used, "%s%s: %s",
                                  *used ? "; " : "", path,
                                  missing ? "not found"
                                  : err   ? err
                                          : "dlopen failed");
        if (*used >= sizeof why_not)
            *used = sizeof why_not - 1;
        return missing ? 1 : -1;
    }
    ushmemi_mpi_entry_fn entry;
    void *sym = dlsym(h, USHMEMI_MPI_ENTRY);
    memcpy(&entry, &sym, sizeof entry);
    const ushmemi_mpi_module_t *m = sym ? entry(&core_table) : NULL;
    if (!m || m->abi != USHMEMI_MPI_ABI || m->state_size != sizeof(ushmemi_state_t) ||
        m->env_size != sizeof(ushmemi_env_t)) {
        snprintf(why_not, sizeof why_not,
                 "%s is from another build of ushmem (no %s, or a different ABI): rebuild "
                 "and install both libraries together",
                 path, USHMEMI_MPI_ENTRY);
        dlclose(h);
        return -1;
    }
    snprintf(mod_path, sizeof mod_path, "%s", path);
    mod = m;
    return 0; /* stays loaded for the life of the process */
}

static void load(void)
{
    size_t used = 0;
    why_not[0] = '\0';
    const char *env = ushmemi_env.mpi_module;
    if (env && *env) {
        if (try_open(env, &used) == 1)
            snprintf(why_not, sizeof why_not, "USHMEM_MPI_MODULE=%s: no such file", env);
        return;
    }
    char dirs[3][PATH_MAX];
    int ndirs = 0;
    Dl_info info;
    if (dladdr((void *)&load, &info) && info.dli_fname) {
        char tmp[PATH_MAX];
        snprintf(tmp, sizeof tmp, "%s", info.dli_fname);
        snprintf(dirs[ndirs++], PATH_MAX, "%s", dirname(tmp));
    }
#ifdef USHMEM_MPI_MODULE_DIRS /* "installdir:builddir", from CMake */
    const char *p = USHMEM_MPI_MODULE_DIRS;
    while (*p && ndirs < 3) {
        size_t len = strcspn(p, ":");
        snprintf(dirs[ndirs++], PATH_MAX, "%.*s", (int)len, p);
        p += len + (p[len] == ':');
    }
#endif
    for (int i = 0; i < ndirs; i++) {
        char path[PATH_MAX + 32];
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= !strcmp(dirs[i], dirs[j]);
        if (dup)
            continue;
        snprintf(path, sizeof path, "%.*s/%s", PATH_MAX - 1, dirs[i], USHMEMI_MPI_FILE_NAME);
        if (try_open(path, &used) <= 0)
            return;
    }
    if (!used)
        snprintf(why_not, sizeof why_not, "%s not found", USHMEMI_MPI_FILE_NAME);
}

int ushmemi_mpi_load(const char **why)
{
    pthread_once(&load_once, load);
    if (!mod && why)
        *why = why_not;
    return mod ? 0 : USHMEM_EUNSUPPORTED;
}

int ushmemi_mpi_bootstrap_init(ushmemi_bootstrap_t *bs, const char *call)
{
    if (ushmemi_mpi_load(NULL))
        return USHMEM_EUNSUPPORTED;
    return mod->bootstrap_init(bs, call);
}

void ushmemi_mpi_describe(FILE *out)
{
    const char *why = NULL;
    if (ushmemi_mpi_load(&why)) {
        fprintf(out, "  %-6s unusable: %s\n", "mpi", why);
        return;
    }
    fprintf(out, "  %-6s usable: %s (module %s)\n", "mpi", mod->library_version(), mod_path);
}

const ushmemi_transport_ops_t *ushmemi_proxy_ops(void)
{
    return ushmemi_mpi_load(&(const char *){NULL}) ? NULL : mod->proxy;
}

/* ---- the transport, forwarded ---- */

static const char *mpi_unusable_reason(void)
{
    const char *why = NULL;
    return ushmemi_mpi_load(&why) ? why : NULL;
}

static int mpi_init(void)
{
    return mod->transport->init();
}

static void mpi_fini(void)
{
    mod->transport->fini();
}

static int mpi_reachable(int pe, ushmemi_mem_kind_t kind)
{
    return mod->transport->reachable(pe, kind);
}

static int mpi_attach(void)
{
    return mod->transport->attach();
}

static void mpi_detach(void)
{
    mod->transport->detach();
}

static int mpi_put(void *remote_dest, const void *src, size_t n, int pe, int nbi)
{
    return mod->transport->put(remote_dest, src, n, pe, nbi);
}

static int mpi_get(void *dest, const void *remote_src, size_t n, int pe, int nbi)
{
    return mod->transport->get(dest, remote_src, n, pe, nbi);
}

static int mpi_amo(ushmemi_amo_desc_t *desc)
{
    return mod->transport->amo(desc);
}

static int mpi_fence(void)
{
    return mod->transport->fence();
}

static int mpi_quiet(void)
{
    return mod->transport->quiet();
}

static void mpi_progress(void)
{
    mod->transport->progress();
}

const ushmemi_transport_ops_t ushmemi_transport_mpi = {
    .name = "mpi",
    .caps = 0, /* maps nothing: every access is an MPI call */
    .unusable_reason = mpi_unusable_reason,
    .init = mpi_init,
    .fini = mpi_fini,
    .reachable = mpi_reachable,
    .attach = mpi_attach,
    .detach = mpi_detach,
    .put = mpi_put,
    .get = mpi_get,
    .amo = mpi_amo,
    .fence = mpi_fence,
    .quiet = mpi_quiet,
    .progress = mpi_progress,
};
