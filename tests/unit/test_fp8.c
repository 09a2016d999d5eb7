/* Unit tests of fp8 training: num/fp8's quantisation against a reference written here from the
 * definition (the fp32 product x s, rounded in double to the nearest fp8 value, ties to even,
 * kept at the largest finite one where it overflows, read back times 1 / s), model/fp8gemm's
 * three GEMMs under each recipe against that quantisation then a product in double, the
 * delayed recipe's history against TE's rule, and the tiny GPT trained with each recipe. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/rng.h"
#include "harness.h"
#include "model/fp8gemm.h"
#include "num/fp.h"
#include "num/fp8.h"
#include "par/settings.h"
#include "par/trainer.h"

/* ------------------------------------------------------------------ the reference */

/* y rounded to f in double: the quantum of y's binade (or of the subnormals), y / quantum to
 * the nearest integer, ties to even (nearbyint in the default rounding mode); *sat set when it
 * rounded past the largest finite value, which it is then kept at. */
static double ref_round(enum fp_format f, double y, bool *sat)
{
    const struct fp_info *fi = fp_info(f);
    *sat = false;
    if (isnan(y))
        return y;
    int e;
    double a = fabs(y);
    frexp(a, &e); /* a = m 2^e, m in [0.5, 1): floor(log2 a) = e - 1 */
    int emin = 1 - fi->bias, ex = a > 0 ? e - 1 : emin;
    double quantum = ldexp(1.0, (ex > emin ? ex : emin) - fi->man_bits);
    double r = isinf(a) ? INFINITY : nearbyint(a / quantum) * quantum;
    if (r > fi->max)
        r = fi->max, *sat = true;
    return copysign(r, y);
}

/* TE's scale, written again: the fp32 quotient max / amax, 1 for 0 or non-finite, with pow2
 * the power of two at or below it (frexp's). */
static float ref_scale(enum fp_format f, float amax, bool pow2)
{
    if (!(amax > 0) || isinf(amax))
        return 1.0f;
    float s = (float)fp_info(f)->max / amax;
    if (pow2) {
        int e;
        frexpf(s, &e);
        s = ldexpf(1.0f, e - 1);
    }
    return s;
}

/* src [rows x cols] quantised by the reference into dq (dequantised, as fp32 values in double):
 * scale > 0 the tensor's; else each br x bc block's own. Returns the saturated count; *flushed
 * the nonzero values that became zero. */
static long ref_quantize(enum fp_format f, double *dq, const float *src, int rows, int cols,
                         float scale, int br, int bc, bool pow2, long *flushed)
{
    long sat = 0;
    *flushed = 0;
    if (scale > 0)
        br = rows, bc = cols;
    for (int i0 = 0; i0 < rows; i0 += br)
        for (int j0 = 0; j0 < cols; j0 += bc) {
            float amax = 0;
            for (int i = i0; i < i0 + br && i < rows; i++)
                for (int j = j0; j < j0 + bc && j < cols; j++)
                    amax = fmaxf(amax, fabsf(src[i * cols + j]));
            float s = scale > 0 ? scale : ref_scale(f, amax, pow2), inv = 1.0f / s;
            for (int i = i0; i < i0 + br && i < rows; i++)
                for (int j = j0; j < j0 + bc && j < cols; j++) {
                    bool st;
                    float x = src[i * cols + j], y = x * s; /* the fp32 product */
                    double q = ref_round(f, y, &st);
                    sat += st;
                    *flushed += q == 0 && x != 0;
                    dq[i * cols + j] = (float)(q * inv); /* q s_inv, rounded to fp32 */
                }
        }
    return sat;
}

/* n values: normal around 1 with a spread of magnitudes 2^-20 .. 2^6, a few zeros */
static void fill(float *x, int n, struct rng *g)
{
    for (int i = 0; i < n; i++)
        x[i] =
            i % 17 == 5 ? 0.0f : (float)(rng_normal(g) * ldexp(1.0, (int)(rng_u64(g) % 27) - 20));
}

/* ------------------------------------------------------------------ quantisation */

