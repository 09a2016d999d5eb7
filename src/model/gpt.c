/* The tiny GPT, built: its shape and the documented order of its flat buffer, the parts a
 * pipeline stage or a tensor-parallel rank holds, a model allocated whole through the seam
 * (every buffer carved from one block per memory category, the arena of kept tensors laid out
 * for the checkpoint policy), its counts (FLOPs, the seam's calls, the memory it will need)
 * and accessors (model/gpt.h). A step is model/gpt_step.c's; struct gpt is model/gpt_impl.h's. */
#include "config.h"
#include "model/gpt.h"
#include "model/gpt_impl.h"
#include "model/ringattn.h"

#include <cblas.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ckpt.h"
#include "base/error.h"
#include "base/prof.h"
#include "base/rng.h"
#include "num/exp.h"

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
    const struct gpt_fp8 *f8 = &c->fp8;
    if (f8->recipe != FP8_OFF &&
        (f8->recipe >= FP8_RECIPES || f8->history < 1 || f8->history > 1 << 20 || f8->margin < 0 ||
         f8->margin > 64 || f8->block < 1))
        return error_set(e, ERR_INVAL,
                         "fp8: a recipe, an amax history of 1 to 2^20 steps, a margin of 0 to "
                         "64 and a block of at least 1 are needed");
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
    if (!experts_capacity_ok(m->capacity_factor))
        return error_set(e, ERR_INVAL, "capacity factor: 0 (none) or up to %d, not %g",
                         EXPERTS_MAX_CAPACITY, m->capacity_factor);
    if (!(m->aux_coef >= 0 && m->aux_coef <= 100))
        return error_set(e, ERR_INVAL, "aux-loss coefficient: 0 to 100, not %g", m->aux_coef);
    return 0;
}

