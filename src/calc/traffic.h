/* Communication per GPU per training step, and the time it takes, for a parallel layout.
 *
 * Bytes are what one GPU sends (nccl-tests' convention: a ring collective over N GPUs of a
 * buffer of S bytes sends (N-1)/N S per GPU for reduce-scatter or all-gather, twice that for
 * all-reduce). Ψ is the parameters one GPU holds after tensor and pipeline parallelism, g the
 * gradient bytes per element (2, or 4 with fp32 gradients), w the weight bytes (2 or 4), m the
 * micro-batches per step, p the activation bytes.
 *   data parallel, N = dp:
 *     DDP (ZeRO-0)  all-reduce of the gradients once per step      2(N-1)/N Ψ g
 *     ZeRO-1        reduce-scatter of the gradients once per step, all-gather of the updated
 *                   weights                                        (N-1)/N Ψ (g + w)
 *     ZeRO-2        the gradients are kept sharded, so each micro-batch's are
 *                   reduce-scattered at once (DeepSpeed)            (N-1)/N Ψ (m g + w)
 *     ZeRO-3        per micro-batch: all-gather the weights for the forward and again for the
 *                   backward, reduce-scatter the gradients          (N-1)/N Ψ m (2 w + g)
 *     With g = w and m = 1 these are the ZeRO paper's 2Ψ (DDP, stages 1-2) and 3Ψ (stage 3,
 *     1.5 times as much), times (N-1)/N. Ψ here is N ceil(Ψ/N): the flat buffers are padded
 *     so that every GPU sends N - 1 equal chunks per pass (par/shard.h), what the trainer's
 *     GPUs measure to the byte.
 *   tensor parallel, t = tp: two all-reduces of the b s h activations per layer in the
 *     forward pass and two in the backward (Megatron-LM's f and g operators), two more when a
 *     full recompute repeats the forward; with sequence parallelism each becomes a
 *     reduce-scatter plus an all-gather of the same volume, and the backward pass gathers the
 *     two norms' outputs again for the weight gradients (one more all-reduce's worth):
 *       (4 [+ 1 sp] + 2 recompute) x layers of the stage x m x 2(t-1)/t s b h p
 *     The ends too, per micro-batch: the first stage's
 *     embedding lookup (an all-reduce: vocabulary-parallel), the last stage's head input
 *     gradient (1.5 with sequence parallelism: the final norm's output gathered again) and
 *     the parallel cross-entropy's three fp32 numbers per token; with sequence parallelism
 *     the norms' weight gradients, summed once per step.
 *   context parallel, C = cp: each GPU holds s / C of every sequence's tokens (every s above
 *     is then s / C), and sends per layer and micro-batch 6 (C-1)/C b s kv p of K, V and their
 *     gradients round its ring (8 with full recompute); the gradients reduce over dp x cp.
 *   pipeline: each micro-batch's activations go to the next stage and their gradients come
 *     back: a middle stage sends 2 m s b h p per step (divided by t with sequence
 *     parallelism, which sends only its shard).
 *
 * Times use the α-β ring formulas of comm/cost.h over the link the group crosses. Ranks are
 * numbered tp innermost, then dp, then pp (Megatron-LM's order): a tp group spans nodes when
 * tp > GPUs per node, a dp group when tp x dp does. What is hidden behind compute:
 *   DDP, ZeRO-1/2 gradient reduction overlaps the backward pass of the last micro-batch (the
 *   earlier micro-batches' under ZeRO-2 overlap their own backward pass); the weight
 *   all-gather after the optimizer step is exposed; ZeRO-3's gathers are prefetched behind the
 *   forward and backward passes of each micro-batch, and without prefetch (memory --prefetch
 *   0) every gather and reduce-scatter is waited for (a unit is gathered once it is needed, on
 *   the port its successor's reduce-scatter holds in the backward pass). Tensor-parallel
 * all-reduces are on the critical path (exposed). Pipeline sends are exposed only while the
 * pipeline fills and drains: 2(pp - 1) of them. */
#ifndef SCALELAB_CALC_TRAFFIC_H
#define SCALELAB_CALC_TRAFFIC_H

#include "calc/memory.h"

struct cluster_spec;
struct error;

/* One named piece of a kind's bytes (memory --json lists them under "parts"). */
struct traffic_piece {
    const char *name; /* "layers", "embedding", "tied_embedding", ... */
    double bytes;
};

