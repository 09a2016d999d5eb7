/* Benchmark group "train": one training step (forward, backward, clip, AdamW) of the `small`
 * model in fp32, bf16 and fp16 and with fp8 GEMMs (each recipe beside bf16's step), and of the
 * `torch-compare` model (the shape set beside PyTorch) in
 * fp32, on this host's one core.
 *
 * Reported: tokens per second of each step, beside the tokens per second the step would reach
 * if all its matmul FLOPs (the model's own count: gpt_step_flops) ran at the sgemm rate
 * measured in the same run, and the same as matmul GFLOP/s beside the sgemm rate (the target
 * for small fp32: 0.8). Both run OpenBLAS on one thread (cli/main.c sets it before anything
 * runs), so the ratio compares like with like; both are timed by the thread's CPU time, since
 * everything runs in this thread, so a shared machine's other processes do not count; each
 * step is a sample, followed by a sample of the sgemm rate, the ratio taken pair by pair (what
 * the other processes do to the caches and the memory bus falls on both). The step also does
 * non-matmul work (norms, softmax, SwiGLU, RoPE, AdamW over every parameter, and in bf16/fp16 the
 * rounding of every tensor), so the ratio says how much of the step is spent at sgemm speed. bf16
 * and fp16 are emulated (rounding through num/fp.h); their step time is set beside fp32's. Where
 * the time goes is measured with the per-phase timers (base/prof.h, wall time) on separate steps
 * after the timed ones, so the clock reads are not in the timed steps: each phase beside its step's
 * time. Buffers are allocated once per run, before timing.
 *
 * The torch-compare step is also set beside PyTorch's of the same shape, scripts/torch_compare.py
 * run in turns with ours (its step's CPU time, one thread; the goal: ours at least 1.2 x its
 * tokens/s), where a python3 with torch and the script are found (not with --quick). */
#include "config.h"
#include "cli/bench.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/datadir.h"
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

/* A trainer of `model` at `batch` in `fmt` (with an fp8 recipe r: its GEMMs in fp8, fmt bf16),
 * as the benchmark times it; NULL after saying why. */
static struct trainer *trainer_of(const char *model, int batch, enum fp_format fmt,
                                  enum fp8_recipe r, struct train_opts *o, int *claimed)
{
    struct error e = {0};
    train_opts_default(o);
    if (bench_model(model, &o->shape))
        return NULL;
    o->batch = batch;
    o->steps = 1000000; /* steps are run by the timer */
    o->clip = 1.0;
    o->precision = fmt;
    o->scaling = train_scaling_for(fmt);
    o->fp8 = r != FP8_OFF, o->fp8_recipe = r;
    struct trainer *tr;
    /* the memory it will use, checked first: one GPU's run on this thread; the OpenBLAS
     * buffers claimed are given back (blasbuf_release) after trainer_free */
    struct run_config rc = {.o = *o};
    *claimed = 0;
    if (run_reserve(&rc, claimed, &e) || trainer_new(&tr, o, NULL, &e)) {
        blasbuf_release(*claimed);
        fprintf(stderr, "scalelab: bench: %s\n", e.msg);
        return NULL;
    }
    return tr;
}

/* Times `model` at `batch` in `fmt` (fp8 recipe r, or FP8_OFF): the rows, and the step's CPU
 * seconds in t[0..k-1] (k = 3 x repeats). 0 or 1. */
static int run_one(struct bench *b, const char *model, int batch, enum fp_format fmt,
                   enum fp8_recipe r, double *t, int k)
{
    struct train_opts o;
    int claimed;
    struct trainer *tr = trainer_of(model, batch, fmt, r, &o, &claimed);
    if (!tr)
        return 1;
    struct gpt_flops fl = gpt_step_flops(&o.shape, o.batch, &o.ckpt);
    double tokens = o.batch * (double)o.shape.seq, flops = fl.forward + fl.backward;
    double sg[BENCH_MAX_REPEATS]; /* the sgemm rate, a sample beside each step's */
    one_step(tr);                 /* warm */
    for (int i = 0; i < k; i++) {
        double t0 = clock_thread_cpu();
        one_step(tr);
        t[i] = clock_thread_cpu() - t0;
        sg[i] = bench_sgemm_sample(b);
    }

