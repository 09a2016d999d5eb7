/* Benchmark groups "dp", "pp", "tp", "cp" and "ep": data, pipeline, tensor, context and expert
 * parallelism on the thread-GPUs; and "timeas", the host's cost of a run timed as a model (at
 * the end). The `small` model trains on 1, 2 and 8 GPUs (DDP) and on 2 GPUs at ZeRO stage
 * 3; on 2 pipeline stages with 8 micro-batches; and on 2 tensor-parallel GPUs; each run with the
 * same global batch, in fp32, through the engine of `scalelab train` (par/run.h). The runs of a
 * group take turns (1 GPU, 2 GPUs, ..., then again), each turn a sample.
 *
 * Each run gives its tokens per second (steady state: from the end of the first step to the
 * end of the last, so the one-time allocation of every buffer is not timed) and the CPU time
 * the process spent per token meanwhile (every thread: the GPUs', the reader's). Reported:
 * one GPU's tokens/s beside what the step's matmul FLOPs would allow at the sgemm rate, and
 * each speed-up beside the limit the work itself sets on this machine's cores: with P of
 * them busy (P = the GPUs, at most the cores), a run that spends CPU c_N per token where one
 * GPU spends c_1 can reach at most P c_1 / c_N times one GPU's rate. For 2 GPUs that is
 * 2 / (1 + s), s = c_2 / c_1 - 1 the serial fraction: the work both GPUs repeat (each draws
 * the whole batch, unscales its gradients, runs AdamW over its range: all of them in DDP) and
 * the copies of the all-reduce. What the speed-up falls short of its limit was spent waiting:
 * for the other GPU at a collective, for a core (other processes), or, with pipeline stages,
 * in the bubble, (p - 1)/(m + p - 1) of the step (a ninth for m = 8). The GPUs are threads: a
 * speed-up needs as many free cores as GPUs, so the ratio to the limit is meaningful on an
 * otherwise idle host; the limit itself is measured in CPU time and holds on a busy one. */
#include "config.h"
#include "cli/bench.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "calc/preset.h"
#include "par/run.h"
#include "par/timeas.h"

/* The process's CPU seconds so far, every thread. */
static double process_cpu(void)
{
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u) != 0)
        return 0;
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + (double)u.ru_stime.tv_sec +
           u.ru_stime.tv_usec * 1e-6;
}

struct rate {
    double tokens_s;  /* wall */
    double cpu_token; /* CPU seconds per token */
};

/* The run of o on model `model` timed as model `as`, as train --time-as sets it up
 * (cli/train_args.c): the cluster's time scale, and the gradient buckets cut as the model's. 0,
 * or 1 after saying why. */
static int time_as(struct run_config *cfg, const char *model, const char *as)
{
    struct error e = {0};
    struct model_shape run, m;
    if (preset_load_model(model, &run, &e) || preset_load_model(as, &m, &e) ||
        timeas_scale(&cfg->o, &run, &m, &cfg->spec, &e)) {
        fprintf(stderr, "scalelab: bench: timed as %s: %s\n", as, e.msg);
        return 1;
    }
    size_t es = cfg->o.grad_fp32 || cfg->o.precision == FP_FP32 ? 4 : 2;
    cfg->o.bucket_bytes = timeas_bucket(&cfg->spec, cfg->o.bucket_bytes, es);
    return 0;
}

/* Steps 2..steps of one run of o (of model `model`, timed as model `as` unless NULL); 1
 * after saying why. */
static int run_rate(const struct train_opts *o, const char *model, const char *as, struct rate *out)
{
    struct run_config cfg = {0};
    cfg.o = *o;
    struct error e = {0};
    if (preset_load_cluster(PRESET_CLUSTER, &cfg.spec, &e) != 0)
        spec_default(&cfg.spec);
    if (as && time_as(&cfg, model, as))
        return 1;
    struct run *r = NULL;
    if (run_new(&r, &cfg, &e) || run_start(r, &e)) {
        fprintf(stderr, "scalelab: bench: %s\n", e.msg);
        run_free(r);
        return 1;
    }
    struct run_step s;
    double t1 = 0, t = 0, c1 = 0, c = 0;
    long n = 0;
    while (run_next(r, &s, 600) == 1) {
        t = clock_now(), c = process_cpu();
        if (++n == 1)
            t1 = t, c1 = c;
    }
    int rc = run_finish(r, &e);
    run_free(r);
    if (rc || n < 2) {
        fprintf(stderr, "scalelab: bench: %s\n", rc ? e.msg : "the run stopped early");
        return 1;
    }
    double tokens = (double)(n - 1) * o->batch * o->shape.seq;
    out->tokens_s = tokens / (t - t1);
    out->cpu_token = (c - c1) / tokens;
    return 0;
}

/* Up to four layouts of one group, run in turns: r[k][i] is layout k's sample i. Each of
 * `model`, timed as as[k] (NULL: as itself). */
struct turns {
    struct train_opts o[4];
    const char *model, *as[4];
    int n, rounds;
    struct rate r[4][BENCH_MAX_REPEATS];
};

