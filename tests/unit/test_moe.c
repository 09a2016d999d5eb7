/* Unit tests of the mixture of experts (src/model/moe.h and its layer in src/model/gpt.c):
 * the router on cases worked by hand (top-k, Switch's and Mixtral's gates, capacity and the
 * order choices take rows in, dropped choices, the load-balancing loss and its value under
 * even routing), the whole model's gradients against central differences of a reference
 * written here in double precision, the parameter layout, and the memory the model charges
 * against the calculator's list (calc/activ.h), for every checkpoint policy. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/experts.h"
#include "base/rng.h"
#include "calc/activ.h"
#include "calc/params.h"
#include "gptref.h"
#include "harness.h"
#include "model/gpt.h"
#include "model/moe.h"
#include "par/trainer.h"

/* ------------------------------------------------------------------ the router */

struct route_bufs {
    float probs[64 * 8], gate[64 * 2];
    int32_t choice[64 * 2], row[64 * 2], off[8], kept[8], load[8];
};

static struct moe_route route_init(struct route_bufs *b, int n, int E, int k)
{
    return (struct moe_route){.n = n,
                              .experts = E,
                              .k = k,
                              .probs = b->probs,
                              .choice = b->choice,
                              .row = b->row,
                              .gate = b->gate,
                              .off = b->off,
                              .kept = b->kept,
                              .load = b->load};
}

/* Five tokens over three experts, top-2, by hand: logits chosen so that the probabilities
 * are known (z = log w gives p = w / sum w). */
START_TEST(routing_by_hand)
{
    static const float w[5][3] = {{5, 3, 2}, {1, 6, 3}, {6, 1, 3}, {2, 2, 6}, {7, 2, 1}};
    float z[15];
    for (int t = 0; t < 5; t++)
        for (int e = 0; e < 3; e++)
            z[t * 3 + e] = logf(w[t][e]);
    struct route_bufs b;
    struct moe_route r = route_init(&b, 5, 3, 2);
    double aux = moe_route(&r, z, 0, 0.01);
    /* probabilities w/10; choices: the two largest, most probable first (token 3's tie of
     * experts 0 and 1 below expert 2 goes to the lower index) */
    static const int want[5][2] = {{0, 1}, {1, 2}, {0, 2}, {2, 0}, {0, 1}};
    for (int t = 0; t < 5; t++) {
        ck_assert_float_eq_tol(b.probs[t * 3], w[t][0] / 10, 1e-7);
        for (int j = 0; j < 2; j++)
            ck_assert_int_eq(b.choice[t * 2 + j], want[t][j]);
        /* Mixtral: renormalised over the two */
        double s = w[t][want[t][0]] + w[t][want[t][1]];
        ck_assert_float_eq_tol(b.gate[t * 2], w[t][want[t][0]] / s, 1e-6);
    }
    /* loads: expert 0 chosen by tokens 0, 2, 3, 4; expert 1 by 0, 1, 4; expert 2 by 1, 2, 3 */
    ck_assert_int_eq(b.load[0], 4);
    ck_assert_int_eq(b.load[1], 3);
    ck_assert_int_eq(b.load[2], 3);
    /* aux = α E / (k n^2) Σ_e load_e Σ_t p_te: Σ_t p = (21, 14, 15) / 10 */
    double want_aux = 0.01 * 3 / (2.0 * 25) * (4 * 2.1 + 3 * 1.4 + 3 * 1.5);
    ck_assert_double_eq_tol(aux, want_aux, 1e-6 * want_aux); /* fp32 probabilities */
    ck_assert_int_eq(r.dropped, 0);
    /* no capacity: rows packed expert by expert, first choices before second ones */
    ck_assert_int_eq(b.off[0], 0);
    ck_assert_int_eq(b.off[1], 4);
    ck_assert_int_eq(b.off[2], 7);
    ck_assert_int_eq(b.row[0 * 2 + 0], 0); /* token 0's first choice, expert 0: its first row */
    ck_assert_int_eq(b.row[3 * 2 + 1], 3); /* token 3's second choice comes after 0, 2, 4's */

    /* capacity factor 0.5: cap = ceil(0.5 x 2 x 5 / 3) = 2; first choices first, in order:
     * expert 0 takes tokens 0 and 2 (first choices), then token 4's first choice is dropped;
     * expert 1 takes token 1 (first) and token 0 (second); expert 2 takes token 3 (first)
     * and token 1 (second); token 2's and 3's second choices are dropped, as is token 4's. */
    r = route_init(&b, 5, 3, 2);
    moe_route(&r, z, 0.5, 0.01);
    ck_assert_int_eq(r.cap, 2);
    ck_assert_int_eq(r.dropped, 10 - 6);
    static const int rows[5][2] = {{0, 3}, {2, 5}, {1, -1}, {4, -1}, {-1, -1}};
    for (int t = 0; t < 5; t++)
        for (int j = 0; j < 2; j++)
            ck_assert_int_eq(b.row[t * 2 + j], rows[t][j]);
    for (int e = 0; e < 3; e++)
        ck_assert_int_eq(b.kept[e], 2);

    /* top-1 (Switch): the gate is the probability itself, not renormalised to 1 */
    r = route_init(&b, 5, 3, 1);
    moe_route(&r, z, 0, 0.01);
    ck_assert_float_eq_tol(b.gate[1], 0.6f, 1e-6);
    ck_assert_int_eq(b.choice[1], 1);
}
END_TEST

