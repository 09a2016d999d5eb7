/* Activation memory of a transformer layer, tensor by tensor, and of a stage under each
 * checkpoint policy (calc/activ.h). */
#include "config.h"
#include "calc/activ.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ckpt.h"
#include "base/error.h"
#include "base/experts.h"
#include "base/units.h"
#include "calc/params.h"

const char *activ_attention_name(enum activ_attention a)
{
    return a == ACTIV_EAGER ? "eager" : "flash";
}

int activ_parse_attention(const char *s, enum activ_attention *out, struct error *e)
{
    if (s && strcmp(s, "flash") == 0)
        *out = ACTIV_FLASH;
    else if (s && strcmp(s, "eager") == 0)
        *out = ACTIV_EAGER;
    else
        return error_set(e, ERR_INVAL,
                         "'%s' is not an attention kernel: flash (no probabilities kept) or "
                         "eager (the a s^2 b probabilities kept)",
                         s ? s : "");
    return 0;
}

int activ_check(const struct model_shape *m, const struct activ_config *c, struct error *e)
{
    if (c->micro_batch < 1 || c->seq < 1 || c->tp < 1)
        return error_set(e, ERR_INVAL, "micro-batch, seq and tp must be at least 1");
    if (c->bytes != 2 && c->bytes != 4)
        return error_set(e, ERR_INVAL, "activations are 2 or 4 bytes per element");
    if (m->heads % c->tp)
        return error_set(e, ERR_INVAL, "tp %d does not divide the %d attention heads of %s", c->tp,
                         m->heads, m->name);
    if (m->kv_heads % c->tp)
        return error_set(e, ERR_INVAL, "tp %d does not divide the %d key/value heads of %s", c->tp,
                         m->kv_heads, m->name);
    if (m->ffn % c->tp)
        return error_set(e, ERR_INVAL, "tp %d does not divide the feed-forward width %d of %s",
                         c->tp, m->ffn, m->name);
    int cp = c->cp > 1 ? c->cp : 1, chunks = c->cp_naive ? cp : 2 * cp;
    if (c->cp < 0)
        return error_set(e, ERR_INVAL, "cp %d: at least 1", c->cp);
    if (cp > 1 && c->attention == ACTIV_EAGER)
        return error_set(e, ERR_INVAL,
                         "cp %d with eager attention: ring attention is a flash-style kernel, "
                         "it never holds the probabilities (attention flash)",
                         cp);
    if (cp > 1 && c->seq % chunks)
        return error_set(e, ERR_INVAL,
                         "cp %d cuts the sequence of %d tokens in %d chunks: it must divide it", cp,
                         c->seq, chunks);
    if (c->sp && (c->seq / cp) % c->tp)
        return error_set(e, ERR_INVAL,
                         "sequence parallelism splits the sequence: tp %d must divide seq %d%s",
                         c->tp, c->seq / cp, cp > 1 ? " / cp" : "");
    if (m->ffn_kind == FFN_GELU && c->seq > m->seq)
        return error_set(e, ERR_INVAL,
                         "seq %d is longer than the %d learned positions of %s (at most %d)",
                         c->seq, m->seq, m->name, m->seq);
    return 0;
}

/* ------------------------------------------------------------------ the lists */

/* One tensor as multiples of the paper's units, before tensor parallelism:
 * sbh x c_sbh + a s^2 b x c_as2b + sb x c_sb + sbv x c_sbv elements. */
struct spec {
    const char *name, *shape;
    double c_sbh, c_as2b, c_sb, c_sbv;
    int bytes; /* 0: p */
    bool split, core;
};

struct acc {
    struct activ_list *out;
    const struct activ_config *c;
    double s, b, h, a, v;
    /* coefficients in bytes, for the formula: R replicated sbh, S split sbh, C as^2b, B sb
     * (replicated), Bt sb divided by t (split: lse's heads, or every sb term with sp) */
    double R, S, C, B, Bt;
};

