/* The tiny GPT's step: forward and backward by hand over cblas_sgemm (model/gpt.h; the model
 * is built by model/gpt.c).
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
 * holds at its worst moment.
 *
 * The operations a layer is built from (matmuls, RMSNorm, RoPE, SwiGLU, attention, and the
 * rounding, checking and counting around each) are model/gpt_ops.c's; this file strings them
 * into a layer, the passes and the step. */
#include "config.h"
#include "model/gpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/prof.h"
#include "model/gpt_impl.h"

/* ------------------------------------------------------------------ one layer */

/* Where a layer's tensors are computed and read: a kept tensor stored in fp32 (every one in
 * fp32 training, the RMSNorm statistics always) is computed in its saved set itself, since
 * copying it there would change nothing; the others in the workspace, rounded to the format
 * as they are stored. */
static void bind(struct gpt *g, void *const *set)
{
    for (int a = 0; a < A_COUNT; a++) {
        bool fp32 = g->fmt == FP_FP32 || act_fp32(g, a);
        g->s.w[a] = a == A_ROUTE ? NULL : set && set[a] && fp32 ? set[a] : g->s.ws[a];
    }
    /* the routing is no tensor but a table of words, kept in place as the fp32 tensors are */
    g->moe.route = set && set[A_ROUTE] ? set[A_ROUTE] : g->moe.route_ws;
}

/* ---- a mixture of experts in place of the MLP (model/moe.h routes the tokens) ---- */

/* The routing the layer at hand keeps: its table (moe.route, model/moe.h's struct moe_table)
 * and the router's probabilities (w[A_RP]). */
static struct moe_route route_of(const struct gpt *g)
{
    int N = g->N, k = g->c.moe.top_k, E = g->c.moe.experts;
    struct moe_table t = moe_table_at(g->moe.route, N, k, E);
    return (struct moe_route){.n = N,
                              .experts = E,
                              .k = k,
                              .cap = (int)experts_capacity(N, E, k, g->c.moe.capacity_factor),
                              .probs = g->s.w[A_RP],
                              .choice = t.choice,
                              .row = t.row,
                              .gate = t.gate,
                              .off = t.off,
                              .kept = t.kept,
                              .load = t.load};
}

/* Expert e's three matrices in a layer's weights or gradients. */
static void expert_w(const struct gpt *g, const struct layer_ptrs *t, int e, float **gate,
                     float **up, float **down)
{
    size_t fd = (size_t)g->fl * (size_t)g->c.d;
    *gate = t->experts + 3 * (size_t)e * fd, *up = *gate + fd, *down = *up + fd;
}

/* The E blocks of rows the experts run on, each an expert of this GPU's and n rows from row
 * off of the experts' buffer: on one GPU, expert b's kept rows; under expert parallelism
 * (model/gpt.h), after the dispatch, block b = j E/ep + e holds the cap rows GPU j sent to
 * this GPU's expert e, padding included (the receiver does not know how many are tokens: it
 * runs the static shape, as a GPU does; zero rows give zero outputs and gradients). */
static int expert_block(const struct gpt *g, const struct moe_route *r, int b, size_t *off)
{
    if (g->moe.ep == 1) {
        *off = (size_t)r->off[b];
        return r->kept[b];
    }
    if (g->moe.dropless) { /* the rows GPU j sent expert e, after GPU j's for the ones before */
        const int32_t *got = moe_table_at(g->moe.route, g->N, r->k, r->experts).recv;
        *off = 0;
        for (int i = 0; i < b; i++)
            *off += (size_t)got[i];
        return got[b];
    }
    *off = (size_t)b * (size_t)r->cap;
    return r->cap;
}

/* The expert of block b, among this GPU's. */
static int block_expert(const struct gpt *g, int b)
{
    return b % (g->c.moe.experts / g->moe.ep);
}

/* Dropless: the elements of the layer at hand this GPU sends each GPU of its group (its rows
 * for that GPU's experts, a run of its packed rows) and receives from each (what that GPU said
 * it routed to this GPU's experts), from its kept routing. */
static void dropless_counts(struct gpt *g, const struct moe_route *r)
{
    const int32_t *got = moe_table_at(g->moe.route, g->N, r->k, r->experts).recv;
    int mine = r->experts / g->moe.ep;
    for (int j = 0; j < g->moe.ep; j++) {
        size_t out = 0, in = 0;
        for (int e = 0; e < mine; e++)
            out += (size_t)r->load[j * mine + e], in += (size_t)got[j * mine + e];
        g->moe.scount[j] = out * (size_t)g->c.d, g->moe.rcount[j] = in * (size_t)g->c.d;
    }
}

/* An all-to-all of the experts' rows over the expert-parallel group (the seam's): the blocks
 * the way the tokens go (out: this GPU's rows to their experts) or back; the static shape's are
 * equal both ways, dropless the routing's. */
static void ep_exchange(struct gpt *g, const float *send, float *recv, bool out, const char *what)
{
    const size_t *s = out ? g->moe.scount : g->moe.rcount, *r = out ? g->moe.rcount : g->moe.scount;
    g->alloc.ep_alltoallv(g->alloc.ctx, send, s, recv, r, what);
}

/* out [N, d] = Σ_j g_j expert_j(x) for the N tokens of x = xn2 (their k choices), each
 * expert a SwiGLU on the rows of its tokens (Shazeer et al. 2017, "Outrageously Large Neural
 * Networks", the sparsely gated layer). The router computes and keeps in fp32; the experts'
 * tensors are produced in the format like the dense MLP's. The routing's figures are counted
 * in the forward pass (not again when a checkpointed layer is recomputed: the same routing).
 * Under expert parallelism the rows are gathered in dxe, sent to their experts' GPUs into
 * the kept xe, and the experts' outputs computed in dye come back into the kept ye. */
