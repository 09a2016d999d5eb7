/* Benchmark group "train": one training step of the `small` model (forward, backward, clip,
 * AdamW) in fp32, bf16 and fp16, on this host's one core.
 *
 * Reported: tokens per second, and the step's matmul FLOPs (the model's own count: six
 * projections per layer, QK^T and P V, the tied head; forward and twice that backward) over
 * the step's wall time, as a ratio to the single-thread sgemm rate measured in the same run.
 * The step also does non-matmul work (norms, softmax, SwiGLU, RoPE, AdamW over every
 * parameter, and in bf16/fp16 the rounding of every tensor), so the ratio says how much of
 * the step is spent at sgemm speed. bf16 and fp16 are emulated (rounding through num/fp.h);
 * their cost is reported as the ratio of their step time to fp32's. Buffers are allocated
 * once per precision, before timing. */
#include "config.h"
#include "cli/bench.h"

#include <stdio.h>

#include "base/error.h"
#include "par/trainer.h"

struct arg {
    struct trainer *t;
};

static void one_step(void *p)
{
    struct arg *a = p;
    struct train_step s;
    trainer_step(a->t, &s);
}

static int run(struct bench *b)
{
    struct error e = {0};
    struct train_opts o;
    train_opts_default(&o);
    if (bench_model("small", &o.shape))
        return 1;
    o.batch = b->quick ? 1 : 4;
    o.steps = 1000000; /* steps are run by the timer */
    o.clip = 1.0;
    const enum fp_format fmts[3] = {FP_FP32, FP_BF16, FP_FP16};
    double t32 = 0;
    for (int i = 0; i < 3; i++) {
        o.precision = fmts[i];
        o.scaling = fmts[i] == FP_FP16 ? TRAIN_SCALE_DYNAMIC : TRAIN_SCALE_NONE;
        struct arg a;
        if (trainer_new(&a.t, &o, NULL, &e)) {
            fprintf(stderr, "scalelab: bench: %s\n", e.msg);
            return 1;
        }
        struct gpt_flops fl = gpt_flops(trainer_model(a.t));
        one_step(&a); /* warm: first touches of caches and tables */
        double t = bench_time(one_step, &a, b->quick ? 0.05 : 1.0);
        trainer_free(a.t);
        const char *name = fp_info(fmts[i])->name;
        char what[96];
        snprintf(what, sizeof what, "small %s step, batch %d x %d: tokens/s", name, o.batch,
                 o.shape.seq);
        bench_report(b, "train", what, o.batch * (double)o.shape.seq / t, "tok/s", BENCH_NONE);
        snprintf(what, sizeof what, "small %s step: matmul GFLOP/s", name);
        bench_report(b, "train", what, (fl.forward + fl.backward) / t / 1e9, "GFLOP/s",
                     BENCH_SGEMM);
        if (i == 0)
            t32 = t;
        else {
            snprintf(what, sizeof what, "small %s step time / fp32 step time", name);
            bench_report(b, "train", what, t / t32, "x", BENCH_NONE);
        }
    }
    return 0;
}

const struct bench_case bench_train = {
    "train",
    "a training step of the small GPT in fp32, bf16 and fp16: tokens/s, matmul GFLOP/s",
    run,
};