    /* where the time goes: steps with the phase timers on, each phase beside its step */
    int np = b->repeats;
    double ph[PROF_PHASES + 1][BENCH_MAX_REPEATS], step[BENCH_MAX_REPEATS];
    for (int i = 0; i < np; i++) {
        struct prof pr = {0};
        double t0 = clock_now();
        prof_attach(&pr);
        one_step(tr);
        prof_attach(NULL);
        step[i] = (clock_now() - t0) * 1e3;
        ph[PROF_PHASES][i] = step[i];
        for (int p = 0; p < PROF_PHASES; p++) {
            ph[p][i] = pr.seconds[p] * 1e3;
            ph[PROF_PHASES][i] -= ph[p][i];
        }
    }
    trainer_free(tr);
    blasbuf_release(claimed);

    char name[32];
    if (r != FP8_OFF)
        snprintf(name, sizeof name, "fp8 %s", fp8_recipe_name(r));
    else
        snprintf(name, sizeof name, "%s", fp_info(fmt)->name);
    char what[96];
    double v[BENCH_MAX_REPEATS], lim[BENCH_MAX_REPEATS];
    for (int i = 0; i < k; i++)
        v[i] = tokens / t[i], lim[i] = sg[i] * 1e9 / flops * tokens;
    snprintf(what, sizeof what, "%s %s step, batch %d x %d: tokens/s", model, name, o.batch,
             o.shape.seq);
    bench_report_vs(b, "train", what, v, k, "tok/s", "at sgemm rate", lim, k);
    for (int i = 0; i < k; i++)
        v[i] = flops / t[i] / 1e9;
    snprintf(what, sizeof what, "%s %s step: matmul GFLOP/s", model, name);
    bench_report_vs(b, "train", what, v, k, "GFLOP/s", "sgemm", sg, k);
    for (int p = 0; p <= PROF_PHASES; p++) {
        snprintf(what, sizeof what, "%s %s step: time in %s", model, name,
                 p < PROF_PHASES ? prof_name((enum prof_phase)p) : "the rest");
        bench_report_vs(b, "train", what, ph[p], np, "ms", "its step", step, np);
    }
    return 0;
}

/* ------------------------------------------------------------------ beside PyTorch */

/* The python3 that has torch ("" when none), and the script, into py and script. */
static bool find_torch(char *py, size_t npy, char *script, size_t nscript)
{
    if (!datadir_path(script, nscript, "scripts/torch_compare.py") || access(script, R_OK) != 0)
        return false;
    static const char *const pythons[] = {"python3", "/usr/bin/python3"};
    for (size_t i = 0; i < sizeof pythons / sizeof *pythons; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd,
                 "%s -c 'import importlib.util as u; assert u.find_spec(\"torch\")' "
                 ">/dev/null 2>&1",
                 pythons[i]);
        if (system(cmd) == 0) {
            snprintf(py, npy, "%s", pythons[i]);
            return true;
        }
    }
    return false;
}

/* PyTorch's step times for about `seconds` into t (at most max of them); their number, or 0. */
static int torch_steps(const char *py, const char *script, int batch, double seconds, double *t,
                       int max)
{
    char model[4096], cmd[8400];
    if (!datadir_path(model, sizeof model, "assets/models/torch-compare.ini"))
        return 0;
    snprintf(cmd, sizeof cmd, "%s '%s' --json '%s' %d %g 2>/dev/null", py, script, model, batch,
             seconds);
    FILE *p = popen(cmd, "r");
    json_error_t je;
    json_t *d = p ? json_loadf(p, 0, &je) : NULL;
    if (p)
        pclose(p);
    json_t *s = json_object_get(d, "step_s");
    int n = 0;
    for (; n < max && n < (int)json_array_size(s); n++)
        t[n] = json_number_value(json_array_get(s, (size_t)n));
    json_decref(d);
    return n;
}

/* torch-compare's step against PyTorch's, in turns: a round of ours, then a run of the
 * script; the ratio of the medians of each round. */
