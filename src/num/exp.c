/* e^x 4 or 8 floats at a time, bit for bit the C library's expf (num/exp.h).
 *
 * glibc's expf (since 2.27, from Szabolcs Nagy's optimized-routines) works in double:
 *     k = round(x 32/ln2), r = x 32/ln2 - k,
 *     e^x = 2^(k/32) 2^(r/32) ~= s (C0 r^3 + C1 r^2 + C2 r + 1),
 * s = 2^(k/32) built from a 32-entry table of 2^(i/32) and k's high bits put in the exponent,
 * and rounds the double result to float once. On x86-64 the library picks, at load time, a
 * build of it compiled for FMA when the CPU has FMA and AVX2; that build fuses five of the
 * multiply-adds (read from its machine code: x 32/ln2 + 1.5 2^52, which rounds k, and
 * x 32/ln2 - k, which gives r without rounding the product; C0 r + C1; C2 r + 1; z r^2 + y).
 * exp4 and exp8 below do the same operations in the same order on four or eight doubles at
 * once (AVX2, AVX-512), so under the same conditions they give the same bits; without FMA and
 * AVX2 exp_n calls expf.
 *
 * A C library may change its expf (a new algorithm, or another table). So before exp_n first
 * uses the vector code, it compares it with expf on a sweep of inputs over the whole range
 * (the inputs hardest to round, every 16381st bit pattern from -104 to 104, and the edges); on
 * any difference it calls expf from then on. tests/unit/test_num.c requires the vector code
 * where the library has its FMA build and compares the two on every 61st float; while writing
 * this, all 2^32 inputs were compared. */
#include "config.h"
#include "num/exp.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "base/cpu.h"
#include "base/race.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define EXP_X86 1
#include <immintrin.h>
#else
#define EXP_X86 0
#endif

#if EXP_X86
/* The constants of glibc's sysdeps/ieee754/flt-32/e_exp2f_data.c (N = 32): 2^(i/32) as the
 * bits of a double less i << 47 (so that adding k << 47 gives 2^(k/32) for any k whose low
 * bits are i), 32/ln2, the shift that rounds to an integer, and the polynomial's coefficients
 * scaled for r in units of 1/32. */
static const uint64_t tab[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};
#define INV_LN2_N 0x1.71547652b82fep+5
#define SHIFT     0x1.8p+52
#define C0        0x1.c6af84b912394p-20
#define C1        0x1.ebfce50fac4f3p-13
#define C2        0x1.62e42ff0c52d6p-6

/* Four at a time in AVX2: the table read with a gather. neg: e^-x (the sign flipped on load,
 * exactly). */
#define AVX2_FMA __attribute__((target("avx2,fma")))
static inline AVX2_FMA __attribute__((always_inline)) void exp4(float *y, const float *x, bool neg)
{
    const __m256d inv = _mm256_set1_pd(INV_LN2_N), shift = _mm256_set1_pd(SHIFT);
    __m128 xf = _mm_loadu_ps(x);
    if (neg)
        xf = _mm_xor_ps(xf, _mm_set1_ps(-0.0f));
    __m256d xd = _mm256_cvtps_pd(xf);
    __m256d kd = _mm256_fmadd_pd(inv, xd, shift); /* k in the low bits */
    __m256i ki = _mm256_castpd_si256(kd);
    kd = _mm256_sub_pd(kd, shift);
    __m256d r = _mm256_fmsub_pd(inv, xd, kd);
    __m256i t = _mm256_i64gather_epi64((const long long *)tab,
                                       _mm256_and_si256(ki, _mm256_set1_epi64x(31)), 8);
    __m256d s = _mm256_castsi256_pd(_mm256_add_epi64(t, _mm256_slli_epi64(ki, 47)));
    __m256d z = _mm256_fmadd_pd(_mm256_set1_pd(C0), r, _mm256_set1_pd(C1));
    __m256d r2 = _mm256_mul_pd(r, r);
    __m256d p = _mm256_fmadd_pd(_mm256_set1_pd(C2), r, _mm256_set1_pd(1.0));
    p = _mm256_fmadd_pd(z, r2, p);
    __m128 out = _mm256_cvtpd_ps(_mm256_mul_pd(p, s));
    __m128i top = _mm_and_si128(_mm_srli_epi32(_mm_castps_si128(xf), 20), _mm_set1_epi32(0x7ff));
    int big = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(top, _mm_set1_epi32(0x42a))));
    /* the library's special cases, |x| >= 88 (the top 12 bits of |x| from those of 88.0f,
     * 0x42b), inf and NaN: computed by it */
    if (big) {
        float xs[4], ys[4];
        _mm_storeu_ps(xs, xf);
        _mm_storeu_ps(ys, out);
        for (int j = 0; j < 4; j++)
            if (big >> j & 1)
                ys[j] = expf(xs[j]);
        out = _mm_loadu_ps(ys);
    }
    _mm_storeu_ps(y, out); /* last: y may be x */
}

