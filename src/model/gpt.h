/* The tiny GPT: the synthetic-7b's architecture at a size a CPU trains in seconds.
 *
 * tokens -> embedding E[V, d] -> L x { RMSNorm -> causal multi-head attention with RoPE ->
 * residual -> RMSNorm -> SwiGLU MLP -> residual } -> RMSNorm -> logits = h E^T -> mean
 * cross-entropy. No biases; weights row-major [out, in] like PyTorch's nn.Linear.
 *
 * All parameters live in one flat fp32 buffer, in this order (gradients, master weights and
 * Adam moments use the same layout, so a tensor is an (offset, shape) view and a shard is a
 * range):
 *     embedding [V, d]
 *     per layer l: attn_norm [d], wq [d, d], wk [d, d], wv [d, d], wo [d, d],
 *                  mlp_norm [d], w_gate [F, d], w_up [F, d], w_down [d, F]
 *     final_norm [d]
 * A mixture-of-experts layer (struct gpt_moe: layer l when l % every == 0) holds, after
 * mlp_norm, router [E, d], then each expert's w_gate [F, d], w_up [F, d], w_down [d, F], expert
 * after expert (an expert, and a range of experts, is a range of the buffer). Its feed-forward
 * is the experts' (model/moe.h routes each token to k of them): out = x + Σ_j g_j
 * expert_j(RMSNorm(x)), plus the load-balancing loss added to the model's loss.
 *
 * Precision: in bf16/fp16 the working weights are the master weights rounded to the format,
 * every activation and gradient is rounded to the format where it is produced, matmul operands
 * are therefore in the format and sgemm accumulates in fp32, as tensor cores do. Activations
 * kept for the backward pass are stored in the format's real width (2 bytes in bf16/fp16).
 *
 * Every buffer is allocated once, in gpt_new, through a small allocator seam (struct
 * gpt_alloc), so a device's memory ledger accounts for every byte.
 *
 * How memory is accounted, and why. A device's ledger must hold every byte the run really
 * allocates, and its activations category must still draw the sawtooth of the forward pass
 * filling memory and the backward pass emptying it, peaking exactly where the calculator
 * (calc/activ.h) says. So the model makes four allocations (GPT_BUFFERS): weights, gradients,
 * the activation arena and the fp32 workspace, and carves its buffers out of them. The arena is
 * allocated whole before the first step, like the segment PyTorch's caching allocator reserves;
 * it holds every tensor the forward pass keeps for the backward pass, the recomputed ones
 * included (selective: a slot for the recomputed probabilities), so it is at least the policy's
 * peak (equal for none, larger when segments share a pool). As each kept tensor comes to life
 * (forward, or recomputation) its bytes are charged (delta > 0) under GPT_MEM_ACTIVATIONS, and
 * released (delta < 0) when the backward pass is done with it: PyTorch's allocated bytes inside
 * the reserved ones. The device (par/run.c's ledger seam) allocates the arena as ledger memory of
 * category "reserved" and each charge moves bytes from reserved to activations and back
 * (ledger_move): the ledger's total is every byte the run holds, so the capacity check sees all
 * of it before the first step and nothing can run out of memory inside the step loop, while the
 * activations category is the sawtooth. The fp32 workspace is what a GPU keeps in registers and
 * cuBLAS workspace; the CPU emulation really holds it, so it is accounted too, as "workspace". */
#ifndef SCALELAB_MODEL_GPT_H
#define SCALELAB_MODEL_GPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/ckpt.h"
#include "num/fp.h"
#include "num/fp8.h"

struct error;

/* Mixture of experts (model/moe.h says how tokens are routed). experts 0: every layer's
 * feed-forward is the dense SwiGLU. */
struct gpt_moe {
    int experts;            /* E, 2 to GPT_MAX_EXPERTS (0: none) */
    int top_k;              /* k, 1 or 2: the experts each token goes to */
    int every;              /* layer l has experts when l % every == 0 (Megatron-LM's
                               moe_layer_freq: 1 every layer, 2 every other from layer 0) */
    double capacity_factor; /* C: an expert takes at most ceil(C k N / E) of N tokens; 0 none */
    double aux_coef;        /* α of the load-balancing loss (Switch Transformer's 0.01) */
};

#define GPT_MAX_EXPERTS 64

