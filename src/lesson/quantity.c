/* The named quantities lessons use for answers and expectations, each computed by the
 * engine it names (lesson/quantity.h). */
#include "config.h"
#include "lesson/quantity.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/units.h"
#include "calc/activ.h"
#include "calc/memory.h"
#include "calc/params.h"
#include "calc/plan.h"
#include "calc/preset.h"
#include "calc/sched.h"
#include "comm/cost.h"
#include "num/fp.h"
#include "sim/spec.h"

/* ------------------------------------------------------------------ number formats (num/fp.h) */

/* A value is first held as fp32, as a framework holds a float tensor, then rounded to the format
 * with round-to-nearest-even: the same path as "scalelab formats". */
static float to_float(double x)
{
    /* Converting a double beyond the float range is undefined in C; IEEE 754 rounds it to the
     * largest float below half an ulp (2^103) past FLT_MAX, and to inf from there (the tie goes to
     * the even significand, which is inf's). */
    if (isnan(x) || fabs(x) <= FLT_MAX)
        return (float)x;
    if (fabs(x) < (double)FLT_MAX + 0x1p103)
        return x > 0 ? FLT_MAX : -FLT_MAX;
    return x > 0 ? INFINITY : -INFINITY;
}

static double fmt_round(enum fp_format f, double x)
{
    return fp_round(f, to_float(x));
}

/* The gap between |x| rounded to f and the next value up: one unit in the last place there. */
static double fmt_ulp(enum fp_format f, double x)
{
    uint32_t bits = fp_encode(f, fabsf(to_float(x)));
    return (double)fp_decode(f, fp_step(f, bits, +1)) - (double)fp_decode(f, bits);
}

#define FORMAT_QUANTITIES(p, F)                                                                    \
    static double p##_max(void)                                                                    \
    {                                                                                              \
        return fp_info(F)->max;                                                                    \
    }                                                                                              \
    static double p##_min_normal(void)                                                             \
    {                                                                                              \
        return fp_info(F)->min_normal;                                                             \
    }                                                                                              \
    static double p##_min_subnormal(void)                                                          \
    {                                                                                              \
        return fp_info(F)->min_subnormal;                                                          \
    }                                                                                              \
    static double p##_epsilon(void)                                                                \
    {                                                                                              \
        return fp_info(F)->epsilon;                                                                \
    }                                                                                              \
    static double p##_exp_bits(void)                                                               \
    {                                                                                              \
        return fp_info(F)->exp_bits;                                                               \
    }                                                                                              \
    static double p##_man_bits(void)                                                               \
    {                                                                                              \
        return fp_info(F)->man_bits;                                                               \
    }                                                                                              \
    static double p##_bytes(void)                                                                  \
    {                                                                                              \
        return fp_info(F)->bits / 8.0;                                                             \
    }                                                                                              \
    static double p##_round(double x)                                                              \
    {                                                                                              \
        return fmt_round(F, x);                                                                    \
    }                                                                                              \
    static double p##_ulp(double x)                                                                \
    {                                                                                              \
        return fmt_ulp(F, x);                                                                      \
    }                                                                                              \
    static double p##_rel_error(double x)                                                          \
    {                                                                                              \
        return fabs(fmt_round(F, x) - x) / fabs(x);                                                \
    }                                                                                              \
    static double p##_overflows(double x)                                                          \
    {                                                                                              \
        return isfinite(to_float(x)) && !isfinite(fmt_round(F, x));                                \
    }                                                                                              \
    static double p##_underflows(double x)                                                         \
    {                                                                                              \
        return x != 0 && fmt_round(F, x) == 0;                                                     \
    }

FORMAT_QUANTITIES(fp32, FP_FP32)
FORMAT_QUANTITIES(fp16, FP_FP16)
FORMAT_QUANTITIES(bf16, FP_BF16)
FORMAT_QUANTITIES(e4m3, FP_E4M3)
FORMAT_QUANTITIES(e5m2, FP_E5M2)

/* ------------------------------------------------------------------ the calculator (src/calc) */

/* Model states per GPU (bytes) of psi parameters on n data-parallel GPUs at ZeRO stage z, with
 * mixed-precision AdamW: the ZeRO paper's 16 bytes per parameter, or 18 with fp32 gradients. */
