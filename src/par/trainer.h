/* The single-device trainer: the training loop around the tiny GPT.
 *
 * A step: draw a batch from the Markov source; forward and backward with the loss multiplied
 * by the loss scale; unscale the gradients (1 / scale computed in double) and look for inf/NaN;
 * measure the global gradient norm and clip; flag a loss spike (z-score); skip the step on
 * inf/NaN (and, with skip_spikes, on a spike) -- a skipped step leaves the weights, the master
 * weights, Adam's moments and Adam's step count untouched -- or else update the fp32 master
 * weights with AdamW and round them into the working weights; update the loss scale
 * (num/scaler.h). This is the order of PyTorch's AMP recipe: scaler.scale(loss).backward(),
 * scaler.unscale_(opt), clip_grad_norm_, scaler.step(opt), scaler.update().
 *
 * Who skips a non-finite step: a dynamic scaler (GradScaler.step skips the optimizer when
 * unscale_ found inf/NaN) and a constant one (Megatron-LM's ConstantGradScaler never changes
 * its scale, but MixedPrecisionOptimizer.step still unscales, checks and returns without
 * updating on inf/NaN: megatron/core/optimizer/grad_scaler.py and optimizer.py). Without a
 * scaler (TRAIN_SCALE_NONE: plain PyTorch, Megatron's bf16 without --loss-scale) nothing
 * checks: the step is applied, AdamW turns the inf/NaN gradients into NaN moments and weights
 * (inf / sqrt(inf) is NaN), and every later loss is NaN. The step still reports overflow (the
 * gradients held inf/NaN) and weights_nonfinite_since says when the weights were poisoned. */
#ifndef SCALELAB_PAR_TRAINER_H
#define SCALELAB_PAR_TRAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/gpt.h"

struct error;

enum train_scaling { TRAIN_SCALE_NONE, TRAIN_SCALE_DYNAMIC, TRAIN_SCALE_STATIC };

enum train_inject_kind { TRAIN_INJECT_NAN, TRAIN_INJECT_INF, TRAIN_INJECT_SPIKE };

struct train_inject {
    enum train_inject_kind kind;
    long step;     /* 1-based, as the step field of the output */
    double factor; /* spike: the logits are multiplied by it */
};

#define TRAIN_MAX_INJECT 64

struct train_opts {
    struct gpt_config shape;
    int batch;
    long steps;
    uint64_t seed;
    enum fp_format precision;
    struct gpt_ckpt ckpt;
    double lr, beta1, beta2, eps, wd;
    enum train_scaling scaling;
    double scale;        /* the initial (dynamic) or fixed (static) loss scale */
    int growth_interval; /* dynamic: clean steps before the scale doubles */
    int hysteresis;      /* dynamic: overflowing steps before it halves */
    double clip;         /* max global norm; 0: no clipping */
    bool skip_spikes;
    int spike_window; /* losses in the z-score window */
    double spike_z;   /* a loss with z-score above this is a spike */
    struct train_inject inject[TRAIN_MAX_INJECT];
    int ninject;
};

/* PyTorch's defaults (AdamW, GradScaler), tiny's shape, batch 16, 300 steps, seed 1, fp32. */
void train_opts_default(struct train_opts *o);

/* Checks the options (ranges, injection steps within 1..steps); 0 or ERR_INVAL naming the
 * option. */
int train_opts_check(const struct train_opts *o, struct error *e);

struct train_step {
    long step;
    double loss;
    float grad_norm;  /* global L2 norm after unscaling, before clipping */
    float clip_coef;  /* 1 without clipping */
    float loss_scale; /* the scale this step used */
    bool skipped, overflow, spike;
    double zscore;      /* of the loss against the window; NaN until the window is full */
    char nonfinite[48]; /* the first non-finite tensor, "" if none */
    bool nonfinite_forward;
    double underflow_frac;     /* weight-gradient elements that underflowed to zero, fraction */
    const uint64_t *underflow; /* per layer (L + 1 entries: the last is embedding + norm) */
    size_t act_peak_bytes;
    /* The step whose applied update made the fp32 weights non-finite, 0 if they are finite;
     * only without a scaler, which applies non-finite gradients. */
    long weights_nonfinite_since;
};

struct trainer;

/* What a run does through the allocator seam, known from its options alone: buffers
 * allocated by trainer_new (and freed by trainer_free), and calls to the seam's charge and
 * compute hooks per trainer_step. */
struct train_calls {
    long buffers, charges, computes;
};
struct train_calls trainer_calls(const struct train_opts *o);

/* alloc: the allocator seam for every buffer (NULL: the host's). */
int trainer_new(struct trainer **out, const struct train_opts *o, const struct gpt_alloc *alloc,
                struct error *e);
void trainer_free(struct trainer *t);

/* Called once per step after unscaling, before clipping: the step's batch, loss and the
 * gradients of the mean loss (unscaled), and the weights the step used (fp32 master). */
typedef void (*train_observer)(void *ctx, const struct trainer *t, long step, const int32_t *tokens,
                               const int32_t *targets, double loss, const float *grads);
void trainer_observe(struct trainer *t, train_observer fn, void *ctx);

/* Runs the next step and describes it. */
void trainer_step(struct trainer *t, struct train_step *out);

/* Live changes, for the window's knobs: from the next step on. trainer_inject schedules an
 * injection at the next step (ignored when the table is full); clip 0 turns clipping off. */
void trainer_inject(struct trainer *t, enum train_inject_kind kind, double factor);
void trainer_set_clip(struct trainer *t, double clip);
void trainer_set_lr(struct trainer *t, double lr);
long trainer_steps_done(const struct trainer *t);

double trainer_loss_floor(const struct trainer *t);
struct gpt *trainer_model(const struct trainer *t);
const float *trainer_master(const struct trainer *t); /* fp32 weights, documented order */
const struct train_opts *trainer_opts(const struct trainer *t);
long trainer_adam_steps(const struct trainer *t);
const float *trainer_moments(const struct trainer *t, int which); /* 0: m, 1: v */
/* trainer_step's weights_nonfinite_since, and the first non-finite tensor of that step. */
long trainer_poisoned(const struct trainer *t, const char **tensor);
/* Bytes of every buffer of the run by category (model and trainer). */
size_t trainer_mem_bytes(const struct trainer *t, enum gpt_mem kind);

#endif
