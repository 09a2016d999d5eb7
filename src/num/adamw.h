/* AdamW (Loshchilov and Hutter 2019) with PyTorch's torch.optim.AdamW semantics: decoupled
 * weight decay p -= lr wd p, then Adam with bias correction; eps added to sqrt(v_hat). */
#ifndef SCALELAB_NUM_ADAMW_H
#define SCALELAB_NUM_ADAMW_H

#include <stddef.h>

#include "num/fp.h"

struct adamw {
    double lr, beta1, beta2, eps, wd; /* PyTorch's defaults: 1e-3, 0.9, 0.999, 1e-8, 1e-2 */
    long step;                        /* steps taken (skipped steps do not count) */
};

void adamw_init(struct adamw *a, double lr, double beta1, double beta2, double eps, double wd);

/* One update of n fp32 parameters p with gradients g times coef (gradient clipping's
 * coefficient, num/clip.h; 1: none) and moments m, v (same layout), for step a->step + 1; call
 * adamw_advance once per step before updating the ranges of that step. The result is the same,
 * bit for bit, as clip_apply(g, n, coef) and then an update with coef 1. */
void adamw_advance(struct adamw *a);
void adamw_update(const struct adamw *a, float *p, const float *g, float coef, float *m, float *v,
                  size_t n);
/* The same, then the updated weights rounded to format f (mixed precision's working weights):
 * their bits into w and their values as floats into wf (either may be NULL), a block at a time
 * while it is in cache instead of in passes of their own; the same bits as adamw_update and
 * the bulk conversions of num/fp.h after it. */
void adamw_update_round(const struct adamw *a, float *p, const float *g, float coef, float *m,
                        float *v, size_t n, enum fp_format f, void *w, float *wf);

#endif
