/* e^x over an array of floats, the same bits as the C library's expf, 4 or 8 at a time.
 *
 * The model's SwiGLU and softmax call expf millions of times a step; one call costs about
 * 13 cycles here, most of it the call itself, and a loop that calls a function is not
 * vectorized. exp_n computes the library's own algorithm in AVX2 or AVX-512 registers where
 * the library would use it, so a run's results do not change by a bit (see exp.c). Elsewhere,
 * and for the inputs the library treats specially (|x| >= 88, inf, NaN), it calls expf. */
#ifndef SCALELAB_NUM_EXP_H
#define SCALELAB_NUM_EXP_H

#include <stdbool.h>
#include <stddef.h>

/* y[i] = expf(x[i]) for i < n; y may be x. */
void exp_n(float *y, const float *x, size_t n);
/* y[i] = expf(-x[i]) (the negation exact, in the registers: no pass of its own). */
void exp_neg_n(float *y, const float *x, size_t n);

/* How many values exp_n computes at once here: 8 (AVX-512), 4 (AVX2), or 1 (it calls expf,
 * which it also does when its vector code disagrees with the library's expf). */
int exp_lanes(void);

/* exp_n with the code for w lanes (1, 4 or 8), for the tests; false if this CPU lacks it. */
bool exp_n_lanes(int w, float *y, const float *x, size_t n);

/* Whether the code for w lanes (4 or 8; this CPU must have it) gives expf's bits on the inputs
 * hardest to round, a sweep of the range and the special cases: the check exp_n makes before
 * first using it. */
bool exp_agrees(int w);

#endif