static double zero_states(double psi, double n, double z, bool grad_fp32)
{
    if (!(psi >= 0) || !(n >= 1) || n != floor(n) || !(z >= 0 && z <= 3) || z != floor(z))
        return NAN;
    struct memory_states k, st;
    memory_bytes_per_param(PREC_BF16, OPT_ADAMW, grad_fp32, &k);
    memory_zero(psi, &k, (int)z, (int)n, &st);
    return st.weights + st.gradients + st.master + st.optimizer;
}

static double zero_per_gpu(double psi, double n, double z)
{
    return zero_states(psi, n, z, false);
}

static double zero_per_gpu18(double psi, double n, double z)
{
    return zero_states(psi, n, z, true);
}

/* Bytes one GPU sends per step (one micro-batch, 2-byte gradients and weights): 2(N-1)/N Ψ 2 for
 * DDP and stages 1-2, 1.5 times that for stage 3 (calc/traffic.h), Ψ padded to N ceil(Ψ/N) as
 * the trainer's flat buffers are (par/shard.h): N - 1 chunks of ceil(Ψ/N) per pass. */
static double zero_comm(double psi, double n, double z)
{
    if (!(psi >= 0) || !(n >= 1) || n != floor(n) || !(z >= 0 && z <= 3))
        return NAN;
    return (z >= 3 ? 3 : 2) * (n - 1) * ceil(psi / n) * 2;
}

/* The fewest data-parallel GPUs whose model states at stage z fit `capacity` bytes each
 * (activations aside); 0 if no number of GPUs up to 2^20 does. */
static double zero_min_gpus(double psi, double z, double capacity)
{
    for (int n = 1; n <= 1 << 20; n++)
        if (zero_states(psi, n, z, false) <= capacity)
            return n;
    return 0;
}

static double synthetic_7b(int what)
{
    struct model_shape m;
    if (preset_load_model("synthetic-7b", &m, NULL) < 0)
        return NAN;
    double psi = params_total(&m);
    return what == 0 ? psi : 16 * psi;
}

static double s7b_params(void)
{
    return synthetic_7b(0);
}

static double model_params(const char *name)
{
    struct model_shape m;
    return preset_load_model(name, &m, NULL) < 0 ? NAN : params_total(&m);
}

static double tiny_params(void)
{
    return model_params("tiny");
}

static double small_params(void)
{
    return model_params("small");
}

static double s7b_states(void)
{
    return synthetic_7b(1);
}

/* Bytes one synthetic-7b layer saves for one micro-batch of b sequences of s tokens in bf16,
 * without checkpointing (calc/activ.h's list). */
static double s7b_activ_layer(double s, double b)
{
    struct model_shape m;
    if (preset_load_model("synthetic-7b", &m, NULL) < 0 || !(s >= 1 && s <= 1 << 20) ||
        !(b >= 1 && b <= 1 << 20))
        return NAN;
    struct activ_config c = {(int)b, (int)s, 1, false, 2};
    struct activ_list l;
    activ_layer(&m, &c, &l);
    return l.total;
}

/* One synthetic-7b layer's parameters: what FSDP gathers for a layer wrapped as one unit. */
static double s7b_layer_params(void)
{
    struct model_shape m;
    struct params_breakdown b;
    if (preset_load_model("synthetic-7b", &m, NULL) < 0)
        return NAN;
    params_count(&m, &b);
    return b.per_layer;
}

/* Model FLOPs of one synthetic-7b training step over t tokens of its 2048-token sequences,
 * 6 Psi t + 12 L h s t (Narayanan et al. 2021, as 'scalelab plan' counts them). */
static double s7b_flops(double t)
{
    struct model_shape m;
    if (preset_load_model("synthetic-7b", &m, NULL) < 0 || !(t >= 1))
        return NAN;
    return plan_model_flops(&m, params_total(&m), t, m.seq);
}

/* Bytes one GPU sends per step for Megatron tensor parallelism of degree t over all of
 * synthetic-7b's layers (pp = 1), m micro-batches of one 2048-token sequence: two all-reduces
 * of the s x h activations forward and two backward per layer, each 2(t-1)/t x s h x 2 B on a
 * ring (Shoeybi et al. 2019). */
static double s7b_tp_comm(double t, double mb)
{
    struct model_shape m;
    if (preset_load_model("synthetic-7b", &m, NULL) < 0 || !(t >= 1 && t <= 1024) ||
        !(mb >= 1 && mb <= 1 << 20))
        return NAN;
    double act = (double)m.seq * m.d_model * 2;
    return 4.0 * m.layers * mb * 2 * (t - 1) / t * act;
}