/* Even routing gives aux = α for any k (Switch's normalisation, Megatron-LM's with k), and the
 * capacity formula: ceil(C k n / E), at most n; E cap rows, or k n without a limit. */
START_TEST(aux_loss_and_capacity)
{
    for (int k = 1; k <= 2; k++) {
        /* 8 tokens over 4 experts, all probabilities equal: ties go to the lowest index, so
         * make each token prefer a different pair */
        float z[8 * 4];
        for (int t = 0; t < 8; t++)
            for (int e = 0; e < 4; e++)
                z[t * 4 + e] = ((e - t) % 4 + 4) % 4 < k ? 1e-6f : 0;
        struct route_bufs b;
        struct moe_route r = route_init(&b, 8, 4, k);
        double aux = moe_route(&r, z, 0, 0.02);
        for (int e = 0; e < 4; e++)
            ck_assert_int_eq(b.load[e], 2 * k);
        ck_assert_double_eq_tol(aux, 0.02, 1e-6);
    }
    ck_assert(experts_capacity(256, 8, 2, 1.0) == 64);
    ck_assert(experts_capacity(256, 8, 2, 1.25) == 80);
    ck_assert(experts_capacity(10, 4, 1, 1.5) == 4); /* ceil(3.75) */
    ck_assert(experts_capacity(10, 2, 2, 8) == 10);  /* never more than every token */
    ck_assert(experts_capacity(10, 2, 2, 0) == 10);
    ck_assert(experts_rows(256, 8, 2, 1.25) == 8 * 80);
    ck_assert(experts_rows(256, 8, 2, 0) == 512);
    /* the routing kept for the backward pass is a table of words, each array after the last */
    int32_t words[3 * 10 * 2 + 3 * 4];
    ck_assert_uint_eq(moe_table_words(10, 2, 4), sizeof words / sizeof *words);
    struct moe_table t = moe_table_at(words, 10, 2, 4);
    ck_assert_ptr_eq(t.choice, words);
    ck_assert_ptr_eq(t.row, words + 20);
    ck_assert_ptr_eq((void *)t.gate, (void *)(words + 40));
    ck_assert_ptr_eq(t.off, words + 60);
    ck_assert_ptr_eq(t.kept, words + 64);
    ck_assert_ptr_eq(t.load, words + 68);
}
END_TEST

/* The router's backward against central differences of a scalar of its outputs, in double:
 * f = Σ_tj c_tj g_tj + aux (c fixed weights), through softmax, top-k and renormalisation, the
 * aux term's counts held constant (the choices do not change for a small step). */
