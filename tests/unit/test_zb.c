/* Unit tests of the backward pass in two (model/gpt.h's gpt_part_backward_input and
 * gpt_part_backward_weights, what zero-bubble pipelines run): B then W gives the fused pass's
 * gradients and input gradients bit for bit, for the whole model and for pipeline parts, every
 * checkpoint policy, fp32 and bf16, W right after B or after every B; what B keeps for W is
 * charged as activations and the calculator's count of it (calc/activ.h); and ZB-H1's schedule
 * (calc/sched.h) against the paper: its bubble, its memory, its order. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "base/ckpt.h"
#include "base/error.h"
#include "base/rng.h"
#include "calc/activ.h"
#include "calc/preset.h"
#include "calc/sched.h"
#include "harness.h"
#include "model/gpt.h"
#include "num/fp.h"
#include "par/settings.h"
#include "ui/gantt.h"

/* A shape with every kind of tensor and uneven widths: d 32, 4 heads, F 48 (not 4d); the
 * calculator reads it as it is, the model as train_shape_of makes it (par/settings.h). */
static const struct model_shape zb_model = {.vocab = 64,
                                            .d_model = 32,
                                            .layers = 4,
                                            .heads = 4,
                                            .kv_heads = 4,
                                            .ffn = 48,
                                            .seq = 16,
                                            .ffn_kind = FFN_SWIGLU,
                                            .tied = true};

/* zb_model as the tiny GPT's configuration. */
static const struct gpt_config *zb_config(void)
{
    static struct gpt_config c;
    if (!c.layers)
        ck_assert_int_eq(train_shape_of(&zb_model, &c, NULL), 0);
    return &c;
}

/* A seam that counts the charged activation bytes alive, and the charge and compute calls. */
struct live {
    long long now, peak;
    long charges, computes;
};

static void live_charge(void *ctx, enum gpt_mem kind, long long delta)
{
    struct live *l = ctx;
    l->charges++;
    if (kind != GPT_MEM_ACTIVATIONS)
        return;
    l->now += delta;
    l->peak = l->now > l->peak ? l->now : l->peak;
}

static void live_compute(void *ctx, double flops, const char *what, int layer)
{
    (void)flops, (void)what, (void)layer;
    ((struct live *)ctx)->computes++;
}

/* One pipeline of parts (first..last layers of each), fused or split. */
struct pipe {
    int nparts, M;
    struct gpt *g[2];
    struct gpt_part part[2];
    struct live live[2];
    struct ckpt_policy pol;
};

static void pipe_new(struct pipe *p, const struct gpt_part *parts, int nparts, int M, bool split,
                     enum fp_format fmt, const struct ckpt_policy *pol, int mb, const float *whole)
{
    memset(p, 0, sizeof *p);
    p->nparts = nparts, p->M = M, p->pol = *pol;
    for (int i = 0; i < nparts; i++) {
        p->part[i] = parts[i];
        p->part[i].slots = M;
        p->part[i].wslots = split ? M : 0;
        struct gpt_alloc seam = {
            .charge = live_charge, .compute = live_compute, .ctx = &p->live[i]};
        ck_assert_int_eq(
            gpt_new_part(&p->g[i], zb_config(), mb, fmt, pol, &seam, &p->part[i], NULL), 0);
        float *mine = malloc(gpt_nparams(p->g[i]) * sizeof *mine);
        ck_assert_ptr_nonnull(mine);
        gpt_part_gather(zb_config(), &p->part[i], whole, mine);
        gpt_set_weights(p->g[i], mine);
        free(mine);
        gpt_set_loss_tokens(p->g[i], (double)M * mb * zb_config()->seq);
    }
}

static void pipe_free(struct pipe *p)
{
    for (int i = 0; i < p->nparts; i++)
        gpt_free(p->g[i]);
}