/* Eight at a time in AVX-512: the table in four registers, read with two two-register permutes
 * (entries 0-15 and 16-31) and a blend on bit 4 of the index, much faster than a gather. */
#define AVX512 __attribute__((target("avx512f")))
static inline AVX512 __attribute__((always_inline)) void
exp8(float *y, const float *x, bool neg, __m512i t0, __m512i t1, __m512i t2, __m512i t3)
{
    const __m512d inv = _mm512_set1_pd(INV_LN2_N), shift = _mm512_set1_pd(SHIFT);
    __m256 xf = _mm256_loadu_ps(x);
    if (neg)
        xf = _mm256_castsi256_ps(
            _mm256_xor_si256(_mm256_castps_si256(xf), _mm256_set1_epi32((int)0x80000000u)));
    __m512d xd = _mm512_cvtps_pd(xf);
    __m512d kd = _mm512_fmadd_pd(inv, xd, shift);
    __m512i ki = _mm512_castpd_si512(kd);
    kd = _mm512_sub_pd(kd, shift);
    __m512d r = _mm512_fmsub_pd(inv, xd, kd);
    __m512i t = _mm512_mask_blend_epi64(_mm512_test_epi64_mask(ki, _mm512_set1_epi64(16)),
                                        _mm512_permutex2var_epi64(t0, ki, t1),
                                        _mm512_permutex2var_epi64(t2, ki, t3));
    __m512d s = _mm512_castsi512_pd(_mm512_add_epi64(t, _mm512_slli_epi64(ki, 47)));
    __m512d z = _mm512_fmadd_pd(_mm512_set1_pd(C0), r, _mm512_set1_pd(C1));
    __m512d r2 = _mm512_mul_pd(r, r);
    __m512d p = _mm512_fmadd_pd(_mm512_set1_pd(C2), r, _mm512_set1_pd(1.0));
    p = _mm512_fmadd_pd(z, r2, p);
    __m256 out = _mm512_cvtpd_ps(_mm512_mul_pd(p, s));
    __m256i top =
        _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(xf), 20), _mm256_set1_epi32(0x7ff));
    int big =
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(0x42a))));
    if (big) { /* as in exp4 */
        float xs[8], ys[8];
        _mm256_storeu_ps(xs, xf);
        _mm256_storeu_ps(ys, out);
        for (int j = 0; j < 8; j++)
            if (big >> j & 1)
                ys[j] = expf(xs[j]);
        out = _mm256_loadu_ps(ys);
    }
    _mm256_storeu_ps(y, out);
}

/* The loops: W lanes at a time over the array, in one function (the table and constants
 * loaded once), a last partial group through a padded copy. */
static AVX2_FMA void exp4_n(float *y, const float *x, size_t n, bool neg)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        exp4(y + i, x + i, neg);
    if (i < n) {
        float in[4] = {0}, out[4];
        memcpy(in, x + i, (n - i) * sizeof *x);
        exp4(out, in, neg);
        memcpy(y + i, out, (n - i) * sizeof *y);
    }
}