static void put(struct acc *x, const struct spec *sp)
{
    const struct activ_config *c = x->c;
    if (c->attention == ACTIV_FLASH && sp->c_as2b) /* flash keeps no s x s probabilities */
        return;
    int bytes = sp->bytes ? sp->bytes : c->bytes;
    double el = sp->c_sbh * x->s * x->b * x->h + sp->c_as2b * x->a * x->s * x->s * x->b +
                sp->c_sb * x->s * x->b + sp->c_sbv * x->s * x->b * x->v;
    bool divided = sp->split || c->sp;
    if (divided)
        el /= c->tp;
    struct activ_list *o = x->out;
    struct activ_tensor *t = &o->t[o->n++];
    *t = (struct activ_tensor){sp->name, sp->shape, el, bytes, el * bytes, sp->core};
    o->total += t->bytes;
    if (sp->core)
        o->core += t->bytes;
    if (sp->c_sbh && !sp->split)
        x->R += sp->c_sbh * bytes;
    if (sp->c_sbh && sp->split)
        x->S += sp->c_sbh * bytes;
    x->C += sp->c_as2b * bytes;
    if (divided)
        x->Bt += sp->c_sb * bytes;
    else
        x->B += sp->c_sb * bytes;
}

static void acc_init(struct acc *x, struct activ_list *out, const struct model_shape *m,
                     const struct activ_config *c)
{
    memset(out, 0, sizeof *out);
    /* with context parallelism a GPU holds s / cp of each sequence's tokens */
    double s = (double)c->seq / (c->cp > 1 ? c->cp : 1);
    *x = (struct acc){out, c, s, c->micro_batch, m->d_model, m->heads, m->vocab, 0, 0, 0, 0, 0};
}

/* "34", "34.375", "10 + 24/t": numbers as short as they are exact. */
static void num(char *buf, size_t n, double v)
{
    snprintf(buf, n, "%.6g", v);
}

static void formula(struct acc *x, const struct activ_config *c)
{
    char r[32], s[32], cc[32], b[32], bt[32], all[32];
    num(r, sizeof r, x->R);
    num(s, sizeof s, x->S);
    num(cc, sizeof cc, x->C);
    num(b, sizeof b, c->tp > 1 ? x->B : x->B + x->Bt);
    num(bt, sizeof bt, x->Bt);
    num(all, sizeof all, x->R + x->S);
    char sb[80] = "";
    if (c->tp > 1 ? x->B != 0 : x->B + x->Bt != 0)
        snprintf(sb, sizeof sb, " + %ssb", b);
    if (c->tp > 1 && x->Bt) /* the terms divided by t: lse's heads, all of them with sp */
        snprintf(sb + strlen(sb), sizeof sb - strlen(sb), " + %ssb/t", bt);
    char *f = x->out->formula;
    size_t n = sizeof x->out->formula;
    bool flash = c->attention == ACTIV_FLASH;
    if (flash && (c->tp == 1 || c->sp)) /* no s x s terms: no as/h coefficient */
        snprintf(f, n, c->tp == 1 ? "sbh(%s)%s" : "sbh/t (%s)%s", all, sb);
    else if (flash)
        snprintf(f, n, "sbh(%s + %s/t)%s", r, s, sb);
    else if (c->tp == 1)
        snprintf(f, n, "sbh(%s + %sas/h)%s", all, cc, sb);
    else if (c->sp)
        snprintf(f, n, "sbh/t (%s + %sas/h)%s", all, cc, sb);
    else
        snprintf(f, n, "sbh(%s + %s/t + %sas/(ht))%s", r, s, cc, sb);
    if (c->cp > 1) /* with flash the s x s terms are gone (C is 0), lse's 4a sb is in Bt */
        snprintf(f + strlen(f), n - strlen(f), ", s = seq/%d (context parallel)", c->cp);
}

/* Flash attention (ring attention too) keeps each query row's log-sum-exp, fp32, a per head
 * and token (FlashAttention's softmax statistics; model/ringattn.h), instead of the attention
 * core's s x s tensors: the core selective recompute drops. */
static void put_lse(struct acc *x, const struct model_shape *m)
{
    if (x->c->attention == ACTIV_FLASH)
        put(x, &(struct spec){"lse", "asb", 0, 0, m->heads, 0, 4, true, true});
}

