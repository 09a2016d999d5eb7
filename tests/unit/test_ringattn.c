/* Unit tests of ring attention's arithmetic (model/ringattn.h): C GPUs' blockwise causal
 * attention, run here on one thread in the ring's order, against full causal attention over the
 * whole sequence computed in double precision by a second implementation (loops only), forward
 * and backward, for the balanced and the naive split at several C; the split itself, the work
 * per GPU; and a context-parallel model part's buffers against their estimate.
 *
 * Tolerance: 1e-6 of the tensor's largest magnitude (at least 1). fp32's unit roundoff is 6e-8;
 * a row's softmax and output sum at most 64 terms of magnitude below 1 here, and the online
 * softmax rescales each row once per block, so the fp32 results lie within a few 1e-7 of the
 * exact ones; a wrong mask, a missed rescaling or a block's gradient lost is off by 1e-2 or
 * more. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/ckpt.h"
#include "base/rng.h"
#include "harness.h"
#include "model/gpt.h"
#include "model/ringattn.h"
#include "par/run.h"
#include "par/settings.h"

enum { B = 2, H = 2, HD = 8, D = H * HD };

/* One sequence set's tensors over all T positions: [B T, D] each. */
struct full {
    int T;
    float *q, *k, *v, *dout;
    double *o, *dq, *dk, *dv; /* the reference's */
};

static float *randv(struct rng *r, size_t n, double amp)
{
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((2 * rng_uniform(r) - 1) * amp);
    return x;
}

/* Full causal attention of one (sequence, head) in double: forward and backward. */
static void ref_head(struct full *f, int b, int h)
{
    int T = f->T;
    double scale = 1.0 / sqrt((double)HD);
    double *P = calloc((size_t)T * T, sizeof *P), *dS = calloc((size_t)T * T, sizeof *dS);
#define AT(x, t, c) ((x)[((size_t)b * T + (t)) * D + (size_t)h * HD + (c)])
    for (int i = 0; i < T; i++) {
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j <= i; j++) {
            double s = 0;
            for (int c = 0; c < HD; c++)
                s += (double)AT(f->q, i, c) * AT(f->k, j, c);
            P[(size_t)i * T + j] = s * scale;
            mx = fmax(mx, s * scale);
        }
        for (int j = 0; j <= i; j++)
            sum += P[(size_t)i * T + j] = exp(P[(size_t)i * T + j] - mx);
        for (int j = 0; j <= i; j++)
            P[(size_t)i * T + j] /= sum;
        for (int c = 0; c < HD; c++) {
            double o = 0;
            for (int j = 0; j <= i; j++)
                o += P[(size_t)i * T + j] * AT(f->v, j, c);
            AT(f->o, i, c) = o;
        }
    }
    for (int i = 0; i < T; i++) {
        double dot = 0;
        for (int j = 0; j <= i; j++) {
            double dp = 0;
            for (int c = 0; c < HD; c++)
                dp += (double)AT(f->dout, i, c) * AT(f->v, j, c);
            dS[(size_t)i * T + j] = dp;
            dot += P[(size_t)i * T + j] * dp;
        }
        for (int j = 0; j <= i; j++) {
            double p = P[(size_t)i * T + j], ds = p * (dS[(size_t)i * T + j] - dot) * scale;
            for (int c = 0; c < HD; c++) {
                AT(f->dq, i, c) += ds * AT(f->k, j, c);
                AT(f->dk, j, c) += ds * AT(f->q, i, c);
                AT(f->dv, j, c) += p * AT(f->dout, i, c);
            }
        }
    }
#undef AT
    free(P);
    free(dS);
}

static void full_new(struct full *f, int T, uint64_t seed)
{
    struct rng r;
    size_t n = (size_t)B * T * D;
    rng_seed(&r, seed, 1);
    f->T = T;
    /* queries 3x larger: scores of a few units, so a later block's maximum often exceeds the
     * earlier ones' and the running sums are rescaled */
    f->q = randv(&r, n, 3.0);
    f->k = randv(&r, n, 1.0);
    f->v = randv(&r, n, 1.0);
    f->dout = randv(&r, n, 1.0);
    f->o = calloc(n, sizeof *f->o);
    f->dq = calloc(n, sizeof *f->dq);
    f->dk = calloc(n, sizeof *f->dk);
    f->dv = calloc(n, sizeof *f->dv);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            ref_head(f, b, h);
}

