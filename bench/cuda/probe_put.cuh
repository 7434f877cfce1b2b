// bench_dev_probe experiments on putmem_nbi_block, included by bench_dev_probe.cu
// after its host helpers (probe, copy_row, bw_chunk, row, val):
//   Ea e10_bw    a block put's fixed cost, one piece at a time: from a pointer
//                taken once (the floor) to the library call, each variant adding
//                one piece (the translation's fast half, its rare half, the
//                route before the opening sync, the first loads before the
//                route, NVSHMEM's form of translation: a peer-base table in
//                global memory read through ld.global.nc). 1 CTA 1-64 KiB,
//                8 CTAs 256 KiB, 132 CTAs 64 KiB and 1 MiB; GB/s.
//   Eb e11_bw    copies larger than L2, 132 CTAs of 512 (the bench's shape):
//                the library, a plain strided word loop (1 deep, NVSHMEM's
//                form) on a pointer taken once, the library's 4 deep, 8 deep, streaming cache
//                operators (ld/st.global.cs), an L2 evict_first policy on loads and stores, 2 CTAs
//                per SM, the grid striding over the whole buffer (no per-CTA chunks: not a block
//                put, a copy kernel's shape) and cudaMemcpyAsync; 64 MiB, 256 MiB, 1 GiB (up to
//                MAX_BYTES).
// Each variant's data is checked at the peer before and after its timing.

/* ---- Ea: a block put's fixed cost ----
 * Every variant: the group's opening sync, the copy (the library's
 * ushmemi_dev_copy16 unless named), the closing sync, as the library's put.
 *  0 ptr_once     a pointer taken once before the loop (the floor)
 *  1 route_fast   ushmemi_dev_route_fast on every call (trap when it fails)
 *  2 route        ushmemi_dev_route on every call (fast half + rare half)
 *  3 route_first  ushmemi_dev_route before the opening sync
 *  4 load_first   sync, each thread's first 4 words loaded, route, stores, rest
 *  5 table_ldg    base = ld.global.nc of a global table of peer bases (with
 *                 pe and dst fixed, ptxas takes the load out of the loop, as
 *                 in NVSHMEM's benchmark: this is that form's cost, the floor)
 *  6 route_copy_to 2 with the library's ushmemi_dev_copy_to (general copy kept)
 *  7 lib          shmemx_dev_putmem_nbi_block */
static const int kE10Variants = 8;
static const char *const e10_names[kE10Variants] = {"ptr_once",      "route_fast", "route",
                                                    "route_first",   "load_first", "table_ldg",
                                                    "route_copy_to", "lib"};

__device__ __forceinline__ char *e10_route(const shmemx_dev_t &d, void *dst, size_t n, int pe)
{
    int w;
    char *t = ushmemi_dev_route(d, dst, n, pe, "e10", &w);
    if (!t)
        __trap(); /* the peer is mapped in this probe */
    return t;
}

template <int V>
__device__ __forceinline__ void e10_put(const shmemx_dev_t &d, char *dst, const char *src, size_t n,
                                        int pe, char *once, const uint64_t *tab)
{
    shmemx_dev_block_group g;
    const unsigned nw = (unsigned)(n / 16);
    if constexpr (V == 7) {
        shmemx_dev_putmem_nbi_block(d, dst, src, n, pe);
        return;
    } else if constexpr (V == 3) {
        char *t = e10_route(d, dst, n, pe);
        g.sync();
        ushmemi_dev_copy16<true>(g, t, src, nw);
    } else if constexpr (V == 4) {
        g.sync();
        const unsigned r = g.rank(), s = g.size();
        const ushmemi_dev_v4 *sw = (const ushmemi_dev_v4 *)src;
        ushmemi_dev_v4 v[4];
#pragma unroll
        for (unsigned k = 0; k < 4; k++)
            if (r + k * s < nw)
                v[k] = sw[r + k * s];
        ushmemi_dev_v4 *dw = (ushmemi_dev_v4 *)e10_route(d, dst, n, pe);
#pragma unroll
        for (unsigned k = 0; k < 4; k++)
            if (r + k * s < nw)
                dw[r + k * s] = v[k];
        if (nw > 4 * s)
            ushmemi_dev_copy_words<true, ushmemi_dev_v4, unsigned>(r, s, dw + 4 * s, sw + 4 * s,
                                                                   nw - 4 * s);
    } else {
        g.sync();
        char *t;
        if constexpr (V == 0) {
            t = once;
        } else if constexpr (V == 1) {
            int w;
            if (!ushmemi_dev_route_fast(d, dst, n, pe, &w, false, &t))
                __trap();
        } else if constexpr (V == 5) {
            uint64_t b;
            asm volatile("ld.global.nc.u64 %0, [%1];" : "=l"(b) : "l"(tab + pe));
            t = (char *)(uintptr_t)(b + ((uint64_t)(uintptr_t)dst - d.heap_base));
        } else {
            t = e10_route(d, dst, n, pe);
        }
        if constexpr (V == 6)
            ushmemi_dev_copy_to<true>(g, t, src, n);
        else
            ushmemi_dev_copy16<true>(g, t, src, nw);
    }
    g.sync();
}

