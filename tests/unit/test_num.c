/* Unit tests of src/num/fp: the number formats and their conversions.
 *
 * Three independent checks of the same rounding: hand-picked cases with their known answers
 * (ties, subnormals, overflow boundaries), a slow reference written here from the definition
 * (the two neighbouring representable values, computed in double, the nearer one, ties to the
 * even mantissa), and PyTorch's own casts (tests/data/formats_torch.json). The fast scalar and
 * bulk paths (F16C/AVX2 and portable) must agree with the generic one bit for bit. */
#include "config.h"

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/rng.h"
#include "base/units.h"
#include "harness.h"
#include "num/exp.h"
#include "num/fp.h"

static float f32(uint32_t u)
{
    return fp_f32_from_bits(u);
}

static uint32_t bits(float x)
{
    return fp_f32_bits(x);
}

static const enum fp_format small[] = {FP_FP16, FP_BF16, FP_E4M3, FP_E5M2};
#define NSMALL (sizeof small / sizeof small[0])

/* Check's assertions write a mark to a pipe each time they pass: too slow for loops over
 * every bit pattern. EXPECT counts failures (printing the first few) and each test asserts
 * the count once at its end. */
static int failures;
static void expect_failed(const char *what, int line)
{
    if (failures++ < 5)
        fprintf(stderr, "# test_num.c:%d: failed: %s\n", line, what);
}
#define EXPECT(cond)    ((cond) ? (void)0 : expect_failed(#cond, __LINE__))
#define EXPECT_EQ(a, b) EXPECT((a) == (b))

/* ------------------------------------------------------------------ the slow reference */

/* The magnitudes of a format, in the order of their encodings 0 .. max_bits + 1, computed from
 * the definition: encoding b has exponent field E = b >> m and mantissa field f; its value is
 * f * 2^(1 - bias - m) when E = 0 and (2^m + f) * 2^(E - bias - m) otherwise. The entry after
 * the largest finite one is the value the formula gives the next encoding (2^(emax+1) for the
 * IEEE-like formats, 480 for e4m3fn): it stands for "overflow", and its parity decides ties at
 * the top, as round-to-nearest-even does. */
struct ref {
    int m, bias, nbits;
    bool has_inf;
    size_t n; /* entries: max_bits + 2 */
    double *v;
};

static void ref_init(struct ref *r, int exp_bits, int m, int bias, bool has_inf)
{
    r->m = m, r->bias = bias, r->has_inf = has_inf, r->nbits = 1 + exp_bits + m;
    uint32_t exp_all = ((1u << exp_bits) - 1) << m;
    uint32_t max_bits = has_inf ? exp_all - 1 : (exp_all | ((1u << m) - 1)) - 1;
    r->n = max_bits + 2;
    r->v = malloc(r->n * sizeof *r->v);
    ck_assert_ptr_nonnull(r->v);
    for (uint32_t b = 0; b < r->n; b++) {
        uint32_t e = b >> m, f = b & ((1u << m) - 1);
        r->v[b] = e == 0 ? ldexp((double)f, 1 - bias - m)
                         : ldexp((double)((1u << m) + f), (int)e - bias - m);
    }
}

