/* Unit tests of src/model, src/par's trainer and num's scaler, clipping and AdamW.
 *
 * The model's gradients are checked against central finite differences of an independent
 * double-precision forward pass written here (a second implementation, loops only, no
 * BLAS); the loss scaler, clipping and AdamW against PyTorch's documented semantics on
 * crafted inputs; checkpointing against the calculator and for bit-identical gradients. */
#include "config.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/prof.h"
#include "base/rng.h"
#include "calc/activ.h"
#include "calc/preset.h"
#include "gptref.h"
#include "harness.h"
#include "model/blasbuf.h"
#include "model/gpt.h"
#include "model/markov.h"
#include "num/adamw.h"
#include "num/clip.h"
#include "num/scaler.h"
#include "par/shard.h"
#include "par/strategies.h"
#include "par/trainer.h"
#include "sim/cluster.h"
#include "ui/eventlog.h"
#include "ui/panel.h"

extern const struct panel_ops panel_training;

/* A shape small enough for finite differences on every tensor kind, with 2 layers, 2 heads
 * and T > 1 so that attention mixes positions. */
static const struct gpt_config small_cfg = {
    .vocab = 16, .d = 16, .layers = 2, .heads = 2, .ffn = 24, .seq = 8};
enum { SB = 2 };

/* ------------------------------------------------------------------ reference in double */

/* The mean cross-entropy of the model in double precision, straight from the definition. */
static double ref_loss(const struct gpt_config *c, const double *p, const int32_t *tok,
                       const int32_t *tgt, int B)
{
    int V = c->vocab, d = c->d, L = c->layers, H = c->heads, F = c->ffn, T = c->seq;
    int hd = d / H;
    size_t nd = (size_t)T * d;
    double *x = calloc(nd, 8), *h = calloc(nd, 8), *q = calloc(nd, 8), *k = calloc(nd, 8);
    double *v = calloc(nd, 8), *o = calloc(nd, 8), *tmp = calloc((size_t)F * 2 + d, 8);
    double *lg = calloc((size_t)V, 8);
    double loss = 0;
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++)
            memcpy(x + (size_t)t * d, p + (size_t)tok[b * T + t] * d, (size_t)d * 8);
        for (int l = 0; l < L; l++) {
#define W(kind) (p + gpt_tensor_at(c, 1 + 9 * (size_t)l + (kind - GPT_ATTN_NORM)).offset)
            for (int t = 0; t < T; t++) {
                ref_rms(h + t * d, x + t * d, W(GPT_ATTN_NORM), d);
                ref_lin(q + t * d, W(GPT_WQ), h + t * d, d, d);
                ref_lin(k + t * d, W(GPT_WK), h + t * d, d, d);
                ref_lin(v + t * d, W(GPT_WV), h + t * d, d, d);
                for (int hh = 0; hh < H; hh++) {
                    ref_rope(q + t * d + hh * hd, t, hd);
                    ref_rope(k + t * d + hh * hd, t, hd);
                }
            }
            for (int hh = 0; hh < H; hh++)
                for (int i = 0; i < T; i++) {
                    double s[64], mx = -1e300, sum = 0;
                    for (int j = 0; j <= i; j++) {
                        s[j] = 0;
                        for (int e = 0; e < hd; e++)
                            s[j] += q[i * d + hh * hd + e] * k[j * d + hh * hd + e];
                        s[j] /= sqrt((double)hd);
                        mx = fmax(mx, s[j]);
                    }
                    for (int j = 0; j <= i; j++)
                        sum += s[j] = exp(s[j] - mx);
                    for (int e = 0; e < hd; e++) {
                        double acc = 0;
                        for (int j = 0; j <= i; j++)
                            acc += s[j] / sum * v[j * d + hh * hd + e];
                        o[i * d + hh * hd + e] = acc;
                    }
                }
            for (int t = 0; t < T; t++) {
                ref_lin(tmp, W(GPT_WO), o + t * d, d, d);
                for (int j = 0; j < d; j++)
                    x[t * d + j] += tmp[j];
                ref_rms(h + t * d, x + t * d, W(GPT_MLP_NORM), d);
                double *g = tmp, *u = tmp + F, *m = tmp + 2 * F;
                ref_lin(g, W(GPT_W_GATE), h + t * d, F, d);
                ref_lin(u, W(GPT_W_UP), h + t * d, F, d);
                for (int j = 0; j < F; j++)
                    g[j] = g[j] / (1 + exp(-g[j])) * u[j];
                ref_lin(m, W(GPT_W_DOWN), g, d, F);
                for (int j = 0; j < d; j++)
                    x[t * d + j] += m[j];
            }
#undef W
        }
        const double *wf = p + gpt_param_count(c) - d;
        for (int t = 0; t < T; t++) {
            ref_rms(h + t * d, x + t * d, wf, d);
            ref_lin(lg, p, h + t * d, V, d); /* tied: logits = E h */
            double mx = -1e300, s = 0;
            for (int j = 0; j < V; j++)
                mx = fmax(mx, lg[j]);
            for (int j = 0; j < V; j++)
                s += exp(lg[j] - mx);
            loss += log(s) + mx - lg[tgt[b * T + t]];
        }
    }
    free(x), free(h), free(q), free(k), free(v), free(o), free(tmp), free(lg);
    return loss / ((double)B * T);
}

static struct gpt *new_model(const struct gpt_config *c, int B, enum fp_format f, const char *ck)
{
    struct ckpt_policy p;
    struct gpt *g = NULL;
    ck_assert_int_eq(ckpt_parse(ck, &p, NULL), 0);
    ck_assert_int_eq(gpt_new(&g, c, B, f, &p, NULL, NULL), 0);
    return g;
}

/* ------------------------------------------------------------------ gradient check */

START_TEST(gradients_match_finite_differences)
{
    const struct gpt_config *c = &small_cfg;
    struct gpt *g = new_model(c, SB, FP_FP32, "none");
    size_t n = gpt_nparams(g);
    int32_t tok[SB * 8], tgt[SB * 8];
    random_batch(c, SB, tok, tgt);
    random_params(c, gpt_params(g), 3);
    double loss = gpt_step(g, tok, tgt, 1.0f, NULL);
    const float *grad = gpt_grads(g);
    double *pd = malloc(n * 8);
    for (size_t i = 0; i < n; i++)
        pd[i] = gpt_params(g)[i];
    /* The fp32 loss against the double reference: fp32 rounding over a 2-layer net,
     * ~1e-7 relative per operation, stays well below 1e-5. */
    double ref = ref_loss(c, pd, tok, tgt, SB);
    ck_assert_double_le(fabs(loss - ref) / ref, 1e-5);

    /* Central differences in double with h = 1e-5: truncation error ~h^2 f''' ~ 1e-10,
     * rounding ~1e-16 / h ~ 1e-11, far below the tolerance. The analytic gradient is fp32:
     * errors ~1e-6 of the tensor's largest gradient. Tolerance: 1e-4 of that scale plus 1e-3
     * relative; a wrong formula is off by O(1). Every tensor of every layer, 8 elements each
     * (the first, the last and 6 at random). */
    struct rng r;
    rng_seed(&r, 11, 3);
    for (size_t ti = 0; ti < gpt_tensor_count(c); ti++) {
        struct gpt_tensor t = gpt_tensor_at(c, ti);
        size_t m = (size_t)t.rows * t.cols;
        double scale = 0;
        for (size_t j = 0; j < m; j++)
            scale = fmax(scale, fabs(grad[t.offset + j]));
        ck_assert_msg(scale > 0, "tensor %zu has a zero gradient", ti);
        for (int s = 0; s < 8; s++) {
            size_t j = t.offset + (s == 0 ? 0 : s == 1 ? m - 1 : rng_below(&r, m));
            double keep = pd[j], h = 1e-5;
            pd[j] = keep + h;
            double up = ref_loss(c, pd, tok, tgt, SB);
            pd[j] = keep - h;
            double down = ref_loss(c, pd, tok, tgt, SB);
            pd[j] = keep;
            double fd = (up - down) / (2 * h);
            ck_assert_msg(fabs(grad[j] - fd) <= 1e-4 * scale + 1e-3 * fabs(fd),
                          "%s layer %d element %zu: analytic %.9g, finite difference %.9g",
                          gpt_kind_name(t.kind), t.layer, j - t.offset, (double)grad[j], fd);
        }
    }
    free(pd);
    gpt_free(g);
}
END_TEST

/* A model makes OpenBLAS single-threaded whoever creates it: its own threads would race with
 * the device threads' buffers (and ThreadSanitizer says so). */
START_TEST(blas_runs_single_threaded)
{
    struct gpt *g = new_model(&small_cfg, 1, FP_FP32, "none");
    ck_assert_int_eq(openblas_get_num_threads(), 1);
    gpt_free(g);
}
END_TEST

START_TEST(layout_is_documented_order)
{
    const struct gpt_config *c = &small_cfg;
    size_t off = 0;
    for (size_t i = 0; i < gpt_tensor_count(c); i++) {
        struct gpt_tensor t = gpt_tensor_at(c, i);
        ck_assert_uint_eq(t.offset, off);
        off += (size_t)t.rows * t.cols;
    }
    ck_assert_uint_eq(off, gpt_param_count(c));
    /* V d + L (2 d + 4 d^2 + 3 d F) + d */
    ck_assert_uint_eq(gpt_param_count(c), 16 * 16 + 2 * (32 + 4 * 256 + 3 * 16 * 24) + 16);
    ck_assert_int_eq(gpt_tensor_at(c, 1).kind, GPT_ATTN_NORM);
    ck_assert_int_eq(gpt_tensor_at(c, 9).kind, GPT_W_DOWN);
    ck_assert_int_eq(gpt_tensor_at(c, 9).rows, 16);
    ck_assert_int_eq(gpt_tensor_at(c, 9).cols, 24);
    ck_assert_int_eq(gpt_tensor_at(c, 10).layer, 1);
    /* tiny's count, as calc computes it from the preset */
    struct gpt_config tiny;
    ck_assert_int_eq(train_shape("tiny", &tiny, NULL), 0);
    ck_assert_uint_eq(gpt_param_count(&tiny), 202304);
}
END_TEST