void activ_layer(const struct model_shape *m, const struct activ_config *c, struct activ_list *out)
{
    struct acc x;
    acc_init(&x, out, m, c);
    double kv = (double)m->kv_heads / m->heads, f = (double)m->ffn / m->d_model;
    if (m->ffn_kind == FFN_GELU) {
        const struct spec list[] = {
            {"attn_norm_in", "sbh", 1, 0, 0, 0, 0, false, false},
            {"qkv_in", "sbh", 1, 0, 0, 0, 0, false, false},
            {"q", "sbh", 1, 0, 0, 0, 0, true, false},
            {"k", "sb kv", kv, 0, 0, 0, 0, true, false},
            {"v", "sb kv", kv, 0, 0, 0, 0, true, false},
            {"softmax_out", "as^2b", 0, 1, 0, 0, 0, true, true},
            {"softmax_mask", "as^2b", 0, 1, 0, 0, 1, true, true},
            {"softmax_drop", "as^2b", 0, 1, 0, 0, 0, true, true},
            {"proj_in", "sbh", 1, 0, 0, 0, 0, true, false},
            {"attn_mask", "sbh", 1, 0, 0, 0, 1, false, false},
            {"mlp_norm_in", "sbh", 1, 0, 0, 0, 0, false, false},
            {"fc1_in", "sbh", 1, 0, 0, 0, 0, false, false},
            {"gelu_in", "sbf", f, 0, 0, 0, 0, true, false},
            {"fc2_in", "sbf", f, 0, 0, 0, 0, true, false},
            {"mlp_mask", "sbh", 1, 0, 0, 0, 1, false, false},
        };
        for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
            put(&x, &list[i]);
        put_lse(&x, m);
    } else {
        const struct spec list[] = {
            {"x", "sbh", 1, 0, 0, 0, 0, false, false},
            {"attn_rstd", "sb", 0, 0, 1, 0, 4, false, false},
            {"xn1", "sbh", 1, 0, 0, 0, 0, false, false},
            {"q", "sbh", 1, 0, 0, 0, 0, true, false},
            {"k", "sb kv", kv, 0, 0, 0, 0, true, false},
            {"v", "sb kv", kv, 0, 0, 0, 0, true, false},
            {"att", "as^2b", 0, 1, 0, 0, 0, true, true},
            {"attn_out", "sbh", 1, 0, 0, 0, 0, true, false},
            {"x1", "sbh", 1, 0, 0, 0, 0, false, false},
            {"mlp_rstd", "sb", 0, 0, 1, 0, 4, false, false},
            {"xn2", "sbh", 1, 0, 0, 0, 0, false, false},
            {"gate", "sbf", f, 0, 0, 0, 0, true, false},
            {"up", "sbf", f, 0, 0, 0, 0, true, false},
            {"act", "sbf", f, 0, 0, 0, 0, true, false},
        };
        for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
            put(&x, &list[i]);
        put_lse(&x, m);
    }
    out->input = out->t[0].bytes; /* the first tensor is the layer input */
    formula(&x, c);
}

/* A tensor of a given number of elements (the experts' rows fit none of the paper's units). */
static void put_raw(struct acc *x, const char *name, const char *shape, double el, int bytes)
{
    struct activ_list *o = x->out;
    o->t[o->n++] = (struct activ_tensor){name, shape, el, bytes, el * bytes, false};
    o->total += el * bytes;
}

/* The rows a layer's experts hold by default (struct activ_config's ep_rows aside). */
static double moe_rows(const struct model_shape *m, const struct activ_config *c)
{
    double sb = (double)c->seq * c->micro_batch;
    if (c->ep > 1 && !(m->capacity_factor > 0) && c->ep_uniform)
        return m->top_k * sb;
    return experts_rows_held(sb, m->experts, m->top_k, m->capacity_factor, c->ep);
}

