/* The trainer: the training loop of the tiny GPT on one GPU of a data-parallel group.
 *
 * A step runs in phases (trainer.c), the order of PyTorch's AMP recipe spread over N GPUs:
 *   1. the batch: every GPU draws the same global batch from the Markov source and takes its
 *      share, batch / N sequences (so N GPUs see what one GPU would);
 *   2. forward and backward with the loss multiplied by the loss scale, the gradients being
 *      those of the global batch's mean; the data-parallel strategy (par/dp.h) works at the
 *      model's hook points: reducing buckets as their gradients complete, gathering ZeRO-3's
 *      weights before each unit runs;
 *   3. the gradient sync: the buckets' all-reduces (DDP) or reduce-scatters (ZeRO) finish;
 *   4. unscale (1 / scale computed in double) over the part this GPU updates, looking for
 *      inf/NaN, and the sum of squares of its shard;
 *   5. agreement: the GPUs exchange their loss, sum of squares and found-inf flag (an
 *      all-gather of a few bytes each), so every GPU holds the same global loss, global norm
 *      and verdict, and skips or applies the step with the others;
 *   6. clip by the global norm; skip the step on inf/NaN (and, with skip_spikes, on a spike of
 *      the global loss) -- a skipped step leaves the weights, the master weights, Adam's
 *      moments and Adam's step count untouched -- or else update the fp32 master weights of
 *      the GPU's range with AdamW and round them into the working weights;
 *   7. the parameter sync: ZeRO-1/2 all-gather the updated weights; update the loss scale
 *      (num/scaler.h).
 * This is scaler.scale(loss).backward(), scaler.unscale_(opt), clip_grad_norm_,
 * scaler.step(opt), scaler.update().
 *
 * Memory keeps the layout the lessons teach: in bf16/fp16, 2-byte weights and gradients
 * (4-byte gradients with grad_fp32), fp32 master weights and two fp32 Adam moments; in fp32
 * the weights are their own master copy. The fp32 copies of the weights and gradients the CPU
 * computes with are workspace (a GPU would not need them). par/dp.h says what each ZeRO stage
 * holds.
 *
 * Who skips a non-finite step: a dynamic scaler (GradScaler.step skips the optimizer when
 * unscale_ found inf/NaN) and a constant one (Megatron-LM's ConstantGradScaler never changes
 * its scale, but MixedPrecisionOptimizer.step still unscales, checks and returns without
 * updating on inf/NaN: megatron/core/optimizer/grad_scaler.py and optimizer.py). Without a
 * scaler (TRAIN_SCALE_NONE: plain PyTorch, Megatron's bf16 without --loss-scale) nothing
 * checks: the step is applied, AdamW turns the inf/NaN gradients into NaN moments and weights
 * (inf / sqrt(inf) is NaN), and every later loss is NaN. The step still reports overflow (the
 * gradients held inf/NaN) and weights_nonfinite_since says when the weights were poisoned.
 *
 * A trainer is used by one thread at a time: its device's. */
#ifndef SCALELAB_PAR_TRAINER_H
#define SCALELAB_PAR_TRAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calc/sched.h"
#include "model/gpt.h"
#include "par/layout.h"
#include "par/settings.h"
#include "par/strategy.h"
#include "sim/spec.h"

/* The expert layers whose rows a GPU reports (struct train_step's ep_rows_kept). */
#define TRAIN_MAX_EXPERT_LAYERS 64

struct error;

struct train_step {
    long step;
    double loss;
    float grad_norm;   /* global L2 norm after unscaling, before clipping */
    double grad_sumsq; /* its square as the GPUs agreed on it, in double (grad_norm's fp32
                          rounding would hide a gradient element or two) */
    float clip_coef;   /* 1 without clipping */
    float loss_scale;  /* the scale this step used */
    float next_scale;  /* the scale after this step's update (GradScaler.get_scale() now) */
    bool skipped, overflow, spike;
    bool overflow_own;  /* this GPU's own range held inf/NaN, before the GPUs agreed (overflow) */
    double zscore;      /* of the loss against the window; NaN until the window is full */
    char nonfinite[48]; /* the first non-finite tensor, "" if none */
    bool nonfinite_forward;
    double underflow_frac;     /* weight-gradient elements that underflowed to zero, fraction */
    const uint64_t *underflow; /* per layer (L + 1 entries: the last is embedding + norm) */
    size_t act_peak_bytes;
    /* The step whose applied update made the fp32 weights non-finite, 0 if they are finite;
     * only without a scaler, which applies non-finite gradients. */
    long weights_nonfinite_since;
    struct strategy_sent sent; /* bytes this GPU sent this step, by kind, and for the
                                  agreement (loss, norm, found-inf) */
    uint64_t ring_scores;      /* the attention scores its ring's blocks computed */
    /* dropless expert parallelism: the token rows its dispatches sent the other GPUs of its
     * group and received from them, the most one exchange has held (par/ep.h's ep_rows) */
    uint64_t ep_rows_out, ep_rows_in, ep_rows_held;
    /* and per expert layer (the first TRAIN_MAX_EXPERT_LAYERS), the rows its experts held in the
     * pass whose activations reached its peak (model/gpt.h's expert_rows_at_peak) */
    uint32_t ep_rows_kept[TRAIN_MAX_EXPERT_LAYERS];
    double sim_start_s, sim_end_s; /* the step in simulated time (0 without a device) */
    double compute_s;              /* simulated compute time of the step */
    /* the step's waits of the compute stream, by the kind of message (sim/cluster.h's
     * dev_waited): posted, and not posted yet by its sender */
    double waited[TIME_MSGS], waited_peer[TIME_MSGS];
    double compute_end_s; /* when its last compute of the step ended */
    /* A mixture of experts (model/moe.h): the load-balancing loss (part of loss: each expert
     * layer's α E sum_i f_i P_i, α when the routing is even, summed over the expert layers),
     * the k N choices routed over the expert layers and those dropped past a capacity, and the
     * busiest expert's choices over the mean (train_expert_imbalance; 1: even). */
    double aux_loss, expert_imbalance;
    int aux_layers; /* the expert layers aux_loss sums over */
    uint64_t routed, dropped;
    /* and per expert (of E), summed over the expert layers: the choices this GPU's tokens
     * routed to it (before the capacity) and those it took */
    uint32_t expert_load[GPT_MAX_EXPERTS], expert_kept[GPT_MAX_EXPERTS];
    /* FP8 training (model/gpt.h's gpt_fp8_stats): per linear layer (wq ... w_down, summed over
     * the layers) and input (x, w, dy), the step's elements quantised, saturated and flushed
     * to zero, its amax and the scale it was quantised with; this GPU's, and in a run's
     * merged record every GPU's (par/run.c). Zero without fp8. */
    struct fp8_stats fp8[GPT_LINEARS][FP8_ROLES];
};

