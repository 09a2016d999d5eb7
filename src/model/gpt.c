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

#include "base/error.h"
#include "base/rng.h"

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
    return 0;
}

static size_t layer_params(const struct gpt_config *c)
{
    size_t d = (size_t)c->d, f = (size_t)c->ffn;
    return 2 * d + 4 * d * d + 3 * d * f;
}

size_t gpt_param_count(const struct gpt_config *c)
{
    return (size_t)c->vocab * c->d + (size_t)c->layers * layer_params(c) + (size_t)c->d;
}

size_t gpt_tensor_count(const struct gpt_config *c)
{
    return 2 + 9 * (size_t)c->layers;
}

static const char *const kind_names[GPT_KINDS] = {
    "embedding", "attn_norm", "wq",   "wk",     "wv",         "wo",
    "mlp_norm",  "w_gate",    "w_up", "w_down", "final_norm",
};

const char *gpt_kind_name(enum gpt_kind k)
{
    return k < GPT_KINDS ? kind_names[k] : "?";
}

struct gpt_tensor gpt_tensor_at(const struct gpt_config *c, size_t i)
{
    size_t d = (size_t)c->d, f = (size_t)c->ffn;
    struct gpt_tensor t = {GPT_EMBEDDING, -1, 0, c->vocab, c->d};
    if (i == 0)
        return t;
    if (i == gpt_tensor_count(c) - 1)
        return (struct gpt_tensor){GPT_FINAL_NORM, -1, gpt_param_count(c) - d, 1, c->d};
    size_t l = (i - 1) / 9, k = (i - 1) % 9;
    size_t off = (size_t)c->vocab * d + l * layer_params(c);
    /* sizes of the nine tensors of a layer, in order */
    const size_t rows[9] = {1, d, d, d, d, 1, f, f, d};
    const size_t cols[9] = {d, d, d, d, d, d, d, d, f};
    for (size_t j = 0; j < k; j++)
        off += rows[j] * cols[j];
    return (struct gpt_tensor){(enum gpt_kind)(GPT_ATTN_NORM + k), (int)l, off, (int)rows[k],
                               (int)cols[k]};
}

/* ------------------------------------------------------------------ checkpoint policies */

int gpt_ckpt_parse(const char *s, struct gpt_ckpt *out, struct error *e)
{
    struct gpt_ckpt p = {GPT_CKPT_NONE, 0, ""};
    if (!strcmp(s, "none"))
        p.kind = GPT_CKPT_NONE;
    else if (!strcmp(s, "full"))
        p.kind = GPT_CKPT_SEGMENTS, p.every = 1;
    else if (!strcmp(s, "sqrt"))
        p.kind = GPT_CKPT_SEGMENTS, p.every = 0;
    else if (!strcmp(s, "selective"))
        p.kind = GPT_CKPT_SELECTIVE;
    else if (!strncmp(s, "every:", 6)) {
        char *end;
        long k = strtol(s + 6, &end, 10);
        if (end == s + 6 || *end || k < 1 || k > 1024)
            return error_set(e, ERR_INVAL,
                             "checkpoint policy '%s': every:K needs a whole K from 1 to 1024", s);
        p.kind = GPT_CKPT_SEGMENTS, p.every = (int)k;
    } else
        return error_set(e, ERR_INVAL,
                         "unknown checkpoint policy '%s' (none, full, every:K, sqrt, selective)",
                         s);
    snprintf(p.name, sizeof p.name, "%s", s);
    *out = p;
    return 0;
}

int gpt_ckpt_segment(const struct gpt_ckpt *p, int layers)
{
    if (p->kind != GPT_CKPT_SEGMENTS)
        return 0;
    int k = p->every;
    if (k == 0) /* sqrt: segments of ceil(sqrt(L)) layers */
        while ((long)k * k < layers)
            k++;
    return k < layers ? k : layers;
}

/* ------------------------------------------------------------------ the model */

/* Where one layer's tensors are in a flat buffer (the weights, or the gradients). */
struct layer_ptrs {
    float *attn_norm, *wq, *wk, *wv, *wo, *mlp_norm, *w_gate, *w_up, *w_down;
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
    A_COUNT
};
/* The ends keep the final norm's input, 1 / rms and output, and the fp32 probabilities. */
enum { H_X, H_RSTD, H_N, H_PROBS, H_COUNT };

struct gpt {
    struct gpt_config c;
    int B, N, hd, seg; /* seg: segment length (0: not segmented) */
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
    size_t layer_bytes, head_bytes; /* a full list of kept tensors; the ends */
    size_t live, peak;              /* charged activation bytes */

    /* fp32 workspace: one layer's tensors, the residual stream and the gradients */
    float *w[A_COUNT], *tmp, *res, *dres, *dxn, *dq, *dk, *dv, *datt, *dh, *dg, *du, *dp;
    float *hx, *hn, *hrstd, *logits;
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
    free(g->lw);
    free(g->lg);
    free(g);
}

