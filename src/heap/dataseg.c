/* Global and static variables as symmetric objects.
 *
 * The executable's writable data (.data and .bss after the RELRO part) is
 * copied into a memfd and that memfd is mapped MAP_FIXED over the very same
 * addresses. The program sees no difference, but the pages are now shared
 * memory that peers on this host map like a heap, so put/get/atomics on a
 * global are plain loads and stores. Every PE runs the same executable (checked
 * at init: check_same_executable), so an address's offset in the segment names
 * the same variable on every PE.
 *
 * Caveats (documented in docs/design.md): variables in shared libraries are not
 * symmetric; a child made by fork() without exec shares these pages with its
 * parent; threads must not write globals while shmem_init runs. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/core.h"
#include "core/state.h"
#include "heap/heap.h"

static struct {
    uintptr_t lo, hi;
    uintptr_t anon_lo; /* pages from here to hi are anonymous (.bss past the file's data) */
    uint64_t layout;   /* hash of the executable's writable segments, build id (0: none) */
    int fd;            /* memfd backing the segment, kept for later re-inits */
    int done;
} dseg = {0, 0, 0, 0, -1, 0};

struct find_ctx {
    uintptr_t lo, hi, file_hi;
    uint64_t layout;
};

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

/* Mix the GNU build id of a PT_NOTE segment, if it holds one, into *h. */
static void hash_build_id(uint64_t *h, const char *notes, size_t len)
{
    size_t off = 0;
    while (off + sizeof(ElfW(Nhdr)) <= len) {
        const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)(notes + off);
        size_t name = (nh->n_namesz + 3) & ~(size_t)3, desc = (nh->n_descsz + 3) & ~(size_t)3;
        const char *p = notes + off + sizeof *nh;
        if (off + sizeof *nh + name + desc > len)
            return;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(p, "GNU", 4)) {
            *h = fnv1a(*h, p + name, nh->n_descsz);
            return;
        }
        off += sizeof *nh + name + desc;
    }
}

static int find_main_rw(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct find_ctx *fc = arg;
    uintptr_t rw_lo = 0, rw_hi = 0, relro_hi = 0, file_hi = 0;
    uint64_t h = 14695981039346656037ULL;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    (void)size;

    /* The first object reported is the main program. The layout hash uses
     * link-time addresses and sizes (a PIE loads at a different address on
     * every PE), so equal hashes mean the same variables at the same offsets. */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) && ph->p_memsz) {
            if (!rw_lo || start < rw_lo)
                rw_lo = start;
            if (start + ph->p_memsz > rw_hi)
                rw_hi = start + ph->p_memsz;
            if (start + ph->p_filesz > file_hi)
                file_hi = start + ph->p_filesz;
            uint64_t l[3] = {ph->p_vaddr, ph->p_memsz, ph->p_filesz};
            h = fnv1a(h, l, sizeof l);
        } else if (ph->p_type == PT_GNU_RELRO) {
            relro_hi = start + ph->p_memsz;
        } else if (ph->p_type == PT_NOTE) {
            hash_build_id(&h, (const char *)start, ph->p_memsz);
        }
    }
    if (rw_lo) {
        /* glibc makes RELRO read-only up to the page boundary below its end;
         * everything from there on stays writable and belongs to .data/.bss. */
        uintptr_t lo = rw_lo;
        if (relro_hi > lo)
            lo = relro_hi;
        fc->lo = lo & ~(uintptr_t)(page - 1);
        fc->hi = (rw_hi + page - 1) & ~(uintptr_t)(page - 1);
        fc->file_hi = (file_hi + page - 1) & ~(uintptr_t)(page - 1);
        fc->layout = h | 1; /* never 0, which means "no static data" */
    }
    return 1;
}

typedef uint64_t __attribute__((may_alias)) word_t;

/* Whether a page holds only zero bytes. Not instrumented: the pages hold the
 * sanitizers' redzones between globals (and TSan would commit shadow memory
 * for every page read). Reading a .bss page never written maps the kernel's
 * shared zero page: a minor fault, no memory. */
__attribute__((no_sanitize("address", "thread"))) static int page_is_zero(const char *p,
                                                                          size_t page)
{
    const word_t *w = (const word_t *)(const void *)p;
    for (size_t i = 0; i < page / sizeof(word_t); i += 8)
        if (w[i] | w[i + 1] | w[i + 2] | w[i + 3] | w[i + 4] | w[i + 5] | w[i + 6] | w[i + 7])
            return 0;
    return 1;
}

/* Write [off, end) of the segment into the memfd at the same offset. The raw
 * syscall is deliberate: sanitizers intercept pwrite() and would flag the
 * redzones they keep between globals, which are part of the pages we copy. */
