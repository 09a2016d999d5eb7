/* Benchmark group "train": one training step (forward, backward, clip, AdamW) of the `small`
 * model in fp32, bf16 and fp16, and of the `torch-compare` model (the shape set beside PyTorch) in
 * fp32, on this host's one core.
 *
 * Reported: tokens per second, and the step's matmul FLOPs (the model's own count:
 * gpt_step_flops) over the step's time, as a ratio to the sgemm rate measured in the
 * same run. Both run OpenBLAS on one thread (cli/main.c sets it before anything runs), so the
 * ratio compares like with like; both are timed by the thread's CPU time (bench_cpu_time),
 * since everything runs in this thread, so a shared machine's other processes do not count. The
 * step also does non-matmul work (norms, softmax, SwiGLU, RoPE, AdamW over every parameter, and in
 * bf16/fp16 the rounding of every tensor), so the ratio says how much of the step is spent at sgemm
 * speed. bf16 and fp16 are emulated (rounding through num/fp.h); their cost is reported as the
 * ratio of their step time to fp32's. Where the time goes is measured with the per-phase timers
 * (base/prof.h, wall time) on separate steps after the timed ones, so the clock reads are not
 * in the timed steps: the phases of the fastest of them by the wall clock. Buffers are allocated
 * once per run, before timing. */
#include "config.h"
#include "cli/bench.h"

#include <stdio.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/prof.h"
#include "model/blasbuf.h"
#include "par/run.h"
#include "par/trainer.h"

static void one_step(void *p)
{
    struct train_step s;
    trainer_step(p, &s);
}

/* Times `model` at `batch` in `fmt`: the rows, and the best step time in *t. 0 or 1. */
static int run_one(struct bench *b, const char *model, int batch, enum fp_format fmt, double *t)
{
    struct error e = {0};
    struct train_opts o;
    train_opts_default(&o);
    if (bench_model(model, &o.shape))
        return 1;
    o.batch = batch;
    o.steps = 1000000; /* steps are run by the timer */
    o.clip = 1.0;
    o.precision = fmt;
    o.scaling = fmt == FP_FP16 ? TRAIN_SCALE_DYNAMIC : TRAIN_SCALE_NONE;
    struct trainer *tr;
    /* the memory it will use, checked first: one GPU's run on this thread */
    struct run_config rc = {.o = o};
    int claimed = 0;
    if (run_reserve(&rc, &claimed, &e) || trainer_new(&tr, &o, NULL, &e)) {
        blasbuf_release(claimed);
        fprintf(stderr, "scalelab: bench: %s\n", e.msg);
        return 1;
    }
    struct gpt_flops fl = gpt_step_flops(&o.shape, o.batch, &o.ckpt);
    one_step(tr); /* warm: first touches of caches and tables */
    double min_s = b->quick ? 0.05 : 1.0;
    *t = bench_cpu_time(one_step, tr, min_s);

    /* where the time goes: steps with the phase timers on; the fastest one's phases (the
     * machine may be shared: the fastest step is the one least disturbed) */
    struct prof best = {0};
    double total = 1e300, start = clock_now();
    do {
        struct prof pr = {0};
        double t0 = clock_now();
        prof_attach(&pr);
        one_step(tr);
        prof_attach(NULL);
        double dt = clock_now() - t0;
        if (dt < total)
            total = dt, best = pr;
    } while (clock_now() - start < min_s / 2);
    trainer_free(tr);
    blasbuf_release(claimed);

    const char *name = fp_info(fmt)->name;
    char what[96];
    snprintf(what, sizeof what, "%s %s step, batch %d x %d: tokens/s", model, name, o.batch,
             o.shape.seq);
    bench_report(b, "train", what, o.batch * (double)o.shape.seq / *t, "tok/s", BENCH_NONE);
    snprintf(what, sizeof what, "%s %s step: matmul GFLOP/s", model, name);
    bench_report(b, "train", what, (fl.forward + fl.backward) / *t / 1e9, "GFLOP/s", BENCH_SGEMM);
    double rest = total;
    for (int ph = 0; ph < PROF_PHASES; ph++) {
        snprintf(what, sizeof what, "%s %s step: time in %s", model, name,
                 prof_name((enum prof_phase)ph));
        bench_report(b, "train", what, best.seconds[ph] * 1e3, "ms", BENCH_NONE);
        rest -= best.seconds[ph];
    }
    snprintf(what, sizeof what, "%s %s step: time in the rest", model, name);
    bench_report(b, "train", what, rest * 1e3, "ms", BENCH_NONE);
    return 0;
}

static int run(struct bench *b)
{
    const enum fp_format fmts[3] = {FP_FP32, FP_BF16, FP_FP16};
    double t32 = 0, t;
    for (int i = 0; i < 3; i++) {
        if (run_one(b, "small", b->quick ? 1 : 4, fmts[i], &t))
            return 1;
        if (i == 0)
            t32 = t;
        else {
            char what[96];
            snprintf(what, sizeof what, "small %s step time / fp32 step time",
                     fp_info(fmts[i])->name);
            bench_report(b, "train", what, t / t32, "x", BENCH_NONE);
        }
    }
    return run_one(b, "torch-compare", b->quick ? 2 : 16, FP_FP32, &t);
}

const struct bench_case bench_train = {
    "train",
    "a training step of the small GPT in fp32, bf16 and fp16, and of the torch-compare GPT in "
    "fp32: "
    "tokens/s, matmul GFLOP/s, time per phase",
    run,
};