START_TEST(routing_backward)
{
    for (int k = 1; k <= 2; k++) {
        struct rng rg;
        rng_seed(&rg, 5, (uint64_t)k);
        enum { N = 6, E = 5 };
        float z[N * E], dg[N * 2], dz[N * E];
        for (int i = 0; i < N * E; i++)
            z[i] = (float)rng_normal(&rg);
        for (int i = 0; i < N * k; i++)
            dg[i] = (float)rng_normal(&rg);
        struct route_bufs b;
        struct moe_route r = route_init(&b, N, E, k);
        moe_route(&r, z, 0, 0.05);
        moe_route_backward(&r, dg, 0.05, 1.0, dz);
        for (int i = 0; i < N * E; i++) {
            double f[2], keep = z[i], h = 1e-3;
            for (int s = 0; s < 2; s++) {
                z[i] = (float)(keep + (s ? -h : h));
                struct route_bufs b2;
                struct moe_route r2 = route_init(&b2, N, E, k);
                f[s] = moe_route(&r2, z, 0, 0.05);
                for (int j = 0; j < N * k; j++)
                    f[s] += (double)dg[j] * b2.gate[j];
            }
            z[i] = (float)keep;
            double fd = (f[0] - f[1]) / (2 * h);
            /* fp32 logits moved by 1e-3: the float rounding of z (6e-8) over h, ~1e-4 */
            ck_assert_msg(fabs(dz[i] - fd) <= 2e-4 + 1e-3 * fabs(fd), "k %d logit %d: %g vs %g", k,
                          i, (double)dz[i], fd);
        }
    }
}
END_TEST

/* ------------------------------------------------------------------ the model in double */

/* A shape with every kind of layer: two layers, experts in layer 0 only (every 2), 4 experts
 * of width 12, top-2. */
static struct gpt_config moe_cfg(int every, double capacity)
{
    struct gpt_config c = {.vocab = 16, .d = 16, .layers = 2, .heads = 2, .ffn = 12, .seq = 8};
    c.moe = (struct gpt_moe){4, 2, every, capacity, 0.05};
    return c;
}

/* The calculator's shape of moe_cfg's model with L layers (calc/preset.h). */
static struct model_shape moe_shape(int L, int every, double capacity)
{
    return (struct model_shape){.name = "m",
                                .layers = L,
                                .d_model = 16,
                                .heads = 2,
                                .kv_heads = 2,
                                .ffn = 12,
                                .vocab = 16,
                                .seq = 8,
                                .ffn_kind = FFN_SWIGLU,
                                .tied = true,
                                .experts = 4,
                                .top_k = 2,
                                .moe_every = every,
                                .capacity_factor = capacity};
}

/* Tensor (layer l, kind, expert) of the flat buffer p. */
static const double *tensor(const struct gpt_config *c, const double *p, int l, enum gpt_kind k,
                            int expert)
{
    for (size_t i = 0; i < gpt_tensor_count(c); i++) {
        struct gpt_tensor t = gpt_tensor_at(c, i);
        if (t.layer == l && t.kind == k && t.expert == expert)
            return p + t.offset;
    }
    ck_abort_msg("no tensor %d of layer %d expert %d", k, l, expert);
    return NULL;
}

/* y [d] = SwiGLU expert e of layer l on x [d]. */
static void ref_ffn(const struct gpt_config *c, const double *p, int l, int e, const double *x,
                    double *y)
{
    int d = c->d, F = c->ffn;
    double g[64], u[64];
    ref_lin(g, tensor(c, p, l, GPT_W_GATE, e), x, F, d);
    ref_lin(u, tensor(c, p, l, GPT_W_UP, e), x, F, d);
    for (int j = 0; j < F; j++)
        g[j] = g[j] / (1 + exp(-g[j])) * u[j];
    ref_lin(y, tensor(c, p, l, GPT_W_DOWN, e), g, d, F);
}

/* The mixture on the N rows of h, added into x; returns the load-balancing loss. Written from
 * the definitions (model/moe.h's): softmax, top-k, gates, the capacity's order, aux. */