static size_t act_elems(const struct gpt *g, int a)
{
    size_t N = (size_t)g->N, d = (size_t)g->c.d, f = (size_t)g->c.ffn;
    if (a == A_P)
        return (size_t)g->B * g->c.heads * g->c.seq * g->c.seq;
    if (a == A_G || a == A_U || a == A_H)
        return N * f;
    if (a == A_RSTD1 || a == A_RSTD2)
        return N;
    return N * d;
}

/* Bytes of a kept tensor: the format's width, fp32 for the RMSNorm statistics. */
static size_t act_bytes(const struct gpt *g, int a)
{
    return act_elems(g, a) * (a == A_RSTD1 || a == A_RSTD2 ? 4 : g->esize);
}

/* One saved set in the arena; which tensors it holds depends on the policy. */
static void carve_set(struct gpt *g, void **set, bool selective)
{
    for (int a = 0; a < A_COUNT; a++)
        set[a] = a == A_P && selective ? NULL : carve(g, GPT_MEM_ARENA, act_bytes(g, a));
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

/* Parameters of a part: the embedding when it has either end (the head's is the tied one),
 * its layers, the final norm with the head. */
size_t gpt_part_param_count(const struct gpt_config *c, const struct gpt_part *p)
{
    if (!p)
        return gpt_param_count(c);
    size_t d = (size_t)c->d, lp = 2 * d + 4 * d * d + 3 * d * (size_t)c->ffn;
    return (p->embed || p->head ? (size_t)c->vocab * d : 0) + (size_t)p->count * lp +
           (p->head ? d : 0);
}

/* The shape of a model, before any buffer: 0 or an error. */
static int setup(struct gpt *g, const struct gpt_config *c, int batch, enum fp_format fmt,
                 const struct gpt_ckpt *ckpt, const struct gpt_part *part, struct error *e)
{
    int rc = gpt_config_check(c, e);
    if (rc)
        return rc;
    g->part = part ? *part : (struct gpt_part){0, c->layers, true, true, 1};
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
    if (!g->saved || !g->head || !g->lw || !g->lg || !g->underflow ||
        (g->seg && (!g->pool || !g->segin)))
        return error_set(e, ERR_NOMEM, "out of memory");
    for (int a = 0; a < A_COUNT; a++)
        g->layer_bytes += act_bytes(g, a);
    return 0;
}

/* Every buffer of the model, in order: sizes them (no blocks yet) or carves them. */
static void layout(struct gpt *g)
{
    int L = g->c.layers;
    size_t N = (size_t)g->N, d = (size_t)g->c.d, f = (size_t)g->c.ffn, V = (size_t)g->c.vocab;
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
                g->segin[m * g->nseg + s] = carve(g, GPT_MEM_ARENA, N * d * g->esize);
        else
            for (int l = pt->first; l < pt->first + pt->count; l++)
                carve_set(g, g->saved[m * L + l], g->ckpt.kind == GPT_CKPT_SELECTIVE);
    }
    if (g->seg)
        for (int s = 0; s < g->seg; s++)
            carve_set(g, g->pool[s], false);
    else if (g->ckpt.kind == GPT_CKPT_SELECTIVE)
        g->pslot = carve(g, GPT_MEM_ARENA, act_bytes(g, A_P));
    const size_t head_bytes[H_COUNT] = {N * d * g->esize, N * 4, N * d * g->esize, N * V * 4};
    g->head_bytes = 0;
    for (int a = 0; a < H_COUNT; a++)
        g->head_bytes += head_bytes[a];
    for (int m = 0; m < pt->slots && pt->head; m++)
        for (int a = 0; a < H_COUNT; a++)
            g->head[m][a] = carve(g, GPT_MEM_ARENA, head_bytes[a]);

    /* fp32 workspace */
    for (int a = 0; a < A_COUNT; a++)
        g->w[a] = carve(g, GPT_MEM_WORKSPACE, act_elems(g, a) * 4);
    float **nd[] = {&g->tmp, &g->res, &g->dres, &g->dxn, &g->dq,
                    &g->dk,  &g->dv,  &g->datt, &g->hx,  &g->hn};
    g->hrstd = carve(g, GPT_MEM_WORKSPACE, N * 4);
    for (size_t i = 0; i < sizeof nd / sizeof *nd; i++)
        *nd[i] = carve(g, GPT_MEM_WORKSPACE, N * d * 4);
    float **nf[] = {&g->dh, &g->dg, &g->du};
    for (size_t i = 0; i < sizeof nf / sizeof *nf; i++)
        *nf[i] = carve(g, GPT_MEM_WORKSPACE, N * f * 4);
    g->dp = carve(g, GPT_MEM_WORKSPACE, T * T * 4);
    g->logits = carve(g, GPT_MEM_WORKSPACE, N * V * 4);
    g->colsum = carve(g, GPT_MEM_WORKSPACE, (d > V ? d : V) * sizeof(double));
    g->rope_cos = carve(g, GPT_MEM_WORKSPACE, T * half * 4);
    g->rope_sin = carve(g, GPT_MEM_WORKSPACE, T * half * 4);

    /* each layer's tensors, in the documented order; a part's flat buffer holds its layers
     * right after the embedding (or first, without one) */
    size_t emb = (size_t)g->c.vocab * d;
    size_t shift =
        gpt_tensor_at(&g->c, 1 + 9 * (size_t)pt->first).offset - (pt->embed || pt->head ? emb : 0);
    for (int l = pt->first; l < pt->first + pt->count; l++)
        for (int which = 0; which < 2; which++) {
            struct layer_ptrs *t = which ? &g->lg[l] : &g->lw[l];
            float *base = which ? g->grads : g->params;
            float **slot[9] = {&t->attn_norm, &t->wq,     &t->wk,   &t->wv,    &t->wo,
                               &t->mlp_norm,  &t->w_gate, &t->w_up, &t->w_down};
            for (int k = 0; k < 9; k++)
                *slot[k] =
                    base + gpt_tensor_at(&g->c, 1 + 9 * (size_t)l + (size_t)k).offset - shift;
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
    return (struct gpt_act_sizes){g->layer_bytes, act_bytes(g, A_X), act_bytes(g, A_P),
                                  g->head_bytes};
}

/* Matmul FLOPs (2 per multiply-add) of one layer's forward: the six projections, 2 N (4 d^2 +
 * 3 d F), and attention's QK^T and P V over full T x T blocks, 2 x 2 B H T^2 hd. */
static double attn_flops(const struct gpt *g)
{
    double T = g->c.seq;
    return 2.0 * 2.0 * g->B * g->c.heads * T * T * g->hd;
}

static double layer_flops(const struct gpt *g)
{
    double N = g->N, d = g->c.d, f = g->c.ffn;
    return 2.0 * N * (4 * d * d + 3 * d * f) + attn_flops(g);
}

static double head_flops(const struct gpt *g)
{
    return 2.0 * g->N * g->c.vocab * g->c.d;
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
    double fwd = g->c.layers * layer_flops(g) + head_flops(g);
    struct gpt_flops fl = {fwd, 2 * fwd, 0};
    if (g->seg)
        fl.recompute = g->c.layers * layer_flops(g);
    else if (g->ckpt.kind == GPT_CKPT_SELECTIVE)
        fl.recompute = g->c.layers * attn_flops(g) / 2; /* QK^T again; softmax is no matmul */
    return fl;
}

struct gpt_flops gpt_step_flops(const struct gpt_config *c, int batch, const struct gpt_ckpt *ckpt)
{
    struct gpt g = {.c = *c, .B = batch, .N = batch * c->seq, .hd = c->d / c->heads};
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
}

/* ------------------------------------------------------------------ helpers */

static inline void rnd(const struct gpt *g, float *p, size_t n)
{
    if (g->fmt != FP_FP32)
        fp_round_n(g->fmt, p, p, n);
}

static void store(const struct gpt *g, void *dst, const float *src, size_t n)
{
    if (g->fmt == FP_FP32)
        memcpy(dst, src, n * 4);
    else if (g->fmt == FP_FP16)
        fp16_from_f32_n(dst, src, n);
    else
        bf16_from_f32_n(dst, src, n);
}

static void load(const struct gpt *g, float *dst, const void *src, size_t n)
{
    if (g->fmt == FP_FP32)
        memcpy(dst, src, n * 4);
    else if (g->fmt == FP_FP16)
        fp16_to_f32_n(dst, src, n);
    else
        bf16_to_f32_n(dst, src, n);
}

/* Whether any of n values is inf or NaN (all exponent bits set). */
static bool any_nonfinite(const float *p, size_t n)
{
    uint32_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &p[i], 4);
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
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
static void check(struct gpt *g, const float *p, size_t n, int layer, const char *name)
{
    if (!g->nonfinite[0] && any_nonfinite(p, n))
        name_nonfinite(g, layer, name);
}

/* Values pass through the cache in blocks this long: each block is rounded, then checked
 * (and counted) while it is still in L1, one pass over memory for the whole tensor. */
#define BLOCK 1024

/* A tensor has just been computed in fp32: it is rounded to the working format where it is
 * produced (as a GPU kernel writing bf16 would) and, as it goes by, looked at for inf/NaN; the
 * first such tensor of the step is named "layer L NAME" (layer -1: NAME alone). */
static void produced(struct gpt *g, float *p, size_t n, int layer, const char *name)
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

/* A weight gradient of layer `layer` (index L: the embedding and the norms outside the
 * layers) is produced: rounded, checked, and its elements that were nonzero in fp32 and
 * rounded to zero counted (underflow), in one pass. */
static void produced_grad(struct gpt *g, float *p, size_t n, int layer, const char *name)
{
    int named = layer < g->c.layers ? layer : -1;
    bool look = !g->nonfinite[0];
    if (g->fmt == FP_FP32) {
        if (look && any_nonfinite(p, n))
            name_nonfinite(g, named, name);
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
}

/* y [N, out] = x [N, in] W^T (W [out, in]) */
static void mm_fwd(float *y, const float *x, const float *w, int n, int out, int in)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, x, in, w, in, 0.0f, y,
                out);
}

