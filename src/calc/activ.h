/* Activation memory: what a transformer layer saves in its forward pass for its backward pass.
 *
 * Notation (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
 * Models", §4): s sequence length, b micro-batch size, h hidden size (d_model), a attention
 * heads, t tensor-parallel size, p bytes per activation element (2 for bf16/fp16, 4 for fp32);
 * f the feed-forward width, kv = kv_heads x h/a, v the vocabulary.
 *
 * ---- gelu models (GPT): the paper's bookkeeping, per layer, tensor by tensor ----
 *   attn_norm_in    sbh p      LayerNorm input                       (replicated under tp)
 *   qkv_in          sbh p      LayerNorm output, the QKV matmul's input (replicated)
 *   q, k, v         sbh p, sb kv p, sb kv p  for QK^T and attention over V   (split by t)
 *   softmax_out     as^2b p    for the softmax backward               (split; attention core)
 *   softmax_mask    as^2b x 1  dropout mask, one byte                 (split; attention core)
 *   softmax_drop    as^2b p    dropout output, the input of P x V     (split; attention core)
 *   proj_in         sbh p      the output projection's input          (split)
 *   attn_mask       sbh x 1    dropout mask after the projection      (replicated)
 *   mlp_norm_in     sbh p      (replicated)
 *   fc1_in          sbh p      (replicated)
 *   gelu_in         sbf p      (split)
 *   fc2_in          sbf p      GELU output                            (split)
 *   mlp_mask        sbh x 1    (replicated)
 * With p = 2, kv = h, f = 4h this is sbh(34 + 5as/h) (the paper's eq. 1); tensor parallel:
 * sbh(10 + 24/t + 5as/(ht)) (eq. 2); with sequence parallelism the replicated tensors are
 * split too: sbh/t (34 + 5as/h) (eq. 3); selective recompute drops the attention core:
 * 34 sbh/t with sp (eq. 6); full recompute keeps the layer input only, 2sbh.
 *
 * ---- swiglu models (ours: RMSNorm, SwiGLU, no biases, no dropout) ----
 * The same bookkeeping for exactly what these layers need in backward. Per layer, in the order
 * the forward pass produces them (this is the list src/model saves, and what it measures):
 *   x          sbh p      layer input = attn_norm input (RMSNorm backward needs x)  [norm]
 *   attn_rstd  sb x 4     1/rms(x) per token, fp32 whatever the precision          [norm]
 *   xn1        sbh p      attn_norm output, input of wq, wk, wv (their weight grads) [norm]
 *   q          sbh p      query after rotary, for the scores' backward             [split]
 *   k          sb kv p    key after rotary                                         [split]
 *   v          sb kv p    value, for P x V's backward                              [split]
 *   att        as^2b p    softmax probabilities P (full s x s, causal zeros included;
 *                         the softmax backward needs its output)   [split, core; eager]
 *   lse        as x 4     each query row's log-sum-exp, fp32, instead of att [split, core;
 *                         flash]
 *   attn_out   sbh p      heads merged, input of wo                                [split]
 *   x1         sbh p      x + attention projection = mlp_norm input                [norm]
 *   mlp_rstd   sb x 4     1/rms(x1), fp32                                          [norm]
 *   xn2        sbh p      mlp_norm output, input of w_gate and w_up                [norm]
 *   gate       sbf p      x W_gate before SiLU (SiLU's backward needs its input)   [split]
 *   up         sbf p      x W_up (the product's backward needs both factors)       [split]
 *   act        sbf p      silu(gate) * up, input of w_down (its weight grad)       [split]
 * Total (activ_layer sums the list): p(6 + 2kv/h) sbh + 3p sbf + p as^2b + 8 sb; for p = 2,
 * kv = h, t = 1: sbh(16 + 6f/h + 2as/h) + 8sb.
 *   synthetic-7b (f/h = 3.0625): sbh(34.375 + 2as/h) + 8sb.
 *
 * ---- the attention kernel (activ_attention, one model for every layout) ----
 * flash (the default): the kernel keeps no probabilities; its backward pass rebuilds them block
 *   by block from q, k, v and each row's log-sum-exp (FlashAttention, Dao et al. 2022), so a
 *   layer keeps lse, 4 asb bytes, in place of the as^2b terms (att; a gelu layer's
 *   softmax_out, its dropout mask and output, which flash attention regenerates from the RNG's
 *   state). What Megatron-LM's estimator assumes (megatron/training/theoretical_memory_usage.py
 *   counts sbh(18 + 4f/h) a SwiGLU layer, no s^2 term), what TransformerEngine's attention
 *   keeps and what ring attention does (model/ringattn.h). Context parallelism needs it:
 *   TransformerEngine disables its unfused attention under context parallelism
 *   (dot_product_attention/utils.py, get_attention_backend).
 * eager: the probabilities kept, as above (the tiny GPT's attention without cp, PyTorch's
 *   eager softmax, Korthikanti et al.'s bookkeeping). Selective recompute drops the core:
 *   the probabilities (eager) or lse (flash, Megatron-LM's recompute of core attention, which
 *   then repeats the attention's forward).
 * [norm] tensors are replicated under tensor parallelism and split by t with sequence
 * parallelism (which then needs t | s); [split] ones are split by t; [core] is what selective
 * recompute drops (the attention core, recomputed from q and k in backward).
 *
 * A layer with experts (model_shape's experts E, top_k k, capacity_factor C; activ_moe_layer)
 * keeps the same tensors up to xn2, then, in place of gate, up and act:
 *   router_probs  sbE x 4     the router's softmax, fp32 (its backward and the aux loss)
 *   routing       (3sbk + 3E) x 4   each choice's expert, row and gate weight; each expert's
 *                             first row, tokens kept and tokens routed (4-byte words)
 *   expert_in     R h p       the experts' inputs, xn2's rows gathered (their weight grads)
 *   gate, up, act R f p       each expert's SwiGLU, on its rows
 *   expert_out    R h p       the experts' outputs (the gate weights' gradients)
 * R, the rows of the experts' buffer: k sb without a capacity (the choices, packed), E cap
 * with one (cap = min(ceil(C k sb / E), sb): the static [E, cap] shape, padding included);
 * dropless expert parallelism over ep GPUs (no capacity), what the routing sends: at most ep
 * sb min(k, E/ep) (every token of the group routed to this GPU, the bound), k sb under
 * uniform routing, or a step's own (struct activ_config's ep_rows), and the routing keeps E
 * words more (the counts each GPU sent). No tensor parallelism (model/moe.h, model/gpt.h keep
 * exactly this).
 * Nothing else is saved: the residual adds need nothing, the output of w_down and wo are added
 * into the stream and not kept, and the next layer's input is that layer's x.
 *
 * ---- the ends of the model, per micro-batch ----
 *   swiglu, last stage: final_in sbh p (final norm input), final_rstd sb x 4, head_in sbh p
 *     (final norm output, the output layer's input), probs sbv x 4 (fp32 softmax of the
 *     logits for the cross-entropy backward; split by t, vocabulary-parallel).
 *   gelu: the same with the LayerNorm (final_in, head_in), probs sbv x 4 (the paper's 4sbv),
 *     and on the first stage the embedding dropout mask sbh x 1.
 *   Token ids and targets are inputs, not activations.
 *
 * ---- checkpoint policies (per micro-batch, for the n consecutive layers of a stage) ----
 * "saved" is what the forward pass leaves for the backward pass; "peak" adds what the backward
 * pass recomputes at the worst moment. L = one layer's full list, X = its input x, H the ends.
 *   none       saved = n L + H                           peak = saved
 *   selective  saved = n (L - core) + H                  peak = max(saved, n(L - core) + core)
 *              (the head is freed before the last layer's attention core is recomputed)
 *   every:K    the inputs of layers 0, K, 2K, ... of the stage are kept: C = ceil(n/K)
 *              saved = C X + H; the backward pass recomputes segment j (0-based, n_j layers)
 *              with its checkpoint and those of the segments before it still held:
 *              peak = max(saved, max_j (j X + n_j L))      (segment j's own checkpoint is its
 *              first layer's X, counted once)
 *   full       every:1: saved = n X + H, peak = max(saved, (n-1) X + L)
 *   sqrt       every:ceil(sqrt(n)) (Chen et al. 2016, "Training Deep Nets with Sublinear
 *              Memory Cost").
 */