/* FP8 training (num/fp8.h's recipes; model/gpt_fp8.c): with a recipe, each dense layer's seven
 * linear layers (wq, wk, wv, wo, w_gate, w_up, w_down) run their three GEMMs on inputs
 * quantised to fp8 with their scales: fprop y = x W^T, dgrad dx = dy W, wgrad dW = dy^T x, each
 * accumulating in fp32 (sgemm) over the dequantised values. The rest of the model (the
 * embedding and the tied head, norms, attention's core, SwiGLU, the loss) and its storage run
 * in the model's format (bf16), and the optimizer keeps fp32 master weights, as TE's layers
 * inside a bf16 model do. Under the block recipe activations and gradients have a scale per
 * 1 x block tile along the GEMM's inner dimension (fprop and dgrad: a row's; wgrad, whose
 * inner dimension is the tokens: a column's, block x 1) and weights per block x block. */
struct gpt_fp8 {
    enum fp8_recipe recipe; /* FP8_OFF: none */
    int history;            /* delayed: amaxes kept (TE's 1024) */
    int margin;             /* delayed: scale = max / amax / 2^margin (TE's 0) */
    int block;              /* block: the tile's width B */
    bool pow2;              /* power-of-two scales (s_inv exact) */
};
/* The linear layers fp8 covers, in a layer's order: GPT_WQ + i for i < 4, GPT_W_GATE + i - 4
 * after (gpt_linear_kind). */
#define GPT_LINEARS 7
enum gpt_kind gpt_linear_kind(int i);

struct gpt_config {
    int vocab;  /* V */
    int d;      /* d_model */
    int layers; /* L */
    int heads;  /* H; head_dim = d / H, even (RoPE rotates pairs) */
    int ffn;    /* F, the SwiGLU hidden width (each expert's too) */
    int seq;    /* T, the context length trained on */
    struct gpt_moe moe;
    struct gpt_fp8 fp8; /* zero: no fp8 (how it trains, not its shape: the trainer sets it) */
};

/* Checks the shape (positive sizes, d divisible by heads, even head_dim; experts 2 to
 * GPT_MAX_EXPERTS, top_k 1 or 2 and at most the experts, every >= 1, capacity and
 * coefficient >= 0); 0 or ERR_INVAL. */
int gpt_config_check(const struct gpt_config *c, struct error *e);
/* Number of parameters: V d + L (2d + 4d^2 + 3dF) + d; a layer with experts has E (3dF) + E d
 * (its router) where a dense one has 3dF. */
size_t gpt_param_count(const struct gpt_config *c);
/* Whether layer l's feed-forward is a mixture of experts; how many layers are. */
bool gpt_layer_moe(const struct gpt_config *c, int l);
int gpt_moe_layers(const struct gpt_config *c);
/* Parameters a token uses: the dense count with each expert layer's k experts and its router
 * in place of its E experts (what a step's FLOPs are per token). */
size_t gpt_active_param_count(const struct gpt_config *c);

/* The named tensors of the flat buffer, in order: 2 + 9 L of them. */
enum gpt_kind {
    GPT_EMBEDDING,
    GPT_ATTN_NORM,
    GPT_WQ,
    GPT_WK,
    GPT_WV,
    GPT_WO,
    GPT_MLP_NORM,
    GPT_W_GATE,
    GPT_W_UP,
    GPT_W_DOWN,
    GPT_ROUTER, /* a mixture-of-experts layer's [E, d] */
    GPT_FINAL_NORM,
    GPT_KINDS
};

struct gpt_tensor {
    enum gpt_kind kind;
    int layer;      /* -1 for the embedding and the final norm */
    size_t offset;  /* in elements */
    int rows, cols; /* a vector has rows 1 */
    int expert;     /* an expert's w_gate, w_up, w_down: its number; else -1 */
};

/* 2 + 9 L, and 3E - 2 more for each layer with experts. */
size_t gpt_tensor_count(const struct gpt_config *c);
/* Tensor i (0 <= i < gpt_tensor_count) of the documented order. */
struct gpt_tensor gpt_tensor_at(const struct gpt_config *c, size_t i);
/* "embedding", "wq", ... */
const char *gpt_kind_name(enum gpt_kind k);

/* Gradient checkpointing (base/ckpt.h's policies). Segments of k consecutive layers keep only
 * the segment's input and recompute the rest in the backward pass (full: k = 1; every:K: k =
 * K, Megatron's "uniform" method; sqrt: k = ceil(sqrt(L)) of the part's L layers, Chen et al.
 * 2016: ckpt_segment). Selective (Korthikanti et al. 2022) keeps everything but attention's
 * softmax probabilities and recomputes QK^T and the softmax. */