static void moe_forward(struct gpt *g, int l, const float *x, float *out)
{
    int N = g->N, d = g->c.d, f = g->fl, k = g->c.moe.top_k, E = g->c.moe.experts;
    const struct layer_ptrs *W = &g->lw[l];
    float **w = g->s.w;
    struct moe_route r = route_of(g);
    op_mm_fwd(g->moe.zlog, x, W->router, N, E, d);
    op_check(g, g->moe.zlog, (size_t)N * E, l, "router logits");
    double aux = moe_route(&r, g->moe.zlog, g->c.moe.capacity_factor, g->c.moe.aux_coef);
    if (g->in_forward) {
        int ml = moe_before(&g->c, l);
        g->moe.aux += aux;
        g->moe.routed += (uint64_t)N * (uint64_t)k, g->moe.dropped += (uint64_t)r.dropped;
        memcpy(g->moe.load + (size_t)ml * E, r.load, (size_t)E * sizeof *r.load);
        memcpy(g->moe.kept + (size_t)ml * E, r.kept, (size_t)E * sizeof *r.kept);
    }
    /* dispatch: each kept choice's token into its expert's rows (the rest zero, sent; dropless:
     * every row a choice's) */
    float *rows = g->moe.ep > 1 ? g->moe.dxe : w[A_XE],
          *yout = g->moe.ep > 1 ? g->moe.dye : w[A_YE];
    if (g->moe.ep > 1 && !g->moe.dropless)
        memset(rows, 0, g->moe.rows * (size_t)d * sizeof *rows);
    size_t held = g->moe.rows; /* the rows its experts run on: the buffer's, or dropless */
    if (g->moe.dropless) { /* the counts first: each GPU's for its experts, kept with the routing */
        struct moe_table t = moe_table_at(g->moe.route, N, k, E);
        g->alloc.ep_counts(g->alloc.ctx, r.load, t.recv, (size_t)E, GPT_EP_COUNTS);
        dropless_counts(g, &r);
        held = 0;
        for (int j = 0; j < g->moe.ep; j++)
            held += g->moe.rcount[j] / (size_t)d;
    }
    g->moe.held[moe_before(&g->c, l)] = (uint32_t)held;
    for (int t = 0; t < N; t++)
        for (int j = 0; j < k; j++) {
            int row = r.row[t * k + j];
            if (row >= 0)
                memcpy(rows + (size_t)row * d, x + (size_t)t * d, (size_t)d * 4);
        }
    if (g->moe.ep > 1)
        ep_exchange(g, rows, w[A_XE], true, GPT_EP_DISPATCH);
    for (int b = 0; b < E; b++) {
        size_t o;
        int n = expert_block(g, &r, b, &o);
        float *xe = w[A_XE] + o * d, *a = w[A_G] + o * f, *u = w[A_U] + o * f;
        float *h = w[A_H] + o * f, *y = yout + o * d, *wg, *wu, *wd;
        if (n == 0)
            continue;
        expert_w(g, W, block_expert(g, b), &wg, &wu, &wd);
        op_mm_fwd(a, xe, wg, n, f, d);
        op_produced(g, a, (size_t)n * f, l, "expert gate");
        op_mm_fwd(u, xe, wu, n, f, d);
        op_produced(g, u, (size_t)n * f, l, "expert up");
        op_swiglu_forward(g, h, a, u, (size_t)n * f, l);
        op_mm_fwd(y, h, wd, n, d, f);
        op_produced(g, y, (size_t)n * d, l, "expert out");
    }
    if (g->moe.ep > 1)
        ep_exchange(g, yout, w[A_YE], false, GPT_EP_COMBINE);
    /* combine: the gate-weighted sum of each token's experts' outputs, in choice order */
    for (int t = 0; t < N; t++) {
        float *o = out + (size_t)t * d;
        memset(o, 0, (size_t)d * 4);
        for (int j = 0; j < k; j++) {
            int row = r.row[t * k + j];
            if (row < 0) /* dropped: nothing from that expert */
                continue;
            float gj = r.gate[t * k + j];
            const float *y = w[A_YE] + (size_t)row * d;
            for (int c = 0; c < d; c++)
                o[c] += gj * y[c];
        }
    }
    op_produced(g, out, (size_t)N * d, l, "experts out");
}

/* The experts' backward, block by block (expert_block), from d y in dy's rows: their weight
 * gradients (an expert's blocks add up) and d xe into dx's rows (which may be dy's: a block's
 * d y is used up before its d xe is written). */
static void experts_backward(struct gpt *g, int l, const struct moe_route *r, float *dy, float *dx)
{
    int d = g->c.d, f = g->fl, E = g->c.moe.experts, mine = E / g->moe.ep;
    const struct layer_ptrs *W = &g->lw[l], *G = &g->lg[l];
    float **w = g->s.w;
    bool injected = false, seen[GPT_MAX_EXPERTS] = {false};
    for (int b = 0; b < E; b++) {
        size_t o;
        int n = expert_block(g, r, b, &o), e = block_expert(g, b);
        float *wg, *wu, *wd, *gg, *gu, *gd;
        expert_w(g, W, e, &wg, &wu, &wd);
        expert_w(g, G, e, &gg, &gu, &gd);
        /* an expert's later blocks add to its first with rows; its gradients are done after its
         * last (dropless, a block may be empty: one GPU routed none of its tokens there) */
        bool acc = g->accumulate || seen[e], done = b + mine >= E;
        if (n == 0) { /* no token: no gradient (or nothing added to the micro-batches') */
            if (done && seen[e]) {
                op_produced_grad(g, gd, (size_t)d * f, l, "grad expert w_down");
                op_produced_grad(g, gg, (size_t)f * d, l, "grad expert w_gate");
                op_produced_grad(g, gu, (size_t)f * d, l, "grad expert w_up");
            } else if (done && !g->accumulate) {
                memset(gg, 0, 3 * (size_t)f * d * sizeof *gg);
            }
            continue;
        }
        seen[e] = true;
        const float *xe = w[A_XE] + o * d, *a = w[A_G] + o * f, *u = w[A_U] + o * f;
        const float *h = w[A_H] + o * f;
        float *dyb = dy + o * d, *dxb = dx + o * d;
        size_t nf = (size_t)n * f;
        /* y = h Wd^T: dh = dy Wd, dWd = dy^T h */
        op_mm_dx(g->s.dh, dyb, wd, n, d, f, 0.0f);
        op_rnd(g, g->s.dh, nf);
        if (g->inj && g->inj->inf_grad_layer == l && !injected)
            g->s.dh[0] = INFINITY, injected = true; /* the lessons' injected overflow */
        op_check(g, g->s.dh, nf, l, "grad expert hidden");
        op_mm_dw_acc(gd, dyb, h, n, d, f, acc);
        if (done)
            op_produced_grad(g, gd, (size_t)d * f, l, "grad expert w_down");
        op_swiglu_backward(g, g->s.dg, g->s.du, g->s.dh, a, u, nf);
        op_mm_dw_acc(gg, g->s.dg, xe, n, f, d, acc);
        if (done)
            op_produced_grad(g, gg, (size_t)f * d, l, "grad expert w_gate");
        op_mm_dw_acc(gu, g->s.du, xe, n, f, d, acc);
        if (done)
            op_produced_grad(g, gu, (size_t)f * d, l, "grad expert w_up");
        op_mm_dx(dxb, g->s.dg, wg, n, f, d, 0.0f);
        op_mm_dx(dxb, g->s.du, wu, n, f, d, 1.0f);
    }
}

