/* The tiny GPT's insides, private to src/model: struct gpt (with its reading guide), the
 * tensors a layer keeps, and the helpers both of its files use: gpt.c builds a model (its
 * shape, parts, buffers and counts), gpt_step.c runs a step (the kernels, a layer, the passes). */
#ifndef SCALELAB_MODEL_GPT_IMPL_H
#define SCALELAB_MODEL_GPT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/ckpt.h"
#include "base/experts.h"
#include "model/gpt.h"
#include "model/moe.h"
#include "num/fp.h"

/* Where one layer's tensors are in a flat buffer (the weights, or the gradients). A layer
 * with experts has router and experts (expert e's w_gate, w_up, w_down from experts + 3 e F d)
 * in place of w_gate, w_up and w_down (NULL). */
struct layer_ptrs {
    float *attn_norm, *wq, *wk, *wv, *wo, *mlp_norm, *w_gate, *w_up, *w_down;
    float *router, *experts;
};

/* The tensors a layer keeps for its backward pass. */
enum {
    A_X,
    A_RSTD1,
    A_XN1,
    A_Q,
    A_K,
    A_V,
    A_P,
    A_ATT,
    A_XM,
    A_RSTD2,
    A_XN2,
    A_G,
    A_U,
    A_H,
    /* a layer with experts: G, U and H are the experts' rows, and it keeps the router's
     * probabilities (fp32), the routing (choices, rows, gates, each expert's rows: 4-byte
     * words), the experts' inputs and their outputs (for the gates' gradients) */
    A_RP,
    A_ROUTE,
    A_XE,
    A_YE,
    A_COUNT
};
/* The ends keep the final norm's input, 1 / rms and output, and the fp32 probabilities. */
enum { H_X, H_RSTD, H_N, H_PROBS, H_COUNT };

/* What a layer's input-gradient pass (B) keeps for its weight-gradient pass (W), when the two
 * run apart (model/gpt.h's gpt_part_backward_input): the inputs of its seven matmuls (xn1 and
 * xn2 this rank's rows, gathered again by W under sequence parallelism; the attention output;
 * SwiGLU's h) and the gradients of their outputs (d out and d xm over every row, d gate, d up,
 * dq, dk before RoPE is turned back, dv), each in the format's width: every one of them is
 * already rounded to it, so W computes from the very bits the fused pass had. */
enum { W_XN1, W_ATT, W_XN2, W_H, W_DOUT, W_DXM, W_DG, W_DU, W_DQ, W_DK, W_DV, W_COUNT };

/* The fp32 workspace a step computes in: one layer's tensors (ws), the residual stream and the
 * gradients; w is where the layer at hand has its tensors: the workspace, or in fp32 its kept
 * ones in place in its saved set (bind). */
struct gpt_scratch {
    float *ws[A_COUNT], *w[A_COUNT], *tmp, *res, *dres, *dxn, *dq, *dk, *dv, *datt, *dh, *dg, *du;
    float *dscores; /* the scores' gradients of a head's T x T block; with the ring, a block's
                       scores and theirs */
    float *hx, *hn, *hrstd, *logits;
    float *rowmax, *rowsum, *rowtgt; /* tensor parallelism: the cross-entropy's row statistics */
    float *xg, *dg_full; /* sequence parallelism: a norm's output and a gradient, gathered */
    double *colsum;
    float *rope_cos, *rope_sin; /* [T, hd / 2] */
};

/* Context parallelism's state (gpt_ring.c): this GPU's place cpr of cp, the places of the tokens
 * it holds (pos) and of the ring's block at hand (kpos), the blocks travelling round (kv[2]:
 * keys, values and their gradients), each query row's running sum (l), and the scores its
 * blocks computed. cp 1: none, or with flash attention the same kernel on the GPU's own
 * block (blocks). */