/* Memory categories of the run's buffers. */
enum gpt_mem {
    GPT_MEM_WEIGHTS,     /* working weights (the fp32 parameters in fp32 training) */
    GPT_MEM_GRADS,       /* gradients */
    GPT_MEM_MASTER,      /* fp32 master weights (bf16/fp16 training; the trainer's) */
    GPT_MEM_OPTIMIZER,   /* Adam's moments (the trainer's) */
    GPT_MEM_ACTIVATIONS, /* kept tensors alive now, inside the arena: charged, not allocated */
    GPT_MEM_ARENA,       /* the arena holding every kept tensor: allocated once */
    GPT_MEM_WORKSPACE,   /* fp32 compute buffers of one layer, the logits, RoPE tables; the
                            trainer's batch */
    GPT_MEM_COMM,        /* data parallelism's buckets and gathered weights (par/dp.h) */
    GPT_MEM_KINDS
};

/* The allocator seam. alloc returns zeroed, touched memory (64-byte aligned) or NULL; free
 * releases it. The model makes one allocation per category (GPT_MEM_WEIGHTS, _GRADS, _ARENA,
 * _WORKSPACE: GPT_BUFFERS of them), in gpt_new, and carves its buffers out of them; the trainer
 * adds its own. charge may be NULL. A NULL seam means the host's memory and no charging.
 * How the bytes are accounted: the file's header. */
#define GPT_BUFFERS 4

/* Where a step stands, for a strategy that moves data around the model's work (par/): a
 * ZeRO-3 device gathers a unit's weights before it runs and releases them after; a
 * data-parallel one starts reducing a bucket once its gradients are complete. Units are the
 * layers 0..L-1, GPT_UNIT_EMBED (the embedding lookup at the start) and GPT_UNIT_HEAD (the
 * final norm and the tied embedding at the end). In a step, in order:
 *     FORWARD(EMBED) lookup FORWARD_DONE(EMBED)
 *     for each layer l:  FORWARD(l) forward FORWARD_DONE(l)
 *     FORWARD(HEAD) head forward, loss, head backward FORWARD_DONE(HEAD) GRADS(HEAD)
 *     for each layer l, last first: BACKWARD(l) [recompute] backward GRADS(l)
 *     GRADS(EMBED)
 * GRADS(HEAD) completes the final norm's gradients, GRADS(EMBED) the embedding's (the tied
 * head added its share first). With segments of K > 1 layers (every:K, sqrt) the
 * recomputation of a segment's layers runs between FORWARD(l) and FORWARD_DONE(l) before
 * their backward; with K = 1 (full) a layer's recomputation runs after its BACKWARD(l). */
enum gpt_hook { GPT_HOOK_FORWARD, GPT_HOOK_FORWARD_DONE, GPT_HOOK_BACKWARD, GPT_HOOK_GRADS };
#define GPT_UNIT_EMBED (-1)
#define GPT_UNIT_HEAD  (-2)

/* The reductions of tensor parallelism: the sum of partial activations or their gradients,
 * carried in the training format (the values are rounded to it already; each addition rounds
 * again, as a bf16 all-reduce does); and the cross-entropy's row statistics, in fp32. */
enum gpt_tp_op {
    GPT_TP_SUM,      /* every element: the group's sum */
    GPT_TP_SUM_FP32, /* the same in fp32 */
    GPT_TP_MAX_FP32, /* every element: the group's maximum, fp32 */
    GPT_TP_GATHER,   /* sequence parallelism: buf holds N rows in blocks of N / tp, rank r's
                        block r filled; after, every block (all-gather, training format) */
    GPT_TP_SCATTER,  /* buf holds partial sums of N rows; after, block r holds the group's
                        sum of it (reduce-scatter, training format), the others anything */
};

/* Expert parallelism's all-to-alls of an expert layer, as the seam's ep_alltoallv names them (and
 * the sends' phase in a run's events: a trace and the experts' panel read them), in the order
 * a step runs them: the forward pass's dispatch of the rows to their experts and combine of the
 * outputs, the backward pass's combine (the outputs' gradients to the experts) and dispatch
 * (the inputs' gradients back). A recomputed layer runs its forward pair again. */
#define GPT_ATTN_FORWARD     "attention forward"
#define GPT_ATTN_BACKWARD    "attention backward"
#define GPT_EP_DISPATCH      "expert dispatch"
#define GPT_EP_COMBINE       "expert combine"
#define GPT_EP_GRAD_COMBINE  "grad expert combine"
#define GPT_EP_GRAD_DISPATCH "grad expert dispatch"
/* Dropless expert parallelism's exchange of token counts before each dispatch. */
#define GPT_EP_COUNTS "expert counts"