static void full_free(struct full *f)
{
    free(f->q), free(f->k), free(f->v), free(f->dout);
    free(f->o), free(f->dq), free(f->dk), free(f->dv);
}

/* One GPU's share: its positions and its rows of each tensor, [B n, D]. */
struct share {
    int n, *pos;
    float *q, *k, *v, *dout, *o, *dq, *dk, *dv, *m, *l, *D;
};

static float *gather(const struct full *f, const float *x, const struct share *s)
{
    float *y = calloc((size_t)B * s->n * D, sizeof *y);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < s->n; i++)
            memcpy(y + ((size_t)b * s->n + i) * D, x + ((size_t)b * f->T + s->pos[i]) * D,
                   D * sizeof *y);
    return y;
}

/* The largest |got - ref| over a share's rows, in units of the tolerance's scale. */
static double worst(const struct full *f, const double *ref, const struct share *s,
                    const float *got, double *refmax)
{
    double w = 0;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < s->n; i++)
            for (int c = 0; c < D; c++) {
                double r = ref[((size_t)b * f->T + s->pos[i]) * D + c];
                w = fmax(w, fabs(got[((size_t)b * s->n + i) * D + c] - r));
                *refmax = fmax(*refmax, fabs(r));
            }
    return w;
}

struct errs {
    double o, dq, dk, dv, omax, dqmax, dkmax, dvmax;
    long scores[8]; /* the scores each GPU computed, forward */
};

/* C GPUs' ring attention on one thread: at ring step t GPU r holds the key/value block of GPU
 * (r - t) mod C, and in the backward pass that block's dk, dv travel with it (added to in the
 * order the ring visits them). */
static void run_ring(const struct full *f, int C, enum ring_split split, struct errs *e)
{
    int T = f->T, n = T / C;
    struct ring_heads rh = {B, H, HD, (float)(1.0 / sqrt((double)HD))};
    struct share sh[8];
    float *s = malloc((size_t)n * n * sizeof *s), *dp = malloc((size_t)n * n * sizeof *dp);
    memset(e, 0, sizeof *e);
    for (int r = 0; r < C; r++) {
        struct share *g = &sh[r];
        g->n = n;
        g->pos = malloc((size_t)n * sizeof *g->pos);
        ring_positions(T, C, r, split, g->pos);
        g->q = gather(f, f->q, g), g->k = gather(f, f->k, g), g->v = gather(f, f->v, g);
        g->dout = gather(f, f->dout, g);
        size_t rows = (size_t)B * n;
        g->o = calloc(rows * D, sizeof *g->o), g->dq = calloc(rows * D, sizeof *g->dq);
        g->dk = calloc(rows * D, sizeof *g->dk), g->dv = calloc(rows * D, sizeof *g->dv);
        g->m = calloc(rows * H, sizeof *g->m), g->l = calloc(rows * H, sizeof *g->l);
        g->D = calloc(rows * H, sizeof *g->D);
        ring_attn_fwd_init_heads(&rh, n, g->o, g->m, g->l);
    }
    for (int t = 0; t < C; t++)
        for (int r = 0; r < C; r++) {
            struct share *g = &sh[r], *kv = &sh[(r - t + C) % C];
            e->scores[r] += ring_attn_fwd_heads(&rh, n, g->pos, g->q, n, kv->pos, kv->k, kv->v,
                                                g->o, g->m, g->l, s);
        }
    for (int r = 0; r < C; r++) {
        ring_attn_fwd_finish_heads(&rh, n, sh[r].o, sh[r].m, sh[r].l, sh[r].m);
        ring_attn_bwd_delta_heads(&rh, n, sh[r].dout, sh[r].o, sh[r].D);
    }
    for (int t = 0; t < C; t++)
        for (int r = 0; r < C; r++) {
            struct share *g = &sh[r], *kv = &sh[(r - t + C) % C];
            ring_attn_bwd_heads(&rh, n, g->pos, g->q, g->dout, g->m, g->D, g->dq, n, kv->pos, kv->k,
                                kv->v, kv->dk, kv->dv, s, dp);
        }
    for (int r = 0; r < C; r++) {
        struct share *g = &sh[r];
        e->o = fmax(e->o, worst(f, f->o, g, g->o, &e->omax));
        e->dq = fmax(e->dq, worst(f, f->dq, g, g->dq, &e->dqmax));
        e->dk = fmax(e->dk, worst(f, f->dk, g, g->dk, &e->dkmax));
        e->dv = fmax(e->dv, worst(f, f->dv, g, g->dv, &e->dvmax));
        free(g->pos), free(g->q), free(g->k), free(g->v), free(g->dout), free(g->o);
        free(g->dq), free(g->dk), free(g->dv), free(g->m), free(g->l), free(g->D);
    }
    free(s);
    free(dp);
}

