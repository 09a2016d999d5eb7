/* The trainer's step in phases on one GPU of a data-parallel group: the batch share,
 * forward and backward, gradient sync, unscale, agreement, clipping, skip or update,
 * parameter sync; the spike detector (par/trainer.h). */
#include "config.h"
#include "par/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/rng.h"
#include "model/markov.h"
#include "num/adamw.h"
#include "num/clip.h"
#include "num/scaler.h"
#include "par/dp.h"
#include "sim/cluster.h"

struct trainer {
    struct train_opts o;
    struct gpt *g;
    struct dp *dp;
    struct device *d; /* NULL on the host */
    int rank;
    struct markov *data;
    struct rng rng;
    struct adamw adam;
    struct scaler scaler;
    int32_t *tokens, *targets; /* the global batch; this GPU computes rows [rank B/N, ...) */
    long step;
    double *window; /* the last spike_window losses (a ring) */
    int nwin, iwin, outliers_in_a_row;
    train_observer observe;
    void *observe_ctx;
    struct gpt_alloc alloc; /* the caller's seam */
    size_t extra[GPT_MEM_KINDS];
    long poisoned_at;     /* the step whose update made the weights non-finite (0: none) */
    char poisoned_by[48]; /* the first non-finite tensor of that step */
};

void train_opts_default(struct train_opts *o)
{
    memset(o, 0, sizeof *o);
    o->shape = (struct gpt_config){64, 64, 4, 4, 172, 64};
    o->batch = 16;
    o->steps = 300;
    o->seed = 1;
    o->precision = FP_FP32;
    o->ckpt = (struct gpt_ckpt){GPT_CKPT_NONE, 0, "none"};
    o->lr = 1e-3, o->beta1 = 0.9, o->beta2 = 0.999, o->eps = 1e-8, o->wd = 0.01;
    o->scaling = TRAIN_SCALE_NONE;
    o->scale = 65536.0;
    o->growth_interval = 2000;
    o->hysteresis = 1;
    o->spike_window = 64;
    o->spike_z = 5.0;
    o->gpus = 1;
    o->bucket_bytes = 25u << 20;
    o->prefetch = 1;
    o->fail_gpu = -1;
}

int train_par_check(const struct train_opts *o, struct error *e)
{
    if (o->gpus < 1 || o->gpus > 64)
        return error_set(e, ERR_INVAL, "--gpus %d: from 1 to 64 GPUs", o->gpus);
    if (o->batch % o->gpus != 0)
        return error_set(e, ERR_INVAL,
                         "--batch %d does not split over %d GPUs: data parallelism gives each "
                         "GPU batch / GPUs sequences (try --batch %d)",
                         o->batch, o->gpus, (o->batch / o->gpus + 1) * o->gpus);
    if (o->zero < 0 || o->zero > 3)
        return error_set(e, ERR_INVAL, "--zero %d: the ZeRO stage is 0, 1, 2 or 3", o->zero);
    if (o->bucket_bytes < 4)
        return error_set(e, ERR_INVAL, "--bucket must be at least 4 bytes");
    if (o->prefetch < 0 || o->prefetch > 1)
        return error_set(e, ERR_INVAL, "--prefetch is 0 or 1");
    if (o->grad_fp32 && o->precision == FP_FP32)
        return error_set(e, ERR_INVAL, "--grad-accum fp32 goes with --precision bf16 or fp16");
    if (o->zero >= 3 && gpt_ckpt_segment(&o->ckpt, o->shape.layers) > 1)
        return error_set(e, ERR_INVAL,
                         "--zero 3 with --checkpoint %s: recomputing a segment of several layers "
                         "would gather each layer a third time; use full, selective or none",
                         o->ckpt.name);
    for (int i = 0; i < o->ninject; i++)
        if (o->inject[i].gpu < 0 || o->inject[i].gpu >= o->gpus)
            return error_set(e, ERR_INVAL, "--inject: GPU %d is not one of the %d GPUs",
                             o->inject[i].gpu, o->gpus);
    if (o->fail_gpu >= o->gpus)
        return error_set(e, ERR_INVAL, "--fail: GPU %d is not one of the %d GPUs", o->fail_gpu,
                         o->gpus);
    return 0;
}