/* Every forward (GPipe), then the backward passes: fused in order, or B in order with W right
 * after each (w_late false) or after every B (w_late). Writes each part's input gradients,
 * micro-batch m's at din[part] + m x rows (the first part's: none). */
static void pipe_step(struct pipe *p, bool split, bool w_late, const int32_t *tok,
                      const int32_t *tgt, size_t mt, size_t rows, float *act, float *din)
{
    int P = p->nparts, M = p->M;
    for (int i = 0; i < P; i++)
        gpt_part_begin(p->g[i]);
    for (int m = 0; m < M; m++)
        for (int i = 0; i < P; i++) {
            float *in = i > 0 ? act + ((size_t)(i - 1) * M + m) * rows : NULL;
            float *out = i < P - 1 ? act + ((size_t)i * M + m) * rows : NULL;
            gpt_part_forward(p->g[i], m, tok + m * mt, in, out, tgt + m * mt, NULL);
        }
    for (int m = 0; m < M; m++)
        for (int i = P - 1; i >= 0; i--) {
            const float *dout = i < P - 1 ? din + ((size_t)(i + 1) * M + m) * rows : NULL;
            float *dx = i > 0 ? din + ((size_t)i * M + m) * rows : NULL;
            if (!split) {
                gpt_part_backward(p->g[i], m, tok + m * mt, tgt + m * mt, 1.0f, dout, dx, m > 0,
                                  NULL);
                continue;
            }
            gpt_part_backward_input(p->g[i], m, m, tok + m * mt, tgt + m * mt, 1.0f, dout, dx,
                                    m > 0, NULL);
            if (!w_late)
                gpt_part_backward_weights(p->g[i], m, m > 0);
        }
    for (int m = 0; w_late && m < M; m++) {
        for (int i = 0; i < P; i++) /* every B done: what they keep for W is charged */
            ck_assert_int_eq(p->live[i].now, (long long)(M - m) * p->part[i].count *
                                                 (long long)gpt_act_sizes(p->g[i]).wgrads);
        for (int i = P - 1; i >= 0; i--)
            gpt_part_backward_weights(p->g[i], m, m > 0);
    }
    for (int i = 0; i < P; i++) { /* and the seam saw the calls the shape says */
        ck_assert_int_eq(p->live[i].now, 0);
        struct gpt_calls want = gpt_step_calls(zb_config(), &p->pol, &p->part[i]);
        ck_assert_int_eq(p->live[i].charges, M * want.charge);
        ck_assert_int_eq(p->live[i].computes, M * want.compute);
    }
}