/* The encoding of finite or infinite (not NaN) x. */
static uint32_t ref_encode(const struct ref *r, float xf)
{
    double x = fabs((double)xf);
    uint32_t sign = signbit(xf) ? 1u << (r->nbits - 1) : 0;
    uint32_t overflow = (uint32_t)(r->n - 1); /* the encoding after the largest: inf, or NaN */
    size_t last = r->n - 1;
    if (x >= r->v[last])
        return sign | overflow;
    /* The largest lo with v[lo] <= x; v[lo + 1] > x. */
    size_t lo = 0, hi = last;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->v[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    /* Compare 2x with v[lo] + v[hi]: exact in double, the values having few significant bits. */
    double twice = 2 * x, sum = r->v[lo] + r->v[hi];
    size_t pick = twice < sum ? lo : twice > sum ? hi : (lo % 2 == 0 ? lo : hi);
    return sign | (pick == last ? overflow : (uint32_t)pick);
}

static struct ref refs[FP_COUNT];

static void refs_setup(void)
{
    ref_init(&refs[FP_FP16], 5, 10, 15, true);
    ref_init(&refs[FP_BF16], 8, 7, 127, true);
    ref_init(&refs[FP_E4M3], 4, 3, 7, false);
    ref_init(&refs[FP_E5M2], 5, 2, 15, true);
}

static void refs_teardown(void)
{
    for (size_t i = 0; i < NSMALL; i++)
        free(refs[small[i]].v);
}

/* Compares every path with the reference on one fp32 pattern; returns the number of
 * mismatches (the first few are printed by the check that fails). */
static int check_against_ref(uint32_t u)
{
    float x = f32(u);
    if (isnan(x))
        return 0;
    int bad = 0;
    for (size_t i = 0; i < NSMALL; i++) {
        enum fp_format f = small[i];
        uint32_t want = ref_encode(&refs[f], x), got = fp_encode(f, x);
        if (got != want) {
            bad++;
            if (failures++ < 5) /* print the first few only */
                fprintf(stderr, "# %s: fp32 0x%08x: fp_encode 0x%x, reference 0x%x\n",
                        fp_info(f)->name, u, got, want);
        }
    }
    bad += fp16_from_f32(x) != fp_encode(FP_FP16, x);
    bad += bf16_from_f32(x) != fp_encode(FP_BF16, x);
    /* fp_round's fast paths give the generic path's bits */
    for (int f = 0; f < FP_COUNT; f++) {
        float a = fp_round((enum fp_format)f, x), b = fp_decode((enum fp_format)f, fp_encode(f, x));
        bad += memcmp(&a, &b, sizeof a) != 0;
    }
    return bad;
}

/* The training precisions are one table (num/fp.h): its order is the knobs', its reader
 * the commands', and a format no run trains in is refused with the table's names. */
START_TEST(training_precisions_are_one_table)
{
    int n;
    const struct fp_precision *t = fp_precisions(&n);
    ck_assert_int_eq(n, 3);
    ck_assert(t[0].format == FP_FP32 && !t[0].mixed && !t[0].scaled);
    ck_assert(t[1].format == FP_BF16 && t[1].mixed && !t[1].scaled);
    ck_assert(t[2].format == FP_FP16 && t[2].mixed && t[2].scaled);
    ck_assert(fp_precision_step(FP_FP32, 1) == FP_BF16);
    ck_assert(fp_precision_step(FP_FP16, 1) == FP_FP32);
    ck_assert(fp_precision_step(FP_FP32, -1) == FP_FP16);
    ck_assert_ptr_null(fp_precision(FP_E4M3));
    enum fp_format f = FP_FP32;
    ck_assert_int_eq(fp_parse_precision("bf16", &f, NULL), 0);
    ck_assert(f == FP_BF16);
    struct error e = {0};
    ck_assert_int_eq(fp_parse_precision("e4m3", &f, &e), ERR_INVAL);
    ck_assert_str_eq(e.msg, "'e4m3' is not a precision (use fp32, bf16, fp16 or fp8)");
    ck_assert(f == FP_BF16);
    ck_assert_int_eq(fp_bytes(FP_BF16), 2);
    ck_assert_int_eq(fp_bytes(FP_E4M3), 1);
}
END_TEST

START_TEST(matches_reference_on_random_patterns)
{
    struct rng r;
    rng_seed(&r, 20261130, 1);
    int bad = 0;
    for (int i = 0; i < (1 << 22); i++)
        bad += check_against_ref((uint32_t)rng_u64(&r));
    ck_assert_int_eq(bad, 0);
}
END_TEST

/* Every fp32 exponent, both signs, and mantissas at and around every possible rounding point
 * (the half-way patterns for each number of dropped bits, with the kept bit odd and even). */
START_TEST(matches_reference_at_every_boundary)
{
    int bad = 0;
    for (uint32_t ex = 0; ex < 256; ex++)
        for (uint32_t s = 0; s < 2; s++) {
            uint32_t base = s << 31 | ex << 23;
            uint32_t fixed[] = {0, 1, 2, 0x7fffff, 0x7ffffe, 0x400000, 0x3fffff, 0x555555};
            for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++)
                bad += check_against_ref(base | fixed[k]);
            for (uint32_t d = 1; d < 24; d++) {
                uint32_t half = 1u << (d - 1);
                for (uint32_t odd = 0; odd < 2; odd++)
                    for (int delta = -1; delta <= 1; delta++) {
                        uint32_t mant = ((odd << d) | half) + (uint32_t)delta;
                        bad += check_against_ref(base | (mant & 0x7fffff));
                        bad += check_against_ref(base | ((mant | 0x7fffffu << (d + 1)) & 0x7fffff));
                    }
            }
        }
    ck_assert_int_eq(bad, 0);
}
END_TEST

/* ------------------------------------------------------------------ PyTorch's casts */

static uint32_t hex(json_t *entry, const char *key)
{
    const char *s = json_string_value(json_object_get(entry, key));
    ck_assert_msg(s != NULL, "entry without '%s'", key);
    char *end;
    unsigned long v = strtoul(s, &end, 16);
    ck_assert_msg(*end == 0 && !strncmp(s, "0x", 2), "bad hex '%s'", s);
    return (uint32_t)v;
}

START_TEST(matches_pytorch_reference)
{
    json_error_t jerr;
    json_t *doc = json_load_file(harness_data("formats_torch.json"), 0, &jerr);
    ck_assert_msg(doc != NULL, "formats_torch.json: %s (line %d)", jerr.text, jerr.line);
    ck_assert(json_is_array(doc));
    /* The file's README: 400 values. */
    ck_assert_int_eq(json_array_size(doc), 400);
    size_t i, checked = 0;
    json_t *entry;
    json_array_foreach(doc, i, entry)
    {
        const char *input = json_string_value(json_object_get(entry, "input"));
        ck_assert_ptr_nonnull(input);
        float x = f32(hex(entry, "fp32"));
        double parsed;
        ck_assert_int_eq(units_parse_double(input, true, &parsed, NULL), 0);
        ck_assert_msg(isnan(x) ? isnan((float)parsed) : bits((float)parsed) == bits(x),
                      "input '%s' does not read back as fp32 0x%08x", input, bits(x));
        for (size_t k = 0; k < NSMALL; k++) {
            enum fp_format f = small[k];
            uint32_t want = hex(entry, fp_info(f)->key), got = fp_encode(f, x);
            if (isnan(x))
                ck_assert_msg(isnan(fp_decode(f, got)) && isnan(fp_decode(f, want)),
                              "%s of NaN '%s' is not NaN", fp_info(f)->key, input);
            else
                ck_assert_msg(got == want, "%s(%s = 0x%08x): got 0x%x, PyTorch 0x%x",
                              fp_info(f)->key, input, bits(x), got, want);
            if (f == FP_FP16 && !isnan(x)) {
                fp16_t h;
                fp16_from_f32_n(&h, &x, 1);
                ck_assert_uint_eq(fp16_from_f32(x), want);
                ck_assert_uint_eq(h, want);
            }
            if (f == FP_BF16 && !isnan(x))
                ck_assert_uint_eq(bf16_from_f32(x), want);
            checked++;
        }
    }
    ck_assert_uint_eq(checked, 4 * 400);
    json_decref(doc);
}
END_TEST

/* ------------------------------------------------------------------ round trips */

