/* device/nvrtc: the device API compiles under NVRTC (run-time compilation,
 * as CuPy, Numba and the Python binding use it), and the PTX it yields has
 * no device globals and no external symbol but vprintf.
 *
 *   nvrtc_compile INCLUDE_DIR TEST_DIR
 *
 * NVRTC is loaded with dlopen and its few entry points declared here, so the
 * test builds without CUDA installed; exit 77 (skipped) when no libnvrtc is
 * found. One line per compilation: PASS or FAIL, the log on failure. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SKIP 77

typedef int nvrtc_result_t; /* nvrtcResult; NVRTC_SUCCESS is 0 */
typedef struct nvrtc_program *nvrtc_program_t;

/* The NVRTC functions used, with their C prototypes (nvrtc.h). */
#define NVRTC_FUNCS(X)                                                                             \
    X(nvrtcCreateProgram, nvrtc_result_t,                                                          \
      (nvrtc_program_t *, const char *, const char *, int, const char *const *,                    \
       const char *const *))                                                                       \
    X(nvrtcCompileProgram, nvrtc_result_t, (nvrtc_program_t, int, const char *const *))            \
    X(nvrtcGetProgramLogSize, nvrtc_result_t, (nvrtc_program_t, size_t *))                         \
    X(nvrtcGetProgramLog, nvrtc_result_t, (nvrtc_program_t, char *))                               \
    X(nvrtcGetPTXSize, nvrtc_result_t, (nvrtc_program_t, size_t *))                                \
    X(nvrtcGetPTX, nvrtc_result_t, (nvrtc_program_t, char *))                                      \
    X(nvrtcDestroyProgram, nvrtc_result_t, (nvrtc_program_t *))                                    \
    X(nvrtcGetErrorString, const char *, (nvrtc_result_t))

static struct {
#define NVRTC_FIELD(name, ret, args) ret(*name) args;
    NVRTC_FUNCS(NVRTC_FIELD)
#undef NVRTC_FIELD
} nvrtc;

/* 0, or SKIP with the reason on stdout. */
static int nvrtc_load(void)
{
    static const char *const names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                        "/usr/local/cuda/lib64/libnvrtc.so"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("SKIP: no libnvrtc (%s)\n", dlerror());
        return SKIP;
    }
    /* dlsym returns void *; the memcpy is the ISO C way to make it a function pointer. */