struct gpt_ring {
    int cp, cpr;
    bool blocks; /* attention by blocks (model/ringattn.h): cp > 1, or flash at cp 1 */
    int *pos, *kpos;
    float *kv[2], *l;
    uint64_t scores; /* the scores the ring's blocks computed since the step began */
};

/* A mixture of experts' state (model/moe.h): this GPU's experts (E / ep per layer, from rank
 * epr's), the rows of the experts' buffer (0: a dense model), dropless expert parallelism's
 * block sizes of the layer at hand (from its kept routing), the routing of the layer at hand
 * (route: its kept table, in the saved set or in route_ws), the router's logits and their
 * gradient, the experts' output and input gradients, the gates' gradients; the last forward
 * pass's figures, per expert layer where it says. */
struct gpt_experts {
    int ep, epr;
    bool dropless; /* ep > 1 without a capacity: blocks of the routing's sizes (model/gpt.h) */
    size_t rows;   /* base/experts.h's experts_rows_held: the most its experts run on */
    size_t *scount, *rcount; /* a layer's elements to and from each GPU of the group: the static
                                shape's equal blocks, or dropless the routing's */
    void *route, *route_ws;
    float *zlog, *dye, *dxe, *dgate;
    double aux, aux_scale; /* the loss's load-balancing part; its weight in the backward pass */
    uint64_t routed, dropped;
    int32_t *load, *kept; /* [expert layers][E] */
    /* [expert layers]: the rows each layer's experts ran on in its last forward pass (the
     * static shape's, or dropless the step's own counts: what its kept tensors are charged),
     * and their values when the charged activations last reached a new peak */
    uint32_t *held, *held_peak;
};

/* FP8 training's state (gpt_fp8.c): for each linear layer (GPT_LINEARS) of each layer of the
 * part and each input (FP8_ROLES), the step's statistics and, under the delayed recipe, the
 * amax history and the scale it gives (the histories' values in the workspace); the two
 * operand buffers the GEMMs read their dequantised inputs from (qa: x or dy, qb: w, or x in
 * wgrad). */
struct gpt_fp8_state {
    struct fp8_stats *stats;  /* [count][GPT_LINEARS][FP8_ROLES] */
    struct fp8_history *hist; /* the same places; NULL but under the delayed recipe */
    float *qa, *qb;
    size_t qa_elems, qb_elems;
};

/* A reading guide to struct gpt: one model, or one part of one (model/gpt.h's parts: a
 * pipeline stage's layers and ends, a tensor-parallel rank's shards), over one micro-batch of B
 * sequences of T = c.seq tokens, N = B T rows; under context parallelism (ring.cp GPUs) T =
 * c.seq / cp of each sequence's tokens, at places ring.pos[0..T) of it, and the attention runs
 * as a ring (gpt_ring.c): the probabilities' slot A_P holds each query row's log-sum-exp (fp32).
 * Its members come in groups by job: the model (its shape, part, widths, precision, parameters
 * and kept tensors), its scratch (s), the ring's state (ring), the experts' (moe), the step's
 * diagnosis and the buffers' blocks.
 *
 * Widths. The whole model has d = c.d, H = c.heads heads of hd = d / H, F = c.ffn and V =
 * c.vocab. A tensor-parallel rank tr of tp holds hl = H / tp heads (its q, k, v and attention
 * output are dl = hl hd wide), fl = F / tp of the SwiGLU width and vl = V / tp vocabulary rows
 * from row v0: the column-parallel matmuls' rows, the row-parallel ones' columns. With tp 1
 * these are the whole model's (hl = H, dl = d, fl = F, vl = V, v0 = 0).
 *
 * Rows. The residual stream (s.res, s.dres, the norms' inputs, outputs and 1 / rms) holds nl = N
 * rows, or under sequence parallelism (sp) this rank's nl = N / tp of them; s.xg and s.dg_full
 * hold a norm's output and a gradient gathered back to all N rows for the column-parallel
 * matmuls. The attention, the MLP and the logits always work on all N rows.
 *
 * Saved or recomputed. The forward pass computes a layer in the fp32 workspace s.ws (s.w points
 * at where the layer at hand has its tensors: s.ws, or in fp32 its saved set itself, bind) and
 * keeps the A_COUNT tensors its backward needs in saved[slot][layer], in the format's width
 * (esize bytes; the 1 / rms vectors and the routing in fp32 or 4-byte words). A checkpointed
 * layer keeps only its segment's input (segin) and the backward pass rebuilds its sets in pool
 * before running back through it (seg layers a segment; ckpt says which policy); selective
 * keeps everything but the softmax probabilities, recomputed into pslot. The ends keep H_COUNT
 * tensors in head[slot]. Each kept tensor is charged to the seam as it comes to life and
 * released when its backward is done: live and peak count those bytes, inside the arena that
 * holds them all (block, mem). */