START_TEST(every_fp16_pattern_round_trips)
{
    static float all[65536], port[65536];
    static fp16_t h[65536], back[65536], back_port[65536];
    for (uint32_t i = 0; i < 65536; i++)
        h[i] = (fp16_t)i;
    fp16_to_f32_n(all, h, 65536);
    enum fp_impl old = fp_set_impl(FP_IMPL_PORTABLE);
    fp16_to_f32_n(port, h, 65536);
    fp_set_impl(old);
    for (uint32_t i = 0; i < 65536; i++) {
        float x = fp16_to_f32((fp16_t)i);
        EXPECT_EQ(bits(x), bits(fp_decode(FP_FP16, i)));
        EXPECT_EQ(bits(x), bits(all[i]));
        EXPECT_EQ(bits(x), bits(port[i]));
        /* NaN comes back quiet (bit 9), with its sign and payload; all else exactly. */
        uint32_t want = isnan(x) ? (i | 0x200) : i;
        EXPECT_EQ(fp16_from_f32(x), want);
        EXPECT_EQ(fp_encode(FP_FP16, x), want);
    }
    fp16_from_f32_n(back, all, 65536);
    old = fp_set_impl(FP_IMPL_PORTABLE);
    fp16_from_f32_n(back_port, all, 65536);
    fp_set_impl(old);
    for (uint32_t i = 0; i < 65536; i++) {
        EXPECT_EQ(back[i], fp16_from_f32(all[i]));
        EXPECT_EQ(back_port[i], back[i]);
    }
    /* A few decoded values by their definition. */
    EXPECT(fp16_to_f32(0x3c00) == 1.0f);
    EXPECT(fp16_to_f32(0x7bff) == 65504.0f);
    EXPECT(fp16_to_f32(0x0001) == 0x1p-24f);
    EXPECT(fp16_to_f32(0x03ff) == 1023 * 0x1p-24f);
    EXPECT(fp16_to_f32(0xc000) == -2.0f);
    EXPECT(isinf(fp16_to_f32(0xfc00)) && fp16_to_f32(0xfc00) < 0);
    ck_assert_int_eq(failures, 0);
}
END_TEST

START_TEST(every_bf16_pattern_round_trips)
{
    static float all[65536], port[65536];
    static bf16_t h[65536];
    for (uint32_t i = 0; i < 65536; i++)
        h[i] = (bf16_t)i;
    bf16_to_f32_n(all, h, 65536);
    enum fp_impl old = fp_set_impl(FP_IMPL_PORTABLE);
    bf16_to_f32_n(port, h, 65536);
    fp_set_impl(old);
    for (uint32_t i = 0; i < 65536; i++) {
        float x = bf16_to_f32((bf16_t)i);
        EXPECT_EQ(bits(x), bits(fp_decode(FP_BF16, i)));
        EXPECT_EQ(bits(x), bits(all[i]));
        EXPECT_EQ(bits(x), bits(port[i]));
        /* bf16 is fp32's top half: the decoded bits are i << 16 (NaN quiet). */
        EXPECT_EQ(bits(x), isnan(x) ? (i << 16 | 0x400000) : i << 16);
        uint32_t want = isnan(x) ? (i | 0x40) : i;
        EXPECT_EQ(bf16_from_f32(x), want);
        EXPECT_EQ(fp_encode(FP_BF16, x), want);
    }
    ck_assert_int_eq(failures, 0);
}
END_TEST

START_TEST(every_fp8_pattern_round_trips)
{
    for (uint32_t i = 0; i < 256; i++) {
        float a = fp_decode(FP_E4M3, i), b = fp_decode(FP_E5M2, i);
        /* e4m3fn has one NaN per sign (S.1111.111); e5m2 NaN comes back quiet (bit 1). */
        EXPECT_EQ(fp_encode(FP_E4M3, a), i);
        EXPECT_EQ(fp_encode(FP_E5M2, b), isnan(b) ? (i | 0x02) : i);
        EXPECT(!!isnan(a) == ((i & 0x7f) == 0x7f));
        EXPECT(!!isnan(b) == ((i & 0x7f) > 0x7c));
        EXPECT(!isinf(a));
        EXPECT(!!isinf(b) == ((i & 0x7f) == 0x7c));
    }
    EXPECT(fp_decode(FP_E4M3, 0x7e) == 448.0f);
    EXPECT(fp_decode(FP_E4M3, 0x38) == 1.0f);
    EXPECT(fp_decode(FP_E4M3, 0x01) == 0x1p-9f);
    EXPECT(fp_decode(FP_E4M3, 0x08) == 0x1p-6f);
    EXPECT(fp_decode(FP_E5M2, 0x7b) == 57344.0f);
    EXPECT(fp_decode(FP_E5M2, 0x3c) == 1.0f);
    EXPECT(fp_decode(FP_E5M2, 0x01) == 0x1p-16f);
    EXPECT(fp_decode(FP_E5M2, 0xbe) == -1.5f);
    ck_assert_int_eq(failures, 0);
}
END_TEST

/* ------------------------------------------------------------------ chosen cases */