bool gpt_layer_moe(const struct gpt_config *c, int l)
{
    return c->moe.experts > 0 && l % c->moe.every == 0;
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

/* ------------------------------------------------------------------ the model */

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
    free(g->wsets);
    free(g->pool);
    free(g->segin);
    free(g->head);
    free(g->underflow);
    free(g->moe.load);
    free(g->moe.kept);
    free(g->moe.scount);
    free(g->moe.held);
    free(g->lw);
    free(g->lg);
    fp8_free(g);
    free(g);
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

static int part_ep(const struct gpt_part *p)
{
    return p && p->ep > 1 ? p->ep : 1;
}

/* Elements of an expert layer before its experts: the norms, attention and the router. */
static size_t moe_head_params(const struct gpt_config *c)
{
    size_t d = (size_t)c->d;
    return 2 * d + 4 * d * d + (size_t)c->moe.experts * d;
}

/* Elements of one expert's three matrices. */
static size_t expert_params(const struct gpt_config *c)
{
    return 3 * (size_t)c->d * (size_t)c->ffn;
}

/* Elements of layers first .. l-1 of a part: a tensor-parallel rank's shards (the layers are
 * dense then), or the whole layers, with or without experts (an expert-parallel rank's own
 * E / ep of them). */
static size_t part_layers(const struct gpt_config *c, const struct gpt_part *p, int l)
{
    if (part_tp(p) > 1)
        return (size_t)(l - p->first) * part_layer_params(c, part_tp(p));
    size_t others = (size_t)(c->moe.experts - c->moe.experts / part_ep(p)) * expert_params(c);
    return layer_start(c, l) - layer_start(c, p->first) -
           (size_t)(moe_before(c, l) - moe_before(c, p->first)) * others;
}

size_t gpt_part_experts(const struct gpt_config *c, const struct gpt_part *p, size_t (*r)[2],
                        size_t max)
{
    size_t n = 0, emb = part_embedding(c, p);
    size_t len = (size_t)(c->moe.experts / part_ep(p)) * expert_params(c);
    for (int l = p->first; l < p->first + p->count && part_tp(p) == 1; l++) {
        if (!gpt_layer_moe(c, l))
            continue;
        if (n < max)
            r[n][0] = emb + part_layers(c, p, l) + moe_head_params(c), r[n][1] = len;
        n++;
    }
    return n;
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
    struct gpt_part whole = {.count = c->layers, .embed = true, .head = true, .slots = 1, .tp = 1};
    if (!p)
        p = &whole;
    int tp = part_tp(p), r = p->tprank;
    size_t d = (size_t)c->d, emb = part_embedding(c, p), lp = part_layer_params(c, tp);
    size_t span = part_layers(c, p, p->first + p->count);
    if (i < emb) /* vocabulary rows r vl.. */
        return (size_t)r * emb + i;
    i -= emb;
    if (i < span && tp == 1 && part_ep(p) > 1) { /* its own experts of each expert layer */
        int l = p->first;
        while (l + 1 < p->first + p->count && part_layers(c, p, l + 1) <= i)
            l++;
        size_t j = i - part_layers(c, p, l), head = moe_head_params(c);
        if (!gpt_layer_moe(c, l) || j < head)
            return layer_start(c, l) + j;
        size_t mine = (size_t)(c->moe.experts / p->ep) * expert_params(c);
        return layer_start(c, l) + head + (size_t)p->eprank * mine + (j - head);
    }
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

void gpt_part_gather(const struct gpt_config *c, const struct gpt_part *p, const float *whole,
                     float *mine)
{
    int tp = part_tp(p), r = p->tprank;
    size_t emb = part_embedding(c, p), d = (size_t)c->d;
    size_t span = part_layers(c, p, p->first + p->count);
    memcpy(mine, whole + (size_t)r * emb, emb * sizeof *mine); /* its vocabulary rows */
    float *out = mine + emb;
    if (tp == 1 && part_ep(p) == 1) { /* whole layers: one range */
        memcpy(out, whole + layer_start(c, p->first), span * sizeof *mine);
    } else if (tp == 1) { /* each layer whole, but an expert layer's other experts */
        size_t head = moe_head_params(c);
        size_t own = (size_t)(c->moe.experts / p->ep) * expert_params(c);
        for (int l = p->first; l < p->first + p->count; l++) {
            size_t len = part_layers(c, p, l + 1) - part_layers(c, p, l);
            const float *at = whole + layer_start(c, l);
            if (!gpt_layer_moe(c, l)) {
                memcpy(out, at, len * sizeof *mine);
            } else {
                memcpy(out, at, head * sizeof *mine);
                memcpy(out + head, at + head + (size_t)p->eprank * own, own * sizeof *mine);
            }
            out += len;
        }
    } else { /* each tensor's shard: a block of rows, a block of each row's columns, or whole */
        size_t rows[9], cols[9];
        layer_shapes(c, tp, rows, cols);
        for (int l = p->first; l < p->first + p->count; l++)
            for (int k = 0; k < 9; k++) {
                struct gpt_tensor t = gpt_tensor_at(c, 1 + 9 * (size_t)l + (size_t)k);
                const float *at = whole + t.offset;
                if (k == 4 || k == 8) /* wo, w_down: row-parallel */
                    for (size_t row = 0; row < rows[k]; row++, out += cols[k])
                        memcpy(out, at + row * (size_t)t.cols + (size_t)r * cols[k],
                               cols[k] * sizeof *mine);
                else { /* the norms whole; the column-parallel matrices' rows r rows[k].. */
                    size_t first = k == 0 || k == 5 ? 0 : (size_t)r * rows[k];
                    memcpy(out, at + first * (size_t)t.cols, rows[k] * cols[k] * sizeof *mine);
                    out += rows[k] * cols[k];
                }
            }
    }
    if (p->head) /* the final norm */
        memcpy(mine + emb + span, whole + gpt_param_count(c) - d, d * sizeof *mine);
}

size_t gpt_part_rows(const struct gpt_config *c, const struct gpt_part *p, int batch)
{
    size_t n = (size_t)batch * (size_t)c->seq / (size_t)(p && p->cp > 1 ? p->cp : 1);
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

/* A part's own checks: its tensor and expert parallelism, layers and slots. */
static int check_part(const struct gpt_config *c, const struct gpt_part *p, struct error *e)
{
    int tp = part_tp(p);
    if (c->heads % tp != 0 || c->ffn % tp != 0 || c->vocab % tp != 0 || p->tprank < 0 ||
        p->tprank >= tp)
        return error_set(e, ERR_INVAL,
                         "tensor parallelism over %d GPUs needs it to divide the heads (%d), the "
                         "FFN width (%d) and the vocabulary (%d)",
                         tp, c->heads, c->ffn, c->vocab);
    if (tp > 1 && c->moe.experts > 0)
        return error_set(e, ERR_INVAL, "a model with experts runs without tensor parallelism");
    int ep = part_ep(p);
    if (ep > 1 && (c->moe.experts % ep || p->eprank < 0 || p->eprank >= ep))
        return error_set(e, ERR_INVAL,
                         "expert parallelism over %d GPUs needs them to divide the %d experts", ep,
                         c->moe.experts);
    if (p->first < 0 || p->count < 1 || p->first + p->count > c->layers || p->slots < 1 ||
        p->slots > 4096)
        return error_set(e, ERR_INVAL,
                         "a part holds layers first..first+count-1 of the %d and 1 to 4096 slots",
                         c->layers);
    if (p->wslots < 0 || p->wslots > 4096 || (p->wslots && c->moe.experts > 0))
        return error_set(e, ERR_INVAL,
                         "a part keeps 0 to 4096 micro-batches for W, without "
                         "experts (their passes interleave B and W)");
    return 0;
}

/* The shape of a model, before any buffer: 0 or an error. */
static int setup(struct gpt *g, const struct gpt_config *c, int batch, enum fp_format fmt,
                 const struct ckpt_policy *ckpt, const struct gpt_part *part, struct error *e)
{
    int rc = gpt_config_check(c, e);
    if (rc)
        return rc;
    g->part = part ? *part
                   : (struct gpt_part){
                         .count = c->layers, .embed = true, .head = true, .slots = 1, .tp = 1};
    if ((rc = check_part(c, &g->part, e)))
        return rc;
    int tp = part_tp(&g->part), ep = part_ep(&g->part);
    if (batch < 1)
        return error_set(e, ERR_INVAL, "batch must be at least 1");
    if (fmt != FP_FP32 && fmt != FP_FP16 && fmt != FP_BF16)
        return error_set(e, ERR_INVAL, "training precision must be fp32, bf16 or fp16");
    g->c = *c;
    g->B = batch;
    g->ring.cp = g->part.cp > 1 ? g->part.cp : 1, g->ring.cpr = g->ring.cp > 1 ? g->part.cprank : 0;
    g->ring.blocks = g->ring.cp > 1 || g->part.flash;
    g->moe.ep = ep, g->moe.epr = ep > 1 ? g->part.eprank : 0;
    g->moe.dropless = ep > 1 && !(c->moe.capacity_factor > 0);
    enum ring_split split = g->part.cp_naive ? RING_NAIVE : RING_BALANCED;
    if (g->ring.cp > 1 &&
        (!ring_split_ok(c->seq, g->ring.cp, split) || g->ring.cpr < 0 || g->ring.cpr >= g->ring.cp))
        return error_set(e, ERR_INVAL,
                         "context parallelism over %d GPUs needs them to divide the sequence "
                         "of %d tokens in %d chunks",
                         g->ring.cp, c->seq, split == RING_NAIVE ? g->ring.cp : 2 * g->ring.cp);
    if (g->ring.blocks && ckpt && ckpt->kind == CKPT_SELECTIVE)
        return error_set(e, ERR_INVAL,
                         "flash attention (the ring's) keeps no probabilities, and its core is "
                         "not recomputed by itself: selective recomputation needs eager attention");
    g->T = c->seq / g->ring.cp;
    g->N = batch * g->T;
    g->hd = c->d / c->heads;
    g->tp = tp, g->tr = g->part.tprank;
    g->sp = g->part.sp && tp > 1;
    if (g->sp && g->N % tp != 0)
        return error_set(e, ERR_INVAL,
                         "sequence parallelism over %d GPUs needs it to divide the "
                         "micro-batch's tokens",
                         tp);
    g->nl = g->sp ? g->N / tp : g->N;
    g->hl = c->heads / tp, g->dl = g->hl * g->hd, g->fl = c->ffn / tp;
    g->vl = c->vocab / tp, g->v0 = g->tr * g->vl;
    g->ckpt = ckpt ? *ckpt : (struct ckpt_policy){CKPT_NONE, 0};
    g->seg = ckpt_segment(&g->ckpt, g->part.count);
    g->fmt = fmt;
    g->esize = fmt == FP_FP32 ? 4 : 2;
    g->nparams = gpt_part_param_count(c, &g->part);
    g->nalloc = g->nparams;
    g->loss_tokens = g->N;
    int L = c->layers;
    size_t slots = (size_t)g->part.slots;
    g->nseg = g->seg ? (g->part.count + g->seg - 1) / g->seg : 0;
    g->saved = calloc(slots * (size_t)L, sizeof *g->saved);
    g->wslot = -1;
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
        g->moe.rows = (size_t)experts_rows_held(g->N, c->moe.experts, c->moe.top_k,
                                                c->moe.capacity_factor, ep);
        g->moe.load = calloc(stats, sizeof *g->moe.load);
        g->moe.kept = calloc(stats, sizeof *g->moe.kept);
        g->moe.held = calloc(2 * (size_t)gpt_moe_layers(c), sizeof *g->moe.held);
        g->moe.held_peak = g->moe.held ? g->moe.held + gpt_moe_layers(c) : NULL;
        g->moe.scount = calloc(2 * (size_t)ep, sizeof *g->moe.scount);
        g->moe.rcount = g->moe.scount ? g->moe.scount + ep : NULL;
        for (int j = 0; g->moe.scount && !g->moe.dropless && j < ep; j++) /* the static shape's */
            g->moe.scount[j] = g->moe.rcount[j] = g->moe.rows * (size_t)c->d / (size_t)ep;
    }
    if (g->part.wslots > 0) /* B and W apart: a W set per layer and weight slot */
        g->wsets = calloc((size_t)g->part.wslots * (size_t)L, sizeof *g->wsets);
    if (fp8_setup(g) || !g->saved || !g->head || !g->lw || !g->lg || !g->underflow ||
        (g->part.wslots > 0 && !g->wsets) || (g->seg && (!g->pool || !g->segin)) ||
        (c->moe.experts > 0 && (!g->moe.load || !g->moe.kept || !g->moe.scount || !g->moe.held)))
        return error_set(e, ERR_NOMEM, "out of memory");
    for (int a = 0; a < A_COUNT; a++)
        g->layer_bytes += act_bytes(g, a, SZ_DENSE);
    for (int w = 0; w < W_COUNT; w++)
        g->wset_bytes += wset_elems(g, w) * g->esize;
    return 0;
}

/* The fp32 workspace (struct gpt_scratch), the ring's and the experts' buffers: sized or
 * carved, in order. */
static void layout_scratch(struct gpt *g)
{
    fp8_layout(g, carve);
    size_t N = (size_t)g->N, d = (size_t)g->c.d, f = (size_t)g->fl, V = (size_t)g->vl;
    size_t T = (size_t)g->T, half = (size_t)g->hd / 2;
    for (int a = 0; a < A_COUNT; a++) {
        void *p = carve(g, GPT_MEM_WORKSPACE, act_elems(g, a, SZ_ANY) * 4);
        if (a == A_ROUTE) /* the routing's table of words (model/moe.h) */
            g->moe.route_ws = p;
        else
            g->s.w[a] = g->s.ws[a] = p;
    }
    float **nd[] = {&g->s.tmp, &g->s.res, &g->s.dres, &g->s.dxn, &g->s.dq,
                    &g->s.dk,  &g->s.dv,  &g->s.datt, &g->s.hx,  &g->s.hn};
    g->s.hrstd = carve(g, GPT_MEM_WORKSPACE, N * 4);
    for (size_t i = 0; i < sizeof nd / sizeof *nd; i++)
        *nd[i] = carve(g, GPT_MEM_WORKSPACE, N * d * 4);
    float **nf[] = {&g->s.dh, &g->s.dg, &g->s.du};
    size_t rf = g->moe.rows > N ? g->moe.rows : N; /* the experts' rows, or the tokens */
    for (size_t i = 0; i < sizeof nf / sizeof *nf; i++)
        *nf[i] = carve(g, GPT_MEM_WORKSPACE, rf * f * 4);
    if (g->moe.rows) {
        size_t E = (size_t)g->c.moe.experts, k = (size_t)g->c.moe.top_k;
        g->moe.zlog = carve(g, GPT_MEM_WORKSPACE, N * E * 4);
        g->moe.dye = carve(g, GPT_MEM_WORKSPACE, g->moe.rows * d * 4);
        g->moe.dxe = carve(g, GPT_MEM_WORKSPACE, g->moe.rows * d * 4);
        g->moe.dgate = carve(g, GPT_MEM_WORKSPACE, N * k * 4);
    }
    /* the scores' gradients of a head's T x T block; with cp, a block's scores and theirs */
    g->s.dscores = carve(g, GPT_MEM_WORKSPACE, T * T * 4 * (g->ring.blocks ? 2 : 1));
    if (g->ring.blocks) { /* the places of the queries and of the ring's block at hand; the ring's
                           * blocks: keys, values and their gradients, two of them */
        g->ring.pos = carve(g, GPT_MEM_WORKSPACE, T * sizeof *g->ring.pos);
        g->ring.kpos = carve(g, GPT_MEM_WORKSPACE, T * sizeof *g->ring.kpos);
        g->ring.l = carve(g, GPT_MEM_WORKSPACE, (size_t)g->B * g->hl * T * 4);
        for (int k = 0; k < 2; k++)
            g->ring.kv[k] = carve(g, GPT_MEM_WORKSPACE, 4 * N * (size_t)g->dl * 4);
    }
    g->s.logits = carve(g, GPT_MEM_WORKSPACE, N * V * 4);
    g->s.colsum = carve(g, GPT_MEM_WORKSPACE, (d > V ? d : V) * sizeof(double));
    g->s.rope_cos = carve(g, GPT_MEM_WORKSPACE, T * half * 4);
    g->s.rope_sin = carve(g, GPT_MEM_WORKSPACE, T * half * 4);
    if (g->sp) {
        g->s.xg = carve(g, GPT_MEM_WORKSPACE, N * d * 4);
        g->s.dg_full = carve(g, GPT_MEM_WORKSPACE, N * d * 4);
    }
    if (g->tp > 1) {
        g->s.rowmax = carve(g, GPT_MEM_WORKSPACE, N * 4);
        g->s.rowsum = carve(g, GPT_MEM_WORKSPACE, N * 4);
        g->s.rowtgt = carve(g, GPT_MEM_WORKSPACE, N * 4);
    }
}

/* Every buffer of the model, in order: sizes them (no blocks yet) or carves them. */
static void layout(struct gpt *g)
{
    int L = g->c.layers;
    size_t N = (size_t)g->N, d = (size_t)g->c.d, V = (size_t)g->vl;
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
                carve_set(g, g->saved[m * L + l], g->ckpt.kind == CKPT_SELECTIVE, sz_of(g, l));
    }
    if (g->seg)
        for (int s = 0; s < g->seg; s++)
            carve_set(g, g->pool[s], false, SZ_ANY);
    else if (g->ckpt.kind == CKPT_SELECTIVE)
        g->pslot = carve(g, GPT_MEM_ARENA, act_bytes(g, A_P, SZ_DENSE));
    size_t nl = (size_t)g->nl;
    const size_t head_bytes[H_COUNT] = {nl * d * g->esize, nl * 4, nl * d * g->esize, N * V * 4};
    g->head_bytes = 0;
    for (int a = 0; a < H_COUNT; a++)
        g->head_bytes += head_bytes[a];
    for (int m = 0; m < pt->slots && pt->head; m++)
        for (int a = 0; a < H_COUNT; a++)
            g->head[m][a] = carve(g, GPT_MEM_ARENA, head_bytes[a]);
    /* B and W apart: what each B keeps for its W (struct gpt's wsets) */
    for (int m = 0; m < pt->wslots; m++)
        for (int l = pt->first; l < pt->first + pt->count; l++)
            for (int w = 0; w < W_COUNT; w++)
                g->wsets[m * L + l][w] = carve(g, GPT_MEM_ARENA, wset_elems(g, w) * g->esize);

    layout_scratch(g);

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
                          const struct ckpt_policy *ckpt, struct error *e)
{
    return gpt_estimate_part_bytes(c, batch, fmt, ckpt, NULL, e);
}

size_t gpt_estimate_part_bytes(const struct gpt_config *c, int batch, enum fp_format fmt,
                               const struct ckpt_policy *ckpt, const struct gpt_part *part,
                               struct error *e)
{
    struct gpt *g = calloc(1, sizeof *g);
    if (!g) {
        error_set(e, ERR_NOMEM, "out of memory");
        return 0;
    }
    size_t total = 0;
    if (setup(g, c, batch, fmt, ckpt, part, e) == 0) {
        layout(g);
        for (int k = 0; k < GPT_MEM_KINDS; k++)
            total += g->mem[k];
    }
    gpt_free(g);
    return total;
}

int gpt_new(struct gpt **out, const struct gpt_config *c, int batch, enum fp_format fmt,
            const struct ckpt_policy *ckpt, const struct gpt_alloc *alloc, struct error *e)
{
    return gpt_new_part(out, c, batch, fmt, ckpt, alloc, NULL, e);
}

int gpt_new_part(struct gpt **out, const struct gpt_config *c, int batch, enum fp_format fmt,
                 const struct ckpt_policy *ckpt, const struct gpt_alloc *alloc,
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
    if (g->ring.cp > 1 && !(g->alloc.cp_post && g->alloc.cp_wait)) {
        gpt_free(g);
        return error_set(e, ERR_INVAL, "context parallelism needs the seam's cp_post and cp_wait");
    }
    if (g->moe.ep > 1 && !(g->alloc.ep_alltoallv && (!g->moe.dropless || g->alloc.ep_counts))) {
        gpt_free(g);
        return error_set(e, ERR_INVAL,
                         "expert parallelism needs the seam's ep_alltoallv (and ep_counts when "
                         "dropless)");
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

    /* The places of the part's tokens in the sequence: all of them, or its context-parallel
     * share. RoPE tables: angle = pos * base^(-2i / hd), i < hd / 2 (Su et al. 2021; the
     * rotate-half layout of GPT-NeoX and Llama); computed in double, stored in fp32. */
    size_t T = (size_t)g->T, half = (size_t)g->hd / 2;
    enum ring_split split = g->part.cp_naive ? RING_NAIVE : RING_BALANCED;
    if (g->ring.pos)
        ring_positions(c->seq, g->ring.cp, g->ring.cpr, split, g->ring.pos);
    for (size_t t = 0; t < T; t++)
        for (size_t i = 0; i < half; i++) {
            double inv = 1.0 / pow(ROPE_BASE, (double)(2 * i) / (double)g->hd);
            double ang =
                (double)ring_position(c->seq, g->ring.cp, g->ring.cpr, split, (int)t) * inv;
            g->s.rope_cos[t * half + i] = (float)cos(ang);
            g->s.rope_sin[t * half + i] = (float)sin(ang);
        }
    *out = g;
    return 0;
}

/* The weights last drawn, kept for the next draw of the same shape and seed: every GPU of a
 * run draws the whole model on its own thread, and the window's panels start run after run
 * of one model, while a normal per weight (a logarithm and a cosine) took a third of a short
 * run's time. One copy for the process, replaced by a draw of another shape or seed; a copy
 * that finds no memory is not kept. What the draw depends on is its key: the sizes of the
 * tensors and their kinds (which layers hold experts), the layers (the projections' scale)
 * and the seed; the parameter count besides, so that a field added to the shape which
 * changes it cannot be missed. */
static struct {
    pthread_mutex_t mu;
    long key[9];
    float *w;
} drawn = {PTHREAD_MUTEX_INITIALIZER, {0}, NULL};

static void draw_params(const struct gpt_config *c, uint64_t seed, float *master);

void gpt_init_params(const struct gpt_config *c, uint64_t seed, float *master)
{
    size_t n = gpt_param_count(c);
    long key[9] = {(long)seed, (long)n,        c->vocab,
                   c->d,       c->layers,      c->heads,
                   c->ffn,     c->moe.experts, c->moe.experts ? c->moe.every : 0};
    pthread_mutex_lock(&drawn.mu);
    if (drawn.w && !memcmp(drawn.key, key, sizeof key)) {
        memcpy(master, drawn.w, n * sizeof *master);
    } else {
        draw_params(c, seed, master);
        free(drawn.w);
        if ((drawn.w = malloc(n * sizeof *master))) {
            memcpy(drawn.w, master, n * sizeof *master);
            memcpy(drawn.key, key, sizeof key);
        }
    }
    pthread_mutex_unlock(&drawn.mu);
}

static void draw_params(const struct gpt_config *c, uint64_t seed, float *master)
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
                                  act_bytes(g, A_P, SZ_DENSE), g->head_bytes, g->wset_bytes};
}