struct gpt {
    /* the model */
    struct gpt_config c;
    struct gpt_part part; /* the layers and ends this model holds, its micro-batch slots */
    int B, N, hd, T;      /* T: tokens per sequence held, c.seq / ring.cp */
    /* tensor parallelism: tp ranks, this one tr; its heads hl (width dl = hl hd), FFN width
     * fl and vocabulary rows vl, from row v0 (tp 1: the whole model's) */
    int tp, tr, hl, dl, fl, vl, v0;
    bool sp; /* sequence parallelism: the residual stream holds nl = N / tp of the rows */
    int nl;
    enum fp_format fmt;
    size_t nparams, nalloc; /* the parameters; the flat buffers' elements (padded) */
    float *params, *grads;
    struct layer_ptrs *lw, *lg; /* each layer's tensors in the weights and the gradients */
    double loss_tokens; /* the gradients are of the loss summed over this many tokens' mean */
    bool accumulate;    /* the weight gradients add into the buffer (micro-batches) */

    /* its kept tensors */
    struct ckpt_policy ckpt;
    int seg, nseg;           /* segment length (0: not segmented); segments of the part */
    size_t esize;            /* bytes per stored activation element */
    void *(*saved)[A_COUNT]; /* [slots][L][A_COUNT]: each layer's saved set (NULL: not kept) */
    void *(*pool)[A_COUNT];  /* [seg][A_COUNT]: saved sets of a segment being recomputed */
    void **segin;            /* [slots][nseg]: each segment's input */
    void *pslot;             /* selective: the slot of the recomputed probabilities */
    void *(*head)[H_COUNT];  /* [slots]: the ends' kept tensors (a part with the head) */
    size_t layer_bytes, head_bytes; /* a dense layer's full list of kept tensors; the ends */
    size_t live, peak;              /* charged activation bytes */
    /* B and W apart: each layer's W_COUNT tensors per weight slot ([wslots][L]), the set the
     * layer at hand keeps into during a B (NULL: the fused backward), a layer's bytes */
    void *(*wsets)[W_COUNT];
    void **wkeep;
    size_t wset_bytes;
    int wslot; /* the weight slot of the B at hand; -1: a fused backward */

    struct gpt_scratch s;
    /* the compute of the pass at hand not charged yet (gpt_step.c's work): charged as it runs,
     * before each tensor-parallel communication that follows it, and at the pass's end */
    struct {
        double flops;
        const char *what;
        int layer;
    } work;
    struct gpt_ring ring;
    struct gpt_experts moe;
    struct gpt_fp8_state f8;

    /* diagnosis of the current step */
    char nonfinite[48];
    bool nonfinite_forward, in_forward;
    uint64_t *underflow; /* [L + 1] */
    uint64_t underflow_total;
    const struct gpt_inject *inj;

    /* One block per category, carved into the buffers: block NULL while sizing */
    struct gpt_alloc alloc;
    char *block[GPT_MEM_KINDS];
    size_t mem[GPT_MEM_KINDS], used[GPT_MEM_KINDS];
};

/* ------------------------------------------------------------------ shared helpers */

