/* The tiny GPT's pieces in double precision, random weights and batches (gptref.h). */
#include "config.h"
#include "gptref.h"

#include <math.h>

#include "base/rng.h"

void ref_rms(double *y, const double *x, const double *w, int d)
{
    double ss = 0;
    for (int j = 0; j < d; j++)
        ss += x[j] * x[j];
    double s = 1.0 / sqrt(ss / d + 1e-5);
    for (int j = 0; j < d; j++)
        y[j] = x[j] * s * w[j];
}

void ref_lin(double *y, const double *w, const double *x, int out, int in)
{
    for (int o = 0; o < out; o++) {
        double s = 0;
        for (int i = 0; i < in; i++)
            s += w[(size_t)o * in + i] * x[i];
        y[o] = s;
    }
}

void ref_rope(double *v, int t, int hd)
{
    int half = hd / 2;
    for (int i = 0; i < half; i++) {
        double ang = t * pow(10000.0, -2.0 * i / hd), a = v[i], b = v[i + half];
        v[i] = a * cos(ang) - b * sin(ang);
        v[i + half] = b * cos(ang) + a * sin(ang);
    }
}

void random_params(const struct gpt_config *c, float *p, uint64_t seed)
{
    struct rng r;
    rng_seed(&r, seed, 1);
    for (size_t i = 0; i < gpt_tensor_count(c); i++) {
        struct gpt_tensor t = gpt_tensor_at(c, i);
        bool norm = t.rows == 1;
        for (size_t j = 0; j < (size_t)t.rows * t.cols; j++)
            p[t.offset + j] = (float)(norm ? 1 + 0.2 * rng_normal(&r) : 0.3 * rng_normal(&r));
    }
}

void random_batch(const struct gpt_config *c, int B, int32_t *tok, int32_t *tgt)
{
    struct rng r;
    rng_seed(&r, 7, 2);
    for (int i = 0; i < B * c->seq; i++)
        tok[i] = (int32_t)rng_below(&r, (uint64_t)c->vocab),
        tgt[i] = (int32_t)rng_below(&r, (uint64_t)c->vocab);
}