template <int V>
__global__ void k_e10(DEVH d, char *dst, const char *src, size_t n, int pe, int iters,
                      const uint64_t *tab)
{
    size_t off, len;
    bw_chunk(n, &off, &len);
    char *once = (char *)shmemx_dev_ptr(d, dst + off, pe);
    if (len)
        for (int i = 0; i < iters; i++)
            e10_put<V>(d, dst + off, src + off, len, pe, once, tab);
    /* Never taken: a store through src keeps the compiler from proving src
     * read-only in this kernel and loading it with ld.global.nc, as it does
     * where a kernel has no other path to it; the library call (variant 7),
     * like most kernels, loads it coherently, and so does every variant here. */
    if (iters < 0)
        *(char *)src = 0;
    shmemx_dev_quiet_block(d);
}

// tab[i] = PE i's heap base as mapped here (0 where not mapped)
__global__ void k_e10_tab(DEVH d, uint64_t *tab, int npes)
{
    for (int i = threadIdx.x; i < npes; i += blockDim.x)
        tab[i] = (uint64_t)(uintptr_t)shmemx_dev_ptr(d, (void *)(uintptr_t)d.heap_base, i);
}

template <int V> static void e10_launch(probe &p, int ctas, size_t n, int it, const uint64_t *tab)
{
    k_e10<V><<<ctas, kBlock, 0, g_s>>>(p.d, p.dst, p.src, n, 1, it, tab);
}
typedef void (*e10_fn)(probe &, int, size_t, int, const uint64_t *);
static const e10_fn e10_fns[kE10Variants] = {e10_launch<0>, e10_launch<1>, e10_launch<2>,
                                             e10_launch<3>, e10_launch<4>, e10_launch<5>,
                                             e10_launch<6>, e10_launch<7>};

static void e10(probe &p)
{
    if (g_me != 0)
        return;
    uint64_t *tab = NULL;
    CK(cudaMalloc(&tab, 2 * sizeof *tab));
    k_e10_tab<<<1, 32, 0, g_s>>>(p.d, tab, 2);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(g_s));
    static const struct {
        int ctas;
        size_t n;
    } cases[] = {{1, 1024},   {1, 4096},    {1, 16384},    {1, 65536},
                 {8, 262144}, {132, 65536}, {132, 1 << 20}};
    uint32_t seed = 0xa000;
    for (const auto &c : cases) {
        char bench[32];
        snprintf(bench, sizeof bench, "e10_bw_cta%d", c.ctas);
        for (int v = 0; v < kE10Variants; v++)
            copy_row(p, bench, e10_names[v], c.n, ++seed,
                     [&](int it) { e10_fns[v](p, c.ctas, c.n, it, tab); });
    }
    CK(cudaFree(tab));
}

/* ---- Eb: copies larger than L2 ----
 * A pointer taken once, then per iteration: sync, the CTA's chunk in 16-byte
 * words with D loads in flight per thread (then D stores), sync. F: 0 plain
 * ld/st; 1 ld.global.cs / st.global.cs (streaming: evict first in L1 and L2);
 * 2 an L2::cache_hint of createpolicy.fractional.L2::evict_first on both. */