/* Layers with experts among 0..l-1. */
static inline int moe_before(const struct gpt_config *c, int l)
{
    return c->moe.experts > 0 ? (l + c->moe.every - 1) / c->moe.every : 0;
}

/* The sizes of a kept tensor: a dense layer's, one with experts, or the larger of the two
 * (the workspace and a segment's pool serve any layer). */
enum { SZ_DENSE, SZ_MOE, SZ_ANY };

static inline int sz_of(const struct gpt *g, int l)
{
    return gpt_layer_moe(&g->c, l) ? SZ_MOE : SZ_DENSE;
}

/* Elements of kept tensor a of a layer of size sz whose experts run on `rows` rows (a layer
 * with experts; the others ignore it). */
static inline size_t act_elems_at(const struct gpt *g, int a, int sz, size_t rows)
{
    size_t N = (size_t)g->N, d = (size_t)g->c.d, E = (size_t)g->c.moe.experts;
    rows = sz == SZ_MOE ? rows : N;
    if (a == A_P) /* this rank's heads; with cp, each row's log-sum-exp */
        return (size_t)g->B * g->hl * g->T * (g->ring.blocks ? 1 : g->T);
    if (a == A_G || a == A_U || a == A_H)
        return rows * (size_t)g->fl;
    if (a == A_Q || a == A_K || a == A_V || a == A_ATT)
        return N * (size_t)g->dl;
    if (a == A_RP)
        return sz == SZ_MOE ? N * E : 0;
    if (a == A_ROUTE) /* the routing's table (model/moe.h): words, not elements; dropless, the
                         counts received too */
        return sz == SZ_MOE ? moe_table_words(g->N, g->c.moe.top_k, g->c.moe.experts) +
                                  (g->moe.dropless ? E : 0)
                            : 0;
    if (a == A_XE || a == A_YE)
        return sz == SZ_MOE ? rows * d : 0;
    /* the residual stream's: a tp-th of the rows under sequence parallelism */
    if (a == A_RSTD1 || a == A_RSTD2)
        return (size_t)g->nl;
    return (size_t)g->nl * d;
}

/* Elements of kept tensor a at the most rows an expert layer holds (what the arena has room
 * for), or for any layer, the larger (the workspace and a segment's pool serve any layer). */
static inline size_t act_elems(const struct gpt *g, int a, int sz)
{
    if (sz == SZ_ANY) {
        size_t dense = act_elems(g, a, SZ_DENSE), moe = g->moe.rows ? act_elems(g, a, SZ_MOE) : 0;
        return dense > moe ? dense : moe;
    }
    return act_elems_at(g, a, sz, g->moe.rows);
}

/* Kept in fp32 (or 4-byte words) whatever the format: the RMSNorm statistics, the router's,
 * and with cp the log-sum-exp of the attention's rows. */
static inline bool act_fp32(const struct gpt *g, int a)
{
    return a == A_RSTD1 || a == A_RSTD2 || a == A_RP || a == A_ROUTE ||
           (a == A_P && g->ring.blocks);
}

/* Bytes of a kept tensor: the format's width, 4 for the fp32 ones. */
static inline size_t act_bytes(const struct gpt *g, int a, int sz)
{
    return act_elems(g, a, sz) * (act_fp32(g, a) ? 4 : g->esize);
}

/* The same of a layer whose experts hold `rows` rows: what it is charged. */
static inline size_t act_bytes_at(const struct gpt *g, int a, int sz, size_t rows)
{
    return act_elems_at(g, a, sz, rows) * (act_fp32(g, a) ? 4 : g->esize);
}

/* The rows layer l's experts hold in its last forward pass (0 without experts). They vary only
 * under dropless expert parallelism, which runs one micro-batch's forward and then its backward
 * (no pipeline: par/ep.c refuses --pp), so a layer's release books what its forward did; with
 * several micro-batches in flight they would have to come from each slot's kept counts. */
