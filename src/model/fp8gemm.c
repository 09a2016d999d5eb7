/* FP8 GEMMs: a linear layer's three products on quantised inputs (model/fp8gemm.h). */
#include "config.h"
#include "model/fp8gemm.h"

#include <cblas.h>

#include "base/prof.h"

enum fp8_role fp8_gemm_role(enum fp8_gemm k, int operand)
{
    static const enum fp8_role roles[3][2] = {
        [FP8_FPROP] = {FP8_X, FP8_W}, [FP8_DGRAD] = {FP8_DY, FP8_W}, [FP8_WGRAD] = {FP8_DY, FP8_X}};
    return roles[k][operand != 0];
}

/* src [rows x cols] quantised into dst for role `role`: the delayed recipe's scale, this
 * tensor's own (current), or per tiles of br x bc (block). */
static void quant(const struct gpt_fp8 *c, enum fp8_role role, float *dst,
                  const struct fp8_operand *x, int rows, int cols, int br, int bc)
{
    enum fp_format f = fp8_format_of(c->recipe, role);
    float scale = 0; /* block: each tile's own */
    if (c->recipe == FP8_DELAYED)
        scale = x->scale;
    else if (c->recipe == FP8_CURRENT)
        scale = fp8_scale(f, fp8_amax(x->v, rows, cols, cols), c->pow2);
    fp8_quantize(f, dst, x->v, rows, cols, scale, br, bc, c->pow2, x->st);
}

void fp8_gemm(const struct gpt_fp8 *c, enum fp8_gemm k, float *out, struct fp8_operand a,
              struct fp8_operand b, int n, int out_w, int in_w, float beta, float *qa, float *qb)
{
    int B = c->block;
    prof_enter(PROF_FP8);
    if (k == FP8_FPROP) {
        quant(c, FP8_X, qa, &a, n, in_w, 1, B);
        quant(c, FP8_W, qb, &b, out_w, in_w, B, B);
    } else if (k == FP8_DGRAD) {
        quant(c, FP8_DY, qa, &a, n, out_w, 1, B);
        quant(c, FP8_W, qb, &b, out_w, in_w, B, B);
    } else {
        quant(c, FP8_DY, qa, &a, n, out_w, B, 1);
        quant(c, FP8_X, qb, &b, n, in_w, B, 1);
    }
    prof_leave();
    prof_enter(PROF_MATMUL);
    if (k == FP8_FPROP) /* y = x W^T */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out_w, in_w, 1.0f, qa, in_w, qb,
                    in_w, 0.0f, out, out_w);
    else if (k == FP8_DGRAD) /* dx = dy W */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in_w, out_w, 1.0f, qa, out_w, qb,
                    in_w, beta, out, in_w);
    else /* dW = dy^T x */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out_w, in_w, n, 1.0f, qa, out_w, qb,
                    in_w, beta, out, in_w);
    prof_leave();
}
