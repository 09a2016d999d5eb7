/* Number formats and conversions (see fp.h).
 *
 * The generic mechanism. A finite fp32 value is an integer significand times a power of two:
 * x = sig * 2^(ex - 150), with sig < 2^24 (the hidden bit included for normal x, ex = 1 for
 * subnormal x). In a target format with m mantissa bits and smallest normal exponent emin,
 * the representable values near x are multiples of the quantum 2^(e - m), where
 * e = max(floor(log2 |x|), emin): below emin the spacing stops shrinking, which is what
 * subnormals are. So the nearest value is q * 2^(e - m) with q = sig / 2^shift rounded to the
 * nearest integer, ties to even, shift = (e - m) - (ex - 150). The bits follow without any
 * case analysis: ((e - emin) << m) + q. When e = emin and q < 2^m that is a subnormal (exponent
 * field 0); otherwise q's hidden bit adds one to the exponent field, and a q that rounded up to
 * 2^(m+1) carries into the exponent field, which is exactly the next binade. A result above
 * the largest finite encoding has overflowed: inf, or NaN for e4m3fn.
 *
 * The same rule with m = 10, emin = -14 is IEEE 754 binary16's roundTiesToEven; with m = 7,
 * emin = -126 it is bfloat16 as PyTorch rounds it (c10::detail::round_to_nearest_even); the
 * fp8 formats are those of Micikevicius et al., "FP8 formats for deep learning" (2022).
 *
 * The fast paths do the same with fixed constants: for bf16 the classic add-0x7fff-plus-odd
 * trick on the top 16 bits; for fp16 the same trick on normal values and one float addition
 * for subnormals (see f16_bits). On x86 with F16C the bulk fp16 calls use vcvtps2ph/vcvtph2ps
 * (rounding fixed to nearest-even in the instruction, independent of MXCSR), and the bf16
 * calls the bf16 arithmetic in AVX2 intrinsics. The unit tests check that every path agrees
 * bit for bit; all of them were also compared on all 2^32 fp32 inputs while writing them. */
#include "config.h"
#include "num/fp.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/cpu.h"
#include "base/error.h"
#include "base/race.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define FP_X86 1
#include <immintrin.h>
#else
#define FP_X86 0
#endif

/* max: the largest finite value, (2 - 2^-m) * 2^emax, except e4m3fn, whose top exponent
 * holds finite values too (only S.1111.111 is NaN): 1.75 * 2^8 = 448. */
static const struct fp_info infos[FP_COUNT] = {
    [FP_FP32] = {"fp32", "fp32", 32, 8, 23, 127, true, 0x1.fffffep127, 0x1p-126, 0x1p-149, 0x1p-23},
    [FP_FP16] = {"fp16", "fp16", 16, 5, 10, 15, true, 0x1.ffcp15, 0x1p-14, 0x1p-24, 0x1p-10},
    [FP_BF16] = {"bf16", "bf16", 16, 8, 7, 127, true, 0x1.fep127, 0x1p-126, 0x1p-133, 0x1p-7},
    [FP_E4M3] = {"fp8 e4m3", "fp8_e4m3", 8, 4, 3, 7, false, 0x1.cp8, 0x1p-6, 0x1p-9, 0x1p-3},
    [FP_E5M2] = {"fp8 e5m2", "fp8_e5m2", 8, 5, 2, 15, true, 0x1.cp15, 0x1p-14, 0x1p-16, 0x1p-2},
};

const struct fp_info *fp_info(enum fp_format f)
{
    return (unsigned)f < FP_COUNT ? &infos[f] : NULL;
}

int fp_parse_format(const char *s, enum fp_format *out, struct error *e)
{
    static const struct {
        const char *name;
        enum fp_format f;
    } names[] = {
        {"fp32", FP_FP32},     {"fp16", FP_FP16}, {"bf16", FP_BF16},
        {"fp8_e4m3", FP_E4M3}, {"e4m3", FP_E4M3}, {"fp8 e4m3", FP_E4M3},
        {"fp8_e5m2", FP_E5M2}, {"e5m2", FP_E5M2}, {"fp8 e5m2", FP_E5M2},
    };
    for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].name)) {
            *out = names[i].f;
            return 0;
        }
    return error_set(e, ERR_INVAL,
                     "'%s' is not a number format (fp32, fp16, bf16, fp8_e4m3, fp8_e5m2)",
                     s ? s : "");
}

