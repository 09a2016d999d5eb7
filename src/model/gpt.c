/* The tiny GPT: forward and backward by hand over cblas_sgemm.
 *
 * Shapes: N = B T rows (tokens), d model width, H heads of hd = d / H, F SwiGLU width, V
 * vocabulary. A matrix W [out, in] maps x [N, in] to y = x W^T [N, out] (PyTorch's Linear);
 * its backward is dx = dy W [N, in] and dW = dy^T x [out, in].
 *
 * How a step runs: the forward pass computes one layer at a time in fp32 workspace buffers
 * (one layer's worth, reused), rounds every tensor to the training format where it is
 * produced, and copies the tensors the backward pass needs into that layer's saved set, in the
 * format's width. The backward pass decodes a layer's saved set back into the workspace (or
 * recomputes it, for checkpointed layers) and runs that layer's backward. Because recomputation
 * runs exactly the same code on exactly the same inputs (single-threaded sgemm is
 * deterministic), gradients are bit-identical under every checkpoint policy.
 *
 * Saved per layer (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
 * Transformer Models", section 4.1, adapted: no dropout, RMSNorm, SwiGLU): the attention
 * norm's input x, its output xn1 (input of Wq, Wk, Wv), q and k after RoPE (for QK^T), v, the
 * softmax probabilities p [B, H, T, T] (for the attention over v), the attention output att
 * (input of Wo), the MLP norm's input xm, its output xn2 (input of w_gate, w_up), the gate
 * and up projections g, u (for SwiGLU's backward) and the hidden h = silu(g) u (input of
 * w_down), and each RMSNorm's 1 / rms per token in fp32: 8 N d + 3 N F + B H T^2 elements in
 * the format and 2 N in fp32 -- exactly the list of calc/activ.h, which predicts the bytes.
 * The ends keep the final norm's input, its 1 / rms and output, and the fp32 softmax of the
 * logits for the cross-entropy's backward.
 *
 * Memory is measured, not estimated: the kept tensors live in an arena allocated once, and each
 * is charged to the allocator seam when it comes to life (forward, or recomputation) and
 * released when the backward pass is done with it, so the peak is what the policy really
 * holds at its worst moment. */
#include "config.h"
#include "model/gpt.h"

#include <cblas.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ckpt.h"
#include "base/cpu.h"
#include "base/error.h"
#include "base/prof.h"
#include "base/rng.h"
#include "model/moe.h"
#include "num/exp.h"

#define RMS_EPS   1e-5
#define ROPE_BASE 10000.0

/* ------------------------------------------------------------------ shape and layout */

int gpt_config_check(const struct gpt_config *c, struct error *e)
{
    if (c->vocab < 2 || c->d < 2 || c->layers < 1 || c->heads < 1 || c->ffn < 1 || c->seq < 1)
        return error_set(e, ERR_INVAL,
                         "model shape: vocab >= 2, d_model >= 2, layers, heads, ffn and seq "
                         ">= 1 are needed");
    if (c->d % c->heads != 0 || (c->d / c->heads) % 2 != 0)
        return error_set(e, ERR_INVAL,
                         "model shape: d_model %d must be a multiple of heads %d with an even "
                         "head dimension (RoPE rotates pairs)",
                         c->d, c->heads);
    if (c->vocab > 1 << 20 || c->d > 1 << 16 || c->ffn > 1 << 18 || c->seq > 1 << 16 ||
        c->layers > 1024)
        return error_set(e, ERR_INVAL, "model shape: too large for this lab");
    const struct gpt_moe *m = &c->moe;
    if (m->experts == 0)
        return 0;
    if (m->experts < 2 || m->experts > GPT_MAX_EXPERTS)
        return error_set(e, ERR_INVAL, "experts: 2 to %d, not %d", GPT_MAX_EXPERTS, m->experts);
    if (m->top_k < 1 || m->top_k > 2 || m->top_k > m->experts)
        return error_set(e, ERR_INVAL, "top_k: 1 or 2 (at most the %d experts), not %d", m->experts,
                         m->top_k);
    if (m->every < 1 || m->every > c->layers)
        return error_set(e, ERR_INVAL, "moe_every: 1 to the %d layers, not %d", c->layers,
                         m->every);
    if (!(m->capacity_factor >= 0 && m->capacity_factor <= 64))
        return error_set(e, ERR_INVAL, "capacity factor: 0 (none) or up to 64, not %g",
                         m->capacity_factor);
    if (!(m->aux_coef >= 0 && m->aux_coef <= 100))
        return error_set(e, ERR_INVAL, "aux-loss coefficient: 0 to 100, not %g", m->aux_coef);
    return 0;
}

bool gpt_layer_moe(const struct gpt_config *c, int l)
{
    return c->moe.experts > 0 && l % c->moe.every == 0;
}

/* Layers with experts among 0..l-1. */
static int moe_before(const struct gpt_config *c, int l)
{
    return c->moe.experts > 0 ? (l + c->moe.every - 1) / c->moe.every : 0;
}

int gpt_moe_layers(const struct gpt_config *c)
{
    return moe_before(c, c->layers);
}

/* The tensors of layer l, in order: rows x cols each, their kind and expert. A dense layer
 * has 9, one with E experts 7 + 3E (the router after mlp_norm, then the experts' three). */
static int layer_tensors(const struct gpt_config *c, int l)
{
    return gpt_layer_moe(c, l) ? 7 + 3 * c->moe.experts : 9;
}

static void layer_tensor(const struct gpt_config *c, int l, int k, struct gpt_tensor *t)
{
    int d = c->d, f = c->ffn;
    static const enum gpt_kind ffn[3] = {GPT_W_GATE, GPT_W_UP, GPT_W_DOWN};
    t->layer = l, t->expert = -1;
    if (k < 6 || !gpt_layer_moe(c, l)) {
        const int rows[9] = {1, d, d, d, d, 1, f, f, d}, cols[9] = {d, d, d, d, d, d, d, d, f};
        t->kind = (enum gpt_kind)(GPT_ATTN_NORM + k), t->rows = rows[k], t->cols = cols[k];
    } else if (k == 6) {
        t->kind = GPT_ROUTER, t->rows = c->moe.experts, t->cols = d;
    } else {
        int w = (k - 7) % 3;
        t->kind = ffn[w], t->expert = (k - 7) / 3;
        t->rows = w == 2 ? d : f, t->cols = w == 2 ? f : d;
    }
}

static size_t layer_params_of(const struct gpt_config *c, int l)
{
    size_t d = (size_t)c->d, f = (size_t)c->ffn;
    if (gpt_layer_moe(c, l))
        return 2 * d + 4 * d * d + (size_t)c->moe.experts * (3 * d * f + d);
    return 2 * d + 4 * d * d + 3 * d * f;
}

/* Where layer l starts in the whole model's buffer. */
static size_t layer_start(const struct gpt_config *c, int l)
{
    int moe = moe_before(c, l);
    struct gpt_config dense = *c;
    dense.moe.experts = 0;
    return (size_t)c->vocab * c->d + (size_t)(l - moe) * layer_params_of(&dense, 0) +
           (size_t)moe * (c->moe.experts > 0 ? layer_params_of(c, 0) : 0);
}

size_t gpt_param_count(const struct gpt_config *c)
{
    return layer_start(c, c->layers) + (size_t)c->d;
}

size_t gpt_active_param_count(const struct gpt_config *c)
{
    if (c->moe.experts == 0)
        return gpt_param_count(c);
    size_t d = (size_t)c->d, f = (size_t)c->ffn, idle = (size_t)(c->moe.experts - c->moe.top_k);
    return gpt_param_count(c) - (size_t)gpt_moe_layers(c) * idle * 3 * d * f;
}

size_t gpt_tensor_count(const struct gpt_config *c)
{
    return 2 + 9 * (size_t)c->layers + (size_t)gpt_moe_layers(c) * (3 * (size_t)c->moe.experts - 2);
}

static const char *const kind_names[GPT_KINDS] = {
    "embedding", "attn_norm", "wq",   "wk",     "wv",     "wo",
    "mlp_norm",  "w_gate",    "w_up", "w_down", "router", "final_norm",
};

const char *gpt_kind_name(enum gpt_kind k)
{
    return k < GPT_KINDS ? kind_names[k] : "?";
}

struct gpt_tensor gpt_tensor_at(const struct gpt_config *c, size_t i)
{
    struct gpt_tensor t = {GPT_EMBEDDING, -1, 0, c->vocab, c->d, -1};
    if (i == 0)
        return t;
    if (i == gpt_tensor_count(c) - 1)
        return (struct gpt_tensor){GPT_FINAL_NORM, -1, gpt_param_count(c) - (size_t)c->d, 1,
                                   c->d,           -1};
    size_t k = i - 1;
    int l = 0;
    while (k >= (size_t)layer_tensors(c, l))
        k -= (size_t)layer_tensors(c, l), l++;
    size_t off = layer_start(c, l);
    for (int j = 0; j < (int)k; j++) {
        layer_tensor(c, l, j, &t);
        off += (size_t)t.rows * (size_t)t.cols;
    }
    layer_tensor(c, l, (int)k, &t);
    t.offset = off;
    return t;
}

/* ------------------------------------------------------------------ checkpoint policies */

int gpt_ckpt_parse(const char *s, struct gpt_ckpt *out, struct error *e)
{
    struct ckpt_policy p;
    int rc = ckpt_parse(s, &p, e);
    if (rc)
        return rc;
    struct gpt_ckpt c = {GPT_CKPT_NONE, 0, ""};
    if (p.kind == CKPT_SELECTIVE)
        c.kind = GPT_CKPT_SELECTIVE;
    else if (p.kind != CKPT_NONE) /* full, every:K, sqrt: segments (every 0: sqrt) */
        c.kind = GPT_CKPT_SEGMENTS, c.every = p.kind == CKPT_SQRT ? 0 : p.every;
    ckpt_name(c.name, sizeof c.name, &p);
    *out = c;
    return 0;
}

int gpt_ckpt_segment(const struct gpt_ckpt *p, int layers)
{
    if (p->kind != GPT_CKPT_SEGMENTS)
        return 0;
    int k = ckpt_every(&(struct ckpt_policy){p->every ? CKPT_EVERY : CKPT_SQRT, p->every}, layers);
    return k < layers ? k : layers;
}

/* ------------------------------------------------------------------ the model */

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

struct gpt {
    struct gpt_config c;
    int B, N, hd, seg; /* seg: segment length (0: not segmented) */
    /* tensor parallelism: tp ranks, this one tr; its heads hl (width dl = hl hd), FFN width
     * fl and vocabulary rows vl, from row v0 (tp 1: the whole model's) */
    int tp, tr, hl, dl, fl, vl, v0;
    bool sp; /* sequence parallelism: the residual stream holds nl = N / tp of the rows */
    int nl;
    struct gpt_ckpt ckpt;
    enum fp_format fmt;
    size_t esize;           /* bytes per stored activation element */
    size_t nparams, nalloc; /* the parameters; the flat buffers' elements (padded) */
    float *params, *grads;
    double loss_tokens; /* the gradients are of the loss summed over this many tokens' mean */

    struct gpt_part part;    /* the layers and ends this model holds, its micro-batch slots */
    int nseg;                /* segments of the part's layers (seg > 0) */
    void *(*saved)[A_COUNT]; /* [slots][L][A_COUNT]: each layer's saved set (NULL: not kept) */
    void *(*pool)[A_COUNT];  /* [seg][A_COUNT]: saved sets of a segment being recomputed */
    void **segin;            /* [slots][nseg]: each segment's input */
    void *pslot;             /* selective: the slot of the recomputed probabilities */
    void *(*head)[H_COUNT];  /* [slots]: the ends' kept tensors (a part with the head) */
    bool accumulate;         /* the weight gradients add into the buffer (micro-batches) */
    size_t layer_bytes, head_bytes; /* a dense layer's full list of kept tensors; the ends */
    size_t live, peak;              /* charged activation bytes */

    /* mixture of experts (model/moe.h): the rows of the experts' buffer (0: dense model), the
     * router's logits and their gradient, the experts' output and input gradients, the gates'
     * gradients; the last forward pass's figures, per expert layer where it says */
    size_t rows;
    float *zlog, *dye, *dxe, *dgate;
    double aux, aux_scale; /* the loss's load-balancing part; its weight in the backward pass */
    uint64_t routed, dropped;
    int32_t *load, *kept; /* [expert layers][E] */

    /* fp32 workspace: one layer's tensors (ws), the residual stream and the gradients; w is
     * where the layer at hand has its tensors: the workspace, or in fp32 its kept ones in
     * place in its saved set (bind) */
    float *ws[A_COUNT], *w[A_COUNT], *tmp, *res, *dres, *dxn, *dq, *dk, *dv, *datt, *dh, *dg, *du,
        *dp;
    float *hx, *hn, *hrstd, *logits;
    float *rowmax, *rowsum, *rowtgt; /* tensor parallelism: the cross-entropy's row statistics */
    float *xg, *dg_full; /* sequence parallelism: a norm's output and a gradient, gathered */
    double *colsum;
    float *rope_cos, *rope_sin; /* [T, hd / 2] */

    /* each layer's nine tensors in the weights and in the gradients, found once (layout) */
    struct layer_ptrs *lw, *lg;

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

void *gpt_host_alloc(void *ctx, enum gpt_mem kind, size_t bytes, const char *what)
{
    (void)ctx, (void)kind, (void)what;
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0)
        return NULL;
    memset(p, 0, bytes);
    return p;
}

void gpt_host_free(void *ctx, enum gpt_mem kind, void *p, size_t bytes)
{
    (void)ctx, (void)kind, (void)bytes;
    free(p);
}

/* A buffer of the run, 64-byte aligned: while sizing (the category has no block yet) it
 * counts the bytes and returns a placeholder; then it carves the block in the same order.
 * Each buffer starts on a 64-byte boundary and the block ends where its last buffer does, so
 * a block of one buffer is exactly that buffer's bytes (what the calculator counts). */
