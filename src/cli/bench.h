/* The project's benchmark ("scalelab bench", "make bench").
 *
 * Every figure is reported beside a limit measured in the same run on the same machine, as a
 * ratio: the host's copy bandwidth for memory-bound work, its single-thread sgemm rate for
 * compute-bound work, or a limit of the line's own (one GPU's rate for a speed-up, the
 * library's MPI_Allreduce for ours, the collective's own time for the run around it).
 * Bandwidths count the bytes really read plus the bytes written, for the copy as for the work
 * measured, so the ratio compares like with like. Each figure is taken several times
 * (bench.repeats), the limits too, and shown as the median with the smallest and largest:
 * on a shared machine one disturbed sample shows as a wide spread instead of passing for the
 * machine's speed. Where a figure and its limit are taken in turns (sample i of each, one
 * after the other), the ratio is taken sample by sample. Benchmarks report; they never pass
 * or fail on a timing. */
#ifndef SCALELAB_CLI_BENCH_H
#define SCALELAB_CLI_BENCH_H

#include <stdbool.h>
#include <stddef.h>

/* The smallest, the median and the largest of n samples. */
struct bench_stat {
    double min, med, max;
    int n;
};
void bench_stat_of(const double *v, int n, struct bench_stat *out);

#define BENCH_MAX_REPEATS 64

struct bench {
    bool quick;          /* small sizes and few repeats, for a smoke test */
    int repeats;         /* samples of each figure: 5, --quick 3 */
    double copy_GBps;    /* memcpy: (bytes read + bytes written) / s, the median sample */
    double sgemm_GFLOPs; /* single-thread sgemm, 2mnk / s of the thread's CPU time, the median */
    struct bench_stat copy, sgemm;
    void *rows; /* the report (owned by cmd_bench.c) */
};

enum bench_limit { BENCH_COPY, BENCH_SGEMM };

/* Adds one figure to the report, its n samples v beside the copy bandwidth or the sgemm rate:
 * e.g. ("formats", "fp32->bf16 64MiB", v, 5, "GB/s", BENCH_COPY). */
void bench_report(struct bench *b, const char *group, const char *what, const double *v, int n,
                  const char *unit, enum bench_limit limit);
/* The same beside a limit of its own, named (a few words: "1 GPU", "MPI_Allreduce"), with its
 * samples: nl == n pairs them with v's (taken in turns), otherwise their median is the limit. */
void bench_report_vs(struct bench *b, const char *group, const char *what, const double *v, int n,
                     const char *unit, const char *limit, const double *lim, int nl);

/* Times n single calls of fn(arg) after one to warm up: the wall time of each, in seconds. */
void bench_times(void (*fn)(void *), void *arg, double *out, int n);
/* The same in the calling thread's CPU time, for work that runs in this thread alone (the
 * sgemm limit, a training step): other processes on a shared machine do not count. */
void bench_cpu_times(void (*fn)(void *), void *arg, double *out, int n);

/* One more sample of the sgemm limit (GFLOP/s, the thread's CPU time), to take in turns with a
 * figure measured against it. */
double bench_sgemm_sample(const struct bench *b);

/* A buffer of n bytes, allocated and touched once (page faults are not part of any timing);
 * free with bench_free. */
void *bench_alloc(size_t n);
void bench_free(void *p);

/* This program's path (/proc/self/exe) into buf; 1 after saying why on stderr. For groups that
 * run it again in a child process (mpi, window, the collective's whole run). */
int bench_self(char *buf, size_t size);

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
