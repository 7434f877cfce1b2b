/* USHMEM_TEST_NPES: 1
 *
 * libushmem asks CUDA for eager module loading when it is loaded, before
 * main(), unless the user set CUDA_MODULE_LOADING (lazy loading can hold a
 * kernel's first launch while a stream waits for the proxy: docs/cuda.md).
 * /proc/self/environ is the environment the process started with, before
 * any setenv: the user's choice, if any, must survive. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmem.h"
#include "test_util.h"

static const char *initial(const char *name, char *buf, size_t size)
{
    FILE *f = fopen("/proc/self/environ", "r");
    size_t len = strlen(name), n;
    const char *found = NULL;
    if (!f)
        return NULL;
    n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = 0;
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        if (!strncmp(buf + i, name, len) && buf[i + len] == '=')
            found = buf + i + len + 1;
    return found;
}

int main(void)
{
    static char env[1 << 16];
    const char *now = getenv("CUDA_MODULE_LOADING");
    const char *user = initial("CUDA_MODULE_LOADING", env, sizeof env);
    shmem_init();
    if (user)
        CHECK(now && !strcmp(now, user), "CUDA_MODULE_LOADING=%s (the user's %s) was changed",
              now ? now : "(unset)", user);
    else
        CHECK(now && !strcmp(now, "EAGER"), "CUDA_MODULE_LOADING is %s before main, want EAGER",
              now ? now : "unset");
    shmem_finalize();
    printf("test_module_loading: %s\n", user ? "the user's choice kept" : "EAGER before main");
    return 0;
}