/* dx [N, in] (+)= dy [N, out] W */
static void mm_dx(float *dx, const float *dy, const float *w, int n, int out, int in, float beta)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, out, 1.0f, dy, out, w, in, beta,
                dx, in);
}

/* dW [out, in] = dy^T [out, N] x [N, in], or += with acc (micro-batches add up) */
static void mm_dw_acc(float *dw, const float *dy, const float *x, int n, int out, int in, bool acc)
{
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n, 1.0f, dy, out, x, in,
                acc ? 1.0f : 0.0f, dw, in);
}

/* 1 / sqrt(mean(x^2) + eps) of one row, the same in forward and backward */
static float rms_rstd(const float *x, int d)
{
    double ss = 0;
    for (int j = 0; j < d; j++)
        ss += (double)x[j] * x[j];
    return (float)(1.0 / sqrt(ss / d + RMS_EPS));
}

/* y = x / rms(x) * w, row by row (Zhang and Sennrich 2019); rstd[r] = 1 / rms(x_r) */
static void rms_fwd(float *y, float *rstd, const float *x, const float *w, int n, int d)
{
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * d;
        float *yr = y + (size_t)r * d;
        float s = rstd[r] = rms_rstd(xr, d);
        for (int j = 0; j < d; j++)
            yr[j] = (xr[j] * s) * w[j];
    }
}