START_TEST(split_backward_is_bit_identical)
{
    const char *pols[] = {"none", "full", "every:2", "selective"};
    const enum fp_format fmts[] = {FP_FP32, FP_BF16};
    /* the whole model; two stages */
    const struct gpt_part whole[1] = {{.count = 4, .embed = true, .head = true, .tp = 1}};
    const struct gpt_part two[2] = {{.first = 0, .count = 2, .embed = true, .tp = 1},
                                    {.first = 2, .count = 2, .head = true, .tp = 1}};
    int mb = 2, M = 3, T = zb_config()->seq, d = zb_config()->d;
    size_t mt = (size_t)mb * T, rows = mt * (size_t)d, n = gpt_param_count(zb_config());
    float *params = malloc(n * sizeof *params);
    int32_t *tok = malloc((size_t)M * mt * 4), *tgt = malloc((size_t)M * mt * 4);
    float *act[2], *din[2];
    for (int k = 0; k < 2; k++) {
        act[k] = calloc(2 * (size_t)M * rows, sizeof(float));
        din[k] = calloc(2 * (size_t)M * rows, sizeof(float));
        ck_assert(act[k] && din[k]);
    }
    ck_assert(params && tok && tgt);
    gpt_init_params(zb_config(), 11, params);
    struct rng r;
    rng_seed(&r, 12, 0);
    for (size_t i = 0; i < (size_t)M * mt; i++)
        tok[i] = (int32_t)rng_below(&r, 64), tgt[i] = (int32_t)rng_below(&r, 64);
    int cases = 0;
    for (size_t k = 0; k < sizeof pols / sizeof *pols; k++)
        for (size_t f = 0; f < 2; f++)
            for (int layout = 0; layout < 2; layout++)
                for (int late = 0; late < 2; late++) {
                    struct ckpt_policy pol;
                    ck_assert_int_eq(ckpt_parse(pols[k], &pol, NULL), 0);
                    const struct gpt_part *parts = layout ? two : whole;
                    int P = layout ? 2 : 1;
                    struct pipe fused, split;
                    pipe_new(&fused, parts, P, M, false, fmts[f], &pol, mb, params);
                    pipe_new(&split, parts, P, M, true, fmts[f], &pol, mb, params);
                    for (int x = 0; x < 2; x++)
                        memset(din[x], 0, 2 * (size_t)M * rows * sizeof(float));
                    pipe_step(&fused, false, false, tok, tgt, mt, rows, act[0], din[0]);
                    pipe_step(&split, true, late, tok, tgt, mt, rows, act[1], din[1]);
                    for (int i = 0; i < P; i++) {
                        size_t np = gpt_nparams(fused.g[i]);
                        ck_assert_msg(!memcmp(gpt_grads(fused.g[i]), gpt_grads(split.g[i]),
                                              np * sizeof(float)),
                                      "%s %s, %d parts, W %s: part %d's gradients differ", pols[k],
                                      fp_info(fmts[f])->name, P,
                                      late ? "after every B" : "after its B", i);
                        /* B's weight slots are the only difference in the arena */
                        ck_assert_uint_eq(gpt_mem_bytes(split.g[i], GPT_MEM_ARENA),
                                          gpt_mem_bytes(fused.g[i], GPT_MEM_ARENA) +
                                              (size_t)M * split.part[i].count *
                                                  gpt_act_sizes(split.g[i]).wgrads);
                    }
                    ck_assert_msg(!memcmp(din[0], din[1], 2 * (size_t)M * rows * sizeof(float)),
                                  "%s %s: the input gradients sent back differ", pols[k],
                                  fp_info(fmts[f])->name);
                    pipe_free(&fused);
                    pipe_free(&split);
                    cases++;
                }
    ck_assert_int_eq(cases, 32);
    for (int k = 0; k < 2; k++)
        free(act[k]), free(din[k]);
    free(params);
    free(tok);
    free(tgt);
}
END_TEST

/* What a layer's B keeps for W, as the model allocates it and as the calculator counts it:
 * the seven matmuls' inputs and their outputs' gradients, 2 sbh + 2 sbh + (2h + 2kv)/t sb +
 * 3 sbf/t elements of p bytes (the norms' outputs a t-th with sequence parallelism). */
START_TEST(kept_for_w_is_the_calculators)
{
    const enum fp_format fmts[] = {FP_FP32, FP_BF16};
    for (size_t f = 0; f < 2; f++)
        for (int mb = 1; mb <= 3; mb++) {
            struct gpt_part part = {
                .count = 4, .embed = true, .head = true, .slots = 1, .tp = 1, .wslots = 1};
            struct gpt *g = NULL;
            ck_assert_int_eq(gpt_new_part(&g, zb_config(), mb, fmts[f], NULL, NULL, &part, NULL),
                             0);
            struct activ_config ac = {
                .micro_batch = mb, .seq = 16, .tp = 1, .bytes = fmts[f] == FP_FP32 ? 4 : 2};
            double want = activ_wgrad_bytes(&zb_model, &ac);
            double s = 16.0 * mb, p = ac.bytes;
            ck_assert_double_eq(want, p * s * (4 * 32 + 4 * 32 + 3 * 48));
            ck_assert_uint_eq(gpt_act_sizes(g).wgrads, (size_t)want);
            gpt_free(g);
        }
}
END_TEST