START_TEST(quantize_matches_the_reference)
{
    enum { R = 37, C = 45 };
    float x[R * C], q[R * C];
    double want[R * C];
    struct rng g;
    rng_seed(&g, 33, 0);
    fill(x, R * C, &g);
    x[3] = INFINITY, x[4] = -INFINITY; /* saturate under any scale */
    struct {
        float scale; /* 0: blocks */
        int br, bc;
    } modes[] = {{1.0f, 0, 0}, {3000.0f, 0, 0}, {1e-3f, 0, 0}, {0, 1, 8},
                 {0, 8, 1},    {0, 8, 8},       {0, R, C}};
    long seen_sat = 0, seen_flush = 0;
    for (int k = 0; k < 2; k++)
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
            for (int pow2 = 0; pow2 < 2; pow2++) {
                enum fp_format f = k ? FP_E5M2 : FP_E4M3;
                struct fp8_stats st = {0};
                fp8_quantize(f, q, x, R, C, modes[m].scale, modes[m].br, modes[m].bc, pow2, &st);
                long fl, sat = ref_quantize(f, want, x, R, C, modes[m].scale, modes[m].br,
                                            modes[m].bc, pow2, &fl);
                int bad = 0;
                for (int i = 0; i < R * C; i++)
                    bad += fp_f32_bits(q[i]) != fp_f32_bits((float)want[i]);
                ck_assert_msg(bad == 0, "%s mode %zu pow2 %d: %d values differ", fp_info(f)->name,
                              m, pow2, bad);
                ck_assert_int_eq(st.n, R * C);
                ck_assert_int_eq(st.saturated, sat);
                ck_assert_int_eq(st.flushed, fl);
                ck_assert(isinf(st.amax)); /* the infinities; NaN never counts */
                seen_sat += sat, seen_flush += fl;
            }
    ck_assert(seen_sat > 2 * 2 * 7 * 2 && seen_flush > 0); /* both were exercised */
}
END_TEST

/* TE's DelayedScaling rule (transformer_engine/common/recipe/delayed_scaling.cu): the scale
 * from the largest amax of the last len steps, the previous one kept when that is 0. */
START_TEST(delayed_history_is_te_rule)
{
    float h[3] = {0};
    struct fp8_history hist = {h, 3, 0, 1.0f};
    fp8_history_update(&hist, FP_E4M3, 0.0f, 0);
    ck_assert(hist.scale == 1.0f); /* nothing seen yet: TE's initial 1 kept */
    const float amax[] = {2, 4, 1, 1, 1};
    const float want[] = {224, 112, 112, 112, 448};
    for (int i = 0; i < 5; i++) {
        fp8_history_update(&hist, FP_E4M3, amax[i], 0);
        ck_assert_msg(hist.scale == want[i], "step %d: %g", i, hist.scale);
    }
    fp8_history_update(&hist, FP_E5M2, 1.0f, 2); /* margin 2: a quarter of 57344 */
    ck_assert(hist.scale == 14336.0f);
    ck_assert(fp8_scale(FP_E4M3, 3.0f, true) == 128.0f && fp8_scale(FP_E4M3, 0, false) == 1.0f);
}
END_TEST

/* ------------------------------------------------------------------ the GEMMs */

/* out (rows x cols) against a (ra x ca) and b quantised by the reference, then multiplied in
 * double as GEMM k does; the tolerance per element: fp32 accumulation of K products, γ_K =
 * K u / (1 - K u) ~ K u of the sum of |products| (Higham's bound for a dot product, u = 2^-24),
 * plus one u for the output's rounding. The product of the unquantised inputs must fall outside
 * it somewhere, or the check could not tell a missing quantisation. */
