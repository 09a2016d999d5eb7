/* Number formats: fp32, fp16, bf16 and the two fp8 formats, and conversions between them.
 *
 * Every conversion from fp32 rounds to nearest, ties to even, keeps subnormals (never flushes
 * them), and overflows as the format does: fp16, bf16 and fp8 e5m2 to inf; fp8 e4m3fn (no inf,
 * largest 448) turns overflow and inf into NaN. NaN stays NaN, quiet: the sign and the top bits
 * of the payload are kept, as x86's F16C instructions do. The fp16 and bf16 results agree bit
 * for bit with PyTorch's float32 -> float16/bfloat16 casts (NaN payloads aside). */
#ifndef SCALELAB_NUM_FP_H
#define SCALELAB_NUM_FP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct error;

typedef uint16_t fp16_t; /* IEEE binary16 bits */
typedef uint16_t bf16_t; /* bfloat16 bits */
typedef uint8_t fp8_t;   /* fp8 e4m3fn or e5m2 bits */

enum fp_format { FP_FP32, FP_FP16, FP_BF16, FP_E4M3, FP_E5M2, FP_COUNT };

struct fp_info {
    const char *name; /* "fp32", "fp16", "bf16", "fp8 e4m3", "fp8 e5m2" */
    const char *key;  /* JSON key: "fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2" */
    int bits, exp_bits, man_bits, bias;
    bool has_inf; /* e4m3fn: false (overflow and inf become NaN) */
    double max;   /* largest finite */
    double min_normal, min_subnormal, epsilon;
};

const struct fp_info *fp_info(enum fp_format f);
/* "fp32", "fp16", "bf16", "fp8_e4m3"/"e4m3", "fp8_e5m2"/"e5m2"; 0 or ERR_INVAL with a message. */
int fp_parse_format(const char *s, enum fp_format *out, struct error *e);

/* Bytes one value of format f takes: 4, 2 or 1. */
int fp_bytes(enum fp_format f);

/* The precisions a run trains in and the calculator sizes (train --precision, memory, plan,
 * the panels), in the order they are offered: fp32, bf16, fp16. The weights, gradients and
 * activations are held in the format; a mixed precision keeps fp32 master weights beside them;
 * a scaled one (fp16, whose range needs it) trains with a dynamic loss scale unless told
 * otherwise. A new training precision is a line of this table (num/fp.c). */
struct fp_precision {
    enum fp_format format;
    bool mixed;  /* fp32 master weights beside the format's */
    bool scaled; /* a dynamic loss scale by default */
};
/* The table, *n lines. */
const struct fp_precision *fp_precisions(int *n);
/* f's line, or NULL when no run trains in f. */
const struct fp_precision *fp_precision(enum fp_format f);
/* The precision dir lines after f's in the table (dir -1: before), round the table's end: a
 * knob's next. */
enum fp_format fp_precision_step(enum fp_format f, int dir);
/* The one reader of a training precision, for every command and panel: 0, or ERR_INVAL
 * "'S' is not a precision (use fp32, bf16, fp16 or fp8)"; "fp8", which train reads itself
 * (par/settings.c), is refused saying its memory is not counted yet. */
int fp_parse_precision(const char *s, enum fp_format *out, struct error *e);

/* Nearest value of x in format f, round to nearest even, subnormals kept, overflow as the
 * format does it; the result's bits in the low bits of the return value. */
uint32_t fp_encode(enum fp_format f, float x);
float fp_decode(enum fp_format f, uint32_t bits); /* exact: every format fits in fp32 */
float fp_round(enum fp_format f, float x);        /* fp_decode(f, fp_encode(f, x)) */
/* The neighbouring value's bits one ulp up (dir > 0) or down (dir < 0), for the explorer.
 * Zero of either sign steps to the smallest subnormal of the direction's sign; the largest
 * finite value steps to inf (e4m3fn: stays); inf steps down to the largest finite value and
 * stays when stepped outwards; NaN and dir == 0 return bits unchanged. */
uint32_t fp_step(enum fp_format f, uint32_t bits, int dir);

/* Bits of a float and back (memcpy, no aliasing games). */
uint32_t fp_f32_bits(float x);
float fp_f32_from_bits(uint32_t u);

/* Scalar fast paths. */
fp16_t fp16_from_f32(float x);
float fp16_to_f32(fp16_t h);
bf16_t bf16_from_f32(float x);
float bf16_to_f32(bf16_t h);

/* Bulk conversions for training and collectives: fast, no allocation, agree bit for bit with
 * the scalar ones. fp_round_n rounds n floats to format f in place (dst may equal src). */
void fp16_from_f32_n(fp16_t *dst, const float *src, size_t n);
void fp16_to_f32_n(float *dst, const fp16_t *src, size_t n);
void bf16_from_f32_n(bf16_t *dst, const float *src, size_t n);
void bf16_to_f32_n(float *dst, const bf16_t *src, size_t n);
void fp_round_n(enum fp_format f, float *dst, const float *src, size_t n);
/* The training's storage of n values in format f (fp32, fp16 or bf16): fp_pack_n writes the
 * fp32 values src as f's codes at dst (4-byte copies for fp32, which may overlap; 2-byte codes
 * rounded to nearest-even, exact where src already holds values of the format), fp_unpack_n
 * reads them back as fp32 (exact). The model's kept tensors, the strategies' weight and
 * gradient buffers and tensor parallelism's sums all store this way. */
void fp_pack_n(enum fp_format f, void *dst, const float *src, size_t n);
void fp_unpack_n(enum fp_format f, float *dst, const void *src, size_t n);

/* Which bulk implementation runs: FP_IMPL_AUTO (the default) uses x86 F16C/AVX2 when the CPU
 * has them, FP_IMPL_PORTABLE forces the plain C loops. For tests and the benchmark, which
 * compare the two: the switch is process-wide (both give the same bits, so a thread that sees
 * it change mid-call still gets correct results). Returns the previous choice. */
enum fp_impl { FP_IMPL_AUTO, FP_IMPL_PORTABLE };
enum fp_impl fp_set_impl(enum fp_impl impl);
/* True when the bulk calls currently use the F16C/AVX2 paths. */
bool fp_simd_active(void);

#endif
