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

struct trainer {
    struct train_opts o;
    struct gpt *g;
    struct markov *data;
    struct rng rng;
    struct adamw adam;
    struct scaler scaler;
    float *master, *m, *v; /* master == gpt_params in fp32 */
    int32_t *tokens, *targets;
    long step;
    double *window; /* the last spike_window losses (a ring) */
    int nwin, iwin, outliers_in_a_row;
    train_observer observe;
    void *observe_ctx;
    struct gpt_alloc alloc;
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
    for (int i = 0; i < o->ninject; i++)
        if (o->inject[i].step < 1 || o->inject[i].step > o->steps)
            return error_set(e, ERR_INVAL, "--inject: step %ld is outside the run's steps 1..%ld",
                             o->inject[i].step, o->steps);
    return gpt_config_check(&o->shape, e);
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
    /* the model's, Adam's m and v, the batch, and fp32 master weights unless they are the
     * model's own weights (fp32 training) */
    long buffers = GPT_BUFFERS + 3 + (o->precision != FP_FP32);
    return (struct train_calls){buffers, g.charge, g.compute};
}

void trainer_free(struct trainer *t)
{
    if (!t)
        return;
    size_t n = gpt_param_count(&t->o.shape);
    if (t->master && t->g && t->master != gpt_params(t->g))
        t->alloc.free(t->alloc.ctx, GPT_MEM_MASTER, t->master, n * 4);
    if (t->m)
        t->alloc.free(t->alloc.ctx, GPT_MEM_OPTIMIZER, t->m, n * 4);
    if (t->v)
        t->alloc.free(t->alloc.ctx, GPT_MEM_OPTIMIZER, t->v, n * 4);
    if (t->tokens)
        t->alloc.free(t->alloc.ctx, GPT_MEM_WORKSPACE, t->tokens, batch_bytes(&t->o));
    gpt_free(t->g);
    markov_free(t->data);
    free(t->window);
    free(t);
}

int trainer_new(struct trainer **out, const struct train_opts *o, const struct gpt_alloc *alloc,
                struct error *e)
{
    *out = NULL;
    int rc = train_opts_check(o, e);
    if (rc)
        return rc;
    struct trainer *t = calloc(1, sizeof *t);
    if (!t)
        return error_set(e, ERR_NOMEM, "out of memory");
    t->o = *o;
    t->alloc = alloc && alloc->alloc
                   ? *alloc
                   : (struct gpt_alloc){.alloc = gpt_host_alloc, .free = gpt_host_free};
    rc = gpt_new(&t->g, &o->shape, o->batch, o->precision, &o->ckpt, &t->alloc, e);
    if (rc)
        goto fail;
    rc = markov_new(&t->data, o->shape.vocab, o->seed, e);
    if (rc)
        goto fail;
    size_t n = gpt_nparams(t->g), bt = (size_t)o->batch * o->shape.seq;
    if (o->precision == FP_FP32)
        t->master = gpt_params(t->g);
    else
        t->master = tmalloc(t, GPT_MEM_MASTER, n * 4, "master weights");
    t->m = tmalloc(t, GPT_MEM_OPTIMIZER, n * 4, "adam m");
    t->v = tmalloc(t, GPT_MEM_OPTIMIZER, n * 4, "adam v");
    /* the batch, tokens then targets: on a GPU it is copied to the device each step */
    if ((t->tokens = tmalloc(t, GPT_MEM_WORKSPACE, batch_bytes(o), "batch")))
        t->targets = t->tokens + bt;
    t->window = calloc((size_t)o->spike_window, sizeof *t->window);
    if (!t->master || !t->m || !t->v || !t->tokens || !t->targets || !t->window) {
        rc = error_set(e, ERR_NOMEM, "out of memory allocating the trainer's buffers");
        goto fail;
    }
    gpt_init_params(&o->shape, o->seed, t->master);
    gpt_set_weights(t->g, t->master);
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

void trainer_observe(struct trainer *t, train_observer fn, void *ctx)
{
    t->observe = fn;
    t->observe_ctx = ctx;
}

static bool all_finite(const float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(p[i]))
            return false;
    return true;
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

void trainer_step(struct trainer *t, struct train_step *out)
{
    const struct train_opts *o = &t->o;
    long step = ++t->step;
    struct gpt_inject inj = {-1, -1, 1.0f};
    for (int i = 0; i < o->ninject; i++) {
        const struct train_inject *x = &o->inject[i];
        if (x->step != step)
            continue;
        if (x->kind == TRAIN_INJECT_NAN)
            inj.nan_scores_layer = o->shape.layers / 2;
        else if (x->kind == TRAIN_INJECT_INF)
            inj.inf_grad_layer = o->shape.layers - 1;
        else
            inj.logit_factor *= (float)x->factor;
    }
    markov_batch(t->data, &t->rng, o->batch, o->shape.seq, t->tokens, t->targets);
    memset(out, 0, sizeof *out);
    out->step = step;
    out->loss_scale = t->scaler.scale;
    out->loss = gpt_step(t->g, t->tokens, t->targets, t->scaler.scale, &inj);

    size_t n = gpt_nparams(t->g);
    float *grads = gpt_grads(t->g);
    bool found_inf = scaler_unscale(&t->scaler, grads, n) || !isfinite(out->loss);
    if (t->observe)
        t->observe(t->observe_ctx, t, step, t->tokens, t->targets, out->loss, grads);
    out->grad_norm = clip_norm(grads, n);
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
    if (!out->skipped) {
        if (o->clip > 0)
            clip_apply(grads, n, out->clip_coef);
        adamw_advance(&t->adam);
        adamw_update(&t->adam, t->master, grads, t->m, t->v, n);
        if (t->master != gpt_params(t->g))
            gpt_set_weights(t->g, t->master);
        if (found_inf && !t->poisoned_at && !all_finite(t->master, n)) {
            struct gpt_diag d;
            gpt_diag(t->g, &d);
            t->poisoned_at = step;
            snprintf(t->poisoned_by, sizeof t->poisoned_by, "%s", d.nonfinite);
        }
    }
    out->weights_nonfinite_since = t->poisoned_at;
    scaler_update(&t->scaler, found_inf);

    struct gpt_diag d;
    gpt_diag(t->g, &d);
    memcpy(out->nonfinite, d.nonfinite, sizeof out->nonfinite);
    out->nonfinite_forward = d.nonfinite_forward;
    out->underflow = d.underflow;
    out->underflow_frac = (double)d.underflow_total / (double)d.grad_elements;
    out->act_peak_bytes = gpt_mem_bytes(t->g, GPT_MEM_ACTIVATIONS);
}

void trainer_inject(struct trainer *t, enum train_inject_kind kind, double factor)
{
    int n = 0; /* drop the injections already done */
    for (int i = 0; i < t->o.ninject; i++)
        if (t->o.inject[i].step > t->step)
            t->o.inject[n++] = t->o.inject[i];
    t->o.ninject = n;
    if (t->o.ninject < TRAIN_MAX_INJECT)
        t->o.inject[t->o.ninject++] = (struct train_inject){kind, t->step + 1, factor};
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
    return t->master;
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
    return which ? t->v : t->m;
}

long trainer_poisoned(const struct trainer *t, const char **tensor)
{
    if (tensor)
        *tensor = t->poisoned_by;
    return t->poisoned_at;
}

size_t trainer_mem_bytes(const struct trainer *t, enum gpt_mem kind)
{
    return gpt_mem_bytes(t->g, kind) + t->extra[kind];
}
