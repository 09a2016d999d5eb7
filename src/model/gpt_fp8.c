/* FP8 training of the tiny GPT's linear layers (model/gpt.h's struct gpt_fp8): each of a
 * dense layer's seven GEMMs' inputs quantised to fp8 with the recipe's scales (num/fp8.h), the
 * GEMM run over the dequantised values in fp32, and what the quantisations did counted per
 * linear layer and input for the step's record; the delayed recipe's amax histories.
 *
 * A GEMM's two inputs are quantised into two buffers (qa, qb) right before it, from the
 * tensors the bf16 model already holds: a GPU's fp8 GEMM reads fp8 copies made the same way
 * (TE casts the input and the weight in fprop and keeps the fp8 input for wgrad). Casting the
 * same bf16 tensor with the same scale again gives the same bits, so wgrad's x, quantised again
 * from the kept bf16 input, equals the fp8 input TE keeps; the block recipe's wgrad casts x and
 * dy by columns (block x 1 tiles, the tokens being wgrad's inner dimension), as TE's
 * Float8BlockScaling makes a columnwise copy. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/prof.h"
#include "model/gpt.h"
#include "model/fp8gemm.h"
#include "model/gpt_impl.h"

enum gpt_kind gpt_linear_kind(int i)
{
    return i < 4 ? (enum gpt_kind)(GPT_WQ + i) : (enum gpt_kind)(GPT_W_GATE + i - 4);
}

static size_t sites(const struct gpt *g)
{
    return (size_t)g->part.count * GPT_LINEARS * FP8_ROLES;
}

int fp8_setup(struct gpt *g)
{
    const struct gpt_fp8 *c = &g->c.fp8;
    if (c->recipe == FP8_OFF)
        return 0;
    g->f8.stats = calloc(sites(g), sizeof *g->f8.stats);
    if (c->recipe == FP8_DELAYED)
        g->f8.hist = calloc(sites(g), sizeof *g->f8.hist);
    if (!g->f8.stats || (c->recipe == FP8_DELAYED && !g->f8.hist))
        return ERR_NOMEM;
    for (size_t i = 0; g->f8.hist && i < sites(g); i++)
        g->f8.hist[i] = (struct fp8_history){NULL, c->history, 0, 1.0f}; /* TE starts at 1 */
    return 0;
}

void fp8_free(struct gpt *g)
{
    free(g->f8.stats);
    free(g->f8.hist);
}

/* The operands: qa holds x [N, in] or dy [N, out], qb a weight [out, in] or wgrad's x. */
void fp8_layout(struct gpt *g, void *(*carve)(struct gpt *, enum gpt_mem, size_t))
{
    if (g->c.fp8.recipe == FP8_OFF)
        return;
    size_t N = (size_t)g->N, d = (size_t)g->c.d, dl = (size_t)g->dl, f = (size_t)g->fl;
    size_t w = d > dl ? d : dl;
    w = w > f ? w : f;
    g->f8.qa_elems = N * w;
    g->f8.qb_elems = N * w > f * d ? N * w : f * d;
    g->f8.qb_elems = g->f8.qb_elems > dl * d ? g->f8.qb_elems : dl * d;
    g->f8.qa = carve(g, GPT_MEM_WORKSPACE, g->f8.qa_elems * 4);
    g->f8.qb = carve(g, GPT_MEM_WORKSPACE, g->f8.qb_elems * 4);
    if (g->f8.hist) {
        float *h = carve(g, GPT_MEM_WORKSPACE, sites(g) * (size_t)g->c.fp8.history * 4);
        for (size_t i = 0; i < sites(g); i++)
            g->f8.hist[i].amax = h + i * (size_t)g->c.fp8.history;
    }
}

void fp8_step_begin(struct gpt *g)
{
    const struct gpt_fp8 *c = &g->c.fp8;
    if (c->recipe == FP8_OFF)
        return;
    for (size_t i = 0; g->f8.hist && i < sites(g); i++) /* after a step: its amaxes */
        if (g->f8.stats[i].n)
            fp8_history_update(&g->f8.hist[i], fp8_format_of(c->recipe, (enum fp8_role)(i % 3)),
                               g->f8.stats[i].amax, c->margin);
    memset(g->f8.stats, 0, sites(g) * sizeof *g->f8.stats);
}

