/* Benchmark group "formats": the bulk number-format conversions of num/fp.h.
 *
 * Each conversion streams a large array (64 MiB of floats; 4 MiB with --quick, which then fits
 * in cache and reads high) and is reported in GB/s of bytes read plus bytes written, beside the
 * copy bandwidth measured in the same run: a conversion that keeps up with memory shows a
 * ratio near 1. When the F16C/AVX2 paths are in use, the portable C loops are measured too. */
#include "config.h"

#include <stdio.h>

#include "cli/bench.h"
#include "num/fp.h"

struct conv {
    float *f32, *out;
    uint16_t *h;
    size_t n;
};

static void to_fp16(void *arg)
{
    struct conv *c = arg;
    fp16_from_f32_n(c->h, c->f32, c->n);
}

static void from_fp16(void *arg)
{
    struct conv *c = arg;
    fp16_to_f32_n(c->out, c->h, c->n);
}

static void to_bf16(void *arg)
{
    struct conv *c = arg;
    bf16_from_f32_n(c->h, c->f32, c->n);
}

static void from_bf16(void *arg)
{
    struct conv *c = arg;
    bf16_to_f32_n(c->out, c->h, c->n);
}

static void round_fp16(void *arg)
{
    struct conv *c = arg;
    fp_round_n(FP_FP16, c->out, c->f32, c->n);
}

static void round_bf16(void *arg)
{
    struct conv *c = arg;
    fp_round_n(FP_BF16, c->out, c->f32, c->n);
}

static const struct {
    const char *what;
    void (*fn)(void *);
    size_t in, out; /* bytes per element read and written */
} cases[] = {
    {"fp32->fp16", to_fp16, 4, 2},         {"fp16->fp32", from_fp16, 2, 4},
    {"fp32->bf16", to_bf16, 4, 2},         {"bf16->fp32", from_bf16, 2, 4},
    {"fp_round_n fp16", round_fp16, 4, 4}, {"fp_round_n bf16", round_bf16, 4, 4},
};

static int run(struct bench *b)
{
    size_t bytes = b->quick ? (4u << 20) : (64u << 20);
    struct conv c = {bench_alloc(bytes), bench_alloc(bytes), bench_alloc(bytes / 2),
                     bytes / sizeof(float)};
    /* Values of every kind a training run sees: mostly normal, some tiny and huge. */
    for (size_t i = 0; i < c.n; i++)
        c.f32[i] = (float)((double)(i % 1000) - 500) * (i % 7 == 0 ? 1e-6f : 1.37f);
    fp16_from_f32_n(c.h, c.f32, c.n);

    bool simd = fp_simd_active();
    int n = 3 * b->repeats; /* single calls, each a few milliseconds */
    double t[BENCH_MAX_REPEATS];
    for (int pass = 0; pass < (simd ? 2 : 1); pass++) {
        enum fp_impl old = fp_set_impl(pass ? FP_IMPL_PORTABLE : FP_IMPL_AUTO);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            bench_times(cases[k].fn, &c, t, n);
            for (int i = 0; i < n; i++)
                t[i] = (double)c.n * (double)(cases[k].in + cases[k].out) / t[i] / 1e9;
            char what[96];
            snprintf(what, sizeof what, "%s %zu MiB%s", cases[k].what, bytes >> 20,
                     pass   ? " (portable C)"
                     : simd ? " (F16C/AVX2)"
                            : "");
            bench_report(b, "formats", what, t, n, "GB/s", BENCH_COPY);
        }
        fp_set_impl(old);
    }
    bench_free(c.f32);
    bench_free(c.out);
    bench_free(c.h);
    return 0;
}

const struct bench_case bench_formats = {
    "formats",
    "bulk fp32 <-> fp16/bf16 conversion and rounding, GB/s beside the copy bandwidth",
    run,
};
