/* Gradient clipping by global L2 norm, with clip_grad_norm_'s semantics (num/clip.h). */
#include "config.h"
#include "num/clip.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/cpu.h"
#include "base/race.h"

float clip_norm(const float *g, size_t n)
{
    RACE_READ(g, n * 4);
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)g[i] * g[i];
    return (float)sqrt(s);
}

/* Any of n gradients inf or NaN (all exponent bits set) into *bad; then times inv. */
static inline CPU_INLINE void check_scale_body(float *g, size_t n, float inv, uint32_t *bad)
{
    uint32_t b = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &g[i], 4);
        b |= (u & 0x7f800000u) == 0x7f800000u;
    }
    *bad |= b;
    if (inv != 1.0f)
        for (size_t i = 0; i < n; i++)
            g[i] *= inv;
}
CPU_CLONES(check_scale, (float *g, size_t n, float inv, uint32_t *bad), (g, n, inv, bad))

bool clip_unscale(float *g, size_t n, float inv, double *sumsq)
{
    RACE_WRITE(g, n * 4);
    if (sumsq)
        RACE_WRITE(sumsq, sizeof *sumsq);
    uint32_t bad = 0;
    if (!sumsq) {
        check_scale(g, n, inv, &bad);
        return bad != 0;
    }
    enum { BLOCK = 1024 };
    double acc = *sumsq;
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t m = n - i < BLOCK ? n - i : BLOCK;
        check_scale(g + i, m, inv, &bad);
        for (size_t j = i; j < i + m; j++)
            acc += (double)g[j] * g[j];
    }
    *sumsq = acc;
    return bad != 0;
}

float clip_coef(float total_norm, float max_norm)
{
    float coef = max_norm / (total_norm + 1e-6f);
    return coef > 1.0f ? 1.0f : coef; /* torch.clamp(coef, max=1.0): NaN stays NaN */
}

void clip_apply(float *g, size_t n, float coef)
{
    RACE_WRITE(g, n * 4);
    for (size_t i = 0; i < n; i++)
        g[i] *= coef;
}