/* synthetic-7b's whole model (32 layers and its ends), b sequences of s tokens in bf16 on one
 * GPU: k = 0 no checkpointing, k = -1 selective, k >= 1 every:k (1 is full); calc/activ.h. */
static double s7b_activ(double s, double b, double k, bool peak)
{
    struct model_shape m;
    struct ckpt_policy pol = {CKPT_NONE, 0};
    if (preset_load_model("synthetic-7b", &m, NULL) < 0 || !(s >= 1 && s <= 1 << 20) ||
        !(b >= 1 && b <= 1 << 20) || k != floor(k) || !(k >= -1 && k <= m.layers))
        return NAN;
    if (k == -1)
        pol.kind = CKPT_SELECTIVE;
    else if (k >= 1)
        pol.kind = CKPT_EVERY, pol.every = (int)k;
    struct activ_config c = {(int)b, (int)s, 1, false, 2};
    struct activ_total t;
    activ_total(&m, &c, &pol, m.layers, true, true, &t);
    return peak ? t.peak : t.saved;
}

static double s7b_activ_peak(double s, double b, double k)
{
    return s7b_activ(s, b, k, true);
}

/* Model states (16 B/param) plus the peak activations: one GPU's memory, no parallelism. */
static double s7b_total(double s, double b, double k)
{
    return synthetic_7b(1) + s7b_activ(s, b, k, true);
}

/* Korthikanti et al. 2022: a GPT layer's activations, sbh(34 + 5as/h) bytes for b = 1. */
static double activ_gpt_layer(double s, double h, double a)
{
    if (!(s >= 1 && h >= 1 && a >= 1))
        return NAN;
    return s * h * (34 + 5 * a * s / h);
}

static double bubble(double p, double m)
{
    return p >= 1 && m >= 1 ? sched_bubble_over_ideal((int)p, (int)m, 1) : NAN;
}

static double bubble_wall(double p, double m)
{
    return p >= 1 && m >= 1 ? sched_bubble_over_wall((int)p, (int)m, 1) : NAN;
}

static double bubble_interleaved(double p, double m, double v)
{
    return p >= 1 && m >= 1 && v >= 1 ? sched_bubble_over_ideal((int)p, (int)m, (int)v) : NAN;
}

/* The most micro-batches stage s holds at once, measured on the built schedule. */
static double peak_in_flight(enum calc_schedule k, double p, double m, double s)
{
    struct sched sc;
    if (!(s >= 0 && s < p) || sched_build(k, (int)p, (int)m, 1, &sc, NULL) < 0)
        return NAN;
    double v = sc.peak_chunks[(int)s];
    sched_free(&sc);
    return v;
}

static double peak_1f1b(double p, double m, double s)
{
    return peak_in_flight(SCHED_1F1B, p, m, s);
}

static double peak_gpipe(double p, double m, double s)
{
    return peak_in_flight(SCHED_GPIPE, p, m, s);
}

/* ------------------------------------------------------------------ collectives (comm/cost.h) */

/* n GPUs of the h100-80gb preset (sim/spec.h's built-in copy of its numbers: 8 per node, NVLink
 * α = 2 µs, β = 450 GB/s; between nodes α = 5 µs, β = 50 GB/s), the α-β model of comm/cost.h. */
static struct cost_result allreduce(enum cost_algo algo, double n, double bytes)
{
    struct cost_result r = {0};
    struct cluster_spec s;
    spec_default(&s);
    struct cost_net net = {(int)n,       s.gpus_per_node, s.alpha_intra,
                           s.beta_intra, s.alpha_inter,   s.beta_inter};
    if (!(n >= 1 && n <= 1 << 20 && n == floor(n)) ||
        cost_collective(COST_ALLREDUCE, algo, &net, bytes, &r, NULL) != 0)
        r.time_s = r.bytes_total = r.bytes_max_per_gpu = NAN, r.steps = -1;
    return r;
}

static double ring_sent_per_gpu(double n, double bytes)
{
    return allreduce(COST_RING, n, bytes).bytes_max_per_gpu;
}

static double ring_sent_total(double n, double bytes)
{
    return allreduce(COST_RING, n, bytes).bytes_total;
}

static double ring_steps(double n)
{
    struct cost_result r = allreduce(COST_RING, n, 0);
    return r.steps < 0 ? NAN : r.steps;
}

static double ring_time(double n, double bytes)
{
    return allreduce(COST_RING, n, bytes).time_s;
}

static double tree_time(double n, double bytes)
{
    return allreduce(COST_TREE, n, bytes).time_s;
}

