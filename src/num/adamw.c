/* AdamW with PyTorch's semantics, over fp32 parameters and moments (num/adamw.h). */
#include "config.h"
#include "num/adamw.h"

#include <math.h>
#include <string.h>

#include "base/cpu.h"
#include "base/race.h"
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
 * The step's scalars are Python floats (doubles) in PyTorch; so they are here. The gradients
 * are read times coef, clipping's coefficient: the same float clip_apply would have stored,
 * without a pass of its own over them. */
/* The update's constants for one step. */
struct adamw_k {
    float decay, step_size, bc2s, b1c, b2, b2c, eps;
};

/* One parameter's update with its gradient gi. */
static inline CPU_INLINE void adamw_one(const struct adamw_k *k, float *p, float *m, float *v,
                                        float gi)
{
    *p *= k->decay;
    *m += k->b1c * (gi - *m);
    *v = k->b2 * *v + k->b2c * gi * gi;
    *p -= k->step_size * (*m / (sqrtf(*v) / k->bc2s + k->eps));
}

/* n parameters: two loops, each vectorized (for each CPU path: base/cpu.h), one without
 * clipping and one with clipping's product. */
static inline CPU_INLINE void update_body(const struct adamw_k *kp, float *p, const float *g,
                                          float coef, float *m, float *v, size_t n)
{
    const struct adamw_k k = *kp;
    if (coef == 1.0f)
        for (size_t i = 0; i < n; i++)
            adamw_one(&k, &p[i], &m[i], &v[i], g[i]);
    else
        for (size_t i = 0; i < n; i++)
            adamw_one(&k, &p[i], &m[i], &v[i], g[i] * coef);
}
CPU_CLONES(update,
           (const struct adamw_k *k, float *p, const float *g, float coef, float *m, float *v,
            size_t n),
           (k, p, g, coef, m, v, n))

/* The update's constants for step a->step. */
static struct adamw_k constants(const struct adamw *a)
{
    double bc1 = 1.0 - pow(a->beta1, (double)a->step);
    double bc2 = 1.0 - pow(a->beta2, (double)a->step);
    return (struct adamw_k){(float)(1.0 - a->lr * a->wd),
                            (float)(a->lr / bc1),
                            (float)sqrt(bc2),
                            (float)(1.0 - a->beta1),
                            (float)a->beta2,
                            (float)(1.0 - a->beta2),
                            (float)a->eps};
}

void adamw_update(const struct adamw *a, float *p, const float *g, float coef, float *m, float *v,
                  size_t n)
{
    const struct adamw_k k = constants(a);
    RACE_READ(g, n * 4);
    RACE_WRITE(p, n * 4);
    RACE_WRITE(m, n * 4);
    RACE_WRITE(v, n * 4);
    prof_enter(PROF_OPTIMIZER);
    update(&k, p, g, coef, m, v, n);
    prof_leave();
}

void adamw_update_round(const struct adamw *a, float *p, const float *g, float coef, float *m,
                        float *v, size_t n, enum fp_format f, void *w, float *wf)
{
    enum { BLOCK = 2048 };
    const struct adamw_k k = constants(a);
    size_t es = f == FP_FP32 ? 4 : 2;
    RACE_READ(g, n * 4);
    RACE_WRITE(p, n * 4);
    RACE_WRITE(m, n * 4);
    RACE_WRITE(v, n * 4);
    prof_enter(PROF_OPTIMIZER);
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t b = n - i < BLOCK ? n - i : BLOCK;
        update(&k, p + i, g + i, coef, m + i, v + i, b);
        void *wi = w ? (char *)w + i * es : NULL;
        if (wi) { /* the bits, then their values from them: exact */
            fp_pack_n(f, wi, p + i, b);
            if (wf)
                fp_unpack_n(f, wf + i, wi, b);
        } else if (wf)
            fp_round_n(f, wf + i, p + i, b);
    }
    prof_leave();
}