static void check_close(const char *what, double err, double refmax, int C, enum ring_split sp)
{
    double tol = 1e-6 * fmax(1.0, refmax);
    ck_assert_msg(err <= tol, "%s: C %d %s: off by %.3g (tolerance %.3g)", what, C,
                  sp == RING_BALANCED ? "balanced" : "naive", err, tol);
}

START_TEST(split_covers_the_sequence)
{
    int pos[32], seen[32];
    /* balanced, C 2 of 8 tokens: chunks of 2, GPU 0 the first and last, GPU 1 the middle */
    ring_positions(8, 2, 0, RING_BALANCED, pos);
    ck_assert(pos[0] == 0 && pos[1] == 1 && pos[2] == 6 && pos[3] == 7);
    ring_positions(8, 2, 1, RING_BALANCED, pos);
    ck_assert(pos[0] == 2 && pos[1] == 3 && pos[2] == 4 && pos[3] == 5);
    ring_positions(8, 2, 1, RING_NAIVE, pos);
    ck_assert(pos[0] == 4 && pos[3] == 7);
    ck_assert(ring_split_ok(32, 4, RING_BALANCED) && !ring_split_ok(28, 4, RING_BALANCED));
    ck_assert(ring_split_ok(28, 4, RING_NAIVE) && !ring_split_ok(30, 4, RING_NAIVE));
    for (int sp = 0; sp < 2; sp++)
        for (int C = 1; C <= 8; C *= 2) {
            memset(seen, 0, sizeof seen);
            for (int r = 0; r < C; r++) {
                ring_positions(32, C, r, (enum ring_split)sp, pos);
                for (int i = 0; i < 32 / C; i++) {
                    ck_assert(i == 0 || pos[i] > pos[i - 1]);
                    seen[pos[i]]++;
                }
            }
            for (int p = 0; p < 32; p++)
                ck_assert_int_eq(seen[p], 1);
        }
}
END_TEST

START_TEST(ring_equals_full_attention)
{
    static const int Cs[] = {1, 2, 3, 4, 8};
    struct full f;
    full_new(&f, 48, 23);
    for (int sp = 0; sp < 2; sp++)
        for (size_t i = 0; i < sizeof Cs / sizeof *Cs; i++) {
            int C = Cs[i];
            struct errs e;
            if (!ring_split_ok(f.T, C, (enum ring_split)sp))
                continue;
            run_ring(&f, C, (enum ring_split)sp, &e);
            check_close("output", e.o, e.omax, C, (enum ring_split)sp);
            check_close("dq", e.dq, e.dqmax, C, (enum ring_split)sp);
            check_close("dk", e.dk, e.dkmax, C, (enum ring_split)sp);
            check_close("dv", e.dv, e.dvmax, C, (enum ring_split)sp);
        }
    full_free(&f);
}
END_TEST

/* The causal mask's work per GPU: the scores its blocks compute, n = T / C tokens a GPU, only the
 * pairs the mask leaves (key position <= query position). Naive: GPU r computes the blocks of
 * GPUs 0 to r - 1 whole and its own triangle, r n^2 + n (n + 1) / 2. Balanced: half of every
 * other block and of its own (two triangles of n / 2 and a square of them), C n^2 / 2 + n / 2 on
 * every GPU, the mean; the naive split's busiest GPU does ((2C - 1) n + 1) / (C n + 1) times it,
 * (2C - 1)/C as blocks grow (TransformerEngine's causal kernel skips the same half). */