static int take_turns(struct turns *t)
{
    for (int i = 0; i < t->rounds; i++)
        for (int k = 0; k < t->n; k++)
            if (run_rate(&t->o[k], t->model, t->as[k], &t->r[k][i]))
                return 1;
    return 0;
}

/* The cores layout k's GPUs keep busy: its GPUs, at most the machine's. */
static double busy_cores(const struct turns *t, int k)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int g = t->o[k].gpus > 0 ? t->o[k].gpus : 1;
    return (double)(cores > 0 && cores < g ? cores : g);
}

/* Layout k's speed over layout base's, beside the limit their CPU per token sets. */
static void speedup(struct bench *b, const char *group, const char *what, const struct turns *t,
                    int k, int base, bool serial)
{
    double v[BENCH_MAX_REPEATS], lim[BENCH_MAX_REPEATS], s[BENCH_MAX_REPEATS];
    double p = busy_cores(t, k) / busy_cores(t, base);
    for (int i = 0; i < t->rounds; i++) {
        v[i] = t->r[k][i].tokens_s / t->r[base][i].tokens_s;
        lim[i] = p * t->r[base][i].cpu_token / t->r[k][i].cpu_token;
        s[i] = t->r[k][i].cpu_token / t->r[base][i].cpu_token - 1;
    }
    char name[48] = "CPU per token";
    if (serial) {
        struct bench_stat st;
        bench_stat_of(s, t->rounds, &st);
        snprintf(name, sizeof name, "2/(1+s), s=%.3f", st.med);
    }
    bench_report_vs(b, group, what, v, t->rounds, "x", name, lim, t->rounds);
}

/* One GPU's tokens/s (layout 0) beside what its matmul FLOPs allow at the sgemm rate. */
static void one_gpu(struct bench *b, const char *group, const struct turns *t)
{
    const struct train_opts *o = &t->o[0];
    struct gpt_flops fl = gpt_step_flops(&o->shape, o->batch, &o->ckpt);
    double v[BENCH_MAX_REPEATS], tokens = o->batch * (double)o->shape.seq;
    double lim = b->sgemm_GFLOPs * 1e9 / (fl.forward + fl.backward) * tokens;
    for (int i = 0; i < t->rounds; i++)
        v[i] = t->r[0][i].tokens_s;
    char what[96];
    snprintf(what, sizeof what, "small fp32, batch %d x %d: 1 GPU, tokens/s", o->batch,
             o->shape.seq);
    bench_report_vs(b, group, what, v, t->rounds, "tok/s", "at sgemm rate", &lim, 1);
}

/* The turns of a group: small in fp32 at batch 16, n layouts from layout 0's settings. */
static int turns_init(struct bench *b, struct turns *t, int n)
{
    t->n = n;
    t->rounds = b->repeats;
    t->model = "small";
    for (int k = 0; k < n; k++) {
        t->as[k] = NULL;
        train_opts_default(&t->o[k]);
        if (bench_model(t->model, &t->o[k].shape))
            return 1;
        t->o[k].batch = b->quick ? 8 : 16;
        t->o[k].steps = b->quick ? 3 : 8;
    }
    return 0;
}

static int run(struct bench *b)
{
    struct turns t;
    if (turns_init(b, &t, 4))
        return 1;
    t.o[1].gpus = 2, t.o[2].gpus = 8, t.o[3].gpus = 2, t.o[3].zero = 3;
    if (take_turns(&t))
        return 1;
    one_gpu(b, "dp", &t);
    speedup(b, "dp", "2 GPUs DDP / 1 GPU (target >= 1.8)", &t, 1, 0, true);
    speedup(b, "dp", "8 GPUs DDP / 2 GPUs DDP (target >= 0.8)", &t, 2, 1, false);
    speedup(b, "dp", "2 GPUs ZeRO-3 / DDP (target >= 0.8)", &t, 3, 1, false);
    return 0;
}

const struct bench_case bench_dp = {
    "dp",
    "data parallelism on thread-GPUs (small, fp32): 1, 2, 8 GPUs DDP and ZeRO-3 in turns, "
    "speed-ups beside the serial fraction's limit",
    run,
};

static int run_pp(struct bench *b)
{
    struct turns t;
    if (turns_init(b, &t, 2))
        return 1;
    t.o[0].batch = t.o[1].batch = 16;
    t.o[1].gpus = t.o[1].pp = 2, t.o[1].micro_batches = 8;
    if (take_turns(&t))
        return 1;
    one_gpu(b, "pp", &t);
    speedup(b, "pp", "2 stages, 8 micro-batches (1F1B) / 1 GPU (target >= 1.3)", &t, 1, 0, true);
    return 0;
}

const struct bench_case bench_pp = {
    "pp",
    "pipeline parallelism on thread-GPUs (small, fp32): 2 stages, 8 micro-batches, against one "
    "GPU in turns",
    run_pp,
};