struct gpt_alloc {
    void *(*alloc)(void *ctx, enum gpt_mem kind, size_t bytes, const char *what);
    void (*free)(void *ctx, enum gpt_mem kind, void *p, size_t bytes);
    void (*charge)(void *ctx, enum gpt_mem kind, long long delta);
    /* Told after each piece of work with its matmul FLOPs: "forward", "backward" or
     * "recompute" of a layer, "head forward" / "head backward" (layer -1), or a block of ring
     * attention's (GPT_ATTN_FORWARD, GPT_ATTN_BACKWARD: its scores', charged apart from the
     * layer's pass, between its ring step's post and wait); may be NULL. A simulated device
     * advances its clock by it. what is a static string. */
    void (*compute)(void *ctx, double flops, const char *what, int layer);
    /* Called at each point of a step listed above gpt_alloc; may be NULL. */
    void (*hook)(void *ctx, enum gpt_hook h, int unit);
    /* Tensor parallelism: buf (n floats, the same n on every GPU of the tensor-parallel group)
     * becomes the element-wise sum or maximum over the group (see enum gpt_tp_op). Needed when
     * the part's tp > 1; what names the tensor for the trace. */
    void (*tp_reduce)(void *ctx, float *buf, size_t n, enum gpt_tp_op op, const char *what);
    /* Context parallelism: one step of the ring (model/ringattn.h), in two halves so that a
     * GPU computes while the step's block travels (TransformerEngine's P2P order: post the
     * next block's send and receive, compute the current block, wait). cp_post takes the n
     * floats at send (send may change after it returns) for the next GPU of the
     * context-parallel group and posts the receive of the n floats the one before sends;
     * cp_wait waits for both and puts those n floats in recv (the same n on every GPU; the
     * values are in the training format already, so carrying them in it is exact). One step
     * is posted at a time. Needed when the part's cp > 1; what names the tensors. */
    void (*cp_post)(void *ctx, const float *send, size_t n, const char *what);
    void (*cp_wait)(void *ctx, float *recv, size_t n);
    /* Expert parallelism: an all-to-all over the expert-parallel group in blocks of given
     * sizes, block j of send (sendcounts[j] floats) for the group's GPU j and GPU j's block for
     * this GPU into recv's block j (recvcounts[j] floats, apart from send), blocks back to back
     * (the values are in the training format already); what is its phase (GPT_EP_DISPATCH,
     * ...). With a capacity the blocks are equal, the static shape's; dropless (no capacity
     * factor), the routing's, and before each dispatch the counts themselves (ep_counts): send
     * holds n 4-byte counts in ep equal blocks, block j for GPU j, and recv gets GPU j's block
     * for this GPU in its block j (what = GPT_EP_COUNTS). Needed when the part's ep > 1 (the
     * counts without a capacity factor). */
    void (*ep_alltoallv)(void *ctx, const float *send, const size_t *sendcounts, float *recv,
                         const size_t *recvcounts, const char *what);
    void (*ep_counts)(void *ctx, const int32_t *send, int32_t *recv, size_t n, const char *what);
    void *ctx;
    /* The fp32 parameters and gradients the CPU computes with are the run's weights and
     * gradients (false: fp32 training, unsharded) or the emulation's workspace (true: mixed
     * precision keeps 2-byte weights and gradients of its own, ZeRO keeps shards). */
    bool params_workspace, grads_workspace;
    /* The flat parameter and gradient buffers hold this many elements, at least the model's
     * count (0: exactly the count): data parallelism pads them to a multiple of the GPUs. */
    size_t padded;
};

/* Plain host memory, 64-byte aligned and zeroed: the allocator of a seam with no simulated
 * device behind it (a gpt_alloc whose alloc is NULL uses these). */
void *gpt_host_alloc(void *ctx, enum gpt_mem kind, size_t bytes, const char *what);
void gpt_host_free(void *ctx, enum gpt_mem kind, void *p, size_t bytes);

/* What to inject into the current step (for the lessons and the tests). */
struct gpt_inject {
    int nan_scores_layer; /* >= 0: a NaN in that layer's attention scores */
    int inf_grad_layer;   /* >= 0: an inf in that layer's MLP gradient (the backward pass) */
    float logit_factor;   /* logits multiplied by this (1: nothing), a bad batch */
};

/* The bytes gpt_new allocates (weights, gradients, arena, workspace), exactly, to refuse a
 * batch that cannot fit before trying; 0 with e set if the shape is bad. */
size_t gpt_estimate_bytes(const struct gpt_config *c, int batch, enum fp_format fmt,
                          const struct ckpt_policy *ckpt, struct error *e);
struct gpt_part;
/* The same for a part (NULL: the whole model): a context-parallel part holds seq / cp of each
 * sequence, and none of the whole sequence's s x s probabilities. */