static void *carve(struct gpt *g, enum gpt_mem kind, size_t bytes)
{
    if (!g->block[kind]) {
        g->mem[kind] = (g->mem[kind] + 63) / 64 * 64 + bytes;
        return &g->block[kind]; /* never used: the carving pass replaces it */
    }
    g->used[kind] = (g->used[kind] + 63) / 64 * 64;
    void *p = g->block[kind] + g->used[kind];
    g->used[kind] += bytes;
    return p;
}

void gpt_free(struct gpt *g)
{
    if (!g)
        return;
    for (int k = GPT_MEM_KINDS; k-- > 0;)
        if (g->block[k])
            g->alloc.free(g->alloc.ctx, (enum gpt_mem)k, g->block[k], g->mem[k]);
    free(g->saved);
    free(g->pool);
    free(g->segin);
    free(g->head);
    free(g->underflow);
    free(g->load);
    free(g->kept);
    free(g->lw);
    free(g->lg);
    free(g);
}

/* The sizes of a kept tensor: a dense layer's, one with experts, or the larger of the two
 * (the workspace and a segment's pool serve any layer). */
enum { SZ_DENSE, SZ_MOE, SZ_ANY };

static int sz_of(const struct gpt *g, int l)
{
    return gpt_layer_moe(&g->c, l) ? SZ_MOE : SZ_DENSE;
}

static size_t act_elems(const struct gpt *g, int a, int sz)
{
    if (sz == SZ_ANY) {
        size_t dense = act_elems(g, a, SZ_DENSE), moe = g->rows ? act_elems(g, a, SZ_MOE) : 0;
        return dense > moe ? dense : moe;
    }
    size_t N = (size_t)g->N, d = (size_t)g->c.d, E = (size_t)g->c.moe.experts;
    size_t k = (size_t)g->c.moe.top_k, rows = sz == SZ_MOE ? g->rows : N;
    if (a == A_P) /* this rank's heads */
        return (size_t)g->B * g->hl * g->c.seq * g->c.seq;
    if (a == A_G || a == A_U || a == A_H)
        return rows * (size_t)g->fl;
    if (a == A_Q || a == A_K || a == A_V || a == A_ATT)
        return N * (size_t)g->dl;
    if (a == A_RP)
        return sz == SZ_MOE ? N * E : 0;
    if (a == A_ROUTE) /* choices, rows and gates [N k]; first row, kept and load [E] */
        return sz == SZ_MOE ? 3 * N * k + 3 * E : 0;
    if (a == A_XE || a == A_YE)
        return sz == SZ_MOE ? rows * d : 0;
    /* the residual stream's: a tp-th of the rows under sequence parallelism */
    if (a == A_RSTD1 || a == A_RSTD2)
        return (size_t)g->nl;
    return (size_t)g->nl * d;
}

/* Kept in fp32 (or 4-byte words) whatever the format: the RMSNorm statistics, the router's. */
static bool act_fp32(int a)
{
    return a == A_RSTD1 || a == A_RSTD2 || a == A_RP || a == A_ROUTE;
}

/* Bytes of a kept tensor: the format's width, 4 for the fp32 ones. */
static size_t act_bytes(const struct gpt *g, int a, int sz)
{
    return act_elems(g, a, sz) * (act_fp32(a) ? 4 : g->esize);
}

/* Bytes of layer l's full list of kept tensors. */
static size_t layer_bytes(const struct gpt *g, int l)
{
    size_t b = 0;
    for (int a = 0; a < A_COUNT; a++)
        b += act_bytes(g, a, sz_of(g, l));
    return b;
}

/* One saved set in the arena; which tensors it holds depends on the policy and the layer
 * (a tensor the layer does not have: NULL). */
static void carve_set(struct gpt *g, void **set, bool selective, int sz)
{
    for (int a = 0; a < A_COUNT; a++)
        set[a] = (a == A_P && selective) || act_elems(g, a, sz) == 0
                     ? NULL
                     : carve(g, GPT_MEM_ARENA, act_bytes(g, a, sz));
}

static void charge(struct gpt *g, long long delta)
{
    g->live = (size_t)((long long)g->live + delta);
    if (g->live > g->peak)
        g->peak = g->live;
    if (g->alloc.charge)
        g->alloc.charge(g->alloc.ctx, GPT_MEM_ACTIVATIONS, delta);
}

/* The simulated devices are the parallelism: OpenBLAS must not start threads of its own inside
 * a device's matmul. Every model makes sure of it, whoever creates it (the command line, a
 * window panel, a test); the library's own threads would race with the caller's buffers. */
static void blas_single_thread(void)
{
    openblas_set_num_threads(1);
}

static int part_tp(const struct gpt_part *p)
{
    return p && p->tp > 1 ? p->tp : 1;
}

/* The nine tensors of a layer as a part holds them, rows x cols each, in order: a
 * tensor-parallel rank's shards (tp 1: the whole tensors). */
static void layer_shapes(const struct gpt_config *c, int tp, size_t rows[9], size_t cols[9])
{
    size_t d = (size_t)c->d, dl = d / (size_t)tp, fl = (size_t)c->ffn / (size_t)tp;
    const size_t r[9] = {1, dl, dl, dl, d, 1, fl, fl, d};
    const size_t k[9] = {d, d, d, d, dl, d, d, d, fl};
    memcpy(rows, r, sizeof r);
    memcpy(cols, k, sizeof k);
}

static size_t part_layer_params(const struct gpt_config *c, int tp)
{
    size_t rows[9], cols[9], n = 0;
    layer_shapes(c, tp, rows, cols);
    for (int k = 0; k < 9; k++)
        n += rows[k] * cols[k];
    return n;
}

/* Elements of a part's embedding (its vocabulary rows), 0 without either end. */
static size_t part_embedding(const struct gpt_config *c, const struct gpt_part *p)
{
    return p->embed || p->head ? (size_t)(c->vocab / part_tp(p)) * (size_t)c->d : 0;
}

/* Elements of layers first .. l-1 of a part: a tensor-parallel rank's shards (the layers are
 * dense then), or the whole layers, with or without experts. */
static size_t part_layers(const struct gpt_config *c, const struct gpt_part *p, int l)
{
    if (part_tp(p) > 1)
        return (size_t)(l - p->first) * part_layer_params(c, part_tp(p));
    return layer_start(c, l) - layer_start(c, p->first);
}

/* Parameters of a part: the embedding when it has either end (the head's is the tied one),
 * its layers, the final norm with the head. */
size_t gpt_part_param_count(const struct gpt_config *c, const struct gpt_part *p)
{
    if (!p)
        return gpt_param_count(c);
    return part_embedding(c, p) + part_layers(c, p, p->first + p->count) +
           (p->head ? (size_t)c->d : 0);
}

enum gpt_kind gpt_kind_at(const struct gpt_config *c, size_t i)
{
    if (i < layer_start(c, 0))
        return GPT_EMBEDDING;
    if (i >= layer_start(c, c->layers))
        return GPT_FINAL_NORM;
    int l = 0;
    while (i >= layer_start(c, l + 1))
        l++;
    size_t j = i - layer_start(c, l);
    struct gpt_tensor t;
    for (int k = 0;; k++) {
        layer_tensor(c, l, k, &t);
        if (j < (size_t)t.rows * (size_t)t.cols)
            return t.kind;
        j -= (size_t)t.rows * (size_t)t.cols;
    }
}

size_t gpt_part_whole_index(const struct gpt_config *c, const struct gpt_part *p, size_t i)
{
    struct gpt_part whole = {0, c->layers, true, true, 1, 1, 0, false};
    if (!p)
        p = &whole;
    int tp = part_tp(p), r = p->tprank;
    size_t d = (size_t)c->d, emb = part_embedding(c, p), lp = part_layer_params(c, tp);
    size_t span = part_layers(c, p, p->first + p->count);
    if (i < emb) /* vocabulary rows r vl.. */
        return (size_t)r * emb + i;
    i -= emb;
    if (i < span && tp == 1) /* whole layers: one range of the model's */
        return layer_start(c, p->first) + i;
    if (i < span) {
        int l = p->first + (int)(i / lp);
        size_t j = i % lp, rows[9], cols[9];
        layer_shapes(c, tp, rows, cols);
        int k = 0;
        while (j >= rows[k] * cols[k])
            j -= rows[k] * cols[k], k++;
        size_t row = j / cols[k], col = j % cols[k];
        struct gpt_tensor t = gpt_tensor_at(c, 1 + 9 * (size_t)l + (size_t)k);
        if (k == 4 || k == 8) /* wo, w_down: row-parallel, a block of columns */
            col += (size_t)r * cols[k];
        else if (k != 0 && k != 5) /* wq, wk, wv, w_gate, w_up: a block of rows */
            row += (size_t)r * rows[k];
        return t.offset + row * (size_t)t.cols + col;
    }
    i -= span;
    if (p->head && i < d)
        return gpt_param_count(c) - d + i;
    return SIZE_MAX;
}

size_t gpt_part_rows(const struct gpt_config *c, const struct gpt_part *p, int batch)
{
    size_t n = (size_t)batch * (size_t)c->seq;
    return p && p->sp && part_tp(p) > 1 ? n / (size_t)part_tp(p) : n;
}

size_t gpt_part_norms(const struct gpt_config *c, const struct gpt_part *p, size_t *off, size_t max)
{
    size_t n = 0, rows[9], cols[9];
    layer_shapes(c, part_tp(p), rows, cols);
    size_t mlp = 0; /* mlp_norm after attn_norm and the four attention matrices */
    for (int k = 0; k < 5; k++)
        mlp += rows[k] * cols[k];
    size_t emb = part_embedding(c, p);
    for (int l = p->first; l < p->first + p->count; l++) {
        size_t base = emb + part_layers(c, p, l);
        if (n < max)
            off[n] = base;
        n++;
        if (n < max)
            off[n] = base + mlp;
        n++;
    }
    if (p->head) {
        if (n < max)
            off[n] = emb + part_layers(c, p, p->first + p->count);
        n++;
    }
    return n;
}

/* The shape of a model, before any buffer: 0 or an error. */
static int setup(struct gpt *g, const struct gpt_config *c, int batch, enum fp_format fmt,
                 const struct gpt_ckpt *ckpt, const struct gpt_part *part, struct error *e)
{
    int rc = gpt_config_check(c, e);
    if (rc)
        return rc;
    g->part = part ? *part : (struct gpt_part){0, c->layers, true, true, 1, 1, 0, false};
    int tp = part_tp(&g->part);
    if (c->heads % tp != 0 || c->ffn % tp != 0 || c->vocab % tp != 0 || g->part.tprank < 0 ||
        g->part.tprank >= tp)
        return error_set(e, ERR_INVAL,
                         "tensor parallelism over %d GPUs needs it to divide the heads (%d), the "
                         "FFN width (%d) and the vocabulary (%d)",
                         tp, c->heads, c->ffn, c->vocab);
    if (tp > 1 && c->moe.experts > 0)
        return error_set(e, ERR_INVAL, "a model with experts runs without tensor parallelism");

    if (g->part.first < 0 || g->part.count < 1 || g->part.first + g->part.count > c->layers ||
        g->part.slots < 1 || g->part.slots > 4096)
        return error_set(e, ERR_INVAL,
                         "a part holds layers first..first+count-1 of the %d and 1 to 4096 slots",
                         c->layers);
    if (batch < 1)
        return error_set(e, ERR_INVAL, "batch must be at least 1");
    if (fmt != FP_FP32 && fmt != FP_FP16 && fmt != FP_BF16)
        return error_set(e, ERR_INVAL, "training precision must be fp32, bf16 or fp16");
    g->c = *c;
    g->B = batch;
    g->N = batch * c->seq;
    g->hd = c->d / c->heads;
    g->tp = tp, g->tr = g->part.tprank;
    g->sp = g->part.sp && tp > 1;
    if (g->sp && (batch * c->seq) % tp != 0)
        return error_set(e, ERR_INVAL,
                         "sequence parallelism over %d GPUs needs it to divide the "
                         "micro-batch's tokens",
                         tp);
    g->nl = g->sp ? batch * c->seq / tp : batch * c->seq;
    g->hl = c->heads / tp, g->dl = g->hl * g->hd, g->fl = c->ffn / tp;
    g->vl = c->vocab / tp, g->v0 = g->tr * g->vl;
    g->ckpt = ckpt ? *ckpt : (struct gpt_ckpt){GPT_CKPT_NONE, 0, "none"};
    g->seg = gpt_ckpt_segment(&g->ckpt, g->part.count);
    g->fmt = fmt;
    g->esize = fmt == FP_FP32 ? 4 : 2;
    g->nparams = gpt_part_param_count(c, &g->part);
    g->nalloc = g->nparams;
    g->loss_tokens = g->N;
    int L = c->layers;
    size_t slots = (size_t)g->part.slots;
    g->nseg = g->seg ? (g->part.count + g->seg - 1) / g->seg : 0;
    g->saved = calloc(slots * (size_t)L, sizeof *g->saved);
    g->head = calloc(slots, sizeof *g->head);
    g->lw = calloc((size_t)L, sizeof *g->lw);
    g->lg = calloc((size_t)L, sizeof *g->lg);
    g->underflow = calloc((size_t)L + 1, sizeof *g->underflow);
    if (g->seg) {
        g->pool = calloc((size_t)g->seg, sizeof *g->pool);
        g->segin = calloc(slots * (size_t)g->nseg, sizeof *g->segin);
    }
    if (c->moe.experts > 0) {
        size_t stats = (size_t)gpt_moe_layers(c) * (size_t)c->moe.experts;
        g->rows = moe_rows(g->N, c->moe.experts, c->moe.top_k, c->moe.capacity_factor);
        g->load = calloc(stats, sizeof *g->load);
        g->kept = calloc(stats, sizeof *g->kept);
    }
    if (!g->saved || !g->head || !g->lw || !g->lg || !g->underflow ||
        (g->seg && (!g->pool || !g->segin)) || (c->moe.experts > 0 && (!g->load || !g->kept)))
        return error_set(e, ERR_NOMEM, "out of memory");
    for (int a = 0; a < A_COUNT; a++)
        g->layer_bytes += act_bytes(g, a, SZ_DENSE);
    return 0;
}