/* With xh = x s (s = rstd) and y = xh w: dw += sum_rows dy xh;
 * dx = s (dy w - xh mean(dy w xh)), added into dx. */
static void rms_bwd(struct gpt *g, float *dx, float *dw, const float *x, const float *rstd,
                    const float *w, const float *dy, int n, int d)
{
    double *cs = g->colsum;
    memset(cs, 0, (size_t)d * sizeof *cs);
    for (int r = 0; r < n; r++) {
        const float *xr = x + (size_t)r * d, *dyr = dy + (size_t)r * d;
        float *dxr = dx + (size_t)r * d;
        float s = rstd[r];
        double dot = 0;
        for (int j = 0; j < d; j++) {
            float xh = xr[j] * s;
            cs[j] += (double)dyr[j] * xh;
            dot += (double)(dyr[j] * w[j]) * xh;
        }
        float m = (float)(dot / d);
        for (int j = 0; j < d; j++)
            dxr[j] += s * (dyr[j] * w[j] - (xr[j] * s) * m);
    }
    for (int j = 0; j < d; j++)
        dw[j] = g->accumulate ? dw[j] + (float)cs[j] : (float)cs[j];
}

/* Rotary embedding, rotate-half: for each head, pairs (i, i + hd/2) rotate by pos * theta_i.
 * dir -1 applies the inverse rotation (the backward pass). */
static void rope(const struct gpt *g, float *x, int dir)
{
    int T = g->c.seq, H = g->c.heads, hd = g->hd, half = hd / 2, d = g->c.d;
    for (int r = 0; r < g->N; r++) {
        int t = r % T;
        const float *cs = g->rope_cos + (size_t)t * half, *sn = g->rope_sin + (size_t)t * half;
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

/* ------------------------------------------------------------------ attention */

/* scores = q k^T / sqrt(hd) per (batch, head), causal, then softmax; into w[A_P]. */
static void attn_probs(struct gpt *g, int l)
{
    int T = g->c.seq, H = g->c.heads, hd = g->hd, d = g->c.d;
    float scale = (float)(1.0 / sqrt((double)hd));
    size_t TT = (size_t)T * T;
    for (int b = 0; b < g->B; b++)
        for (int h = 0; h < H; h++) {
            const float *q = g->w[A_Q] + (size_t)b * T * d + (size_t)h * hd;
            const float *k = g->w[A_K] + (size_t)b * T * d + (size_t)h * hd;
            float *s = g->w[A_P] + ((size_t)b * H + h) * TT;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hd, scale, q, d, k, d, 0.0f,
                        s, T);
            for (int i = 0; i < T; i++)
                for (int j = i + 1; j < T; j++)
                    s[(size_t)i * T + j] = 0.0f; /* masked; not part of the softmax */
        }
    size_t n = (size_t)g->B * H * TT;
    rnd(g, g->w[A_P], n);
    if (g->inj && g->inj->nan_scores_layer == l)
        g->w[A_P][0] = NAN;
    check(g, g->w[A_P], n, l, "attn scores");
    for (size_t m = 0; m < (size_t)g->B * H; m++)
        for (int i = 0; i < T; i++) {
            float *row = g->w[A_P] + m * TT + (size_t)i * T;
            float mx = row[0];
            for (int j = 1; j <= i; j++)
                mx = row[j] > mx ? row[j] : mx;
            float sum = 0;
            for (int j = 0; j <= i; j++)
                sum += row[j] = expf(row[j] - mx);
            float inv = 1.0f / sum;
            for (int j = 0; j <= i; j++)
                row[j] *= inv;
        }
    rnd(g, g->w[A_P], n);
}

static void attn_out(struct gpt *g)
{
    int T = g->c.seq, H = g->c.heads, hd = g->hd, d = g->c.d;
    size_t TT = (size_t)T * T;
    for (int b = 0; b < g->B; b++)
        for (int h = 0; h < H; h++) {
            const float *p = g->w[A_P] + ((size_t)b * H + h) * TT;
            const float *v = g->w[A_V] + (size_t)b * T * d + (size_t)h * hd;
            float *o = g->w[A_ATT] + (size_t)b * T * d + (size_t)h * hd;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hd, T, 1.0f, p, T, v, d, 0.0f,
                        o, d);
        }
}