START_TEST(ties_go_to_even)
{
    /* Exactly half-way between 1 and the next value rounds to 1 (even mantissa); three
     * half-ulps rounds up to 1 + 2 ulp (even); a hair above half-way rounds up. */
    ck_assert_uint_eq(fp_encode(FP_FP16, 1 + 0x1p-11f), 0x3c00);
    ck_assert_uint_eq(fp_encode(FP_FP16, 1 + 3 * 0x1p-11f), 0x3c02);
    ck_assert_uint_eq(fp_encode(FP_FP16, 1 + 0x1p-11f + 0x1p-23f), 0x3c01);
    ck_assert_uint_eq(fp_encode(FP_FP16, 1 + 0x1p-11f - 0x1p-23f), 0x3c00);
    ck_assert_uint_eq(fp_encode(FP_BF16, 1 + 0x1p-8f), 0x3f80);
    ck_assert_uint_eq(fp_encode(FP_BF16, 1 + 3 * 0x1p-8f), 0x3f82);
    ck_assert_uint_eq(fp_encode(FP_BF16, 1 + 0x1p-8f + 0x1p-23f), 0x3f81);
    ck_assert_uint_eq(bf16_from_f32(1 + 0x1p-8f), 0x3f80);
    ck_assert_uint_eq(bf16_from_f32(1 + 3 * 0x1p-8f), 0x3f82);
    ck_assert_uint_eq(fp_encode(FP_E4M3, 1 + 0x1p-4f), 0x38);
    ck_assert_uint_eq(fp_encode(FP_E4M3, 1 + 3 * 0x1p-4f), 0x3a);
    ck_assert_uint_eq(fp_encode(FP_E5M2, 1 + 0x1p-3f), 0x3c);
    ck_assert_uint_eq(fp_encode(FP_E5M2, 1 + 3 * 0x1p-3f), 0x3e);
    ck_assert_uint_eq(fp_encode(FP_FP16, -(1 + 3 * 0x1p-11f)), 0xbc02);
    /* 2049 is half-way between 2048 and 2050 in fp16: 2048 (even). 2051 -> 2052. */
    ck_assert(fp_round(FP_FP16, 2049) == 2048);
    ck_assert(fp_round(FP_FP16, 2051) == 2052);
    /* 0.1 and 1/3, the classics. */
    ck_assert_uint_eq(fp16_from_f32(0.1f), 0x2e66);
    ck_assert_uint_eq(bf16_from_f32(0.1f), 0x3dcd);
    ck_assert_uint_eq(fp16_from_f32(1.0f / 3), 0x3555);
}
END_TEST

START_TEST(subnormals_are_kept)
{
    /* fp16: smallest 2^-24, largest 1023 * 2^-24, smallest normal 2^-14. */
    ck_assert_uint_eq(fp16_from_f32(0x1p-24f), 0x0001);
    ck_assert_uint_eq(fp16_from_f32(0x1p-25f), 0x0000);        /* tie: to 0 (even) */
    ck_assert_uint_eq(fp16_from_f32(0x1.000002p-25f), 0x0001); /* just above the tie */
    ck_assert_uint_eq(fp16_from_f32(3 * 0x1p-25f), 0x0002);    /* tie 1|2: to 2 */
    ck_assert_uint_eq(fp16_from_f32(5 * 0x1p-25f), 0x0002);    /* tie 2|3: to 2 */
    ck_assert_uint_eq(fp16_from_f32(1023 * 0x1p-24f), 0x03ff);
    ck_assert_uint_eq(fp16_from_f32(0x1p-14f - 0x1p-25f), 0x0400); /* rounds up into normal */
    ck_assert_uint_eq(fp16_from_f32(0x1p-14f - 0x1p-24f - 0x1p-26f), 0x03ff);
    ck_assert_uint_eq(fp16_from_f32(0x1p-14f), 0x0400);
    ck_assert_uint_eq(fp16_from_f32(-0x1p-24f), 0x8001);
    ck_assert_uint_eq(fp16_from_f32(1e-8f), 0x0000);
    ck_assert_uint_eq(fp16_from_f32(6e-8f), 0x0001);
    ck_assert_uint_eq(fp16_from_f32(f32(0x00000001)), 0x0000); /* fp32 subnormal */
    ck_assert(fp16_to_f32(0x0001) == 0x1p-24f);
    /* bf16: fp32's exponent range, 7 mantissa bits: smallest 2^-133. */
    ck_assert_uint_eq(bf16_from_f32(0x1p-133f), 0x0001);
    ck_assert_uint_eq(bf16_from_f32(0x1p-134f), 0x0000);     /* tie: to 0 */
    ck_assert_uint_eq(bf16_from_f32(3 * 0x1p-134f), 0x0002); /* tie 1|2: to 2 */
    ck_assert_uint_eq(bf16_from_f32(127 * 0x1p-133f), 0x007f);
    ck_assert_uint_eq(bf16_from_f32(0x1p-126f - 0x1p-134f), 0x0080); /* up into normal */
    ck_assert_uint_eq(bf16_from_f32(f32(0x00008001)), 0x0001);
    ck_assert(bf16_to_f32(0x0001) == 0x1p-133f);
    /* fp8. */
    ck_assert_uint_eq(fp_encode(FP_E4M3, 0x1p-9f), 0x01);
    ck_assert_uint_eq(fp_encode(FP_E4M3, 0x1p-10f), 0x00);
    ck_assert_uint_eq(fp_encode(FP_E4M3, 7 * 0x1p-9f), 0x07);
    ck_assert_uint_eq(fp_encode(FP_E4M3, 0x1p-6f - 0x1p-10f), 0x08);
    ck_assert_uint_eq(fp_encode(FP_E5M2, 0x1p-16f), 0x01);
    ck_assert_uint_eq(fp_encode(FP_E5M2, 3 * 0x1p-16f), 0x03);
    ck_assert_uint_eq(fp_encode(FP_E5M2, 0x1p-17f), 0x00);
    ck_assert_uint_eq(fp_encode(FP_E5M2, -0x1p-14f), 0x84);
}
END_TEST