static double dbtree_time(double n, double bytes)
{
    return allreduce(COST_DBTREE, n, bytes).time_s;
}

static double rhd_time(double n, double bytes)
{
    return allreduce(COST_RHD, n, bytes).time_s;
}

static double rhd_steps(double n)
{
    struct cost_result r = allreduce(COST_RHD, n, 0);
    return r.steps < 0 ? NAN : r.steps;
}

static double tree_faster(double n, double bytes)
{
    return tree_time(n, bytes) < ring_time(n, bytes);
}

static double crossover(double n)
{
    struct cluster_spec s;
    spec_default(&s);
    struct cost_net net = {(int)n,       s.gpus_per_node, s.alpha_intra,
                           s.beta_intra, s.alpha_inter,   s.beta_inter};
    if (!(n >= 2 && n <= 1 << 20 && n == floor(n)))
        return NAN;
    return cost_crossover(COST_ALLREDUCE, COST_RING, COST_TREE, &net, 1, 1e12);
}

static double busbw_factor(double n)
{
    return n >= 1 ? cost_busbw_factor(COST_ALLREDUCE, (int)n) : NAN;
}

/* nccl-tests' bus bandwidth of an all-reduce of y bytes on x GPUs that took t seconds:
 * algbw y/t times 2(x-1)/x (nccl-tests, doc/PERFORMANCE.md). */
static double busbw(double n, double bytes, double t)
{
    return t > 0 && bytes >= 0 ? bytes / t * busbw_factor(n) : NAN;
}

/* ------------------------------------------------------------------ the registry */

#define Q0(name, unit, what, f)                                                                    \
    {                                                                                              \
        name, unit, what, 0,                                                                       \
        {                                                                                          \
            .f0 = f                                                                                \
        }                                                                                          \
    }
#define Q1(name, unit, what, f)                                                                    \
    {                                                                                              \
        name, unit, what, 1,                                                                       \
        {                                                                                          \
            .f1 = f                                                                                \
        }                                                                                          \
    }
#define Q2(name, unit, what, f)                                                                    \
    {                                                                                              \
        name, unit, what, 2,                                                                       \
        {                                                                                          \
            .f2 = f                                                                                \
        }                                                                                          \
    }
#define Q3(name, unit, what, f)                                                                    \
    {                                                                                              \
        name, unit, what, 3,                                                                       \
        {                                                                                          \
            .f3 = f                                                                                \
        }                                                                                          \
    }