/* Every buffer of the model, in order: sizes them (no blocks yet) or carves them. */
static void layout(struct gpt *g)
{
    int L = g->c.layers;
    size_t N = (size_t)g->N, d = (size_t)g->c.d, f = (size_t)g->fl, V = (size_t)g->vl;
    size_t T = (size_t)g->c.seq, half = (size_t)g->hd / 2;
    for (int k = 0; k < GPT_MEM_KINDS; k++)
        g->used[k] = 0;
    g->params = carve(g, g->alloc.params_workspace ? GPT_MEM_WORKSPACE : GPT_MEM_WEIGHTS,
                      g->nalloc * sizeof(float));
    g->grads = carve(g, g->alloc.grads_workspace ? GPT_MEM_WORKSPACE : GPT_MEM_GRADS,
                     g->nalloc * sizeof(float));

    /* the arena of the tensors kept for the backward pass, one set per micro-batch slot */
    const struct gpt_part *pt = &g->part;
    for (int m = 0; m < pt->slots; m++) {
        if (g->seg)
            for (int s = 0; s < g->nseg; s++)
                g->segin[m * g->nseg + s] = carve(g, GPT_MEM_ARENA, (size_t)g->nl * d * g->esize);
        else
            for (int l = pt->first; l < pt->first + pt->count; l++)
                carve_set(g, g->saved[m * L + l], g->ckpt.kind == GPT_CKPT_SELECTIVE, sz_of(g, l));
    }
    if (g->seg)
        for (int s = 0; s < g->seg; s++)
            carve_set(g, g->pool[s], false, SZ_ANY);
    else if (g->ckpt.kind == GPT_CKPT_SELECTIVE)
        g->pslot = carve(g, GPT_MEM_ARENA, act_bytes(g, A_P, SZ_DENSE));
    size_t nl = (size_t)g->nl;
    const size_t head_bytes[H_COUNT] = {nl * d * g->esize, nl * 4, nl * d * g->esize, N * V * 4};
    g->head_bytes = 0;
    for (int a = 0; a < H_COUNT; a++)
        g->head_bytes += head_bytes[a];
    for (int m = 0; m < pt->slots && pt->head; m++)
        for (int a = 0; a < H_COUNT; a++)
            g->head[m][a] = carve(g, GPT_MEM_ARENA, head_bytes[a]);

    /* fp32 workspace */
    for (int a = 0; a < A_COUNT; a++)
        g->w[a] = g->ws[a] = carve(g, GPT_MEM_WORKSPACE, act_elems(g, a, SZ_ANY) * 4);
    float **nd[] = {&g->tmp, &g->res, &g->dres, &g->dxn, &g->dq,
                    &g->dk,  &g->dv,  &g->datt, &g->hx,  &g->hn};
    g->hrstd = carve(g, GPT_MEM_WORKSPACE, N * 4);
    for (size_t i = 0; i < sizeof nd / sizeof *nd; i++)
        *nd[i] = carve(g, GPT_MEM_WORKSPACE, N * d * 4);
    float **nf[] = {&g->dh, &g->dg, &g->du};
    size_t rf = g->rows > N ? g->rows : N; /* the experts' rows, or the tokens */
    for (size_t i = 0; i < sizeof nf / sizeof *nf; i++)
        *nf[i] = carve(g, GPT_MEM_WORKSPACE, rf * f * 4);
    if (g->rows) {
        size_t E = (size_t)g->c.moe.experts, k = (size_t)g->c.moe.top_k;
        g->zlog = carve(g, GPT_MEM_WORKSPACE, N * E * 4);
        g->dye = carve(g, GPT_MEM_WORKSPACE, g->rows * d * 4);
        g->dxe = carve(g, GPT_MEM_WORKSPACE, g->rows * d * 4);
        g->dgate = carve(g, GPT_MEM_WORKSPACE, N * k * 4);
    }
    g->dp = carve(g, GPT_MEM_WORKSPACE, T * T * 4);
    g->logits = carve(g, GPT_MEM_WORKSPACE, N * V * 4);
    g->colsum = carve(g, GPT_MEM_WORKSPACE, (d > V ? d : V) * sizeof(double));
    g->rope_cos = carve(g, GPT_MEM_WORKSPACE, T * half * 4);
    g->rope_sin = carve(g, GPT_MEM_WORKSPACE, T * half * 4);
    if (g->sp) {
        g->xg = carve(g, GPT_MEM_WORKSPACE, N * d * 4);
        g->dg_full = carve(g, GPT_MEM_WORKSPACE, N * d * 4);
    }
    if (g->tp > 1) {
        g->rowmax = carve(g, GPT_MEM_WORKSPACE, N * 4);
        g->rowsum = carve(g, GPT_MEM_WORKSPACE, N * 4);
        g->rowtgt = carve(g, GPT_MEM_WORKSPACE, N * 4);
    }

    /* each layer's tensors (or this rank's shards), in the documented order; a part's flat
     * buffer holds its layers right after the embedding (or first, without one) */
    size_t rows[9], cols[9];
    layer_shapes(&g->c, g->tp, rows, cols);
    for (int l = pt->first; l < pt->first + pt->count; l++)
        for (int which = 0; which < 2; which++) {
            struct layer_ptrs *t = which ? &g->lg[l] : &g->lw[l];
            float *base = (which ? g->grads : g->params) + part_embedding(&g->c, pt) +
                          part_layers(&g->c, pt, l);
            float **slot[9] = {&t->attn_norm, &t->wq,     &t->wk,   &t->wv,    &t->wo,
                               &t->mlp_norm,  &t->w_gate, &t->w_up, &t->w_down};
            bool moe = gpt_layer_moe(&g->c, l);
            for (int k = 0; k < (moe ? 6 : 9); k++) {
                *slot[k] = base;
                base += rows[k] * cols[k];
            }
            if (moe) /* the router [E, d], then the experts */
                t->router = base, t->experts = base + (size_t)g->c.moe.experts * d;
        }
}

size_t gpt_estimate_bytes(const struct gpt_config *c, int batch, enum fp_format fmt,
                          const struct gpt_ckpt *ckpt, struct error *e)
{
    struct gpt *g = calloc(1, sizeof *g);
    if (!g) {
        error_set(e, ERR_NOMEM, "out of memory");
        return 0;
    }
    size_t total = 0;
    if (setup(g, c, batch, fmt, ckpt, NULL, e) == 0) {
        layout(g);
        for (int k = 0; k < GPT_MEM_KINDS; k++)
            total += g->mem[k];
    }
    gpt_free(g);
    return total;
}

int gpt_new(struct gpt **out, const struct gpt_config *c, int batch, enum fp_format fmt,
            const struct gpt_ckpt *ckpt, const struct gpt_alloc *alloc, struct error *e)
{
    return gpt_new_part(out, c, batch, fmt, ckpt, alloc, NULL, e);
}

int gpt_new_part(struct gpt **out, const struct gpt_config *c, int batch, enum fp_format fmt,
                 const struct gpt_ckpt *ckpt, const struct gpt_alloc *alloc,
                 const struct gpt_part *part, struct error *e)
{
    static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
    pthread_once(&blas_once, blas_single_thread);
    *out = NULL;
    struct gpt *g = calloc(1, sizeof *g);
    if (!g)
        return error_set(e, ERR_NOMEM, "out of memory");
    int rc = setup(g, c, batch, fmt, ckpt, part, e);
    if (rc) {
        gpt_free(g);
        return rc;
    }
    if (alloc)
        g->alloc = *alloc;
    if (!g->alloc.alloc)
        g->alloc.alloc = gpt_host_alloc, g->alloc.free = gpt_host_free;
    if (g->tp > 1 && !g->alloc.tp_reduce) {
        gpt_free(g);
        return error_set(e, ERR_INVAL, "tensor parallelism needs the seam's tp_reduce");
    }
    if (g->alloc.padded > g->nparams)
        g->nalloc = g->alloc.padded;
    static const char *const what[GPT_MEM_KINDS] = {[GPT_MEM_WEIGHTS] = "weights",
                                                    [GPT_MEM_GRADS] = "gradients",
                                                    [GPT_MEM_ARENA] = "activation arena",
                                                    [GPT_MEM_WORKSPACE] = "workspace"};
    layout(g); /* sizes */
    for (int k = 0; k < GPT_MEM_KINDS; k++)
        if (g->mem[k] &&
            !(g->block[k] = g->alloc.alloc(g->alloc.ctx, (enum gpt_mem)k, g->mem[k], what[k]))) {
            gpt_free(g);
            return error_set(e, ERR_NOMEM, "out of memory allocating the model's %s", what[k]);
        }
    layout(g); /* carves */

    /* RoPE tables: angle = pos * base^(-2i / hd), i < hd / 2 (Su et al. 2021; the rotate-half
     * layout of GPT-NeoX and Llama); computed in double, stored in fp32. */
    size_t T = (size_t)c->seq, half = (size_t)g->hd / 2;
    for (size_t t = 0; t < T; t++)
        for (size_t i = 0; i < half; i++) {
            double inv = 1.0 / pow(ROPE_BASE, (double)(2 * i) / (double)g->hd);
            double ang = (double)t * inv;
            g->rope_cos[t * half + i] = (float)cos(ang);
            g->rope_sin[t * half + i] = (float)sin(ang);
        }
    *out = g;
    return 0;
}

void gpt_init_params(const struct gpt_config *c, uint64_t seed, float *master)
{
    struct rng r;
    rng_seed(&r, seed, 0x6770);
    double proj = 0.02 / sqrt(2.0 * c->layers);
    size_t n = gpt_tensor_count(c);
    for (size_t i = 0; i < n; i++) {
        struct gpt_tensor t = gpt_tensor_at(c, i);
        size_t m = (size_t)t.rows * t.cols;
        float *p = master + t.offset;
        bool norm = t.kind == GPT_ATTN_NORM || t.kind == GPT_MLP_NORM || t.kind == GPT_FINAL_NORM;
        double sd = (t.kind == GPT_WO || t.kind == GPT_W_DOWN) ? proj : 0.02;
        for (size_t j = 0; j < m; j++)
            p[j] = norm ? 1.0f : (float)(sd * rng_normal(&r));
    }
}

const struct gpt_config *gpt_config(const struct gpt *g)
{
    return &g->c;
}

size_t gpt_nparams(const struct gpt *g)
{
    return g->nparams;
}

float *gpt_params(struct gpt *g)
{
    return g->params;
}

float *gpt_grads(struct gpt *g)
{
    return g->grads;
}

void gpt_set_weights(struct gpt *g, const float *master)
{
    if (g->fmt == FP_FP32) {
        if (master != g->params)
            memcpy(g->params, master, g->nparams * sizeof(float));
    } else
        fp_round_n(g->fmt, g->params, master, g->nparams);
}

size_t gpt_mem_bytes(const struct gpt *g, enum gpt_mem kind)
{
    if (kind == GPT_MEM_ACTIVATIONS)
        return g->peak;
    return kind < GPT_MEM_KINDS ? g->mem[kind] : 0;
}

size_t gpt_act_live(const struct gpt *g)
{
    return g->live;
}

struct gpt_act_sizes gpt_act_sizes(const struct gpt *g)
{
    return (struct gpt_act_sizes){g->layer_bytes, act_bytes(g, A_X, SZ_DENSE),
                                  act_bytes(g, A_P, SZ_DENSE), g->head_bytes};
}

/* Matmul FLOPs (2 per multiply-add) of one layer's forward: the six projections, 2 N (4 d^2 +
 * 3 d F), and attention's QK^T and P V over full T x T blocks, 2 x 2 B H T^2 hd. */
/* Matmul FLOPs of this rank (tp 1: of the whole layer) */
static double attn_flops(const struct gpt *g)
{
    double T = g->c.seq;
    return 2.0 * 2.0 * g->B * g->hl * T * T * g->hd;
}

/* Layer l's: the four attention matrices, attention, and its feed-forward: the SwiGLU on N
 * rows, or the router on N and the experts' SwiGLU on the rows of their buffer (k N, or E cap
 * with a capacity: the static shape a GPU computes, padding included; the CPU skips the
 * padding, which adds nothing). */
static double layer_flops(const struct gpt *g, int l)
{
    double N = g->N, d = g->c.d, dl = g->dl, f = g->fl;
    double ffn = 2.0 * N * 3 * d * f;
    if (gpt_layer_moe(&g->c, l)) {
        const struct gpt_moe *m = &g->c.moe;
        double rows = (double)moe_rows(g->N, m->experts, m->top_k, m->capacity_factor);
        ffn = 2.0 * N * d * m->experts + 2.0 * rows * 3 * d * f;
    }
    return 2.0 * N * 4 * d * dl + ffn + attn_flops(g);
}

/* The sum over the model's layers. */
static double layers_flops(const struct gpt *g)
{
    double s = 0;
    for (int l = 0; l < g->c.layers; l++)
        s += layer_flops(g, l);
    return s;
}

static double head_flops(const struct gpt *g)
{
    return 2.0 * g->N * g->vl * g->c.d;
}

struct gpt_calls gpt_step_calls(const struct gpt_config *c, const struct gpt_ckpt *ckpt)
{
    long L = c->layers, seg = ckpt ? gpt_ckpt_segment(ckpt, c->layers) : 0;
    bool selective = ckpt && ckpt->kind == GPT_CKPT_SELECTIVE;
    struct gpt_calls n;
    /* forward and backward of each layer, the head's forward and backward, and a
     * recomputation per layer (all of it when segmented, the core when selective) */
    n.compute = 2 * L + 2 + (seg || selective ? L : 0);
    /* the forward keeps each layer's list (segmented: each segment's input), then the ends;
     * the backward frees the ends, brings back what is recomputed (each layer when
     * segmented or selective) and frees each layer's list */
    n.charge = (seg ? (L + seg - 1) / seg : L) + 1 + 1 + (seg || selective ? L : 0) + L;
    return n;
}

