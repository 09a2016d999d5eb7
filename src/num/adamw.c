/* AdamW with PyTorch's semantics, over fp32 parameters and moments (num/adamw.h). */
#include "config.h"
#include "num/adamw.h"

#include <math.h>

#include "base/prof.h"

void adamw_init(struct adamw *a, double lr, double beta1, double beta2, double eps, double wd)
{
    *a = (struct adamw){lr, beta1, beta2, eps, wd, 0};
}

void adamw_advance(struct adamw *a)
{
    a->step++;
}

/* torch/optim/adamw.py (_single_tensor_adamw), in fp32 like PyTorch's tensors:
 *   p *= 1 - lr wd
 *   m = m + (1 - beta1) (g - m)            (exp_avg.lerp_(grad, 1 - beta1))
 *   v = beta2 v + (1 - beta2) g^2
 *   p -= lr / (1 - beta1^t) m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
 * The step's scalars are Python floats (doubles) in PyTorch; so they are here. */
void adamw_update(const struct adamw *a, float *p, const float *g, float *m, float *v, size_t n)
{
    double bc1 = 1.0 - pow(a->beta1, (double)a->step);
    double bc2 = 1.0 - pow(a->beta2, (double)a->step);
    float decay = (float)(1.0 - a->lr * a->wd);
    float step_size = (float)(a->lr / bc1), bc2s = (float)sqrt(bc2);
    float b1c = (float)(1.0 - a->beta1), b2 = (float)a->beta2, b2c = (float)(1.0 - a->beta2);
    float eps = (float)a->eps;
    prof_enter(PROF_OPTIMIZER);
    for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        p[i] *= decay;
        m[i] += b1c * (gi - m[i]);
        v[i] = b2 * v[i] + b2c * gi * gi;
        p[i] -= step_size * (m[i] / (sqrtf(v[i]) / bc2s + eps));
    }
    prof_leave();
}