#ifndef SCALELAB_CALC_ACTIV_H
#define SCALELAB_CALC_ACTIV_H

#include <stdbool.h>
#include <stddef.h>

#include "base/ckpt.h"
#include "calc/preset.h"

struct error;

/* What the attention keeps of its softmax for the backward pass (see above). */
enum activ_attention { ACTIV_FLASH, ACTIV_EAGER };

/* "flash" or "eager". */
const char *activ_attention_name(enum activ_attention a);
/* Reads "flash" or "eager"; ERR_INVAL naming the choices. */
int activ_parse_attention(const char *s, enum activ_attention *out, struct error *e);

struct activ_config {
    int micro_batch; /* b */
    int seq;         /* s */
    int tp;          /* t */
    bool sp;         /* sequence parallelism */
    int bytes;       /* p: 2 or 4 */
    int cp;          /* context parallelism: s / cp of each sequence's tokens (0 or 1: all) */
    bool cp_naive;   /* cp: the naive split (its divisibility) */
    enum activ_attention attention; /* flash (0, the default) or eager: the probabilities */
    int ep; /* expert parallelism (0 or 1: none): without a capacity factor a layer's experts
               hold the most rows that can come (base/experts.h's experts_rows_held) */
    /* Dropless expert parallelism only (ep > 1, no capacity factor): the rows its experts hold
     * are the routing's. ep_rows (not NULL): each expert layer's of the model, in order (a run's
     * step, its own counts: model/gpt.h books them); else ep_uniform: uniform routing's, k s b
     * a layer (the expected); else the bound above. */
    const double *ep_rows;
    bool ep_uniform;
};

/* Checks a configuration against a shape: t divides heads, kv_heads and ffn; with sp, t
 * divides s; for gelu models s is at most the learned positions; eager attention has cp 1.
 * ERR_INVAL naming the option. */