size_t gpt_estimate_part_bytes(const struct gpt_config *c, int batch, enum fp_format fmt,
                               const struct ckpt_policy *ckpt, const struct gpt_part *part,
                               struct error *e);

/* Calls one micro-batch's forward and backward pass through a part (NULL: the whole model;
 * its B and W apart when part->wslots > 0) makes to the seam, from the shape alone: its compute and
 * charge hooks, and the communication the part asks of its strategies (tensor parallelism's
 * reductions by kind, context parallelism's ring steps, expert parallelism's all-to-alls). With
 * GPT_BUFFERS, what a trace of a run holds is known before it starts (par/strategy.h). */
struct gpt_calls {
    long compute, charge;
    long tp_sum;    /* GPT_TP_SUM, GPT_TP_SUM_FP32 and GPT_TP_MAX_FP32: all-reduces */
    long tp_half;   /* GPT_TP_GATHER and GPT_TP_SCATTER: half an all-reduce each */
    long cp_shift;  /* ring steps */
    long ep_a2a;    /* all-to-alls */
    long ep_counts; /* of them, dropless expert parallelism's of the counts */
};
struct gpt_part;
struct gpt_calls gpt_step_calls(const struct gpt_config *c, const struct ckpt_policy *ckpt,
                                const struct gpt_part *part);

/* A model is used by one thread at a time (its device's); separate models share nothing. */
struct gpt;

/* A part of the model, for pipeline parallelism: layers first..first+count-1, with the
 * embedding lookup (the first stage) and the head (the last: the final norm, and the tied
 * embedding's copy that computes the logits; Megatron-LM keeps one on each end and sums their
 * gradients), for `slots` micro-batches in flight at once (each keeps its own activations).
 * Its flat buffer holds, in the documented order, the embedding (with either end), its
 * layers, the final norm (with the head). The whole model is {0, layers, true, true, 1, 1, 0}.
 *
 * Tensor parallelism (Megatron-LM, Shoeybi et al. 2019): the part is rank tprank of tp. Its
 * layers hold heads / tp of the attention heads -- the rows of wq, wk, wv (column-parallel)
 * and the matching columns of wo (row-parallel) -- and ffn / tp of the MLP's width (rows of
 * w_gate and w_up, columns of w_down); the embedding holds vocab / tp rows (vocabulary-
 * parallel); the norms are whole on every rank. The forward sums the row-parallel outputs
 * over the group (the g operator, after wo and w_down, and the embedding's lookup, where
 * each rank has the rows of its vocabulary), the backward the column-parallel inputs'
 * gradients (the f operator, before the norms and at the head); the cross-entropy is computed
 * in parallel: the row maximum, the sum of exponentials and the target's logit reduced over
 * the group, so no GPU holds the whole logits. tp must divide the heads, the FFN width and
 * the vocabulary. Its flat buffer holds its shards in the documented order, each tensor's
 * shard contiguous ([rows / tp, cols] or [rows, cols / tp]).
 *
 * Sequence parallelism (Korthikanti et al. 2022, section 4.2.2): the residual stream between
 * the matmuls is split along the tokens, rank r holding rows [r N/tp, (r + 1) N/tp) of the N,
 * so the norms and residual adds run on a tp-th of the rows and keep a tp-th of their
 * activations. The all-reduces become an all-gather of the norm's output before the
 * column-parallel matmuls (gathered again in the backward pass for the weight gradients,
 * since only the shard is kept) and a reduce-scatter after the row-parallel ones; their
 * backward passes swap the two. The norm weights' gradients are then partial sums over each
 * rank's rows: the caller sums them over the group (gpt_part_norms gives where they are).
 * Activations handed between pipeline stages are the rank's rows only.
 *
 * Context parallelism (Ring Attention, Liu et al. 2023; model/ringattn.h): the part is rank
 * cprank of cp along the sequence. It holds T / cp of each sequence's tokens (ring_positions:
 * chunks cprank and 2 cp - 1 - cprank, or chunk cprank with cp_naive), so its batch is B x T/cp
 * tokens and each GPU of the group gets its own tokens and targets. Everything but attention
 * works on them alone (RoPE by their places in the sequence); attention passes the keys and
 * values round the group through the seam's cp_shift, with the online softmax, and a layer
 * keeps each query row's log-sum-exp (fp32) instead of the probabilities; its backward passes
 * the keys, values and their gradients round the ring. The weights are whole: their gradients
 * cover the part's tokens and are summed over the group by the caller. With cp 1, flash runs
 * that attention on the GPU's own block alone (a flash-style kernel: the log-sum-exp kept, no
 * probabilities); without it, cp 1 keeps the probabilities (eager attention). */