/* Its backward, with layer l's tensors in the workspace: from dout (d loss / d out) to dxn
 * (d loss / d x), and the gradients of the router and of every expert (zero for one that got
 * no token). Under expert parallelism the rows' d y go to their experts' GPUs and their d xe
 * come back (dye and dxe take turns). */
static void moe_backward(struct gpt *g, int l, const float *dout, const float *x, float *dxn)
{
    int N = g->N, d = g->c.d, k = g->c.moe.top_k, E = g->c.moe.experts;
    const struct layer_ptrs *W = &g->lw[l], *G = &g->lg[l];
    float **w = g->s.w;
    struct moe_route r = route_of(g);
    if (g->moe.ep > 1 && !g->moe.dropless) /* the padding's rows are sent too */
        memset(g->moe.dye, 0, g->moe.rows * (size_t)d * sizeof *g->moe.dye);
    /* out_t = Σ_j g_j y_j: d g_j = dout_t . y_j, d y_j = g_j dout_t */
    for (int t = 0; t < N; t++)
        for (int j = 0; j < k; j++) {
            int row = r.row[t * k + j];
            float dot = 0; /* a dropped choice's gate has no gradient */
            if (row >= 0) {
                const float *dt = dout + (size_t)t * d, *y = w[A_YE] + (size_t)row * d;
                float *dy = g->moe.dye + (size_t)row * d, gj = r.gate[t * k + j];
                for (int c = 0; c < d; c++) {
                    dot += dt[c] * y[c];
                    dy[c] = gj * dt[c];
                }
            }
            g->moe.dgate[t * k + j] = dot;
        }
    const float *dxe = g->moe.dxe;
    if (g->moe.ep > 1) {
        size_t rows = g->moe.rows;
        if (g->moe.dropless) /* its k N rows, in the sizes kept from the forward pass */
            dropless_counts(g, &r), rows = (size_t)N * (size_t)k;
        op_rnd(g, g->moe.dye, rows * (size_t)d); /* d y, rounded as produced */
        ep_exchange(g, g->moe.dye, g->moe.dxe, true, GPT_EP_GRAD_COMBINE);
        experts_backward(g, l, &r, g->moe.dxe, g->moe.dxe);
        ep_exchange(g, g->moe.dxe, g->moe.dye, false, GPT_EP_GRAD_DISPATCH);
        dxe = g->moe.dye;
    } else {
        for (int e = 0; e < E; e++) /* each expert's rows of d y, rounded as produced */
            op_rnd(g, g->moe.dye + (size_t)r.off[e] * d, (size_t)r.kept[e] * d);
        experts_backward(g, l, &r, g->moe.dye, g->moe.dxe);
    }
    /* the dispatch's backward: each token's rows' gradients added back, in choice order */
    memset(dxn, 0, (size_t)N * d * sizeof *dxn);
    for (int t = 0; t < N; t++)
        for (int j = 0; j < k; j++) {
            int row = r.row[t * k + j];
            if (row < 0) /* dropped: no gradient through that expert */
                continue;
            const float *dx = dxe + (size_t)row * d;
            float *dst = dxn + (size_t)t * d;
            for (int c = 0; c < d; c++)
                dst[c] += dx[c];
        }
    /* the router: the gates' and the load-balancing loss's gradients to the logits */
    moe_route_backward(&r, g->moe.dgate, g->c.moe.aux_coef, g->moe.aux_scale, g->moe.zlog);
    op_mm_dw_acc(G->router, g->moe.zlog, x, N, E, d, g->accumulate);
    op_produced_grad(g, G->router, (size_t)E * d, l, "grad router");
    op_mm_dx(dxn, g->moe.zlog, W->router, N, E, d, 1.0f);
}

/* Compute is charged where it runs. A pass (a layer's forward, backward or recomputation, the
 * head's) begins with work_begin; its matmuls add their FLOPs as they run (work); they are
 * charged to the seam before each tensor-parallel communication that follows them (work_sync)
 * and at the pass's end (work_end), so a simulated clock sees a layer's sums between its
 * matmuls, where a GPU's stream has them, and not all at once after the layer. */
static void work_begin(struct gpt *g, const char *what, int layer)
{
    g->work.flops = 0, g->work.what = what, g->work.layer = layer;
}

static void work(struct gpt *g, double flops)
{
    g->work.flops += flops;
}

static void work_end(struct gpt *g)
{
    if (g->work.flops > 0)
        op_compute(g, g->work.flops, g->work.what, g->work.layer);
    g->work.flops = 0;
}