int fp_bytes(enum fp_format f)
{
    return infos[f].bits / 8;
}

static const struct fp_precision precisions[] = {
    {FP_FP32, false, false},
    {FP_BF16, true, false},
    {FP_FP16, true, true},
};
#define NPRECISIONS ((int)(sizeof precisions / sizeof precisions[0]))

const struct fp_precision *fp_precisions(int *n)
{
    *n = NPRECISIONS;
    return precisions;
}

const struct fp_precision *fp_precision(enum fp_format f)
{
    for (int i = 0; i < NPRECISIONS; i++)
        if (precisions[i].format == f)
            return &precisions[i];
    return NULL;
}

enum fp_format fp_precision_step(enum fp_format f, int dir)
{
    const struct fp_precision *p = fp_precision(f);
    int i = p ? (int)(p - precisions) : 0;
    return precisions[((i + dir) % NPRECISIONS + NPRECISIONS) % NPRECISIONS].format;
}

int fp_parse_precision(const char *s, enum fp_format *out, struct error *e)
{
    enum fp_format f;
    if (s && fp_parse_format(s, &f, NULL) == 0 && fp_precision(f)) {
        *out = f;
        return 0;
    }
    /* fp8 trains (fp8 GEMMs in a bf16 model, par/settings.c reads it) but is no line of the
     * table: the calculator does not count its copies yet */
    if (s && !strcmp(s, "fp8"))
        return error_set(e, ERR_INVAL,
                         "'fp8' trains (train --precision fp8) but its memory is not counted "
                         "here yet (use fp32, bf16 or fp16)");
    char names[64] = "";
    for (int i = 0, at = 0; i < NPRECISIONS && at < (int)sizeof names; i++)
        at += snprintf(names + at, sizeof names - (size_t)at, "%s%s", i == 0 ? "" : ", ",
                       infos[precisions[i].format].name);
    return error_set(e, ERR_INVAL, "'%s' is not a precision (use %s or fp8)", s ? s : "", names);
}

uint32_t fp_f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

float fp_f32_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* ------------------------------------------------------------------ the generic mechanism */

/* The encodings a format needs, derived from its fp_info. */
struct layout {
    int m, emin;
    uint32_t sign;     /* the sign bit */
    uint32_t mant_all; /* all mantissa bits */
    uint32_t exp_all;  /* all exponent bits */
    uint32_t max_bits; /* the largest finite magnitude */
    uint32_t nan_bits; /* the quiet NaN's magnitude with a zero payload */
    uint32_t overflow; /* what overflow becomes: inf, or NaN for e4m3fn */
};

static struct layout layout_of(enum fp_format f)
{
    const struct fp_info *fi = &infos[f];
    struct layout l;
    l.m = fi->man_bits;
    l.emin = 1 - fi->bias;
    l.sign = 1u << (fi->bits - 1);
    l.mant_all = (1u << l.m) - 1;
    l.exp_all = ((1u << fi->exp_bits) - 1) << l.m;
    if (fi->has_inf) {
        l.max_bits = l.exp_all - 1;
        l.nan_bits = l.exp_all | 1u << (l.m - 1);
        l.overflow = l.exp_all;
    } else {
        l.max_bits = (l.exp_all | l.mant_all) - 1;
        l.nan_bits = l.exp_all | l.mant_all;
        l.overflow = l.nan_bits;
    }
    return l;
}

uint32_t fp_encode(enum fp_format f, float x)
{
    if ((unsigned)f >= FP_COUNT)
        return 0;
    struct layout l = layout_of(f);
    uint32_t u = fp_f32_bits(x);
    uint32_t sign = u >> 31 ? l.sign : 0;
    uint32_t a = u & 0x7fffffffu;

    if (a > 0x7f800000u) /* NaN: quiet, keep the payload's top bits (e4m3fn has one NaN) */
        return sign | l.nan_bits | (infos[f].has_inf ? ((a & 0x7fffffu) >> (23 - l.m)) : 0);
    if (a == 0x7f800000u)
        return sign | l.overflow;

    int ex = (int)(a >> 23);
    uint32_t sig = a & 0x7fffffu;
    if (ex)
        sig |= 0x800000u;
    else
        ex = 1;
    int e = ex - 127 > l.emin ? ex - 127 : l.emin;
    int shift = (e - l.m) - (ex - 150); /* >= 23 - m >= 0 */
    if (shift > 25)                     /* sig < 2^24 <= half the quantum: rounds to 0 */
        shift = 25;
    uint32_t q = sig >> shift;
    if (shift > 0) {
        uint32_t rem = sig & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1)))
            q++;
    }
    uint32_t bits = ((uint32_t)(e - l.emin) << l.m) + q;
    return sign | (bits > l.max_bits ? l.overflow : bits);
}