START_TEST(overflow_as_each_format_does)
{
    /* fp16: 65504 is the largest; 65520 is half-way to 2^16 and goes to inf (65504 is odd). */
    ck_assert_uint_eq(fp16_from_f32(65504), 0x7bff);
    ck_assert_uint_eq(fp16_from_f32(65519), 0x7bff);
    ck_assert_uint_eq(fp16_from_f32(65519.996f), 0x7bff);
    ck_assert_uint_eq(fp16_from_f32(65520), 0x7c00);
    ck_assert_uint_eq(fp16_from_f32(-65520), 0xfc00);
    ck_assert_uint_eq(fp16_from_f32(1e6f), 0x7c00);
    ck_assert_uint_eq(fp16_from_f32(FLT_MAX), 0x7c00);
    ck_assert_uint_eq(fp_encode(FP_FP16, 65520), 0x7c00);
    /* bf16: largest 0x1.fep127; half-way to 2^128 is 0x1.ffp127. */
    ck_assert_uint_eq(bf16_from_f32(0x1.fep127f), 0x7f7f);
    ck_assert_uint_eq(bf16_from_f32(0x1.fefffep127f), 0x7f7f);
    ck_assert_uint_eq(bf16_from_f32(0x1.ffp127f), 0x7f80);
    ck_assert_uint_eq(bf16_from_f32(FLT_MAX), 0x7f80);
    ck_assert_uint_eq(bf16_from_f32(-FLT_MAX), 0xff80);
    ck_assert_uint_eq(fp_encode(FP_BF16, FLT_MAX), 0x7f80);
    /* e4m3fn: largest 448; 464 is half-way to (the missing) 480 and stays 448 (even); above
     * it, and inf, become NaN. */
    ck_assert_uint_eq(fp_encode(FP_E4M3, 448), 0x7e);
    ck_assert_uint_eq(fp_encode(FP_E4M3, 464), 0x7e);
    ck_assert_uint_eq(fp_encode(FP_E4M3, 464.00003f), 0x7f);
    ck_assert_uint_eq(fp_encode(FP_E4M3, 480), 0x7f);
    ck_assert_uint_eq(fp_encode(FP_E4M3, 500), 0x7f);
    ck_assert_uint_eq(fp_encode(FP_E4M3, -500), 0xff);
    ck_assert_uint_eq(fp_encode(FP_E4M3, INFINITY), 0x7f);
    ck_assert_uint_eq(fp_encode(FP_E4M3, -INFINITY), 0xff);
    ck_assert(isnan(fp_round(FP_E4M3, 1e30f)));
    /* e5m2: largest 57344; 61440 is half-way to 65536 and goes to inf (57344 is odd). */
    ck_assert_uint_eq(fp_encode(FP_E5M2, 57344), 0x7b);
    ck_assert_uint_eq(fp_encode(FP_E5M2, 61439.996f), 0x7b);
    ck_assert_uint_eq(fp_encode(FP_E5M2, 61440), 0x7c);
    ck_assert_uint_eq(fp_encode(FP_E5M2, -1e9f), 0xfc);
    ck_assert(isinf(fp_round(FP_E5M2, 61440)));
}
END_TEST

START_TEST(nan_inf_and_negative_zero)
{
    for (size_t i = 0; i < NSMALL; i++) {
        enum fp_format f = small[i];
        ck_assert(isnan(fp_round(f, NAN)));
        ck_assert(isnan(fp_round(f, -NAN)) && signbit(fp_round(f, -NAN)));
        ck_assert(isnan(fp_round(f, f32(0x7f800001)))); /* signalling: becomes quiet NaN */
        ck_assert(bits(fp_round(f, f32(0x7f800001))) & 0x400000);
        float z = fp_round(f, -0.0f);
        ck_assert(z == 0 && signbit(z));
        z = fp_round(f, f32(0x80000001)); /* underflows to -0, sign kept */
        ck_assert(z == 0 && signbit(z));
        ck_assert(fp_round(f, 0.0f) == 0 && !signbit(fp_round(f, 0.0f)));
    }
    ck_assert_uint_eq(fp16_from_f32(-0.0f), 0x8000);
    ck_assert_uint_eq(bf16_from_f32(-0.0f), 0x8000);
    ck_assert_uint_eq(fp_encode(FP_E4M3, -0.0f), 0x80);
    ck_assert_uint_eq(fp_encode(FP_E5M2, -0.0f), 0x80);
    ck_assert_uint_eq(fp16_from_f32(INFINITY), 0x7c00);
    ck_assert_uint_eq(fp16_from_f32(-INFINITY), 0xfc00);
    ck_assert_uint_eq(bf16_from_f32(INFINITY), 0x7f80);
    ck_assert_uint_eq(fp_encode(FP_E5M2, INFINITY), 0x7c);
    /* Quiet NaN with the payload's top bits, as F16C does. */
    ck_assert_uint_eq(fp16_from_f32(f32(0x7f800001)), 0x7e00);
    ck_assert_uint_eq(fp16_from_f32(f32(0xffc02000)), 0xfe01);
    ck_assert_uint_eq(bf16_from_f32(f32(0x7f800001)), 0x7fc0);
    ck_assert_uint_eq(bf16_from_f32(f32(0x7fff0000)), 0x7fff);
    ck_assert_uint_eq(fp_encode(FP_FP32, f32(0x7f800001)), 0x7fc00001);
    ck_assert_uint_eq(fp_encode(FP_FP32, 0.1f), 0x3dcccccd);
    ck_assert_uint_eq(bits(fp16_to_f32(0x7c01)), 0x7fc02000);
}
END_TEST