/* One micro-batch's F, B and W through each part peak where the calculator says (calc/activ.h's
 * activ_split_peak over the policy's saved bytes): each layer's W tensors booked as its B
 * begins, its list freed after. */
START_TEST(split_peak_is_the_calculators)
{
    const char *pols[] = {"none", "full", "every:2", "selective", "sqrt"};
    const struct gpt_part two[2] = {{.first = 0, .count = 2, .embed = true, .tp = 1},
                                    {.first = 2, .count = 2, .head = true, .tp = 1}};
    const struct gpt_part whole[1] = {{.count = 4, .embed = true, .head = true, .tp = 1}};
    int mb = 2, T = zb_config()->seq;
    size_t mt = (size_t)mb * T, rows = mt * (size_t)zb_config()->d,
           n = gpt_param_count(zb_config());
    float *params = malloc(n * sizeof *params), *act = calloc(2 * rows, 4),
          *din = calloc(2 * rows, 4);
    int32_t *tok = malloc(mt * 4), *tgt = malloc(mt * 4);
    ck_assert(params && act && din && tok && tgt);
    gpt_init_params(zb_config(), 11, params);
    for (size_t i = 0; i < mt; i++)
        tok[i] = (int32_t)(i * 7 % 64), tgt[i] = (int32_t)(i * 5 % 64);
    for (size_t k = 0; k < sizeof pols / sizeof *pols; k++)
        for (int f = 0; f < 2; f++)
            for (int layout = 0; layout < 2; layout++) {
                struct ckpt_policy pol;
                ck_assert_int_eq(ckpt_parse(pols[k], &pol, NULL), 0);
                const struct gpt_part *parts = layout ? two : whole;
                int P = layout ? 2 : 1;
                enum fp_format fmt = f ? FP_BF16 : FP_FP32;
                struct pipe split;
                pipe_new(&split, parts, P, 1, true, fmt, &pol, mb, params);
                pipe_step(&split, true, false, tok, tgt, mt, rows, act, din);
                struct activ_config ac = {.micro_batch = mb,
                                          .seq = T,
                                          .tp = 1,
                                          .bytes = f ? 2 : 4,
                                          .attention = ACTIV_EAGER};
                for (int i = 0; i < P; i++) {
                    const struct gpt_part *pt = &split.part[i];
                    struct activ_total at;
                    activ_total_at(&zb_model, &ac, &pol, pt->first, pt->count, pt->embed, pt->head,
                                   &at);
                    double want = activ_split_peak(&zb_model, &ac, &pol, pt->count, at.saved);
                    ck_assert_msg(split.live[i].peak == (long long)want,
                                  "%s %s, part %d of %d: peak %lld, calculator %.0f", pols[k],
                                  fp_info(fmt)->name, i, P, split.live[i].peak, want);
                }
                pipe_free(&split);
            }
    free(params), free(act), free(din), free(tok), free(tgt);
}
END_TEST

/* A part that splits its backward cannot hold experts: refused, not run wrong. */
START_TEST(split_with_experts_is_refused)
{
    struct gpt_config c = *zb_config();
    c.moe = (struct gpt_moe){.experts = 4, .top_k = 1, .every = 1};
    struct gpt_part part = {
        .count = 4, .embed = true, .head = true, .slots = 1, .tp = 1, .wslots = 1};
    struct gpt *g = NULL;
    struct error e = {0};
    ck_assert_int_eq(gpt_new_part(&g, &c, 1, FP_FP32, NULL, NULL, &part, &e), ERR_INVAL);
    ck_assert_ptr_null(g);
    ck_assert_ptr_nonnull(strstr(e.msg, "experts"));
}
END_TEST