float fp_decode(enum fp_format f, uint32_t bits)
{
    if ((unsigned)f >= FP_COUNT)
        return NAN;
    if (f == FP_FP32) {
        if ((bits & 0x7fffffffu) > 0x7f800000u)
            bits |= 0x400000u;
        return fp_f32_from_bits(bits);
    }
    struct layout l = layout_of(f);
    uint32_t sign = bits & l.sign ? 0x80000000u : 0;
    uint32_t a = bits & (l.sign - 1);
    uint32_t exp = a >> l.m, man = a & l.mant_all;
    bool nan =
        infos[f].has_inf ? (a & l.exp_all) == l.exp_all && man : a == (l.exp_all | l.mant_all);
    if (nan) /* quiet, payload kept in the top mantissa bits */
        return fp_f32_from_bits(sign | 0x7fc00000u | man << (23 - l.m));
    if (infos[f].has_inf && a == l.exp_all)
        return fp_f32_from_bits(sign | 0x7f800000u);
    /* Exact: the significand has at most 11 bits and the scale stays within fp32's range. */
    float v = exp ? ldexpf((float)(man | (l.mant_all + 1)), (int)exp - infos[f].bias - l.m)
                  : ldexpf((float)man, l.emin - l.m);
    return sign ? -v : v;
}

float fp_round(enum fp_format f, float x)
{
    /* the scalar conversions of fp16 and bf16 give the same bits as the generic path and are
     * several times faster (the collectives' checker rounds every input it regenerates);
     * NaN keeps the generic path and its payload rules */
    if (!isnan(x)) {
        if (f == FP_FP32)
            return x;
        if (f == FP_BF16)
            return bf16_to_f32(bf16_from_f32(x));
        if (f == FP_FP16)
            return fp16_to_f32(fp16_from_f32(x));
    }
    return fp_decode(f, fp_encode(f, x));
}

uint32_t fp_step(enum fp_format f, uint32_t bits, int dir)
{
    if ((unsigned)f >= FP_COUNT || dir == 0 || isnan(fp_decode(f, bits)))
        return bits;
    struct layout l = layout_of(f);
    uint32_t sign = l.sign, top = infos[f].has_inf ? l.exp_all : l.max_bits;
    bits &= sign | (sign - 1);
    uint32_t mag = bits & (sign - 1);
    bool up = dir > 0;
    if (mag == 0)
        return up ? 1 : sign | 1;
    if (!(bits & sign) == up) /* away from zero */
        return mag == top ? bits : bits + 1;
    return bits - 1;
}

/* ------------------------------------------------------------------ scalar fast paths */

/* Branch-free bodies shared by the scalar calls and the bulk loops (which the compiler
 * vectorises). Both take and return raw bits. */
static inline uint16_t f16_bits(uint32_t u)
{
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    /* [2^-14, 65536): rebias the exponent (127 -> 15), round the 13 dropped bits to nearest
     * even; a carry out of the mantissa moves to the next binade, and 65520 and up to inf. */
    uint32_t normal = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1)) >> 13;
    /* Below 2^-14 the fp16 values are the multiples of 2^-24, as the fp32 values in [0.5, 1)
     * are: adding 0.5 makes the FPU round |x| to a multiple of 2^-24, to nearest even (the
     * default rounding mode, which scalelab never changes), and that multiple is the sum's
     * low bits. One float addition, which vectorises, instead of a variable shift. */
    uint32_t sub = fp_f32_bits(fp_f32_from_bits(a) + 0.5f) - 0x3f000000u;
    uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
    /* Select with masks rather than branches, so that the loops vectorise; a < 2^31, so the
     * comparisons may be signed ones, which SSE2 has. */
    int32_t sa = (int32_t)a;
    uint32_t is_nan = -(uint32_t)(sa > 0x7f800000), big = -(uint32_t)(sa >= 0x47800000);
    uint32_t norm = -(uint32_t)(sa >= 0x38800000);
    uint32_t r =
        (nan & is_nan) | (0x7c00u & big & ~is_nan) | (normal & norm & ~big) | (sub & ~norm);
    return (uint16_t)(sign | r);
}

