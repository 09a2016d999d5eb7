/* A training run's settings: the defaults, the tiny GPT's shape from a preset, and the table
 * that reads each setting from text (par/settings.h). */
#include "config.h"
#include "par/settings.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/experts.h"
#include "base/units.h"
#include "calc/preset.h"

/* fp8's options need --precision fp8, and it trains dense models with data and pipeline
 * parallelism for now. */
static int fp8_check(const struct train_opts *o, struct error *e)
{
    const char *lone = o->fp8_recipe        ? "--fp8-recipe"
                       : o->fp8_history     ? "--fp8-history"
                       : o->fp8_margin >= 0 ? "--fp8-margin"
                       : o->fp8_block       ? "--fp8-block"
                       : o->fp8_scales      ? "--fp8-scales"
                                            : NULL;
    if (!o->fp8) {
        if (lone)
            return error_set(e, ERR_INVAL, "%s goes with --precision fp8", lone);
        return 0;
    }
    if (o->fp8_recipe != FP8_OFF && o->fp8_recipe != FP8_DELAYED &&
        (o->fp8_history || o->fp8_margin >= 0))
        return error_set(e, ERR_INVAL,
                         "--fp8-history and --fp8-margin go with --fp8-recipe delayed");
    if (o->fp8_block && o->fp8_recipe != FP8_BLOCK)
        return error_set(e, ERR_INVAL, "--fp8-block goes with --fp8-recipe block");
    if (o->fp8_scales && o->fp8_recipe != FP8_CURRENT && o->fp8_recipe != FP8_BLOCK)
        return error_set(e, ERR_INVAL,
                         "--fp8-scales goes with --fp8-recipe current or block (the delayed "
                         "recipe's scales are TE's fp32 quotients)");
    if (o->tp > 1 || o->cp > 1 || o->shape.moe.experts)
        return error_set(e, ERR_INVAL,
                         "--precision fp8 trains a dense model with data and pipeline "
                         "parallelism for now (--gpus, --zero, --pp), not --tp %d, --cp %d or "
                         "experts",
                         o->tp, o->cp);
    return 0;
}

struct gpt_fp8 train_fp8(const struct train_opts *o)
{
    struct gpt_fp8 f = {0};
    if (!o->fp8)
        return f;
    f.recipe = o->fp8_recipe != FP8_OFF ? o->fp8_recipe : FP8_DELAYED;
    f.history = o->fp8_history ? o->fp8_history : FP8_HISTORY_DEFAULT;
    f.margin = o->fp8_margin >= 0 ? o->fp8_margin : FP8_MARGIN_DEFAULT;
    int half = o->shape.d / 2 > 1 ? o->shape.d / 2 : 1;
    f.block = o->fp8_block ? o->fp8_block : half < FP8_BLOCK_DEFAULT ? half : FP8_BLOCK_DEFAULT;
    f.pow2 = o->fp8_scales == TRAIN_FP8_SCALES_POW2 ||
             (o->fp8_scales == TRAIN_FP8_SCALES_RECIPE && f.recipe == FP8_BLOCK);
    return f;
}

int settings_check(const struct train_opts *o, struct error *e)
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
    if (o->fail_gpu >= 0 && (o->fail_step < 1 || o->fail_step > o->steps))
        return error_set(e, ERR_INVAL, "--fail: step %ld is outside the run's steps 1..%ld",
                         o->fail_step, o->steps);
    if (!o->shape.vocab && !o->shape.d && !o->shape.layers)
        return error_set(e, ERR_INVAL, "the model's shape is not set (train_shape sets it)");
    if (o->grad_fp32 && o->precision == FP_FP32)
        return error_set(e, ERR_INVAL, "--grad-accum fp32 goes with --precision bf16 or fp16");
    return fp8_check(o, e);
}