/* ------------------------------------------------------------------ checkpointing */

static const char *const policies[] = {"none", "full", "every:2", "every:3", "sqrt", "selective"};

START_TEST(checkpoint_gradients_bit_identical)
{
    struct gpt_config c = small_cfg;
    c.layers = 5; /* uneven segments for every:2 and every:3 */
    enum fp_format fmts[] = {FP_FP32, FP_BF16, FP_FP16};
    int32_t tok[SB * 8], tgt[SB * 8];
    random_batch(&c, SB, tok, tgt);
    size_t n = gpt_param_count(&c);
    float *master = malloc(n * 4), *ref = malloc(n * 4);
    random_params(&c, master, 5);
    for (int f = 0; f < 3; f++) {
        double ref_loss_v = 0;
        for (size_t k = 0; k < sizeof policies / sizeof *policies; k++) {
            struct gpt *g = new_model(&c, SB, fmts[f], policies[k]);
            gpt_set_weights(g, master);
            double loss = gpt_step(g, tok, tgt, 1024.0f, NULL);
            if (k == 0) {
                memcpy(ref, gpt_grads(g), n * 4);
                ref_loss_v = loss;
            } else {
                ck_assert_msg(memcmp(ref, gpt_grads(g), n * 4) == 0,
                              "%s: gradients differ from none in format %d", policies[k], f);
                ck_assert(loss == ref_loss_v);
            }
            ck_assert_uint_eq(gpt_act_live(g), 0); /* everything released */
            gpt_free(g);
        }
    }
    free(master);
    free(ref);
}
END_TEST

START_TEST(checkpoint_memory_equals_calculator)
{
    struct model_shape tiny;
    struct gpt_config c;
    ck_assert_int_eq(preset_load_model("tiny", &tiny, NULL), 0);
    ck_assert_int_eq(train_shape_of(&tiny, &c, NULL), 0);
    int B = 2;
    int32_t *tok = calloc((size_t)B * c.seq, 4), *tgt = calloc((size_t)B * c.seq, 4);
    for (int f = 0; f < 2; f++) {
        enum fp_format fmt = f ? FP_BF16 : FP_FP32;
        struct activ_config ac = {.micro_batch = B,
                                  .seq = c.seq,
                                  .tp = 1,
                                  .sp = false,
                                  .bytes = f ? 2 : 4,
                                  .attention = ACTIV_EAGER}; /* the model's at cp 1 */
        for (size_t k = 0; k < sizeof policies / sizeof *policies; k++) {
            struct gpt *g = new_model(&c, B, fmt, policies[k]);
            gpt_init_params(&c, 1, gpt_params(g));
            gpt_step(g, tok, tgt, 1.0f, NULL);
            struct ckpt_policy pol;
            struct activ_total tot;
            ck_assert_int_eq(ckpt_parse(policies[k], &pol, NULL), 0);
            activ_total(&tiny, &ac, &pol, c.layers, true, true, &tot);
            ck_assert_msg((double)gpt_mem_bytes(g, GPT_MEM_ACTIVATIONS) == tot.peak,
                          "%s %s: measured %zu, calculator %.0f", policies[k], f ? "bf16" : "fp32",
                          gpt_mem_bytes(g, GPT_MEM_ACTIVATIONS), tot.peak);
            struct gpt_flops fl = gpt_flops(g);
            if (!strcmp(policies[k], "full")) /* one more forward: about a third */
                ck_assert_double_eq_tol(fl.recompute / (fl.forward + fl.backward), 0.33, 0.02);
            if (!strcmp(policies[k], "none"))
                ck_assert(fl.recompute == 0);
            /* The real run and the planner count the same recompute (exact: both are sums
             * of whole FLOP counts well below 2^53). */
            if (!strcmp(policies[k], "selective"))
                ck_assert_msg(fl.recompute == activ_recompute_flops(&tiny, &ac, &pol, c.layers, 0),
                              "selective recompute: run %.0f, calculator %.0f", fl.recompute,
                              activ_recompute_flops(&tiny, &ac, &pol, c.layers, 0));
            gpt_free(g);
        }
    }
    free(tok);
    free(tgt);
}
END_TEST

/* A seam that counts: buffers and their bytes by category, charge and compute calls, the
 * live charged bytes and their peak. */
struct counting {
    int buffers;
    size_t bytes[GPT_MEM_KINDS];
    long charges, computes;
    long long live, peak;
};

static void *count_alloc(void *ctx, enum gpt_mem kind, size_t bytes, const char *what)
{
    struct counting *k = ctx;
    (void)what;
    k->buffers++;
    k->bytes[kind] += bytes;
    return calloc(1, bytes);
}

static void count_free(void *ctx, enum gpt_mem kind, void *p, size_t bytes)
{
    (void)ctx, (void)kind, (void)bytes;
    free(p);
}

static void count_charge(void *ctx, enum gpt_mem kind, long long delta)
{
    struct counting *k = ctx;
    ck_assert(kind == GPT_MEM_ACTIVATIONS);
    k->charges++;
    k->live += delta;
    k->peak = k->live > k->peak ? k->live : k->peak;
}

static void count_compute(void *ctx, double flops, const char *what, int layer)
{
    struct counting *k = ctx;
    (void)flops, (void)what, (void)layer;
    k->computes++;
}

/* What the trace is sized from, against what a step really does; every allocated byte is
 * what gpt_estimate_bytes says; the charged activations always fit in the arena and come
 * back to 0 after a step. */
START_TEST(seam_calls_are_known_before_the_run)
{
    struct gpt_config c;
    ck_assert_int_eq(train_shape("tiny", &c, NULL), 0);
    const char *pols[] = {"none", "full", "every:3", "sqrt", "selective"};
    int B = 2;
    int32_t *tok = calloc((size_t)B * c.seq, 4), *tgt = calloc((size_t)B * c.seq, 4);
    for (size_t k = 0; k < sizeof pols / sizeof *pols; k++)
        for (int f = 0; f < 2; f++) {
            enum fp_format fmt = f ? FP_BF16 : FP_FP32;
            struct counting n = {0};
            struct gpt_alloc seam = {.alloc = count_alloc,
                                     .free = count_free,
                                     .charge = count_charge,
                                     .compute = count_compute,
                                     .ctx = &n};
            struct ckpt_policy p;
            struct gpt *g = NULL;
            ck_assert_int_eq(ckpt_parse(pols[k], &p, NULL), 0);
            ck_assert_int_eq(gpt_new(&g, &c, B, fmt, &p, &seam, NULL), 0);
            ck_assert_int_eq(n.buffers, GPT_BUFFERS);
            size_t total = 0;
            for (int m = 0; m < GPT_MEM_KINDS; m++)
                total += n.bytes[m];
            ck_assert_uint_eq(total, gpt_estimate_bytes(&c, B, fmt, &p, NULL));
            ck_assert_uint_eq(n.bytes[GPT_MEM_ARENA], gpt_mem_bytes(g, GPT_MEM_ARENA));
            gpt_init_params(&c, 1, gpt_params(g));
            for (int step = 1; step <= 2; step++) {
                n.charges = n.computes = 0;
                gpt_step(g, tok, tgt, 1.0f, NULL);
                struct gpt_calls want = gpt_step_calls(&c, &p, NULL);
                ck_assert_msg(n.charges == want.charge && n.computes == want.compute,
                              "%s: %ld charges, %ld computes; predicted %ld, %ld", pols[k],
                              n.charges, n.computes, want.charge, want.compute);
                ck_assert_int_eq(n.live, 0);
            }
            ck_assert_msg((size_t)n.peak <= n.bytes[GPT_MEM_ARENA],
                          "%s: %lld bytes live at the peak, the arena holds %zu", pols[k], n.peak,
                          n.bytes[GPT_MEM_ARENA]);
            ck_assert_uint_eq((size_t)n.peak, gpt_mem_bytes(g, GPT_MEM_ACTIVATIONS));
            gpt_free(g);
        }
    free(tok);
    free(tgt);
}
END_TEST

/* A seam that counts the strategies' calls (their results left as they were: the counts only
 * matter), and the compute and charge calls. */
struct comm_counting {
    struct counting k;
    long tp_sum, tp_half, cp_shift, ep_a2a, ep_counts;
    int ep, eprank, experts; /* dropless: the group the counts' stand-in answers for */
    float *ring;             /* the ring step in flight */
};

static void count_tp(void *ctx, float *buf, size_t n, enum gpt_tp_op op, const char *what)
{
    struct comm_counting *k = ctx;
    (void)buf, (void)n, (void)what;
    if (op == GPT_TP_GATHER || op == GPT_TP_SCATTER)
        k->tp_half++;
    else
        k->tp_sum++;
}

/* A ring step posted and waited for: what was posted comes back (one step at a time). */
static void count_cp_post(void *ctx, const float *send, size_t n, const char *what)
{
    struct comm_counting *k = ctx;
    (void)what;
    memcpy(k->ring, send, n * sizeof *send);
    k->cp_shift++;
}

static void count_cp_wait(void *ctx, float *recv, size_t n)
{
    struct comm_counting *k = ctx;
    memcpy(recv, k->ring, n * sizeof *recv);
}

/* Expert parallelism's all-to-alls, as if every GPU of the group routed as this one: dropless,
 * the counts this GPU sends itself come from each GPU; the rows arrive as zeros, as many as
 * the counts say (with a capacity, the static shape's equal blocks). */
static void count_counts(void *ctx, const int32_t *send, int32_t *recv, size_t n, const char *what)
{
    struct comm_counting *k = ctx;
    size_t mine = n / (size_t)k->ep;
    ck_assert_str_eq(what, GPT_EP_COUNTS);
    ck_assert_uint_eq(n, (size_t)k->experts);
    for (int j = 0; j < k->ep; j++)
        memcpy(recv + (size_t)j * mine, send + (size_t)k->eprank * mine, mine * sizeof *recv);
    k->ep_a2a++, k->ep_counts++;
}

static void count_ep_v(void *ctx, const float *send, const size_t *sendcounts, float *recv,
                       const size_t *recvcounts, const char *what)
{
    struct comm_counting *k = ctx;
    size_t in = 0;
    (void)send, (void)sendcounts, (void)what;
    for (int j = 0; j < k->ep; j++)
        in += recvcounts[j];
    memset(recv, 0, in * sizeof *recv);
    k->ep_a2a++;
}