START_TEST(step_moves_one_ulp)
{
    EXPECT_EQ(fp_step(FP_FP16, 0x3c00, +1), 0x3c01);
    EXPECT_EQ(fp_step(FP_FP16, 0x3c00, -1), 0x3bff);
    EXPECT_EQ(fp_step(FP_FP16, 0xbc00, +1), 0xbbff);
    EXPECT_EQ(fp_step(FP_FP16, 0xbc00, -1), 0xbc01);
    EXPECT_EQ(fp_step(FP_FP16, 0x0000, +1), 0x0001);
    EXPECT_EQ(fp_step(FP_FP16, 0x8000, +1), 0x0001);
    EXPECT_EQ(fp_step(FP_FP16, 0x0000, -1), 0x8001);
    EXPECT_EQ(fp_step(FP_FP16, 0x0001, -1), 0x0000);
    EXPECT_EQ(fp_step(FP_FP16, 0x8001, +1), 0x8000);
    EXPECT_EQ(fp_step(FP_FP16, 0x7bff, +1), 0x7c00);
    EXPECT_EQ(fp_step(FP_FP16, 0x7c00, +1), 0x7c00);
    EXPECT_EQ(fp_step(FP_FP16, 0x7c00, -1), 0x7bff);
    EXPECT_EQ(fp_step(FP_FP16, 0xfc00, -1), 0xfc00);
    EXPECT_EQ(fp_step(FP_FP16, 0x7e00, +1), 0x7e00);
    EXPECT_EQ(fp_step(FP_FP16, 0x3c00, 0), 0x3c00);
    EXPECT_EQ(fp_step(FP_BF16, 0x3f80, +1), 0x3f81);
    EXPECT_EQ(fp_step(FP_E4M3, 0x7e, +1), 0x7e); /* 448: nothing above */
    EXPECT_EQ(fp_step(FP_E4M3, 0x7d, +1), 0x7e);
    EXPECT_EQ(fp_step(FP_E4M3, 0xfe, -1), 0xfe);
    EXPECT_EQ(fp_step(FP_E5M2, 0x7b, +1), 0x7c);
    EXPECT_EQ(fp_step(FP_FP32, 0x3f800000, +1), 0x3f800001);
    EXPECT_EQ(fp_step(FP_FP32, 0x7f7fffff, +1), 0x7f800000);
    /* Over every finite fp16: a step up lands on a larger value with nothing in between
     * (the reference table is the sorted list of magnitudes), and a step down comes back. */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float x = fp16_to_f32((fp16_t)h);
        if (!isfinite(x))
            continue;
        uint32_t up = fp_step(FP_FP16, h, +1);
        float y = fp16_to_f32((fp16_t)up);
        EXPECT(y > x);
        EXPECT(fp_round(FP_FP16, (float)(((double)x + y) / 2 + (y - x) / 8)) == y);
        if (h != 0x8000 && h != 0)
            EXPECT_EQ(fp_step(FP_FP16, up, -1), h);
    }
    ck_assert_int_eq(failures, 0);
}
END_TEST

START_TEST(info_values)
{
    /* The published values (IEEE 754-2008 binary16/32; bfloat16; Micikevicius et al. 2022). */
    const struct {
        enum fp_format f;
        int bits, e, m;
        double max, min_normal, min_sub, eps;
    } want[] = {
        {FP_FP32, 32, 8, 23, FLT_MAX, FLT_MIN, FLT_TRUE_MIN, FLT_EPSILON},
        {FP_FP16, 16, 5, 10, 65504, 6.103515625e-05, 5.9604644775390625e-08, 9.765625e-04},
        {FP_BF16, 16, 8, 7, 3.3895313892515355e38, 1.1754943508222875e-38, 9.1835496157991212e-41,
         0.0078125},
        {FP_E4M3, 8, 4, 3, 448, 0.015625, 0.001953125, 0.125},
        {FP_E5M2, 8, 5, 2, 57344, 6.103515625e-05, 1.52587890625e-05, 0.25},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct fp_info *fi = fp_info(want[i].f);
        ck_assert_ptr_nonnull(fi);
        ck_assert_int_eq(fi->bits, want[i].bits);
        ck_assert_int_eq(fi->exp_bits, want[i].e);
        ck_assert_int_eq(fi->man_bits, want[i].m);
        ck_assert_int_eq(fi->bits, 1 + fi->exp_bits + fi->man_bits);
        ck_assert_int_eq(fi->bias, (1 << (fi->exp_bits - 1)) - 1);
        ck_assert(fi->max == want[i].max);
        ck_assert(fi->min_normal == want[i].min_normal);
        ck_assert(fi->min_subnormal == want[i].min_sub);
        ck_assert(fi->epsilon == want[i].eps);
        /* The same values from the encodings: 1, 1 << m, the one below the top, 1's step. */
        uint32_t one = fp_encode(want[i].f, 1.0f);
        ck_assert(fp_decode(want[i].f, 1) == fi->min_subnormal);
        ck_assert(fp_decode(want[i].f, 1u << fi->man_bits) == fi->min_normal);
        ck_assert(fp_decode(want[i].f, fp_step(want[i].f, one, +1)) - 1.0 == fi->epsilon);
        uint32_t top = fp_encode(want[i].f, INFINITY);
        float below = fp_decode(want[i].f, fp_step(want[i].f, top, -1));
        ck_assert(fi->has_inf ? below == fi->max : isnan(below));
        ck_assert(fp_round(want[i].f, (float)fi->max) == (float)fi->max);
        ck_assert(fi->has_inf == (want[i].f != FP_E4M3));
    }
    ck_assert_ptr_null(fp_info(FP_COUNT));
    ck_assert_str_eq(fp_info(FP_E4M3)->key, "fp8_e4m3");
    ck_assert_str_eq(fp_info(FP_E5M2)->name, "fp8 e5m2");

    enum fp_format f;
    struct error e = {0};
    ck_assert_int_eq(fp_parse_format("bf16", &f, &e), 0);
    ck_assert_int_eq(f, FP_BF16);
    ck_assert_int_eq(fp_parse_format("e4m3", &f, &e), 0);
    ck_assert_int_eq(f, FP_E4M3);
    ck_assert_int_eq(fp_parse_format("fp8_e5m2", &f, &e), 0);
    ck_assert_int_eq(f, FP_E5M2);
    ck_assert_int_eq(fp_parse_format("fp64", &f, &e), ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "'fp64'"));
}
END_TEST