void train_opts_default(struct train_opts *o)
{
    memset(o, 0, sizeof *o); /* the shape too: the caller's train_shape sets it */
    o->batch = 16;
    o->steps = 300;
    o->seed = 1;
    o->precision = FP_FP32;
    o->fp8_margin = -1;
    o->ckpt = (struct ckpt_policy){CKPT_NONE, 0};
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
    o->pp = 1;
    o->tp = 1;
    o->cp = 1;
    o->ep = 1;
    o->chunks = 2;
    o->micro_batches = 1;
    o->schedule = SCHED_1F1B;
}

int train_shape_of(const struct model_shape *m, struct gpt_config *out, struct error *e)
{
    memset(out, 0, sizeof *out);
    if (m->ffn_kind != FFN_SWIGLU || m->kv_heads != m->heads || !m->tied)
        return error_set(e, ERR_INVAL,
                         "%s: the tiny GPT trains swiglu models with tied embeddings and "
                         "kv_heads = heads",
                         m->name);
    *out = (struct gpt_config){.vocab = m->vocab,
                               .d = m->d_model,
                               .layers = m->layers,
                               .heads = m->heads,
                               .ffn = m->ffn,
                               .seq = m->seq};
    if (m->experts > 0) /* α: Switch Transformer's 10^-2 (Fedus et al. 2021, §2.2) */
        out->moe = (struct gpt_moe){m->experts, m->top_k, m->moe_every > 0 ? m->moe_every : 1,
                                    m->capacity_factor, TRAIN_AUX_COEF};
    return 0;
}

int train_shape(const char *model, struct gpt_config *out, struct error *e)
{
    struct model_shape m;
    int rc = preset_load_model(model, &m, e);
    if (rc) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    return train_shape_of(&m, out, e);
}

int train_opts_lab(struct train_opts *o, struct error *e)
{
    train_opts_default(o);
    o->lr = TRAIN_LAB_LR;
    o->scaling = train_scaling_for(o->precision);
    return train_shape(TRAIN_LAB_MODEL, &o->shape, e);
}

enum train_scaling train_scaling_for(enum fp_format precision)
{
    const struct fp_precision *p = fp_precision(precision);
    return p && p->scaled ? TRAIN_SCALE_DYNAMIC : TRAIN_SCALE_NONE;
}

bool train_flash(const struct train_opts *o)
{
    return o->attention == TRAIN_ATTN_FLASH || (o->attention == TRAIN_ATTN_DEFAULT && o->cp > 1);
}

/* ------------------------------------------------------------------ the parsers */

#define FIELD(o, s, T) ((T *)(void *)((char *)(o) + (s)->field))

static int bad(struct error *e, const char *said)
{
    error_prefix(e, "%s", said);
    return ERR_INVAL;
}

/* A whole number in [min, max], into an int (set_int) or a long (set_long). */
static int whole(const struct setting *s, const char *said, const char *value, long long *v,
                 struct error *e)
{
    if (units_parse_int(value, (long long)s->min, (long long)s->max, v, NULL) < 0)
        return error_set(e, ERR_INVAL, "%s: '%s' is not allowed (a whole number from %.0f to %.0f)",
                         said, value ? value : "", s->min, s->max);
    return 0;
}

static int set_int(const struct setting *s, const char *said, const char *value,
                   struct train_opts *o, struct error *e)
{
    long long v;
    int rc = whole(s, said, value, &v, e);
    if (!rc)
        *FIELD(o, s, int) = (int)v;
    return rc;
}

static int set_long(const struct setting *s, const char *said, const char *value,
                    struct train_opts *o, struct error *e)
{
    long long v;
    int rc = whole(s, said, value, &v, e);
    if (!rc)
        *FIELD(o, s, long) = (long)v;
    return rc;
}

static int set_seed(const struct setting *s, const char *said, const char *value,
                    struct train_opts *o, struct error *e)
{
    long long v;
    int rc = whole(s, said, value, &v, e);
    if (!rc)
        o->seed = (uint64_t)v;
    return rc;
}

