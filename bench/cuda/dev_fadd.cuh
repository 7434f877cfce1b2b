// The fetch_add row of bench_dev_ushmem.cu and bench_dev_nvshmem.cu, shared so
// that both libraries are measured the same way: one word's fetch_add time
// depends on where the word lies (bench_dev_probe E3: 0.30-0.43 us for the
// same code over 64 words), so each program times kFaddWords words kFaddStride
// bytes apart and prints the median (variant thread), the fastest and the
// slowest. No library calls here: the caller's measure(word) times its kernel.
#ifndef DEV_FADD_CUH
#define DEV_FADD_CUH

#include <stddef.h>
#include <stdint.h>

#include <algorithm>
#include <vector>

static const int kFaddWords = 16;                          // words measured (the median is the row)
static const size_t kFaddStride = 4096;                    // bytes between them
static const size_t kFaddBytes = kFaddWords * kFaddStride; // the symmetric area they lie in

// measure(uint64_t *word): us per fetch_add on word; row(bench, variant, bytes, value).
template <typename Measure, typename Row>
static void fadd_rows(uint64_t *ctrs, Measure measure, Row row)
{
    std::vector<double> v;
    for (int a = 0; a < kFaddWords; a++)
        v.push_back(measure(ctrs + (size_t)a * (kFaddStride / 8)));
    std::sort(v.begin(), v.end());
    row("fetch_add_lat", "thread", 8, v[v.size() / 2]);
    row("fetch_add_lat", "fastest", 8, v.front());
    row("fetch_add_lat", "slowest", 8, v.back());
}

#endif /* DEV_FADD_CUH */