int train_opts_check(const struct train_opts *o, struct error *e)
{
    if (o->batch < 1)
        return error_set(e, ERR_INVAL, "--batch must be at least 1");
    if (o->steps < 1)
        return error_set(e, ERR_INVAL, "--steps must be at least 1");
    if (!(o->lr >= 0) || !isfinite(o->lr))
        return error_set(e, ERR_INVAL, "--lr must be a finite number >= 0");
    if (!(o->beta1 >= 0 && o->beta1 < 1 && o->beta2 >= 0 && o->beta2 < 1))
        return error_set(e, ERR_INVAL, "--betas must both be in [0, 1)");
    if (!(o->eps > 0) || !isfinite(o->eps))
        return error_set(e, ERR_INVAL, "--eps must be a finite number > 0");
    if (!(o->wd >= 0) || !isfinite(o->wd))
        return error_set(e, ERR_INVAL, "--wd must be a finite number >= 0");
    if (o->scaling != TRAIN_SCALE_NONE && !(o->scale > 0 && o->scale <= 3.4e38))
        return error_set(e, ERR_INVAL, "--loss-scale must be > 0 and finite in fp32");
    if (o->growth_interval < 1)
        return error_set(e, ERR_INVAL, "--growth-interval must be at least 1");
    if (o->hysteresis < 1)
        return error_set(e, ERR_INVAL, "--hysteresis must be at least 1");
    if (o->clip < 0 || !isfinite(o->clip))
        return error_set(e, ERR_INVAL, "--clip must be a finite number > 0");
    if (o->spike_window < 2)
        return error_set(e, ERR_INVAL, "--spike-window must be at least 2");
    if (!(o->spike_z > 0))
        return error_set(e, ERR_INVAL, "--spike-z must be > 0");
    /* z over a window of N losses that includes the loss itself is at most sqrt(N - 1) */
    if (o->spike_z >= sqrt((double)o->spike_window - 1))
        return error_set(e, ERR_INVAL,
                         "--spike-z %g can never be reached: over a window of %d losses that "
                         "includes the loss itself, a z-score is at most sqrt(%d - 1) = %.3g; "
                         "lower --spike-z or widen --spike-window",
                         o->spike_z, o->spike_window, o->spike_window,
                         sqrt((double)o->spike_window - 1));
    for (int i = 0; i < o->ninject; i++)
        if (o->inject[i].step < 1 || o->inject[i].step > o->steps)
            return error_set(e, ERR_INVAL, "--inject: step %ld is outside the run's steps 1..%ld",
                             o->inject[i].step, o->steps);
    int rc = gpt_config_check(&o->shape, e);
    return rc ? rc : train_par_check(o, e);
}

static void *tmalloc(struct trainer *t, enum gpt_mem kind, size_t bytes, const char *what)
{
    void *p = t->alloc.alloc(t->alloc.ctx, kind, bytes, what);
    if (p)
        t->extra[kind] += bytes;
    return p;
}

static size_t batch_bytes(const struct train_opts *o)
{
    return 2 * (size_t)o->batch * (size_t)o->shape.seq * sizeof(int32_t);
}

struct train_calls trainer_calls(const struct train_opts *o)
{
    struct gpt_calls g = gpt_step_calls(&o->shape, &o->ckpt);
    struct gpt_alloc seam = {0};
    dp_model_seam(o, &seam);
    /* the model's (weights, gradients, arena, workspace: fewer when its fp32 weights and
     * gradients are workspace), the strategy's, the batch */
    long buffers = GPT_BUFFERS - seam.params_workspace - seam.grads_workspace + dp_buffers(o) + 1;
    long computes = g.compute;
    /* ZeRO-3: every gather moves reserved bytes to communication and back */
    long charges = g.charge + (o->zero >= 3 ? 2L * (2L * o->shape.layers + 2) : 0);
    return (struct train_calls){buffers, charges, computes};
}

/* The model's seam: the caller's, with the strategy's hook points. */
static void *w_alloc(void *ctx, enum gpt_mem kind, size_t bytes, const char *what)
{
    struct trainer *t = ctx;
    return t->alloc.alloc(t->alloc.ctx, kind, bytes, what);
}

static void w_free(void *ctx, enum gpt_mem kind, void *p, size_t bytes)
{
    struct trainer *t = ctx;
    t->alloc.free(t->alloc.ctx, kind, p, bytes);
}

static void w_charge(void *ctx, enum gpt_mem kind, long long delta)
{
    struct trainer *t = ctx;
    if (t->alloc.charge)
        t->alloc.charge(t->alloc.ctx, kind, delta);
}