/* ZB-H1 (Qi et al. 2024, §3.1) as built: each stage runs every micro-batch's F, B and W once,
 * each W after its B and in order; between F and B it holds what 1F1B holds, p - s; between B
 * and W at most s + 1 (s W's deferred, and one the moment its B ends); and its idle time is
 * (p - 1)(F + B - W) slots a stage, against 1F1B's (p - 1)(F + B + W): a third, F = B = W. */
START_TEST(zbh1_is_the_papers)
{
    for (int p = 1; p <= 8; p++)
        for (int m = p; m <= 3 * p; m++) {
            struct sched zb, ob;
            ck_assert_int_eq(sched_build(SCHED_ZBH1, p, m, 1, &zb, NULL), 0);
            ck_assert_int_eq(sched_build(SCHED_1F1B, p, m, 1, &ob, NULL), 0);
            ck_assert_int_eq(zb.makespan - (int)zb.busy, p - 1);
            ck_assert_int_eq(ob.makespan - (int)ob.busy, 3 * (p - 1));
            ck_assert_double_eq_tol(zb.bubble_over_ideal,
                                    sched_formula_over_ideal(SCHED_ZBH1, p, m, 1), 1e-12);
            ck_assert_double_eq_tol(zb.bubble_over_wall,
                                    sched_formula_over_wall(SCHED_ZBH1, p, m, 1), 1e-12);
            ck_assert_double_eq_tol(3 * sched_formula_over_ideal(SCHED_ZBH1, p, m, 1),
                                    sched_formula_over_ideal(SCHED_1F1B, p, m, 1), 1e-12);
            ck_assert_double_eq_tol(sched_zb_over_ideal(p, m, 1, 1, 1),
                                    sched_formula_over_ideal(SCHED_ZBH1, p, m, 1), 1e-12);
            /* B longer than W idles (p - 1)(B - W) more a stage */
            ck_assert_double_eq_tol(sched_zb_over_ideal(p, m, 1, 1.5, 0.5), (p - 1) * 2.0 / (3 * m),
                                    1e-12);
            for (int s = 0; s < p; s++) {
                ck_assert_int_eq(zb.count[s], 3 * m);
                ck_assert_int_eq(zb.peak_chunks[s], ob.peak_chunks[s]);
                ck_assert_int_eq(sched_wslots(&zb, s, 0), s + 1 < m ? s + 1 : m);
                ck_assert_int_eq(sched_wslots(&ob, s, 0), 0);
                int next[SCHED_OP_KINDS] = {0};
                for (int i = 0; i < zb.count[s]; i++) {
                    const struct sched_op *op = &zb.ops[s][i];
                    ck_assert_int_eq(op->micro, next[op->kind]++); /* each kind in order */
                    if (op->kind == SCHED_OP_W)                    /* after its B */
                        ck_assert_int_gt(next[SCHED_OP_B], op->micro);
                    ck_assert_int_eq(op->duration, 1);
                }
            }
            sched_free(&zb);
            sched_free(&ob);
        }
    struct error e = {0};
    ck_assert_int_eq(sched_check(SCHED_ZBH1, 4, 8, 2, &e), ERR_INVAL); /* no chunks */
    enum calc_schedule k;
    ck_assert_int_eq(sched_parse("zb-h1", &k, NULL), 0);
    ck_assert_int_eq(k, SCHED_ZBH1);
    ck_assert_str_eq(sched_name(k), "zb-h1");
    /* the window's chart: W its own letter, named in the legend beside B */
    char buf[96];
    ck_assert_int_eq(gantt_char(SCHED_OP_W, 3, 0, 8, 1), 'W');
    ck_assert_int_eq(gantt_char(SCHED_OP_B, 3, 0, 8, 1), 'd');
    ck_assert_str_eq(gantt_legend(buf, sizeof buf, 8, 1, true, 0), "0-7 forward, a-h B, W weights");
    ck_assert_str_eq(gantt_legend(buf, sizeof buf, 16, 1, true, 0),
                     "F forward, B input grad, W weights");
    ck_assert_str_eq(gantt_legend(buf, sizeof buf, 8, 1, false, 0), "0-7 forward, a-h backward");
}
END_TEST