struct gpt_part {
    int first, count;
    bool embed, head;
    int slots;
    int tp, tprank; /* tp 0 or 1: no tensor parallelism */
    bool sp;        /* sequence parallelism (with tp > 1) */
    int cp, cprank; /* cp 0 or 1: no context parallelism */
    bool cp_naive;  /* cp: chunk cprank of cp, not chunks cprank and 2 cp - 1 - cprank */
    bool flash;     /* cp 1: the blockwise attention of cp > 1, on one block */
    int ep, eprank; /* ep 0 or 1: no expert parallelism (every expert on this GPU) */
    int wslots;     /* B and W apart: micro-batches kept for their weight gradients at once (0:
                       the backward pass is fused; gpt_part_backward_input) */
};

/* Expert parallelism (GShard, Lepikhin et al. 2020; Megatron-LM's expert model parallelism):
 * the part is rank eprank of ep GPUs that share each mixture-of-experts layer's E experts, E /
 * ep each (rank r experts r E/ep .. (r + 1) E/ep - 1); the router and everything else are
 * whole. Its flat buffer holds, in each expert layer, the router and then its own experts
 * only. Each GPU routes its own tokens over all E experts, with a capacity: the experts' rows
 * are the static [E, cap, d] shape, expert e's from e cap, so the rows bound for GPU j's
 * experts are block j of ep equal blocks. The forward pass sends them there (dispatch: an
 * all-to-all, the seam's ep_alltoallv in equal blocks), each GPU runs its experts on the ep x
 * E/ep x cap rows it received, padding included, and sends the outputs back (combine, the same
 * all-to-all); the backward pass sends the outputs' gradients to the experts and the inputs'
 * gradients back.
 * The experts' weight gradients then cover every GPU's tokens routed to them; the caller sums
 * them over the GPUs holding the same experts (par/layout.h's expert gradient group).
 *
 * Without a capacity factor it is dropless (Megatron-Core's default, its all-to-all token
 * dispatcher, MoEAlltoAllTokenDispatcher in megatron/core/transformer/moe/token_dispatcher.py:
 * preprocess counts each rank's tokens per expert and gathers them over the expert group, the
 * tokens then go in an all-to-all of those sizes, input_splits and output_splits, and are sorted
 * by local expert): a GPU routes its n tokens' k n choices packed expert by expert (no drop, no
 * padding), so the rows for GPU j's experts are one run of them; it sends each GPU its counts for
 * that GPU's E/ep experts (an all-to-all of the counts, the seam's ep_counts, where Megatron
 * gathers all of them: a GPU needs only its own experts'; kept with the routing for the backward
 * pass), then the rows themselves (ep_alltoallv), and receives from each GPU j, for each of its
 * experts e, the rows GPU j routed there: block j E/ep + e of the rows it runs (source by
 * source, not sorted by expert: each block runs by itself), of the size GPU j said. The
 * outputs go back the same way, and the backward pass as with a capacity. At most ep n min(k,
 * E/ep) rows arrive (every token of the group routed to this GPU: base/experts.h's
 * experts_rows_held), what its buffers hold. */

/* Parameters of a part (NULL: the whole model): the embedding when it holds either end, its
 * layers, the final norm with the head, each sharded tensor's shard. */
size_t gpt_part_param_count(const struct gpt_config *c, const struct gpt_part *p);
/* The ranges of a part's flat buffer holding experts (each expert layer's, off and len
 * elements), in order; returns how many, at most max written. */
size_t gpt_part_experts(const struct gpt_config *c, const struct gpt_part *p, size_t (*r)[2],
                        size_t max);
/* The kind of tensor element i of the whole model's flat buffer belongs to. */
enum gpt_kind gpt_kind_at(const struct gpt_config *c, size_t i);
/* Where element i of a part's flat buffer is in the whole model's (SIZE_MAX past its end). */
size_t gpt_part_whole_index(const struct gpt_config *c, const struct gpt_part *p, size_t i);
/* A part's elements out of the whole model's buffer: mine[i] = whole[gpt_part_whole_index(c,
 * p, i)] for each of its gpt_part_param_count elements, copied a run at a time. */
void gpt_part_gather(const struct gpt_config *c, const struct gpt_part *p, const float *whole,
                     float *mine);
/* Rows of the residual stream a part holds for a micro-batch of `batch` sequences: batch x seq
 * (seq / cp of each under context parallelism), or a tp-th of them under sequence parallelism
 * (what goes between pipeline stages). */