#define TRAFFIC_PIECES 6

struct traffic_part {
    double bytes;   /* sent per GPU per step */
    double worst;   /* expert parallelism: the most a routing can make it send (dropless: bytes
                       is then uniform routing's; with a capacity the same); 0 for the others */
    double time_s;  /* α-β time of all of it */
    double exposed; /* the part not hidden behind compute */
    char formula[320];
    struct traffic_piece piece[TRAFFIC_PIECES]; /* what bytes adds up: npieces of them */
    int npieces;
};

struct traffic {
    struct traffic_part dp, tp, pp, cp, ep;
    double bytes, exposed; /* sums */
};

/* The bytes each GPU of pipeline stage `stage` (0 <= stage < c->pp) sends per step, by kind,
 * with their times: the one calculator `memory`, `plan`, `train` and the panels use, so that
 * what they print is what the trainer's GPUs measure. c as checked by memory_check (a bare
 * parameter count, c->model NULL, has data-parallel traffic only); psi_gpu the parameters of
 * the stage's GPUs and stage_layers its layers (memory_compute_stage's params_gpu and
 * stage_layers); fwd_s and bwd_s the compute time of one micro-batch's forward and backward
 * pass on one GPU (for what overlaps). Per kind:
 *   data_parallel   its gradients reduced and its weights gathered (one piece, "gradients and
 *                   weights");
 *   tensor_parallel "layers" (the 4 all-reduces of each layer, 2 more under full recompute),
 *                   "sp_regathers" (sequence parallelism: the norms' outputs gathered again in
 *                   the backward pass, and the final norm's), "embedding" (the first stage's
 *                   lookup), "head" (the last stage's head input gradient), "loss" (the
 *                   parallel cross-entropy's three fp32 numbers per token), "norm_grads"
 *                   (sequence parallelism: the norms' weight gradients, once per step);
 *   pipeline        "activations" (each micro-batch's activations forward and gradients back)
 *                   and "tied_embedding" (the ends' all-reduce of the tied embedding's
 *                   gradient);
 *   context_parallel "kv_forward", "kv_backward", "kv_grads" and "kv_recompute" (full
 *                   recompute): the ring attention's K and V blocks and their gradients
 *                   (context_parallel in traffic.c derives them: 6 (C-1)/C b s kv p per layer
 *                   and micro-batch, 8 with full recompute);
 *   expert_parallel "dispatch_combine", "backward" and "recompute" (full recompute): the
 *                   all-to-alls of the experts' static rows (expert_parallel in traffic.c
 *                   derives them: 4 (P-1)/P E cap d p per expert layer and micro-batch, 6 with
 *                   full recompute); dropless (no capacity factor), the same under uniform
 *                   routing with k n rows in place of E cap, and "counts", the token counts
 *                   sent before each dispatch, with the worst case beside (worst). */
int traffic_compute(const struct memory_config *c, const struct cluster_spec *cl, int stage,
                    double psi_gpu, int stage_layers, double fwd_s, double bwd_s,
                    struct traffic *out, struct error *e);

/* Dropless expert parallelism: the bytes a GPU of c's layout sends per step over a stage of
 * `layers` layers when its dispatches sent and received `moved` rows to and from the other GPUs
 * of its group (a step's own routing: par/ep.h's ep_rows, every forward pass's): the forward's
 * rows out and back, the backward's the same once more (a full recompute's forward passes are
 * f = 2 of the moved rows' passes, the backward one: moved (f + 1)/f d p), and the counts, as
 * expert_parallel's; at moved = 2 (P-1)/P k n f a layer and micro-batch, uniform routing's
 * bytes. NAN when c is not dropless. */
double traffic_ep_bytes_at(const struct memory_config *c, int layers, double moved);

/* Context parallelism's exposed time on stage s's path (t->cp.exposed, and t->exposed) when a
 * GPU computes at `rate` FLOP/s: each ring step's send hidden behind its block's attention but
 * what exceeds it, the backward's gradients sent after their block not hidden (model/gpt_ring.c's
 * order, TransformerEngine's P2P one for K and V), of `layers` layers; into *imbalance_s the
 * naive split's busiest GPU's extra attention, which the ring waits for (0 balanced). */
void traffic_cp_overlap(const struct memory_config *c, const struct cluster_spec *cl, int layers,
                        double rate, struct traffic *t, double *imbalance_s);

#endif
