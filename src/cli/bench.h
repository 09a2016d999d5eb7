/* The project's benchmark ("scalelab bench", "make bench").
 *
 * Every figure is reported beside a limit measured in the same run on the same machine, as a
 * ratio: the host's copy bandwidth for memory-bound work, its single-thread sgemm rate for
 * compute-bound work. Bandwidths count the bytes really read plus the bytes written, for the
 * copy as for the work measured, so the ratio compares like with like. Benchmarks report;
 * they never pass or fail on a timing. */
#ifndef SCALELAB_CLI_BENCH_H
#define SCALELAB_CLI_BENCH_H

#include <stdbool.h>
#include <stddef.h>

struct bench {
    bool quick;          /* small sizes and few repeats, for a smoke test */
    double copy_GBps;    /* memcpy: (bytes read + bytes written) / s, best of several */
    double sgemm_GFLOPs; /* single-thread sgemm, 2mnk / s of the thread's CPU time */
    void *rows;          /* the report (owned by cmd_bench.c) */
};

enum bench_limit { BENCH_NONE, BENCH_COPY, BENCH_SGEMM };

/* Adds one figure to the report: e.g. ("formats", "fp32->bf16 64MiB", 21.3, "GB/s",
 * BENCH_COPY) becomes a row with its ratio to the copy bandwidth. */
void bench_report(struct bench *b, const char *group, const char *what, double value,
                  const char *unit, enum bench_limit limit);

/* Runs fn(arg) repeatedly for about min_seconds (at least twice) and returns the best time of
 * one call, in seconds. */
double bench_time(void (*fn)(void *), void *arg, double min_seconds);
/* The same in the calling thread's CPU time, for work that runs in this thread alone (the
 * sgemm limit, a training step): other processes on a shared machine do not count. */
double bench_cpu_time(void (*fn)(void *), void *arg, double min_seconds);

/* A buffer of n bytes, allocated and touched once (page faults are not part of any timing);
 * free with bench_free. */
void *bench_alloc(size_t n);
void bench_free(void *p);

struct gpt_config;
/* The shape of a model preset ("small") the model can train (par/trainer.h's train_shape), or
 * 1 after saying why on stderr: the benchmarks' one way to load the model they time. */
int bench_model(const char *name, struct gpt_config *out);

struct bench_case {
    const char *name;
    const char *what;
    int (*run)(struct bench *b);
};

/* The cases, in order; NULL-terminated (cmd_bench.c). */
extern const struct bench_case *const bench_cases[];

#endif