static inline uint32_t f16_to_bits(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t normal = ((e + 112) << 23) | (m << 13);
    uint32_t special = 0x7f800000u | (m << 13) | (m ? 0x400000u : 0); /* inf, quiet NaN */
    /* A subnormal m * 2^-24: int -> float and a power-of-two scale are both exact. */
    uint32_t sub = fp_f32_bits((float)m * 0x1p-24f);
    uint32_t top = -(uint32_t)(e == 31), zero = -(uint32_t)(e == 0);
    return sign | (special & top) | (sub & zero) | (normal & ~top & ~zero);
}

static inline uint16_t bf16_bits(uint32_t u)
{
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1)) >> 16;
    uint32_t nan = (u >> 16) | 0x40u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

static inline uint32_t bf16_to_bits(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    return (u & 0x7fffffffu) > 0x7f800000u ? u | 0x400000u : u;
}

/* fp32 -> bf16 -> fp32 in one step: the kept bits of the rounded value. */
static inline uint32_t bf16_round_bits(uint32_t u)
{
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1)) & 0xffff0000u;
    uint32_t nan = (u | 0x400000u) & 0xffff0000u;
    return (u & 0x7fffffffu) > 0x7f800000u ? nan : rounded;
}

fp16_t fp16_from_f32(float x)
{
    return f16_bits(fp_f32_bits(x));
}

float fp16_to_f32(fp16_t h)
{
    return fp_f32_from_bits(f16_to_bits(h));
}

bf16_t bf16_from_f32(float x)
{
    return bf16_bits(fp_f32_bits(x));
}

float bf16_to_f32(bf16_t h)
{
    return fp_f32_from_bits(bf16_to_bits(h));
}

/* ------------------------------------------------------------------ bulk: portable */

/* Whole blocks of a fixed size go through a local copy: the loop count is a constant (which
 * the compiler's cheap vectoriser wants), and dst may equal src. */
#define BLOCK 64

static inline uint32_t f16_round_bits(uint32_t u)
{
    return f16_to_bits(f16_bits(u));
}

/* The portable bulk loops (on x86 with F16C/AVX2, the intrinsics further down run instead):
 * NAME(dst, src, n) maps each element's bits IN to bits OUT with F. */
#define BULK_LOOP(NAME, DST, SRC, IN, OUT, F)                                                      \
    static void NAME(DST *dst, const SRC *src, size_t n)                                           \
    {                                                                                              \
        size_t i = 0;                                                                              \
        for (; i + BLOCK <= n; i += BLOCK) {                                                       \
            IN u[BLOCK];                                                                           \
            OUT o[BLOCK];                                                                          \
            memcpy(u, src + i, sizeof u);                                                          \
            for (int j = 0; j < BLOCK; j++)                                                        \
                o[j] = F(u[j]);                                                                    \
            memcpy(dst + i, o, sizeof o);                                                          \
        }                                                                                          \
        for (; i < n; i++) {                                                                       \
            IN u;                                                                                  \
            memcpy(&u, src + i, sizeof u);                                                         \
            OUT o = F(u);                                                                          \
            memcpy(dst + i, &o, sizeof o);                                                         \
        }                                                                                          \
    }

BULK_LOOP(f16_from_n_c, fp16_t, float, uint32_t, uint16_t, f16_bits)
BULK_LOOP(f16_to_n_c, float, fp16_t, uint16_t, uint32_t, f16_to_bits)
BULK_LOOP(f16_round_n_c, float, float, uint32_t, uint32_t, f16_round_bits)
BULK_LOOP(bf16_from_n_c, bf16_t, float, uint32_t, uint16_t, bf16_bits)
BULK_LOOP(bf16_to_n_c, float, bf16_t, uint16_t, uint32_t, bf16_to_bits)
BULK_LOOP(bf16_round_n_c, float, float, uint32_t, uint32_t, bf16_round_bits)