static int beside_torch(struct bench *b, int batch)
{
    char py[64], script[4096];
    if (b->quick || !find_torch(py, sizeof py, script, sizeof script)) {
        fprintf(stderr, "scalelab: bench: train: PyTorch's step not timed (%s)\n",
                b->quick ? "--quick" : "no python3 with torch, or no scripts/torch_compare.py");
        return 0;
    }
    struct train_opts o;
    int claimed;
    struct trainer *tr = trainer_of("torch-compare", batch, FP_FP32, FP8_OFF, &o, &claimed);
    if (!tr)
        return 1;
    double tokens = batch * (double)o.shape.seq, ours[BENCH_MAX_REPEATS], theirs[BENCH_MAX_REPEATS],
           t[BENCH_MAX_REPEATS];
    int rounds = b->repeats;
    for (int r = 0; r < rounds; r++) {
        struct bench_stat st;
        bench_cpu_times(one_step, tr, t, 9);
        bench_stat_of(t, 9, &st);
        ours[r] = tokens / st.med;
        int n = torch_steps(py, script, batch, 1.0, t, BENCH_MAX_REPEATS);
        if (n == 0) {
            fprintf(stderr, "scalelab: bench: train: %s %s gave no step times\n", py, script);
            trainer_free(tr);
            blasbuf_release(claimed);
            return 1;
        }
        bench_stat_of(t, n, &st);
        theirs[r] = tokens / st.med;
    }
    trainer_free(tr);
    blasbuf_release(claimed);
    char what[96];
    snprintf(what, sizeof what, "torch-compare fp32 step, batch %d: tokens/s (target 1.2 x)",
             batch);
    bench_report_vs(b, "train", what, ours, rounds, "tok/s", "PyTorch's", theirs, rounds);
    return 0;
}

/* A step's times t (k of them, seconds) beside another run's median (ref), in ms, as "small
 * NAME step time" against "LIMIT step". */
static void beside(struct bench *b, const char *name, double *t, const double *ref, int k,
                   const char *limit)
{
    char what[96], lim[32];
    snprintf(what, sizeof what, "small %s step time", name);
    snprintf(lim, sizeof lim, "%s step", limit);
    struct bench_stat st;
    bench_stat_of(ref, k, &st);
    for (int j = 0; j < k; j++)
        t[j] *= 1e3;
    double ms = st.med * 1e3; /* another run: its median, not its samples in turn */
    bench_report_vs(b, "train", what, t, k, "ms", lim, &ms, 1);
}

static int run(struct bench *b)
{
    const enum fp_format fmts[3] = {FP_FP32, FP_BF16, FP_FP16};
    int k = 3 * b->repeats, batch = b->quick ? 1 : 4;
    double t32[BENCH_MAX_REPEATS], t16[BENCH_MAX_REPEATS], t[BENCH_MAX_REPEATS];
    for (int i = 0; i < 3; i++) {
        double *into = i == 0 ? t32 : i == 1 ? t16 : t;
        if (run_one(b, "small", batch, fmts[i], FP8_OFF, into, k))
            return 1;
        if (i > 0) {
            memcpy(t, into, (size_t)k * sizeof *t);
            beside(b, fp_info(fmts[i])->name, t, t32, k, "fp32");
        }
    }
    /* fp8's GEMMs in the bf16 model, beside bf16's step: the quantisation's cost (its phase,
     * "fp8 quantisation", among the rows of its step); --quick: the current recipe alone */
    for (int r = b->quick ? FP8_CURRENT : FP8_DELAYED; r <= (b->quick ? FP8_CURRENT : FP8_BLOCK);
         r++) {
        if (run_one(b, "small", batch, FP_BF16, (enum fp8_recipe)r, t, k))
            return 1;
        char name[32];
        snprintf(name, sizeof name, "fp8 %s", fp8_recipe_name((enum fp8_recipe)r));
        beside(b, name, t, t16, k, "bf16");
    }
    int tb = b->quick ? 2 : 16;
    return run_one(b, "torch-compare", tb, FP_FP32, FP8_OFF, t, k) || beside_torch(b, tb);
}

const struct bench_case bench_train = {
    "train",
    "a training step of the small GPT in fp32, bf16, fp16 and fp8 (each recipe), and of the "
    "torch-compare GPT in fp32 (beside PyTorch's): tokens/s, matmul GFLOP/s, time per phase",
    run,
};