struct gpt_flops gpt_flops(const struct gpt *g)
{
    double fwd = layers_flops(g) + head_flops(g);
    struct gpt_flops fl = {fwd, 2 * fwd, 0};
    if (g->seg)
        fl.recompute = layers_flops(g);
    else if (g->ckpt.kind == GPT_CKPT_SELECTIVE)
        fl.recompute = g->c.layers * attn_flops(g) / 2; /* QK^T again; softmax is no matmul */
    return fl;
}

struct gpt_flops gpt_step_flops(const struct gpt_config *c, int batch, const struct gpt_ckpt *ckpt)
{
    struct gpt g = {.c = *c, .B = batch, .N = batch * c->seq, .hd = c->d / c->heads, .tp = 1};
    g.hl = c->heads, g.dl = c->d, g.fl = c->ffn, g.vl = c->vocab;
    g.ckpt = ckpt ? *ckpt : (struct gpt_ckpt){GPT_CKPT_NONE, 0, "none"};
    g.seg = gpt_ckpt_segment(&g.ckpt, c->layers);
    return gpt_flops(&g);
}

static void compute(const struct gpt *g, double flops, const char *what, int layer)
{
    if (g->alloc.compute)
        g->alloc.compute(g->alloc.ctx, flops, what, layer);
}

static void hook(const struct gpt *g, enum gpt_hook h, int unit)
{
    if (g->alloc.hook)
        g->alloc.hook(g->alloc.ctx, h, unit);
}

/* Tensor parallelism: buf, this rank's part of a sum, becomes the group's sum (Megatron-LM's
 * g operator after a row-parallel matmul, f's backward before a column-parallel one). */
static void tp_sum(const struct gpt *g, float *buf, size_t n, const char *what)
{
    if (g->tp > 1)
        g->alloc.tp_reduce(g->alloc.ctx, buf, n, GPT_TP_SUM, what);
}

/* Sequence parallelism: this rank's rows `mine` (nl x d) and the others' gathered into full
 * (N x d), returned; without it, mine itself (it holds every row). */
static const float *sp_gather(const struct gpt *g, float *full, const float *mine, const char *what)
{
    if (!g->sp)
        return mine;
    size_t block = (size_t)g->nl * g->c.d;
    memcpy(full + (size_t)g->tr * block, mine, block * 4);
    g->alloc.tp_reduce(g->alloc.ctx, full, block * g->tp, GPT_TP_GATHER, what);
    return full;
}

/* A row-parallel matmul's output full (N x d, this rank's partial sums) summed over the group:
 * all of it (tensor parallelism: an all-reduce, in place), or under sequence parallelism this
 * rank's rows only, into the first nl rows of full (a reduce-scatter). */
static void tp_reduce_rows(const struct gpt *g, float *full, const char *what)
{
    if (!g->sp) {
        tp_sum(g, full, (size_t)g->N * g->c.d, what);
        return;
    }
    size_t block = (size_t)g->nl * g->c.d;
    g->alloc.tp_reduce(g->alloc.ctx, full, block * g->tp, GPT_TP_SCATTER, what);
    memmove(full, full + (size_t)g->tr * block, block * 4);
}

void gpt_set_loss_tokens(struct gpt *g, double tokens)
{
    g->loss_tokens = tokens > 0 ? tokens : g->N;
}

void gpt_diag(const struct gpt *g, struct gpt_diag *out)
{
    snprintf(out->nonfinite, sizeof out->nonfinite, "%s", g->nonfinite);
    out->nonfinite_forward = g->nonfinite_forward;
    out->underflow = g->underflow;
    out->underflow_total = g->underflow_total;
    out->grad_elements = g->nparams;
    out->aux_loss = g->aux;
    out->routed = g->routed, out->dropped = g->dropped;
    out->expert_load = g->load, out->expert_kept = g->kept;
}

/* ------------------------------------------------------------------ helpers */

/* Rounds n values to the working format in place. The loops that produce a tensor block by
 * block call these helpers' _in forms, whose time is their loop's phase; the plain forms time
 * themselves as rounding. */
static inline void rnd_in(const struct gpt *g, float *p, size_t n)
{
    if (g->fmt != FP_FP32)
        fp_round_n(g->fmt, p, p, n);
}

static void rnd(const struct gpt *g, float *p, size_t n)
{
    if (g->fmt != FP_FP32) {
        prof_enter(PROF_ROUNDING);
        rnd_in(g, p, n);
        prof_leave();
    }
}

static void store(const struct gpt *g, void *dst, const float *src, size_t n)
{
    prof_enter(PROF_KEEP);
    if (g->fmt == FP_FP32)
        memcpy(dst, src, n * 4);
    else if (g->fmt == FP_FP16)
        fp16_from_f32_n(dst, src, n);
    else
        bf16_from_f32_n(dst, src, n);
    prof_leave();
}

static void load(const struct gpt *g, float *dst, const void *src, size_t n)
{
    prof_enter(PROF_KEEP);
    if (g->fmt == FP_FP32)
        memcpy(dst, src, n * 4);
    else if (g->fmt == FP_FP16)
        fp16_to_f32_n(dst, src, n);
    else
        bf16_to_f32_n(dst, src, n);
    prof_leave();
}

/* The element-wise loops below are compiled for each vector path (CPU_CLONES, base/cpu.h):
 * plain C without contraction or reassociation, so every path gives the same bits. */

/* Whether any of n values is inf or NaN (all exponent bits set). */
static inline CPU_INLINE void nonfinite_body(const float *p, size_t n, uint32_t *bad)
{
    uint32_t b = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &p[i], 4);
        b |= (u & 0x7f800000u) == 0x7f800000u;
    }
    *bad = b;
}
CPU_CLONES(nonfinite, (const float *p, size_t n, uint32_t *bad), (p, n, bad))

static bool any_nonfinite(const float *p, size_t n)
{
    uint32_t bad;
    nonfinite(p, n, &bad);
    return bad != 0;
}

/* Records the first non-finite tensor of the step: "layer 2 attn scores", "logits". */
static void name_nonfinite(struct gpt *g, int layer, const char *what)
{
    if (layer >= 0)
        snprintf(g->nonfinite, sizeof g->nonfinite, "layer %d %s", layer, what);
    else
        snprintf(g->nonfinite, sizeof g->nonfinite, "%s", what);
    g->nonfinite_forward = g->in_forward;
}

/* A tensor already in the working format (or one that is about to change) is looked at. */
static void check_in(struct gpt *g, const float *p, size_t n, int layer, const char *name)
{
    if (!g->nonfinite[0] && any_nonfinite(p, n))
        name_nonfinite(g, layer, name);
}

static void check(struct gpt *g, const float *p, size_t n, int layer, const char *name)
{
    prof_enter(PROF_ROUNDING);
    check_in(g, p, n, layer, name);
    prof_leave();
}

/* Values pass through the cache in blocks this long: each block is rounded, then checked
 * (and counted) while it is still in L1, one pass over memory for the whole tensor. */
#define BLOCK 1024

/* A tensor has just been computed in fp32: it is rounded to the working format where it is
 * produced (as a GPU kernel writing bf16 would) and, as it goes by, looked at for inf/NaN; the
 * first such tensor of the step is named "layer L NAME" (layer -1: NAME alone). */
static void produced_in(struct gpt *g, float *p, size_t n, int layer, const char *name)
{
    bool look = !g->nonfinite[0];
    if (g->fmt == FP_FP32) {
        if (look && any_nonfinite(p, n))
            name_nonfinite(g, layer, name);
        return;
    }
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t m = n - i < BLOCK ? n - i : BLOCK;
        fp_round_n(g->fmt, p + i, p + i, m);
        if (look && any_nonfinite(p + i, m)) {
            name_nonfinite(g, layer, name);
            look = false;
        }
    }
}

static void produced(struct gpt *g, float *p, size_t n, int layer, const char *name)
{
    prof_enter(PROF_ROUNDING);
    produced_in(g, p, n, layer, name);
    prof_leave();
}

/* A weight gradient of layer `layer` (index L: the embedding and the norms outside the
 * layers) is produced: rounded, checked, and its elements that were nonzero in fp32 and
 * rounded to zero counted (underflow), in one pass. */
static void produced_grad(struct gpt *g, float *p, size_t n, int layer, const char *name)
{
    int named = layer < g->c.layers ? layer : -1;
    bool look = !g->nonfinite[0];
    prof_enter(PROF_ROUNDING);
    if (g->fmt == FP_FP32) {
        if (look && any_nonfinite(p, n))
            name_nonfinite(g, named, name);
        prof_leave();
        return;
    }
    uint64_t under = 0;
    float buf[BLOCK];
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t m = n - i < BLOCK ? n - i : BLOCK;
        fp_round_n(g->fmt, buf, p + i, m);
        for (size_t j = 0; j < m; j++)
            under += buf[j] == 0.0f && p[i + j] != 0.0f;
        memcpy(p + i, buf, m * sizeof *buf);
        if (look && any_nonfinite(buf, m)) {
            name_nonfinite(g, named, name);
            look = false;
        }
    }
    g->underflow[layer] += under;
    g->underflow_total += under;
    prof_leave();
}

/* y [N, out] = x [N, in] W^T (W [out, in]) */
static void mm_fwd(float *y, const float *x, const float *w, int n, int out, int in)
{
    prof_enter(PROF_MATMUL);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, x, in, w, in, 0.0f, y,
                out);
    prof_leave();
}

/* dx [N, in] (+)= dy [N, out] W */
static void mm_dx(float *dx, const float *dy, const float *w, int n, int out, int in, float beta)
{
    prof_enter(PROF_MATMUL);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, out, 1.0f, dy, out, w, in, beta,
                dx, in);
    prof_leave();
}

/* dW [out, in] = dy^T [out, N] x [N, in], or += with acc (micro-batches add up) */
static void mm_dw_acc(float *dw, const float *dy, const float *x, int n, int out, int in, bool acc)
{
    prof_enter(PROF_MATMUL);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n, 1.0f, dy, out, x, in,
                acc ? 1.0f : 0.0f, dw, in);
    prof_leave();
}

/* The calls that produce a tensor of layer l: compute it, round it to the format, check it
 * (and count a weight gradient's underflow), so the passes read as the maths. */

/* y [N, out] = x W^T, produced as `name` (NULL: rounded only, checked later) */
static void linear(struct gpt *g, int l, const char *name, float *y, const float *x, const float *w,
                   int out, int in)
{
    mm_fwd(y, x, w, g->N, out, in);
    if (name)
        produced(g, y, (size_t)g->N * out, l, name);
    else
        rnd(g, y, (size_t)g->N * out);
}

/* dW [out, in] = dy^T x (added to the buffer's when accumulating micro-batches), produced */
static void weight_grad(struct gpt *g, int l, const char *name, float *dw, const float *dy,
                        const float *x, int out, int in)
{
    mm_dw_acc(dw, dy, x, g->N, out, in, g->accumulate);
    produced_grad(g, dw, (size_t)out * in, l, name);
}

/* 1 / sqrt(mean(x^2) + eps) of rows, each row's sum of squares in order in double; four rows
 * side by side, whose chains of additions overlap where one row's would wait on each step
 * (the same bits as one row at a time). rows <= 4 rows of d at x. */
static inline CPU_INLINE void rms_rstd4(const float *x, int d, int rows, float *rstd)
{
    double ss[4] = {0, 0, 0, 0};
    if (rows == 4) {
        const float *a = x, *b = a + d, *c = b + d, *e = c + d;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (int j = 0; j < d; j++) {
            s0 += (double)a[j] * a[j];
            s1 += (double)b[j] * b[j];
            s2 += (double)c[j] * c[j];
            s3 += (double)e[j] * e[j];
        }
        ss[0] = s0, ss[1] = s1, ss[2] = s2, ss[3] = s3;
    } else
        for (int k = 0; k < rows; k++)
            for (int j = 0; j < d; j++)
                ss[k] += (double)x[(size_t)k * d + j] * x[(size_t)k * d + j];
    for (int k = 0; k < rows; k++)
        rstd[k] = (float)(1.0 / sqrt(ss[k] / d + RMS_EPS));
}

/* y = x / rms(x) * w, row by row (Zhang and Sennrich 2019); rstd[r] = 1 / rms(x_r) */
static inline CPU_INLINE void rms_fwd_n_body(float *y, float *rstd, const float *x, const float *w,
                                             int n, int d)
{
    for (int r = 0; r < n; r += 4) {
        int rows = n - r < 4 ? n - r : 4;
        rms_rstd4(x + (size_t)r * d, d, rows, rstd + r);
        for (int k = r; k < r + rows; k++) {
            const float *xr = x + (size_t)k * d;
            float *yr = y + (size_t)k * d, s = rstd[k];
            for (int j = 0; j < d; j++)
                yr[j] = (xr[j] * s) * w[j];
        }
    }
}
CPU_CLONES(rms_fwd_n, (float *y, float *rstd, const float *x, const float *w, int n, int d),
           (y, rstd, x, w, n, d))

static void rms_fwd(float *y, float *rstd, const float *x, const float *w, int n, int d)
{
    prof_enter(PROF_NORM);
    rms_fwd_n(y, rstd, x, w, n, d);
    prof_leave();
}

/* y = RMSNorm(x) w for the N rows, produced (rstd kept for the backward pass) */
static void rmsnorm(struct gpt *g, int l, const char *name, float *y, float *rstd, const float *x,
                    const float *w)
{
    rms_fwd(y, rstd, x, w, g->nl, g->c.d); /* the residual stream's rows */
    produced(g, y, (size_t)g->nl * g->c.d, l, name);
}