/* What a strategy's count rests on (par/strategy.h): the calls a part's step makes to the seam,
 * tensor parallelism's sums and halves, the ring's steps and the experts' all-to-alls, known
 * from the shape before the run, for parts of every kind and each policy. */
START_TEST(strategy_calls_are_known_before_the_run)
{
    struct gpt_config dense, moe, dropless;
    ck_assert_int_eq(train_shape("tiny", &dense, NULL), 0);
    ck_assert_int_eq(train_shape("tiny-moe", &moe, NULL), 0);
    dropless = moe; /* no capacity factor: dropless, its counts sent first */
    moe.moe.capacity_factor = 2;
    const struct {
        const struct gpt_config *c;
        struct gpt_part p;
    } parts[] = {
        {&dense, {.count = 4, .embed = true, .head = true, .slots = 1, .tp = 2, .tprank = 1}},
        {&dense, {.count = 4, .embed = true, .head = true, .slots = 1, .tp = 2, .sp = true}},
        {&dense, {.count = 4, .embed = true, .head = true, .slots = 1, .cp = 2, .cprank = 1}},
        {&dense, {.count = 4, .embed = true, .head = true, .slots = 1, .tp = 2, .cp = 4}},
        {&dense,
         {.count = 4, .embed = true, .head = true, .slots = 1, .tp = 2, .sp = true, .cp = 2}},
        {&dense, {.count = 4, .embed = true, .head = true, .slots = 1, .flash = true}},
        {&moe, {.count = 4, .embed = true, .head = true, .slots = 1, .ep = 2, .eprank = 1}},
        {&dropless, {.count = 4, .embed = true, .head = true, .slots = 1, .ep = 2, .eprank = 1}},
        {&dropless, {.count = 4, .embed = true, .head = true, .slots = 1, .ep = 4, .eprank = 2}},
    };
    const char *pols[] = {"none", "full", "every:2", "selective"};
    int B = 2;
    int32_t *tok = calloc((size_t)B * dense.seq, 4), *tgt = calloc((size_t)B * dense.seq, 4);
    float *ring = calloc(2 * (size_t)B * dense.seq * dense.d, sizeof *ring); /* K and V at most */
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        for (size_t k = 0; k < sizeof pols / sizeof *pols; k++) {
            struct ckpt_policy pol;
            ck_assert_int_eq(ckpt_parse(pols[k], &pol, NULL), 0);
            if ((parts[i].p.cp > 1 || parts[i].p.flash) && pol.kind == CKPT_SELECTIVE)
                continue; /* refused: ring attention keeps no probabilities */
            struct comm_counting n = {.ep = parts[i].p.ep,
                                      .eprank = parts[i].p.eprank,
                                      .experts = parts[i].c->moe.experts,
                                      .ring = ring};
            struct gpt_alloc seam = {.alloc = count_alloc,
                                     .free = count_free,
                                     .charge = count_charge,
                                     .compute = count_compute,
                                     .tp_reduce = count_tp,
                                     .cp_post = count_cp_post,
                                     .cp_wait = count_cp_wait,
                                     .ep_alltoallv = count_ep_v,
                                     .ep_counts = count_counts,
                                     .ctx = &n};
            struct gpt *g = NULL;
            ck_assert_int_eq(
                gpt_new_part(&g, parts[i].c, B, FP_BF16, &pol, &seam, &parts[i].p, NULL), 0);
            float *w = gpt_params(g); /* a part's share: any values do */
            for (size_t j = 0; j < gpt_nparams(g); j++)
                w[j] = 0.01f * (float)((int)(j % 7) - 3);
            gpt_step(g, tok, tgt, 1.0f, NULL);
            struct gpt_calls want = gpt_step_calls(parts[i].c, &pol, &parts[i].p);
            ck_assert_msg(n.k.charges == want.charge && n.k.computes == want.compute &&
                              n.tp_sum == want.tp_sum && n.tp_half == want.tp_half &&
                              n.cp_shift == want.cp_shift && n.ep_a2a == want.ep_a2a &&
                              n.ep_counts == want.ep_counts,
                          "part %zu, %s: %ld charges, %ld computes, tp %ld + %ld halves, %ld ring "
                          "steps, %ld all-to-alls; predicted %ld, %ld, %ld + %ld, %ld, %ld",
                          i, pols[k], n.k.charges, n.k.computes, n.tp_sum, n.tp_half, n.cp_shift,
                          n.ep_a2a, want.charge, want.compute, want.tp_sum, want.tp_half,
                          want.cp_shift, want.ep_a2a);
            gpt_free(g);
        }
    free(ring);
    free(tok);
    free(tgt);
}
END_TEST

/* ------------------------------------------------------------------ diagnosis */

START_TEST(nonfinite_names_the_first_tensor)
{
    const struct gpt_config *c = &small_cfg;
    struct gpt *g = new_model(c, SB, FP_FP16, "full");
    random_params(c, gpt_params(g), 3);
    int32_t tok[SB * 8], tgt[SB * 8];
    random_batch(c, SB, tok, tgt);
    struct gpt_diag d;
    struct gpt_inject nan1 = {1, -1, 1.0f};
    double loss = gpt_step(g, tok, tgt, 1.0f, &nan1);
    gpt_diag(g, &d);
    ck_assert(isnan(loss));
    ck_assert_str_eq(d.nonfinite, "layer 1 attn scores");
    ck_assert(d.nonfinite_forward);
    struct gpt_inject inf0 = {-1, 0, 1.0f};
    loss = gpt_step(g, tok, tgt, 1.0f, &inf0);
    gpt_diag(g, &d);
    ck_assert(isfinite(loss));
    ck_assert_str_eq(d.nonfinite, "layer 0 grad mlp hidden");
    ck_assert(!d.nonfinite_forward);
    /* fp16 overflow for real: a loss scale of 2^24 pushes the logits' gradient past 65504 */
    loss = gpt_step(g, tok, tgt, 16777216.0f * 64, NULL);
    gpt_diag(g, &d);
    ck_assert_str_eq(d.nonfinite, "grad logits");
    /* and a clean step has none */
    gpt_step(g, tok, tgt, 1.0f, NULL);
    gpt_diag(g, &d);
    ck_assert_str_eq(d.nonfinite, "");
    gpt_free(g);
}
END_TEST

START_TEST(fp16_gradients_underflow_without_scaling)
{
    struct gpt_config tiny;
    ck_assert_int_eq(train_shape("tiny", &tiny, NULL), 0);
    struct gpt *g = new_model(&tiny, 4, FP_FP16, "none");
    gpt_init_params(&tiny, 1, gpt_params(g));
    gpt_set_weights(g, gpt_params(g));
    int32_t *tok = calloc((size_t)4 * tiny.seq, 4), *tgt = calloc((size_t)4 * tiny.seq, 4);
    random_batch(&tiny, 4, tok, tgt);
    struct gpt_diag d;
    gpt_step(g, tok, tgt, 1.0f, NULL);
    gpt_diag(g, &d);
    uint64_t plain = d.underflow_total, per_layer = 0;
    for (int l = 0; l <= tiny.layers; l++)
        per_layer += d.underflow[l];
    ck_assert_uint_eq(per_layer, plain);
    gpt_step(g, tok, tgt, 65536.0f, NULL);
    gpt_diag(g, &d);
    /* gradients of a mean over 256 tokens at init are ~1e-5..1e-8: fp16's subnormals end at
     * 6e-8, so some flush to zero unscaled, and scaling by 2^16 saves them */
    ck_assert_uint_gt(plain, 0);
    ck_assert_uint_lt(d.underflow_total, plain);
    free(tok);
    free(tgt);
    gpt_free(g);
}
END_TEST

/* ------------------------------------------------------------------ scaler, clip, AdamW */

START_TEST(grad_scaler_semantics)
{
    struct scaler s;
    scaler_init(&s, 65536.0f, 3, 1);
    ck_assert(s.scale == 65536.0f);
    scaler_update(&s, true); /* overflow: halve, tracker reset */
    ck_assert(s.scale == 32768.0f);
    scaler_update(&s, false);
    scaler_update(&s, false);
    ck_assert(s.scale == 32768.0f);
    scaler_update(&s, true); /* an overflow resets the count of clean steps */
    ck_assert(s.scale == 16384.0f);
    scaler_update(&s, false);
    scaler_update(&s, false);
    ck_assert(s.scale == 16384.0f);
    scaler_update(&s, false); /* the third clean step in a row: double */
    ck_assert(s.scale == 32768.0f);
    ck_assert_int_eq(s.growth_tracker, 0);

    /* never grows to inf: 2^127 doubled is inf in fp32, so it stays */
    scaler_init(&s, ldexpf(1.0f, 127), 1, 1);
    scaler_update(&s, false);
    ck_assert(s.scale == ldexpf(1.0f, 127));
    ck_assert_int_eq(s.growth_tracker, 0);

    /* 1 / scale in double, then fp32 */
    float scales[] = {3.0f, 65536.0f, 12345.678f, 0.1f};
    for (int i = 0; i < 4; i++) {
        scaler_init_static(&s, scales[i]);
        ck_assert(scaler_inv_scale(&s) == (float)(1.0 / (double)scales[i]));
    }
    float g[3] = {65536.0f, -2.0f, 0.0f};
    scaler_init(&s, 65536.0f, 2000, 1);
    ck_assert(!scaler_unscale(&s, g, 3));
    ck_assert(g[0] == 1.0f && g[1] == -2.0f / 65536.0f && g[2] == 0.0f);
    float bad[2] = {1.0f, INFINITY};
    ck_assert(scaler_unscale(&s, bad, 2));
    float nanv[2] = {NAN, 1.0f};
    ck_assert(scaler_unscale(&s, nanv, 2));

    /* hysteresis 2 (Megatron, DeepSpeed): the first overflow only counts down */
    scaler_init(&s, 1024.0f, 2, 2);
    scaler_update(&s, true);
    ck_assert(s.scale == 1024.0f);
    scaler_update(&s, true);
    ck_assert(s.scale == 512.0f);
    scaler_update(&s, true); /* stays at 0 until a growth: backs off again */
    ck_assert(s.scale == 256.0f);
    scaler_update(&s, false);
    scaler_update(&s, false); /* growth resets the hysteresis */
    ck_assert(s.scale == 512.0f);
    scaler_update(&s, true);
    ck_assert(s.scale == 512.0f);

    /* a static scale never changes */
    scaler_init_static(&s, 128.0f);
    scaler_update(&s, true);
    ck_assert(s.scale == 128.0f);
}
END_TEST