size_t gpt_part_rows(const struct gpt_config *c, const struct gpt_part *p, int batch);
/* The offsets in a part's flat buffer of its norm weights (d elements each: the layers'
 * attn_norm and mlp_norm, and the final norm with the head), in order; returns how many, at
 * most max written. Under tensor parallelism they are whole on every rank. */
size_t gpt_part_norms(const struct gpt_config *c, const struct gpt_part *p, size_t *off,
                      size_t max);

/* A model for batches of `batch` sequences. Parameters start at zero: call gpt_init_params
 * or fill gpt_params(). 0, ERR_INVAL (bad shape) or ERR_NOMEM. */
int gpt_new(struct gpt **out, const struct gpt_config *c, int batch, enum fp_format fmt,
            const struct ckpt_policy *ckpt, const struct gpt_alloc *alloc, struct error *e);
void gpt_free(struct gpt *g);
/* The same for a part (NULL: the whole model); `batch` is a micro-batch. */
int gpt_new_part(struct gpt **out, const struct gpt_config *c, int batch, enum fp_format fmt,
                 const struct ckpt_policy *ckpt, const struct gpt_alloc *alloc,
                 const struct gpt_part *part, struct error *e);

/* Initialisation (GPT-2's): every matrix ~ normal(0, 0.02), the residual projections wo and
 * w_down ~ normal(0, 0.02 / sqrt(2 L)), norm weights 1. Seeded; writes master (fp32, nparams)
 * in the documented order. */
void gpt_init_params(const struct gpt_config *c, uint64_t seed, float *master);

const struct gpt_config *gpt_config(const struct gpt *g);
size_t gpt_nparams(const struct gpt *g);
/* The working weights the forward pass reads; gpt_set_weights rounds master into them. */
float *gpt_params(struct gpt *g);
void gpt_set_weights(struct gpt *g, const float *master);
/* The gradients of the last gpt_step (times its loss scale), rounded to the format. */
float *gpt_grads(struct gpt *g);

/* The number of tokens the loss is averaged over for the gradients: the batch's (the
 * default), or a global batch's when this model computes one share of it (data parallelism:
 * the shares' gradients then add up to the global mean's). */
void gpt_set_loss_tokens(struct gpt *g, double tokens);

/* One forward and backward pass on tokens/targets (batch x seq int32 in [0, V)). The loss is
 * the mean cross-entropy over this batch; the backward pass starts from d(loss * loss_scale)
 * (over gpt_set_loss_tokens' count). Gradients are overwritten. Returns the loss (NaN or inf
 * when the forward went non-finite). */
double gpt_step(struct gpt *g, const int32_t *tokens, const int32_t *targets, float loss_scale,
                const struct gpt_inject *inj);
/* A part's step, micro-batch by micro-batch (any order a pipeline schedule gives, each
 * micro-batch's backward after its forward, in slot `slot` < part.slots):
 *   gpt_part_begin starts a step (the diagnosis and underflow counts start again);
 *   gpt_part_forward takes the tokens (a part with the embedding) or the activations `in`
 *   (batch x seq x d in the training format: what the stage before sent), runs its layers,
 *   and returns the micro-batch's mean loss (a part with the head) or writes `out` (what goes
 *   to the next stage);
 *   gpt_part_backward starts from the loss (with the head) or from `dout` (the gradient the
 *   next stage sent back), and writes `din` (without the embedding: what goes back) and the
 *   weight gradients, which add to the buffer's when `accumulate` (every micro-batch but the
 *   first). A part with the head but no embedding holds only the head's share of the tied
 *   embedding's gradient. The loss over gpt_set_loss_tokens' count (all micro-batches'). */
void gpt_part_begin(struct gpt *g);
double gpt_part_forward(struct gpt *g, int slot, const int32_t *tokens, const void *in, void *out,
                        const int32_t *targets, const struct gpt_inject *inj);
void gpt_part_backward(struct gpt *g, int slot, const int32_t *tokens, const int32_t *targets,
                       float loss_scale, const void *dout, void *din, bool accumulate,
                       const struct gpt_inject *inj);

/* The backward pass in two, as a zero-bubble pipeline runs it (Qi et al. 2024, "Zero Bubble
 * Pipeline Parallelism", §2: B, the input's gradient, is on the critical path between stages;
 * W, the weights', is not and may run later). gpt_part_backward_input is gpt_part_backward but
 * for each layer's seven matmul weight gradients: it keeps their operands (the matmuls' inputs
 * and their outputs' gradients, W_COUNT tensors a layer, gpt_act_sizes' wgrads bytes) in weight
 * slot `wslot` < part.wslots and writes `din` as the fused pass does; the norms' and the ends'
 * weight gradients (a vector over the rows, the embedding's rows, the head's share of the tied
 * embedding) come with it, as the input's gradient runs through them anyway.
 * gpt_part_backward_weights then computes the layers' weight gradients from that slot, adding to
 * the buffer's when `accumulate`. B then W, micro-batch by micro-batch in the same order, gives
 * the fused pass's gradients bit for bit. A layer's kept bytes are charged as activations as
 * its B begins (before its own kept tensors are released) and released as W uses them. A layer's
 * gradients are complete after W: the GRADS hooks (the ends' too, in the fused order) fire in W.
 * Needs part.wslots > 0, so a model without experts. */