/* The busiest expert's choices over the mean, of E experts' loads (each summed over the expert
 * layers): 1 when even, 0 without choices. The one definition train and the window show, over
 * a GPU's tokens or (par/run.c) every GPU's. */
double train_expert_imbalance(const uint32_t *load, int experts);

struct trainer;

/* What the GPU at pl of a run of o allocates and does per step, known from its options alone
 * (par/strategy.h's count): the trainer's own (its model parts' buffers and their compute and
 * memory calls, the batch, the initial weights' scratch) and every strategy's. */
void trainer_count(const struct train_opts *o, const struct layout_place *pl,
                   struct strategy_count *c);

/* alloc: the allocator seam for every buffer (NULL: the host's). One GPU (o->gpus 1); the
 * options are checked (train_opts_check, par/strategies.h). */
int trainer_new(struct trainer **out, const struct train_opts *o, const struct gpt_alloc *alloc,
                struct error *e);
struct device;
/* The trainer of device d, one of o->gpus = dev_count(d), for options train_opts_check passed
 * (the run checks them once: par/run.h); every device of the cluster calls it, then
 * trainer_step together. */
int trainer_new_on(struct trainer **out, const struct train_opts *o, const struct gpt_alloc *alloc,
                   struct device *d, struct error *e);
void trainer_free(struct trainer *t);

/* Called once per step after unscaling and the agreement, before clipping: the global
 * batch, the global loss, and the gradients of the global mean loss (unscaled) over the
 * range [off, off + n) of the flat buffer this GPU updates (all of it on one GPU or in DDP,
 * its shard under ZeRO). */
typedef void (*train_observer)(void *ctx, const struct trainer *t, long step, const int32_t *tokens,
                               const int32_t *targets, double loss, const float *grads, size_t off,
                               size_t n);
void trainer_observe(struct trainer *t, train_observer fn, void *ctx);

/* Runs the next step and describes it: 0, or the failure that stopped it (a device's
 * communication aborted, --fail). trainer_step is the same for a host trainer, which cannot
 * fail. */
int trainer_run_step(struct trainer *t, struct train_step *out, struct error *e);
void trainer_step(struct trainer *t, struct train_step *out);

/* Live changes, for the window's knobs: from the next step on. trainer_inject schedules an
 * injection at the next step (ignored when the table is full); clip 0 turns clipping off. */
void trainer_inject(struct trainer *t, enum train_inject_kind kind, double factor);
void trainer_inject_gpu(struct trainer *t, enum train_inject_kind kind, double factor, int gpu);
void trainer_set_clip(struct trainer *t, double clip);
void trainer_set_lr(struct trainer *t, double lr);
long trainer_steps_done(const struct trainer *t);

double trainer_loss_floor(const struct trainer *t);
struct gpt *trainer_model(const struct trainer *t);
/* The fp32 weights of the range this GPU updates (all of them on one GPU), documented
 * order, and that range. */
const float *trainer_master(const struct trainer *t);
void trainer_range(const struct trainer *t, size_t *off, size_t *n);
const struct train_opts *trainer_opts(const struct trainer *t);
long trainer_adam_steps(const struct trainer *t);
const float *trainer_moments(const struct trainer *t, int which); /* 0: m, 1: v; the range */
/* trainer_step's weights_nonfinite_since, and the first non-finite tensor of that step. */
long trainer_poisoned(const struct trainer *t, const char **tensor);
/* Bytes of every buffer of the run by category (model, trainer and strategy). */
size_t trainer_mem_bytes(const struct trainer *t, enum gpt_mem kind);
/* Where this GPU sits. */
const struct layout_place *trainer_place(const struct trainer *t);
/* The whole model's index (model/gpt.h's order) of element i of this GPU's flat buffer (of
 * the chunk an observer is called for; chunk 0 outside an observer's call); SIZE_MAX for the
 * padding and for the last stage's copy of the tied embedding. */
size_t trainer_whole_index(const struct trainer *t, size_t i);
struct pp_done;
/* Pipelined: the last step's operations as this GPU ran them (*n), and the most
 * micro-batches it held at once; NULL (and *n 0, *peak 1) otherwise. */
const struct pp_done *trainer_pipeline(const struct trainer *t, int *n, int *peak);
#endif