struct gpt_calls gpt_step_calls(const struct gpt_config *c, const struct ckpt_policy *ckpt,
                                const struct gpt_part *part)
{
    struct gpt_part whole = {.count = c->layers, .embed = true, .head = true, .slots = 1};
    const struct gpt_part *p = part ? part : &whole;
    long L = p->count, seg = ckpt ? ckpt_segment(ckpt, p->count) : 0, ends = p->head ? 1 : 0;
    bool selective = ckpt && ckpt->kind == CKPT_SELECTIVE, again = seg || selective;
    struct gpt_calls n = {0};
    /* forward and backward of each layer, the head's forward and backward, and a
     * recomputation per layer (all of it when segmented, the core when selective); with
     * tensor parallelism a layer's compute is charged in parts, before each sum that follows
     * its matmuls (model/gpt_step.c's work): the attention's and the MLP's, in the backward
     * pass under sequence parallelism before each gather of a norm's output again as well */
    bool tpp = p->tp > 1, sp = tpp && p->sp;
    long fwd_parts = tpp ? 2 : 1, bwd_parts = sp ? 4 : tpp ? 2 : 1;
    /* B and W apart: B gathers no norm output again; W charges its matmuls in one part, or
     * before each of those gathers and at its end; B books each layer's W tensors, W frees
     * them */
    bool split = p->wslots > 0;
    if (split)
        bwd_parts = (tpp ? 2 : 1) + (sp ? 3 : 1);
    n.compute = (fwd_parts + bwd_parts) * L + 2 * ends + (seg ? fwd_parts * L : selective ? L : 0);
    /* the forward keeps each layer's list (segmented: each segment's input), then the ends;
     * the backward frees the ends, brings back what is recomputed (each layer when
     * segmented or selective) and frees each layer's list */
    n.charge =
        (seg ? (L + seg - 1) / seg : L) + 2 * ends + (again ? L : 0) + L + (split ? 2 * L : 0);
    /* a layer's forward sums its two row-parallel outputs, its backward the two norms' input
     * gradients; the ends sum the lookup, and the head's input gradient and the
     * cross-entropy's three row statistics; a segment's layers run their forward again.
     * Sequence parallelism turns each sum of rows into a reduce-scatter and gathers each
     * norm's output before its matmuls (again in the backward pass) and each gradient before
     * the row-parallel matmuls' backward. */
    long fwd = L + (seg ? L : 0), rows = 2 * fwd + 2 * L + (p->embed ? 1 : 0) + ends;
    if (tpp) {
        n.tp_sum = 3 * ends + (sp ? 0 : rows);
        n.tp_half = sp ? rows + 2 * fwd + 4 * L + (p->embed ? 1 : 0) + 2 * ends : 0;
    }
    /* ring attention (model/gpt_ring.c, and flash at cp 1): C - 1 steps forward, 2 (C - 1) backward
     * (K and V ahead, the gradients after each block); each pass charges its C blocks apart, and
     * the q, k, v (forward) or dWo, datt (backward) before them; under sequence parallelism that
     * leaves nothing for the backward's charge before the gather of xn1 again */
    if (p->cp > 1 || p->flash) { /* flash at cp 1: the GPU's own block, no steps */
        long C = p->cp > 1 ? p->cp : 1;
        n.cp_shift = fwd * (C - 1) + L * 2 * (C - 1);
        n.compute += (fwd + L) * (C + 1) - (sp ? L : 0);
    }
    /* an expert layer dispatches and combines, forward and backward; dropless, each forward
     * sends its counts first */
    bool dropless = !(c->moe.capacity_factor > 0);
    if (p->ep > 1)
        for (int l = p->first; l < p->first + p->count; l++)
            if (gpt_layer_moe(c, l)) {
                n.ep_a2a += (dropless ? 3 : 2) * (seg ? 2 : 1) + 2;
                n.ep_counts += dropless ? (seg ? 2 : 1) : 0;
            }
    return n;
}