/* Before a tensor-parallel communication (none with tp 1). */
static void work_sync(struct gpt *g)
{
    if (g->tp > 1)
        work_end(g);
}

/* Runs layer l on the residual stream res (updated in place to the layer's output); keeps the
 * tensors of `save` (any may be NULL). Every tensor is rounded to the working format where it is
 * produced, as a bf16 kernel would write it. */
static void layer_forward(struct gpt *g, int l, float *res, void **save)
{
    int N = g->N, d = g->c.d, dl = g->dl, f = g->fl;   /* a tensor-parallel rank's widths */
    size_t nd = (size_t)g->nl * d, nf = (size_t)N * f; /* nd: the residual stream's */
    const struct layer_ptrs *W = &g->lw[l];
    float **w = g->s.w;
    bind(g, save);
    if (save && save[A_X])
        op_store(g, save[A_X], res, nd);
    const float *xin; /* a norm's output over every row (gathered under sequence parallelism) */

    /* attention: xn1 = RMSNorm(x); q, k, v = xn1 Wq^T, xn1 Wk^T, xn1 Wv^T, q and k rotated by
     * their position (RoPE); att = softmax(q k^T / sqrt(hd), causal) v; xm = x + att Wo^T */
    op_rmsnorm(g, l, "attn norm", w[A_XN1], w[A_RSTD1], res, W->attn_norm);
    xin = op_sp_gather(g, g->s.xg, w[A_XN1], "attn norm");
    op_linear(g, l, NULL, w[A_Q], xin, W->wq, dl, d); /* rounded, rotated, then checked */
    op_linear(g, l, NULL, w[A_K], xin, W->wk, dl, d);
    op_rope(g, l, "q", w[A_Q], 1);
    op_rope(g, l, "k", w[A_K], 1);
    op_linear(g, l, "v", w[A_V], xin, W->wv, dl, d);
    double qkv = 0;       /* charged before the ring sends k and v */
    if (g->ring.blocks) { /* every GPU's keys and values come round the ring */
        work(g, qkv = 2.0 * 3 * N * d * dl);
        work_end(g);
        op_ring_forward(g, l); /* charges its blocks */
    } else {
        op_attn_probs(g, l);
        op_attn_out(g, l);
    }
    op_linear(g, l, "attn proj", g->s.tmp, w[A_ATT], W->wo, d, dl);
    work(g, layer_fwd_work(g, l) - mlp_flops(g, l) - qkv);
    work_sync(g);
    op_tp_reduce_rows(g, g->s.tmp, "attn proj"); /* each rank's heads' share of the projection */
    op_add(g, w[A_XM], res, g->s.tmp, nd, l, "attn residual");

    /* MLP (SwiGLU): xn2 = RMSNorm(xm); h = silu(xn2 Wg^T) * (xn2 Wu^T); out = xm + h Wd^T;
     * or, with experts, out = xm + the experts' gate-weighted outputs (moe_forward) */
    op_rmsnorm(g, l, "mlp norm", w[A_XN2], w[A_RSTD2], w[A_XM], W->mlp_norm);
    xin = op_sp_gather(g, g->s.xg, w[A_XN2], "mlp norm");
    if (gpt_layer_moe(&g->c, l)) {
        moe_forward(g, l, xin, g->s.tmp);
    } else {
        op_linear(g, l, "gate", w[A_G], xin, W->w_gate, f, d);
        op_linear(g, l, "up", w[A_U], xin, W->w_up, f, d);
        op_swiglu_forward(g, w[A_H], w[A_G], w[A_U], nf, l);
        op_linear(g, l, "mlp out", g->s.tmp, w[A_H], W->w_down, d, f);
    }
    work(g, mlp_flops(g, l));
    work_sync(g);
    op_tp_reduce_rows(g, g->s.tmp, "mlp out"); /* each rank's share of the FFN width */
    op_add(g, res, w[A_XM], g->s.tmp, nd, l, "output");

    if (save) /* the kept tensors not computed in place */
        for (int a = A_RSTD1; a < A_COUNT; a++)
            if (save[a] && a != A_ROUTE && save[a] != w[a])
                op_store(g, save[a], w[a], act_elems(g, a, sz_of(g, l)));
}

/* The MLP's backward, with the layer's tensors in the workspace: dres holds d loss / d out on
 * entry, d loss / d xm on return; writes the gradients of w_down, w_gate, w_up and mlp_norm. */