static inline size_t layer_rows(const struct gpt *g, int l)
{
    return gpt_layer_moe(&g->c, l) ? g->moe.held[moe_before(&g->c, l)] : 0;
}

/* Elements of a layer's tensor kept for its weight gradients (W_XN1, ...). */
static inline size_t wset_elems(const struct gpt *g, int w)
{
    size_t N = (size_t)g->N, d = (size_t)g->c.d;
    if (w == W_XN1 || w == W_XN2)
        return (size_t)g->nl * d;
    if (w == W_DOUT || w == W_DXM)
        return N * d;
    if (w == W_H || w == W_DG || w == W_DU)
        return N * (size_t)g->fl;
    return N * (size_t)g->dl; /* att, dq, dk, dv */
}

/* Bytes of layer l's full list of kept tensors, its experts' at the rows they hold. */
static inline size_t layer_bytes(const struct gpt *g, int l)
{
    size_t b = 0;
    for (int a = 0; a < A_COUNT; a++)
        b += act_bytes_at(g, a, sz_of(g, l), layer_rows(g, l));
    return b;
}

static inline void charge(struct gpt *g, long long delta)
{
    g->live = (size_t)((long long)g->live + delta);
    if (g->live > g->peak) {
        g->peak = g->live;
        if (g->moe.held)
            memcpy(g->moe.held_peak, g->moe.held,
                   (size_t)moe_before(&g->c, g->c.layers) * sizeof *g->moe.held);
    }
    if (g->alloc.charge)
        g->alloc.charge(g->alloc.ctx, GPT_MEM_ACTIVATIONS, delta);
}

/* Matmul FLOPs (2 per multiply-add) of one layer's forward: the six projections, 2 N (4 d^2 +
 * 3 d F), and attention's QK^T and P V over full T x T blocks, 2 x 2 B H T^2 hd (with cp, the
 * queries held against every key: T / cp x T). */
/* Matmul FLOPs of this rank (tp 1: of the whole layer) */
static inline double attn_flops(const struct gpt *g)
{
    return 2.0 * 2.0 * g->B * g->hl * (double)g->T * g->c.seq * g->hd;
}

/* Layer l's: the four attention matrices, attention, and its feed-forward: the SwiGLU on N
 * rows, or the router on N and the experts' SwiGLU on the rows of their buffer (k N, or E cap
 * with a capacity: the static shape a GPU computes, padding included; the CPU skips the
 * padding, which adds nothing). */
static inline double layer_flops(const struct gpt *g, int l)
{
    double N = g->N, d = g->c.d, dl = g->dl, f = g->fl;
    double ffn = 2.0 * N * 3 * d * f;
    if (gpt_layer_moe(&g->c, l)) {
        const struct gpt_moe *m = &g->c.moe;
        double rows = experts_rows(g->N, m->experts, m->top_k, m->capacity_factor);
        ffn = 2.0 * N * d * m->experts + 2.0 * rows * 3 * d * f;
    }
    return 2.0 * N * 4 * d * dl + ffn + attn_flops(g);
}

/* Layer l's feed-forward part of layer_flops (the router and experts with experts). */
static inline double mlp_flops(const struct gpt *g, int l)
{
    return layer_flops(g, l) - 2.0 * g->N * 4 * g->c.d * g->dl - attn_flops(g);
}

/* What a layer's forward and backward passes charge at their ends and between their sums:
 * layer_flops, and 2 x for the backward pass; with ring attention all but the attention core,
 * whose blocks gpt_ring.c charges as they run (their scores: what the causal mask leaves, which
 * differ from GPU to GPU). */
static inline double layer_fwd_work(const struct gpt *g, int l)
{
    return g->ring.blocks ? layer_flops(g, l) - attn_flops(g) : layer_flops(g, l);
}

static inline double layer_bwd_work(const struct gpt *g, int l)
{
    return 2 * layer_fwd_work(g, l);
}

static inline double head_flops(const struct gpt *g)
{
    return 2.0 * g->N * g->vl * g->c.d;
}