/* The sum over the model's layers. */
static double layers_flops(const struct gpt *g)
{
    double s = 0;
    for (int l = 0; l < g->c.layers; l++)
        s += layer_flops(g, l);
    return s;
}

struct gpt_flops gpt_flops(const struct gpt *g)
{
    double fwd = layers_flops(g) + head_flops(g);
    struct gpt_flops fl = {fwd, 2 * fwd, 0};
    if (g->seg)
        fl.recompute = layers_flops(g);
    else if (g->ckpt.kind == CKPT_SELECTIVE)
        fl.recompute = g->c.layers * attn_flops(g) / 2; /* QK^T again; softmax is no matmul */
    return fl;
}

struct gpt_flops gpt_step_flops(const struct gpt_config *c, int batch,
                                const struct ckpt_policy *ckpt)
{
    struct gpt g = {
        .c = *c, .B = batch, .T = c->seq, .N = batch * c->seq, .hd = c->d / c->heads, .tp = 1};
    g.hl = c->heads, g.dl = c->d, g.fl = c->ffn, g.vl = c->vocab;
    g.ckpt = ckpt ? *ckpt : (struct ckpt_policy){CKPT_NONE, 0};
    g.seg = ckpt_segment(&g.ckpt, c->layers);
    return gpt_flops(&g);
}

void gpt_set_loss_tokens(struct gpt *g, double tokens)
{
    g->loss_tokens = tokens > 0 ? tokens : g->N;
}

uint64_t gpt_ring_scores(const struct gpt *g)
{
    return g->ring.scores;
}

void gpt_diag(const struct gpt *g, struct gpt_diag *out)
{
    snprintf(out->nonfinite, sizeof out->nonfinite, "%s", g->nonfinite);
    out->nonfinite_forward = g->nonfinite_forward;
    out->underflow = g->underflow;
    out->underflow_total = g->underflow_total;
    out->grad_elements = g->nparams;
    out->aux_loss = g->moe.aux;
    out->routed = g->moe.routed, out->dropped = g->moe.dropped;
    out->expert_load = g->moe.load, out->expert_kept = g->moe.kept;
    out->expert_rows_at_peak = g->moe.held_peak;
}