static void check_gemm(const struct gpt_fp8 *c, enum fp8_gemm k, int n, int ow, int iw)
{
    struct rng g;
    rng_seed(&g, 7 + (uint64_t)k, (uint64_t)c->recipe);
    int arows = n, acols = k == FP8_FPROP ? iw : ow;
    int brows = k == FP8_WGRAD ? n : ow, bcols = iw;
    int orows = k == FP8_WGRAD ? ow : n, ocols = k == FP8_FPROP ? ow : iw;
    size_t na = (size_t)arows * acols, nb = (size_t)brows * bcols, no = (size_t)orows * ocols;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *out = malloc(no * 4), *qa = malloc(na * 4),
          *qb = malloc(nb * 4), *init = malloc(no * 4);
    double *ra = malloc(na * 8), *rb = malloc(nb * 8);
    ck_assert(a && b && out && qa && qb && init && ra && rb);
    fill(a, (int)na, &g), fill(b, (int)nb, &g), fill(init, (int)no, &g);
    float beta = k == FP8_FPROP ? 0.0f : 1.0f; /* dgrad and wgrad add to what is there */
    memcpy(out, init, no * 4);
    /* delayed: scales that saturate some of a and flush some of b */
    struct fp8_operand oa = {a, 8.0f, NULL}, ob = {b, 0.5f, NULL};
    fp8_gemm(c, k, out, oa, ob, n, ow, iw, beta, qa, qb);
    enum fp_format fa = fp8_format_of(c->recipe, fp8_gemm_role(k, 0));
    enum fp_format fb = fp8_format_of(c->recipe, fp8_gemm_role(k, 1));
    float sa = c->recipe == FP8_DELAYED ? oa.scale : 0,
          sb = c->recipe == FP8_DELAYED ? ob.scale : 0;
    if (c->recipe == FP8_CURRENT)
        sa = ref_scale(fa, fp8_amax(a, arows, acols, acols), c->pow2),
        sb = ref_scale(fb, fp8_amax(b, brows, bcols, bcols), c->pow2);
    int B = c->block;
    long fl;
    ref_quantize(fa, ra, a, arows, acols, sa, k == FP8_WGRAD ? B : 1, k == FP8_WGRAD ? 1 : B,
                 c->pow2, &fl);
    ref_quantize(fb, rb, b, brows, bcols, sb, B, k == FP8_WGRAD ? 1 : B, c->pow2, &fl);
    int K = k == FP8_FPROP ? iw : k == FP8_DGRAD ? ow : n, far = 0;
    double u = ldexp(1.0, -24);
    for (int i = 0; i < orows; i++)
        for (int j = 0; j < ocols; j++) {
            double want = beta * init[i * ocols + j], mag = fabs(want), plain = want;
            for (int t = 0; t < K; t++) {
                double x, y, px, py;
                if (k == FP8_FPROP) /* y = x W^T */
                    x = ra[i * iw + t], y = rb[j * iw + t], px = a[i * iw + t], py = b[j * iw + t];
                else if (k == FP8_DGRAD) /* dx = dy W */
                    x = ra[i * ow + t], y = rb[t * iw + j], px = a[i * ow + t], py = b[t * iw + j];
                else /* dW = dy^T x */
                    x = ra[t * ow + i], y = rb[t * iw + j], px = a[t * ow + i], py = b[t * iw + j];
                want += x * y, mag += fabs(x * y), plain += px * py;
            }
            double tol = (K + 2) * u * mag, got = out[i * ocols + j];
            ck_assert_msg(fabs(got - want) <= tol, "%s gemm %d (%d, %d): %.9g, want %.9g (tol %g)",
                          fp8_recipe_name(c->recipe), (int)k, i, j, got, want, tol);
            far += fabs(got - plain) > tol;
        }
    ck_assert_msg(far > 0, "%s gemm %d: the unquantised product is as close",
                  fp8_recipe_name(c->recipe), (int)k);
    free(a), free(b), free(out), free(qa), free(qb), free(init), free(ra), free(rb);
}

START_TEST(gemms_match_quantise_then_multiply)
{
    /* shapes that are not multiples of the tile, so partial tiles run */
    const struct gpt_fp8 recipes[] = {{FP8_DELAYED, 16, 0, 8, false},
                                      {FP8_CURRENT, 16, 0, 8, false},
                                      {FP8_CURRENT, 16, 0, 8, true},
                                      {FP8_BLOCK, 16, 0, 8, false},
                                      {FP8_BLOCK, 16, 0, 5, true}};
    for (size_t r = 0; r < sizeof recipes / sizeof recipes[0]; r++)
        for (int k = FP8_FPROP; k <= FP8_WGRAD; k++)
            check_gemm(&recipes[r], (enum fp8_gemm)k, 27, 21, 34);
}
END_TEST