/* ------------------------------------------------------------------ bulk: x86 */

static atomic_int impl_choice = FP_IMPL_AUTO;

enum fp_impl fp_set_impl(enum fp_impl impl)
{
    return (enum fp_impl)atomic_exchange_explicit(&impl_choice, (int)impl, memory_order_relaxed);
}

#if FP_X86
#define X86_ATTR __attribute__((target("avx2,f16c")))

/* bf16 with AVX2: the same arithmetic as bf16_bits and bf16_to_bits, eight lanes at a time. */
X86_ATTR static inline __m256i bf16_round_avx2(__m256i u)
{
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd);
    __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
    __m256i nan = _mm256_or_si256(u, _mm256_set1_epi32(0x400000));
    return _mm256_blendv_epi8(r, nan, is_nan); /* the top 16 bits are the result */
}

X86_ATTR static void bf16_from_n_avx2(bf16_t *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i a = bf16_round_avx2(_mm256_loadu_si256((const __m256i *)(const void *)(src + i)));
        __m256i b =
            bf16_round_avx2(_mm256_loadu_si256((const __m256i *)(const void *)(src + i + 8)));
        /* Pack the high halves (values 0..0xffff: no saturation), then undo the per-128-bit-lane
         * interleave of packus. */
        __m256i p = _mm256_packus_epi32(_mm256_srli_epi32(a, 16), _mm256_srli_epi32(b, 16));
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), _mm256_permute4x64_epi64(p, 0xd8));
    }
    for (; i < n; i++)
        dst[i] = bf16_bits(fp_f32_bits(src[i]));
}

X86_ATTR static void bf16_to_n_avx2(float *dst, const bf16_t *src, size_t n)
{
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i quiet = _mm256_set1_epi32(0x400000);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i h =
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + i)));
        __m256i u = _mm256_slli_epi32(h, 16);
        __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
        u = _mm256_or_si256(u, _mm256_and_si256(is_nan, quiet));
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), u);
    }
    for (; i < n; i++)
        dst[i] = fp_f32_from_bits(bf16_to_bits(src[i]));
}

X86_ATTR static void bf16_round_n_avx2(float *dst, const float *src, size_t n)
{
    const __m256i top = _mm256_set1_epi32((int)0xffff0000u);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i r = bf16_round_avx2(_mm256_loadu_si256((const __m256i *)(const void *)(src + i)));
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), _mm256_and_si256(r, top));
    }
    for (; i < n; i++)
        dst[i] = fp_f32_from_bits(bf16_round_bits(fp_f32_bits(src[i])));
}

X86_ATTR static void f16_from_n_f16c(fp16_t *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        __m128i b = _mm256_cvtps_ph(_mm256_loadu_ps(src + i + 8), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(void *)(dst + i), a);
        _mm_storeu_si128((__m128i *)(void *)(dst + i + 8), b);
    }
    for (; i < n; i++)
        dst[i] = f16_bits(fp_f32_bits(src[i]));
}

X86_ATTR static void f16_to_n_f16c(float *dst, const fp16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 a = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + i)));
        __m256 b = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + i + 8)));
        _mm256_storeu_ps(dst + i, a);
        _mm256_storeu_ps(dst + i + 8, b);
    }
    for (; i < n; i++)
        dst[i] = fp_f32_from_bits(f16_to_bits(src[i]));
}

X86_ATTR static void f16_round_n_f16c(float *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; i++)
        dst[i] = fp_f32_from_bits(f16_round_bits(fp_f32_bits(src[i])));
}

static bool simd(void)
{
    return atomic_load_explicit(&impl_choice, memory_order_relaxed) == FP_IMPL_AUTO &&
           cpu_has(CPU_AVX2 | CPU_F16C);
}
#else
static bool simd(void)
{
    return false;
}
#endif

bool fp_simd_active(void)
{
    return simd();
}

void fp16_from_f32_n(fp16_t *dst, const float *src, size_t n)
{
    RACE_READ(src, n * 4);
    RACE_WRITE(dst, n * 2);
#if FP_X86
    if (simd()) {
        f16_from_n_f16c(dst, src, n);
        return;
    }
#endif
    f16_from_n_c(dst, src, n);
}