START_TEST(clip_semantics)
{
    float g[2] = {3.0f, 4.0f};
    float norm = clip_norm(g, 2);
    ck_assert(norm == 5.0f);
    float coef = clip_coef(norm, 1.0f);
    ck_assert(coef == 1.0f / (5.0f + 1e-6f)); /* max_norm / (norm + 1e-6), in fp32 */
    clip_apply(g, 2, coef);
    ck_assert_double_eq_tol(clip_norm(g, 2), 1.0, 1e-6);
    ck_assert(clip_coef(0.5f, 1.0f) == 1.0f); /* clamped to 1 */
    ck_assert(clip_coef(INFINITY, 1.0f) == 0.0f);
    ck_assert(isnan(clip_coef(NAN, 1.0f))); /* torch.clamp keeps NaN */
}
END_TEST

START_TEST(adamw_matches_pytorch_formula)
{
    struct adamw a;
    adamw_init(&a, 0.1, 0.9, 0.999, 1e-8, 0.01);
    float p[2] = {1.0f, -0.5f}, m[2] = {0}, v[2] = {0};
    float g[2] = {0.5f, -2.0f};
    double pd[2] = {1.0, -0.5}, md[2] = {0}, vd[2] = {0};
    for (int t = 1; t <= 3; t++) {
        adamw_advance(&a);
        adamw_update(&a, p, g, 1.0f, m, v, 2);
        for (int i = 0; i < 2; i++) { /* torch.optim.AdamW, written out in double */
            pd[i] *= 1 - 0.1 * 0.01;
            md[i] = 0.9 * md[i] + 0.1 * g[i];
            vd[i] = 0.999 * vd[i] + 0.001 * g[i] * g[i];
            double mh = md[i] / (1 - pow(0.9, t)), vh = vd[i] / (1 - pow(0.999, t));
            pd[i] -= 0.1 * mh / (sqrt(vh) + 1e-8);
            ck_assert_double_eq_tol(p[i], pd[i], 1e-6); /* fp32 state: a few ulps */
        }
    }
    ck_assert_int_eq(a.step, 3);
}
END_TEST

/* The update reads the gradients times clipping's coefficient: bit for bit clip_apply and
 * then an update with coefficient 1, and the gradients are left as they were. */
START_TEST(adamw_fuses_the_clip)
{
    enum { N = 1000 };
    static float g[N], gc[N], p1[N], p2[N], m1[N], m2[N], v1[N], v2[N];
    struct rng r;
    rng_seed(&r, 7, 0);
    for (int i = 0; i < N; i++) {
        g[i] = gc[i] = (float)rng_normal(&r) * 3.0f;
        p1[i] = p2[i] = (float)rng_normal(&r);
    }
    float coef = clip_coef(clip_norm(g, N), 1.0f);
    ck_assert(coef < 0.1f);
    struct adamw a;
    adamw_init(&a, 1e-3, 0.9, 0.999, 1e-8, 0.01);
    for (int t = 0; t < 3; t++) {
        adamw_advance(&a);
        adamw_update(&a, p1, g, coef, m1, v1, N);
        memcpy(gc, g, sizeof g);
        clip_apply(gc, N, coef);
        adamw_update(&a, p2, gc, 1.0f, m2, v2, N);
    }
    ck_assert(memcmp(p1, p2, sizeof p1) == 0);
    ck_assert(memcmp(m1, m2, sizeof m1) == 0);
    ck_assert(memcmp(v1, v2, sizeof v1) == 0);
    ck_assert(g[0] != gc[0]); /* g itself untouched */
}
END_TEST

/* The gradients' pass (clip_unscale): the inf/NaN check, the unscaling and the sum of squares
 * bit for bit those of a plain loop, in blocks and lengths that end anywhere; with inv 1 the
 * gradients are not rewritten (a signalling NaN's bits stay). */
START_TEST(unscale_pass_is_the_plain_loop)
{
    enum { N = 5003 };
    static float g[N], want[N];
    struct rng r;
    rng_seed(&r, 3, 0);
    for (int i = 0; i < N; i++)
        g[i] = (float)rng_normal(&r) * 100.0f;
    float invs[2] = {1.0f, 1.0f / 3.0f};
    for (int k = 0; k < 2; k++)
        for (size_t n = 1; n <= N; n = n * 3 + 1) {
            memcpy(want, g, sizeof g);
            double s0 = 0.25, s = s0;
            for (size_t i = 0; i < n; i++) {
                want[i] = invs[k] != 1.0f ? want[i] * invs[k] : want[i];
                s0 += (double)want[i] * want[i];
            }
            float got[N];
            memcpy(got, g, sizeof g);
            ck_assert(!clip_unscale(got, n, invs[k], &s));
            ck_assert_msg(s == s0 && memcmp(got, want, sizeof got) == 0, "n %zu inv %g", n,
                          (double)invs[k]);
            got[n - 1] = k ? NAN : INFINITY;
            ck_assert(clip_unscale(got, n, invs[k], NULL));
        }
    uint32_t snan = 0x7f800001u;
    float h[3] = {1.0f, 2.0f, 0.0f};
    memcpy(&h[2], &snan, 4);
    ck_assert(clip_unscale(h, 3, 1.0f, NULL));
    ck_assert(memcmp(&h[2], &snan, 4) == 0);
}
END_TEST

/* AdamW with the working weights rounded in the same pass: the bits of adamw_update and the
 * bulk conversions after it, for bf16 and fp16, bits and values, over lengths that end in the
 * middle of its blocks. */
START_TEST(adamw_rounds_in_the_same_pass)
{
    enum { N = 5000 };
    static float g[N], p1[N], p2[N], m1[N], m2[N], v1[N], v2[N], wf1[N], wf2[N];
    static uint16_t w1[N], w2[N];
    struct rng r;
    rng_seed(&r, 9, 0);
    for (int i = 0; i < N; i++) {
        g[i] = (float)rng_normal(&r);
        p1[i] = p2[i] = (float)rng_normal(&r);
    }
    enum fp_format fmts[2] = {FP_BF16, FP_FP16};
    struct adamw a;
    adamw_init(&a, 1e-2, 0.9, 0.999, 1e-8, 0.01);
    for (int t = 0; t < 4; t++) {
        enum fp_format f = fmts[t % 2];
        adamw_advance(&a);
        adamw_update(&a, p1, g, 0.5f, m1, v1, N - t);
        if (f == FP_BF16) {
            bf16_from_f32_n(w1, p1, N - t);
            bf16_to_f32_n(wf1, w1, N - t);
        } else {
            fp16_from_f32_n(w1, p1, N - t);
            fp16_to_f32_n(wf1, w1, N - t);
        }
        adamw_update_round(&a, p2, g, 0.5f, m2, v2, N - t, f, w2, wf2);
        ck_assert(memcmp(p1, p2, sizeof p1) == 0 && memcmp(m1, m2, sizeof m1) == 0 &&
                  memcmp(v1, v2, sizeof v1) == 0);
        ck_assert(memcmp(w1, w2, (N - t) * 2) == 0 && memcmp(wf1, wf2, (N - t) * 4) == 0);
    }
}
END_TEST

/* ------------------------------------------------------------------ the trainer */

static struct trainer *new_trainer(struct train_opts *o)
{
    struct trainer *t = NULL;
    struct error e = {0};
    ck_assert_msg(trainer_new(&t, o, NULL, &e) == 0, "%s", e.msg);
    return t;
}

START_TEST(skipped_step_leaves_state_untouched)
{
    struct train_opts o;
    train_opts_default(&o);
    o.shape = small_cfg;
    o.batch = SB;
    o.steps = 4;
    o.precision = FP_FP16;
    o.scaling = TRAIN_SCALE_DYNAMIC;
    o.inject[o.ninject++] = (struct train_inject){TRAIN_INJECT_NAN, 3, 1, 0};
    o.inject[o.ninject++] = (struct train_inject){TRAIN_INJECT_INF, 4, 1, 0};
    struct trainer *t = new_trainer(&o);
    size_t n = gpt_param_count(&o.shape), bytes = n * 4;
    float *before = malloc(4 * bytes);
    struct train_step s;
    trainer_step(t, &s);
    trainer_step(t, &s);
    ck_assert(!s.skipped);
    ck_assert(s.loss_scale == 65536.0f);
    for (int step = 3; step <= 4; step++) {
        memcpy(before, trainer_master(t), bytes);
        memcpy(before + n, gpt_params(trainer_model(t)), bytes);
        memcpy(before + 2 * n, trainer_moments(t, 0), bytes);
        memcpy(before + 3 * n, trainer_moments(t, 1), bytes);
        long adam = trainer_adam_steps(t);
        trainer_step(t, &s);
        ck_assert(s.skipped && s.overflow);
        ck_assert(memcmp(before, trainer_master(t), bytes) == 0);
        ck_assert(memcmp(before + n, gpt_params(trainer_model(t)), bytes) == 0);
        ck_assert(memcmp(before + 2 * n, trainer_moments(t, 0), bytes) == 0);
        ck_assert(memcmp(before + 3 * n, trainer_moments(t, 1), bytes) == 0);
        ck_assert_int_eq(trainer_adam_steps(t), adam);
    }
    ck_assert_str_eq(s.nonfinite, "layer 1 grad mlp hidden");
    ck_assert(s.loss_scale == 32768.0f); /* the scale step 4 used: halved after step 3 */
    free(before);
    trainer_free(t);
}
END_TEST

/* Without a scaler nothing checks: the NaN step is applied as plain PyTorch applies it (Adam
 * counts it, the weights turn NaN, the next loss is NaN). A constant scale skips it and keeps
 * its value (Megatron's ConstantGradScaler). */
