/* Tensor and sequence parallelism's communication, one GPU's part: the reductions the model
 * asks for over the GPU's tensor-parallel group (Megatron-LM's f and g operators, par/layout.h's
 * group along tp), and sequence parallelism's sum of the norms' weight gradients.
 *
 * A part of the model (model/gpt.h) holds a T-th of each layer: the column-parallel matmuls'
 * rows (wq, wk, wv, w_gate, w_up, the embedding's vocabulary rows), the row-parallel ones'
 * columns (wo, w_down), the norms whole. It calls tp_reduce where a layer's partial results
 * meet: after wo and w_down and the embedding's lookup, before the norms and the head in the
 * backward pass, and for the parallel cross-entropy's row maximum, sum of exponentials and
 * target logit. Each is a ring collective over the group on the compute stream (on the
 * critical path); sums of activations and their gradients travel in the training format
 * (packed into a buffer of a micro-batch's b s h elements), the cross-entropy's statistics in
 * fp32. With sequence parallelism the residual stream holds a T-th of the tokens: the sums
 * become reduce-scatters and the norms' outputs are all-gathered, and since each rank's norm
 * weight gradients cover its tokens only, tp_norm_sync sums them over the group once per step
 * (Megatron-LM's all-reduce of the layer-norm gradients), in the gradients' format. */
#ifndef SCALELAB_PAR_TP_H
#define SCALELAB_PAR_TP_H

#include <stddef.h>
#include <stdint.h>

#include "model/gpt.h"
#include "par/strategy.h"

struct device;
struct dp_mem;
struct error;
struct layout_place;
struct train_opts;

struct tp_group;

/* The communication of the GPU at place pl on device d, its buffers through mem; *out NULL
 * (nothing to do) with one GPU per layer. 0 or ERR_NOMEM. */
int tp_new(struct tp_group **out, const struct train_opts *o, const struct layout_place *pl,
           struct device *d, const struct dp_mem *mem, struct error *e);
void tp_free(struct tp_group *t);

/* The model's reduction of n values at buf (model/gpt.h's tp_reduce, op as it says), over
 * the group. A failure is kept for its face's failed; later reductions of the step do
 * nothing. */
void tp_collective(struct tp_group *t, float *buf, size_t n, enum gpt_tp_op op, const char *what);
/* Sequence parallelism, once every micro-batch's gradients are in: the norms' weight
 * gradients of the v model parts g[c] (parts[c]) summed over the group. 0 or the failure. */
int tp_norm_sync(struct tp_group *t, struct gpt *const *g, const struct gpt_part *parts, int v,
                 struct error *e);

/* Its face (par/strategy.h), through which the trainer begins its steps, hears of its
 * failures and reads its bytes sent and held: T dividing the heads, the FFN width and the
 * vocabulary (and the sequence, with sequence parallelism); per GPU its two buffers (the sums' in
 * bf16/fp16, the norms' with sequence parallelism) and a ring all-reduce's 2 (T - 1) sends for
 * every sum the model asks for (a reduce-scatter's or all-gather's T - 1), the norms' once a step.
 */
extern const struct strategy tp_strategy;

#endif