/* A number >= min (min 0: lr, wd) or > min (min > 0 never; see set_positive). */
static int set_nonneg(const struct setting *s, const char *said, const char *value,
                      struct train_opts *o, struct error *e)
{
    double v;
    if (units_parse_double(value, false, &v, e))
        return bad(e, said);
    if (!(v >= s->min))
        return error_set(e, ERR_INVAL, "%s must be >= %g, not %s", said, s->min, value);
    *FIELD(o, s, double) = v;
    return 0;
}

/* A number in [min, max] (aux-loss-coef). */
static int set_between(const struct setting *s, const char *said, const char *value,
                       struct train_opts *o, struct error *e)
{
    double v;
    if (units_parse_double(value, false, &v, e))
        return bad(e, said);
    if (!(v >= s->min && v <= s->max))
        return error_set(e, ERR_INVAL, "%s '%s': a number from %g to %g", said, value, s->min,
                         s->max);
    *FIELD(o, s, double) = v;
    return 0;
}

/* A capacity factor: base/experts.h's reader, which every command and panel shares. */
static int set_capacity(const struct setting *s, const char *said, const char *value,
                        struct train_opts *o, struct error *e)
{
    return experts_parse_capacity(said, value, FIELD(o, s, double), e);
}

/* A number > 0 (eps, spike-z). */
static int set_positive(const struct setting *s, const char *said, const char *value,
                        struct train_opts *o, struct error *e)
{
    double v;
    if (units_parse_double(value, false, &v, e))
        return bad(e, said);
    if (!(v > 0))
        return error_set(e, ERR_INVAL, "%s must be > 0, not %s", said, value);
    *FIELD(o, s, double) = v;
    return 0;
}

/* A switch: on from train's command line, on or off from a panel. */
static int set_switch(const struct setting *s, const char *said, const char *value,
                      struct train_opts *o, struct error *e)
{
    if (value && strcmp(value, "on") && strcmp(value, "off"))
        return error_set(e, ERR_INVAL, "%s: on or off, not '%s'", said, value);
    *FIELD(o, s, bool) = !value || !strcmp(value, "on");
    return 0;
}

static int set_clip(const struct setting *s, const char *said, const char *value,
                    struct train_opts *o, struct error *e)
{
    if (value && !strcmp(value, "none")) {
        o->clip = 0;
        return 0;
    }
    return set_positive(s, said, value, o, e);
}

static int set_betas(const struct setting *s, const char *said, const char *value,
                     struct train_opts *o, struct error *e)
{
    (void)s;
    char b1[64];
    const char *comma = strchr(value, ',');
    if (!comma || (size_t)(comma - value) >= sizeof b1)
        return error_set(e, ERR_INVAL, "%s '%s': expected BETA1,BETA2", said, value);
    memcpy(b1, value, (size_t)(comma - value));
    b1[comma - value] = 0;
    double beta1, beta2;
    if (units_parse_double(b1, false, &beta1, e) || units_parse_double(comma + 1, false, &beta2, e))
        return bad(e, said);
    if (!(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1))
        return error_set(e, ERR_INVAL, "%s '%s': both must be in [0, 1)", said, value);
    o->beta1 = beta1, o->beta2 = beta2;
    return 0;
}

/* The precisions a run trains in: num/fp.h's table, with the calculator's reader (fp8 is no
 * line of it yet: no matmul of the lab's runs is in it). */
static int set_precision(const struct setting *s, const char *said, const char *value,
                         struct train_opts *o, struct error *e)
{
    (void)s;
    o->fp8 = !strcmp(value, "fp8");
    if (o->fp8) { /* fp8 GEMMs in a bf16 model */
        o->precision = FP_BF16;
        return 0;
    }
    if (fp_parse_precision(value, &o->precision, e))
        return bad(e, said);
    return 0;
}