START_TEST(no_scaler_applies_nonfinite_steps)
{
    struct train_opts o;
    train_opts_default(&o);
    o.shape = small_cfg;
    o.batch = SB;
    o.steps = 3;
    o.precision = FP_BF16;
    o.scaling = TRAIN_SCALE_NONE;
    o.inject[o.ninject++] = (struct train_inject){TRAIN_INJECT_NAN, 2, 1, 0};
    struct trainer *t = new_trainer(&o);
    size_t n = gpt_param_count(&o.shape);
    struct train_step s;
    trainer_step(t, &s);
    ck_assert(!s.overflow && !s.skipped && s.weights_nonfinite_since == 0);
    trainer_step(t, &s);
    ck_assert(s.overflow && !s.skipped && isnan(s.loss));
    ck_assert_int_eq(trainer_adam_steps(t), 2);
    ck_assert_int_eq(s.weights_nonfinite_since, 2);
    bool nan_weight = false;
    for (size_t i = 0; i < n; i++)
        nan_weight |= isnan(trainer_master(t)[i]) != 0;
    ck_assert(nan_weight);
    const char *tensor;
    ck_assert_int_eq(trainer_poisoned(t, &tensor), 2);
    ck_assert_str_eq(tensor, "layer 1 attn scores");
    trainer_step(t, &s); /* no injection: the weights alone make it NaN */
    ck_assert(isnan(s.loss) && !s.skipped && s.weights_nonfinite_since == 2);
    trainer_free(t);

    o.scaling = TRAIN_SCALE_STATIC;
    o.scale = 1024;
    o.precision = FP_FP16;
    t = new_trainer(&o);
    trainer_step(t, &s);
    trainer_step(t, &s);
    ck_assert(s.overflow && s.skipped && s.loss_scale == 1024.0f);
    ck_assert_int_eq(trainer_adam_steps(t), 1);
    trainer_step(t, &s);
    ck_assert(!s.skipped && isfinite(s.loss) && s.loss_scale == 1024.0f);
    ck_assert_int_eq(s.weights_nonfinite_since, 0);
    trainer_free(t);
}
END_TEST

START_TEST(trainer_deterministic_and_learns)
{
    struct train_opts o;
    train_opts_default(&o);
    o.shape = small_cfg;
    o.shape.seq = 16;
    o.batch = 4;
    o.steps = 60;
    o.lr = 1e-2;
    o.clip = 1.0;
    struct trainer *a = new_trainer(&o), *b = new_trainer(&o);
    struct train_step sa, sb;
    double first = 0, last = 0;
    for (int i = 0; i < o.steps; i++) {
        trainer_step(a, &sa);
        trainer_step(b, &sb);
        ck_assert(sa.loss == sb.loss && sa.grad_norm == sb.grad_norm);
        if (i < 5)
            first += sa.loss / 5;
        if (i >= o.steps - 5)
            last += sa.loss / 5;
        ck_assert(sa.clip_coef <= 1.0f);
    }
    size_t bytes = gpt_param_count(&o.shape) * 4;
    ck_assert(memcmp(trainer_master(a), trainer_master(b), bytes) == 0);
    /* from ~log 16 = 2.77 at the start; 60 steps on a 16-token source take off > 0.5 nats */
    ck_assert_double_lt(last, first - 0.5);
    ck_assert_double_gt(last, trainer_loss_floor(a) - 0.3); /* the floor is a floor */
    trainer_free(a);
    trainer_free(b);
}
END_TEST

START_TEST(markov_entropy_is_the_floor)
{
    struct markov *m;
    ck_assert_int_eq(markov_new(&m, 64, 1, NULL), 0);
    double h = markov_entropy(m);
    /* four successors and a 2% leak: between the leak's contribution and log 4 + leak */
    ck_assert_double_gt(h, 0.1);
    ck_assert_double_lt(h, log(4.0) + 0.2);
    struct markov *m2;
    ck_assert_int_eq(markov_new(&m2, 64, 1, NULL), 0);
    ck_assert(markov_entropy(m2) == h);
    int32_t tok[4 * 32], tgt[4 * 32];
    struct rng r;
    rng_seed(&r, 1, 0);
    markov_batch(m, &r, 4, 32, tok, tgt);
    for (int i = 0; i < 4 * 32; i++) {
        ck_assert(tok[i] >= 0 && tok[i] < 64 && tgt[i] >= 0 && tgt[i] < 64);
        if (i % 32 != 31)
            ck_assert_int_eq(tgt[i], tok[i + 1]); /* targets are the next inputs */
    }
    markov_free(m);
    markov_free(m2);
    struct error e = {0};
    ck_assert_int_eq(markov_new(&m, 4, 1, &e), ERR_INVAL);
}
END_TEST

START_TEST(options_are_checked)
{
    struct train_opts o;
    struct error e = {0};
    /* the defaults hold no shape: the caller names its model */
    train_opts_default(&o);
    ck_assert(o.shape.vocab == 0 && o.shape.d == 0 && o.shape.layers == 0 && o.shape.heads == 0 &&
              o.shape.ffn == 0 && o.shape.seq == 0);
    ck_assert_int_eq(train_opts_check(&o, &e), ERR_INVAL);
    ck_assert_msg(strstr(e.msg, "shape is not set"), "%s", e.msg);
    ck_assert_int_eq(train_shape("tiny", &o.shape, &e), 0);
    ck_assert_int_eq(train_opts_check(&o, &e), 0);
    o.lr = -1;
    ck_assert_int_eq(train_opts_check(&o, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "--lr"));
    train_opts_default(&o);
    ck_assert_int_eq(train_shape("tiny", &o.shape, &e), 0);
    o.inject[o.ninject++] = (struct train_inject){TRAIN_INJECT_NAN, 301, 1, 0};
    ck_assert_int_eq(train_opts_check(&o, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "--inject"));
    struct ckpt_policy p;
    ck_assert_int_eq(ckpt_parse("every:0", &p, &e), ERR_INVAL);
    ck_assert_int_eq(ckpt_parse("most", &p, &e), ERR_INVAL);
    ck_assert_int_eq(ckpt_parse("sqrt", &p, &e), 0);
    ck_assert_int_eq(ckpt_segment(&p, 4), 2);
    ck_assert_int_eq(ckpt_segment(&p, 10), 4);
    struct gpt_config bad = small_cfg;
    bad.heads = 3;
    ck_assert_int_eq(gpt_config_check(&bad, &e), ERR_INVAL);
}
END_TEST

/* Lesson 1's panel without a screen: its worker thread trains while ticks give it credit,
 * knobs and injections reach it, a restart joins it (the sanitizer builds watch the threads). */
START_TEST(training_panel_runs_its_worker)
{
    struct eventlog log = {0};
    struct panel_env env = {&panel_training, &log, true, false};
    void *st = NULL;
    struct error e = {0};
    ck_assert_int_eq(panel_training.init(&st, &env, &e), 0);
    ck_assert_int_eq(panel_training.set(st, "batch", "1", &e), 0);
    ck_assert_int_eq(panel_training.set(st, "precision", "fp16", &e), 0);
    ck_assert_int_eq(panel_training.set(st, "nonsense", "1", &e), ERR_INVAL);
    ck_assert_int_eq(panel_training.set(st, "precision", "fp12", &e), ERR_INVAL);
    struct panel_event step = {PANEL_STEP, 0, 1};
    ck_assert(panel_training.on_event(st, &step) & PANEL_REDRAW);
    unsigned long before = log.count;
    ck_assert(panel_training.on_key(st, 'x') & PANEL_HANDLED);
    ck_assert(panel_training.on_key(st, 'c') & PANEL_HANDLED);
    ck_assert(panel_training.on_key(st, 'l') & PANEL_HANDLED);
    struct panel_event play = {PANEL_PLAY, 0, 1}, tick = {PANEL_TICK, 0.2, 1};
    ck_assert(panel_training.on_event(st, &play) & PANEL_ANIMATE);
    bool skipped = false;
    for (double t0 = 0; !skipped && harness_wait(&t0);) { /* until the step is done */
        panel_training.on_event(st, &tick);
        for (unsigned long k = 0; k < log.count - before && k < EVENTLOG_LINES; k++)
            skipped |= strstr(eventlog_get(&log, k), "layer 2 attn scores") != NULL;
    }
    ck_assert_msg(skipped, "the injected NaN is reported with its tensor");
    ck_assert_int_eq(panel_training.on_key(st, '1'), 0);       /* the app's key */
    ck_assert(panel_training.on_key(st, 'p') & PANEL_HANDLED); /* restarts the worker */
    panel_training.on_event(st, &tick);
    panel_training.fini(st);
}
END_TEST

/* The shard plan: units and pieces partition the padded buffer, buckets come in the order
 * the backward pass completes them, chunk edges follow the shards. */
/* The grid (par/layout.h): Megatron-LM's numbering, tensor-parallel rank innermost, the stage
 * outermost; each GPU's place gives back its rank; a group along an axis is the GPUs that
 * differ from it there only, in the order of that coordinate; the model's layers split over
 * the stages (and the interleaved schedule's chunks). */
