/* Gradient clipping by global L2 norm, with clip_grad_norm_'s semantics (num/clip.h). */
#include "config.h"
#include "num/clip.h"

#include <math.h>

float clip_norm(const float *g, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)g[i] * g[i];
    return (float)sqrt(s);
}

float clip_coef(float total_norm, float max_norm)
{
    float coef = max_norm / (total_norm + 1e-6f);
    return coef > 1.0f ? 1.0f : coef; /* torch.clamp(coef, max=1.0): NaN stays NaN */
}

void clip_apply(float *g, size_t n, float coef)
{
    for (size_t i = 0; i < n; i++)
        g[i] *= coef;
}