static double ref_moe(const struct gpt_config *c, const double *p, int l, const double *h,
                      double *x, int N)
{
    int d = c->d, E = c->moe.experts, k = c->moe.top_k;
    double C = c->moe.capacity_factor;
    int cap = C > 0 ? (int)fmin(ceil(C * k * N / E), N) : N;
    double *prob = calloc((size_t)N * E, 8), y[64];
    int *ch = calloc((size_t)N * k, sizeof(int)), kept[64] = {0}, load[64] = {0};
    bool *in = calloc((size_t)N * k, 1);
    for (int t = 0; t < N; t++) {
        double z[64], mx = -1e300, s = 0;
        ref_lin(z, tensor(c, p, l, GPT_ROUTER, -1), h + (size_t)t * d, E, d);
        for (int e = 0; e < E; e++)
            mx = fmax(mx, z[e]);
        for (int e = 0; e < E; e++)
            s += exp(z[e] - mx);
        for (int e = 0; e < E; e++)
            prob[t * E + e] = exp(z[e] - mx) / s;
        for (int j = 0; j < k; j++) {
            int best = -1;
            for (int e = 0; e < E; e++) {
                bool used = j == 1 && ch[t * k] == e;
                if (!used && (best < 0 || prob[t * E + e] > prob[t * E + best]))
                    best = e;
            }
            ch[t * k + j] = best;
            load[best]++;
        }
    }
    for (int j = 0; j < k; j++)
        for (int t = 0; t < N; t++)
            in[t * k + j] = kept[ch[t * k + j]]++ < cap;
    for (int t = 0; t < N; t++) {
        double s = 0;
        for (int j = 0; j < k; j++)
            s += prob[t * E + ch[t * k + j]];
        for (int j = 0; j < k; j++) {
            if (!in[t * k + j])
                continue;
            double g = prob[t * E + ch[t * k + j]] / (k == 1 ? 1 : s);
            ref_ffn(c, p, l, ch[t * k + j], h + (size_t)t * d, y);
            for (int i = 0; i < d; i++)
                x[(size_t)t * d + i] += g * y[i];
        }
    }
    double aux = 0;
    for (int e = 0; e < E; e++) {
        double ps = 0;
        for (int t = 0; t < N; t++)
            ps += prob[t * E + e];
        aux += load[e] * ps;
    }
    free(prob), free(ch), free(in);
    return c->moe.aux_coef * E / ((double)k * N * N) * aux;
}

/* The loss of the model in double: the mean cross-entropy plus every expert layer's aux. The
 * routing is over all B T tokens of the batch at once, as the model's. */
static double ref_loss(const struct gpt_config *c, const double *p, const int32_t *tok,
                       const int32_t *tgt, int B)
{
    int V = c->vocab, d = c->d, L = c->layers, H = c->heads, T = c->seq, hd = d / H, N = B * T;
    size_t nd = (size_t)N * d;
    double *x = calloc(nd, 8), *h = calloc(nd, 8), *q = calloc(nd, 8), *k = calloc(nd, 8);
    double *v = calloc(nd, 8), *o = calloc(nd, 8), tmp[64], lg[64], loss = 0, aux = 0;
    for (int t = 0; t < N; t++)
        memcpy(x + (size_t)t * d, p + (size_t)tok[t] * d, (size_t)d * 8);
    for (int l = 0; l < L; l++) {
        for (int t = 0; t < N; t++) {
            ref_rms(h + t * d, x + t * d, tensor(c, p, l, GPT_ATTN_NORM, -1), d);
            ref_lin(q + t * d, tensor(c, p, l, GPT_WQ, -1), h + t * d, d, d);
            ref_lin(k + t * d, tensor(c, p, l, GPT_WK, -1), h + t * d, d, d);
            ref_lin(v + t * d, tensor(c, p, l, GPT_WV, -1), h + t * d, d, d);
            for (int hh = 0; hh < H; hh++) {
                ref_rope(q + t * d + hh * hd, t % T, hd);
                ref_rope(k + t * d + hh * hd, t % T, hd);
            }
        }
        for (int b = 0; b < B; b++)
            for (int hh = 0; hh < H; hh++)
                for (int i = 0; i < T; i++) {
                    double s[64], mx = -1e300, sum = 0;
                    int r = b * T + i;
                    for (int j = 0; j <= i; j++) {
                        s[j] = 0;
                        for (int e = 0; e < hd; e++)
                            s[j] += q[r * d + hh * hd + e] * k[(b * T + j) * d + hh * hd + e];
                        s[j] /= sqrt((double)hd);
                        mx = fmax(mx, s[j]);
                    }
                    for (int j = 0; j <= i; j++)
                        sum += s[j] = exp(s[j] - mx);
                    for (int e = 0; e < hd; e++) {
                        double acc = 0;
                        for (int j = 0; j <= i; j++)
                            acc += s[j] / sum * v[(b * T + j) * d + hh * hd + e];
                        o[r * d + hh * hd + e] = acc;
                    }
                }
        for (int t = 0; t < N; t++) {
            ref_lin(tmp, tensor(c, p, l, GPT_WO, -1), o + t * d, d, d);
            for (int j = 0; j < d; j++)
                x[t * d + j] += tmp[j];
            ref_rms(h + t * d, x + t * d, tensor(c, p, l, GPT_MLP_NORM, -1), d);
        }
        if (gpt_layer_moe(c, l)) {
            aux += ref_moe(c, p, l, h, x, N);
        } else {
            for (int t = 0; t < N; t++) {
                double g[64], u[64], m[64];
                ref_lin(g, tensor(c, p, l, GPT_W_GATE, -1), h + t * d, c->ffn, d);
                ref_lin(u, tensor(c, p, l, GPT_W_UP, -1), h + t * d, c->ffn, d);
                for (int j = 0; j < c->ffn; j++)
                    g[j] = g[j] / (1 + exp(-g[j])) * u[j];
                ref_lin(m, tensor(c, p, l, GPT_W_DOWN, -1), g, d, c->ffn);
                for (int j = 0; j < d; j++)
                    x[t * d + j] += m[j];
            }
        }
    }
    const double *wf = p + gpt_param_count(c) - d;
    for (int t = 0; t < N; t++) {
        ref_rms(h + t * d, x + t * d, wf, d);
        ref_lin(lg, p, h + t * d, V, d);
        double mx = -1e300, s = 0;
        for (int j = 0; j < V; j++)
            mx = fmax(mx, lg[j]);
        for (int j = 0; j < V; j++)
            s += exp(lg[j] - mx);
        loss += log(s) + mx - lg[tgt[t]];
    }
    free(x), free(h), free(q), free(k), free(v), free(o);
    return loss / N + aux;
}