START_TEST(layout_places_ranks_and_groups)
{
    struct train_opts o;
    train_opts_default(&o);
    ck_assert_int_eq(train_shape("tiny", &o.shape, NULL), 0);
    o.tp = 2, o.pp = 2, o.gpus = 12, o.micro_batches = 2, o.batch = 12;
    ck_assert_int_eq(layout_dp(&o), 3);
    ck_assert_int_eq(layout_check(&o, NULL), 0);
    for (int r = 0; r < o.gpus; r++) {
        struct layout_place pl;
        layout_place(&o, r, 1, &pl);
        ck_assert_int_eq(pl.rank, r);
        ck_assert_int_eq(pl.tprank, r % 2);
        ck_assert_int_eq(pl.dprank, r / 2 % 3);
        ck_assert_int_eq(pl.stage, r / 6);
        ck_assert_int_eq(pl.micro, 12 / (3 * 2));
        ck_assert_int_eq(pl.part.first, pl.stage * o.shape.layers / 2);
        ck_assert(pl.part.embed == (pl.stage == 0) && pl.part.head == (pl.stage == 1));
        for (int a = 0; a < LAYOUT_AXES; a++) {
            ck_assert_int_eq(layout_rank(&pl, a, pl.at[a]), r);
            int g[TRAIN_MAX_GPUS];
            layout_group(&pl, a, g);
            for (int i = 0; i < pl.size[a]; i++) {
                struct layout_place q;
                layout_place(&o, g[i], 1, &q);
                for (int b = 0; b < LAYOUT_AXES; b++)
                    ck_assert_int_eq(q.at[b], b == a ? i : pl.at[b]);
            }
        }
    }
    struct layout_place pl; /* the tensor-parallel group is consecutive, the data-parallel one
                               strides by tp, the pipeline's by dp x tp */
    int g[TRAIN_MAX_GPUS];
    layout_place(&o, 9, 1, &pl);
    layout_group(&pl, LAYOUT_TP, g);
    ck_assert(g[0] == 8 && g[1] == 9);
    layout_group(&pl, LAYOUT_DP, g);
    ck_assert(g[0] == 7 && g[1] == 9 && g[2] == 11);
    layout_group(&pl, LAYOUT_PP, g);
    ck_assert(g[0] == 3 && g[1] == 9);
    /* interleaved, one data-parallel copy: chunk c of stage s is virtual stage c pp + s */
    o.gpus = 4, o.batch = 4, o.micro_batches = 2, o.schedule = SCHED_INTERLEAVED, o.chunks = 2;
    ck_assert_int_eq(layout_chunks(&o), 2);
    layout_place(&o, 3, 1, &pl); /* stage 1 (tp 2) */
    struct gpt_part part;
    layout_chunk_part(&o, &pl, 1, 1, &part);
    ck_assert_int_eq(part.first, 3 * o.shape.layers / 4);
    ck_assert(part.head && !part.embed);
    o.gpus = 6; /* tp x pp does not divide it */
    struct error e = {0};
    ck_assert_int_eq(layout_check(&o, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "does not divide the 6 GPUs"));
}
END_TEST

/* The run's settings table (par/settings.h): each default its help states is the lab's
 * default, a panel's name ('_' for '-', the older aliases) reads the same setting with the
 * same bounds as train's option, and precision takes num/fp.h's names for the formats a run
 * trains in. */
START_TEST(settings_table_states_its_defaults_and_bounds)
{
    struct train_opts lab, o;
    ck_assert_int_eq(train_opts_lab(&lab, NULL), 0);
    ck_assert(lab.lr == TRAIN_LAB_LR && lab.scaling == TRAIN_SCALE_NONE);
    int stated = 0;
    for (const struct setting *st = train_settings; st->name; st++) {
        const char *d = strstr(st->help, "(default ");
        if (!d)
            continue;
        d += strlen("(default ");
        char v[32];
        size_t n = 0;
        while (d[n] && !strchr(";:)", d[n]) && !(d[n] == ',' && d[n + 1] == ' ') && n < 31)
            n++;
        memcpy(v, d, n);
        v[n] = 0;
        memcpy(&o, &lab, sizeof o);
        struct error e = {0};
        ck_assert_msg(settings_set(&o, st->name, v, &e) == 0, "%s %s: %s", st->name, v, e.msg);
        ck_assert_msg(memcmp(&o, &lab, sizeof o) == 0,
                      "--%s: the help's default %s is not the lab's", st->name, v);
        stated++;
    }
    ck_assert_int_ge(stated, 20);
    /* one reader for train and the panels: names, aliases, bounds */
    struct error e = {0};
    memcpy(&o, &lab, sizeof o);
    ck_assert_int_eq(settings_set(&o, "micro_batches", "4", &e), 0);
    ck_assert_int_eq(o.micro_batches, 4);
    ck_assert_int_eq(settings_set(&o, "scale", "1024", &e), 0);
    ck_assert(o.scaling == TRAIN_SCALE_STATIC && o.scale == 1024);
    ck_assert_int_eq(settings_set(&o, "growth", "20", &e), 0);
    ck_assert_int_eq(o.growth_interval, 20);
    ck_assert_int_eq(settings_set(&o, "policy", "every:2", &e), 0);
    ck_assert(o.ckpt.kind == CKPT_EVERY && o.ckpt.every == 2);
    ck_assert_int_eq(settings_set(&o, "init_scale", "3.4e38", &e), 0);
    ck_assert_int_eq(settings_set(&o, "init-scale", "3.5e38", &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "init-scale must be > 0 and finite in fp32"));
    ck_assert_int_eq(settings_set(&o, "precision", "fp8_e4m3", &e), ERR_INVAL);
    ck_assert_int_eq(settings_set(&o, "precision", "bf16", &e), 0);
    ck_assert_int_eq(o.precision, FP_BF16);
    ck_assert_int_eq(settings_set(&o, "sequence_parallel", "on", &e), 0);
    ck_assert(o.sp);
    ck_assert_int_eq(settings_set(&o, "clip", "none", &e), 0);
    ck_assert_int_eq(settings_set(&o, "clip", "0", &e), ERR_INVAL);
    ck_assert_int_eq(settings_set(&o, "batch", "0", &e), ERR_INVAL);
    ck_assert_int_eq(settings_set(&o, "colour", "red", &e), ERR_INVAL);
    ck_assert_int_eq(train_scaling_for(FP_FP16), TRAIN_SCALE_DYNAMIC);
    ck_assert_int_eq(train_scaling_for(FP_BF16), TRAIN_SCALE_NONE);
}
END_TEST

START_TEST(shard_plan_partitions_the_buffer)
{
    struct gpt_config c = small_cfg;
    size_t psi = gpt_param_count(&c);
    for (int n = 1; n <= 7; n++)
        for (int k = 0; k < 3; k++) {
            size_t belems = k == 0 ? 0 : k == 1 ? 100 : psi * 2;
            struct shard_plan p;
            ck_assert_int_eq(shard_plan_init(&p, &c, NULL, n, belems, NULL), 0);
            ck_assert_uint_eq(p.padded % (size_t)n, 0);
            ck_assert_uint_eq(p.shard, (psi + (size_t)n - 1) / (size_t)n);
            ck_assert(p.padded >= psi && p.padded - psi < (size_t)n);
            /* buckets: from the end of the buffer to its start, without gaps */
            size_t end = p.padded;
            for (int b = 0; b < p.nbuckets; b++) {
                ck_assert_uint_eq(p.buckets[b].off + p.buckets[b].len, end);
                ck_assert(belems == 0 || p.buckets[b].len <= belems);
                ck_assert_int_eq(p.buckets[b].unit, shard_unit_at(&p, p.buckets[b].off));
                end = p.buckets[b].off;
            }
            ck_assert_uint_eq(end, 0);
            /* units cover every element once */
            size_t covered = 0;
            for (int u = 0; u <= c.layers; u++)
                for (int r = 0; r < p.units[u].nr; r++)
                    covered += p.units[u].r[r].len;
            ck_assert_uint_eq(covered, p.padded);
            size_t bounds[8];
            shard_bounds(&p, 3, p.padded - 5, bounds);
            ck_assert_uint_eq(bounds[0], 0);
            ck_assert_uint_eq(bounds[n], p.padded - 5);
            for (int i = 1; i < n; i++)
                ck_assert_uint_eq(bounds[i], (size_t)i * p.shard - 3);
            shard_plan_fini(&p);
        }
}
END_TEST

/* Every stage holds the same fp32 master weights after the same steps: they reduce each
 * element around the same ring, in the same order (par/shard.h), in fp32 and in bf16. */
struct stage_run {
    struct train_opts o;
    float *master; /* the whole buffer, gathered from the GPUs' ranges */
    double loss[4];
};

static int stage_device(struct device *d, void *arg, struct error *e)
{
    struct stage_run *r = arg;
    struct trainer *t;
    int rc = trainer_new_on(&t, &r->o, NULL, d, e);
    if (rc)
        return rc;
    struct train_step s;
    for (long i = 0; i < r->o.steps && !rc; i++) {
        rc = trainer_run_step(t, &s, e);
        if (dev_rank(d) == 0)
            r->loss[i] = s.loss;
    }
    size_t off, n;
    trainer_range(t, &off, &n);
    size_t psi = gpt_param_count(&r->o.shape), end = off + n < psi ? off + n : psi;
    if (!rc && (r->o.zero > 0 || dev_rank(d) == 0) && off < end)
        memcpy(r->master + off, trainer_master(t), (end - off) * sizeof(float));
    trainer_free(t);
    return rc;
}

START_TEST(zero_stages_hold_the_same_weights)
{
    enum fp_format fmts[2] = {FP_FP32, FP_BF16};
    size_t psi = gpt_param_count(&small_cfg);
    for (int f = 0; f < 2; f++) {
        struct stage_run r[4];
        for (int z = 0; z < 4; z++) {
            train_opts_default(&r[z].o);
            r[z].o.shape = small_cfg;
            r[z].o.batch = 6;
            r[z].o.steps = 4;
            r[z].o.gpus = 3;
            r[z].o.zero = z;
            r[z].o.precision = fmts[f];
            r[z].o.bucket_bytes = 256; /* many buckets, cut across tensors and shards */
            r[z].master = calloc(psi, sizeof(float));
            struct cluster_config cc;
            cluster_config_init(&cc);
            cc.gpus = 3;
            struct error e = {0};
            struct cluster *cl = cluster_new(&cc, &e);
            ck_assert_ptr_nonnull(cl);
            ck_assert_msg(cluster_run(cl, stage_device, &r[z], &e) == 0, "%s", e.msg);
            cluster_free(cl);
        }
        for (int z = 1; z < 4; z++) {
            ck_assert_msg(memcmp(r[0].master, r[z].master, psi * sizeof(float)) == 0,
                          "stage %d's weights differ from DDP's (%s)", z, f ? "bf16" : "fp32");
            ck_assert(memcmp(r[0].loss, r[z].loss, sizeof r[0].loss) == 0);
        }
        for (int z = 0; z < 4; z++)
            free(r[z].master);
    }
}
END_TEST

