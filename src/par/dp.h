/* Data parallelism on the simulated GPUs: DDP and ZeRO stages 1 to 3, one GPU's part.
 *
 * What a GPU holds (Ψ_pad and S of par/shard.h; w the weights' bytes, 2 in bf16/fp16 and 4
 * in fp32; g the gradients', 2 or 4; master weights and Adam's moments fp32):
 *     stage        weights    gradients   master     moments    communication
 *     0 (DDP)      w Ψ_pad    g Ψ_pad     4 Ψ_pad    8 Ψ_pad    -
 *     1            w Ψ_pad    g Ψ_pad     4 S        8 S        -
 *     2            w Ψ_pad    g S         4 S        8 S        2 buckets
 *     3 (FSDP)     w S        g S         4 S        8 S        2 gradient pieces + gathered
 * In fp32 the weights are their own master copy (master 0). Stages 0 and 1 reduce the
 * gradients in place, bucket by bucket, as each completes (DDP: ring all-reduce; 1: ring
 * reduce-scatter, then each GPU updates its shard and the updated weights are all-gathered).
 * Stage 2 copies each completed bucket into one of two bucket buffers (one is being reduced
 * while the next fills), reduce-scatters it and keeps its own part. Stage 3 does the same
 * per piece (the final norm, each layer, the embedding) and gathers each unit's weights
 * into a gathered buffer before it runs and releases it after: the ends (embedding, final
 * norm) for the lookup and again for the head, each layer for its forward and again for its
 * backward; with prefetch the next unit is gathered while this one computes (two gathered
 * buffers live at the peak). The gathered buffers are reserved memory that becomes
 * communication while a unit is held, so the ledger draws them appearing and vanishing.
 *
 * Simulated time: compute runs on stream 0, gradient reduction on stream 1 (it starts once
 * compute has produced the bucket, and overlaps the rest of the backward pass), ZeRO-3's
 * gathers on stream 2 (a prefetched gather overlaps the unit before it). */
#ifndef SCALELAB_PAR_DP_H
#define SCALELAB_PAR_DP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/gpt.h"
#include "par/shard.h"
#include "par/strategy.h"

struct device;
struct error;
struct train_opts;
struct layout_place;

#define DP_STREAM_COMPUTE 0
#define DP_STREAM_GRADS   1
#define DP_STREAM_GATHER  2

/* How the strategy allocates: the trainer's seam (categories of model/gpt.h). */
struct dp_mem {
    void *(*alloc)(void *ctx, enum gpt_mem kind, size_t bytes, const char *what);
    void (*free)(void *ctx, enum gpt_mem kind, void *p, size_t bytes);
    void (*charge)(void *ctx, enum gpt_mem kind, long long delta);
    void *ctx;
};

struct dp;

/* The model's seam needs these before the model exists: whether its fp32 weights and
 * gradients are workspace, and the padded length of its flat buffers (part: what the model
 * holds, NULL the whole model). */
void dp_model_seam(const struct train_opts *o, const struct gpt_part *part, struct gpt_alloc *seam);

/* The strategy of the GPU at place pl (par/layout.h) for model g (made with dp_model_seam's
 * settings); d is NULL on the host (one GPU). 0, ERR_NOMEM or the seam's error. */
int dp_new(struct dp **out, const struct train_opts *o, struct gpt *g, struct device *d,
           const struct layout_place *pl, const struct dp_mem *mem, struct error *e);
void dp_free(struct dp *p);

/* The model's hook points (model/gpt.h). */
void dp_hook(struct dp *p, enum gpt_hook h, int unit);

/* Weights at the start: the fp32 weights of every parameter (the model's own buffer) are
 * cut into this GPU's master and working weights. */
void dp_load_weights(struct dp *p, const float *all);

/* The backward pass is done: the gradient sync finishes (pipelined, it happens now: the
 * tied embedding's gradient summed between the first and last stage, then every bucket).
 * 0, or the first failure of the step's communication. */
int dp_grad_sync(struct dp *p, struct error *e);
/* zbv's two ends on one GPU (calc/sched.h): the embedding's and the head's copies of the tied
 * embedding sum their gradients in place, in fp32, before either's dp_grad_sync (which then
 * sends nothing for them); nothing for parts without a copy. */
void dp_tie(struct dp *a, struct dp *b);

/* The fp32 gradients of the range this GPU updates, unscaled by inv (found-inf set if any
 * held inf/NaN), and the sum of squares of this GPU's shard. */
float *dp_unscale(struct dp *p, float inv, bool *found, double *sumsq);

/* Every GPU's loss, sum of squares and found-inf, exchanged among all the run's GPUs: the
 * global loss (the mean over the GPUs that compute one: all of them, or the last pipeline
 * stage's), sum of squares and verdict, the same on every GPU. */
int dp_agree(struct dp *p, double loss, double sumsq, bool found, double *gloss, double *gsumsq,
             bool *gfound, struct error *e);

/* The range this GPU updates, and its fp32 master weights and Adam moments (same range). */
void dp_range(const struct dp *p, size_t *off, size_t *n);
float *dp_master(struct dp *p);
/* Where element i of that range is in the flat buffer: off + i, or with ZeRO-1 and expert
 * parallelism, whose range is two packed shards (par/dp.c's owned_runs), where its run has it. */
size_t dp_flat_index(const struct dp *p, size_t i);
float *dp_moment(struct dp *p, int which);

/* The update of this GPU's range: AdamW over its master weights with gradients g times
 * clipping's coefficient, the working weights rounded from them (in the same pass), and
 * ZeRO-1/2's all-gather of the weights. 0, or the all-gather's failure. */
struct adamw;
int dp_update(struct dp *p, const struct adamw *a, const float *g, float coef, struct error *e);

/* Simulated compute time since the step began. */
double dp_compute_s(const struct dp *p);
void dp_add_compute(struct dp *p, double seconds);

/* Its face (par/strategy.h), through which the trainer begins its steps (bytes and time are
 * counted from there) and reads its bytes sent (model states over the data-parallel group,
 * the tied embedding's gradient between the pipeline's ends, and the agreement's scalars)
 * and held: the batch splitting
 * over the data-parallel ranks and their micro-batches, a ZeRO stage the layout runs, a
 * bucket and prefetch; per GPU and model chunk its buffers (Adam's moments, its own weights
 * and gradients, master weights, buckets, the gathered units, the agreement's) and its ring
 * passes: each bucket's all-reduce (DDP) or reduce-scatter and the weights' all-gather (ZeRO
 * 1 and 2), ZeRO-3's per-piece reduce-scatters and two gathers of every unit, the tied
 * embedding's all-reduce between the pipeline's ends, and once per GPU the agreement. */
extern const struct strategy dp_strategy;

#endif