START_TEST(balanced_split_evens_the_work)
{
    struct full f;
    full_new(&f, 64, 5);
    for (int C = 2; C <= 8; C *= 2) {
        struct errs bal, nai;
        run_ring(&f, C, RING_BALANCED, &bal);
        run_ring(&f, C, RING_NAIVE, &nai);
        long n = 64 / C, most = 0, sum = 0;
        for (int r = 0; r < C; r++) {
            ck_assert_int_eq(bal.scores[r], (long)B * H * (C * n * n + n) / 2);
            ck_assert_int_eq(nai.scores[r], (long)B * H * (r * n * n + n * (n + 1) / 2));
            most = nai.scores[r] > most ? nai.scores[r] : most, sum += nai.scores[r];
            /* the blocks the window draws add up to the scores the ring computed */
            long blocks[2] = {0, 0};
            for (int sp = 0; sp < 2; sp++)
                for (int k = 0; k < C; k++)
                    blocks[sp] += ring_block_scores(64, C, r, k, (enum ring_split)sp);
            ck_assert_int_eq((long)B * H * blocks[RING_BALANCED], bal.scores[r]);
            ck_assert_int_eq((long)B * H * blocks[RING_NAIVE], nai.scores[r]);
        }
        /* every pair the mask leaves once: T (T + 1) / 2 per sequence and head */
        ck_assert_int_eq(sum, (long)B * H * 64 * 65 / 2);
        ck_assert_int_eq(most * (C * n + 1), sum / C * ((2 * C - 1) * n + 1));
    }
    /* long blocks: the naive split's busiest over the mean tends to (2C - 1)/C, 1.75 on 4 GPUs */
    long last = 0, mean = 0;
    for (int k = 0; k < 4; k++) {
        last += ring_block_scores(8192, 4, 3, k, RING_NAIVE);
        for (int r = 0; r < 4; r++)
            mean += ring_block_scores(8192, 4, r, k, RING_NAIVE);
    }
    ck_assert(fabs((double)last / (mean / 4.0) - 1.75) < 1e-3);
    full_free(&f);
}
END_TEST

/* Bytes a model allocates, counted through its seam. */
static void *count_alloc(void *ctx, enum gpt_mem kind, size_t bytes, const char *what)
{
    *(size_t *)ctx += bytes;
    return gpt_host_alloc(NULL, kind, bytes, what);
}

static void no_post(void *ctx, const float *send, size_t n, const char *what)
{
    (void)ctx, (void)send, (void)n, (void)what;
}

static void no_wait(void *ctx, float *recv, size_t n)
{
    (void)ctx, (void)recv, (void)n;
}

/* A context-parallel part allocates what gpt_estimate_part_bytes says, and a run's host
 * estimate counts its s / cp tokens: small at sequence 4096 on 4 GPUs, 4 sequences, needs
 * less than a quarter of the memory as 4 context-parallel GPUs than as 4 data-parallel ones
 * (whose every GPU holds a sequence's 4096 x 4096 probabilities per head and layer). */
START_TEST(a_ring_part_is_estimated)
{
    struct gpt_config c;
    ck_assert_int_eq(train_shape("small", &c, NULL), 0);
    c.seq = 512;
    struct ckpt_policy none = {CKPT_NONE, 0};
    for (int cp = 2; cp <= 4; cp *= 2) {
        struct gpt_part part = {.count = c.layers,
                                .embed = true,
                                .head = true,
                                .slots = 1,
                                .tp = 1,
                                .cp = cp,
                                .cprank = cp - 1};
        size_t bytes = 0;
        struct gpt_alloc seam = {.alloc = count_alloc,
                                 .free = gpt_host_free,
                                 .cp_post = no_post,
                                 .cp_wait = no_wait,
                                 .ctx = &bytes};
        struct gpt *g = NULL;
        ck_assert_int_eq(gpt_new_part(&g, &c, 2, FP_BF16, &none, &seam, &part, NULL), 0);
        ck_assert_uint_eq(bytes, gpt_estimate_part_bytes(&c, 2, FP_BF16, &none, &part, NULL));
        gpt_free(g);
    }
    struct run_config a = {0}, b = {0};
    train_opts_default(&a.o);
    ck_assert_int_eq(train_shape("small", &a.o.shape, NULL), 0);
    a.o.shape.seq = 4096, a.o.batch = 4, a.o.gpus = 4;
    b.o = a.o;
    b.o.cp = 4;
    ck_assert_msg(run_host_bytes(&b) * 4 < run_host_bytes(&a), "cp 4 %.0f B, dp 4 %.0f B",
                  run_host_bytes(&b), run_host_bytes(&a));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ringattn");
    TCase *tc = tcase_create("math");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, split_covers_the_sequence);
    tcase_add_test(tc, ring_equals_full_attention);
    tcase_add_test(tc, balanced_split_evens_the_work);
    tcase_add_test(tc, a_ring_part_is_estimated);
    suite_add_tcase(s, tc);
    return harness_run_threadless(s);
}