static AVX512 void exp8_n(float *y, const float *x, size_t n, bool neg)
{
    const __m512i t0 = _mm512_loadu_si512(tab), t1 = _mm512_loadu_si512(tab + 8),
                  t2 = _mm512_loadu_si512(tab + 16), t3 = _mm512_loadu_si512(tab + 24);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        exp8(y + i, x + i, neg, t0, t1, t2, t3);
    if (i < n) {
        float in[8] = {0}, out[8];
        memcpy(in, x + i, (n - i) * sizeof *x);
        exp8(out, in, neg, t0, t1, t2, t3);
        memcpy(y + i, out, (n - i) * sizeof *y);
    }
}

static void exp_vec(float *y, const float *x, size_t n, int w, bool neg)
{
    if (w == 8)
        exp8_n(y, x, n, neg);
    else
        exp4_n(y, x, n, neg);
}

/* The widest code this CPU and its OS run: 8 (AVX-512F, with FMA and AVX2), 4 (FMA and AVX2:
 * the library's own test for its FMA build) or 0. */
static int cpu_lanes(void)
{
    if (!cpu_has(CPU_FMA | CPU_AVX2))
        return 0;
    return cpu_has(CPU_AVX512F) ? 8 : 4;
}

/* The inputs whose result, before its rounding to float, lies within 2^-23 of a float's ulp
 * from a point halfway between two floats (118 of them, found by computing all 2^32 while
 * writing this): there any change in the double arithmetic (an operation unfused, a constant
 * off) flips the result; elsewhere such a change shows on a handful of the 2^32 inputs, if any. */
static const uint32_t hard[] = {
    0x337ffffc, 0x337ffffd, 0x337ffffe, 0x337fffff, 0x33800000, 0x33800001, 0x343ffffe, 0x343fffff,
    0x349ffffe, 0x34dffffd, 0x352ffffc, 0x356ffff9, 0x35a7fff9, 0x35f7fff1, 0x3653ffea, 0x367bffe1,
    0x3695ffea, 0x36fdffc1, 0x3734ffc0, 0x377eff81, 0x37a57f95, 0x37ff7f01, 0x387ebe05, 0x38fddc11,
    0x390c0d9b, 0x3998e24b, 0x39d20d3a, 0x39e6ab02, 0x3a29cdeb, 0x3b0b4517, 0x3b37991a, 0x3b50125a,
    0x3b8f4138, 0x3ba3afaa, 0x3bf4a127, 0x3c4804ea, 0x3c76fcc3, 0x3d0f39ba, 0x3d103181, 0x3d38df42,
    0x3d8932e8, 0x3de3ae1b, 0x3df0cb95, 0x3e73ade2, 0x3ee08eed, 0x3fbe11a6, 0x400d98c7, 0x40143eb5,
    0x404089d7, 0x40a63bf9, 0x40c12c37, 0x418eb76d, 0x4197276c, 0x4202422f, 0xb2fffffd, 0xb2fffffe,
    0xb2ffffff, 0xb3000000, 0xb3000001, 0xb3000002, 0xb3c00000, 0xb3c00001, 0xb4200001, 0xb4600002,
    0xb4b00002, 0xb5480005, 0xb59c0006, 0xb5d4000b, 0xb616000b, 0xb6b50020, 0xb6e90035, 0xb70b8026,
    0xb7c9c09f, 0xb7f4c0ea, 0xb8ca127e, 0xb8df930d, 0xb921cb32, 0xb971ef25, 0xb97dbfdc, 0xb9a56aae,
    0xb9bc64aa, 0xb9cf1678, 0xb9d65737, 0xb9fbab76, 0xba253b54, 0xba493dc5, 0xba921bd7, 0xba981b96,
    0xbab8080f, 0xbac75bcb, 0xbb378639, 0xbb57a63b, 0xbbd8ac3c, 0xbbe861b2, 0xbc3f2901, 0xbc70a558,
    0xbce54441, 0xbd1c78ff, 0xbd3e69a5, 0xbd45ef0a, 0xbe14c82c, 0xbeae4609, 0xbeb7bdad, 0xbecef5ae,
    0xbf0fa174, 0xbf2c2441, 0xbfdd1b2c, 0xbfde3004, 0xc00a6809, 0xc068da36, 0xc0809842, 0xc09fdf32,
    0xc0d7626b, 0xc1d2107a, 0xc1f3af50, 0xc23dd581, 0xc2633f4c, 0xc27c65d9,
};