#define NVRTC_LOAD(name, ret, args)                                                                \
    {                                                                                              \
        void *sym = dlsym(lib, #name);                                                             \
        if (!sym) {                                                                                \
            printf("SKIP: libnvrtc lacks " #name "\n");                                            \
            return SKIP;                                                                           \
        }                                                                                          \
        memcpy(&nvrtc.name, &sym, sizeof(sym));                                                    \
    }
    NVRTC_FUNCS(NVRTC_LOAD)
#undef NVRTC_LOAD
    return 0;
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The header promises no device globals and nothing to link: the PTX may
 * declare only vprintf as external, and define at module scope no .global or
 * .const variable but the string literals of printf formats, which the
 * compiler names $str... and gives no linkage (they cannot collide between
 * modules). */
static int ptx_line_ok(const char *line)
{
    const char *p = line + strspn(line, " \t");
    if (starts_with(p, ".extern")) {
        /* ".extern .func  (.param .b32 func_retval0) vprintf" */
        const char *v = strstr(p, " vprintf");
        return starts_with(p, ".extern .func") && v &&
               (v[8] == '\0' || v[8] == '(' || v[8] == ' ' || v[8] == ';');
    }
    if (p != line) /* inside a function */
        return 1;
    if (starts_with(p, ".visible ") || starts_with(p, ".weak ") || starts_with(p, ".common ")) {
        p = strchr(p, ' ') + 1;
        return !starts_with(p, ".global ") && !starts_with(p, ".const ");
    }
    if (starts_with(p, ".global ") || starts_with(p, ".const ")) {
        const char *name = strstr(p, " $str"), *bracket = strchr(p, '[');
        return name && bracket && name < bracket;
    }
    return 1;
}

/* The number of offending lines, each printed after label unless it is NULL. */
static int ptx_check(const char *ptx, const char *label)
{
    int bad = 0;
    char line[512];
    while (*ptx) {
        size_t len = strcspn(ptx, "\n");
        size_t n = len < sizeof(line) - 1 ? len : sizeof(line) - 1;
        memcpy(line, ptx, n);
        line[n] = '\0';
        if (!ptx_line_ok(line)) {
            if (label)
                printf("  %s: %.160s%s\n", label, line, len > 160 ? " ..." : "");
            bad++;
        }
        ptx += len + (ptx[len] == '\n');
    }
    return bad;
}

/* The rule must catch what it is meant to catch: 8 of these lines offend. */
static int ptx_self_test(void)
{
    static const char sample[] = ".extern .func  (.param .b32 func_retval0) vprintf\n"
                                 ".extern .func  (.param .b32 func_retval0) vprintf_other\n"
                                 ".extern .global .align 4 .u32 ext_var;\n"
                                 ".extern .shared .align 16 .b8 dyn_smem[];\n"
                                 ".global .align 1 .b8 $str[3] = {104, 105, 0};\n"
                                 ".global .align 1 .b8 $str$1[3] = {104, 105, 0};\n"
                                 ".global .align 4 .u32 plain_var;\n"
                                 ".visible .global .align 8 .u64 visible_var;\n"
                                 ".weak .global .align 1 .u8 weak_var;\n"
                                 ".const .align 4 .u32 const_var = 1;\n"
                                 ".global .align 1 .u8 _ZN15ushmemi_dev_intIiE2okE;\n"
                                 ".visible .entry k(\n"
                                 "\t.reg .b32 \t%r<2>;\n";
    int bad = ptx_check(sample, NULL);
    if (bad != 8) {
        printf("FAIL: PTX check self-test: %d offending lines found, 8 expected\n", bad);
        return 1;
    }
    return 0;
}

static int compile(const char *inc, const char *testdir, int checks)
{
    const char *label = checks ? "nvrtc -DSHMEMX_DEVICE_CHECKS" : "nvrtc";
    char opt_inc[4096], opt_test[4096];
    snprintf(opt_inc, sizeof(opt_inc), "--include-path=%s", inc);
    snprintf(opt_test, sizeof(opt_test), "--include-path=%s", testdir);
    const char *opts[] = {opt_inc, opt_test, "--gpu-architecture=compute_90", "-std=c++17",
                          "-DSHMEMX_DEVICE_CHECKS"};
    int nopts = checks ? 5 : 4;

    nvrtc_program_t prog = NULL;
    nvrtc_result_t rc =
        nvrtc.nvrtcCreateProgram(&prog, "#include <dev_all.cuh>\n", "dev_all.cu", 0, NULL, NULL);
    if (rc != 0) {
        printf("FAIL: %s: nvrtcCreateProgram: %s\n", label, nvrtc.nvrtcGetErrorString(rc));
        return 1;
    }
    int failed = 0;
    rc = nvrtc.nvrtcCompileProgram(prog, nopts, opts);
    size_t log_size = 0;
    char *log = NULL;
    if (nvrtc.nvrtcGetProgramLogSize(prog, &log_size) == 0 && log_size > 1 &&
        (log = malloc(log_size)) != NULL && nvrtc.nvrtcGetProgramLog(prog, log) != 0) {
        free(log);
        log = NULL;
    }
    if (rc != 0) {
        printf("FAIL: %s: nvrtcCompileProgram: %s\n%s\n", label, nvrtc.nvrtcGetErrorString(rc),
               log ? log : "(no log)");
        failed = 1;
    } else {
        if (log) /* warnings: shown, not fatal */
            printf("%s: log:\n%s\n", label, log);
        size_t ptx_size = 0;
        char *ptx = NULL;
        if (nvrtc.nvrtcGetPTXSize(prog, &ptx_size) != 0 || !(ptx = malloc(ptx_size + 1)) ||
            nvrtc.nvrtcGetPTX(prog, ptx) != 0) {
            printf("FAIL: %s: could not get the PTX\n", label);
            failed = 1;
        } else {
            ptx[ptx_size] = '\0';
            int bad = ptx_check(ptx, label);
            if (bad) {
                printf("FAIL: %s: %d device global(s) or external symbol(s) in the PTX\n", label,
                       bad);
                failed = 1;
            } else if (!strstr(ptx, ".entry dev_all(") ||
                       !strstr(ptx, ".entry dev_all_coll_alltoallmem_block(") ||
                       !strstr(ptx, ".entry dev_all_waits(")) {
                printf("FAIL: %s: a kernel of dev_all.cuh (dev_all, "
                       "dev_all_coll_alltoallmem_block, dev_all_waits) "
                       "is not in the PTX\n",
                       label);
                failed = 1;
            } else {
                printf("PASS: %s (%zu bytes of PTX)\n", label, ptx_size);
            }
        }
        free(ptx);
    }
    free(log);
    nvrtc.nvrtcDestroyProgram(&prog);
    return failed;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s INCLUDE_DIR TEST_DIR\n", argv[0]);
        return 2;
    }
    int rc = nvrtc_load();
    if (rc)
        return rc;
    int failed = ptx_self_test();
    /* The checked build only: it holds every line of the unchecked one, whose
     * PTX the nvcc test (device/nvcc_nordc) holds to the same rule; a second
     * NVRTC build cost a minute of CI. USHMEM_NVRTC_BOTH=1: both. */
    if (getenv("USHMEM_NVRTC_BOTH"))
        failed += compile(argv[1], argv[2], 0);
    failed += compile(argv[1], argv[2], 1);
    return failed ? 1 : 0;
}