/* The operations of model/gpt_ops.c, which model/gpt_step.c strings into a layer and a step
 * (each is described where it is defined). */
void op_compute(const struct gpt *g, double flops, const char *what, int layer);
void op_hook(const struct gpt *g, enum gpt_hook h, int unit);
const float *op_sp_gather(const struct gpt *g, float *full, const float *mine, const char *what);
void op_tp_reduce_rows(const struct gpt *g, float *full, const char *what);
void op_rnd(const struct gpt *g, float *p, size_t n);
void op_store(const struct gpt *g, void *dst, const float *src, size_t n);
void op_load(const struct gpt *g, float *dst, const void *src, size_t n);
void op_check(struct gpt *g, const float *p, size_t n, int layer, const char *name);
void op_produced(struct gpt *g, float *p, size_t n, int layer, const char *name);
void op_produced_grad(struct gpt *g, float *p, size_t n, int layer, const char *name);
void op_mm_fwd(float *y, const float *x, const float *w, int n, int out, int in);
void op_mm_dx(float *dx, const float *dy, const float *w, int n, int out, int in, float beta);
void op_mm_dw_acc(float *dw, const float *dy, const float *x, int n, int out, int in, bool acc);
void op_linear(struct gpt *g, int l, const char *name, float *y, const float *x, const float *w,
               int out, int in);
void op_weight_grad(struct gpt *g, int l, const char *name, float *dw, const float *dy,
                    const float *x, int out, int in);
void op_rmsnorm(struct gpt *g, int l, const char *name, float *y, float *rstd, const float *x,
                const float *w);
void op_rms_bwd(struct gpt *g, float *dx, float *dw, const float *x, const float *rstd,
                const float *w, const float *dy, int n, int d);
void op_rope(struct gpt *g, int l, const char *name, float *x, int dir);
void op_add(struct gpt *g, float *y, const float *a, const float *b, size_t n, int layer,
            const char *name);
void op_swiglu_forward(struct gpt *g, float *h, const float *a, const float *u, size_t n,
                       int layer);
void op_swiglu_backward(struct gpt *g, float *da, float *du, const float *dh, const float *a,
                        const float *u, size_t n);
void op_attn_probs(struct gpt *g, int l);
void op_attn_out(struct gpt *g, int l);
void op_attn_core_backward(struct gpt *g, int l);
/* dq, dk, dv of layer l's attention core complete: rounded (and kept for W, when B and W run
 * apart: wkeep), dq and dk turned back from RoPE. */
void op_attn_grads_done(struct gpt *g, int l);
void op_ring_forward(struct gpt *g, int l);
/* dx [N, in] (+)= dy [N, out] W, layer l's linear layer W: in fp8 when its recipe says so. */
void op_linear_dx(struct gpt *g, int l, float *dx, const float *dy, const float *w, int out, int in,
                  float beta);

/* FP8 training (gpt_fp8.c): its state made (setup: 0 or ERR_NOMEM) and freed, its buffers
 * carved with the workspace's, a step's start (the delayed recipe's histories take the last
 * step's amaxes); the three GEMMs of layer l's linear layer whose weight (or, for wgrad, its
 * gradient) is w: false when w is not one of fp8's linear layers, or no recipe is set (the
 * caller then runs the plain GEMM). */
int fp8_setup(struct gpt *g);
void fp8_free(struct gpt *g);
void fp8_layout(struct gpt *g, void *(*carve)(struct gpt *, enum gpt_mem, size_t));
void fp8_step_begin(struct gpt *g);
bool fp8_fprop(struct gpt *g, int l, float *y, const float *x, const float *w, int out, int in);
bool fp8_dgrad(struct gpt *g, int l, float *dx, const float *dy, const float *w, int out, int in,
               float beta);
bool fp8_wgrad(struct gpt *g, int l, float *dw, const float *dy, const float *x, int out, int in,
               bool acc);
void op_ring_backward(struct gpt *g, int l);

#endif