static int set_fp8_scales(const struct setting *s, const char *said, const char *value,
                          struct train_opts *o, struct error *e)
{
    (void)s;
    if (strcmp(value, "pow2") && strcmp(value, "fp32"))
        return error_set(e, ERR_INVAL, "%s '%s': expected pow2 or fp32", said, value);
    o->fp8_scales = strcmp(value, "pow2") ? TRAIN_FP8_SCALES_FP32 : TRAIN_FP8_SCALES_POW2;
    return 0;
}

static int set_fp8_recipe(const struct setting *s, const char *said, const char *value,
                          struct train_opts *o, struct error *e)
{
    (void)s;
    return fp8_parse_recipe(value, &o->fp8_recipe, e) ? bad(e, said) : 0;
}

/* A loss scale fp32 can hold. */
static bool scale_ok(double v)
{
    return v > 0 && v <= 3.4e38;
}

static int set_loss_scale(const struct setting *s, const char *said, const char *value,
                          struct train_opts *o, struct error *e)
{
    (void)s;
    double v;
    if (!strcmp(value, "dynamic"))
        o->scaling = TRAIN_SCALE_DYNAMIC;
    else if (!strcmp(value, "none"))
        o->scaling = TRAIN_SCALE_NONE;
    else if (units_parse_double(value, false, &v, NULL) || !scale_ok(v))
        return error_set(e, ERR_INVAL,
                         "%s '%s': expected dynamic, none or a number > 0 (a fixed scale)", said,
                         value);
    else
        o->scaling = TRAIN_SCALE_STATIC, o->scale = v;
    return 0;
}

static int set_init_scale(const struct setting *s, const char *said, const char *value,
                          struct train_opts *o, struct error *e)
{
    (void)s;
    double v = 0;
    if (units_parse_double(value, false, &v, e))
        return bad(e, said);
    if (!scale_ok(v))
        return error_set(e, ERR_INVAL, "%s must be > 0 and finite in fp32", said);
    o->scale = v;
    return 0;
}

/* nan@STEP, inf@STEP, spike@STEP[:FACTOR], each with an optional :gpu=G */
static int set_inject(const struct setting *s, const char *said, const char *value,
                      struct train_opts *o, struct error *e)
{
    (void)s;
    if (o->ninject == TRAIN_MAX_INJECT)
        return error_set(e, ERR_INVAL, "%s: at most %d injections", said, TRAIN_MAX_INJECT);
    struct train_inject x = {TRAIN_INJECT_NAN, 0, 10.0, 0};
    const char *at = strchr(value, '@');
    size_t klen = at ? (size_t)(at - value) : 0;
    if (at && klen == 3 && !strncmp(value, "nan", 3))
        x.kind = TRAIN_INJECT_NAN;
    else if (at && klen == 3 && !strncmp(value, "inf", 3))
        x.kind = TRAIN_INJECT_INF;
    else if (at && klen == 5 && !strncmp(value, "spike", 5))
        x.kind = TRAIN_INJECT_SPIKE;
    else
        return error_set(e, ERR_INVAL,
                         "%s '%s': expected nan@STEP, inf@STEP or spike@STEP[:FACTOR], each with "
                         "an optional :gpu=G",
                         said, value);
    /* the fields after '@', separated by ':' */
    char buf[128];
    if (strlen(at + 1) >= sizeof buf)
        return error_set(e, ERR_INVAL, "%s '%s': too long", said, value);
    snprintf(buf, sizeof buf, "%s", at + 1);
    char *save = NULL, *field = strtok_r(buf, ":", &save);
    long long v;
    if (!field || units_parse_int(field, 1, TRAIN_MAX_STEPS, &v, e)) {
        if (!field)
            error_set(e, ERR_INVAL, "STEP must be a whole number");
        error_prefix(e, "%s '%s': step", said, value);
        return ERR_INVAL;
    }
    x.step = (long)v;
    bool factor = false, gpu = false;
    while ((field = strtok_r(NULL, ":", &save))) {
        if (!strncmp(field, "gpu=", 4) && !gpu) {
            if (units_parse_int(field + 4, 0, TRAIN_MAX_GPUS - 1, &v, e)) {
                error_prefix(e, "%s '%s': gpu", said, value);
                return ERR_INVAL;
            }
            x.gpu = (int)v, gpu = true;
        } else if (x.kind == TRAIN_INJECT_SPIKE && !factor && !gpu) {
            if (units_parse_double(field, false, &x.factor, e) || !(x.factor > 0) ||
                !isfinite(x.factor))
                return error_set(e, ERR_INVAL, "%s '%s': FACTOR must be a finite number > 0", said,
                                 value);
            factor = true;
        } else
            return error_set(e, ERR_INVAL,
                             "%s '%s': after STEP come :FACTOR (spike only) and :gpu=G", said,
                             value);
    }
    o->inject[o->ninject++] = x;
    return 0;
}