static void moe_layer_at(const struct model_shape *m, const struct activ_config *c, double rows,
                         struct activ_list *out)
{
    activ_layer(m, c, out);
    out->n -= 3; /* gate, up, act: the experts' own, on their rows */
    for (int i = 0; i < 3; i++)
        out->total -= out->t[out->n + i].bytes;
    struct acc x = {.out = out};
    double sb = (double)c->seq * c->micro_batch, E = m->experts, k = m->top_k;
    bool dropless = c->ep > 1 && !(m->capacity_factor > 0);
    double h = m->d_model, f = m->ffn;
    put_raw(&x, "router_probs", "sbE", sb * E, 4);
    if (dropless) /* the counts received beside the routing */
        put_raw(&x, "routing", "3sbk + 4E", 3 * sb * k + 4 * E, 4);
    else
        put_raw(&x, "routing", "3sbk + 3E", 3 * sb * k + 3 * E, 4);
    put_raw(&x, "expert_in", "Rh", rows * h, c->bytes);
    put_raw(&x, "gate", "Rf", rows * f, c->bytes);
    put_raw(&x, "up", "Rf", rows * f, c->bytes);
    put_raw(&x, "act", "Rf", rows * f, c->bytes);
    put_raw(&x, "expert_out", "Rh", rows * h, c->bytes);
    size_t len = strlen(out->formula);
    snprintf(out->formula + len, sizeof out->formula - len,
             " - %gsbf + 4sbE + 12sbk + %dE + %gR(2h + 3f), R = %g rows", 3.0 * c->bytes,
             dropless ? 16 : 12, (double)c->bytes, rows);
}

void activ_moe_layer(const struct model_shape *m, const struct activ_config *c,
                     struct activ_list *out)
{
    moe_layer_at(m, c, moe_rows(m, c), out);
}

/* Bytes of the lists of layers l0 + a .. l0 + b - 1 (layer: a dense one's, moe: one with
 * experts at the default rows); dropless with a step's rows, each expert layer at its own. */
static double layers_sum(const struct model_shape *m, const struct activ_config *c, int l0, int a,
                         int b, const struct activ_list *layer, const struct activ_list *moe)
{
    int nm = params_moe_layers(m, l0 + a, b - a);
    if (!(c->ep_rows && c->ep > 1 && !(m->capacity_factor > 0)) || !nm)
        return (b - a) * layer->total + nm * (moe->total - layer->total);
    double sum = (b - a - nm) * layer->total;
    for (int l = l0 + a; l < l0 + b; l++)
        if (params_moe_layers(m, l, 1)) {
            struct activ_list x;
            moe_layer_at(m, c, c->ep_rows[params_moe_layers(m, 0, l)], &x);
            sum += x.total;
        }
    return sum;
}

void activ_ends(const struct model_shape *m, const struct activ_config *c, bool first, bool last,
                struct activ_list *out)
{
    struct acc x;
    acc_init(&x, out, m, c);
    bool gelu = m->ffn_kind == FFN_GELU;
    if (first && gelu)
        put(&x, &(struct spec){"emb_mask", "sbh", 1, 0, 0, 0, 1, false, false});
    if (last) {
        put(&x, &(struct spec){"final_in", "sbh", 1, 0, 0, 0, 0, false, false});
        if (!gelu)
            put(&x, &(struct spec){"final_rstd", "sb", 0, 0, 1, 0, 4, false, false});
        put(&x, &(struct spec){"head_in", "sbh", 1, 0, 0, 0, 0, false, false});
        put(&x, &(struct spec){"probs", "sbv", 0, 0, 0, 1, 4, true, false});
    }
    snprintf(out->formula, sizeof out->formula, "%s", "");
}

void activ_total(const struct model_shape *m, const struct activ_config *c,
                 const struct ckpt_policy *pol, int n, bool first, bool last,
                 struct activ_total *out)
{
    activ_total_at(m, c, pol, 0, n, first, last, out);
}