void gpt_part_backward_input(struct gpt *g, int slot, int wslot, const int32_t *tokens,
                             const int32_t *targets, float loss_scale, const void *dout, void *din,
                             bool accumulate, const struct gpt_inject *inj);
void gpt_part_backward_weights(struct gpt *g, int wslot, bool accumulate);

/* The forward pass only (the loss). */
double gpt_forward(struct gpt *g, const int32_t *tokens, const int32_t *targets,
                   const struct gpt_inject *inj);

/* Context parallelism: the attention scores the ring's blocks computed since the step began,
 * forward, backward and recomputed passes (model/ringattn.h: the rectangles the causal mask
 * leaves work in, per sequence and head); 0 without it. What the balanced split evens out. */
uint64_t gpt_ring_scores(const struct gpt *g);

/* FP8 training: what the last step's quantisations did, per linear layer of the model's
 * (GPT_LINEARS, summed over the part's layers) and input (num/fp8.h's roles: x and w counted
 * in fprop, dy in dgrad; wgrad's quantisations of the same tensors are not counted again),
 * added into out (amax the largest, with its scale). Nothing without a recipe. */
void gpt_fp8_stats(const struct gpt *g, struct fp8_stats out[GPT_LINEARS][FP8_ROLES]);
/* The same summed over every linear layer, per input. */
void gpt_fp8_totals(const struct gpt *g, struct fp8_stats out[FP8_ROLES]);

/* Diagnosis of the last step. */
struct gpt_diag {
    /* The first tensor, in the order computed, holding a NaN or inf ("" if none), e.g.
     * "layer 2 attn scores" or "layer 3 grad mlp hidden". */
    char nonfinite[48];
    bool nonfinite_forward; /* it appeared in the forward pass */
    /* Weight-gradient elements, per layer, nonzero in fp32 that rounded to zero in the format
     * (index L: the embedding and final norm). Sized layers + 1. */
    const uint64_t *underflow;
    uint64_t underflow_total, grad_elements;
    /* Mixture of experts, the last forward pass's routing over its expert layers: the
     * load-balancing loss (in the returned loss), the k N choices routed per layer and those
     * dropped past a capacity (all layers), and per expert layer (in order) and expert the
     * choices it got (load, before capacity) and the tokens it took (kept). NULL without. */
    double aux_loss;
    uint64_t routed, dropped;
    const int32_t *expert_load, *expert_kept; /* [moe layers][E] */
    /* Per expert layer, the rows its experts held (what their kept tensors are charged: the
     * static shape's, or dropless the step's own counts) in the pass whose activations reached
     * the peak gpt_mem_bytes gives (NULL without experts). */
    const uint32_t *expert_rows_at_peak;
};
void gpt_diag(const struct gpt *g, struct gpt_diag *out);

/* Bytes of the model's buffers by category, as allocated; for GPT_MEM_ACTIVATIONS, the peak
 * of the charged bytes since gpt_new (they live in GPT_MEM_ARENA). */
size_t gpt_mem_bytes(const struct gpt *g, enum gpt_mem kind);
/* Activation bytes charged now (0 between steps). */
size_t gpt_act_live(const struct gpt *g);
/* Bytes of one layer's full list of kept tensors, of its input alone, of the attention core
 * (the probabilities), of the ends (final norm input, its rstd and output, fp32 probs), and
 * what a layer's B keeps for its W (gpt_part_backward_input). */
struct gpt_act_sizes {
    size_t layer, input, core, ends, wgrads;
};
struct gpt_act_sizes gpt_act_sizes(const struct gpt *g);
/* Matmul FLOPs of one step: forward, backward, and recomputation for checkpointing. */
struct gpt_flops {
    double forward, backward, recompute;
};
struct gpt_flops gpt_flops(const struct gpt *g);
/* The same from a shape, a batch and a policy, before any model exists: the one count that
 * train's summary, the bench and the window use. */
struct gpt_flops gpt_step_flops(const struct gpt_config *c, int batch,
                                const struct ckpt_policy *ckpt);

#endif