/* ZB-H2 (calc/sched.h): with F = B = W = 1 slot the paper's (p - 1)(F + B - 2W) is nothing,
 * and each stage computes without a gap from its first operation to its last once m >= 2p - 1
 * (the warm-up's 2(p - s) - 1 forwards need that many micro-batches); the step still holds the
 * parallelogram's p - 1 slots at its ends, ZB-H1's whole bubble, and no more. It holds 2(p - s)
 * - 1 micro-batches between F and B and at most 2p between F and W; every stage runs each kind
 * in micro-batch order, each W after its B. Exact: the timeline is in whole slots. */
START_TEST(zbh2_is_the_papers)
{
    for (int p = 2; p <= 8; p++)
        for (int m = 1; m <= 4 * p; m++) {
            struct sched h2, h1;
            ck_assert_int_eq(sched_build(SCHED_ZBH2, p, m, 1, &h2, NULL), 0);
            ck_assert_int_eq(sched_build(SCHED_ZBH1, p, m, 1, &h1, NULL), 0);
            if (m >= 2 * p - 1) {
                ck_assert_int_eq(h2.span_idle, 0);
                ck_assert_int_eq(h2.makespan, 3 * m + p - 1);
                ck_assert_double_eq(sched_formula_over_ideal(SCHED_ZBH2, p, m, 1), 0);
            }
            if (m >= p) { /* the step: ZB-H1's makespan, its bubble the parallelogram's ends */
                ck_assert_int_eq(h2.makespan, h1.makespan);
                ck_assert_int_eq(h1.span_idle, h1.makespan - 3 * m);
            }
            for (int s = 0; s < p; s++) {
                int most = 2 * (p - s) - 1 < m ? 2 * (p - s) - 1 : m, held = 0, peak = 0;
                ck_assert_int_eq(h2.count[s], 3 * m);
                ck_assert_int_eq(h2.peak_chunks[s], most);
                ck_assert_int_le(sched_wslots(&h2, s, 0), 2 * p);
                int next[SCHED_OP_KINDS] = {0};
                for (int i = 0; i < h2.count[s]; i++) {
                    const struct sched_op *op = &h2.ops[s][i];
                    ck_assert_int_eq(op->micro, next[op->kind]++);
                    if (op->kind == SCHED_OP_W)
                        ck_assert_int_gt(next[SCHED_OP_B], op->micro);
                    held += op->kind == SCHED_OP_F ? 1 : op->kind == SCHED_OP_W ? -1 : 0;
                    peak = held > peak ? held : peak;
                }
                ck_assert_int_le(peak, 2 * p); /* the paper's 2p M_B */
            }
            sched_free(&h2);
            sched_free(&h1);
        }
    /* the paper's three formulas in F, B and W: with B = W = F, 3:1:0 of (p - 1) F */
    ck_assert_double_eq_tol(sched_formula_times(SCHED_1F1B, 4, 8, 1, 1, 1, 1), 9.0 / 24, 1e-15);
    ck_assert_double_eq_tol(sched_formula_times(SCHED_ZBH1, 4, 8, 1, 1, 1, 1), 3.0 / 24, 1e-15);
    ck_assert_double_eq(sched_formula_times(SCHED_ZBH2, 4, 8, 1, 1, 1, 1), 0);
    /* 2W short of F + B: (p - 1)(F + B - 2W) */
    ck_assert_double_eq_tol(sched_formula_times(SCHED_ZBH2, 4, 8, 1, 1, 1.5, 0.5), 3 * 1.5 / 24,
                            1e-15);
    enum calc_schedule k;
    ck_assert_int_eq(sched_parse("zb-h2", &k, NULL), 0);
    ck_assert_int_eq(k, SCHED_ZBH2);
    ck_assert_str_eq(sched_name(k), "zb-h2");
    ck_assert(sched_splits(k));
}
END_TEST