static int set_attention(const struct setting *s, const char *said, const char *value,
                         struct train_opts *o, struct error *e)
{
    (void)s;
    if (strcmp(value, "eager") && strcmp(value, "flash"))
        return error_set(e, ERR_INVAL,
                         "%s '%s': expected eager (the probabilities kept) or flash (each row's "
                         "log-sum-exp kept, no probabilities)",
                         said, value);
    o->attention = strcmp(value, "flash") ? TRAIN_ATTN_EAGER : TRAIN_ATTN_FLASH;
    return 0;
}

static int set_checkpoint(const struct setting *s, const char *said, const char *value,
                          struct train_opts *o, struct error *e)
{
    (void)s;
    return ckpt_parse(value, &o->ckpt, e) ? bad(e, said) : 0;
}

static int set_schedule(const struct setting *s, const char *said, const char *value,
                        struct train_opts *o, struct error *e)
{
    (void)s;
    return sched_parse(value, &o->schedule, e) ? bad(e, said) : 0;
}

static int set_bucket(const struct setting *s, const char *said, const char *value,
                      struct train_opts *o, struct error *e)
{
    double v;
    if (units_parse_bytes(value, s->max, &v, e) || v < s->min) {
        if (!e->code)
            error_set(e, ERR_INVAL, "at least 4 bytes");
        error_prefix(e, "%s '%s' (a size from 4 bytes to 1 GiB, e.g. 25MiB)", said, value);
        return ERR_INVAL;
    }
    o->bucket_bytes = (size_t)v;
    return 0;
}

static int set_grad_accum(const struct setting *s, const char *said, const char *value,
                          struct train_opts *o, struct error *e)
{
    (void)s;
    if (strcmp(value, "fp32") && strcmp(value, "same"))
        return error_set(e, ERR_INVAL,
                         "%s '%s': expected fp32 (4-byte gradients) or same (the training "
                         "precision's)",
                         said, value);
    o->grad_fp32 = !strcmp(value, "fp32");
    return 0;
}

/* ------------------------------------------------------------------ the table */

#define F(x)    offsetof(struct train_opts, x)
#define STR(x)  #x
#define XSTR(x) STR(x)