/* ------------------------------------------------------------------ one layer */

/* Runs layer l on the residual stream res (updated in place to the layer's output); keeps the
 * tensors of `save` (any may be NULL). Every tensor is rounded to the working format where it is
 * produced, as a bf16 kernel would write it. */
static void layer_forward(struct gpt *g, int l, float *res, void **save)
{
    int N = g->N, d = g->c.d, f = g->c.ffn;
    size_t nd = (size_t)N * d, nf = (size_t)N * f;
    const struct layer_ptrs *W = &g->lw[l];
    float **w = g->w;
    if (save && save[A_X])
        store(g, save[A_X], res, nd);

    /* attention: xn1 = RMSNorm(x); q, k, v = xn1 Wq^T, xn1 Wk^T, xn1 Wv^T, q and k rotated by
     * their position (RoPE); att = softmax(q k^T / sqrt(hd), causal) v; xm = x + att Wo^T */
    rms_fwd(w[A_XN1], w[A_RSTD1], res, W->attn_norm, N, d);
    produced(g, w[A_XN1], nd, l, "attn norm");
    mm_fwd(w[A_Q], w[A_XN1], W->wq, N, d, d);
    mm_fwd(w[A_K], w[A_XN1], W->wk, N, d, d);
    mm_fwd(w[A_V], w[A_XN1], W->wv, N, d, d);
    rnd(g, w[A_Q], nd); /* the projections' outputs, before the rotation */
    rnd(g, w[A_K], nd);
    rope(g, w[A_Q], 1);
    rope(g, w[A_K], 1);
    produced(g, w[A_Q], nd, l, "q");
    produced(g, w[A_K], nd, l, "k");
    produced(g, w[A_V], nd, l, "v");
    attn_probs(g, l);
    check(g, w[A_P], (size_t)g->B * g->c.heads * g->c.seq * g->c.seq, l, "attn probs");
    attn_out(g);
    produced(g, w[A_ATT], nd, l, "attn out");
    mm_fwd(g->tmp, w[A_ATT], W->wo, N, d, d);
    produced(g, g->tmp, nd, l, "attn proj");
    for (size_t i = 0; i < nd; i++)
        w[A_XM][i] = res[i] + g->tmp[i];
    produced(g, w[A_XM], nd, l, "attn residual");

    /* MLP (SwiGLU): xn2 = RMSNorm(xm); h = silu(xn2 Wg^T) * (xn2 Wu^T); out = xm + h Wd^T */
    rms_fwd(w[A_XN2], w[A_RSTD2], w[A_XM], W->mlp_norm, N, d);
    produced(g, w[A_XN2], nd, l, "mlp norm");
    mm_fwd(w[A_G], w[A_XN2], W->w_gate, N, f, d);
    mm_fwd(w[A_U], w[A_XN2], W->w_up, N, f, d);
    produced(g, w[A_G], nf, l, "gate");
    produced(g, w[A_U], nf, l, "up");
    for (size_t i = 0; i < nf; i++) {
        float x = w[A_G][i];
        w[A_H][i] = x / (1.0f + expf(-x)) * w[A_U][i];
    }
    produced(g, w[A_H], nf, l, "mlp hidden");
    mm_fwd(g->tmp, w[A_H], W->w_down, N, d, f);
    produced(g, g->tmp, nd, l, "mlp out");
    for (size_t i = 0; i < nd; i++)
        res[i] = w[A_XM][i] + g->tmp[i];
    produced(g, res, nd, l, "output");

    if (save)
        for (int a = A_RSTD1; a < A_COUNT; a++)
            if (save[a]) {
                if (a == A_RSTD1 || a == A_RSTD2)
                    memcpy(save[a], w[a], act_bytes(g, a));
                else
                    store(g, save[a], w[a], act_elems(g, a));
            }
}

