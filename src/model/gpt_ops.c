/* The operations the tiny GPT's layers are built from (model/gpt_step.c strings them into a
 * layer and a step): the seam's calls in a step (FLOPs, hooks, tensor-parallel sums), rounding
 * a tensor where it is produced and looking at it for inf/NaN, storing and loading kept
 * tensors, the matmuls over cblas_sgemm, RMSNorm, RoPE, the residual additions, SwiGLU and
 * causal attention, forward and backward. Each computes its tensor in fp32, rounds it to the
 * training format and counts its FLOPs (model/gpt_impl.h declares them for gpt_step.c). */
#include "config.h"
#include "model/gpt.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "base/prof.h"
#include "base/race.h"
#include "model/gpt_impl.h"
#include "num/exp.h"

#define RMS_EPS 1e-5

/* ------------------------------------------------------------------ the seam, in a step */

void op_compute(const struct gpt *g, double flops, const char *what, int layer)
{
    if (g->alloc.compute)
        g->alloc.compute(g->alloc.ctx, flops, what, layer);
}

void op_hook(const struct gpt *g, enum gpt_hook h, int unit)
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
const float *op_sp_gather(const struct gpt *g, float *full, const float *mine, const char *what)
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
void op_tp_reduce_rows(const struct gpt *g, float *full, const char *what)
{
    if (!g->sp) {
        tp_sum(g, full, (size_t)g->N * g->c.d, what);
        return;
    }
    size_t block = (size_t)g->nl * g->c.d;
    g->alloc.tp_reduce(g->alloc.ctx, full, block * g->tp, GPT_TP_SCATTER, what);
    memmove(full, full + (size_t)g->tr * block, block * 4);
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

void op_rnd(const struct gpt *g, float *p, size_t n)
{
    if (g->fmt != FP_FP32) {
        RACE_WRITE(p, n * 4);
        prof_enter(PROF_ROUNDING);
        rnd_in(g, p, n);
        prof_leave();
    }
}

void op_store(const struct gpt *g, void *dst, const float *src, size_t n)
{
    prof_enter(PROF_KEEP);
    fp_pack_n(g->fmt, dst, src, n);
    prof_leave();
}

void op_load(const struct gpt *g, float *dst, const void *src, size_t n)
{
    prof_enter(PROF_KEEP);
    fp_unpack_n(g->fmt, dst, src, n);
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
    RACE_WRITE(g->nonfinite, sizeof g->nonfinite);
    RACE_WRITE(&g->nonfinite_forward, sizeof g->nonfinite_forward);
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

void op_check(struct gpt *g, const float *p, size_t n, int layer, const char *name)
{
    RACE_READ(p, n * 4);
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

void op_produced(struct gpt *g, float *p, size_t n, int layer, const char *name)
{
    if (g->fmt == FP_FP32) /* looked at only */
        RACE_READ(p, n * 4);
    else
        RACE_WRITE(p, n * 4);
    prof_enter(PROF_ROUNDING);
    produced_in(g, p, n, layer, name);
    prof_leave();
}

/* A weight gradient of layer `layer` (index L: the embedding and the norms outside the
 * layers) is produced: rounded, checked, and its elements that were nonzero in fp32 and
 * rounded to zero counted (underflow), in one pass. */
void op_produced_grad(struct gpt *g, float *p, size_t n, int layer, const char *name)
{
    int named = layer < g->c.layers ? layer : -1;
    bool look = !g->nonfinite[0];
    prof_enter(PROF_ROUNDING);
    if (g->fmt == FP_FP32) {
        RACE_READ(p, n * 4);
        if (look && any_nonfinite(p, n))
            name_nonfinite(g, named, name);
        prof_leave();
        return;
    }
    RACE_WRITE(p, n * 4);
    RACE_WRITE(&g->underflow[layer], sizeof g->underflow[layer]);
    RACE_WRITE(&g->underflow_total, sizeof g->underflow_total);
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
void op_mm_fwd(float *y, const float *x, const float *w, int n, int out, int in)
{
    prof_enter(PROF_MATMUL);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, x, in, w, in, 0.0f, y,
                out);
    prof_leave();
}

/* dx [N, in] (+)= dy [N, out] W */
void op_mm_dx(float *dx, const float *dy, const float *w, int n, int out, int in, float beta)
{
    prof_enter(PROF_MATMUL);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, out, 1.0f, dy, out, w, in, beta,
                dx, in);
    prof_leave();
}

/* dW [out, in] = dy^T [out, N] x [N, in], or += with acc (micro-batches add up) */
void op_mm_dw_acc(float *dw, const float *dy, const float *x, int n, int out, int in, bool acc)
{
    prof_enter(PROF_MATMUL);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n, 1.0f, dy, out, x, in,
                acc ? 1.0f : 0.0f, dw, in);
    prof_leave();
}

void op_linear_dx(struct gpt *g, int l, float *dx, const float *dy, const float *w, int out, int in,
                  float beta)
{
    if (!fp8_dgrad(g, l, dx, dy, w, out, in, beta))
        op_mm_dx(dx, dy, w, g->N, out, in, beta);
}

/* The calls that produce a tensor of layer l: compute it, round it to the format, check it
 * (and count a weight gradient's underflow), so the passes read as the maths. */

/* y [N, out] = x W^T, produced as `name` (NULL: rounded only, checked later) */
void op_linear(struct gpt *g, int l, const char *name, float *y, const float *x, const float *w,
               int out, int in)
{
    if (!fp8_fprop(g, l, y, x, w, out, in))
        op_mm_fwd(y, x, w, g->N, out, in);
    if (name)
        op_produced(g, y, (size_t)g->N * out, l, name);
    else
        op_rnd(g, y, (size_t)g->N * out);
}

/* dW [out, in] = dy^T x (added to the buffer's when accumulating micro-batches), produced */
void op_weight_grad(struct gpt *g, int l, const char *name, float *dw, const float *dy,
                    const float *x, int out, int in)
{
    if (!fp8_wgrad(g, l, dw, dy, x, out, in, g->accumulate))
        op_mm_dw_acc(dw, dy, x, g->N, out, in, g->accumulate);
    op_produced_grad(g, dw, (size_t)out * in, l, name);
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
void op_rmsnorm(struct gpt *g, int l, const char *name, float *y, float *rstd, const float *x,
                const float *w)
{
    size_t nd = (size_t)g->nl * g->c.d;
    RACE_READ(x, nd * 4);
    RACE_READ(w, (size_t)g->c.d * 4);
    RACE_WRITE(y, nd * 4);
    RACE_WRITE(rstd, (size_t)g->nl * 4);
    rms_fwd(y, rstd, x, w, g->nl, g->c.d); /* the residual stream's rows */
    op_produced(g, y, (size_t)g->nl * g->c.d, l, name);
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

void op_rms_bwd(struct gpt *g, float *dx, float *dw, const float *x, const float *rstd,
                const float *w, const float *dy, int n, int d)
{
    size_t nd = (size_t)n * d;
    RACE_READ(x, nd * 4);
    RACE_READ(dy, nd * 4);
    RACE_READ(rstd, (size_t)n * 4);
    RACE_READ(w, (size_t)d * 4);
    RACE_WRITE(dx, nd * 4);
    RACE_WRITE(dw, (size_t)d * 4);
    prof_enter(PROF_NORM);
    double *cs = g->s.colsum;
    RACE_WRITE(cs, (size_t)d * sizeof *cs);
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
    size_t table = (size_t)g->T * (g->hd / 2) * 4;
    RACE_READ(g->s.rope_cos, table);
    RACE_READ(g->s.rope_sin, table);
    RACE_WRITE(x, (size_t)g->N * g->dl * 4);
    prof_enter(PROF_ROPE);
    rope_x(x, g->s.rope_cos, g->s.rope_sin, g->N, g->T, g->hl, g->hd, g->dl, dir);
    prof_leave();
}

/* x rotated (dir 1) or turned back (-1), produced as `name` (NULL: rounded only) */
void op_rope(struct gpt *g, int l, const char *name, float *x, int dir)
{
    rope_n(g, x, dir);
    if (name)
        op_produced(g, x, (size_t)g->N * g->dl, l, name);
    else
        op_rnd(g, x, (size_t)g->N * g->dl);
}

static inline CPU_INLINE void sum_n_body(float *y, const float *a, const float *b, size_t m)
{
    for (size_t j = 0; j < m; j++)
        y[j] = a[j] + b[j];
}
CPU_CLONES(sum_n, (float *y, const float *a, const float *b, size_t m), (y, a, b, m))

/* y = a + b (a residual connection), produced block by block while in cache. */
void op_add(struct gpt *g, float *y, const float *a, const float *b, size_t n, int layer,
            const char *name)
{
    RACE_READ(a, n * 4);
    RACE_READ(b, n * 4);
    RACE_WRITE(y, n * 4);
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
void op_swiglu_forward(struct gpt *g, float *h, const float *a, const float *u, size_t n, int layer)
{
    RACE_READ(a, n * 4);
    RACE_READ(u, n * 4);
    RACE_WRITE(h, n * 4);
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
void op_swiglu_backward(struct gpt *g, float *da, float *du, const float *dh, const float *a,
                        const float *u, size_t n)
{
    RACE_READ(dh, n * 4);
    RACE_READ(a, n * 4);
    RACE_READ(u, n * 4);
    RACE_WRITE(da, n * 4);
    RACE_WRITE(du, n * 4);
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
 * sum_k P_k dP_k), times the 1/sqrt(hd) of S = q k^T / sqrt(hd) (see op_attn_core_backward). */
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
void op_attn_probs(struct gpt *g, int l)
{
    int T = g->c.seq, H = g->hl, hd = g->hd, d = g->dl;
    float scale = (float)(1.0 / sqrt((double)hd));
    size_t TT = (size_t)T * T;
    RACE_READ(g->s.w[A_Q], (size_t)g->B * T * d * 4);
    RACE_READ(g->s.w[A_K], (size_t)g->B * T * d * 4);
    RACE_WRITE(g->s.w[A_P], (size_t)g->B * H * TT * 4);
    prof_enter(PROF_ATTENTION);
    for (int b = 0; b < g->B; b++)
        for (int h = 0; h < H; h++) {
            const float *q = g->s.w[A_Q] + (size_t)b * T * d + (size_t)h * hd;
            const float *k = g->s.w[A_K] + (size_t)b * T * d + (size_t)h * hd;
            float *s = g->s.w[A_P] + ((size_t)b * H + h) * TT;
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
void op_attn_out(struct gpt *g, int l)
{
    int T = g->c.seq, H = g->hl, hd = g->hd, d = g->dl;
    size_t TT = (size_t)T * T;
    RACE_READ(g->s.w[A_P], (size_t)g->B * H * TT * 4);
    RACE_READ(g->s.w[A_V], (size_t)g->B * T * d * 4);
    RACE_WRITE(g->s.w[A_ATT], (size_t)g->B * T * d * 4);
    prof_enter(PROF_ATTENTION);
    for (int b = 0; b < g->B; b++)
        for (int h = 0; h < H; h++) {
            const float *p = g->s.w[A_P] + ((size_t)b * H + h) * TT;
            const float *v = g->s.w[A_V] + (size_t)b * T * d + (size_t)h * hd;
            float *o = g->s.w[A_ATT] + (size_t)b * T * d + (size_t)h * hd;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hd, T, 1.0f, p, T, v, d, 0.0f,
                        o, d);
        }
    prof_leave();
    op_produced(g, g->s.w[A_ATT], (size_t)g->N * d, l, "attn out");
}

/* The attention core's backward, per (batch, head), from datt to dq, dk, dv (rounded), with
 * the probabilities, q, k and v of layer l in the workspace. */
void op_attn_core_backward(struct gpt *g, int l)
{
    int d = g->dl, T = g->c.seq, H = g->hl, hd = g->hd;
    size_t TT = (size_t)T * T;
    float **w = g->s.w;
    float scale = (float)(1.0 / sqrt((double)hd));
    size_t btd = (size_t)g->B * T * d * 4;
    RACE_READ(w[A_P], (size_t)g->B * H * TT * 4);
    RACE_READ(w[A_Q], btd);
    RACE_READ(w[A_K], btd);
    RACE_READ(w[A_V], btd);
    RACE_READ(g->s.datt, btd);
    RACE_WRITE(g->s.dscores, TT * 4);
    RACE_WRITE(g->s.dv, btd);
    RACE_WRITE(g->s.dq, btd);
    RACE_WRITE(g->s.dk, btd);
    prof_enter(PROF_ATTENTION);
    for (int b = 0; b < g->B; b++)
        for (int h = 0; h < H; h++) {
            size_t off = (size_t)b * T * d + (size_t)h * hd;
            const float *p = w[A_P] + ((size_t)b * H + h) * TT;
            const float *dO = g->s.datt + off;
            float *dp = g->s.dscores;
            /* O = P V: dP = dO V^T, dV = P^T dO */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hd, 1.0f, dO, d,
                        w[A_V] + off, d, 0.0f, dp, T);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hd, T, 1.0f, p, T, dO, d, 0.0f,
                        g->s.dv + off, d);
            rnd_in(g, dp, TT);
            /* P = softmax(S) row by row: dS_j = P_j (dP_j - sum_k P_k dP_k), since
             * dP_i/dS_j = P_i (delta_ij - P_j); times the 1/sqrt(hd) of S = q k^T / sqrt(hd).
             * Masked entries (j > i) have P = 0 and get no gradient. */
            softmax_bwd(p, dp, T, scale);
            produced_in(g, dp, TT, l, "grad attn scores");
            /* S = Q K^T (scaled above): dQ = dS K, dK = dS^T Q */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hd, T, 1.0f, dp, T,
                        w[A_K] + off, d, 0.0f, g->s.dq + off, d);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hd, T, 1.0f, dp, T,
                        w[A_Q] + off, d, 0.0f, g->s.dk + off, d);
        }
    prof_leave();
    op_attn_grads_done(g, l);
}

void op_attn_grads_done(struct gpt *g, int l)
{
    size_t nd = (size_t)g->N * g->dl;
    op_rnd(g, g->s.dq, nd);
    op_rnd(g, g->s.dk, nd);
    op_rnd(g, g->s.dv, nd);
    if (g->wkeep) { /* W turns dq and dk back again: the same bits */
        op_store(g, g->wkeep[W_DQ], g->s.dq, nd);
        op_store(g, g->wkeep[W_DK], g->s.dk, nd);
        op_store(g, g->wkeep[W_DV], g->s.dv, nd);
    }
    /* q and k were rotated after their projections: dq, dk turned back (see op_rope) */
    op_rope(g, l, NULL, g->s.dq, -1);
    op_rope(g, l, NULL, g->s.dk, -1);
}
