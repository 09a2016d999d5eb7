/* FP8 scaling: quantising a tensor with per-tensor or per-block scales, their statistics, and
 * the delayed recipe's amax history (num/fp8.h says what each does and whose rule it is). */
#include "config.h"
#include "num/fp8.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "base/error.h"

static const char *const recipe_names[FP8_RECIPES] = {"off", "delayed", "current", "block"};

const char *fp8_recipe_name(enum fp8_recipe r)
{
    return (unsigned)r < FP8_RECIPES ? recipe_names[r] : "?";
}

int fp8_parse_recipe(const char *s, enum fp8_recipe *out, struct error *e)
{
    for (int r = FP8_DELAYED; r < FP8_RECIPES; r++)
        if (s && !strcmp(s, recipe_names[r])) {
            *out = (enum fp8_recipe)r;
            return 0;
        }
    return error_set(e, ERR_INVAL, "'%s' is not an fp8 recipe (use delayed, current or block)",
                     s ? s : "");
}

const char *fp8_role_name(enum fp8_role r)
{
    static const char *const names[FP8_ROLES] = {"x", "w", "dy"};
    return (unsigned)r < FP8_ROLES ? names[r] : "?";
}

enum fp_format fp8_format_of(enum fp8_recipe r, enum fp8_role role)
{
    return role == FP8_DY && r != FP8_BLOCK ? FP_E5M2 : FP_E4M3;
}

void fp8_stats_add(struct fp8_stats *a, const struct fp8_stats *b)
{
    bool first = a->n == 0;
    a->n += b->n, a->saturated += b->saturated, a->flushed += b->flushed;
    if (first || b->amax > a->amax)
        a->amax = b->amax, a->scale = b->scale;
}

float fp8_scale(enum fp_format f, float amax, bool pow2)
{
    float max = (float)fp_info(f)->max;
    if (!(amax > 0) || isinf(amax)) /* 0, NaN or inf */
        return 1.0f;
    float s = max / amax;
    if (isinf(s))
        s = FLT_MAX;
    if (pow2) { /* the mantissa's bits cleared: 2^floor(log2 s) */
        uint32_t u = fp_f32_bits(s) & 0xff800000u;
        s = fp_f32_from_bits(u);
    }
    return s;
}

float fp8_amax(const float *x, int rows, int cols, int ld)
{
    float m = 0;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            float a = fabsf(x[(size_t)i * ld + j]);
            m = a > m ? a : m; /* NaN compares false: ignored */
        }
    return m;
}

/* Values pass through in pieces this long (on the stack), and the blocks along a row are
 * scaled this many at a time: no allocation inside a step. */
#define PIECE 256
#define CHUNK 256

/* One row's run of w values, from block column 0 of the chunk: each value times its block's
 * scale (sc[b], blocks of bc along the row), rounded (num/fp.h's fp_round_n), kept at the
 * largest finite value where that overflowed, and read back times 1 / scale. */
static void quantize_run(enum fp_format f, float *dst, const float *src, int w, const float *sc,
                         const float *inv, int bc, struct fp8_stats *st)
{
    float max = (float)fp_info(f)->max, y[PIECE];
    uint64_t sat = 0, flushed = 0;
    int b = 0, in_b = 0; /* the block of element j, and j's place in it */
    for (int j0 = 0; j0 < w; j0 += PIECE) {
        int m = w - j0 < PIECE ? w - j0 : PIECE, b0 = b, in0 = in_b;
        for (int j = 0; j < m; j++) {
            y[j] = src[j0 + j] * sc[b];
            if (++in_b == bc)
                b++, in_b = 0;
        }
        fp_round_n(f, y, y, (size_t)m);
        b = b0, in_b = in0;
        for (int j = 0; j < m; j++) {
            float x = src[j0 + j], q = y[j];
            if (!(fabsf(q) <= max) && !isnan(x)) { /* overflowed: NaN or inf; kept max */
                q = copysignf(max, x);
                sat++;
            }
            flushed += q == 0.0f && x != 0.0f;
            dst[j0 + j] = q * inv[b];
            if (++in_b == bc)
                b++, in_b = 0;
        }
    }
    st->n += (uint64_t)w;
    st->saturated += sat, st->flushed += flushed;
}

void fp8_quantize(enum fp_format f, float *dst, const float *src, int rows, int cols, float scale,
                  int br, int bc, bool pow2, struct fp8_stats *st)
{
    struct fp8_stats mine = {0};
    if (scale > 0) { /* one block, the tensor */
        br = rows, bc = cols;
        mine.amax = fp8_amax(src, rows, cols, cols), mine.scale = scale;
    } else {
        mine.scale = 1.0f;
    }
    float sc[CHUNK], inv[CHUNK];
    for (int i0 = 0; i0 < rows; i0 += br) {
        int r = rows - i0 < br ? rows - i0 : br;
        for (long j0 = 0; j0 < cols; j0 += (long)CHUNK * bc) {
            int w = (int)(cols - j0 < (long)CHUNK * bc ? cols - j0 : (long)CHUNK * bc);
            for (int b = 0; b * bc < w; b++) {
                if (scale > 0) {
                    sc[b] = scale;
                } else {
                    int c = w - b * bc < bc ? w - b * bc : bc;
                    float amax = fp8_amax(src + (size_t)i0 * cols + j0 + b * bc, r, c, cols);
                    sc[b] = fp8_scale(f, amax, pow2);
                    if (amax > mine.amax)
                        mine.amax = amax, mine.scale = sc[b];
                }
                inv[b] = 1.0f / sc[b];
            }
            for (int i = i0; i < i0 + r; i++) {
                size_t at = (size_t)i * cols + (size_t)j0;
                quantize_run(f, dst + at, src + at, w, sc, inv, bc, &mine);
            }
        }
    }
    if (st)
        fp8_stats_add(st, &mine);
}

void fp8_history_update(struct fp8_history *h, enum fp_format f, float amax, int margin)
{
    h->amax[h->pos] = amax;
    h->pos = (h->pos + 1) % h->len;
    float m = 0;
    for (int i = 0; i < h->len; i++)
        m = h->amax[i] > m ? h->amax[i] : m;
    if (m > 0 && isfinite(m)) {
        float s = (float)ldexp(fp_info(f)->max, -margin) / m;
        h->scale = isinf(s) ? FLT_MAX : s;
    }
}