/* The MLP's backward, with the layer's tensors in the workspace: dres holds d loss / d out on
 * entry, d loss / d xm on return; writes the gradients of w_down, w_gate, w_up and mlp_norm. */
static void mlp_backward(struct gpt *g, int l, float *dres)
{
    int N = g->N, d = g->c.d, f = g->c.ffn;
    size_t nd = (size_t)N * d, nf = (size_t)N * f;
    const struct layer_ptrs *W = &g->lw[l], *G = &g->lg[l];
    float **w = g->w;

    /* out = xm + h Wd^T: dh = dout Wd, dWd = dout^T h; dout also flows on to xm (the residual) */
    mm_dx(g->dh, dres, W->w_down, N, d, f, 0.0f);
    rnd(g, g->dh, nf);
    if (g->inj && g->inj->inf_grad_layer == l)
        g->dh[0] = INFINITY; /* the lessons' injected overflow */
    check(g, g->dh, nf, l, "grad mlp hidden");
    mm_dw_acc(G->w_down, dres, w[A_H], N, d, f, g->accumulate);
    produced_grad(g, G->w_down, (size_t)d * f, l, "grad w_down");

    /* h = silu(a) u with silu(a) = a sg(a), sg the logistic sigmoid: du = dh silu(a) and
     * da = dh u silu'(a), where silu'(a) = sg(a) + a sg(a) (1 - sg(a)) = sg (1 + a (1 - sg)) */
    for (size_t i = 0; i < nf; i++) {
        float x = w[A_G][i], sg = 1.0f / (1.0f + expf(-x));
        g->du[i] = g->dh[i] * (x * sg);
        g->dg[i] = g->dh[i] * w[A_U][i] * (sg * (1.0f + x * (1.0f - sg)));
    }
    rnd(g, g->dg, nf);
    rnd(g, g->du, nf);
    mm_dw_acc(G->w_gate, g->dg, w[A_XN2], N, f, d, g->accumulate);
    mm_dw_acc(G->w_up, g->du, w[A_XN2], N, f, d, g->accumulate);
    produced_grad(g, G->w_gate, (size_t)f * d, l, "grad w_gate");
    produced_grad(g, G->w_up, (size_t)f * d, l, "grad w_up");
    /* a = xn2 Wg^T, u = xn2 Wu^T: dxn2 = da Wg + du Wu */
    mm_dx(g->dxn, g->dg, W->w_gate, N, f, d, 0.0f);
    mm_dx(g->dxn, g->du, W->w_up, N, f, d, 1.0f);
    produced(g, g->dxn, nd, l, "grad mlp norm");
    /* xn2 = RMSNorm(xm), added into dres: see rms_bwd */
    rms_bwd(g, dres, G->mlp_norm, w[A_XM], w[A_RSTD2], W->mlp_norm, g->dxn, N, d);
    produced_grad(g, G->mlp_norm, (size_t)d, l, "grad mlp_norm");
    produced(g, dres, nd, l, "grad attn residual");
}

/* The attention's backward: dres holds d loss / d xm on entry, d loss / d x (the layer's
 * input) on return; writes the gradients of wo, wq, wk, wv and attn_norm. */
