/* Gradient clipping by global L2 norm, as torch.nn.utils.clip_grad_norm_ does it:
 *   total = || (||g_1||, ..., ||g_k||) ||_2       (all gradients as one vector)
 *   coef  = max_norm / (total + 1e-6), clamped to at most 1
 *   g    *= coef                                   (always, even when coef is 1)
 * The norm is accumulated in double and rounded to fp32 (PyTorch's result is an fp32 tensor);
 * coef is computed in fp32 as PyTorch's tensor arithmetic does. A non-finite norm gives a
 * non-finite or zero coefficient, as in PyTorch (error_if_nonfinite=False). */
#ifndef SCALELAB_NUM_CLIP_H
#define SCALELAB_NUM_CLIP_H

#include <stdbool.h>
#include <stddef.h>

/* The L2 norm of n values, in fp32. */
float clip_norm(const float *g, size_t n);

/* The pass over the gradients before clipping: multiplies n gradients by inv (a loss scaler's
 * 1 / scale; 1 leaves them as they are, not even rewritten), returns whether any was inf or
 * NaN before, and, with sumsq, adds the squares of the unscaled values to *sumsq one by one in
 * order: the sum clip_norm takes the root of, continued from *sumsq. The check and the
 * multiplication run a block at a time in the widest vectors the CPU has (base/cpu.h), the
 * block's additions then in order while it is in cache: the sum's chain of additions, each
 * waiting for the last, sets the pace, and its order the bits. */
bool clip_unscale(float *g, size_t n, float inv, double *sumsq);

/* The coefficient for a total norm; max_norm > 0. */
float clip_coef(float total_norm, float max_norm);

/* g *= coef. */
void clip_apply(float *g, size_t n, float coef);

#endif