template <int F>
__device__ __forceinline__ ushmemi_dev_v4 e11_ld(const ushmemi_dev_v4 *p, uint64_t pol)
{
    ushmemi_dev_v4 v;
    if constexpr (F == 0) {
        (void)pol;
        v = *p;
    } else if constexpr (F == 1) {
        (void)pol;
        asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(__cvta_generic_to_global(p)));
    } else {
        asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(__cvta_generic_to_global(p)), "l"(pol));
    }
    return v;
}
template <int F>
__device__ __forceinline__ void e11_st(ushmemi_dev_v4 *p, const ushmemi_dev_v4 &v, uint64_t pol)
{
    if constexpr (F == 0) {
        (void)pol;
        *p = v;
    } else if constexpr (F == 1) {
        (void)pol;
        asm volatile(
            "st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(__cvta_generic_to_global(p)),
            "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
            : "memory");
    } else {
        asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(
                         __cvta_generic_to_global(p)),
                     "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(pol)
                     : "memory");
    }
}
template <int D, int F>
__device__ __forceinline__ void e11_words(unsigned r, unsigned s, ushmemi_dev_v4 *dw,
                                          const ushmemi_dev_v4 *sw, size_t nw, uint64_t pol)
{
    size_t i = r;
    for (; i + (size_t)(D - 1) * s < nw; i += (size_t)D * s) {
        ushmemi_dev_v4 v[D];
#pragma unroll
        for (int k = 0; k < D; k++)
            v[k] = e11_ld<F>(sw + i + (size_t)k * s, pol);
#pragma unroll
        for (int k = 0; k < D; k++)
            e11_st<F>(dw + i + (size_t)k * s, v[k], pol);
    }
    for (; i < nw; i += s)
        e11_st<F>(dw + i, e11_ld<F>(sw + i, pol), pol);
}
template <int D, int F, bool GRID = false>
__global__ void k_e11(DEVH d, char *dst, const char *src, size_t n, int pe, int iters)
{
    size_t off, len;
    bw_chunk(n, &off, &len);
    if constexpr (GRID) {
        /* not a block put: the whole grid strides over all of it, as a copy
         * kernel would (what this many threads reach without per-CTA chunks) */
        off = 0;
        len = n;
    }
    if constexpr (D == 0) {
        if (len)
            for (int i = 0; i < iters; i++)
                shmemx_dev_putmem_nbi_block(d, dst + off, src + off, len, pe);
    } else {
        uint64_t pol = 0;
        if constexpr (F == 2)
            asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
        char *t = (char *)shmemx_dev_ptr(d, dst + off, pe);
        for (int i = 0; len && i < iters; i++) {
            ushmemi_dev_bar_block();
            if constexpr (GRID)
                e11_words<D, F>(blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x,
                                (ushmemi_dev_v4 *)t, (const ushmemi_dev_v4 *)(src + off), len / 16,
                                pol);
            else
                e11_words<D, F>(threadIdx.x, blockDim.x, (ushmemi_dev_v4 *)t,
                                (const ushmemi_dev_v4 *)(src + off), len / 16, pol);
            ushmemi_dev_bar_block();
        }
    }
    shmemx_dev_quiet_block(d);
}

static const struct {
    const char *name;
    void (*kernel)(shmemx_dev_t, char *, const char *, size_t, int, int);
    int ctas;
} e11_variants[] = {{"lib", k_e11<0, 0>, 132},       {"d1", k_e11<1, 0>, 132},
                    {"d4", k_e11<4, 0>, 132},        {"d8", k_e11<8, 0>, 132},
                    {"d4_cs", k_e11<4, 1>, 132},     {"d8_cs", k_e11<8, 1>, 132},
                    {"d4_l2ef", k_e11<4, 2>, 132},   {"d8_l2ef", k_e11<8, 2>, 132},
                    {"d4_cta264", k_e11<4, 0>, 264}, {"d4_grid", k_e11<4, 0, true>, 132}};

static void e11(probe &p)
{
    if (g_me != 0)
        return;
    static const size_t sizes[] = {(size_t)64 << 20, (size_t)256 << 20, (size_t)1 << 30};
    uint32_t seed = 0xb000;
    for (size_t n : sizes) {
        if (n > p.max) {
            printf("# e11 %zu skipped: above MAX_BYTES %zu\n", n, p.max);
            continue;
        }
        for (const auto &v : e11_variants)
            copy_row(p, "e11_bw", v.name, n, ++seed, [&](int it) {
                v.kernel<<<v.ctas, kBlock, 0, g_s>>>(p.d, p.dst, p.src, n, 1, it);
            });
        copy_row(p, "e11_bw", "memcpy", n, ++seed, [&](int it) {
            for (int i = 0; i < it; i++)
                CK(cudaMemcpyAsync(p.pdst, p.src, n, cudaMemcpyDeviceToDevice, g_s));
        });
    }
}

// Summary lines: Ea as ns per call (bytes / GB/s) at 1 CTA, Eb as a fraction
// of cudaMemcpyAsync at the largest size measured.
static void e10_e11_summary(void)
{
    static const size_t ns1[] = {1024, 65536};
    for (size_t n : ns1) {
        if (val("e10_bw_cta1", "lib", n) <= 0)
            continue;
        printf("| Ea | 1 CTA, %zu B: ns per call:", n);
        for (int v = 0; v < kE10Variants; v++) {
            double g = val("e10_bw_cta1", e10_names[v], n);
            printf(" %s %.0f", e10_names[v], g > 0 ? (double)n / g : -1.0);
        }
        printf(" |\n");
    }
    for (int k = 2; k >= 0; k--) {
        size_t n = k == 2 ? (size_t)1 << 30 : k == 1 ? (size_t)256 << 20 : (size_t)64 << 20;
        double m = val("e11_bw", "memcpy", n);
        if (m <= 0)
            continue;
        printf("| Eb | %zu B, of cudaMemcpyAsync (%.0f GB/s):", n, m);
        for (const auto &v : e11_variants)
            printf(" %s %.2f", v.name, val("e11_bw", v.name, n) / m);
        printf(" |\n");
        break;
    }
}