/* Every tensor of the model, 6 elements each (the first, the last, 4 at random): the
 * analytic gradient (fp32) against central differences of the double reference with h = 1e-5
 * (truncation ~h^2, rounding ~1e-16/h: both far below the tolerance). Tolerance 1e-4 of the
 * tensor's largest gradient plus 1e-3 relative, as the dense model's test (test_train.c):
 * fp32's errors are ~1e-6 of the scale, a wrong formula is off by O(1). The routing is the
 * same on both sides of each difference (a choice a step of 1e-5 would flip fails the
 * loss's check first). With a capacity of 0.75 some choices are dropped: their tokens pass
 * through the residual alone, and the kept choice keeps the weight it had. */
static void check_gradients(struct gpt_config c, const char *ckpt, int B)
{
    struct ckpt_policy pol;
    struct gpt *g = NULL;
    ck_assert_int_eq(ckpt_parse(ckpt, &pol, NULL), 0);
    struct error e = {0};
    ck_assert_msg(gpt_new(&g, &c, B, FP_FP32, &pol, NULL, &e) == 0, "%s", e.msg);
    size_t n = gpt_nparams(g);
    ck_assert_uint_eq(n, gpt_param_count(&c));
    int32_t tok[4 * 8], tgt[4 * 8];
    random_batch(&c, B, tok, tgt);
    random_params(&c, gpt_params(g), 3);
    double loss = gpt_step(g, tok, tgt, 1.0f, NULL);
    struct gpt_diag dg;
    gpt_diag(g, &dg);
    if (c.moe.capacity_factor > 0)
        ck_assert_msg(dg.dropped > 0, "capacity %g dropped nothing", c.moe.capacity_factor);
    ck_assert(dg.aux_loss > 0);
    const float *grad = gpt_grads(g);
    double *pd = malloc(n * 8);
    for (size_t i = 0; i < n; i++)
        pd[i] = gpt_params(g)[i];
    double ref = ref_loss(&c, pd, tok, tgt, B);
    ck_assert_msg(fabs(loss - ref) / ref <= 1e-5, "loss %.9g, reference %.9g", loss, ref);
    struct rng r;
    rng_seed(&r, 11, 3);
    for (size_t ti = 0; ti < gpt_tensor_count(&c); ti++) {
        struct gpt_tensor t = gpt_tensor_at(&c, ti);
        size_t m = (size_t)t.rows * t.cols;
        double scale = 0;
        for (size_t j = 0; j < m; j++)
            scale = fmax(scale, fabs(grad[t.offset + j]));
        for (int s = 0; s < 6; s++) {
            size_t j = t.offset + (s == 0 ? 0 : s == 1 ? m - 1 : rng_below(&r, m));
            double keep = pd[j], h = 1e-5;
            pd[j] = keep + h;
            double up = ref_loss(&c, pd, tok, tgt, B);
            pd[j] = keep - h;
            double down = ref_loss(&c, pd, tok, tgt, B);
            pd[j] = keep;
            double fd = (up - down) / (2 * h);
            ck_assert_msg(fabs(grad[j] - fd) <= 1e-4 * scale + 1e-3 * fabs(fd) + 1e-9,
                          "%s (%s) %s layer %d expert %d element %zu: analytic %.9g, finite "
                          "difference %.9g",
                          ckpt, c.moe.capacity_factor > 0 ? "capacity" : "dropless",
                          gpt_kind_name(t.kind), t.layer, t.expert, j - t.offset, (double)grad[j],
                          fd);
        }
    }
    free(pd);
    gpt_free(g);
}