static int copy_run(int fd, size_t off, size_t end)
{
    while (off < end) {
        long n = syscall(SYS_pwrite64, fd, (const char *)dseg.lo + off, end - off, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        off += (size_t)n;
    }
    return 0;
}

/* /proc/self/pagemap, read 512 entries at a time: whether an anonymous page
 * was never touched (no page, nothing in swap), so it reads as zero without
 * reading it. Reading it instead faults in a page: a zero page on most
 * kernels, a new zeroed page on some (measured: 4 us and 4 KiB per page on a
 * 6.18 VM, 2 s and 512 MiB of RSS for a 512 MiB .bss). */
#define PM_PRESENT (1ULL << 63)
#define PM_SWAP    (1ULL << 62)
typedef struct {
    int fd; /* -1: unknown, every page is read */
    uintptr_t first;
    size_t n;
    uint64_t e[512];
} pagemap_t;

static int never_touched(pagemap_t *pm, uintptr_t addr, size_t page)
{
    uintptr_t idx = addr / page;
    if (pm->fd < 0)
        return 0;
    if (idx < pm->first || idx >= pm->first + pm->n) {
        ssize_t r = pread(pm->fd, pm->e, sizeof pm->e, (off_t)(idx * sizeof pm->e[0]));
        if (r < (ssize_t)sizeof pm->e[0]) {
            close(pm->fd);
            pm->fd = -1;
            return 0;
        }
        pm->first = idx;
        pm->n = (size_t)r / sizeof pm->e[0];
    }
    return !(pm->e[idx - pm->first] & (PM_PRESENT | PM_SWAP));
}

/* Copy the live pages into a memfd and map it over them. Only pages with a
 * non-zero byte are copied: the memfd reads as zero elsewhere, and a large
 * zeroed array (a 1 GiB .bss) would otherwise cost its full size in time and
 * memory on every PE. .bss pages never touched are not even read. */
static int remap(const char *call)
{
    size_t len = dseg.hi - dseg.lo, page = (size_t)sysconf(_SC_PAGESIZE);
    pagemap_t *pm = malloc(sizeof *pm);
    int fd = memfd_create("ushmem-data", MFD_CLOEXEC);
    if (fd < 0 || !pm) {
        ushmemi_error(call, "memfd_create for static data: %s", strerror(pm ? errno : ENOMEM));
        free(pm);
        if (fd >= 0)
            close(fd);
        return USHMEM_ESYS;
    }
    pm->fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    pm->first = pm->n = 0;
    if (ftruncate(fd, (off_t)len) != 0)
        goto fail;
    size_t run = SIZE_MAX; /* start of the run of non-zero pages being collected */
    for (size_t at = 0; at <= len; at += page) {
        uintptr_t a = dseg.lo + at;
        int zero = at == len || (a >= dseg.anon_lo && never_touched(pm, a, page)) ||
                   page_is_zero((const char *)a, page);
        if (!zero && run == SIZE_MAX) {
            run = at;
        } else if (zero && run != SIZE_MAX) {
            if (copy_run(fd, run, at) != 0)
                goto fail;
            run = SIZE_MAX;
        }
    }
    if (mmap((void *)dseg.lo, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
        MAP_FAILED)
        goto fail;
    if (pm->fd >= 0)
        close(pm->fd);
    free(pm);
    dseg.fd = fd;
    return 0;
fail:
    ushmemi_error(call, "cannot move static data to shared memory: %s", strerror(errno));
    if (pm->fd >= 0)
        close(pm->fd);
    free(pm);
    close(fd);
    return USHMEM_ESYS;
}

/* Every PE must run the same executable: a global's offset in the data
 * segment names the same variable on every PE only then. PEs that differ
 * would put into the wrong variable silently (same sizes) or call a global
 * "not a symmetric address" (different sizes). Each PE publishes its layout
 * hash and size; the lowest PE that differs from PE 0 says so and fails its
 * init, which stops the job. */
typedef struct {
    uint64_t layout, size;
} layout_card_t;

static int check_same_executable(uint64_t layout, const char *call)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    if (n < 2)
        return 0;
    layout_card_t mine = {layout, dseg.hi - dseg.lo};
    layout_card_t *all = calloc((size_t)n, sizeof *all);
    int rc = all ? ushmemi_bootstrap()->ops->allgather(&mine, all, sizeof mine) : USHMEM_ENOMEM;
    for (int pe = 1; pe < n && rc == 0; pe++) {
        /* 0: static data is off there (USHMEM_STATIC_DATA=0); nothing to place */
        if (!all[pe].layout || !all[0].layout || all[pe].layout == all[0].layout)
            continue;
        if (pe == me) {
            ushmemi_error(call,
                          "PE 0 and PE %d run different executables (static data of %llu and "
                          "%llu bytes, %s); every PE must run the same program",
                          pe, (unsigned long long)all[0].size, (unsigned long long)all[pe].size,
                          all[0].size == all[pe].size ? "laid out differently" : "other sizes");
            rc = USHMEM_EINVAL;
        }
        break;
    }
    free(all);
    return rc;
}

int ushmemi_dataseg_init(const char *call)
{
    ushmemi_seg_t *seg = &ushmemi_g.seg[USHMEMI_SEG_DATA];
    seg->peer = calloc((size_t)ushmemi_g.n_pes, sizeof *seg->peer);
    if (!seg->peer)
        return USHMEM_ENOMEM;
    seg->fd = -1;
    if (ushmemi_env.static_data && !dseg.done) {
        struct find_ctx fc = {0, 0, 0, 0};
        dl_iterate_phdr(find_main_rw, &fc);
        dseg.done = 1;
        if (fc.hi > fc.lo) {
            dseg.lo = fc.lo;
            dseg.hi = fc.hi;
            dseg.anon_lo = fc.file_hi > fc.lo ? fc.file_hi : fc.lo;
            dseg.layout = fc.layout;
        }
    }
    uint64_t layout = ushmemi_env.static_data ? dseg.layout : 0;
    int rc = check_same_executable(layout, call);
    if (rc || !layout)
        return rc;
    if (dseg.fd < 0 && (rc = remap(call)) != 0) {
        dseg.layout = 0; /* not tried again: no symmetric static data */
        return rc;
    }
    seg->base = (char *)dseg.lo;
    seg->size = dseg.hi - dseg.lo;
    seg->kind = USHMEMI_MEM_HOST;
    seg->fd = dseg.fd;
    seg->peer[ushmemi_g.my_pe] = seg->base;
    return 0;
}

void ushmemi_dataseg_fini(void)
{
    ushmemi_seg_t *seg = &ushmemi_g.seg[USHMEMI_SEG_DATA];
    /* The remap stays: the program's globals live there now. */
    free(seg->peer);
    memset(seg, 0, sizeof *seg);
    seg->fd = -1;
}