/* RMSNorm's backward, row by row. With s = 1 / sqrt(mean(x^2) + eps), xh = x s, y = xh w and
 * g = dy w (the gradient reaching xh):
 *     dw = sum over rows of dy xh
 *     ds/dx_k = -s^3 x_k / d, so dxh_j/dx_k = s delta_jk - x_j s^3 x_k / d and
 *     dx_k = sum_j g_j dxh_j/dx_k = s (g_k - xh_k mean_j(g_j xh_j)),
 * added into dx (it joins the residual stream's gradient). */
static inline CPU_INLINE void rms_bwd_n_body(double *cs, float *dx, const float *x,
                                             const float *rstd, const float *w, const float *dy,
                                             int n, int d)
{
    for (int r = 0; r < n; r += 4) {
        int rows = n - r < 4 ? n - r : 4;
        double dot[4] = {0, 0, 0, 0};
        /* the rows' dot products in order, four side by side; each column's sum over the rows
         * in row order (the same bits as a row at a time) */
        if (rows == 4) {
            const float *x0 = x + (size_t)r * d, *x1 = x0 + d, *x2 = x1 + d, *x3 = x2 + d;
            const float *y0 = dy + (size_t)r * d, *y1 = y0 + d, *y2 = y1 + d, *y3 = y2 + d;
            float s0 = rstd[r], s1 = rstd[r + 1], s2 = rstd[r + 2], s3 = rstd[r + 3];
            double d0 = 0, d1 = 0, d2 = 0, d3 = 0;
            for (int j = 0; j < d; j++) { /* across the columns: vectorized */
                double c = cs[j];
                c += (double)y0[j] * (x0[j] * s0);
                c += (double)y1[j] * (x1[j] * s1);
                c += (double)y2[j] * (x2[j] * s2);
                c += (double)y3[j] * (x3[j] * s3);
                cs[j] = c;
            }
            for (int j = 0; j < d; j++) { /* four chains in order, side by side */
                d0 += (double)(y0[j] * w[j]) * (x0[j] * s0);
                d1 += (double)(y1[j] * w[j]) * (x1[j] * s1);
                d2 += (double)(y2[j] * w[j]) * (x2[j] * s2);
                d3 += (double)(y3[j] * w[j]) * (x3[j] * s3);
            }
            dot[0] = d0, dot[1] = d1, dot[2] = d2, dot[3] = d3;
        } else
            for (int k = 0; k < rows; k++) {
                const float *xr = x + (size_t)(r + k) * d, *dyr = dy + (size_t)(r + k) * d;
                float s = rstd[r + k];
                for (int j = 0; j < d; j++) {
                    float xh = xr[j] * s;
                    cs[j] += (double)dyr[j] * xh;
                    dot[k] += (double)(dyr[j] * w[j]) * xh;
                }
            }
        for (int k = 0; k < rows; k++) {
            const float *xr = x + (size_t)(r + k) * d, *dyr = dy + (size_t)(r + k) * d;
            float *dxr = dx + (size_t)(r + k) * d;
            float s = rstd[r + k], m = (float)(dot[k] / d);
            for (int j = 0; j < d; j++)
                dxr[j] += s * (dyr[j] * w[j] - (xr[j] * s) * m);
        }
    }
}
CPU_CLONES(rms_bwd_n,
           (double *cs, float *dx, const float *x, const float *rstd, const float *w,
            const float *dy, int n, int d),
           (cs, dx, x, rstd, w, dy, n, d))

static void rms_bwd(struct gpt *g, float *dx, float *dw, const float *x, const float *rstd,
                    const float *w, const float *dy, int n, int d)
{
    prof_enter(PROF_NORM);
    double *cs = g->colsum;
    memset(cs, 0, (size_t)d * sizeof *cs);
    rms_bwd_n(cs, dx, x, rstd, w, dy, n, d);
    for (int j = 0; j < d; j++)
        dw[j] = g->accumulate ? dw[j] + (float)cs[j] : (float)cs[j];
    prof_leave();
}

/* Rotary embedding, rotate-half (Su et al. 2021): for each head, the pair (a, b) = (x_i,
 * x_{i + hd/2}) turns by the angle pos theta_i: (a cos - b sin, b cos + a sin), y = R x with
 * R a rotation. Its backward is dx = R^T dy, and R^T = R^-1 is the turn by -pos theta_i:
 * dir -1 (sin negated). */
static inline CPU_INLINE void rope_x_body(float *x, const float *cosv, const float *sinv, int N,
                                          int T, int H, int hd, int d, int dir)
{
    int half = hd / 2;
    for (int r = 0; r < N; r++) {
        int t = r % T;
        const float *cs = cosv + (size_t)t * half, *sn = sinv + (size_t)t * half;
        for (int h = 0; h < H; h++) {
            float *v = x + (size_t)r * d + (size_t)h * hd;
            for (int i = 0; i < half; i++) {
                float a = v[i], b = v[i + half], s = dir > 0 ? sn[i] : -sn[i];
                v[i] = a * cs[i] - b * s;
                v[i + half] = b * cs[i] + a * s;
            }
        }
    }
}
CPU_CLONES(rope_x,
           (float *x, const float *cosv, const float *sinv, int N, int T, int H, int hd, int d,
            int dir),
           (x, cosv, sinv, N, T, H, hd, d, dir))

static void rope_n(const struct gpt *g, float *x, int dir)
{
    prof_enter(PROF_ROPE);
    rope_x(x, g->rope_cos, g->rope_sin, g->N, g->c.seq, g->hl, g->hd, g->dl, dir);
    prof_leave();
}

/* x rotated (dir 1) or turned back (-1), produced as `name` (NULL: rounded only) */
static void rope(struct gpt *g, int l, const char *name, float *x, int dir)
{
    rope_n(g, x, dir);
    if (name)
        produced(g, x, (size_t)g->N * g->dl, l, name);
    else
        rnd(g, x, (size_t)g->N * g->dl);
}

static inline CPU_INLINE void sum_n_body(float *y, const float *a, const float *b, size_t m)
{
    for (size_t j = 0; j < m; j++)
        y[j] = a[j] + b[j];
}
CPU_CLONES(sum_n, (float *y, const float *a, const float *b, size_t m), (y, a, b, m))

/* y = a + b (a residual connection), produced block by block while in cache. */
static void add(struct gpt *g, float *y, const float *a, const float *b, size_t n, int layer,
                const char *name)
{
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t m = n - i < BLOCK ? n - i : BLOCK;
        sum_n(y + i, a + i, b + i, m);
        produced_in(g, y + i, m, layer, name);
    }
}

/* SwiGLU's two element-wise loops over a block, e = e^-a: the sigmoid's exponential, through
 * num/exp.h (expf's bits, computed in vectors), so these loops have no library call. */
static inline CPU_INLINE void glu_fwd_body(float *h, const float *a, const float *e, const float *u,
                                           size_t m)
{
    for (size_t j = 0; j < m; j++)
        h[j] = a[j] / (1.0f + e[j]) * u[j];
}
CPU_CLONES(glu_fwd, (float *h, const float *a, const float *e, const float *u, size_t m),
           (h, a, e, u, m))

static inline CPU_INLINE void glu_bwd_body(float *da, float *du, const float *dh, const float *a,
                                           const float *e, const float *u, size_t m)
{
    for (size_t j = 0; j < m; j++) {
        float x = a[j], sg = 1.0f / (1.0f + e[j]);
        du[j] = dh[j] * (x * sg);
        da[j] = dh[j] * u[j] * (sg * (1.0f + x * (1.0f - sg)));
    }
}
CPU_CLONES(glu_bwd,
           (float *da, float *du, const float *dh, const float *a, const float *e, const float *u,
            size_t m),
           (da, du, dh, a, e, u, m))

/* SwiGLU's gate (Shazeer 2020, "GLU Variants Improve Transformer"): h = silu(a) u with
 * silu(a) = a sg(a), sg the logistic sigmoid 1 / (1 + e^-a); produced block by block. */
static void swiglu_forward(struct gpt *g, float *h, const float *a, const float *u, size_t n,
                           int layer)
{
    float e[BLOCK];
    prof_enter(PROF_SWIGLU);
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t m = n - i < BLOCK ? n - i : BLOCK;
        exp_neg_n(e, a + i, m);
        glu_fwd(h + i, a + i, e, u + i, m);
        produced_in(g, h + i, m, layer, "mlp hidden");
    }
    prof_leave();
}

/* Its backward: du = dh silu(a) and da = dh u silu'(a), where
 *     silu'(a) = sg(a) + a sg'(a) = sg + a sg (1 - sg) = sg (1 + a (1 - sg))
 * (sg' = sg (1 - sg)); both rounded to the format block by block. */
static void swiglu_backward(struct gpt *g, float *da, float *du, const float *dh, const float *a,
                            const float *u, size_t n)
{
    float e[BLOCK];
    prof_enter(PROF_SWIGLU);
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t m = n - i < BLOCK ? n - i : BLOCK;
        exp_neg_n(e, a + i, m);
        glu_bwd(da + i, du + i, dh + i, a + i, e, u + i, m);
        rnd_in(g, da + i, m);
        rnd_in(g, du + i, m);
    }
    prof_leave();
}

/* ------------------------------------------------------------------ attention */

/* A causal T x T block's rows: row i has entries j = 0 to i. Each row's reductions (its max,
 * its sum, a dot product) run in order j = 0 to i, as for the row alone, but four rows at a
 * time: four independent chains of compares or additions overlap where one row's would wait on
 * each step in turn. Same bits; the softmax in a third less time. Rows i to i + n - 1, n <= 4
 * (fewer only for the last rows when T is not a multiple of 4: one at a time). */
static inline CPU_INLINE void causal_max(const float *s, int T, int i, int n, float mx[4])
{
    const float *a = s + (size_t)i * T, *b = a + T, *c = b + T, *e = c + T;
    if (n < 4) {
        for (int k = 0; k < n; k++) {
            const float *r = a + (size_t)k * T;
            mx[k] = r[0];
            for (int j = 1; j <= i + k; j++)
                mx[k] = r[j] > mx[k] ? r[j] : mx[k];
        }
        return;
    }
    float ma = a[0], mb = b[0], mc = c[0], me = e[0];
    for (int j = 1; j <= i; j++) {
        ma = a[j] > ma ? a[j] : ma;
        mb = b[j] > mb ? b[j] : mb;
        mc = c[j] > mc ? c[j] : mc;
        me = e[j] > me ? e[j] : me;
    }
    for (int j = i + 1; j <= i + 3; j++) { /* the longer rows' last entries */
        mb = j <= i + 1 && b[j] > mb ? b[j] : mb;
        mc = j <= i + 2 && c[j] > mc ? c[j] : mc;
        me = e[j] > me ? e[j] : me;
    }
    mx[0] = ma, mx[1] = mb, mx[2] = mc, mx[3] = me;
}

/* sum_j a_j over the rows. */
static inline CPU_INLINE void causal_sum(const float *a, int T, int i, int n, float sum[4])
{
    const float *a0 = a + (size_t)i * T, *a1 = a0 + T, *a2 = a1 + T, *a3 = a2 + T;
    if (n < 4) {
        for (int k = 0; k < n; k++) {
            const float *x = a0 + (size_t)k * T;
            sum[k] = 0;
            for (int j = 0; j <= i + k; j++)
                sum[k] += x[j];
        }
        return;
    }
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int j = 0; j <= i; j++) {
        s0 += a0[j];
        s1 += a1[j];
        s2 += a2[j];
        s3 += a3[j];
    }
    for (int j = i + 1; j <= i + 3; j++) {
        if (j <= i + 1)
            s1 += a1[j];
        if (j <= i + 2)
            s2 += a2[j];
        s3 += a3[j];
    }
    sum[0] = s0, sum[1] = s1, sum[2] = s2, sum[3] = s3;
}

/* sum_j a_j b_j over the rows. */
static inline CPU_INLINE void causal_dot(const float *a, const float *b, int T, int i, int n,
                                         float dot[4])
{
    const float *a0 = a + (size_t)i * T, *a1 = a0 + T, *a2 = a1 + T, *a3 = a2 + T;
    const float *b0 = b + (size_t)i * T, *b1 = b0 + T, *b2 = b1 + T, *b3 = b2 + T;
    if (n < 4) {
        for (int k = 0; k < n; k++) {
            const float *x = a0 + (size_t)k * T, *y = b0 + (size_t)k * T;
            dot[k] = 0;
            for (int j = 0; j <= i + k; j++)
                dot[k] += x[j] * y[j];
        }
        return;
    }
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int j = 0; j <= i; j++) {
        s0 += a0[j] * b0[j];
        s1 += a1[j] * b1[j];
        s2 += a2[j] * b2[j];
        s3 += a3[j] * b3[j];
    }
    for (int j = i + 1; j <= i + 3; j++) {
        if (j <= i + 1)
            s1 += a1[j] * b1[j];
        if (j <= i + 2)
            s2 += a2[j] * b2[j];
        s3 += a3[j] * b3[j];
    }
    dot[0] = s0, dot[1] = s1, dot[2] = s2, dot[3] = s3;
}

/* The softmax of each row of a causal block, in place: p_j = e^(s_j - max) / sum_k e^(s_k -
 * max) over the row's entries (the max subtracted so no e^ overflows; it cancels). The masked
 * entries stay 0. */
static inline CPU_INLINE void softmax_causal_body(float *s, int T)
{
    for (int i = 0; i < T; i += 4) {
        int n = T - i < 4 ? T - i : 4;
        float mx[4], sum[4];
        causal_max(s, T, i, n, mx);
        for (int k = 0; k < n; k++) {
            float *row = s + (size_t)(i + k) * T;
            for (int j = 0; j <= i + k; j++)
                row[j] -= mx[k];
            exp_n(row, row, (size_t)(i + k) + 1);
        }
        causal_sum(s, T, i, n, sum);
        for (int k = 0; k < n; k++) {
            float *row = s + (size_t)(i + k) * T, inv = 1.0f / sum[k];
            for (int j = 0; j <= i + k; j++)
                row[j] *= inv;
        }
    }
}
CPU_CLONES(softmax_causal, (float *s, int T), (s, T))

