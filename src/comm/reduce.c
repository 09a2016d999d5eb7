/* The element-wise sums the reducing collectives combine received data with, in fp32, bf16
 * or fp16 (comm/reduce.h). */
#include "config.h"
#include "comm/reduce.h"

#include <math.h>

#include <stdint.h>

size_t reduce_elem_size(enum fp_format f)
{
    switch (f) {
    case FP_FP32: return 4;
    case FP_BF16:
    case FP_FP16: return 2;
    default: return 0;
    }
}

/* Widen a block to fp32, add, round the block back: the bulk conversions of num/fp.h. */
#define BLOCK 512

static void sum_half(enum fp_format f, uint16_t *dst, const uint16_t *src, size_t n)
{
    float a[BLOCK], b[BLOCK];
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t m = n - i < BLOCK ? n - i : BLOCK;
        if (f == FP_BF16) {
            bf16_to_f32_n(a, dst + i, m);
            bf16_to_f32_n(b, src + i, m);
        } else {
            fp16_to_f32_n(a, dst + i, m);
            fp16_to_f32_n(b, src + i, m);
        }
        for (size_t j = 0; j < m; j++)
            a[j] += b[j];
        if (f == FP_BF16)
            bf16_from_f32_n(dst + i, a, m);
        else
            fp16_from_f32_n(dst + i, a, m);
    }
}

void reduce_sum(void *dst, const void *src, size_t bytes, void *ctx)
{
    enum fp_format f = *(const enum fp_format *)ctx;
    if (f == FP_FP32) {
        float *restrict d = dst;
        const float *restrict s = src;
        size_t n = bytes / 4;
        for (size_t i = 0; i < n; i++)
            d[i] += s[i];
    } else {
        sum_half(f, dst, src, bytes / 2);
    }
}

void reduce_max(void *dst, const void *src, size_t bytes, void *ctx)
{
    (void)ctx;
    float *restrict d = dst;
    const float *restrict s = src;
    for (size_t i = 0; i < bytes / 4; i++)
        d[i] = isnan(d[i]) || s[i] <= d[i] ? d[i] : s[i];
}

float reduce_get(enum fp_format f, const void *buf, size_t i)
{
    if (f == FP_FP32)
        return ((const float *)buf)[i];
    uint16_t h = ((const uint16_t *)buf)[i];
    return f == FP_BF16 ? bf16_to_f32(h) : fp16_to_f32(h);
}

void reduce_set(enum fp_format f, void *buf, size_t i, float x)
{
    if (f == FP_FP32)
        ((float *)buf)[i] = x;
    else if (f == FP_BF16)
        ((uint16_t *)buf)[i] = bf16_from_f32(x);
    else
        ((uint16_t *)buf)[i] = fp16_from_f32(x);
}