START_TEST(gradients_match_finite_differences)
{
    check_gradients(moe_cfg(1, 0), "none", 2);    /* every layer, no limit */
    check_gradients(moe_cfg(2, 0.75), "none", 2); /* layer 0, drops */
    struct gpt_config top1 = moe_cfg(1, 1.0);
    top1.moe.top_k = 1; /* Switch: the gate is the probability */
    check_gradients(top1, "none", 2);
}
END_TEST

/* Recomputation runs the same routing: every checkpoint policy gives the same bits. */
START_TEST(checkpointing_gives_the_same_bits)
{
    struct gpt_config c = moe_cfg(1, 0.75);
    c.layers = 3;
    const char *pol[] = {"none", "full", "every:2", "selective"};
    float *first = NULL;
    size_t n = gpt_param_count(&c);
    for (int i = 0; i < 4; i++) {
        struct ckpt_policy p;
        struct gpt *g = NULL;
        ck_assert_int_eq(ckpt_parse(pol[i], &p, NULL), 0);
        ck_assert_int_eq(gpt_new(&g, &c, 2, FP_BF16, &p, NULL, NULL), 0);
        int32_t tok[16], tgt[16];
        random_batch(&c, 2, tok, tgt);
        random_params(&c, gpt_params(g), 4);
        gpt_set_weights(g, gpt_params(g));
        gpt_step(g, tok, tgt, 1.0f, NULL);
        if (!first) {
            first = malloc(n * sizeof *first);
            memcpy(first, gpt_grads(g), n * sizeof *first);
        } else {
            ck_assert_msg(memcmp(first, gpt_grads(g), n * sizeof *first) == 0, "%s differs",
                          pol[i]);
        }
        ck_assert_uint_eq(gpt_act_live(g), 0); /* every charge given back */
        gpt_free(g);
    }
    free(first);
}
END_TEST

/* The layout: the router and the experts of an expert layer after mlp_norm, expert by expert;
 * the counts against calc/params.h's (total and active) for the same shape. */
START_TEST(layout_and_counts)
{
    struct gpt_config c = moe_cfg(2, 0);
    size_t off = 0, d = 16, f = 12;
    for (size_t i = 0; i < gpt_tensor_count(&c); i++) {
        struct gpt_tensor t = gpt_tensor_at(&c, i);
        ck_assert_uint_eq(t.offset, off);
        off += (size_t)t.rows * t.cols;
        ck_assert_int_eq(gpt_kind_at(&c, t.offset), t.kind);
    }
    ck_assert_uint_eq(off, gpt_param_count(&c));
    /* 2 + 9 L, 3E - 2 more for the one expert layer */
    ck_assert_uint_eq(gpt_tensor_count(&c), 2 + 18 + 10);
    struct gpt_tensor r = gpt_tensor_at(&c, 7), e3 = gpt_tensor_at(&c, 8 + 9);
    ck_assert_int_eq(r.kind, GPT_ROUTER);
    ck_assert_int_eq(r.rows, 4);
    ck_assert_int_eq(e3.kind, GPT_W_GATE);
    ck_assert_int_eq(e3.expert, 3);
    size_t dense = 2 * d + 4 * d * d + 3 * d * f;
    size_t moe = 2 * d + 4 * d * d + 4 * (3 * d * f + d);
    ck_assert_uint_eq(gpt_param_count(&c), 16 * d + dense + moe + d);
    ck_assert_uint_eq(gpt_active_param_count(&c), gpt_param_count(&c) - 2 * 3 * d * f);
    struct model_shape m = moe_shape(2, 2, 0);
    ck_assert(params_total(&m) == (double)gpt_param_count(&c));
    ck_assert(params_active(&m) == (double)gpt_active_param_count(&c));
    struct gpt_config from;
    ck_assert_int_eq(train_shape_of(&m, &from, NULL), 0);
    ck_assert_int_eq(from.moe.experts, 4);
    ck_assert_uint_eq(gpt_param_count(&from), gpt_param_count(&c));
}
END_TEST