/* ------------------------------------------------------------------ training */

/* tiny with a batch of 4, `steps` steps in precision p (fp8: recipe r); the losses, and the
 * last step's record. */
static void train(bool fp8, enum fp8_recipe r, int steps, double *loss, struct train_step *last)
{
    struct train_opts o;
    struct error e = {0};
    ck_assert_int_eq(train_opts_lab(&o, &e), 0);
    o.batch = 4, o.steps = steps;
    o.precision = FP_BF16;
    o.fp8 = fp8, o.fp8_recipe = r;
    struct trainer *t;
    ck_assert_msg(trainer_new(&t, &o, NULL, &e) == 0, "%s", e.msg);
    for (int i = 0; i < steps; i++) {
        trainer_step(t, last);
        loss[i] = last->loss;
    }
    trainer_free(t);
}

START_TEST(each_recipe_trains_tiny)
{
    enum { STEPS = 40 };
    double bf16[STEPS], f8[STEPS];
    struct train_step s;
    train(false, FP8_OFF, STEPS, bf16, &s);
    for (int k = 0; k < FP8_ROLES; k++)
        ck_assert(s.fp8[0][k].n == 0); /* bf16 quantises nothing */
    /* tiny: d 64, F 172, 4 layers, N = 4 x 64 rows. Per layer, fprop quantises its inputs x:
     * N d for wq, wk, wv, w_gate, w_up, N d for wo, N F for w_down; weights 4 d^2 + 3 d F; dgrad
     * the outputs' gradients dy: N d for wq, wk, wv, wo, w_down, N F for w_gate, w_up. */
    const uint64_t N = 4 * 64, d = 64, F = 172, L = 4;
    const uint64_t want[FP8_ROLES] = {L * N * (6 * d + F), L * (4 * d * d + 3 * d * F),
                                      L * N * (5 * d + 2 * F)};
    for (int r = FP8_DELAYED; r <= FP8_BLOCK; r++) {
        train(true, (enum fp8_recipe)r, STEPS, f8, &s);
        for (int k = 0; k < FP8_ROLES; k++) {
            uint64_t n = 0;
            for (int i = 0; i < GPT_LINEARS; i++)
                n += s.fp8[i][k].n;
            ck_assert_msg(n == want[k], "%s %s: %llu elements quantised, want %llu",
                          fp8_recipe_name((enum fp8_recipe)r), fp8_role_name((enum fp8_role)k),
                          (unsigned long long)n, (unsigned long long)want[k]);
        }
        /* learns: from log 64 = 4.16 the bf16 run is at 1.74 by step 40; fp8 the same run
         * within 2% at every step after the first ten (measured on the development host: at
         * most 0.6%, delayed; the first steps of the delayed recipe run on TE's initial scale
         * of 1, which flushes half of step 1's gradients), and not the same bits (it is
         * quantised) */
        bool differs = false;
        for (int i = 0; i < STEPS; i++) {
            differs |= f8[i] != bf16[i];
            if (i >= 10)
                ck_assert_msg(fabs(f8[i] - bf16[i]) < 0.02 * bf16[i], "%s step %d: %g vs %g",
                              fp8_recipe_name((enum fp8_recipe)r), i + 1, f8[i], bf16[i]);
        }
        ck_assert(differs);
        ck_assert_double_lt(f8[STEPS - 1], f8[0] - 1.0);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fp8");
    TCase *tc = tcase_create("fp8");
    tcase_set_timeout(tc, 300); /* the sanitizer builds are several times slower */
    tcase_add_test(tc, quantize_matches_the_reference);
    tcase_add_test(tc, delayed_history_is_te_rule);
    tcase_add_test(tc, gemms_match_quantise_then_multiply);
    tcase_add_test(tc, each_recipe_trains_tiny);
    suite_add_tcase(s, tc);
    /* numbers, and one GPU's runs: under TSan (58 s of CPU there) fp8's threads are
     * tests/cli/train_fp8.sh's, on several GPUs */
    return harness_run_threadless(s);
}