int activ_check(const struct model_shape *m, const struct activ_config *c, struct error *e);

enum activ_region { ACTIV_REPLICATED, ACTIV_SPLIT }; /* under tensor parallelism */

struct activ_tensor {
    const char *name;
    const char *shape;  /* "sbh", "as^2b", ... */
    double elements;    /* on one GPU */
    int bytes_per_elem; /* p, 1 (dropout masks) or 4 (rstd, probabilities) */
    double bytes;       /* elements x bytes_per_elem */
    bool core;          /* the attention core: what selective recompute drops */
};

#define ACTIV_MAX_TENSORS 20

struct activ_list {
    int n;
    struct activ_tensor t[ACTIV_MAX_TENSORS];
    double total;      /* bytes of the list */
    double input;      /* bytes of the layer input (what a checkpoint keeps) */
    double core;       /* bytes selective recompute drops */
    char formula[256]; /* the per-layer formula in the paper's notation, with its numbers */
};

/* One layer's list for one micro-batch on one GPU (m, c checked by activ_check); a dense
 * layer's for a model with experts. */
void activ_layer(const struct model_shape *m, const struct activ_config *c, struct activ_list *out);
/* The list of a layer with experts (m's experts > 0, swiglu). */
void activ_moe_layer(const struct model_shape *m, const struct activ_config *c,
                     struct activ_list *out);
/* The ends: first-stage and last-stage tensors for one micro-batch. */
void activ_ends(const struct model_shape *m, const struct activ_config *c, bool first, bool last,
                struct activ_list *out);

struct activ_total {
    double per_layer; /* what one layer keeps under the policy (L, L - core, or X) */
    double saved;     /* end of the forward pass */
    double peak;      /* the most held during the backward pass */
    int checkpoints;  /* kept layer inputs (every:K), else 0 */
    int every;        /* K, else 0 */
};

/* n consecutive layers (a pipeline stage, or the whole model), one micro-batch, with the ends
 * of the first and/or last stage (see the policies above). */
void activ_total(const struct model_shape *m, const struct activ_config *c,
                 const struct ckpt_policy *pol, int n, bool first, bool last,
                 struct activ_total *out);
/* The same for layers l0 .. l0 + n - 1 of m, whose layers with experts keep their own list:
 * L above is each layer's own (per_layer: the largest). */
void activ_total_at(const struct model_shape *m, const struct activ_config *c,
                    const struct ckpt_policy *pol, int l0, int n, bool first, bool last,
                    struct activ_total *out);

/* What one layer's input-gradient pass (B) keeps for its weight-gradient pass (W) when a
 * zero-bubble pipeline runs them apart (Qi et al. 2024, "Zero Bubble Pipeline Parallelism",
 * §2: W needs each matmul's input and its output's gradient), bytes for one micro-batch: the
 * inputs xn1, xn2 (sbh each, a t-th with sp: W gathers them again), attn_out (sbh/t) and act
 * (sbf/t), and the gradients of the MLP's and the attention's outputs (sbh each, every row),
 * of q, k, v (sb (h + 2kv)/t) and of gate and up (2 sbf/t): p [2 sbh(/t) + 2 sbh + sb(2h +
 * 2kv)/t + 3 sbf/t] (gelu: 2 sbf/t, fc1's output gradient and fc2's input), s the tokens a GPU
 * holds (s/cp). The norms' and the ends' weight gradients are computed with B and keep
 * nothing. What src/model keeps (gpt_part_backward_input), to the byte. */
double activ_wgrad_bytes(const struct model_shape *m, const struct activ_config *c);

/* The most one micro-batch holds during such a B over n layers that kept `saved` bytes (the
 * policy's, with the ends'): B books each layer's W tensors W as the layer's backward begins,
 * after the layer's recomputation, and frees the layer's list after it, from the top layer
 * down (the head's kept tensors freed first). At layer l (0-based, others' lists still held):
 *   none, selective   (l + 1) S + r + (n - l) W      S = L (none) or L - core, r = core
 *                                                    (selective: the layer's core, back)
 *   every:K           j X + (l - a + 1) L + (n - l) W   in segment j from layer a
 * and at the start, saved; the most of these. */
double activ_split_peak(const struct model_shape *m, const struct activ_config *c,
                        const struct ckpt_policy *pol, int n, double saved);

/* The forward FLOPs the policy recomputes in the backward pass, for n layers and one
 * micro-batch, given one layer's forward FLOPs on this GPU: none 0; full, every:K and sqrt
 * recompute every layer once (n x layer_forward_flops, about a third more compute: 8 instead
 * of 6 FLOPs per parameter and token); selective recomputes, eager, the scores QK^T, 2bs^2h/t
 * (P x V is kept), and flash the attention's forward, QK^T and P x V, 4bs^2h/t (with cp, a
 * GPU's s/cp queries against all s keys). */
double activ_recompute_flops(const struct model_shape *m, const struct activ_config *c,
                             const struct ckpt_policy *pol, int n, double layer_forward_flops);

#endif