/* ------------------------------------------------------------------ bulk == scalar */

/* Whether exp_n_lanes(w) gave expf's bits on the n inputs; prints the first few that did not. */
static size_t exp_mismatches(int w, const float *x, const float *y, size_t n)
{
    size_t bad = 0;
    for (size_t j = 0; j < n; j++) {
        float want = expf(x[j]);
        bool same = isnan(want) ? isnan(y[j]) : memcmp(&y[j], &want, 4) == 0;
        if (!same && bad++ < 5)
            fprintf(stderr, "exp_n (%d lanes) of %a = %a, expf %a\n", w, x[j], y[j], want);
    }
    return bad;
}

/* exp_n gives expf's bits, with each vector code this CPU has: on the 118 inputs hardest to
 * round (exp_agrees: where any change to the double arithmetic shows first), on every 997th
 * float pattern (4.3 million inputs: every exponent, the special cases, both signs), in place
 * with special inputs among ordinary ones, and at every length of a last partial group. Exact,
 * since the model's results must not change by a bit whichever of them computes them. (All
 * 2^32 inputs agreed while writing exp.c; a stride keeps this test to seconds under TSan.) */
/* The training's storage (fp_pack_n, fp_unpack_n): each format's codes are its bulk
 * conversion's, fp32 is a copy, in place too; unpacking a pack gives the rounded values. */
START_TEST(pack_is_the_formats_storage)
{
    enum { N = 1001 };
    float x[N], y[N], r[N];
    uint16_t want[N], got[N];
    struct rng g;
    rng_seed(&g, 11, 0);
    for (size_t i = 0; i < N; i++)
        x[i] = i % 3 ? (float)(rng_normal(&g) * 1e2) : f32((uint32_t)rng_u64(&g));
    for (int k = 0; k < 2; k++) {
        enum fp_format f = k ? FP_BF16 : FP_FP16;
        if (f == FP_FP16)
            fp16_from_f32_n(want, x, N);
        else
            bf16_from_f32_n(want, x, N);
        fp_pack_n(f, got, x, N);
        EXPECT(memcmp(want, got, sizeof want) == 0);
        fp_unpack_n(f, y, got, N);
        fp_round_n(f, r, x, N);
        for (size_t i = 0; i < N; i++)
            EXPECT_EQ(bits(y[i]), bits(r[i]));
    }
    memcpy(y, x, sizeof y);
    fp_pack_n(FP_FP32, y + 1, y, N - 1); /* overlapping: a move */
    for (size_t i = 1; i < N; i++)
        EXPECT_EQ(bits(y[i]), bits(x[i - 1]));
    fp_unpack_n(FP_FP32, r, x, N);
    EXPECT(memcmp(r, x, sizeof r) == 0);
}
END_TEST