/* The activations a model with experts charges, at its peak, are calc/activ.h's prediction for
 * the same shape, batch, precision and policy, to the byte. */
START_TEST(activation_peak_is_predicted)
{
    const char *pol[] = {"none", "full", "every:2", "sqrt", "selective"};
    for (int every = 1; every <= 2; every++)
        for (int cap = 0; cap < 2; cap++)
            for (int fmt = 0; fmt < 2; fmt++)
                for (int i = 0; i < 5; i++) {
                    struct gpt_config c = moe_cfg(every, cap ? 1.25 : 0);
                    c.layers = 3;
                    struct model_shape m = moe_shape(3, every, c.moe.capacity_factor);
                    struct ckpt_policy p;
                    struct gpt *g = NULL;
                    enum fp_format f = fmt ? FP_BF16 : FP_FP32;
                    ck_assert_int_eq(ckpt_parse(pol[i], &p, NULL), 0);
                    ck_assert_int_eq(gpt_new(&g, &c, 3, f, &p, NULL, NULL), 0);
                    int32_t tok[24], tgt[24];
                    random_batch(&c, 3, tok, tgt);
                    random_params(&c, gpt_params(g), 5);
                    gpt_step(g, tok, tgt, 1.0f, NULL);
                    struct activ_config ac = {.micro_batch = 3,
                                              .seq = 8,
                                              .tp = 1,
                                              .bytes = fmt ? 2 : 4,
                                              .attention = ACTIV_EAGER}; /* the model's at cp 1 */
                    struct activ_total at; /* the model's policy is the calculator's */
                    activ_total(&m, &ac, &p, 3, true, true, &at);
                    ck_assert_msg((double)gpt_mem_bytes(g, GPT_MEM_ACTIVATIONS) == at.peak,
                                  "every %d capacity %d %s %s: measured %zu, predicted %.0f", every,
                                  cap, fmt ? "bf16" : "fp32", pol[i],
                                  gpt_mem_bytes(g, GPT_MEM_ACTIVATIONS), at.peak);
                    gpt_free(g);
                }
}
END_TEST

/* Dropless expert parallelism's seam for one GPU, rank 0 of two, as if the other routed as it
 * does: the counts for its experts come back twice, and as many rows arrive (zeros: the
 * booking reads the counts, not the values). */
static void twin_counts(void *ctx, const int32_t *send, int32_t *recv, size_t n, const char *what)
{
    (void)ctx, (void)what;
    for (size_t j = 0; j < 2; j++)
        memcpy(recv + j * (n / 2), send, n / 2 * sizeof *recv);
}

static void twin_rows(void *ctx, const float *send, const size_t *sendcounts, float *recv,
                      const size_t *recvcounts, const char *what)
{
    (void)ctx, (void)send, (void)sendcounts, (void)what;
    memset(recv, 0, (recvcounts[0] + recvcounts[1]) * sizeof *recv);
}

/* Dropless, a layer's kept expert tensors are booked at the rows its experts held (the step's
 * counts, not the arena's room for every token of the group): under every policy the peak is the
 * calculator's given those rows, per layer (activ_config's ep_rows), which lie between uniform
 * routing's and the bound's here, and differ from both. */