static void attn_backward(struct gpt *g, int l, float *dres)
{
    int N = g->N, d = g->c.d, T = g->c.seq, H = g->c.heads, hd = g->hd;
    size_t nd = (size_t)N * d, TT = (size_t)T * T;
    const struct layer_ptrs *W = &g->lw[l], *G = &g->lg[l];
    float **w = g->w;

    /* xm = x + att Wo^T: datt = dxm Wo, dWo = dxm^T att */
    mm_dx(g->datt, dres, W->wo, N, d, d, 0.0f);
    rnd(g, g->datt, nd);
    mm_dw_acc(G->wo, dres, w[A_ATT], N, d, d, g->accumulate);
    produced_grad(g, G->wo, (size_t)d * d, l, "grad wo");
    float scale = (float)(1.0 / sqrt((double)hd));
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
            rnd(g, dp, TT);
            /* P = softmax(S) row by row: dS_j = P_j (dP_j - sum_k P_k dP_k), since
             * dP_i/dS_j = P_i (delta_ij - P_j); times the 1/sqrt(hd) of S = q k^T / sqrt(hd).
             * Masked entries (j > i) have P = 0 and get no gradient. */
            for (int i = 0; i < T; i++) {
                const float *pr = p + (size_t)i * T;
                float *dr = dp + (size_t)i * T;
                float dot = 0;
                for (int j = 0; j <= i; j++)
                    dot += pr[j] * dr[j];
                for (int j = 0; j <= i; j++)
                    dr[j] = pr[j] * (dr[j] - dot) * scale;
                for (int j = i + 1; j < T; j++)
                    dr[j] = 0.0f;
            }
            produced(g, dp, TT, l, "grad attn scores");
            /* S = Q K^T (scaled above): dQ = dS K, dK = dS^T Q */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hd, T, 1.0f, dp, T,
                        w[A_K] + off, d, 0.0f, g->dq + off, d);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hd, T, 1.0f, dp, T,
                        w[A_Q] + off, d, 0.0f, g->dk + off, d);
        }
    rnd(g, g->dq, nd);
    rnd(g, g->dk, nd);
    rnd(g, g->dv, nd);
    /* RoPE is a rotation R(pos) per pair: its gradient is the transposed, inverse rotation */
    rope(g, g->dq, -1);
    rope(g, g->dk, -1);
    rnd(g, g->dq, nd);
    rnd(g, g->dk, nd);
    mm_dw_acc(G->wq, g->dq, w[A_XN1], N, d, d, g->accumulate);
    mm_dw_acc(G->wk, g->dk, w[A_XN1], N, d, d, g->accumulate);
    mm_dw_acc(G->wv, g->dv, w[A_XN1], N, d, d, g->accumulate);
    produced_grad(g, G->wq, (size_t)d * d, l, "grad wq");
    produced_grad(g, G->wk, (size_t)d * d, l, "grad wk");
    produced_grad(g, G->wv, (size_t)d * d, l, "grad wv");
    /* q, k, v = xn1 W^T: dxn1 = dq Wq + dk Wk + dv Wv */
    mm_dx(g->dxn, g->dq, W->wq, N, d, d, 0.0f);
    mm_dx(g->dxn, g->dk, W->wk, N, d, d, 1.0f);
    mm_dx(g->dxn, g->dv, W->wv, N, d, d, 1.0f);
    produced(g, g->dxn, nd, l, "grad attn norm");
    rms_bwd(g, dres, G->attn_norm, w[A_X], w[A_RSTD1], W->attn_norm, g->dxn, N, d);
    produced_grad(g, G->attn_norm, (size_t)d, l, "grad attn_norm");
    produced(g, dres, nd, l, "grad input");
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
    for (int a = 0; a < A_COUNT; a++)
        if (set[a]) {
            if (a == A_RSTD1 || a == A_RSTD2)
                memcpy(g->w[a], set[a], act_bytes(g, a));
            else
                load(g, g->w[a], set[a], act_elems(g, a));
        }
    if (!set[A_P]) { /* selective: the attention core comes back to life, in its slot */
        charge(g, (long long)act_bytes(g, A_P));
        attn_probs(g, l);
        store(g, g->pslot, g->w[A_P], act_elems(g, A_P)); /* already rounded: exact */
        compute(g, attn_flops(g) / 2, "recompute", l);
    }
}

/* ------------------------------------------------------------------ the passes */

/* Bytes a layer charges when its list is stored: all of it, or all but the core. */
static size_t set_bytes(const struct gpt *g, void **set)
{
    size_t b = 0;
    for (int a = 0; a < A_COUNT; a++)
        if (set[a])
            b += act_bytes(g, a);
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
}

/* The embedding lookup: the residual stream starts as the rows of the tokens. */
static void embed_forward(struct gpt *g, const int32_t *tokens)
{
    int N = g->N, d = g->c.d;
    const float *E = g->params;
    hook(g, GPT_HOOK_FORWARD, GPT_UNIT_EMBED);
    for (int r = 0; r < N; r++)
        memcpy(g->res + (size_t)r * d, E + (size_t)tokens[r] * d, (size_t)d * 4);
    hook(g, GPT_HOOK_FORWARD_DONE, GPT_UNIT_EMBED);
    check(g, g->res, (size_t)N * d, -1, "embedding");
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
                charge(g, (long long)act_bytes(g, A_X));
            }
            layer_forward(g, l, g->res, set);
        } else {
            layer_forward(g, l, g->res, saved_set(g, slot, l));
            charge(g, (long long)set_bytes(g, saved_set(g, slot, l)));
        }
        compute(g, layer_flops(g), "forward", l);
        hook(g, GPT_HOOK_FORWARD_DONE, l);
    }
}

/* The ends: final norm, logits = hn E^T, softmax in fp32, mean cross-entropy. */
static double head_forward(struct gpt *g, int slot, const int32_t *targets)
{
    int N = g->N, d = g->c.d, V = g->c.vocab;
    size_t nd = (size_t)N * d, nv = (size_t)N * V;
    void **head = g->head[slot];
    const float *E = g->params, *wf = g->params + g->nparams - d;
    hook(g, GPT_HOOK_FORWARD, GPT_UNIT_HEAD);
    store(g, head[H_X], g->res, nd);
    rms_fwd(g->hn, head[H_RSTD], g->res, wf, N, d);
    produced(g, g->hn, nd, -1, "final norm");
    store(g, head[H_N], g->hn, nd);
    mm_fwd(g->logits, g->hn, E, N, V, d);
    if (g->inj && g->inj->logit_factor != 1.0f)
        for (size_t i = 0; i < nv; i++)
            g->logits[i] *= g->inj->logit_factor; /* the lessons' bad batch */
    produced(g, g->logits, nv, -1, "logits");
    float *probs = head[H_PROBS];
    double loss = 0;
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
    charge(g, (long long)g->head_bytes);
    compute(g, head_flops(g), "head forward", -1);
    return loss / N;
}