static void w_compute(void *ctx, double flops, const char *what, int layer)
{
    struct trainer *t = ctx;
    if (t->dp && t->d)
        dp_add_compute(t->dp, flops / dev_spec(t->d)->peak_flops);
    if (t->alloc.compute)
        t->alloc.compute(t->alloc.ctx, flops, what, layer);
}

static void w_hook(void *ctx, enum gpt_hook h, int unit)
{
    struct trainer *t = ctx;
    if (t->dp)
        dp_hook(t->dp, h, unit);
}

void trainer_free(struct trainer *t)
{
    if (!t)
        return;
    if (t->tokens)
        t->alloc.free(t->alloc.ctx, GPT_MEM_WORKSPACE, t->tokens, batch_bytes(&t->o));
    dp_free(t->dp);
    gpt_free(t->g);
    markov_free(t->data);
    free(t->window);
    free(t);
}

int trainer_new_on(struct trainer **out, const struct train_opts *o, const struct gpt_alloc *alloc,
                   struct device *d, struct error *e)
{
    *out = NULL;
    int rc = train_opts_check(o, e);
    if (rc)
        return rc;
    int n = d ? dev_count(d) : 1;
    if (o->gpus != n)
        return error_set(e, ERR_INVAL, "the trainer is set for %d GPUs, the cluster has %d",
                         o->gpus, n);
    struct trainer *t = calloc(1, sizeof *t);
    if (!t)
        return error_set(e, ERR_NOMEM, "out of memory");
    t->o = *o;
    t->d = d;
    t->rank = d ? dev_rank(d) : 0;
    if (alloc)
        t->alloc = *alloc;
    if (!t->alloc.alloc)
        t->alloc.alloc = gpt_host_alloc, t->alloc.free = gpt_host_free;
    struct gpt_alloc seam = {.alloc = w_alloc,
                             .free = w_free,
                             .charge = w_charge,
                             .compute = w_compute,
                             .hook = w_hook,
                             .ctx = t};
    dp_model_seam(o, &seam);
    int share = o->batch / o->gpus;
    rc = gpt_new(&t->g, &o->shape, share, o->precision, &o->ckpt, &seam, e);
    if (rc)
        goto fail;
    /* the gradients of the global batch's mean: each share's add up to them */
    gpt_set_loss_tokens(t->g, (double)o->batch * o->shape.seq);
    struct dp_mem mem = {w_alloc, w_free, w_charge, t};
    rc = dp_new(&t->dp, o, t->g, d, t->rank, &mem, e);
    if (rc)
        goto fail;
    rc = markov_new(&t->data, o->shape.vocab, o->seed, e);
    if (rc)
        goto fail;
    size_t bt = (size_t)o->batch * o->shape.seq;
    /* the global batch, tokens then targets: on a GPU it is copied to the device each step */
    if ((t->tokens = tmalloc(t, GPT_MEM_WORKSPACE, batch_bytes(o), "batch")))
        t->targets = t->tokens + bt;
    t->window = calloc((size_t)o->spike_window, sizeof *t->window);
    if (!t->tokens || !t->window) {
        rc = error_set(e, ERR_NOMEM, "out of memory allocating the trainer's buffers");
        goto fail;
    }
    /* every GPU draws the same initial weights and keeps its part */
    gpt_init_params(&o->shape, o->seed, gpt_params(t->g));
    dp_load_weights(t->dp, gpt_params(t->g));
    rng_seed(&t->rng, o->seed, 0x64617461);
    adamw_init(&t->adam, o->lr, o->beta1, o->beta2, o->eps, o->wd);
    if (o->scaling == TRAIN_SCALE_DYNAMIC)
        scaler_init(&t->scaler, (float)o->scale, o->growth_interval, o->hysteresis);
    else
        scaler_init_static(&t->scaler, o->scaling == TRAIN_SCALE_STATIC ? (float)o->scale : 1.0f);
    *out = t;
    return 0;
fail:
    trainer_free(t);
    return rc;
}

int trainer_new(struct trainer **out, const struct train_opts *o, const struct gpt_alloc *alloc,
                struct error *e)
{
    return trainer_new_on(out, o, alloc, NULL, e);
}

void trainer_observe(struct trainer *t, train_observer fn, void *ctx)
{
    t->observe = fn;
    t->observe_ctx = ctx;
}