START_TEST(dropless_activations_follow_the_counts)
{
    const char *pol[] = {"none", "full", "every:2", "sqrt", "selective"};
    for (int every = 1; every <= 2; every++)
        for (int i = 0; i < 5; i++) {
            struct gpt_config c = moe_cfg(every, 0);
            c.layers = 3;
            struct model_shape m = moe_shape(3, every, 0);
            struct ckpt_policy p;
            struct gpt *g = NULL;
            ck_assert_int_eq(ckpt_parse(pol[i], &p, NULL), 0);
            struct gpt_alloc seam = {.ep_alltoallv = twin_rows, .ep_counts = twin_counts};
            struct gpt_part part = {.count = 3, .embed = true, .head = true, .slots = 1, .ep = 2};
            ck_assert_int_eq(gpt_new_part(&g, &c, 3, FP_BF16, &p, &seam, &part, NULL), 0);
            int32_t tok[24], tgt[24];
            random_batch(&c, 3, tok, tgt);
            float *whole = malloc(gpt_param_count(&c) * sizeof *whole);
            ck_assert_ptr_nonnull(whole);
            random_params(&c, whole, 5); /* the whole model's, its share of them */
            gpt_part_gather(&c, &part, whole, gpt_params(g));
            free(whole);
            gpt_step(g, tok, tgt, 1.0f, NULL);
            struct gpt_diag d;
            gpt_diag(g, &d);
            double rows[3] = {0};
            int nm = gpt_moe_layers(&c);
            for (int l = 0; l < nm; l++) /* its experts' own choices, twice */
                rows[l] = 2.0 * (d.expert_load[l * 4] + d.expert_load[l * 4 + 1]);
            for (int l = 0; l < nm; l++)
                ck_assert_uint_eq(d.expert_rows_at_peak[l], (unsigned)rows[l]);
            struct activ_config ac = {
                .micro_batch = 3, .seq = 8, .tp = 1, .bytes = 2, .attention = ACTIV_EAGER, .ep = 2};
            struct activ_total at, uni, worst;
            activ_total(&m, &ac, &p, 3, true, true, &worst);
            ac.ep_uniform = true;
            activ_total(&m, &ac, &p, 3, true, true, &uni);
            ac.ep_rows = rows;
            activ_total(&m, &ac, &p, 3, true, true, &at);
            double got = (double)gpt_mem_bytes(g, GPT_MEM_ACTIVATIONS);
            ck_assert_msg(got == at.peak && got < worst.peak && uni.peak < worst.peak,
                          "every %d %s: measured %.0f, predicted %.0f at rows %g %g %g, uniform "
                          "%.0f, the bound %.0f",
                          every, pol[i], got, at.peak, rows[0], rows[1], rows[2], uni.peak,
                          worst.peak);
            gpt_free(g);
        }
}
END_TEST

/* Bad shapes are refused with what is allowed. */
START_TEST(bad_shapes)
{
    struct gpt_config c = moe_cfg(1, 0);
    struct error e = {0};
    c.moe.experts = 65;
    ck_assert_int_eq(gpt_config_check(&c, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "2 to 64"));
    c = moe_cfg(1, 0);
    c.moe.top_k = 3;
    ck_assert_int_eq(gpt_config_check(&c, &e), ERR_INVAL);
    c = moe_cfg(3, 0); /* 2 layers */
    ck_assert_int_eq(gpt_config_check(&c, &e), ERR_INVAL);
    c = moe_cfg(1, -1);
    ck_assert_int_eq(gpt_config_check(&c, &e), ERR_INVAL);
    c = moe_cfg(1, 0);
    struct gpt *g = NULL;
    struct gpt_part tp2 = {
        .first = 0, .count = 2, .embed = true, .head = true, .slots = 1, .tp = 2};
    ck_assert_int_eq(gpt_new_part(&g, &c, 1, FP_FP32, NULL, NULL, &tp2, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "tensor parallelism"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("moe");
    TCase *tc = tcase_create("moe");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, routing_by_hand);
    tcase_add_test(tc, aux_loss_and_capacity);
    tcase_add_test(tc, routing_backward);
    tcase_add_test(tc, gradients_match_finite_differences);
    tcase_add_test(tc, checkpointing_gives_the_same_bits);
    tcase_add_test(tc, layout_and_counts);
    tcase_add_test(tc, activation_peak_is_predicted);
    tcase_add_test(tc, dropless_activations_follow_the_counts);
    tcase_add_test(tc, bad_shapes);
    suite_add_tcase(s, tc);
    return harness_run(s);
}