static int run_tp(struct bench *b)
{
    struct turns t;
    if (turns_init(b, &t, 2))
        return 1;
    t.o[0].batch = t.o[1].batch = 16;
    t.o[1].gpus = t.o[1].tp = 2;
    if (take_turns(&t))
        return 1;
    one_gpu(b, "tp", &t);
    speedup(b, "tp", "2 tensor-parallel GPUs / 1 GPU (target >= 1.3)", &t, 1, 0, true);
    return 0;
}

const struct bench_case bench_tp = {
    "tp",
    "tensor parallelism on thread-GPUs (small, fp32): 2 GPUs against one, in turns",
    run_tp,
};

/* Context parallelism at a long sequence, where attention's T x T work dominates: one GPU
 * computes every score of its heads' T x T blocks (the causal zeros included, as one sgemm
 * does); cp 2's GPUs compute only what the mask leaves, half of each of C = 2 blocks of
 * (T/2)^2 with the balanced split, about a quarter of it, besides half of the rest of the
 * step. */
static int run_cp(struct bench *b)
{
    struct turns t;
    if (turns_init(b, &t, 2))
        return 1;
    for (int k = 0; k < 2; k++) {
        t.o[k].shape.seq = b->quick ? 512 : 1024;
        t.o[k].batch = 4;
        t.o[k].steps = b->quick ? 3 : 5;
    }
    t.o[1].gpus = t.o[1].cp = 2;
    if (take_turns(&t))
        return 1;
    char what[96];
    snprintf(what, sizeof what, "2 context-parallel GPUs / 1 GPU, sequence %d (target >= 1.5)",
             t.o[0].shape.seq);
    speedup(b, "cp", what, &t, 1, 0, false);
    return 0;
}

const struct bench_case bench_cp = {
    "cp",
    "context parallelism on thread-GPUs (small, fp32, a long sequence): 2 GPUs of a ring "
    "against one, in turns",
    run_cp,
};

/* Expert parallelism: small with 8 experts of its FFN width in every layer, top-2, capacity
 * factor 1.25 (cap = 1.25 x 2 n / 8 of a GPU's n tokens): one GPU holding every expert against
 * 2 GPUs holding 4 each (dp 2 x ep 2), the tokens dispatched and combined by all-to-alls. Each
 * expert-parallel GPU runs its experts on the static E cap rows it receives, padding included,
 * where one GPU runs only the rows its tokens fill: the CPU per token says how much that and
 * the all-to-alls' copies cost. */
static int run_ep(struct bench *b)
{
    struct turns t;
    if (turns_init(b, &t, 2))
        return 1;
    for (int k = 0; k < 2; k++)
        t.o[k].shape.moe = (struct gpt_moe){.experts = 8,
                                            .top_k = 2,
                                            .every = 1,
                                            .capacity_factor = 1.25,
                                            .aux_coef = TRAIN_AUX_COEF};
    t.o[1].gpus = t.o[1].ep = 2;
    if (take_turns(&t))
        return 1;
    speedup(b, "ep", "2 expert-parallel GPUs / 1 GPU, 8 experts top-2 (target >= 1.5)", &t, 1, 0,
            true);
    return 0;
}

const struct bench_case bench_ep = {
    "ep",
    "expert parallelism on thread-GPUs (small with 8 experts, fp32): 2 GPUs of 4 experts each "
    "against one of 8, in turns",
    run_ep,
};

/* The host's cost of timing a run as the model it stands for (train --time-as): the same run
 * of small, fp32, ZeRO-3 on 8 GPUs, as itself and timed as synthetic-7b (its layout holds
 * synthetic-7b on H100s), in turns. The timed run charges every operation and message the
 * model's cost, and cuts its gradient buckets as the model's (a bucket over the parameters'
 * scale: more, smaller collectives), so it does more host work per step; the target is at
 * most 10% more wall time a step (issue 32). */
static int run_timeas(struct bench *b)
{
    struct turns t;
    if (turns_init(b, &t, 2))
        return 1;
    for (int k = 0; k < 2; k++)
        t.o[k].gpus = 8, t.o[k].zero = 3;
    t.as[1] = "synthetic-7b";
    if (take_turns(&t))
        return 1;
    double v[BENCH_MAX_REPEATS], lim[BENCH_MAX_REPEATS];
    double tokens = t.o[0].batch * (double)t.o[0].shape.seq;
    for (int i = 0; i < t.rounds; i++) /* a step's wall time, ms */
        v[i] = tokens / t.r[1][i].tokens_s * 1e3, lim[i] = tokens / t.r[0][i].tokens_s * 1e3;
    char what[96];
    snprintf(what, sizeof what, "small fp32, 8 GPUs ZeRO-3, timed as %s: step (target <= 1.10)",
             t.as[1]);
    bench_report_vs(b, "timeas", what, v, t.rounds, "ms", "the run as itself", lim, t.rounds);
    return 0;
}

const struct bench_case bench_timeas = {
    "timeas",
    "a run timed as synthetic-7b (train --time-as) beside the same run as itself (small, fp32, "
    "8 GPUs ZeRO-3), in turns: the host's wall time a step",
    run_timeas,
};