/* Parts compose: two parts of the model (layer 0 with the embedding; layer 1 with the head),
 * run micro-batch by micro-batch in GPipe's order with the activations and their gradients
 * handed over as a pipeline's stages would send them, give the whole model's loss and
 * gradients. With one micro-batch the same bits for every tensor but the tied embedding, whose
 * two shares (the head's on the last part, the lookup's on the first) add in another order;
 * with 2 and 4 micro-batches every gradient within 1e-5 of the largest (the batch's sums in
 * another order: fp32 rounding, a few ulps). */
/* gpt_part_gather copies, run by run, what gpt_part_whole_index maps element by element: for
 * the whole model, pipeline stages, tensor-parallel ranks with and without the ends, and
 * expert-parallel ranks (experts in every layer and every other one). And a second draw of the
 * initial weights (kept by gpt_init_params) gives the first one's bits, after a draw of
 * another shape too. */
START_TEST(part_gather_is_the_index_map)
{
    struct gpt_config tiny, moe;
    ck_assert_int_eq(train_shape("tiny", &tiny, NULL), 0);
    moe = tiny;
    moe.moe = (struct gpt_moe){.experts = 4, .top_k = 2, .every = 2};
    struct {
        const struct gpt_config *c;
        struct gpt_part p;
    } cases[] = {
        {&tiny, {.count = 4, .embed = true, .head = true, .slots = 1, .tp = 1}},
        {&tiny, {.first = 1, .count = 2, .embed = false, .head = false, .slots = 1}},
        {&tiny, {.first = 2, .count = 2, .head = true, .slots = 1}},
        {&tiny, {.count = 4, .embed = true, .head = true, .slots = 1, .tp = 2, .tprank = 1}},
        {&tiny, {.first = 0, .count = 2, .embed = true, .slots = 1, .tp = 4, .tprank = 3}},
        {&moe, {.count = 4, .embed = true, .head = true, .slots = 1, .ep = 2, .eprank = 1}},
        {&moe, {.count = 4, .embed = true, .head = true, .slots = 1, .ep = 4, .eprank = 2}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const struct gpt_config *c = cases[k].c;
        if (cases[k].p.count > c->layers)
            cases[k].p.count = c->layers - cases[k].p.first;
        size_t n = gpt_param_count(c), own = gpt_part_param_count(c, &cases[k].p);
        float *whole = malloc(n * sizeof *whole), *mine = malloc(own * sizeof *mine);
        ck_assert(whole && mine);
        for (size_t i = 0; i < n; i++)
            whole[i] = (float)i;
        gpt_part_gather(c, &cases[k].p, whole, mine);
        for (size_t i = 0; i < own; i++)
            ck_assert_msg(mine[i] == whole[gpt_part_whole_index(c, &cases[k].p, i)],
                          "case %zu: element %zu of %zu", k, i, own);
        free(whole);
        free(mine);
    }
    size_t n = gpt_param_count(&tiny), m = gpt_param_count(&moe);
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *x = malloc(m * sizeof *x);
    ck_assert(a && b && x);
    gpt_init_params(&tiny, 7, a);
    gpt_init_params(&moe, 7, x); /* another shape drawn between */
    gpt_init_params(&tiny, 7, b);
    ck_assert(!memcmp(a, b, n * sizeof *a));
    gpt_init_params(&tiny, 8, b); /* and another seed, other weights */
    ck_assert(memcmp(a, b, n * sizeof *a) != 0);
    free(a);
    free(b);
    free(x);
}
END_TEST

START_TEST(parts_compose_into_the_whole_model)
{
    struct gpt_config c = small_cfg;
    int B = 4, T = c.seq, V = c.vocab, d = c.d;
    size_t n = gpt_param_count(&c), emb = (size_t)V * d;
    size_t lp = (n - emb - (size_t)d) / (size_t)c.layers, bt = (size_t)B * T;
    struct gpt *w = NULL;
    ck_assert_int_eq(gpt_new(&w, &c, B, FP_FP32, NULL, NULL, NULL), 0);
    gpt_init_params(&c, 3, gpt_params(w));
    int32_t *tok = malloc(bt * 4), *tgt = malloc(bt * 4);
    struct rng r;
    rng_seed(&r, 5, 0);
    for (size_t i = 0; i < bt; i++)
        tok[i] = (int32_t)rng_below(&r, (uint64_t)V), tgt[i] = (int32_t)rng_below(&r, (uint64_t)V);
    double whole = gpt_step(w, tok, tgt, 1.0f, NULL);
    const float *P = gpt_params(w), *G = gpt_grads(w);
    float scale = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmaxf(scale, fabsf(G[i]));
    const char *pols[3] = {"none", "full", "selective"}; /* recomputation changes no bit */
    for (int k = 0; k < 3; k++)
        for (int M = 1; M <= 4; M *= 2) {
            int mb = B / M;
            size_t mt = (size_t)mb * T;
            struct gpt_part p0 = {.first = 0, .count = 1, .embed = true, .slots = M, .tp = 1},
                            p1 = {.first = 1, .count = 1, .head = true, .slots = M, .tp = 1};
            struct ckpt_policy pol;
            ck_assert_int_eq(ckpt_parse(pols[k], &pol, NULL), 0);
            struct gpt *a = NULL, *b = NULL;
            ck_assert_int_eq(gpt_new_part(&a, &c, mb, FP_FP32, &pol, NULL, &p0, NULL), 0);
            ck_assert_int_eq(gpt_new_part(&b, &c, mb, FP_FP32, &pol, NULL, &p1, NULL), 0);
            ck_assert_uint_eq(gpt_nparams(a), emb + lp);
            ck_assert_uint_eq(gpt_nparams(b), emb + lp + (size_t)d);
            gpt_set_loss_tokens(a, (double)bt);
            gpt_set_loss_tokens(b, (double)bt);
            float *pa = gpt_params(a), *pb = gpt_params(b);
            memcpy(pa, P, (emb + lp) * 4);
            memcpy(pb, P, emb * 4);
            memcpy(pb + emb, P + emb + lp, (lp + (size_t)d) * 4);
            float *act = malloc((size_t)M * mt * d * 4), *dact = malloc((size_t)M * mt * d * 4);
            gpt_part_begin(a);
            gpt_part_begin(b);
            double loss = 0;
            for (int m = 0; m < M; m++) { /* GPipe: every forward, then every backward */
                float *x = act + (size_t)m * mt * d;
                gpt_part_forward(a, m, tok + m * mt, NULL, x, NULL, NULL);
                loss += gpt_part_forward(b, m, NULL, x, NULL, tgt + m * mt, NULL) / M;
            }
            for (int m = M - 1; m >= 0; m--) {
                float *dx = dact + (size_t)m * mt * d;
                gpt_part_backward(b, m, NULL, tgt + m * mt, 1.0f, NULL, dx, m != M - 1, NULL);
                gpt_part_backward(a, m, tok + m * mt, NULL, 1.0f, dx, NULL, m != M - 1, NULL);
            }
            const float *ga = gpt_grads(a), *gb = gpt_grads(b);
            float worst = 0;
            for (size_t i = 0; i < n; i++) {
                float got = i < emb ? ga[i] + gb[i] : i < emb + lp ? ga[i] : gb[i - lp];
                if (M == 1 && i >= emb)
                    ck_assert_msg(got == G[i], "one micro-batch: gradient %zu is %g, not %g", i,
                                  (double)got, (double)G[i]);
                worst = fmaxf(worst, fabsf(got - G[i]));
            }
            ck_assert_msg(worst <= 1e-5f * scale, "%d micro-batches: gradients off by %g of %g", M,
                          (double)worst, (double)scale);
            ck_assert_msg(M == 1 ? loss == whole : fabs(loss - whole) <= 1e-6 * whole,
                          "%d micro-batches: loss %.9g, whole %.9g", M, loss, whole);
            free(act);
            free(dact);
            gpt_free(a);
            gpt_free(b);
        }
    free(tok);
    free(tgt);
    gpt_free(w);
}
END_TEST

/* A tiny-like preset's text with the three things the tiny GPT cares about set. */
static void shape_text(char *buf, size_t n, const char *name, const char *ffn_kind, int kv_heads,
                       const char *tied)
{
    snprintf(buf, n,
             "[model]\nname = %s\nlayers = 4\nd_model = 64\nheads = 4\nkv_heads = %d\n"
             "ffn = 172\nffn_kind = %s\nvocab = 64\ntied = %s\nseq = 64\n",
             name, kv_heads, ffn_kind, tied);
}

/* train_shape is the one way from a preset to the tiny GPT's shape: tiny's values as the
 * preset loader reads them, and a refusal (ERR_INVAL, the shape zeroed, the model and the
 * rule named) of each kind of shape the tiny GPT cannot train. */
START_TEST(train_shape_reads_the_preset_and_refuses_what_cannot_train)
{
    struct error e = {0};
    struct model_shape m;
    struct gpt_config c;
    ck_assert_int_eq(preset_load_model("tiny", &m, NULL), 0);
    ck_assert_int_eq(train_shape("tiny", &c, &e), 0);
    ck_assert_int_eq(c.vocab, m.vocab);
    ck_assert_int_eq(c.d, m.d_model);
    ck_assert_int_eq(c.layers, m.layers);
    ck_assert_int_eq(c.heads, m.heads);
    ck_assert_int_eq(c.ffn, m.ffn);
    ck_assert_int_eq(c.seq, m.seq);
    ck_assert_int_eq(gpt_config_check(&c, &e), 0);

    char text[512];
    shape_text(text, sizeof text, "fine", "swiglu", 4, "true");
    ck_assert_int_eq(preset_parse_model(text, "fine.ini", &m, &e), 0);
    ck_assert_int_eq(train_shape_of(&m, &c, &e), 0);
    ck_assert(c.vocab == 64 && c.d == 64 && c.layers == 4 && c.heads == 4 && c.ffn == 172 &&
              c.seq == 64);

    static const struct {
        const char *name, *ffn_kind;
        int kv_heads;
        const char *tied, *reason;
    } bad[] = {{"gelu-model", "gelu", 4, "true", "swiglu"},
               {"gqa-model", "swiglu", 2, "true", "kv_heads = heads"},
               {"untied-model", "swiglu", 4, "false", "tied embeddings"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        shape_text(text, sizeof text, bad[i].name, bad[i].ffn_kind, bad[i].kv_heads, bad[i].tied);
        ck_assert_int_eq(preset_parse_model(text, "bad.ini", &m, &e), 0);
        c = (struct gpt_config){.vocab = 1, .d = 2, .layers = 3, .heads = 4, .ffn = 5, .seq = 6};
        e = (struct error){0};
        ck_assert_int_eq(train_shape_of(&m, &c, &e), ERR_INVAL);
        ck_assert_int_eq(e.code, ERR_INVAL);
        ck_assert_msg(strstr(e.msg, bad[i].name) == e.msg, "%s", e.msg);
        ck_assert_msg(strstr(e.msg, "the tiny GPT trains"), "%s", e.msg);
        ck_assert_msg(strstr(e.msg, bad[i].reason), "%s", e.msg);
        ck_assert(c.vocab == 0 && c.d == 0 && c.layers == 0 && c.heads == 0 && c.ffn == 0 &&
                  c.seq == 0);
    }

    /* through a file path too, and a preset that does not exist */
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/scalelab-shape.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/untied.ini", dir);
    shape_text(text, sizeof text, "untied", "swiglu", 4, "false");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    ck_assert_int_eq(train_shape(path, &c, &e), ERR_INVAL);
    ck_assert_msg(strstr(e.msg, "untied: the tiny GPT trains"), "%s", e.msg);
    remove(path);
    rmdir(dir);
    c = (struct gpt_config){.vocab = 1, .d = 2, .layers = 3, .heads = 4, .ffn = 5, .seq = 6};
    ck_assert_int_ne(train_shape("nosuch-model", &c, &e), 0);
    ck_assert_ptr_nonnull(strstr(e.msg, "nosuch-model"));
    ck_assert_int_eq(c.vocab, 0);
}
END_TEST

/* A key acts on the next step the screen shows: after step 1, a bad batch and a NaN asked for
 * together both land in step 2, the one the next n shows (never a step computed ahead). */
START_TEST(training_panel_keys_act_on_the_next_step_shown)
{
    struct eventlog log = {0};
    struct panel_env env = {&panel_training, &log, true, false};
    void *st = NULL;
    struct error e = {0};
    ck_assert_int_eq(panel_training.init(&st, &env, &e), 0);
    ck_assert_int_eq(panel_training.set(st, "precision", "fp16", &e), 0);
    struct panel_event step = {PANEL_STEP, 0, 1};
    panel_training.on_event(st, &step);
    struct timespec ms = {0, 50000000}; /* time for a run that computed ahead to do so */
    nanosleep(&ms, NULL);
    ck_assert(panel_training.on_key(st, 'b') & PANEL_HANDLED);
    ck_assert(panel_training.on_key(st, 'x') & PANEL_HANDLED);
    unsigned long before = log.count;
    panel_training.on_event(st, &step);
    bool nan2 = false;
    for (unsigned long k = 0; k < log.count - before && k < EVENTLOG_LINES; k++)
        nan2 |= strstr(eventlog_get(&log, k), "step 2: inf/NaN in layer 2 attn scores") != NULL;
    ck_assert_msg(nan2, "the NaN asked for after step 1 is in step 2");
    panel_training.fini(st);
}
END_TEST

/* Issue 21: OpenBLAS tried again forever when it could not map a matrix buffer. Now a run
 * claims its buffers first (refused when they cannot be had), and a caller without a claim
 * that finds none ends the process with a message: in a child whose address space is limited
 * to what it has plus 64 MiB (less than a buffer), an sgemm ends it, exit 1, within the alarm
 * (a spin would meet the alarm: SIGALRM). Sanitizers reserve terabytes: normal build only. */
START_TEST(blas_buffer_never_spins)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return;
#endif
    int n = 512;
    float *a = calloc((size_t)n * n, 4), *c = calloc((size_t)n * n, 4);
    ck_assert(a && c);
    /* the child inherits the pool: the buffers earlier tests left there are freed first */
    blasbuf_release(0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        FILE *f = fopen("/proc/self/status", "r");
        char line[256];
        long kb = 0;
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "VmSize: %ld kB", &kb) == 1)
                break;
        if (f)
            fclose(f);
        struct rlimit rl = {(rlim_t)(kb + (64 << 10)) << 10, (rlim_t)(kb + (64 << 10)) << 10};
        struct error e = {0};
        int claimed = 0;
        if (kb <= 0 || setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(3);
        if (blasbuf_claim(1, &claimed, NULL, &e) != ERR_NOMEM) /* a claim is refused */
            _exit(4);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, a, n, 0.0f, c,
                    n);
        _exit(0); /* the sgemm had a buffer after all */
    }
    int ws = 0;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 1, "the child: %s %d",
                  WIFEXITED(ws) ? "exit" : "signal",
                  WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
    free(a), free(c);
}
END_TEST