/* ZB-V (calc/sched.h; Qi et al. 2024, §6, and torch.distributed.pipelining's
 * ScheduleZBVZeroBubble): two chunks a stage in a V, virtual stages s and 2p - 1 - s, so
 * stage 0 holds both ends. With F = B = W a chunk's slot every stage computes without a gap
 * from its first operation to its last once m >= 2p - 1, and the step spans the p - 1 slots
 * of the V's ends more (6m + p - 1); each stage holds 2p chunks between F and B, 1F1B's p
 * micro-batches at stage 0, at half the layers. Every chunk runs each kind in micro-batch
 * order, each W after its B. Exact: whole slots. */
START_TEST(zbv_is_the_papers)
{
    for (int p = 2; p <= 8; p++) {
        for (int s = 0; s < p; s++) { /* the V: a stage's chunks, and back */
            ck_assert_int_eq(sched_vstage(SCHED_ZBV, p, s, 0), s);
            ck_assert_int_eq(sched_vstage(SCHED_ZBV, p, s, 1), 2 * p - 1 - s);
            for (int c = 0; c < 2; c++)
                ck_assert_int_eq(sched_stage_of(SCHED_ZBV, p, sched_vstage(SCHED_ZBV, p, s, c)), s);
        }
        for (int m = 1; m <= 4 * p; m++) {
            struct sched v;
            ck_assert_int_eq(sched_build(SCHED_ZBV, p, m, 2, &v, NULL), 0);
            if (m >= 2 * p - 1) {
                ck_assert_int_eq(v.span_idle, 0);
                ck_assert_int_eq(v.makespan, 6 * m + p - 1);
            }
            for (int s = 0; s < p; s++) {
                ck_assert_int_eq(v.count[s], 6 * m);
                if (m >= 2 * p - 1)
                    ck_assert_int_eq(v.peak_chunks[s], 2 * p);
                ck_assert_int_le(v.peak_chunks[s], 2 * p);
                int next[2][SCHED_OP_KINDS] = {{0}};
                for (int i = 0; i < v.count[s]; i++) {
                    const struct sched_op *op = &v.ops[s][i];
                    ck_assert_int_eq(op->micro, next[op->chunk][op->kind]++);
                    if (op->kind == SCHED_OP_W)
                        ck_assert_int_gt(next[op->chunk][SCHED_OP_B], op->micro);
                }
            }
            sched_free(&v);
        }
    }
    ck_assert_double_eq(sched_formula_over_ideal(SCHED_ZBV, 4, 8, 2), 0);
    struct error e = {0};
    ck_assert_int_eq(sched_check(SCHED_ZBV, 4, 8, 1, &e), ERR_INVAL); /* two chunks */
    ck_assert_int_eq(sched_check(SCHED_ZBV, 1, 8, 2, &e), ERR_INVAL); /* two stages or more */
    enum calc_schedule k;
    ck_assert_int_eq(sched_parse("zbv", &k, NULL), 0);
    ck_assert_int_eq(k, SCHED_ZBV);
    ck_assert_str_eq(sched_name(k), "zbv");
    ck_assert_int_eq(sched_chunks(k, 0), 2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("zb");
    TCase *tc = tcase_create("split backward");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, split_backward_is_bit_identical);
    tcase_add_test(tc, kept_for_w_is_the_calculators);
    tcase_add_test(tc, split_peak_is_the_calculators);
    tcase_add_test(tc, split_with_experts_is_refused);
    tcase_add_test(tc, zbh1_is_the_papers);
    tcase_add_test(tc, zbh2_is_the_papers);
    tcase_add_test(tc, zbv_is_the_papers);
    suite_add_tcase(s, tc);
    return harness_run_threadless(s);
}
