/* The tiny GPT's pieces in double precision, and the random weights and batches the model
 * tests (test_train, test_moe) check it with: each test writes its reference loss from these,
 * straight from the definitions, and compares the model's gradients with its differences. */
#ifndef SCALELAB_TESTS_GPTREF_H
#define SCALELAB_TESTS_GPTREF_H

#include <stdint.h>

#include "model/gpt.h"

/* y = RMSNorm(x) w over d values (eps 1e-5). */
void ref_rms(double *y, const double *x, const double *w, int d);
/* y [out] = W [out, in] x [in] */
void ref_lin(double *y, const double *w, const double *x, int out, int in);
/* RoPE's rotate-half turn of one head of hd values at position t (base 10000). */
void ref_rope(double *v, int t, int hd);

/* Parameters with structure (std 0.3, norms 1 +- 0.2) so attention is far from uniform. */
void random_params(const struct gpt_config *c, float *p, uint64_t seed);
/* B sequences of tokens and targets, uniform over the vocabulary (seeded). */
void random_batch(const struct gpt_config *c, int B, int32_t *tok, int32_t *tgt);

#endif