/* The z-score of a loss within the window of recent losses: llm.c's OutlierDetector
 * (llmc/outlier_detector.h; train_gpt2.cu skips the update when the loss z-score exceeds -sl).
 * NaN until the window is full; then the new loss replaces the oldest and z is computed over
 * the window including it (so z <= sqrt(window - 1)). An outlier is taken back out of the
 * window, so that it does not make the detector less picky, except on the third outlier in a
 * row, which stays, so the detector cannot get stuck. */
static double spike_zscore(struct trainer *t, double loss)
{
    int w = t->o.spike_window;
    if (t->nwin < w) {
        t->window[t->nwin++] = loss;
        t->outliers_in_a_row = 0;
        return NAN;
    }
    double old = t->window[t->iwin];
    t->window[t->iwin] = loss;
    double s = 0, ss = 0;
    for (int i = 0; i < w; i++)
        s += t->window[i], ss += t->window[i] * t->window[i];
    double mean = s / w, sd = sqrt(fmax(ss / w - mean * mean, 0.0));
    if (sd == 0.0) {
        t->iwin = (t->iwin + 1) % w;
        return 0.0;
    }
    double z = (loss - mean) / sd;
    if (z > t->o.spike_z && ++t->outliers_in_a_row < 3)
        t->window[t->iwin] = old; /* as if it never happened */
    else {
        if (!(z > t->o.spike_z))
            t->outliers_in_a_row = 0;
        t->iwin = (t->iwin + 1) % w;
    }
    return z;
}

/* This GPU's injections of this step. */
static struct gpt_inject injections(const struct trainer *t, long step)
{
    const struct train_opts *o = &t->o;
    struct gpt_inject inj = {-1, -1, 1.0f};
    for (int i = 0; i < o->ninject; i++) {
        const struct train_inject *x = &o->inject[i];
        if (x->step != step || x->gpu != t->rank)
            continue;
        if (x->kind == TRAIN_INJECT_NAN)
            inj.nan_scores_layer = o->shape.layers / 2;
        else if (x->kind == TRAIN_INJECT_INF)
            inj.inf_grad_layer = o->shape.layers - 1;
        else
            inj.logit_factor *= (float)x->factor;
    }
    return inj;
}

int trainer_run_step(struct trainer *t, struct train_step *out, struct error *e)
{
    const struct train_opts *o = &t->o;
    long step = ++t->step;
    memset(out, 0, sizeof *out);
    out->step = step;
    out->loss_scale = t->scaler.scale;
    out->sim_start_s = t->d ? dev_now(t->d) : 0;
    dp_step_begin(t->dp);

    /* 1. the global batch; this GPU's share */
    struct gpt_inject inj = injections(t, step);
    markov_batch(t->data, &t->rng, o->batch, o->shape.seq, t->tokens, t->targets);
    size_t share = (size_t)(o->batch / o->gpus) * o->shape.seq, first = (size_t)t->rank * share;

    /* 2-3. forward and backward (the strategy reduces buckets as they complete), then the
     * rest of the gradient sync */
    double local = gpt_step(t->g, t->tokens + first, t->targets + first, t->scaler.scale, &inj);
    if (t->d && o->fail_gpu == t->rank && o->fail_step == step)
        return dev_fail(t->d, e, "failed in step %ld's gradient sync (--fail %d@%ld)", step,
                        t->rank, step);
    int rc = dp_grad_sync(t->dp, e);
    if (rc)
        return rc;

    /* 4-5. unscale this GPU's range, then agree on the loss, the norm and inf/NaN */
    bool found_local;
    double sumsq_local, sumsq;
    float *grads = dp_unscale(t->dp, scaler_inv_scale(&t->scaler), &found_local, &sumsq_local);
    bool found_inf;
    rc = dp_agree(t->dp, local, sumsq_local, found_local || !isfinite(local), &out->loss, &sumsq,
                  &found_inf, e);
    if (rc)
        return rc;
    size_t off, n;
    dp_range(t->dp, &off, &n);
    if (t->observe)
        t->observe(t->observe_ctx, t, step, t->tokens, t->targets, out->loss, grads, off, n);

    /* 6. clip by the global norm, skip or update */
    out->grad_norm = (float)sqrt(sumsq);
    out->clip_coef = o->clip > 0 ? clip_coef(out->grad_norm, (float)o->clip) : 1.0f;
    if (isfinite(out->loss)) {
        out->zscore = spike_zscore(t, out->loss);
        out->spike = out->zscore > o->spike_z;
    } else
        out->zscore = NAN;
    out->overflow = found_inf;
    /* A scaler, dynamic or constant, skips a non-finite step; without one nothing looks. */
    bool skip_inf = found_inf && o->scaling != TRAIN_SCALE_NONE;
    out->skipped = skip_inf || (o->skip_spikes && out->spike);
    struct gpt_diag d;
    gpt_diag(t->g, &d);
    if (!out->skipped) {
        if (o->clip > 0)
            clip_apply(grads, n, out->clip_coef);
        adamw_advance(&t->adam);
        adamw_update(&t->adam, dp_master(t->dp), grads, dp_moment(t->dp, 0), dp_moment(t->dp, 1),
                     n);
        /* 7. the working weights follow; ZeRO-1/2 all-gather them */
        if ((rc = dp_param_sync(t->dp, e)))
            return rc;
        /* AdamW turns inf/NaN gradients into NaN weights (inf / sqrt(inf) is NaN) */
        if (found_inf && !t->poisoned_at) {
            t->poisoned_at = step;
            snprintf(t->poisoned_by, sizeof t->poisoned_by, "%s", d.nonfinite);
        }
    }
    out->weights_nonfinite_since = t->poisoned_at;
    scaler_update(&t->scaler, found_inf);
    out->next_scale = t->scaler.scale;

    memcpy(out->nonfinite, d.nonfinite, sizeof out->nonfinite);
    out->nonfinite_forward = d.nonfinite_forward;
    out->underflow = d.underflow;
    out->underflow_frac = (double)d.underflow_total / (double)d.grad_elements;
    out->act_peak_bytes = gpt_mem_bytes(t->g, GPT_MEM_ACTIVATIONS);
    dp_sent(t->dp, &out->sent_bytes, &out->scalar_bytes);
    out->compute_s = dp_compute_s(t->dp);
    out->sim_end_s = t->d ? dev_now(t->d) : 0;
    return 0;
}