/* The bench's phase timers only read the clock: a step with them on gives the same bits, in
 * every format, and every phase of the model's step (and AdamW) is reached. */
START_TEST(phase_timers_change_no_bit)
{
    const struct gpt_config *c = &small_cfg;
    int32_t tok[SB * 8], tgt[SB * 8];
    random_batch(c, SB, tok, tgt);
    const enum fp_format fmts[] = {FP_FP32, FP_BF16, FP_FP16};
    for (int f = 0; f < 3; f++) {
        struct gpt *g = new_model(c, SB, fmts[f], "selective");
        size_t n = gpt_nparams(g);
        float *master = malloc(n * 4), *want = malloc(n * 4);
        random_params(c, master, 5);
        gpt_set_weights(g, master);
        double loss = gpt_step(g, tok, tgt, 1024.0f, NULL);
        memcpy(want, gpt_grads(g), n * 4);
        struct prof pr = {0};
        prof_attach(&pr);
        double again = gpt_step(g, tok, tgt, 1024.0f, NULL);
        struct adamw a;
        adamw_init(&a, 1e-3, 0.9, 0.999, 1e-8, 0.01);
        adamw_advance(&a);
        float *m = calloc(n, 4), *v = calloc(n, 4);
        adamw_update(&a, master, want, 1.0f, m, v, n);
        prof_attach(NULL);
        ck_assert(memcmp(&loss, &again, sizeof loss) == 0);
        ck_assert(memcmp(want, gpt_grads(g), n * 4) == 0);
        ck_assert_int_eq(pr.depth, 0);
        for (int ph = 0; ph < PROF_PHASES; ph++) /* fp8's quantisation runs only in fp8 */
            ck_assert_msg((pr.seconds[ph] > 0) == (ph != PROF_FP8), "%s: phase %s %s",
                          fp_info(fmts[f])->name, prof_name((enum prof_phase)ph),
                          ph != PROF_FP8 ? "never timed" : "timed");
        free(m), free(v), free(master), free(want);
        gpt_free(g);
    }
}
END_TEST

/* The model and the calculator read checkpoint policies with one parser (base/ckpt.h): they
 * accept and refuse the same names, and agree on the segment length. */
START_TEST(model_and_calculator_share_the_policy_names)
{
    /* One type for the model, the trainer's settings and the calculator (base/ckpt.h): a
     * policy's name reads back as itself, and the model's segments are the calculator's
     * every:K equivalent, at most the layers it has. */
    const char *const names[] = {"none",      "full",    "every:1", "every:3", "every:07", "sqrt",
                                 "selective", "every:0", "every:",  "every:x", "some",     ""};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        struct ckpt_policy a, b;
        struct error e1 = {0};
        int ra = ckpt_parse(names[i], &a, &e1);
        ck_assert_int_eq(ra != 0, i >= 7);
        if (ra)
            continue;
        char buf[24];
        ck_assert_int_eq(ckpt_parse(ckpt_name(buf, sizeof buf, &a), &b, NULL), 0);
        ck_assert(a.kind == b.kind && a.every == b.every);
        for (int layers = 1; layers <= 10; layers++) {
            int k = ckpt_every(&a, layers);
            ck_assert_int_eq(ckpt_segment(&a, layers), k < layers ? k : layers);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, blas_runs_single_threaded);
    tcase_add_test(tc, layout_is_documented_order);
    tcase_add_test(tc, gradients_match_finite_differences);
    tcase_add_test(tc, checkpoint_gradients_bit_identical);
    tcase_add_test(tc, checkpoint_memory_equals_calculator);
    tcase_add_test(tc, seam_calls_are_known_before_the_run);
    tcase_add_test(tc, strategy_calls_are_known_before_the_run);
    tcase_add_test(tc, nonfinite_names_the_first_tensor);
    tcase_add_test(tc, fp16_gradients_underflow_without_scaling);
    tcase_add_test(tc, grad_scaler_semantics);
    tcase_add_test(tc, clip_semantics);
    tcase_add_test(tc, adamw_matches_pytorch_formula);
    tcase_add_test(tc, adamw_fuses_the_clip);
    tcase_add_test(tc, unscale_pass_is_the_plain_loop);
    tcase_add_test(tc, adamw_rounds_in_the_same_pass);
    tcase_add_test(tc, skipped_step_leaves_state_untouched);
    tcase_add_test(tc, no_scaler_applies_nonfinite_steps);
    tcase_add_test(tc, trainer_deterministic_and_learns);
    tcase_add_test(tc, markov_entropy_is_the_floor);
    tcase_add_test(tc, options_are_checked);
    tcase_add_test(tc, training_panel_runs_its_worker);
    tcase_add_test(tc, training_panel_keys_act_on_the_next_step_shown);
    tcase_add_test(tc, layout_places_ranks_and_groups);
    tcase_add_test(tc, settings_table_states_its_defaults_and_bounds);
    tcase_add_test(tc, shard_plan_partitions_the_buffer);
    tcase_add_test(tc, zero_stages_hold_the_same_weights);
    tcase_add_test(tc, parts_compose_into_the_whole_model);
    tcase_add_test(tc, part_gather_is_the_index_map);
    tcase_add_test(tc, train_shape_reads_the_preset_and_refuses_what_cannot_train);
    tcase_add_test(tc, phase_timers_change_no_bit);
    tcase_add_test(tc, blas_buffer_never_spins);
    tcase_add_test(tc, model_and_calculator_share_the_policy_names);
    suite_add_tcase(s, tc);
    return harness_run(s);
}