static void mlp_backward(struct gpt *g, int l, float *dres)
{
    int N = g->N, d = g->c.d, f = g->fl;
    size_t nd = (size_t)N * d, nf = (size_t)N * f, nld = (size_t)g->nl * d;
    const struct layer_ptrs *W = &g->lw[l], *G = &g->lg[l];
    float **w = g->s.w;
    /* under sequence parallelism every row of dout and xn2, gathered (the backward of the
     * reduce-scatter, and the norm's output again for the weight gradients) */
    const float *dout = op_sp_gather(g, g->s.dg_full, dres, "grad mlp out");
    if (gpt_layer_moe(&g->c, l)) { /* the experts' and the router's (moe_backward) */
        moe_backward(g, l, dout, w[A_XN2], g->s.dxn);
        work(g, 2 * mlp_flops(g, l));
        work_sync(g);
        op_produced(g, g->s.dxn, nd, l, "grad mlp norm");
        op_rms_bwd(g, dres, G->mlp_norm, w[A_XM], w[A_RSTD2], W->mlp_norm, g->s.dxn, g->nl, d);
        op_produced_grad(g, G->mlp_norm, (size_t)d, l, "grad mlp_norm");
        op_produced(g, dres, nld, l, "grad attn residual");
        return;
    }

    /* out = xm + h Wd^T: dh = dout Wd, dWd = dout^T h; dout also flows on to xm (the residual) */
    void **keep = g->wkeep; /* B and W apart: the weight gradients' operands kept, not used */
    op_linear_dx(g, l, g->s.dh, dout, W->w_down, d, f, 0.0f);
    op_rnd(g, g->s.dh, nf);
    if (g->inj && g->inj->inf_grad_layer == l)
        g->s.dh[0] = INFINITY; /* the lessons' injected overflow */
    op_check(g, g->s.dh, nf, l, "grad mlp hidden");
    if (keep)
        op_store(g, keep[W_DOUT], dout, nd), op_store(g, keep[W_H], w[A_H], nf);
    else
        op_weight_grad(g, l, "grad w_down", G->w_down, dout, w[A_H], d, f);

    /* h = silu(a) u: see op_swiglu_backward */
    op_swiglu_backward(g, g->s.dg, g->s.du, g->s.dh, w[A_G], w[A_U], nf);
    work(g, (keep ? 1.0 : 2.0) * 2 * N * d * f); /* dh and dWd */
    if (keep) {
        op_store(g, keep[W_DG], g->s.dg, nf), op_store(g, keep[W_DU], g->s.du, nf);
        op_store(g, keep[W_XN2], w[A_XN2], nld);
    } else {
        if (g->sp) /* before the gather of xn2 again */
            work_sync(g);
        const float *xn2 = op_sp_gather(g, g->s.xg, w[A_XN2], "mlp norm again");
        op_weight_grad(g, l, "grad w_gate", G->w_gate, g->s.dg, xn2, f, d);
        op_weight_grad(g, l, "grad w_up", G->w_up, g->s.du, xn2, f, d);
    }
    /* a = xn2 Wg^T, u = xn2 Wu^T: dxn2 = da Wg + du Wu */
    op_linear_dx(g, l, g->s.dxn, g->s.dg, W->w_gate, f, d, 0.0f);
    op_linear_dx(g, l, g->s.dxn, g->s.du, W->w_up, f, d, 1.0f);
    op_produced(g, g->s.dxn, nd, l, "grad mlp norm");
    work(g, 2 * mlp_flops(g, l) - 2.0 * (keep ? 4 : 2) * N * d * f); /* (dWg, dWu,) dxn2 */
    work_sync(g);
    op_tp_reduce_rows(g, g->s.dxn, "grad mlp norm"); /* xn2 fed every rank's share of the width */
    /* xn2 = RMSNorm(xm): see op_rms_bwd; dxm joins the residual's gradient in dres */
    op_rms_bwd(g, dres, G->mlp_norm, w[A_XM], w[A_RSTD2], W->mlp_norm, g->s.dxn, g->nl, d);
    op_produced_grad(g, G->mlp_norm, (size_t)d, l, "grad mlp_norm");
    op_produced(g, dres, nld, l, "grad attn residual");
}

/* The attention's backward: dres holds d loss / d xm on entry, d loss / d x (the layer's
 * input) on return; writes the gradients of wo, wq, wk, wv and attn_norm. */
static void attn_backward(struct gpt *g, int l, float *dres)
{
    int N = g->N, d = g->c.d, dl = g->dl;
    size_t nd = (size_t)N * d, nld = (size_t)g->nl * d;
    const struct layer_ptrs *W = &g->lw[l], *G = &g->lg[l];
    float **w = g->s.w;
    const float *dxm = op_sp_gather(g, g->s.dg_full, dres, "grad attn proj"); /* every row */

    /* xm = x + att Wo^T: datt = dxm Wo, dWo = dxm^T att */
    void **keep = g->wkeep; /* B and W apart: the weight gradients' operands kept, not used */
    op_linear_dx(g, l, g->s.datt, dxm, W->wo, d, dl, 0.0f);
    op_rnd(g, g->s.datt, (size_t)N * dl);
    if (keep)
        op_store(g, keep[W_DXM], dxm, nd), op_store(g, keep[W_ATT], w[A_ATT], (size_t)N * dl);
    else
        op_weight_grad(g, l, "grad wo", G->wo, dxm, w[A_ATT], d, dl);
    /* att = softmax(q k^T / sqrt(hd)) v per head, q and k rotated: see op_attn_core_backward */
    /* (dWo,) datt and the core's (the ring charges its blocks itself, after dWo and datt) */
    work(g, layer_bwd_work(g, l) - 2 * mlp_flops(g, l) - 2.0 * (keep ? 7 : 6) * N * d * dl);
    if (g->ring.blocks) {
        work_end(g);
        op_ring_backward(g, l);
    } else
        op_attn_core_backward(g, l);
    if (keep) {
        op_store(g, keep[W_XN1], w[A_XN1], nld);
    } else {
        if (g->sp) /* before the gather of xn1 again */
            work_sync(g);
        const float *xn1 = op_sp_gather(g, g->s.xg, w[A_XN1], "attn norm again");
        op_weight_grad(g, l, "grad wq", G->wq, g->s.dq, xn1, dl, d);
        op_weight_grad(g, l, "grad wk", G->wk, g->s.dk, xn1, dl, d);
        op_weight_grad(g, l, "grad wv", G->wv, g->s.dv, xn1, dl, d);
    }
    /* q, k, v = xn1 W^T: dxn1 = dq Wq + dk Wk + dv Wv */
    op_linear_dx(g, l, g->s.dxn, g->s.dq, W->wq, dl, d, 0.0f);
    op_linear_dx(g, l, g->s.dxn, g->s.dk, W->wk, dl, d, 1.0f);
    op_linear_dx(g, l, g->s.dxn, g->s.dv, W->wv, dl, d, 1.0f);
    op_produced(g, g->s.dxn, nd, l, "grad attn norm");
    work(g, 2.0 * (keep ? 3 : 6) * N * d * dl); /* (dWq, dWk, dWv and) dxn1 */
    work_sync(g);
    op_tp_reduce_rows(g, g->s.dxn, "grad attn norm"); /* xn1 fed every rank's heads */
    op_rms_bwd(g, dres, G->attn_norm, w[A_X], w[A_RSTD1], W->attn_norm, g->s.dxn, g->nl, d);
    op_produced_grad(g, G->attn_norm, (size_t)d, l, "grad attn_norm");
    op_produced(g, dres, nld, l, "grad input");
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
        if (set[a] && a != A_ROUTE && set[a] != g->s.w[a])
            op_load(g, g->s.w[a], set[a], act_elems(g, a, sz_of(g, l)));
    if (!set[A_P]) { /* selective: the attention core comes back to life, in its slot */
        charge(g, (long long)act_bytes(g, A_P, SZ_DENSE));
        if (g->fmt == FP_FP32)
            g->s.w[A_P] = g->pslot;
        op_attn_probs(g, l);
        if (g->s.w[A_P] != g->pslot) /* already rounded: exact */
            op_store(g, g->pslot, g->s.w[A_P], act_elems(g, A_P, SZ_DENSE));
        op_compute(g, attn_flops(g) / 2, "recompute", l);
    }
}

