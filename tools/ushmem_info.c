/* ushmem_info: version, build options, transports and the environment table.
 * With --peers it initializes (run it under ushrun) and prints each peer's
 * route from PE 0. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "transport/transport.h"
#include "core/internal.h"

void ushmemi_transport_describe(FILE *out);
void ushmemi_env_print_markdown(FILE *out);

static void usage(FILE *out)
{
    fprintf(out, "usage: ushmem_info [--env-markdown | --peers | --help]\n");
}

int main(int argc, char **argv)
{
    int peers = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--env-markdown")) {
            ushmemi_env_load();
            ushmemi_env_print_markdown(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--peers")) {
            peers = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (peers) {
        shmem_init();
        if (shmem_my_pe() == 0) {
            printf("PE 0 of %d: routes\n", shmem_n_pes());
            for (int pe = 0; pe < shmem_n_pes(); pe++)
                printf("  PE %-4d host memory: %-6s device heap: %s\n", pe,
                       ushmemi_pe_transport_name(pe), ushmemi_pe_dev_transport_name(pe));
            if (ushmemi_proxy_tl && ushmemi_proxy_tl->describe)
                printf("proxy: %s\n", ushmemi_proxy_tl->describe());
            shmemx_dev_t d;
            if (ushmemi_g.cuda_active && shmemx_dev_get(&d) == 0) {
                const char *why = shmemx_dev_why();
                printf("device API: kernels may put/get/signal/AMO; device-side waits %s%s\n",
                       why ? "refused: " : "allowed", why ? why : "");
            }
        }
        shmem_finalize();
        return 0;
    }
    int env_ok = ushmemi_env_load() == 0;
    printf("ushmem %s (OpenSHMEM %d.%d)\n", USHMEM_VERSION_STRING, SHMEM_MAJOR_VERSION,
           SHMEM_MINOR_VERSION);
    printf("build: %s, C %ld, %s\n", __VERSION__, (long)__STDC_VERSION__,
#ifdef __SANITIZE_ADDRESS__
           "sanitizer address"
#elif defined(__SANITIZE_THREAD__)
           "sanitizer thread"
#else
           "no sanitizers"
#endif
    );
    printf("transports:\n");
    ushmemi_transport_describe(stdout);
    printf("environment%s:\n", env_ok ? "" : " (has errors, see above)");
    ushmemi_env_print(stdout);
    return env_ok ? 0 : 1;
}
