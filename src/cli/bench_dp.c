/* Benchmark groups "dp", "pp" and "tp": data, pipeline and tensor parallelism on the
 * thread-GPUs. The
 * `small` model trains on 1, 2 and 8 GPUs (DDP) and on 2 GPUs at ZeRO stage 3; on 2 pipeline
 * stages with 8 micro-batches; and on 2 tensor-parallel GPUs; each run with the same global batch,
 * in fp32, through the engine of `scalelab train` (par/run.h).
 *
 * Reported: tokens per second of each run (steady state: from the end of the first step to
 * the end of the last, so the one-time allocation of every buffer is not timed), and as ratios
 * the speed-up of 2 GPUs over 1 (the host's two cores both compute), of 8 GPUs over 2 (eight
 * threads on two cores: what waiting and switching cost) and of stage 3 over DDP on 2 GPUs
 * (what gathering every layer twice costs); and of 2 pipeline stages over 1 GPU (the stages
 * overlap on two cores except in the bubble, (p - 1)/(m + p - 1) of the step, a ninth for
 * m = 8; smaller micro-batches also make smaller matmuls). The GPUs are threads: a speed-up
 * needs as many free cores as GPUs, so the ratios are meaningful on an otherwise idle host. */
#include "config.h"
#include "cli/bench.h"

#include <stdio.h>

#include "base/clock.h"
#include "base/error.h"
#include "calc/preset.h"
#include "par/run.h"

/* tokens/s of steps 2..steps of one run of o, or 0 on a failure (said on stderr) */
static double run_rate(const struct train_opts *o)
{
    const struct gpt_config *m = &o->shape;
    int batch = o->batch;
    struct run_config cfg = {0};
    cfg.o = *o;
    struct error e = {0};
    if (preset_load_cluster(PRESET_CLUSTER, &cfg.spec, &e) != 0)
        spec_default(&cfg.spec);
    struct run *r = NULL;
    if (run_new(&r, &cfg, &e) || run_start(r, &e)) {
        fprintf(stderr, "scalelab: bench: %s\n", e.msg);
        run_free(r);
        return 0;
    }
    struct run_step s;
    double t1 = 0, t = 0;
    long n = 0;
    while (run_next(r, &s, 600) == 1) {
        t = clock_now();
        if (++n == 1)
            t1 = t;
    }
    int rc = run_finish(r, &e);
    run_free(r);
    if (rc || n < 2) {
        fprintf(stderr, "scalelab: bench: %s\n", rc ? e.msg : "the run stopped early");
        return 0;
    }
    return (double)(n - 1) * batch * m->seq / (t - t1);
}

static double tokens_per_s(const struct gpt_config *m, int gpus, int zero, int batch, long steps)
{
    struct train_opts o;
    train_opts_default(&o);
    o.shape = *m, o.batch = batch, o.steps = steps, o.gpus = gpus, o.zero = zero;
    return run_rate(&o);
}

static int run(struct bench *b)
{
    struct gpt_config m;
    if (bench_model("small", &m))
        return 1;
    int batch = b->quick ? 8 : 16;
    long steps = b->quick ? 3 : 12;
    double one = tokens_per_s(&m, 1, 0, batch, steps);
    double two = tokens_per_s(&m, 2, 0, batch, steps);
    double eight = tokens_per_s(&m, 8, 0, batch, steps);
    double z3 = tokens_per_s(&m, 2, 3, batch, steps);
    if (!(one > 0 && two > 0 && eight > 0 && z3 > 0))
        return 1;
    char what[96];
    snprintf(what, sizeof what, "small fp32, batch %d x %d: 1 GPU, tokens/s", batch, m.seq);
    bench_report(b, "dp", what, one, "tok/s", BENCH_NONE);
    bench_report(b, "dp", "2 GPUs DDP, tokens/s", two, "tok/s", BENCH_NONE);
    bench_report(b, "dp", "8 GPUs DDP, tokens/s", eight, "tok/s", BENCH_NONE);
    bench_report(b, "dp", "2 GPUs ZeRO-3, tokens/s", z3, "tok/s", BENCH_NONE);
    bench_report(b, "dp", "2 GPUs DDP / 1 GPU (target >= 1.6)", two / one, "x", BENCH_NONE);
    bench_report(b, "dp", "8 GPUs DDP / 2 GPUs DDP (target >= 0.8)", eight / two, "x", BENCH_NONE);
    bench_report(b, "dp", "2 GPUs ZeRO-3 / DDP (target >= 0.8)", z3 / two, "x", BENCH_NONE);
    return 0;
}

const struct bench_case bench_dp = {
    "dp",
    "data parallelism on thread-GPUs (small, fp32): 1, 2, 8 GPUs DDP and ZeRO-3, tokens/s",
    run,
};

static int run_pp(struct bench *b)
{
    struct gpt_config m;
    if (bench_model("small", &m))
        return 1;
    int batch = 16;
    long steps = b->quick ? 3 : 12;
    struct train_opts o;
    train_opts_default(&o);
    o.shape = m, o.batch = batch, o.steps = steps;
    double one = run_rate(&o);
    o.gpus = o.pp = 2, o.micro_batches = 8;
    double two = run_rate(&o);
    if (!(one > 0 && two > 0))
        return 1;
    char what[96];
    snprintf(what, sizeof what, "small fp32, batch %d x %d: 1 GPU, tokens/s", batch, m.seq);
    bench_report(b, "pp", what, one, "tok/s", BENCH_NONE);
    bench_report(b, "pp", "2 stages, 8 micro-batches (1F1B), tokens/s", two, "tok/s", BENCH_NONE);
    bench_report(b, "pp", "2 stages / 1 GPU (target >= 1.3)", two / one, "x", BENCH_NONE);
    return 0;
}

const struct bench_case bench_pp = {
    "pp",
    "pipeline parallelism on thread-GPUs (small, fp32): 2 stages, 8 micro-batches, tokens/s",
    run_pp,
};

static int run_tp(struct bench *b)
{
    struct gpt_config m;
    if (bench_model("small", &m))
        return 1;
    struct train_opts o;
    train_opts_default(&o);
    o.shape = m, o.batch = 16, o.steps = b->quick ? 3 : 12;
    double one = run_rate(&o);
    o.gpus = o.tp = 2;
    double two = run_rate(&o);
    if (!(one > 0 && two > 0))
        return 1;
    char what[96];
    snprintf(what, sizeof what, "small fp32, batch %d x %d: 1 GPU, tokens/s", o.batch, m.seq);
    bench_report(b, "tp", what, one, "tok/s", BENCH_NONE);
    bench_report(b, "tp", "2 tensor-parallel GPUs, tokens/s", two, "tok/s", BENCH_NONE);
    bench_report(b, "tp", "2 tensor-parallel GPUs / 1 GPU (target >= 1.3)", two / one, "x",
                 BENCH_NONE);
    return 0;
}

const struct bench_case bench_tp = {
    "tp",
    "tensor parallelism on thread-GPUs (small, fp32): 2 GPUs, tokens/s",
    run_tp,
};