/* The softmax's backward over a causal block, in place of dP (rows of T): dS_j = P_j (dP_j -
 * sum_k P_k dP_k), times the 1/sqrt(hd) of S = q k^T / sqrt(hd) (see attn_core_backward). */
static inline CPU_INLINE void softmax_bwd_body(const float *p, float *dp, int T, float scale)
{
    for (int i = 0; i < T; i += 4) {
        int n = T - i < 4 ? T - i : 4;
        float dot[4];
        causal_dot(p, dp, T, i, n, dot);
        for (int k = 0; k < n; k++) {
            const float *pr = p + (size_t)(i + k) * T;
            float *dr = dp + (size_t)(i + k) * T;
            for (int j = 0; j <= i + k; j++)
                dr[j] = pr[j] * (dr[j] - dot[k]) * scale;
            for (int j = i + k + 1; j < T; j++)
                dr[j] = 0.0f;
        }
    }
}
CPU_CLONES(softmax_bwd, (const float *p, float *dp, int T, float scale), (p, dp, T, scale))

/* P = softmax(q k^T / sqrt(hd)) per (batch, head), causal: row i weighs positions j <= i;
 * into w[A_P]. Each head's T x T block is produced whole while it is in cache: the scores
 * rounded and checked ("attn scores"), the softmax, the probabilities rounded and checked
 * ("attn probs": never the first non-finite tensor, since the softmax of a finite row is
 * finite). Masked entries (j > i) are 0 and take no part in the softmax. */
static void attn_probs(struct gpt *g, int l)
{
    int T = g->c.seq, H = g->hl, hd = g->hd, d = g->dl;
    float scale = (float)(1.0 / sqrt((double)hd));
    size_t TT = (size_t)T * T;
    prof_enter(PROF_ATTENTION);
    for (int b = 0; b < g->B; b++)
        for (int h = 0; h < H; h++) {
            const float *q = g->w[A_Q] + (size_t)b * T * d + (size_t)h * hd;
            const float *k = g->w[A_K] + (size_t)b * T * d + (size_t)h * hd;
            float *s = g->w[A_P] + ((size_t)b * H + h) * TT;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hd, scale, q, d, k, d, 0.0f,
                        s, T);
            for (int i = 0; i < T; i++)
                memset(s + (size_t)i * T + i + 1, 0, (size_t)(T - 1 - i) * sizeof *s);
            rnd_in(g, s, TT);
            if (g->inj && g->inj->nan_scores_layer == l && b == 0 && h == 0)
                s[0] = NAN;
            check_in(g, s, TT, l, "attn scores");
            softmax_causal(s, T);
            produced_in(g, s, TT, l, "attn probs");
        }
    prof_leave();
}

/* att = P v per (batch, head), produced. */
static void attn_out(struct gpt *g, int l)
{
    int T = g->c.seq, H = g->hl, hd = g->hd, d = g->dl;
    size_t TT = (size_t)T * T;
    prof_enter(PROF_ATTENTION);
    for (int b = 0; b < g->B; b++)
        for (int h = 0; h < H; h++) {
            const float *p = g->w[A_P] + ((size_t)b * H + h) * TT;
            const float *v = g->w[A_V] + (size_t)b * T * d + (size_t)h * hd;
            float *o = g->w[A_ATT] + (size_t)b * T * d + (size_t)h * hd;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hd, T, 1.0f, p, T, v, d, 0.0f,
                        o, d);
        }
    prof_leave();
    produced(g, g->w[A_ATT], (size_t)g->N * d, l, "attn out");
}

/* ------------------------------------------------------------------ one layer */

/* Where a layer's tensors are computed and read: a kept tensor stored in fp32 (every one in
 * fp32 training, the RMSNorm statistics always) is computed in its saved set itself, since
 * copying it there would change nothing; the others in the workspace, rounded to the format
 * as they are stored. */
static void bind(struct gpt *g, void *const *set)
{
    for (int a = 0; a < A_COUNT; a++) {
        bool fp32 = g->fmt == FP_FP32 || act_fp32(a);
        g->w[a] = set && set[a] && fp32 ? set[a] : g->ws[a];
    }
}

/* ---- a mixture of experts in place of the MLP (model/moe.h routes the tokens) ---- */

/* The routing layer l keeps in w[A_ROUTE] and w[A_RP]: choices, rows and gates [N k], then
 * each expert's first row, kept tokens and load [E]. */
static struct moe_route route_of(const struct gpt *g)
{
    int N = g->N, k = g->c.moe.top_k, E = g->c.moe.experts;
    int32_t *r = (int32_t *)(void *)g->w[A_ROUTE];
    size_t nk = (size_t)N * (size_t)k;
    return (struct moe_route){.n = N,
                              .experts = E,
                              .k = k,
                              .probs = g->w[A_RP],
                              .choice = r,
                              .row = r + nk,
                              .gate = (float *)(void *)(r + 2 * nk),
                              .off = r + 3 * nk,
                              .kept = r + 3 * nk + E,
                              .load = r + 3 * nk + 2 * E};
}

/* Expert e's three matrices in a layer's weights or gradients. */
static void expert_w(const struct gpt *g, const struct layer_ptrs *t, int e, float **gate,
                     float **up, float **down)
{
    size_t fd = (size_t)g->fl * (size_t)g->c.d;
    *gate = t->experts + 3 * (size_t)e * fd, *up = *gate + fd, *down = *up + fd;
}

/* out [N, d] = Σ_j g_j expert_j(x) for the N tokens of x = xn2 (their k choices), each
 * expert a SwiGLU on the rows of its tokens (Shazeer et al. 2017, "Outrageously Large Neural
 * Networks", the sparsely gated layer). The router computes and keeps in fp32; the experts'
 * tensors are produced in the format like the dense MLP's. The routing's figures are counted
 * in the forward pass (not again when a checkpointed layer is recomputed: the same routing). */
static void moe_forward(struct gpt *g, int l, const float *x, float *out)
{
    int N = g->N, d = g->c.d, f = g->fl, k = g->c.moe.top_k, E = g->c.moe.experts;
    const struct layer_ptrs *W = &g->lw[l];
    float **w = g->w;
    struct moe_route r = route_of(g);
    mm_fwd(g->zlog, x, W->router, N, E, d);
    check(g, g->zlog, (size_t)N * E, l, "router logits");
    double aux = moe_route(&r, g->zlog, g->c.moe.capacity_factor, g->c.moe.aux_coef);
    if (g->in_forward) {
        int ml = moe_before(&g->c, l);
        g->aux += aux;
        g->routed += (uint64_t)N * (uint64_t)k, g->dropped += (uint64_t)r.dropped;
        memcpy(g->load + (size_t)ml * E, r.load, (size_t)E * sizeof *r.load);
        memcpy(g->kept + (size_t)ml * E, r.kept, (size_t)E * sizeof *r.kept);
    }
    /* dispatch: each kept choice's token into its expert's rows */
    for (int t = 0; t < N; t++)
        for (int j = 0; j < k; j++) {
            int row = r.row[t * k + j];
            if (row >= 0)
                memcpy(w[A_XE] + (size_t)row * d, x + (size_t)t * d, (size_t)d * 4);
        }
    for (int e = 0; e < E; e++) {
        int n = r.kept[e];
        size_t o = (size_t)r.off[e];
        float *xe = w[A_XE] + o * d, *a = w[A_G] + o * f, *u = w[A_U] + o * f;
        float *h = w[A_H] + o * f, *y = w[A_YE] + o * d, *wg, *wu, *wd;
        if (n == 0)
            continue;
        expert_w(g, W, e, &wg, &wu, &wd);
        mm_fwd(a, xe, wg, n, f, d);
        produced(g, a, (size_t)n * f, l, "expert gate");
        mm_fwd(u, xe, wu, n, f, d);
        produced(g, u, (size_t)n * f, l, "expert up");
        swiglu_forward(g, h, a, u, (size_t)n * f, l);
        mm_fwd(y, h, wd, n, d, f);
        produced(g, y, (size_t)n * d, l, "expert out");
    }
    /* combine: the gate-weighted sum of each token's experts' outputs, in choice order */
    for (int t = 0; t < N; t++) {
        float *o = out + (size_t)t * d;
        memset(o, 0, (size_t)d * 4);
        for (int j = 0; j < k; j++) {
            int row = r.row[t * k + j];
            float gj = r.gate[t * k + j];
            const float *y = w[A_YE] + (size_t)row * d;
            for (int c = 0; row >= 0 && c < d; c++)
                o[c] += gj * y[c];
        }
    }
    produced(g, out, (size_t)N * d, l, "experts out");
}

/* Its backward, with layer l's tensors in the workspace: from dout (d loss / d out) to dxn
 * (d loss / d x), and the gradients of the router and of every expert (zero for one that got
 * no token). */
static void moe_backward(struct gpt *g, int l, const float *dout, const float *x, float *dxn)
{
    int N = g->N, d = g->c.d, f = g->fl, k = g->c.moe.top_k, E = g->c.moe.experts;
    const struct layer_ptrs *W = &g->lw[l], *G = &g->lg[l];
    float **w = g->w;
    struct moe_route r = route_of(g);
    /* out_t = Σ_j g_j y_j: d g_j = dout_t . y_j, d y_j = g_j dout_t */
    for (int t = 0; t < N; t++)
        for (int j = 0; j < k; j++) {
            int row = r.row[t * k + j];
            const float *dt = dout + (size_t)t * d, *y = w[A_YE] + (size_t)row * d;
            float *dy = g->dye + (size_t)row * d, gj = r.gate[t * k + j], dot = 0;
            for (int c = 0; row >= 0 && c < d; c++) {
                dot += dt[c] * y[c];
                dy[c] = gj * dt[c];
            }
            g->dgate[t * k + j] = dot;
            if (row >= 0)
                rnd_in(g, dy, (size_t)d);
        }
    bool injected = false;
    for (int e = 0; e < E; e++) {
        int n = r.kept[e];
        size_t o = (size_t)r.off[e];
        float *wg, *wu, *wd, *gg, *gu, *gd;
        expert_w(g, W, e, &wg, &wu, &wd);
        expert_w(g, G, e, &gg, &gu, &gd);
        if (n == 0) { /* no token: no gradient (or nothing added to the micro-batches') */
            if (!g->accumulate)
                memset(gg, 0, 3 * (size_t)f * d * sizeof *gg);
            continue;
        }
        const float *xe = w[A_XE] + o * d, *a = w[A_G] + o * f, *u = w[A_U] + o * f;
        const float *h = w[A_H] + o * f, *dy = g->dye + o * d;
        size_t nf = (size_t)n * f;
        /* y = h Wd^T: dh = dy Wd, dWd = dy^T h */
        mm_dx(g->dh, dy, wd, n, d, f, 0.0f);
        rnd(g, g->dh, nf);
        if (g->inj && g->inj->inf_grad_layer == l && !injected)
            g->dh[0] = INFINITY, injected = true; /* the lessons' injected overflow */
        check(g, g->dh, nf, l, "grad expert hidden");
        mm_dw_acc(gd, dy, h, n, d, f, g->accumulate);
        produced_grad(g, gd, (size_t)d * f, l, "grad expert w_down");
        swiglu_backward(g, g->dg, g->du, g->dh, a, u, nf);
        mm_dw_acc(gg, g->dg, xe, n, f, d, g->accumulate);
        produced_grad(g, gg, (size_t)f * d, l, "grad expert w_gate");
        mm_dw_acc(gu, g->du, xe, n, f, d, g->accumulate);
        produced_grad(g, gu, (size_t)f * d, l, "grad expert w_up");
        float *dx = g->dxe + o * d;
        mm_dx(dx, g->dg, wg, n, f, d, 0.0f);
        mm_dx(dx, g->du, wu, n, f, d, 1.0f);
    }
    /* the dispatch's backward: each token's rows' gradients added back, in choice order */
    memset(dxn, 0, (size_t)N * d * sizeof *dxn);
    for (int t = 0; t < N; t++)
        for (int j = 0; j < k; j++) {
            int row = r.row[t * k + j];
            const float *dx = g->dxe + (size_t)row * d;
            float *dst = dxn + (size_t)t * d;
            for (int c = 0; row >= 0 && c < d; c++)
                dst[c] += dx[c];
        }
    /* the router: the gates' and the load-balancing loss's gradients to the logits */
    moe_route_backward(&r, g->dgate, g->c.moe.aux_coef, g->aux_scale, g->zlog);
    mm_dw_acc(G->router, g->zlog, x, N, E, d, g->accumulate);
    produced_grad(g, G->router, (size_t)E * d, l, "grad router");
    mm_dx(dxn, g->zlog, W->router, N, E, d, 1.0f);
}

/* Runs layer l on the residual stream res (updated in place to the layer's output); keeps the
 * tensors of `save` (any may be NULL). Every tensor is rounded to the working format where it is
 * produced, as a bf16 kernel would write it. */
