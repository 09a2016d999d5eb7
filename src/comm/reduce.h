/* The element-wise sums of the reducing collectives, in fp32, bf16 or fp16.
 *
 * Low-precision data is summed the way a real reduction kernel does it: both operands are
 * widened to fp32, added, and the sum rounded once to the storage format (round to nearest
 * even, through num/fp.h). So each hop of a ring or tree rounds once. */
#ifndef SCALELAB_COMM_REDUCE_H
#define SCALELAB_COMM_REDUCE_H

#include <stddef.h>

#include "num/fp.h"
#include "sim/cluster.h"

/* 4 for fp32, 2 for bf16 and fp16, 0 for formats a collective does not carry. */
size_t reduce_elem_size(enum fp_format f);

/* dst[i] = round(dst[i] + src[i]) over bytes of format *(const enum fp_format *)ctx; a
 * dev_combine_fn. */
void reduce_sum(void *dst, const void *src, size_t bytes, void *ctx);

/* dst[i] = max(dst[i], src[i]) over fp32 bytes (ctx ignored); a dev_combine_fn. A NaN on
 * either side stays NaN. */
void reduce_max(void *dst, const void *src, size_t bytes, void *ctx);

/* Element i of buf as a float / stores x rounded to the format. */
float reduce_get(enum fp_format f, const void *buf, size_t i);
void reduce_set(enum fp_format f, void *buf, size_t i, float x);

#endif