START_TEST(exp_n_is_expf_bit_for_bit)
{
    enum { M = 4096 };
    float *x = malloc(M * sizeof *x), *y = malloc(M * sizeof *y), *z = malloc(M * sizeof *z);
    ck_assert(x && y && z);
    for (int w = 1; w <= 8; w *= 2) {
        if (!exp_n_lanes(w, y, x, 0))
            continue;
        ck_assert_msg(exp_agrees(w), "%d lanes: not expf's bits on the hard inputs", w);
        size_t k = 0, bad = 0, seen = 0;
        for (uint64_t u = 0; u < 0x100000000u; u += 997) {
            uint32_t b = (uint32_t)u;
            memcpy(&x[k++], &b, 4);
            if (k < M && u + 997 < 0x100000000u)
                continue;
            ck_assert(exp_n_lanes(w, y, x, k));
            bad += exp_mismatches(w, x, y, k);
            seen += k, k = 0;
        }
        ck_assert_uint_eq(bad, 0);
        ck_assert_uint_gt(seen, 4300000);
        /* in place, lengths 0-17, with -100 (underflow), 90 (overflow), inf and NaN among them */
        static const float odd[] = {-100.0f, 90.0f, INFINITY, -INFINITY, NAN, -88.5f};
        for (size_t n = 0; n < 18; n++) {
            for (size_t j = 0; j < n; j++)
                z[j] = x[j] = j % 3 == 2 ? odd[j / 3 % 6] : -3.0f + 0.7f * (float)j;
            ck_assert(exp_n_lanes(w, x, x, n));
            ck_assert_uint_eq(exp_mismatches(w, z, x, n), 0);
        }
    }
#if defined(__x86_64__) && defined(__GLIBC__)
    /* where glibc runs its FMA build, exp_n must run the widest vector code this CPU has: it
     * checks that code against expf before first use and steps aside on any difference, so a
     * mistake in it shows here, not as a wrong bit */
    int widest = exp_n_lanes(8, y, x, 0) ? 8 : exp_n_lanes(4, y, x, 0) ? 4 : 1;
    if (__builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2"))
        ck_assert_int_eq(exp_lanes(), widest);
#endif
    free(x);
    free(y);
    free(z);
}
END_TEST

/* exp_neg_n is expf(-x) bit for bit (the sign flipped in the registers), on a sweep of every
 * pattern's 9973rd and in place at lengths 0-17 with the special inputs. */
START_TEST(exp_neg_n_is_expf_of_the_negation)
{
    enum { M = 4096 };
    static float x[M], y[M];
    size_t k = 0, bad = 0;
    for (uint64_t u = 0; u < 0x100000000u; u += 9973) {
        uint32_t b = (uint32_t)u;
        memcpy(&x[k++], &b, 4);
        if (k < M && u + 9973 < 0x100000000u)
            continue;
        exp_neg_n(y, x, k);
        for (size_t j = 0; j < k; j++) {
            float want = expf(-x[j]);
            bad += memcmp(&y[j], &want, 4) != 0 && !(isnan(y[j]) && isnan(want));
        }
        k = 0;
    }
    ck_assert_uint_eq(bad, 0);
    static const float odd[] = {100.0f, -90.0f, INFINITY, -INFINITY, NAN, 88.5f};
    for (size_t n = 0; n < 18; n++) {
        float z[18];
        for (size_t j = 0; j < n; j++)
            z[j] = x[j] = j % 3 == 2 ? odd[j / 3 % 6] : 3.0f - 0.7f * (float)j;
        exp_neg_n(x, x, n);
        for (size_t j = 0; j < n; j++) {
            float want = expf(-z[j]);
            ck_assert_msg(memcmp(&x[j], &want, 4) == 0 || (isnan(x[j]) && isnan(want)),
                          "n %zu [%zu]", n, j);
        }
    }
}
END_TEST

START_TEST(bulk_agrees_with_scalar)
{
    /* An odd length, so the vector loops' tails run too; random patterns (all classes:
     * NaN, inf, subnormal) mixed with random values of moderate size. */
    enum { N = (1 << 18) + 13 };
    float *x = malloc(N * sizeof *x), *r = malloc(N * sizeof *r), *r2 = malloc(N * sizeof *r2);
    float *y = malloc(N * sizeof *y), *y2 = malloc(N * sizeof *y2);
    fp16_t *h = malloc(N * sizeof *h), *h2 = malloc(N * sizeof *h2);
    EXPECT(x && r && r2 && y && y2 && h && h2);
    struct rng g;
    rng_seed(&g, 7, 0);
    for (size_t i = 0; i < N; i++)
        x[i] = i % 2 ? f32((uint32_t)rng_u64(&g)) : (float)(rng_normal(&g) * 1e3);
    for (int impl = 0; impl < 2; impl++) {
        enum fp_impl old = fp_set_impl(impl ? FP_IMPL_PORTABLE : FP_IMPL_AUTO);
        /* fp16 */
        fp16_from_f32_n(h, x, N);
        for (size_t i = 0; i < N; i++)
            EXPECT_EQ(h[i], fp16_from_f32(x[i]));
        fp16_to_f32_n(y, h, N);
        for (size_t i = 0; i < N; i++)
            EXPECT_EQ(bits(y[i]), bits(fp16_to_f32(h[i])));
        fp_round_n(FP_FP16, r, x, N);
        for (size_t i = 0; i < N; i++)
            EXPECT_EQ(bits(r[i]), bits(fp_round(FP_FP16, x[i])));
        /* bf16 (through the same fp16_t-sized buffer) */
        bf16_from_f32_n(h2, x, N);
        for (size_t i = 0; i < N; i++)
            EXPECT_EQ(h2[i], bf16_from_f32(x[i]));
        bf16_to_f32_n(y2, h2, N);
        for (size_t i = 0; i < N; i++)
            EXPECT_EQ(bits(y2[i]), bits(bf16_to_f32(h2[i])));
        fp_round_n(FP_BF16, r2, x, N);
        for (size_t i = 0; i < N; i++)
            EXPECT_EQ(bits(r2[i]), bits(fp_round(FP_BF16, x[i])));
        /* In place (dst == src) gives the same. */
        memcpy(y, x, N * sizeof *x);
        fp_round_n(FP_FP16, y, y, N);
        EXPECT(!memcmp(y, r, N * sizeof *y));
        memcpy(y, x, N * sizeof *x);
        fp_round_n(FP_BF16, y, y, N);
        EXPECT(!memcmp(y, r2, N * sizeof *y));
        fp_set_impl(old);
    }
    /* fp8 and fp32 through fp_round_n: the scalar rule. */
    const enum fp_format others[] = {FP_E4M3, FP_E5M2, FP_FP32};
    for (size_t k = 0; k < 3; k++) {
        fp_round_n(others[k], r, x, 4096);
        for (size_t i = 0; i < 4096; i++)
            EXPECT_EQ(bits(r[i]), bits(fp_round(others[k], x[i])));
    }
    /* Short lengths, including 0. */
    for (size_t n = 0; n < 40; n++) {
        fp16_from_f32_n(h, x + 1, n);
        for (size_t i = 0; i < n; i++)
            EXPECT_EQ(h[i], fp16_from_f32(x[1 + i]));
    }
    free(x), free(r), free(r2), free(y), free(y2), free(h), free(h2);
    ck_assert_int_eq(failures, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("num");
    TCase *tc = tcase_create("fp");
    tcase_set_timeout(tc, 120); /* the sanitizer builds are several times slower */
    tcase_add_unchecked_fixture(tc, refs_setup, refs_teardown);
    tcase_add_test(tc, training_precisions_are_one_table);
    tcase_add_test(tc, every_fp16_pattern_round_trips);
    tcase_add_test(tc, every_bf16_pattern_round_trips);
    tcase_add_test(tc, every_fp8_pattern_round_trips);
    tcase_add_test(tc, ties_go_to_even);
    tcase_add_test(tc, subnormals_are_kept);
    tcase_add_test(tc, overflow_as_each_format_does);
    tcase_add_test(tc, nan_inf_and_negative_zero);
    tcase_add_test(tc, step_moves_one_ulp);
    tcase_add_test(tc, info_values);
    tcase_add_test(tc, bulk_agrees_with_scalar);
    tcase_add_test(tc, pack_is_the_formats_storage);
    tcase_add_test(tc, exp_n_is_expf_bit_for_bit);
    tcase_add_test(tc, exp_neg_n_is_expf_of_the_negation);
    tcase_add_test(tc, matches_reference_on_random_patterns);
    tcase_add_test(tc, matches_reference_at_every_boundary);
    tcase_add_test(tc, matches_pytorch_reference);
    suite_add_tcase(s, tc);
    return harness_run_threadless(s);
}