static void layer_forward(struct gpt *g, int l, float *res, void **save)
{
    int N = g->N, d = g->c.d, dl = g->dl, f = g->fl;   /* a tensor-parallel rank's widths */
    size_t nd = (size_t)g->nl * d, nf = (size_t)N * f; /* nd: the residual stream's */
    const struct layer_ptrs *W = &g->lw[l];
    float **w = g->w;
    bind(g, save);
    if (save && save[A_X])
        store(g, save[A_X], res, nd);
    const float *xin; /* a norm's output over every row (gathered under sequence parallelism) */

    /* attention: xn1 = RMSNorm(x); q, k, v = xn1 Wq^T, xn1 Wk^T, xn1 Wv^T, q and k rotated by
     * their position (RoPE); att = softmax(q k^T / sqrt(hd), causal) v; xm = x + att Wo^T */
    rmsnorm(g, l, "attn norm", w[A_XN1], w[A_RSTD1], res, W->attn_norm);
    xin = sp_gather(g, g->xg, w[A_XN1], "attn norm");
    linear(g, l, NULL, w[A_Q], xin, W->wq, dl, d); /* rounded, rotated, then checked */
    linear(g, l, NULL, w[A_K], xin, W->wk, dl, d);
    rope(g, l, "q", w[A_Q], 1);
    rope(g, l, "k", w[A_K], 1);
    linear(g, l, "v", w[A_V], xin, W->wv, dl, d);
    attn_probs(g, l);
    attn_out(g, l);
    linear(g, l, "attn proj", g->tmp, w[A_ATT], W->wo, d, dl);
    tp_reduce_rows(g, g->tmp, "attn proj"); /* each rank's heads' share of the projection */
    add(g, w[A_XM], res, g->tmp, nd, l, "attn residual");

    /* MLP (SwiGLU): xn2 = RMSNorm(xm); h = silu(xn2 Wg^T) * (xn2 Wu^T); out = xm + h Wd^T;
     * or, with experts, out = xm + the experts' gate-weighted outputs (moe_forward) */
    rmsnorm(g, l, "mlp norm", w[A_XN2], w[A_RSTD2], w[A_XM], W->mlp_norm);
    xin = sp_gather(g, g->xg, w[A_XN2], "mlp norm");
    if (gpt_layer_moe(&g->c, l)) {
        moe_forward(g, l, xin, g->tmp);
    } else {
        linear(g, l, "gate", w[A_G], xin, W->w_gate, f, d);
        linear(g, l, "up", w[A_U], xin, W->w_up, f, d);
        swiglu_forward(g, w[A_H], w[A_G], w[A_U], nf, l);
        linear(g, l, "mlp out", g->tmp, w[A_H], W->w_down, d, f);
    }
    tp_reduce_rows(g, g->tmp, "mlp out"); /* each rank's share of the FFN width */
    add(g, res, w[A_XM], g->tmp, nd, l, "output");

    if (save) /* the kept tensors not computed in place */
        for (int a = A_RSTD1; a < A_COUNT; a++)
            if (save[a] && save[a] != w[a])
                store(g, save[a], w[a], act_elems(g, a, sz_of(g, l)));
}

/* The MLP's backward, with the layer's tensors in the workspace: dres holds d loss / d out on
 * entry, d loss / d xm on return; writes the gradients of w_down, w_gate, w_up and mlp_norm. */
static void mlp_backward(struct gpt *g, int l, float *dres)
{
    int N = g->N, d = g->c.d, f = g->fl;
    size_t nd = (size_t)N * d, nf = (size_t)N * f, nld = (size_t)g->nl * d;
    const struct layer_ptrs *W = &g->lw[l], *G = &g->lg[l];
    float **w = g->w;
    /* under sequence parallelism every row of dout and xn2, gathered (the backward of the
     * reduce-scatter, and the norm's output again for the weight gradients) */
    const float *dout = sp_gather(g, g->dg_full, dres, "grad mlp out");
    if (gpt_layer_moe(&g->c, l)) { /* the experts' and the router's (moe_backward) */
        moe_backward(g, l, dout, w[A_XN2], g->dxn);
        produced(g, g->dxn, nd, l, "grad mlp norm");
        rms_bwd(g, dres, G->mlp_norm, w[A_XM], w[A_RSTD2], W->mlp_norm, g->dxn, g->nl, d);
        produced_grad(g, G->mlp_norm, (size_t)d, l, "grad mlp_norm");
        produced(g, dres, nld, l, "grad attn residual");
        return;
    }

    /* out = xm + h Wd^T: dh = dout Wd, dWd = dout^T h; dout also flows on to xm (the residual) */
    mm_dx(g->dh, dout, W->w_down, N, d, f, 0.0f);
    rnd(g, g->dh, nf);
    if (g->inj && g->inj->inf_grad_layer == l)
        g->dh[0] = INFINITY; /* the lessons' injected overflow */
    check(g, g->dh, nf, l, "grad mlp hidden");
    weight_grad(g, l, "grad w_down", G->w_down, dout, w[A_H], d, f);

    /* h = silu(a) u: see swiglu_backward */
    swiglu_backward(g, g->dg, g->du, g->dh, w[A_G], w[A_U], nf);
    const float *xn2 = sp_gather(g, g->xg, w[A_XN2], "mlp norm again");
    weight_grad(g, l, "grad w_gate", G->w_gate, g->dg, xn2, f, d);
    weight_grad(g, l, "grad w_up", G->w_up, g->du, xn2, f, d);
    /* a = xn2 Wg^T, u = xn2 Wu^T: dxn2 = da Wg + du Wu */
    mm_dx(g->dxn, g->dg, W->w_gate, N, f, d, 0.0f);
    mm_dx(g->dxn, g->du, W->w_up, N, f, d, 1.0f);
    produced(g, g->dxn, nd, l, "grad mlp norm");
    tp_reduce_rows(g, g->dxn, "grad mlp norm"); /* xn2 fed every rank's share of the width */
    /* xn2 = RMSNorm(xm): see rms_bwd; dxm joins the residual's gradient in dres */
    rms_bwd(g, dres, G->mlp_norm, w[A_XM], w[A_RSTD2], W->mlp_norm, g->dxn, g->nl, d);
    produced_grad(g, G->mlp_norm, (size_t)d, l, "grad mlp_norm");
    produced(g, dres, nld, l, "grad attn residual");
}

/* The attention core's backward, per (batch, head), from datt to dq, dk, dv (rounded), with
 * the probabilities, q, k and v of layer l in the workspace. */
static void attn_core_backward(struct gpt *g, int l)
{
    int N = g->N, d = g->dl, T = g->c.seq, H = g->hl, hd = g->hd;
    size_t nd = (size_t)N * d, TT = (size_t)T * T;
    float **w = g->w;
    float scale = (float)(1.0 / sqrt((double)hd));
    prof_enter(PROF_ATTENTION);
    for (int b = 0; b < g->B; b++)
        for (int h = 0; h < H; h++) {
            size_t off = (size_t)b * T * d + (size_t)h * hd;
            const float *p = w[A_P] + ((size_t)b * H + h) * TT;
            const float *dO = g->datt + off;
            float *dp = g->dp;
            /* O = P V: dP = dO V^T, dV = P^T dO */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hd, 1.0f, dO, d,
                        w[A_V] + off, d, 0.0f, dp, T);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hd, T, 1.0f, p, T, dO, d, 0.0f,
                        g->dv + off, d);
            rnd_in(g, dp, TT);
            /* P = softmax(S) row by row: dS_j = P_j (dP_j - sum_k P_k dP_k), since
             * dP_i/dS_j = P_i (delta_ij - P_j); times the 1/sqrt(hd) of S = q k^T / sqrt(hd).
             * Masked entries (j > i) have P = 0 and get no gradient. */
            softmax_bwd(p, dp, T, scale);
            produced_in(g, dp, TT, l, "grad attn scores");
            /* S = Q K^T (scaled above): dQ = dS K, dK = dS^T Q */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hd, T, 1.0f, dp, T,
                        w[A_K] + off, d, 0.0f, g->dq + off, d);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hd, T, 1.0f, dp, T,
                        w[A_Q] + off, d, 0.0f, g->dk + off, d);
        }
    prof_leave();
    rnd(g, g->dq, nd);
    rnd(g, g->dk, nd);
    rnd(g, g->dv, nd);
    /* q and k were rotated after their projections: dq, dk turned back (see rope) */
    rope(g, l, NULL, g->dq, -1);
    rope(g, l, NULL, g->dk, -1);
}

/* The attention's backward: dres holds d loss / d xm on entry, d loss / d x (the layer's
 * input) on return; writes the gradients of wo, wq, wk, wv and attn_norm. */
static void attn_backward(struct gpt *g, int l, float *dres)
{
    int N = g->N, d = g->c.d, dl = g->dl;
    size_t nd = (size_t)N * d, nld = (size_t)g->nl * d;
    const struct layer_ptrs *W = &g->lw[l], *G = &g->lg[l];
    float **w = g->w;
    const float *dxm = sp_gather(g, g->dg_full, dres, "grad attn proj"); /* every row */

    /* xm = x + att Wo^T: datt = dxm Wo, dWo = dxm^T att */
    mm_dx(g->datt, dxm, W->wo, N, d, dl, 0.0f);
    rnd(g, g->datt, (size_t)N * dl);
    weight_grad(g, l, "grad wo", G->wo, dxm, w[A_ATT], d, dl);
    /* att = softmax(q k^T / sqrt(hd)) v per head, q and k rotated: see attn_core_backward */
    attn_core_backward(g, l);
    const float *xn1 = sp_gather(g, g->xg, w[A_XN1], "attn norm again");
    weight_grad(g, l, "grad wq", G->wq, g->dq, xn1, dl, d);
    weight_grad(g, l, "grad wk", G->wk, g->dk, xn1, dl, d);
    weight_grad(g, l, "grad wv", G->wv, g->dv, xn1, dl, d);
    /* q, k, v = xn1 W^T: dxn1 = dq Wq + dk Wk + dv Wv */
    mm_dx(g->dxn, g->dq, W->wq, N, dl, d, 0.0f);
    mm_dx(g->dxn, g->dk, W->wk, N, dl, d, 1.0f);
    mm_dx(g->dxn, g->dv, W->wv, N, dl, d, 1.0f);
    produced(g, g->dxn, nd, l, "grad attn norm");
    tp_reduce_rows(g, g->dxn, "grad attn norm"); /* xn1 fed every rank's heads */
    rms_bwd(g, dres, G->attn_norm, w[A_X], w[A_RSTD1], W->attn_norm, g->dxn, g->nl, d);
    produced_grad(g, G->attn_norm, (size_t)d, l, "grad attn_norm");
    produced(g, dres, nld, l, "grad input");
}

/* Backward of layer l with its tensors in the workspace: on entry dres is d loss / d output,
 * on return d loss / d input. Writes the layer's weight gradients. */
static void layer_backward(struct gpt *g, int l, float *dres)
{
    mlp_backward(g, l, dres);
    attn_backward(g, l, dres);
}

/* Decodes a saved set into the workspace; recomputes the probabilities if they were not kept. */
static void load_set(struct gpt *g, int l, void **set)
{
    bind(g, set);
    for (int a = 0; a < A_COUNT; a++)
        if (set[a] && set[a] != g->w[a])
            load(g, g->w[a], set[a], act_elems(g, a, sz_of(g, l)));
    if (!set[A_P]) { /* selective: the attention core comes back to life, in its slot */
        charge(g, (long long)act_bytes(g, A_P, SZ_DENSE));
        if (g->fmt == FP_FP32)
            g->w[A_P] = g->pslot;
        attn_probs(g, l);
        if (g->w[A_P] != g->pslot) /* already rounded: exact */
            store(g, g->pslot, g->w[A_P], act_elems(g, A_P, SZ_DENSE));
        compute(g, attn_flops(g) / 2, "recompute", l);
    }
}

/* ------------------------------------------------------------------ the passes */

/* Bytes layer l charges when its list is stored: all of it, or all but the core. */
static size_t set_bytes(const struct gpt *g, void **set, int l)
{
    size_t b = 0;
    for (int a = 0; a < A_COUNT; a++)
        if (set[a])
            b += act_bytes(g, a, sz_of(g, l));
    return b;
}

static void **saved_set(struct gpt *g, int slot, int l)
{
    return g->saved[(size_t)slot * g->c.layers + l];
}

/* A step begins: the diagnosis and the underflow counts start again. */
static void step_begin(struct gpt *g)
{
    g->nonfinite[0] = 0;
    g->nonfinite_forward = false;
    memset(g->underflow, 0, ((size_t)g->c.layers + 1) * sizeof *g->underflow);
    g->underflow_total = 0;
    g->aux = 0, g->routed = g->dropped = 0;
}

/* The load-balancing loss's weight in the backward pass: the loss scale, times this batch's
 * share of the tokens the loss is averaged over (a data-parallel GPU's aux is one of the
 * GPUs', a micro-batch's one of the micro-batches': the gradients add up to their mean's). */
static void set_aux_scale(struct gpt *g, float loss_scale)
{
    g->aux_scale = (double)loss_scale * (double)g->N / g->loss_tokens;
}

/* The embedding lookup: the residual stream starts as the rows of the tokens. */
static void embed_forward(struct gpt *g, const int32_t *tokens)
{
    int N = g->N, d = g->c.d;
    const float *E = g->params;
    hook(g, GPT_HOOK_FORWARD, GPT_UNIT_EMBED);
    /* vocabulary-parallel: a rank has rows v0..v0+vl-1; the others' tokens are zeros here and
     * come from their rank in the sum */
    for (int r = 0; r < N; r++) {
        int t = tokens[r] - g->v0;
        float *x = g->res + (size_t)r * d;
        if (t >= 0 && t < g->vl)
            memcpy(x, E + (size_t)t * d, (size_t)d * 4);
        else
            memset(x, 0, (size_t)d * 4);
    }
    tp_reduce_rows(g, g->res, "embedding"); /* under sequence parallelism: this rank's rows */
    hook(g, GPT_HOOK_FORWARD_DONE, GPT_UNIT_EMBED);
    check(g, g->res, (size_t)g->nl * d, -1, "embedding");
}

/* The part's layers on the residual stream, keeping what the backward pass of micro-batch
 * `slot` needs. */