void activ_total_at(const struct model_shape *m, const struct activ_config *c,
                    const struct ckpt_policy *pol, int l0, int n, bool first, bool last,
                    struct activ_total *out)
{
    struct activ_list layer, moe, ends;
    activ_layer(m, c, &layer);
    moe = layer;
    if (m->experts > 0)
        activ_moe_layer(m, c, &moe);
    activ_ends(m, c, first, last, &ends);
    /* Ls: the sum of the lists of layers l0 + a .. l0 + b - 1 */
#define LS(a, b) layers_sum(m, c, l0, (a), (b), &layer, &moe)
    double X = layer.input, H = ends.total, core = layer.core;
    double L = m->experts > 0 && params_moe_layers(m, l0, n) > 0 ? fmax(layer.total, moe.total)
                                                                 : layer.total;
    memset(out, 0, sizeof *out);
    switch (pol->kind) {
    case CKPT_NONE:
        out->per_layer = L;
        out->saved = out->peak = LS(0, n) + H;
        break;
    case CKPT_SELECTIVE:
        out->per_layer = L - core;
        out->saved = LS(0, n) - n * core + H;
        out->peak = fmax(out->saved, n > 0 ? LS(0, n) - n * core + core : 0);
        break;
    default: {
        int k = ckpt_every(pol, n);
        int segments = n > 0 ? (n + k - 1) / k : 0;
        out->every = k;
        out->checkpoints = segments;
        out->per_layer = X;
        out->saved = segments * X + H;
        out->peak = out->saved;
        for (int j = 0; j < segments; j++) {
            int len = j < segments - 1 ? k : n - j * k;
            out->peak = fmax(out->peak, j * X + LS(j * k, j * k + len));
        }
        break;
    }
    }
#undef LS
}

double activ_recompute_flops(const struct model_shape *m, const struct activ_config *c,
                             const struct ckpt_policy *pol, int n, double layer_forward_flops)
{
    switch (pol->kind) {
    case CKPT_NONE: return 0;
    case CKPT_SELECTIVE: {
        /* Eager: the scores QK^T again (2 b s^2 h FLOPs, split over t) and their softmax,
         * which is no matmul. The output of P x V is kept (it is wo's input), so backward needs
         * only P back. Flash: the kernel's forward again, QK^T and P x V (Megatron's selective
         * recompute checkpoints core attention as a whole), for lse; with cp a GPU's s / cp
         * queries meet all s keys. Full blocks, as the layer's forward FLOPs count them. */
        double sq = (double)c->seq / (c->cp > 1 ? c->cp : 1);
        double qk = 2.0 * c->micro_batch * sq * c->seq * m->d_model / c->tp;
        return n * (c->attention == ACTIV_FLASH ? 2 * qk : qk);
    }
    default: return n * layer_forward_flops;
    }
}

double activ_wgrad_bytes(const struct model_shape *m, const struct activ_config *c)
{
    double sb = (double)c->micro_batch * c->seq / (c->cp > 1 ? c->cp : 1), h = m->d_model;
    double t = c->tp > 1 ? c->tp : 1, kv = (double)m->kv_heads / m->heads * h;
    double norms = c->sp && t > 1 ? sb / t : sb, f = m->ffn_kind == FFN_SWIGLU ? 3 : 2;
    return c->bytes *
           (2 * norms * h + 2 * sb * h + sb * (2 * h + 2 * kv) / t + f * sb * m->ffn / t);
}

double activ_split_peak(const struct model_shape *m, const struct activ_config *c,
                        const struct ckpt_policy *pol, int n, double saved)
{
    struct activ_list layer;
    activ_layer(m, c, &layer);
    double W = activ_wgrad_bytes(m, c), L = layer.total, X = layer.input, peak = saved;
    if (pol->kind == CKPT_NONE || pol->kind == CKPT_SELECTIVE) {
        double r = pol->kind == CKPT_SELECTIVE ? layer.core : 0, S = L - r;
        for (int l = n - 1; l >= 0; l--)
            peak = fmax(peak, (l + 1) * S + r + (n - l) * W);
        return peak;
    }
    int k = ckpt_every(pol, n), segs = n > 0 ? (n + k - 1) / k : 0;
    for (int j = segs - 1; j >= 0; j--)
        for (int a = j * k, l = j < segs - 1 ? a + k - 1 : n - 1; l >= a; l--)
            peak = fmax(peak, j * X + (l - a + 1) * L + (n - l) * W);
    return peak;
}
