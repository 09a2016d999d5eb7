/* FP8 scaling: a tensor quantised to an fp8 format with scales, as the fp8 GEMMs of
 * TransformerEngine (TE) and DeepSeek-V3 take their inputs, and the recipes that choose the
 * scales. The rounding itself is num/fp.h's (round to nearest even, subnormals kept).
 *
 * A value x with scale s is stored as q = round(sat(x s)), q an fp8 value, and read back as
 * q s_inv, s_inv = 1 / s in fp32 (TE's scale_inv; exact when s is a power of two). sat keeps
 * the format's largest finite value where the rounding overflows (TE's and DeepSeek-V3's
 * saturating casts, cuda's __NV_SATFINITE): such an element is "saturated" (a value just above
 * the largest that rounds down to it is not); a nonzero element whose q is zero is
 * "flushed" (it underflowed below half the smallest subnormal). NaN stays NaN. x s is an fp32
 * product, rounded once to fp32 and then to the fp8 format, as a GPU's cast kernel computes it.
 *
 * The scale of a tensor or block is TE's compute_scale_from_amax
 * (transformer_engine/common/recipe/recipe_common.cuh): s = max_fp8 / amax, 1 when amax is 0 or
 * not finite, FLT_MAX when the quotient overflows, and with pow2 its mantissa bits cleared
 * (the power of two at or below it, so that s_inv is exact). The delayed recipe's scale is
 * (max_fp8 / 2^margin) / amax over its history, the previous scale kept when that amax is 0 or
 * not finite (TE's delayed_scaling.cu). */
#ifndef SCALELAB_NUM_FP8_H
#define SCALELAB_NUM_FP8_H

#include <stdbool.h>
#include <stdint.h>

#include "num/fp.h"

struct error;

/* The recipes of `train --precision fp8 --fp8-recipe R` (TE's names in brackets):
 *   delayed (DelayedScaling): one scale per tensor from the largest amax of its last `history`
 *     steps, updated after each step; HYBRID format: e4m3 forward, e5m2 gradients;
 *   current (Float8CurrentScaling): one scale per tensor from this step's own amax; HYBRID;
 *   block (Float8BlockScaling, DeepSeek-V3's): e4m3 everywhere, a scale per 1 x B tile of
 *     activations and gradients (along the GEMM's inner dimension) and per B x B block of
 *     weights. */
enum fp8_recipe { FP8_OFF, FP8_DELAYED, FP8_CURRENT, FP8_BLOCK, FP8_RECIPES };

/* TE's defaults for DelayedScaling (transformer_engine/common/recipe/__init__.py, and its
 * docs: DelayedScaling(margin=0, fp8_format=Format.HYBRID, amax_history_len=1024,
 * amax_compute_algo="max")) and Float8BlockScaling's and DeepSeek-V3's tile of 128. */
#define FP8_HISTORY_DEFAULT 1024
#define FP8_MARGIN_DEFAULT  0
#define FP8_BLOCK_DEFAULT   128

/* "delayed", "current", "block" (FP8_OFF: "off"). */
const char *fp8_recipe_name(enum fp8_recipe r);
/* 0, or ERR_INVAL "'S' is not an fp8 recipe (use delayed, current or block)". */
int fp8_parse_recipe(const char *s, enum fp8_recipe *out, struct error *e);

/* The three inputs of a linear layer's GEMMs: its input x (fprop and wgrad), its weight w
 * (fprop and dgrad) and its output's gradient dy (dgrad and wgrad). */
enum fp8_role { FP8_X, FP8_W, FP8_DY, FP8_ROLES };
/* "x", "w", "dy" */
const char *fp8_role_name(enum fp8_role r);
/* The format a recipe quantises a role to: e5m2 for dy under delayed and current (HYBRID),
 * e4m3 otherwise. */
enum fp_format fp8_format_of(enum fp8_recipe r, enum fp8_role role);

/* What quantisations did, added up: elements, saturated and flushed ones, the largest |x|
 * (amax; NaN ignored), and the scale used where amax was found (per tensor: the scale). */
struct fp8_stats {
    uint64_t n, saturated, flushed;
    float amax, scale;
};
/* a's counts plus b's, the larger amax with its scale. */
void fp8_stats_add(struct fp8_stats *a, const struct fp8_stats *b);

/* TE's scale for amax (header); pow2: a power of two. */
float fp8_scale(enum fp_format f, float amax, bool pow2);
/* The largest |x| of rows x cols values (row stride ld); NaN ignored. */
float fp8_amax(const float *x, int rows, int cols, int ld);

/* Quantises src [rows x cols] (row-major, dense) to format f and writes its dequantised
 * values q s_inv to dst (same shape; may equal src). scale > 0: one scale for the tensor;
 * scale 0: a scale per block of br x bc elements (the last blocks of a row or column smaller)
 * from the block's own amax (pow2: powers of two). Adds to st when not NULL. */
void fp8_quantize(enum fp_format f, float *dst, const float *src, int rows, int cols, float scale,
                  int br, int bc, bool pow2, struct fp8_stats *st);

/* The delayed recipe's state of one tensor: its last `len` amaxes (a ring; TE rolls an array)
 * and the scale the next step uses (1 before the first update, as TE starts). */
struct fp8_history {
    float *amax; /* len values, zero at first */
    int len, pos;
    float scale;
};
/* Records this step's amax and sets the scale from the largest of the history (header);
 * margin: TE's, the scale divided by 2^margin. */
void fp8_history_update(struct fp8_history *h, enum fp_format f, float amax, int margin);

#endif