/* Which linear layer of layer l has w as its weight (grads: as its gradient): 0 to 6, or -1. */
static int linear_of(const struct gpt *g, int l, const float *w, bool grads)
{
    if (g->c.fp8.recipe == FP8_OFF || gpt_layer_moe(&g->c, l))
        return -1;
    const struct layer_ptrs *p = grads ? &g->lg[l] : &g->lw[l];
    const float *ws[GPT_LINEARS] = {p->wq, p->wk, p->wv, p->wo, p->w_gate, p->w_up, p->w_down};
    for (int i = 0; i < GPT_LINEARS; i++)
        if (ws[i] == w)
            return i;
    return -1;
}

static size_t site(const struct gpt *g, int l, int lin, enum fp8_role role)
{
    return ((size_t)(l - g->part.first) * GPT_LINEARS + (size_t)lin) * FP8_ROLES + role;
}

/* Operand `which` of GEMM k of layer l's linear layer lin: the delayed recipe's scale, and
 * its statistics when counted (x and w in the forward pass, not again when a checkpointed
 * layer is recomputed: the same values; dy in dgrad). */
static struct fp8_operand operand(struct gpt *g, int l, int lin, enum fp8_gemm k, int which,
                                  const float *v)
{
    enum fp8_role role = fp8_gemm_role(k, which);
    size_t at = site(g, l, lin, role);
    bool count = (k == FP8_FPROP && g->in_forward) || (k == FP8_DGRAD && role == FP8_DY);
    return (struct fp8_operand){v, g->f8.hist ? g->f8.hist[at].scale : 0,
                                count ? &g->f8.stats[at] : NULL};
}

/* GEMM k of layer l's linear layer whose weight (wgrad: gradient) is w, when fp8 runs it. */
static bool run(struct gpt *g, int l, enum fp8_gemm k, const float *w, float *out, const float *a,
                const float *b, int out_w, int in_w, float beta)
{
    int lin = linear_of(g, l, w, k == FP8_WGRAD);
    if (lin < 0)
        return false;
    fp8_gemm(&g->c.fp8, k, out, operand(g, l, lin, k, 0, a), operand(g, l, lin, k, 1, b), g->N,
             out_w, in_w, beta, g->f8.qa, g->f8.qb);
    return true;
}

bool fp8_fprop(struct gpt *g, int l, float *y, const float *x, const float *w, int out, int in)
{
    return run(g, l, FP8_FPROP, w, y, x, w, out, in, 0.0f);
}

bool fp8_dgrad(struct gpt *g, int l, float *dx, const float *dy, const float *w, int out, int in,
               float beta)
{
    return run(g, l, FP8_DGRAD, w, dx, dy, w, out, in, beta);
}

bool fp8_wgrad(struct gpt *g, int l, float *dw, const float *dy, const float *x, int out, int in,
               bool acc)
{
    return run(g, l, FP8_WGRAD, dw, dw, dy, x, out, in, acc ? 1.0f : 0.0f);
}

void gpt_fp8_stats(const struct gpt *g, struct fp8_stats out[GPT_LINEARS][FP8_ROLES])
{
    if (g->c.fp8.recipe == FP8_OFF)
        return;
    for (int l = 0; l < g->part.count; l++)
        for (int i = 0; i < GPT_LINEARS; i++)
            for (int r = 0; r < FP8_ROLES; r++) {
                const struct fp8_stats *s = &g->f8.stats[site(g, g->part.first + l, i, r)];
                if (s->n)
                    fp8_stats_add(&out[i][r], s);
            }
}

void gpt_fp8_totals(const struct gpt *g, struct fp8_stats out[FP8_ROLES])
{
    struct fp8_stats k[GPT_LINEARS][FP8_ROLES];
    memset(k, 0, sizeof k);
    gpt_fp8_stats(g, k);
    for (int i = 0; i < GPT_LINEARS; i++)
        for (int r = 0; r < FP8_ROLES; r++)
            if (k[i][r].n)
                fp8_stats_add(&out[r], &k[i][r]);
}
