/* FP8 GEMMs: a linear layer's three matrix products on inputs quantised to fp8 with their
 * scales (num/fp8.h), accumulated in fp32, as TE's and DeepSeek-V3's fp8 GEMMs compute them;
 * the tiny GPT's fp8 training (model/gpt_fp8.c) runs each of its linear layers' GEMMs through
 * here, and the unit tests check each against a quantise-then-multiply in double.
 *
 * The product is taken over the dequantised values q s_inv in fp32 (sgemm): with one scale per
 * tensor that is the fp8 product scaled by s_inv_a s_inv_b once, up to the fp32 rounding of
 * each q s_inv (none when the scales are powers of two); with block scales, each inner block's
 * partial sum scaled by its two blocks' s_inv, DeepSeek-V3's promotion to fp32 at every block
 * (§3.3.2) with the scaling folded into the operands. */
#ifndef SCALELAB_MODEL_FP8GEMM_H
#define SCALELAB_MODEL_FP8GEMM_H

#include "model/gpt.h"
#include "num/fp8.h"

/* The three GEMMs of a linear layer y = x W^T (W [out, in], n rows):
 *   FP8_FPROP  y [n, out] = x [n, in] W^T;            a = x (e4m3), b = W (e4m3)
 *   FP8_DGRAD  dx [n, in] = dy [n, out] W (+ beta dx); a = dy (e5m2; block: e4m3), b = W
 *   FP8_WGRAD  dW [out, in] = dy^T x (+ dW with acc); a = dy, b = x
 * Under the block recipe a and b have a scale per 1 x B tile along the inner dimension (fprop,
 * dgrad: a row's of x and dy), per B x B block of W, and per B x 1 tile of dy and x in wgrad,
 * whose inner dimension is the rows. */
enum fp8_gemm { FP8_FPROP, FP8_DGRAD, FP8_WGRAD };

/* One input: its values, the delayed recipe's scale for it (other recipes: unused), and the
 * statistics its quantisation adds to (NULL: none). */
struct fp8_operand {
    const float *v;
    float scale;
    struct fp8_stats *st;
};

/* The input roles of GEMM k's a and b (num/fp8.h's FP8_X, FP8_W, FP8_DY). */
enum fp8_role fp8_gemm_role(enum fp8_gemm k, int operand);

/* GEMM k of recipe c (not FP8_OFF) into out, its operands quantised into qa (n x the wider of
 * out and in) and qb (out x in, or n x in for wgrad). beta: dgrad adds beta times out; wgrad
 * adds to out when beta is 1. */
void fp8_gemm(const struct gpt_fp8 *c, enum fp8_gemm k, float *out, struct fp8_operand a,
              struct fp8_operand b, int n, int out_w, int in_w, float beta, float *qa, float *qb);

#endif