const struct setting train_settings[] = {
    {"steps", NULL, "K", set_long, F(steps), 1, TRAIN_MAX_STEPS, false,
     "steps to run (default 300)"},
    {"batch", NULL, "B", set_int, F(batch), 1, 1 << 20, false, "sequences per step (default 16)"},
    {"seed", NULL, "S", set_seed, F(seed), 0, 9007199254740992.0, false,
     "seeds the weights and the data (default 1); same seed, same run"},
    {"lr", NULL, "LR", set_nonneg, F(lr), 0, 0, false, "AdamW learning rate (default 0.003)"},
    {"betas", NULL, "B1,B2", set_betas, 0, 0, 0, false, "AdamW's betas (default 0.9,0.999)"},
    {"wd", NULL, "WD", set_nonneg, F(wd), 0, 0, false, "weight decay (default 0.01)"},
    {"eps", NULL, "E", set_positive, F(eps), 0, 0, false, "AdamW's epsilon (default 1e-8)"},
    {"precision", NULL, "P", set_precision, 0, 0, 0, false,
     "fp32, bf16, fp16 or fp8 (default fp32); fp8: bf16 mixed precision\n"
     "with every linear layer's three GEMMs on fp8 inputs and their scales"},
    {"fp8-recipe", NULL, "R", set_fp8_recipe, 0, 0, 0, false,
     "with --precision fp8: delayed (unless given; TE's DelayedScaling: a\n"
     "scale per tensor from the largest amax of its history, e4m3 forward,\n"
     "e5m2 gradients), current (this step's amax) or block (e4m3, a scale\n"
     "per 1 x B tile of activations and gradients, B x B block of weights)"},
    {"fp8-history", NULL, "N", set_int, F(fp8_history), 1, 1 << 20, false,
     "delayed: the amaxes a scale looks back on (TE's 1024 unless given)"},
    {"fp8-margin", NULL, "M", set_int, F(fp8_margin), 0, 64, false,
     "delayed: scales divided by 2^M (TE's 0 unless given)"},
    {"fp8-block", NULL, "B", set_int, F(fp8_block), 1, 1 << 16, false,
     "block: the tile B (unless given 128, at most half of d_model: 32 on\n"
     "tiny)"},
    {"fp8-scales", NULL, "S", set_fp8_scales, 0, 0, 0, false,
     "current and block: pow2 (powers of two, exact dequantisation) or\n"
     "fp32 (max / amax); TE's unless given: pow2 for block, fp32 for current"},
    {"loss-scale", "scale", "S", set_loss_scale, 0, 0, 0, false,
     "dynamic (PyTorch's GradScaler: halves and skips the step on an\n"
     "inf/NaN gradient, doubles after --growth-interval clean steps),\n"
     "a fixed VALUE (Megatron's constant scaler: never changes, still\n"
     "skips inf/NaN steps) or none (no scaler, as plain PyTorch: an\n"
     "inf/NaN step is applied, the weights turn NaN, and the run stops\n"
     "with exit 1 at the first NaN loss, naming the step and tensor\n"
     "that caused it). Default: dynamic for fp16, none otherwise"},
    {"init-scale", NULL, "S", set_init_scale, 0, 0, 0, false,
     "the dynamic scale's start (default 65536)"},
    {"growth-interval", "growth", "N", set_int, F(growth_interval), 1, 1 << 30, false,
     "clean steps before the scale doubles (default 2000)"},
    {"hysteresis", NULL, "N", set_int, F(hysteresis), 1, 1 << 30, false,
     "overflowing steps before it halves (default 1, PyTorch's)"},
    {"clip", NULL, "MAX", set_clip, F(clip), 0, 0, false,
     "clip the global gradient norm to MAX (default none: no clipping)"},
    {"spike-z", NULL, "Z", set_positive, F(spike_z), 0, 0, false,
     "a loss more than Z standard deviations above the mean of the\n"
     "last N losses (itself included, as llm.c does) is a spike\n"
     "(default 5; z <= sqrt(N - 1))"},
    {"spike-window", NULL, "N", set_int, F(spike_window), 2, 1 << 20, false,
     "N, the losses of the spike test (default 64)"},
    {"skip-spikes", NULL, NULL, set_switch, F(skip_spikes), 0, 0, false,
     "skip the update of a spiking step"},
    {"inject", NULL, "WHAT@STEP", set_inject, 0, 0, 0, true,
     "nan@STEP (a NaN in the middle layer's attention scores), inf@STEP\n"
     "(an inf in the last layer's MLP gradient), spike@STEP[:FACTOR]\n"
     "(a bad batch: the logits times FACTOR, default 10); repeatable;\n"
     "WHAT@STEP:gpu=G on GPU G (else GPU 0): the GPUs agree on inf/NaN,\n"
     "so all of them skip the step and back the scale off together"},
    {"checkpoint", "policy", "POLICY", set_checkpoint, 0, 0, 0, false,
     "none, full, every:K, sqrt or selective (default none)"},
    {"gpus", NULL, "N", set_int, F(gpus), 1, TRAIN_MAX_GPUS, false,
     "N simulated GPUs, 1 to 64 (default 1); each takes batch / N\n"
     "sequences of the global batch a one-GPU run draws, so the run\n"
     "computes the same training (the loss is the global batch's mean)"},
    {"zero", NULL, "S", set_int, F(zero), 0, 3, false,
     "0 DDP (default): full replicas, gradients all-reduced by buckets as\n"
     "they complete; 1: optimizer state and master weights sharded,\n"
     "gradients reduce-scattered, updated weights all-gathered; 2: the\n"
     "gradients sharded too; 3 (FSDP): the weights too, each layer\n"
     "gathered before its forward and again before its backward"},
    {"bucket", NULL, "SIZE", set_bucket, 0, 4, 1 << 30, false,
     "a gradient bucket (default 25MiB, PyTorch DDP's)"},
    {"prefetch", NULL, "0|1", set_int, F(prefetch), 0, 1, false,
     "ZeRO-3 gathers the next layer while one computes (default 1)"},
    {"grad-accum", NULL, "fp32|same", set_grad_accum, 0, 0, 0, false,
     "bf16/fp16: fp32 keeps 4-byte gradients (18 bytes per parameter)"},
    {"tp", NULL, "T", set_int, F(tp), 1, TRAIN_MAX_GPUS, false,
     "each layer over T GPUs (default 1): heads / T of the attention,\n"
     "ffn / T of the MLP, vocab / T rows of the tied embedding; the\n"
     "row-parallel outputs and the column-parallel inputs' gradients are\n"
     "all-reduced, and the cross-entropy reduces the row maximum, the\n"
     "sum of exponentials and the target's logit, so no GPU holds the\n"
     "whole logits. T must divide the heads, the FFN width and the\n"
     "vocabulary. GPU r is tensor rank r % T, then data rank, then stage"},
    {"sequence-parallel", NULL, NULL, set_switch, F(sp), 0, 0, false,
     "with --tp: the norms and residual adds on a T-th of the tokens;\n"
     "all-reduces become reduce-scatters and all-gathers"},
    {"cp", NULL, "C", set_int, F(cp), 1, TRAIN_MAX_GPUS, false,
     "each sequence over C GPUs (default 1): each holds 2 chunks of\n"
     "T / 2C tokens, chunks i and 2C-1-i, so the causal mask gives every\n"
     "GPU the same work; attention passes the keys and values around the\n"
     "C GPUs (ring attention). GPU r is context rank (r / tp) % C"},
    {"cp-naive", NULL, NULL, set_switch, F(cp_naive), 0, 0, false,
     "with --cp: GPU i holds chunk i of C (the last does the most work)"},
    {"attention", NULL, "K", set_attention, 0, 0, 0, false,
     "the attention kernel: eager keeps the a s^2 b probabilities; flash\n"
     "(ring attention's) keeps each row's log-sum-exp and computes only\n"
     "what the causal mask leaves, a block at a time. Unless given: eager\n"
     "with --cp 1, flash with --cp. Eager needs --cp 1, selective eager"},
    {"ep", NULL, "P", set_int, F(ep), 1, TRAIN_MAX_GPUS, false,
     "with --experts: each expert layer's E experts over P GPUs (default\n"
     "1), E / P each, P dividing the data-parallel ranks (GPU r is expert\n"
     "rank of its data rank % P); tokens go to their experts' GPUs and\n"
     "back by all-to-alls: dropless (the routing's own sizes), or with\n"
     "--capacity-factor the static [E, cap, d] rows"},
    {"pp", NULL, "P", set_int, F(pp), 1, TRAIN_MAX_GPUS, false,
     "P stages (default 1), dividing the layers: the first also holds the\n"
     "embedding, the last the final norm and a copy of the tied\n"
     "embedding, whose gradients the two ends sum once per step"},
    {"micro-batches", NULL, "M", set_int, F(micro_batches), 1, SCHED_MAX_MICRO, false,
     "the batch share of each data-parallel rank runs as M micro-batches\n"
     "(default 1), gradients added up over them; with --pp 1 this is\n"
     "gradient accumulation"},
    {"schedule", NULL, "S", set_schedule, 0, 0, 0, false,
     "gpipe, 1f1b (default), interleaved (Megatron-LM's: M a multiple\n"
     "of P, --dp 1), zb-h1, zb-h2 or zbv (each backward as B then W, Qi\n"
     "et al. 2024; zb-h2 holds up to 2P micro-batches between F and W;\n"
     "zbv runs 2 chunks a stage in a V, 2P dividing the layers):\n"
     "each stage runs its forward and backward passes in the order\n"
     "'scalelab pipeline --schedule S' draws; activations go forward and\n"
     "their gradients back by sends"},
    {"chunks", NULL, "V", set_int, F(chunks), 2, SCHED_MAX_CHUNKS, false,
     "interleaved: V model chunks per stage (default 2), P x V dividing\n"
     "the layers; stage s holds virtual stages s, P + s, 2P + s, ..."},
    /* the model's shape, over the preset's (train applies them to the model it names,
     * cli/train_args.c): the sequence, and a mixture of experts (model/gpt.h's gpt_moe) */
    {"seq", NULL, "S", set_int, F(shape.seq), 1, 1 << 16, false,
     "tokens per sequence, over the model's own (lesson 6's panel runs\n"
     "32 to 512 of tiny's)"},
    {"experts", NULL, "E", set_int, F(shape.moe.experts), 2, GPT_MAX_EXPERTS, false,
     "a mixture of experts: each expert layer's feed-forward becomes E\n"
     "SwiGLU experts of the model's ffn width and a router (2 to " XSTR(
         GPT_MAX_EXPERTS) ";\n"
                          "one micro-batch); a model preset may hold them (tiny-moe)"},
    {"top-k", NULL, "K", set_int, F(shape.moe.top_k), 1, 2, false,
     "the experts each token goes to (2 on a dense model given\n"
     "--experts, else the preset's): 1 as Switch Transformer (its gate is\n"
     "the router's probability), 2 as Mixtral (the two renormalised)"},
    {"capacity-factor", NULL, "C", set_capacity, F(shape.moe.capacity_factor), 0, 0, false,
     "an expert takes at most ceil(C K tokens / E) of a step's tokens; a\n"
     "choice past it is dropped (the token keeps its residual); 0: no\n"
     "limit (0 on a dense model given --experts, else the preset's)"},
    {"aux-loss-coef", NULL, "A", set_between, F(shape.moe.aux_coef), 0, 100, false,
     "the load-balancing loss A E sum_i f_i P_i (Switch Transformer's)\n"
     "added to the loss (" XSTR(TRAIN_AUX_COEF) " unless given)"},
    {"moe-every", NULL, "K", set_int, F(shape.moe.every), 1, 1024, false,
     "layer l has experts when l % K is 0 (1, every layer, on a dense\n"
     "model given --experts, else the preset's)"},
    {NULL, NULL, NULL, NULL, 0, 0, 0, false, NULL},
};

/* name and want the same, '_' and '-' alike */
static bool same_name(const char *name, const char *want)
{
    for (; *name && *want; name++, want++)
        if (*name != *want && !(*name == '_' && *want == '-'))
            return false;
    return !*name && !*want;
}

const struct setting *settings_find(const char *name)
{
    for (const struct setting *s = train_settings; s->name; s++)
        if (same_name(name, s->name) || (s->alias && !strcmp(name, s->alias)))
            return s;
    return NULL;
}

int settings_set(struct train_opts *o, const char *name, const char *value, struct error *e)
{
    const struct setting *s = settings_find(name);
    if (!s)
        return error_set(e, ERR_INVAL, "'%s' is not a setting of a run", name);
    return s->parse(s, name, value ? value : "", o, e);
}