/* ------------------------------------------------------------------ the passes */

/* Bytes layer l charges when its list is stored: all of it, or all but the core; its experts'
 * tensors at the rows they hold (dropless: the step's own counts, not the arena's room). */
static size_t set_bytes(const struct gpt *g, void **set, int l)
{
    size_t b = 0;
    for (int a = 0; a < A_COUNT; a++)
        if (set[a])
            b += act_bytes_at(g, a, sz_of(g, l), layer_rows(g, l));
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
    g->ring.scores = 0;
    g->moe.aux = 0, g->moe.routed = g->moe.dropped = 0;
    fp8_step_begin(g);
}

/* The load-balancing loss's weight in the backward pass: the loss scale, times this batch's
 * share of the tokens the loss is averaged over (a data-parallel GPU's aux is one of the
 * GPUs', a micro-batch's one of the micro-batches': the gradients add up to their mean's). */
static void set_aux_scale(struct gpt *g, float loss_scale)
{
    g->moe.aux_scale = (double)loss_scale * (double)g->N / g->loss_tokens;
}

/* The embedding lookup: the residual stream starts as the rows of the tokens. */
static void embed_forward(struct gpt *g, const int32_t *tokens)
{
    int N = g->N, d = g->c.d;
    const float *E = g->params;
    op_hook(g, GPT_HOOK_FORWARD, GPT_UNIT_EMBED);
    /* vocabulary-parallel: a rank has rows v0..v0+vl-1; the others' tokens are zeros here and
     * come from their rank in the sum */
    for (int r = 0; r < N; r++) {
        int t = tokens[r] - g->v0;
        float *x = g->s.res + (size_t)r * d;
        if (t >= 0 && t < g->vl)
            memcpy(x, E + (size_t)t * d, (size_t)d * 4);
        else
            memset(x, 0, (size_t)d * 4);
    }
    op_tp_reduce_rows(g, g->s.res, "embedding"); /* under sequence parallelism: this rank's rows */
    op_hook(g, GPT_HOOK_FORWARD_DONE, GPT_UNIT_EMBED);
    op_check(g, g->s.res, (size_t)g->nl * d, -1, "embedding");
}

/* The part's layers on the residual stream, keeping what the backward pass of micro-batch
 * `slot` needs. */