static void layers_forward(struct gpt *g, int slot)
{
    const struct gpt_part *pt = &g->part;
    for (int l = pt->first; l < pt->first + pt->count; l++) {
        hook(g, GPT_HOOK_FORWARD, l);
        if (g->seg) {
            void *set[A_COUNT] = {0};
            int k = l - pt->first;
            if (k % g->seg == 0) { /* a checkpoint: the segment's input */
                set[A_X] = g->segin[slot * g->nseg + k / g->seg];
                charge(g, (long long)act_bytes(g, A_X, SZ_DENSE));
            }
            layer_forward(g, l, g->res, set);
        } else {
            layer_forward(g, l, g->res, saved_set(g, slot, l));
            charge(g, (long long)set_bytes(g, saved_set(g, slot, l), l));
        }
        compute(g, layer_flops(g, l), "forward", l);
        hook(g, GPT_HOOK_FORWARD_DONE, l);
    }
}

/* The cross-entropy over a vocabulary split between the tensor-parallel ranks (Megatron-LM's
 * vocab-parallel cross-entropy): each rank has logits z for its rows only; the row maximum,
 * the sum of exp(z - max) and the target's logit (held by one rank, 0 on the others) are
 * reduced over the group in fp32, so lse = log(sum) + max and the loss lse - z_target are
 * every rank's, and each keeps softmax = exp(z - lse) for its rows. The sum of the rows' losses. */
static double parallel_cross_entropy(struct gpt *g, float *probs, const int32_t *targets)
{
    int N = g->N, V = g->vl;
    prof_enter(PROF_LOSS);
    for (int r = 0; r < N; r++) {
        const float *z = g->logits + (size_t)r * V;
        float mx = z[0];
        for (int j = 1; j < V; j++)
            mx = z[j] > mx ? z[j] : mx;
        g->rowmax[r] = mx;
    }
    g->alloc.tp_reduce(g->alloc.ctx, g->rowmax, (size_t)N, GPT_TP_MAX_FP32, "logits max");
    for (int r = 0; r < N; r++) {
        const float *z = g->logits + (size_t)r * V;
        double s = 0;
        for (int j = 0; j < V; j++)
            s += exp((double)z[j] - g->rowmax[r]);
        int t = targets[r] - g->v0;
        g->rowsum[r] = (float)s;
        g->rowtgt[r] = t >= 0 && t < V ? z[t] : 0.0f;
    }
    g->alloc.tp_reduce(g->alloc.ctx, g->rowsum, (size_t)N, GPT_TP_SUM_FP32, "sum of exp(logits)");
    g->alloc.tp_reduce(g->alloc.ctx, g->rowtgt, (size_t)N, GPT_TP_SUM_FP32, "target logits");
    double loss = 0;
    for (int r = 0; r < N; r++) {
        const float *z = g->logits + (size_t)r * V;
        float *pr = probs + (size_t)r * V;
        double lse = log((double)g->rowsum[r]) + g->rowmax[r];
        for (int j = 0; j < V; j++)
            pr[j] = (float)exp((double)z[j] - lse);
        loss += lse - g->rowtgt[r];
    }
    prof_leave();
    return loss;
}

/* The ends: final norm, logits = hn E^T, softmax in fp32, mean cross-entropy. */
static double head_forward(struct gpt *g, int slot, const int32_t *targets)
{
    int N = g->N, d = g->c.d, V = g->vl;                /* this rank's vocabulary */
    size_t nld = (size_t)g->nl * d, nv = (size_t)N * V; /* nld: the residual stream's */
    void **head = g->head[slot];
    const float *E = g->params, *wf = g->params + g->nparams - d;
    hook(g, GPT_HOOK_FORWARD, GPT_UNIT_HEAD);
    store(g, head[H_X], g->res, nld);
    rmsnorm(g, -1, "final norm", g->hn, head[H_RSTD], g->res, wf);
    store(g, head[H_N], g->hn, nld);
    mm_fwd(g->logits, sp_gather(g, g->xg, g->hn, "final norm"), E, N, V, d);
    if (g->inj && g->inj->logit_factor != 1.0f)
        for (size_t i = 0; i < nv; i++)
            g->logits[i] *= g->inj->logit_factor; /* the lessons' bad batch */
    produced(g, g->logits, nv, -1, "logits");
    float *probs = head[H_PROBS];
    double loss = 0;
    if (g->tp > 1) {
        loss = parallel_cross_entropy(g, probs, targets);
        charge(g, (long long)g->head_bytes);
        compute(g, head_flops(g), "head forward", -1);
        return loss / N;
    }
    prof_enter(PROF_LOSS);
    for (int r = 0; r < N; r++) {
        const float *z = g->logits + (size_t)r * V;
        float *pr = probs + (size_t)r * V;
        float mx = z[0];
        for (int j = 1; j < V; j++)
            mx = z[j] > mx ? z[j] : mx;
        double s = 0;
        for (int j = 0; j < V; j++)
            s += exp((double)z[j] - mx);
        double lse = log(s) + mx;
        for (int j = 0; j < V; j++)
            pr[j] = (float)exp((double)z[j] - lse);
        loss += lse - z[targets[r]];
    }
    prof_leave();
    charge(g, (long long)g->head_bytes);
    compute(g, head_flops(g), "head forward", -1);
    return loss / N;
}

/* The head's backward, from d(loss_scale x mean CE) / d logits = (softmax - onehot) x
 * loss_scale / tokens: the tied embedding's head share, the final norm's gradient, and
 * d loss / d (the last layer's output) into dres. */
static void head_backward(struct gpt *g, int slot, const int32_t *targets, float loss_scale)
{
    int N = g->N, d = g->c.d, V = g->vl, L = g->c.layers; /* this rank's vocabulary */
    size_t nd = (size_t)N * d, nv = (size_t)N * V;
    void **head = g->head[slot];
    float *E = g->params, *gE = g->grads, *dl = g->logits;
    const float *probs = head[H_PROBS];
    float coef = loss_scale / (float)g->loss_tokens;
    prof_enter(PROF_LOSS);
    for (int r = 0; r < N; r++) {
        const float *pr = probs + (size_t)r * V;
        float *z = dl + (size_t)r * V;
        for (int j = 0; j < V; j++)
            z[j] = pr[j];
        int t = targets[r] - g->v0; /* the one-hot is on the target's rank */
        if (t >= 0 && t < V)
            z[t] -= 1.0f;
        for (int j = 0; j < V; j++)
            z[j] *= coef;
    }
    prof_leave();
    if (g->inj && g->inj->logit_factor != 1.0f)
        for (size_t i = 0; i < nv; i++)
            dl[i] *= g->inj->logit_factor;
    produced(g, dl, nv, -1, "grad logits");
    size_t nld = (size_t)g->nl * d; /* the residual stream's rows */
    load(g, g->hn, head[H_N], nld);
    load(g, g->hx, head[H_X], nld);
    memcpy(g->hrstd, head[H_RSTD], (size_t)g->nl * 4);
    const float *hn = sp_gather(g, g->xg, g->hn, "final norm again"); /* every row */
    mm_dw_acc(gE, dl, hn, N, V, d, g->accumulate); /* the head's share of the embedding's */
    mm_dx(g->dxn, dl, E, N, V, d, 0.0f);
    rnd(g, g->dxn, nd);
    tp_reduce_rows(g, g->dxn, "grad head input"); /* hn fed every rank's vocabulary */
    memset(g->dres, 0, nld * 4);
    float *gwf = g->grads + g->nparams - d;
    rms_bwd(g, g->dres, gwf, g->hx, g->hrstd, g->params + g->nparams - d, g->dxn, g->nl, d);
    produced_grad(g, gwf, (size_t)d, L, "grad final_norm");
    produced(g, g->dres, nld, -1, "grad final norm");
    compute(g, 2 * head_flops(g), "head backward", -1);
    charge(g, -(long long)g->head_bytes);
    hook(g, GPT_HOOK_FORWARD_DONE, GPT_UNIT_HEAD);
    hook(g, GPT_HOOK_GRADS, GPT_UNIT_HEAD);
}

/* The part's layers backward, from dres (d loss / d the part's output) to d loss / d its
 * input, recomputing what micro-batch `slot` did not keep. */
static void layers_backward(struct gpt *g, int slot)
{
    const struct gpt_part *pt = &g->part;
    size_t nd = (size_t)g->nl * g->c.d; /* the residual stream's rows */
    int l0 = pt->first, l1 = pt->first + pt->count;
    if (g->seg) {
        for (int s = g->nseg - 1; s >= 0; s--) {
            int a = l0 + s * g->seg, b = a + g->seg < l1 ? a + g->seg : l1;
            /* recompute the segment from its checkpoint */
            load(g, g->res, g->segin[slot * g->nseg + s], nd);
            for (int l = a; l < b; l++) {
                hook(g, g->seg == 1 ? GPT_HOOK_BACKWARD : GPT_HOOK_FORWARD, l);
                layer_forward(g, l, g->res, g->pool[l - a]);
                /* the segment's first input is its checkpoint, already charged */
                charge(g,
                       (long long)(layer_bytes(g, l) - (l == a ? act_bytes(g, A_X, SZ_DENSE) : 0)));
                compute(g, layer_flops(g, l), "recompute", l);
                if (g->seg > 1)
                    hook(g, GPT_HOOK_FORWARD_DONE, l);
            }
            for (int l = b - 1; l >= a; l--) {
                if (g->seg > 1)
                    hook(g, GPT_HOOK_BACKWARD, l);
                load_set(g, l, g->pool[l - a]);
                layer_backward(g, l, g->dres);
                compute(g, 2 * layer_flops(g, l), "backward", l);
                charge(g, -(long long)layer_bytes(g, l));
                hook(g, GPT_HOOK_GRADS, l);
            }
        }
    } else
        for (int l = l1 - 1; l >= l0; l--) {
            hook(g, GPT_HOOK_BACKWARD, l);
            load_set(g, l, saved_set(g, slot, l));
            layer_backward(g, l, g->dres);
            compute(g, 2 * layer_flops(g, l), "backward", l);
            charge(g, -(long long)layer_bytes(g, l));
            hook(g, GPT_HOOK_GRADS, l);
        }
}

/* The embedding's backward: the rows of the tokens seen receive the input gradient (after the
 * head's share, when this model holds the head too). */
static void embed_backward(struct gpt *g, const int32_t *tokens)
{
    int N = g->N, d = g->c.d, V = g->vl; /* this rank's vocabulary rows */
    float *gE = g->grads;
    if (!g->part.head && !g->accumulate) /* no head share: the rows alone */
        memset(gE, 0, (size_t)V * d * sizeof *gE);
    const float *dx = sp_gather(g, g->dg_full, g->dres, "grad embedding"); /* every row */
    for (int r = 0; r < N; r++) {
        int t = tokens[r] - g->v0;
        if (t < 0 || t >= V)
            continue;
        float *dst = gE + (size_t)t * d;
        const float *src = dx + (size_t)r * d;
        for (int j = 0; j < d; j++)
            dst[j] += src[j];
    }
    produced_grad(g, gE, (size_t)V * d, g->c.layers, "grad embedding");
    hook(g, GPT_HOOK_GRADS, GPT_UNIT_EMBED);
}

/* ------------------------------------------------------------------ the whole model */

double gpt_forward(struct gpt *g, const int32_t *tokens, const int32_t *targets,
                   const struct gpt_inject *inj)
{
    g->inj = inj;
    step_begin(g);
    g->in_forward = true;
    embed_forward(g, tokens);
    layers_forward(g, 0);
    double loss = head_forward(g, 0, targets) + g->aux; /* the experts' load-balancing loss */
    g->in_forward = false;
    hook(g, GPT_HOOK_FORWARD_DONE, GPT_UNIT_HEAD);
    charge(g, -(long long)g->live); /* nothing will need them */
    g->inj = NULL;
    return loss;
}

double gpt_step(struct gpt *g, const int32_t *tokens, const int32_t *targets, float loss_scale,
                const struct gpt_inject *inj)
{
    g->inj = inj;
    g->accumulate = false;
    step_begin(g);
    g->in_forward = true;
    embed_forward(g, tokens);
    layers_forward(g, 0);
    double loss = head_forward(g, 0, targets) + g->aux; /* the experts' load-balancing loss */
    g->in_forward = false;
    set_aux_scale(g, loss_scale);
    head_backward(g, 0, targets, loss_scale);
    layers_backward(g, 0);
    embed_backward(g, tokens);
    g->inj = NULL;
    return loss;
}

/* ------------------------------------------------------------------ a part of the model */

void gpt_part_begin(struct gpt *g)
{
    step_begin(g);
}

double gpt_part_forward(struct gpt *g, int slot, const int32_t *tokens, const void *in, void *out,
                        const int32_t *targets, const struct gpt_inject *inj)
{
    size_t nd = (size_t)g->nl * g->c.d; /* this rank's rows of the stream */
    double aux = g->aux;
    g->inj = inj;
    g->in_forward = true;
    if (g->part.embed)
        embed_forward(g, tokens);
    else
        load(g, g->res, in, nd);
    layers_forward(g, slot);
    double loss = NAN;
    if (g->part.head) /* with this micro-batch's load-balancing loss in this part's layers */
        loss = head_forward(g, slot, targets) + (g->aux - aux);
    else
        store(g, out, g->res, nd); /* already in the format: exact */
    g->in_forward = false;
    g->inj = NULL;
    return loss;
}

void gpt_part_backward(struct gpt *g, int slot, const int32_t *tokens, const int32_t *targets,
                       float loss_scale, const void *dout, void *din, bool accumulate,
                       const struct gpt_inject *inj)
{
    size_t nd = (size_t)g->nl * g->c.d; /* this rank's rows of the stream */
    g->inj = inj;
    g->accumulate = accumulate;
    set_aux_scale(g, loss_scale);
    if (g->part.head)
        head_backward(g, slot, targets, loss_scale);
    else
        load(g, g->dres, dout, nd);
    layers_backward(g, slot);
    if (g->part.embed)
        embed_backward(g, tokens);
    else
        store(g, din, g->dres, nd);
    g->accumulate = false;
    g->inj = NULL;
}