void fp16_to_f32_n(float *dst, const fp16_t *src, size_t n)
{
    RACE_READ(src, n * 2);
    RACE_WRITE(dst, n * 4);
#if FP_X86
    if (simd()) {
        f16_to_n_f16c(dst, src, n);
        return;
    }
#endif
    f16_to_n_c(dst, src, n);
}

void bf16_from_f32_n(bf16_t *dst, const float *src, size_t n)
{
    RACE_READ(src, n * 4);
    RACE_WRITE(dst, n * 2);
#if FP_X86
    if (simd()) {
        bf16_from_n_avx2(dst, src, n);
        return;
    }
#endif
    bf16_from_n_c(dst, src, n);
}

void bf16_to_f32_n(float *dst, const bf16_t *src, size_t n)
{
    RACE_READ(src, n * 2);
    RACE_WRITE(dst, n * 4);
#if FP_X86
    if (simd()) {
        bf16_to_n_avx2(dst, src, n);
        return;
    }
#endif
    bf16_to_n_c(dst, src, n);
}

void fp_pack_n(enum fp_format f, void *dst, const float *src, size_t n)
{
    if (f == FP_FP16)
        fp16_from_f32_n(dst, src, n);
    else if (f == FP_BF16)
        bf16_from_f32_n(dst, src, n);
    else
        memmove(dst, src, n * 4);
}

void fp_unpack_n(enum fp_format f, float *dst, const void *src, size_t n)
{
    if (f == FP_FP16)
        fp16_to_f32_n(dst, src, n);
    else if (f == FP_BF16)
        bf16_to_f32_n(dst, src, n);
    else
        memmove(dst, src, n * 4);
}

/* fp8's bulk rounding, the generic rule's values by a shorter road (fp8 training rounds
 * every GEMM input): a value at or above the smallest normal keeps 23 - m fewer fp32 mantissa
 * bits, rounded to nearest even by adding half the dropped part less one plus the kept last
 * bit, the bf16 trick (a carry moves into the exponent, the next binade); below it the
 * quantum is fixed, 2^(emin - m), and adding and taking away C = 2^(emin - m + 23), whose ulp
 * it is, rounds to a multiple of it in fp32's own round-to-nearest-even. inf and NaN take the
 * generic path. */
static void f8_round_n_c(enum fp_format f, float *dst, const float *src, size_t n)
{
    const struct fp_info *fi = &infos[f];
    int k = 23 - fi->man_bits, emin = 1 - fi->bias;
    uint32_t min_normal = (uint32_t)(127 + emin) << 23, max = fp_f32_bits((float)fi->max);
    uint32_t over = fp_f32_bits(fp_round(f, INFINITY)), low = (1u << k) - 1; /* inf, or NaN */
    float C = ldexpf(1.0f, emin - fi->man_bits + 23);
    for (size_t i = 0; i < n; i++) {
        uint32_t u = fp_f32_bits(src[i]), a = u & 0x7fffffffu, sign = u & 0x80000000u;
        if (a >= 0x7f800000u) {
            dst[i] = fp_round(f, src[i]);
        } else if (a >= min_normal) {
            uint32_t r = (a + (low >> 1) + ((a >> k) & 1)) & ~low;
            dst[i] = fp_f32_from_bits(sign | (r > max ? over : r));
        } else {
            float t = (fp_f32_from_bits(a) + C) - C;
            dst[i] = fp_f32_from_bits(sign | fp_f32_bits(t));
        }
    }
}

void fp_round_n(enum fp_format f, float *dst, const float *src, size_t n)
{
    RACE_READ(src, n * 4);
    RACE_WRITE(dst, n * 4);
    bool fast = simd();
    switch (f) {
    case FP_FP16:
#if FP_X86
        if (fast) {
            f16_round_n_f16c(dst, src, n);
            return;
        }
#endif
        f16_round_n_c(dst, src, n);
        return;
    case FP_BF16:
#if FP_X86
        if (fast) {
            bf16_round_n_avx2(dst, src, n);
            return;
        }
#endif
        bf16_round_n_c(dst, src, n);
        return;
    case FP_E4M3:
    case FP_E5M2:
        (void)fast;
        f8_round_n_c(f, dst, src, n);
        return;
    default:
        (void)fast;
        for (size_t i = 0; i < n; i++)
            dst[i] = fp_round(f, src[i]);
    }
}