void trainer_step(struct trainer *t, struct train_step *out)
{
    struct error e = {0};
    trainer_run_step(t, out, &e);
}

void trainer_inject_gpu(struct trainer *t, enum train_inject_kind kind, double factor, int gpu)
{
    int n = 0; /* drop the injections already done */
    for (int i = 0; i < t->o.ninject; i++)
        if (t->o.inject[i].step > t->step)
            t->o.inject[n++] = t->o.inject[i];
    t->o.ninject = n;
    if (t->o.ninject < TRAIN_MAX_INJECT && gpu >= 0 && gpu < t->o.gpus)
        t->o.inject[t->o.ninject++] = (struct train_inject){kind, t->step + 1, factor, gpu};
}

void trainer_inject(struct trainer *t, enum train_inject_kind kind, double factor)
{
    trainer_inject_gpu(t, kind, factor, 0);
}

void trainer_set_clip(struct trainer *t, double clip)
{
    t->o.clip = clip > 0 && isfinite(clip) ? clip : 0;
}

void trainer_set_lr(struct trainer *t, double lr)
{
    if (lr >= 0 && isfinite(lr))
        t->o.lr = t->adam.lr = lr;
}

long trainer_steps_done(const struct trainer *t)
{
    return t->step;
}

double trainer_loss_floor(const struct trainer *t)
{
    return markov_entropy(t->data);
}

struct gpt *trainer_model(const struct trainer *t)
{
    return t->g;
}

const float *trainer_master(const struct trainer *t)
{
    return dp_master(t->dp);
}

void trainer_range(const struct trainer *t, size_t *off, size_t *n)
{
    dp_range(t->dp, off, n);
}

const struct train_opts *trainer_opts(const struct trainer *t)
{
    return &t->o;
}

long trainer_adam_steps(const struct trainer *t)
{
    return t->adam.step;
}

const float *trainer_moments(const struct trainer *t, int which)
{
    return dp_moment(t->dp, which);
}

long trainer_poisoned(const struct trainer *t, const char **tensor)
{
    if (tensor)
        *tensor = t->poisoned_by;
    return t->poisoned_at;
}

size_t trainer_mem_bytes(const struct trainer *t, enum gpt_mem kind)
{
    return gpt_mem_bytes(t->g, kind) + t->extra[kind] + dp_mem_bytes(t->dp, kind);
}
