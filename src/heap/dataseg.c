/* Global and static variables as symmetric objects.
 *
 * The executable's writable data (.data and .bss after the RELRO part) is
 * copied into a memfd and that memfd is mapped MAP_FIXED over the very same
 * addresses. The program sees no difference, but the pages are now shared
 * memory that peers on this host map like a heap, so put/get/atomics on a
 * global are plain loads and stores. Every PE runs the same executable, so an
 * address's offset in the segment names the same variable on every PE.
 *
 * Caveats (documented in docs/design.md): variables in shared libraries are not
 * symmetric; a child made by fork() without exec shares these pages with its
 * parent; threads must not write globals while shmem_init runs. */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/state.h"
#include "heap/heap.h"

static struct {
    uintptr_t lo, hi;
    int fd; /* memfd backing the segment, kept for later re-inits */
    int done;
} dseg = {0, 0, -1, 0};

struct find_ctx {
    uintptr_t lo, hi;
};

static int find_main_rw(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct find_ctx *fc = arg;
    uintptr_t rw_lo = 0, rw_hi = 0, relro_hi = 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    (void)size;

    /* The first object reported is the main program. */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) && ph->p_memsz) {
            if (!rw_lo || start < rw_lo)
                rw_lo = start;
            if (start + ph->p_memsz > rw_hi)
                rw_hi = start + ph->p_memsz;
        } else if (ph->p_type == PT_GNU_RELRO) {
            relro_hi = start + ph->p_memsz;
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
    }
    return 1;
}

/* Copy the live pages into a memfd and map it over them. The raw syscall is
 * deliberate: sanitizers intercept pwrite() and would flag the redzones they
 * keep between globals, which are part of the pages we copy. */
static int remap(const char *call)
{
    size_t len = dseg.hi - dseg.lo;
    int fd = memfd_create("ushmem-data", MFD_CLOEXEC);
    if (fd < 0) {
        ushmemi_error(call, "memfd_create for static data: %s", strerror(errno));
        return USHMEM_ESYS;
    }
    if (ftruncate(fd, (off_t)len) != 0)
        goto fail;
    size_t done = 0;
    while (done < len) {
        long n = syscall(SYS_pwrite64, fd, (const char *)dseg.lo + done, len - done, (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            goto fail;
        done += (size_t)n;
    }
    if (mmap((void *)dseg.lo, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
        MAP_FAILED)
        goto fail;
    dseg.fd = fd;
    return 0;
fail:
    ushmemi_error(call, "cannot move static data to shared memory: %s", strerror(errno));
    close(fd);
    return USHMEM_ESYS;
}

int ushmemi_dataseg_init(const char *call)
{
    ushmemi_seg_t *seg = &ushmemi_g.seg[USHMEMI_SEG_DATA];
    seg->peer = calloc((size_t)ushmemi_g.n_pes, sizeof *seg->peer);
    if (!seg->peer)
        return USHMEM_ENOMEM;
    seg->fd = -1;
    if (!ushmemi_env.static_data)
        return 0;
    if (!dseg.done) {
        struct find_ctx fc = {0, 0};
        dl_iterate_phdr(find_main_rw, &fc);
        dseg.done = 1;
        if (fc.hi <= fc.lo)
            return 0; /* no writable data at all */
        dseg.lo = fc.lo;
        dseg.hi = fc.hi;
        int rc = remap(call);
        if (rc) {
            dseg.lo = dseg.hi = 0;
            return rc;
        }
    }
    if (dseg.fd < 0)
        return 0;
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