/* Whether exp_vec on w lanes agrees with this library's expf on the hard inputs and on a
 * sweep of the whole range (num/exp.h). */
bool exp_agrees(int w)
{
    if ((w != 4 && w != 8) || w > cpu_lanes())
        return w == 1; /* the library itself, or code this CPU cannot run */
    enum { M = 256 };
    float x[M], y[M];
    size_t k = 0;
    _Static_assert(sizeof hard / sizeof *hard <= M, "the hard inputs fit in x");
    for (; k < sizeof hard / sizeof *hard; k++)
        memcpy(&x[k], &hard[k], 4);
    const uint32_t top = 0x42d00000u; /* 104: from -104 to 104, which takes in 89 */
    for (uint64_t u = 0; u <= 0xffffffffu; u += 16381) {
        uint32_t b = (uint32_t)u;
        if ((b & 0x7fffffffu) <= top)
            memcpy(&x[k++], &b, 4);
        if (k < M)
            continue;
        exp_vec(y, x, k, w, false);
        for (size_t j = 0; j < k; j++)
            if (memcmp(&y[j], &(float){expf(x[j])}, 4))
                return false;
        k = 0;
    }
    static const float edges[] = {0.0f,          -0.0f,          88.0f,  -88.0f,
                                  0x1.62e42ep6f, -0x1.9fe368p6f, 1e-30f, -1e-30f,
                                  INFINITY,      -INFINITY,      NAN};
    _Static_assert(sizeof edges / sizeof *edges < M, "the edges fit in x");
    if (k + sizeof edges / sizeof *edges > M)
        k = 0; /* the sweep's last few, dropped to make room */
    memcpy(x + k, edges, sizeof edges);
    k += sizeof edges / sizeof *edges;
    exp_vec(y, x, k, w, false);
    for (size_t j = 0; j < k; j++) {
        float want = expf(x[j]);
        if (memcmp(&y[j], &want, 4) && !(isnan(y[j]) && isnan(want)))
            return false;
    }
    return true;
}

/* The widest vector code this machine runs that agrees with expf; 0: none. */
static int lanes(void)
{
    static atomic_int has = -1; /* -1: not yet asked */
    int h = atomic_load_explicit(&has, memory_order_relaxed);
    if (h < 0) {
        h = cpu_lanes();
        while (h && !exp_agrees(h))
            h -= 4;
        atomic_store_explicit(&has, h, memory_order_relaxed);
    }
    return h;
}
#else
static int lanes(void)
{
    return 0;
}

bool exp_agrees(int w)
{
    return w == 1;
}
#endif

int exp_lanes(void)
{
    int w = lanes();
    return w ? w : 1;
}

/* y = e^x, or e^-x with neg, on w lanes. */
static bool lanes_exp(int w, float *y, const float *x, size_t n, bool neg)
{
    if (w == 1) {
        for (size_t i = 0; i < n; i++)
            y[i] = expf(neg ? -x[i] : x[i]);
        return true;
    }
#if EXP_X86
    if ((w == 4 || w == 8) && w <= cpu_lanes()) {
        exp_vec(y, x, n, w, neg);
        return true;
    }
#endif
    return false;
}

bool exp_n_lanes(int w, float *y, const float *x, size_t n)
{
    RACE_READ(x, n * 4);
    RACE_WRITE(y, n * 4);
    return lanes_exp(w, y, x, n, false);
}

void exp_n(float *y, const float *x, size_t n)
{
    RACE_READ(x, n * 4);
    RACE_WRITE(y, n * 4);
    lanes_exp(exp_lanes(), y, x, n, false);
}

void exp_neg_n(float *y, const float *x, size_t n)
{
    RACE_READ(x, n * 4);
    RACE_WRITE(y, n * 4);
    lanes_exp(exp_lanes(), y, x, n, true);
}