/* The head's backward, from d(loss_scale x mean CE) / d logits = (softmax - onehot) x
 * loss_scale / tokens: the tied embedding's head share, the final norm's gradient, and
 * d loss / d (the last layer's output) into dres. */
static void head_backward(struct gpt *g, int slot, const int32_t *targets, float loss_scale)
{
    int N = g->N, d = g->c.d, V = g->c.vocab, L = g->c.layers;
    size_t nd = (size_t)N * d, nv = (size_t)N * V;
    void **head = g->head[slot];
    float *E = g->params, *gE = g->grads, *dl = g->logits;
    const float *probs = head[H_PROBS];
    float coef = loss_scale / (float)g->loss_tokens;
    for (int r = 0; r < N; r++) {
        const float *pr = probs + (size_t)r * V;
        float *z = dl + (size_t)r * V;
        for (int j = 0; j < V; j++)
            z[j] = pr[j];
        z[targets[r]] -= 1.0f;
        for (int j = 0; j < V; j++)
            z[j] *= coef;
    }
    if (g->inj && g->inj->logit_factor != 1.0f)
        for (size_t i = 0; i < nv; i++)
            dl[i] *= g->inj->logit_factor;
    produced(g, dl, nv, -1, "grad logits");
    load(g, g->hn, head[H_N], nd);
    load(g, g->hx, head[H_X], nd);
    memcpy(g->hrstd, head[H_RSTD], (size_t)N * 4);
    mm_dw_acc(gE, dl, g->hn, N, V, d, g->accumulate); /* the head's share of the embedding's */
    mm_dx(g->dxn, dl, E, N, V, d, 0.0f);
    rnd(g, g->dxn, nd);
    memset(g->dres, 0, nd * 4);
    float *gwf = g->grads + g->nparams - d;
    rms_bwd(g, g->dres, gwf, g->hx, g->hrstd, g->params + g->nparams - d, g->dxn, N, d);
    produced_grad(g, gwf, (size_t)d, L, "grad final_norm");
    produced(g, g->dres, nd, -1, "grad final norm");
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
    size_t nd = (size_t)g->N * g->c.d;
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
                charge(g, (long long)(g->layer_bytes - (l == a ? act_bytes(g, A_X) : 0)));
                compute(g, layer_flops(g), "recompute", l);
                if (g->seg > 1)
                    hook(g, GPT_HOOK_FORWARD_DONE, l);
            }
            for (int l = b - 1; l >= a; l--) {
                if (g->seg > 1)
                    hook(g, GPT_HOOK_BACKWARD, l);
                load_set(g, l, g->pool[l - a]);
                layer_backward(g, l, g->dres);
                compute(g, 2 * layer_flops(g), "backward", l);
                charge(g, -(long long)g->layer_bytes);
                hook(g, GPT_HOOK_GRADS, l);
            }
        }
    } else
        for (int l = l1 - 1; l >= l0; l--) {
            hook(g, GPT_HOOK_BACKWARD, l);
            load_set(g, l, saved_set(g, slot, l));
            layer_backward(g, l, g->dres);
            compute(g, 2 * layer_flops(g), "backward", l);
            charge(g, -(long long)g->layer_bytes);
            hook(g, GPT_HOOK_GRADS, l);
        }
}

/* The embedding's backward: the rows of the tokens seen receive the input gradient (after the
 * head's share, when this model holds the head too). */
static void embed_backward(struct gpt *g, const int32_t *tokens)
{
    int N = g->N, d = g->c.d, V = g->c.vocab;
    float *gE = g->grads;
    if (!g->part.head && !g->accumulate) /* no head share: the rows alone */
        memset(gE, 0, (size_t)V * d * sizeof *gE);
    for (int r = 0; r < N; r++) {
        float *dst = gE + (size_t)tokens[r] * d;
        const float *src = g->dres + (size_t)r * d;
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
    double loss = head_forward(g, 0, targets);
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
    double loss = head_forward(g, 0, targets);
    g->in_forward = false;
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
    size_t nd = (size_t)g->N * g->c.d;
    g->inj = inj;
    g->in_forward = true;
    if (g->part.embed)
        embed_forward(g, tokens);
    else
        load(g, g->res, in, nd);
    layers_forward(g, slot);
    double loss = NAN;
    if (g->part.head)
        loss = head_forward(g, slot, targets);
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
    size_t nd = (size_t)g->N * g->c.d;
    g->inj = inj;
    g->accumulate = accumulate;
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