#define FORMAT_LINES(p, key)                                                                       \
    Q0(key ".max", "", "largest finite " key " value", p##_max),                                   \
        Q0(key ".min_normal", "", "smallest positive normal " key " value", p##_min_normal),       \
        Q0(key ".min_subnormal", "", "smallest positive " key " value (subnormal)",                \
           p##_min_subnormal),                                                                     \
        Q0(key ".epsilon", "", "gap between 1 and the next " key " value", p##_epsilon),           \
        Q0(key ".exp_bits", "", "exponent bits of " key, p##_exp_bits),                            \
        Q0(key ".man_bits", "", "mantissa bits of " key " (stored, without the implicit 1)",       \
           p##_man_bits),                                                                          \
        Q0(key ".bytes", "B", "bytes per " key " value", p##_bytes),                               \
        Q1(key ".round", "", "x held in fp32, then rounded to " key " (nearest even)", p##_round), \
        Q1(key ".ulp", "",                                                                         \
           "the gap above abs(x): from abs(x) rounded to " key " to the next " key " value",       \
           p##_ulp),                                                                               \
        Q1(key ".rel_error", "", "relative error of x in " key ": abs(round(x) - x) / abs(x)",     \
           p##_rel_error),                                                                         \
        Q1(key ".overflows", "bool", "1 if finite x becomes inf or nan in " key, p##_overflows),   \
        Q1(key ".underflows", "bool", "1 if x is not 0 but becomes 0 in " key, p##_underflows)

static const struct quantity registry[] = {
    FORMAT_LINES(fp32, "fp32"),
    FORMAT_LINES(fp16, "fp16"),
    FORMAT_LINES(bf16, "bf16"),
    FORMAT_LINES(e4m3, "fp8_e4m3"),
    FORMAT_LINES(e5m2, "fp8_e5m2"),
    Q0("synthetic_7b.params", "", "synthetic-7b's parameters, counted from its shape", s7b_params),
    Q0("tiny.params", "", "the tiny GPT's parameters (the model the lab trains)", tiny_params),
    Q0("small.params", "", "the small GPT's parameters", small_params),
    Q0("synthetic_7b.states", "B",
       "synthetic-7b's model states with mixed-precision AdamW, 16 B/param", s7b_states),
    Q2("synthetic_7b.activ_layer", "B",
       "bytes one synthetic-7b layer saves for s tokens x b sequences in bf16, no "
       "checkpointing",
       s7b_activ_layer),
    Q0("synthetic_7b.layer_params", "", "parameters of one synthetic-7b layer", s7b_layer_params),
    Q1("synthetic_7b.flops", "", "model FLOPs of a synthetic-7b step over t tokens", s7b_flops),
    Q2("synthetic_7b.tp_comm", "B", "bytes a GPU sends per step for tp = t, m micro-batches",
       s7b_tp_comm),
    Q3("synthetic_7b.activ_peak", "B",
       "its peak activations, s tokens x b sequences, bf16; k: 0 none, -1 selective, every:k",
       s7b_activ_peak),
    Q3("synthetic_7b.total", "B", "its states plus peak activations on one GPU (s, b, k as above)",
       s7b_total),
    Q3("zero.per_gpu", "B", "model states per GPU: psi params, n GPUs, ZeRO stage z, 16 B/param",
       zero_per_gpu),
    Q3("zero.per_gpu18", "B", "the same with fp32 gradients, 18 B/param", zero_per_gpu18),
    Q3("zero.comm", "B", "bytes one GPU sends per step: psi params, n GPUs, stage z (2-byte grads)",
       zero_comm),
    Q3("zero.min_gpus", "", "fewest GPUs whose states fit capacity bytes: psi params, stage z",
       zero_min_gpus),
    Q3("activ.gpt_layer", "B",
       "Korthikanti: a GPT layer's activations sbh(34 + 5as/h), s, h, a, b = 1", activ_gpt_layer),
    Q2("pipeline.bubble", "", "pipeline bubble over ideal compute time, (p-1)/m", bubble),
    Q2("pipeline.bubble_wall", "", "pipeline bubble over wall time, (p-1)/(m+p-1)", bubble_wall),
    Q3("pipeline.bubble_interleaved", "", "interleaved 1F1B bubble over ideal time, (p-1)/(vm)",
       bubble_interleaved),
    Q3("pipeline.peak_1f1b", "", "micro-batches stage s of p holds at once under 1F1B, m of them",
       peak_1f1b),
    Q3("pipeline.peak_gpipe", "", "micro-batches stage s of p holds at once under GPipe",
       peak_gpipe),
    Q2("ring.allreduce_sent_per_gpu", "B",
       "bytes each of x GPUs sends in a ring all-reduce of y bytes: 2(x-1)/x y", ring_sent_per_gpu),
    Q2("ring.allreduce_sent_total", "B",
       "bytes all x GPUs send together in a ring all-reduce of y bytes: 2(x-1) y", ring_sent_total),
    Q1("ring.allreduce_steps", "", "steps of a ring all-reduce on x GPUs: 2(x-1)", ring_steps),
    Q2("ring.allreduce_time", "s",
       "α-β time of a ring all-reduce of y bytes on x GPUs of h100-80gb", ring_time),
    Q2("tree.allreduce_time", "s",
       "α-β time of a pipelined binary-tree all-reduce of y bytes on x GPUs of h100-80gb",
       tree_time),
    Q2("dbtree.allreduce_time", "s",
       "α-β time of a double-binary-tree all-reduce of y bytes on x GPUs of h100-80gb",
       dbtree_time),
    Q2("rhd.allreduce_time", "s",
       "α-β time of a recursive halving/doubling all-reduce of y bytes on x GPUs of h100-80gb",
       rhd_time),
    Q1("rhd.allreduce_steps", "", "steps of a recursive halving/doubling all-reduce on x GPUs",
       rhd_steps),
    Q2("allreduce.tree_faster", "bool",
       "1 if the tree all-reduce of y bytes on x GPUs of h100-80gb beats the ring", tree_faster),
    Q1("allreduce.crossover", "B",
       "the all-reduce size above which a ring beats a tree on x GPUs of h100-80gb", crossover),
    Q1("allreduce.busbw_factor", "",
       "nccl-tests' busbw / algbw for an all-reduce on x GPUs: 2(x-1)/x", busbw_factor),
    Q3("allreduce.busbw", "B/s", "busbw of an all-reduce of y bytes on x GPUs in t s: y/t 2(x-1)/x",
       busbw),
};

size_t quantity_count(void)
{
    return sizeof registry / sizeof registry[0];
}

const struct quantity *quantity_at(size_t i)
{
    return i < quantity_count() ? &registry[i] : NULL;
}

const struct quantity *quantity_find(const char *name)
{
    for (size_t i = 0; i < quantity_count(); i++)
        if (strcmp(registry[i].name, name) == 0)
            return &registry[i];
    return NULL;
}

/* ------------------------------------------------------------------ evaluation */

#define EXPR_MAX  256
#define DEPTH_MAX 4

static bool name_char(int c)
{
    return islower(c) || isdigit(c) || c == '_' || c == '.';
}

static int eval(const char *s, size_t len, int depth, double *value, const struct quantity **qout,
                struct error *e);

/* One argument: a number, or a quantity (so "fp16.ulp(fp16.max)" works). */
static int eval_arg(const char *s, size_t len, int depth, double *v, struct error *e)
{
    while (len && isspace((unsigned char)*s))
        s++, len--;
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    char buf[EXPR_MAX];
    if (len == 0)
        return error_set(e, ERR_INVAL, "expected a number between the parentheses");
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (islower((unsigned char)buf[0]) && strcmp(buf, "inf") && strcmp(buf, "nan"))
        return eval(s, len, depth + 1, v, NULL, e);
    if (units_parse_double(buf, true, v, NULL) < 0)
        return error_set(e, ERR_INVAL, "'%s' is not a number", buf);
    return 0;
}

static int eval(const char *s, size_t len, int depth, double *value, const struct quantity **qout,
                struct error *e)
{
    if (len >= EXPR_MAX)
        return error_set(e, ERR_INVAL, "a quantity of %zu characters is too long", len);
    if (depth > DEPTH_MAX)
        return error_set(e, ERR_INVAL, "quantities nested more than %d deep", DEPTH_MAX);
    size_t n = 0;
    while (n < len && name_char((unsigned char)s[n]))
        n++;
    char name[EXPR_MAX];
    memcpy(name, s, n);
    name[n] = '\0';
    if (n == 0)
        return error_set(e, ERR_INVAL, "expected a quantity name such as fp16.max");
    const struct quantity *q = quantity_find(name);
    if (!q)
        return error_set(e, ERR_INVAL,
                         "unknown quantity '%s' (lessons/README.md lists them; "
                         "'scalelab run --quantities' prints them)",
                         name);
    double args[QUANTITY_MAX_ARGS];
    int nargs = 0;
    size_t i = n;
    while (i < len && s[i] == ' ')
        i++;
    if (i < len) {
        if (s[i] != '(' || s[len - 1] != ')')
            return error_set(e, ERR_INVAL, "expected '(' and ')' around the arguments of %s", name);
        size_t start = ++i, end = len - 1;
        int paren = 0;
        for (; i <= end; i++) {
            char c = i < end ? s[i] : ',';
            if (c == '(')
                paren++;
            else if (c == ')' && --paren < 0)
                return error_set(e, ERR_INVAL, "unbalanced ')' in %s(...)", name);
            if ((c == ',' && paren == 0) || i == end) {
                if (i == end && paren != 0)
                    return error_set(e, ERR_INVAL, "unbalanced '(' in %s(...)", name);
                if (nargs == QUANTITY_MAX_ARGS)
                    return error_set(e, ERR_INVAL, "%s takes %d argument%s", name, q->nargs,
                                     q->nargs == 1 ? "" : "s");
                if (eval_arg(s + start, i - start, depth, &args[nargs++], e) < 0)
                    return ERR_INVAL;
                start = i + 1;
            }
        }
    }
    if (nargs != q->nargs)
        return error_set(e, ERR_INVAL, "%s takes %d argument%s%s, not %d", name, q->nargs,
                         q->nargs == 1 ? "" : "s", q->nargs ? " in parentheses" : "", nargs);
    switch (q->nargs) {
    case 0: *value = q->fn.f0(); break;
    case 1: *value = q->fn.f1(args[0]); break;
    case 2: *value = q->fn.f2(args[0], args[1]); break;
    default: *value = q->fn.f3(args[0], args[1], args[2]); break;
    }
    if (qout)
        *qout = q;
    return 0;
}

int quantity_eval(const char *expr, double *value, const struct quantity **q, struct error *e)
{
    return eval(expr, strlen(expr), 0, value, q, e);
}