static void layers_forward(struct gpt *g, int slot)
{
    const struct gpt_part *pt = &g->part;
    for (int l = pt->first; l < pt->first + pt->count; l++) {
        op_hook(g, GPT_HOOK_FORWARD, l);
        work_begin(g, "forward", l);
        if (g->seg) {
            void *set[A_COUNT] = {0};
            int k = l - pt->first;
            if (k % g->seg == 0) { /* a checkpoint: the segment's input */
                set[A_X] = g->segin[slot * g->nseg + k / g->seg];
                charge(g, (long long)act_bytes(g, A_X, SZ_DENSE));
            }
            layer_forward(g, l, g->s.res, set);
        } else {
            layer_forward(g, l, g->s.res, saved_set(g, slot, l));
            charge(g, (long long)set_bytes(g, saved_set(g, slot, l), l));
        }
        work_end(g);
        op_hook(g, GPT_HOOK_FORWARD_DONE, l);
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
        const float *z = g->s.logits + (size_t)r * V;
        float mx = z[0];
        for (int j = 1; j < V; j++)
            mx = z[j] > mx ? z[j] : mx;
        g->s.rowmax[r] = mx;
    }
    g->alloc.tp_reduce(g->alloc.ctx, g->s.rowmax, (size_t)N, GPT_TP_MAX_FP32, "logits max");
    for (int r = 0; r < N; r++) {
        const float *z = g->s.logits + (size_t)r * V;
        double s = 0;
        for (int j = 0; j < V; j++)
            s += exp((double)z[j] - g->s.rowmax[r]);
        int t = targets[r] - g->v0;
        g->s.rowsum[r] = (float)s;
        g->s.rowtgt[r] = t >= 0 && t < V ? z[t] : 0.0f;
    }
    g->alloc.tp_reduce(g->alloc.ctx, g->s.rowsum, (size_t)N, GPT_TP_SUM_FP32, "sum of exp(logits)");
    g->alloc.tp_reduce(g->alloc.ctx, g->s.rowtgt, (size_t)N, GPT_TP_SUM_FP32, "target logits");
    double loss = 0;
    for (int r = 0; r < N; r++) {
        const float *z = g->s.logits + (size_t)r * V;
        float *pr = probs + (size_t)r * V;
        double lse = log((double)g->s.rowsum[r]) + g->s.rowmax[r];
        for (int j = 0; j < V; j++)
            pr[j] = (float)exp((double)z[j] - lse);
        loss += lse - g->s.rowtgt[r];
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
    op_hook(g, GPT_HOOK_FORWARD, GPT_UNIT_HEAD);
    op_store(g, head[H_X], g->s.res, nld);
    op_rmsnorm(g, -1, "final norm", g->s.hn, head[H_RSTD], g->s.res, wf);
    op_store(g, head[H_N], g->s.hn, nld);
    op_mm_fwd(g->s.logits, op_sp_gather(g, g->s.xg, g->s.hn, "final norm"), E, N, V, d);
    if (g->inj && g->inj->logit_factor != 1.0f)
        for (size_t i = 0; i < nv; i++)
            g->s.logits[i] *= g->inj->logit_factor; /* the lessons' bad batch */
    op_produced(g, g->s.logits, nv, -1, "logits");
    float *probs = head[H_PROBS];
    double loss = 0;
    if (g->tp > 1) { /* the logits' matmul runs before the cross-entropy's sums */
        op_compute(g, head_flops(g), "head forward", -1);
        loss = parallel_cross_entropy(g, probs, targets);
        charge(g, (long long)g->head_bytes);
        return loss / N;
    }
    prof_enter(PROF_LOSS);
    for (int r = 0; r < N; r++) {
        const float *z = g->s.logits + (size_t)r * V;
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
    op_compute(g, head_flops(g), "head forward", -1);
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
    float *E = g->params, *gE = g->grads, *dl = g->s.logits;
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
    op_produced(g, dl, nv, -1, "grad logits");
    size_t nld = (size_t)g->nl * d; /* the residual stream's rows */
    op_load(g, g->s.hn, head[H_N], nld);
    op_load(g, g->s.hx, head[H_X], nld);
    memcpy(g->s.hrstd, head[H_RSTD], (size_t)g->nl * 4);
    const float *hn = op_sp_gather(g, g->s.xg, g->s.hn, "final norm again"); /* every row */
    op_mm_dw_acc(gE, dl, hn, N, V, d, g->accumulate); /* the head's share of the embedding's */
    op_mm_dx(g->s.dxn, dl, E, N, V, d, 0.0f);
    op_rnd(g, g->s.dxn, nd);
    work_begin(g, "head backward", -1);
    work(g, 2 * head_flops(g));
    work_sync(g);
    op_tp_reduce_rows(g, g->s.dxn, "grad head input"); /* hn fed every rank's vocabulary */
    memset(g->s.dres, 0, nld * 4);
    float *gwf = g->grads + g->nparams - d;
    op_rms_bwd(g, g->s.dres, gwf, g->s.hx, g->s.hrstd, g->params + g->nparams - d, g->s.dxn, g->nl,
               d);
    op_produced_grad(g, gwf, (size_t)d, L, "grad final_norm");
    op_produced(g, g->s.dres, nld, -1, "grad final norm");
    work_end(g);
    charge(g, -(long long)g->head_bytes);
    op_hook(g, GPT_HOOK_FORWARD_DONE, GPT_UNIT_HEAD);
    if (g->wslot < 0) /* B and W apart: W says the gradients are complete */
        op_hook(g, GPT_HOOK_GRADS, GPT_UNIT_HEAD);
}

/* Layer l's W set in weight slot ws. */
static void **wset_at(struct gpt *g, int ws, int l)
{
    return g->wsets[(size_t)ws * g->c.layers + l];
}

/* Layer l's backward with its tensors loaded: its kept tensors released after it; fused, its
 * gradients complete; with B and W apart (wslot >= 0), what W needs kept in its set instead. */
static void layer_backward_at(struct gpt *g, int l, int slot)
{
    (void)slot;
    g->wkeep = g->wslot >= 0 ? wset_at(g, g->wslot, l) : NULL;
    if (g->wkeep) /* what W needs of this layer, booked before B writes it */
        charge(g, (long long)g->wset_bytes);
    work_begin(g, "backward", l);
    layer_backward(g, l, g->s.dres);
    work_end(g);
    g->wkeep = NULL;
    charge(g, -(long long)layer_bytes(g, l));
    if (g->wslot < 0)
        op_hook(g, GPT_HOOK_GRADS, l);
}

/* Layer l's weight gradients from what its B kept in set: the seven matmuls the fused backward
 * runs between its input-gradient ones, in the same order and on the same bits (dq and dk
 * turned back from RoPE again, by the same code). No weights are read: a ZeRO-3 GPU would not
 * gather them for W. */
static void layer_weights(struct gpt *g, int l, void *const *set)
{
    int N = g->N, d = g->c.d, dl = g->dl, f = g->fl;
    const struct layer_ptrs *G = &g->lg[l];
    float **w = g->s.w;
    bind(g, NULL);
    float *to[W_COUNT] = {w[A_XN1], w[A_ATT], w[A_XN2], w[A_H],  g->s.tmp, g->s.dxn,
                          g->s.dg,  g->s.du,  g->s.dq,  g->s.dk, g->s.dv};
    for (int k = 0; k < W_COUNT; k++)
        op_load(g, to[k], set[k], wset_elems(g, k));
    op_rope(g, l, NULL, g->s.dq, -1);
    op_rope(g, l, NULL, g->s.dk, -1);
    work_begin(g, "weight gradients", l);
    op_weight_grad(g, l, "grad w_down", G->w_down, g->s.tmp, w[A_H], d, f);
    work(g, 2.0 * N * d * f);
    if (g->sp) /* before the gather of xn2 again */
        work_sync(g);
    const float *xn2 = op_sp_gather(g, g->s.xg, w[A_XN2], "mlp norm again");
    op_weight_grad(g, l, "grad w_gate", G->w_gate, g->s.dg, xn2, f, d);
    op_weight_grad(g, l, "grad w_up", G->w_up, g->s.du, xn2, f, d);
    op_weight_grad(g, l, "grad wo", G->wo, g->s.dxn, w[A_ATT], d, dl);
    work(g, 2.0 * 2 * N * d * f + 2.0 * N * d * dl);
    if (g->sp) /* before the gather of xn1 again */
        work_sync(g);
    const float *xn1 = op_sp_gather(g, g->s.xg, w[A_XN1], "attn norm again");
    op_weight_grad(g, l, "grad wq", G->wq, g->s.dq, xn1, dl, d);
    op_weight_grad(g, l, "grad wk", G->wk, g->s.dk, xn1, dl, d);
    op_weight_grad(g, l, "grad wv", G->wv, g->s.dv, xn1, dl, d);
    work(g, 2.0 * 3 * N * d * dl);
    work_end(g);
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
            op_load(g, g->s.res, g->segin[slot * g->nseg + s], nd);
            for (int l = a; l < b; l++) {
                op_hook(g, g->seg == 1 ? GPT_HOOK_BACKWARD : GPT_HOOK_FORWARD, l);
                work_begin(g, "recompute", l);
                layer_forward(g, l, g->s.res, g->pool[l - a]);
                /* the segment's first input is its checkpoint, already charged */
                charge(g,
                       (long long)(layer_bytes(g, l) - (l == a ? act_bytes(g, A_X, SZ_DENSE) : 0)));
                work_end(g);
                if (g->seg > 1)
                    op_hook(g, GPT_HOOK_FORWARD_DONE, l);
            }
            for (int l = b - 1; l >= a; l--) {
                if (g->seg > 1)
                    op_hook(g, GPT_HOOK_BACKWARD, l);
                load_set(g, l, g->pool[l - a]);
                layer_backward_at(g, l, slot);
            }
        }
    } else
        for (int l = l1 - 1; l >= l0; l--) {
            op_hook(g, GPT_HOOK_BACKWARD, l);
            load_set(g, l, saved_set(g, slot, l));
            layer_backward_at(g, l, slot);
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
    const float *dx = op_sp_gather(g, g->s.dg_full, g->s.dres, "grad embedding"); /* every row */
    for (int r = 0; r < N; r++) {
        int t = tokens[r] - g->v0;
        if (t < 0 || t >= V)
            continue;
        float *dst = gE + (size_t)t * d;
        const float *src = dx + (size_t)r * d;
        for (int j = 0; j < d; j++)
            dst[j] += src[j];
    }
    op_produced_grad(g, gE, (size_t)V * d, g->c.layers, "grad embedding");
    if (g->wslot < 0) /* B and W apart: W says the gradients are complete */
        op_hook(g, GPT_HOOK_GRADS, GPT_UNIT_EMBED);
}

/* ------------------------------------------------------------------ the whole model */

/* The whole model's forward pass, from a new step: the loss. */
static double whole_forward(struct gpt *g, const int32_t *tokens, const int32_t *targets)
{
    step_begin(g);
    g->in_forward = true;
    embed_forward(g, tokens);
    layers_forward(g, 0);
    double loss = head_forward(g, 0, targets) + g->moe.aux; /* the experts' load-balancing loss */
    g->in_forward = false;
    return loss;
}

double gpt_forward(struct gpt *g, const int32_t *tokens, const int32_t *targets,
                   const struct gpt_inject *inj)
{
    g->inj = inj;
    double loss = whole_forward(g, tokens, targets);
    op_hook(g, GPT_HOOK_FORWARD_DONE, GPT_UNIT_HEAD);
    charge(g, -(long long)g->live); /* nothing will need them */
    g->inj = NULL;
    return loss;
}

double gpt_step(struct gpt *g, const int32_t *tokens, const int32_t *targets, float loss_scale,
                const struct gpt_inject *inj)
{
    g->inj = inj;
    g->accumulate = false;
    double loss = whole_forward(g, tokens, targets);
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
    double aux = g->moe.aux;
    g->inj = inj;
    g->in_forward = true;
    if (g->part.embed)
        embed_forward(g, tokens);
    else
        op_load(g, g->s.res, in, nd);
    layers_forward(g, slot);
    double loss = NAN;
    if (g->part.head) /* with this micro-batch's load-balancing loss in this part's layers */
        loss = head_forward(g, slot, targets) + (g->moe.aux - aux);
    else
        op_store(g, out, g->s.res, nd); /* already in the format: exact */
    g->in_forward = false;
    g->inj = NULL;
    return loss;
}

/* A part's backward pass, fused (wslot -1) or its B (model/gpt.h). */
static void part_backward(struct gpt *g, int slot, const int32_t *tokens, const int32_t *targets,
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
        op_load(g, g->s.dres, dout, nd);
    layers_backward(g, slot);
    if (g->part.embed)
        embed_backward(g, tokens);
    else
        op_store(g, din, g->s.dres, nd);
    g->accumulate = false;
    g->inj = NULL;
}

void gpt_part_backward(struct gpt *g, int slot, const int32_t *tokens, const int32_t *targets,
                       float loss_scale, const void *dout, void *din, bool accumulate,
                       const struct gpt_inject *inj)
{
    g->wslot = -1;
    part_backward(g, slot, tokens, targets, loss_scale, dout, din, accumulate, inj);
}

void gpt_part_backward_input(struct gpt *g, int slot, int wslot, const int32_t *tokens,
                             const int32_t *targets, float loss_scale, const void *dout, void *din,
                             bool accumulate, const struct gpt_inject *inj)
{
    g->wslot = wslot;
    part_backward(g, slot, tokens, targets, loss_scale, dout, din, accumulate, inj);
    g->wslot = -1;
}

void gpt_part_backward_weights(struct gpt *g, int wslot, bool accumulate)
{
    const struct gpt_part *pt = &g->part;
    g->accumulate = accumulate;
    if (pt->head) /* the ends' gradients came with B; their hooks come in the fused order */
        op_hook(g, GPT_HOOK_GRADS, GPT_UNIT_HEAD);
    for (int l = pt->first + pt->count - 1; l >= pt->first; l--) {
        layer_weights(g, l, wset_at(g, wslot, l));
        charge(g, -(long long)g->wset_bytes);
        op_hook(g, GPT_HOOK_GRADS, l);
    }
    if (pt->embed)
        op_hook(g, GPT_HOOK_GRADS, GPT_UNIT_EMBED);
    g->accumulate = false;
}
