/* The named quantities lessons use for answers, expectations and figures, each computed by
 * the engine it names (lesson/quantity.h); the expressions that combine them are
 * lesson/quantity_expr.c's. */
#include "config.h"
#include "lesson/quantity.h"
#include "lesson/quantity_table.h" /* the table's lines: QN, Q0..Q4, M0..M4, C0 */

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/experts.h"
#include "base/units.h"
#include "calc/activ.h"
#include "calc/memory.h"
#include "calc/params.h"
#include "calc/plan.h"
#include "calc/preset.h"
#include "calc/sched.h"
#include "calc/traffic.h"
#include "num/fp.h"
#include "par/predict.h"
#include "par/run.h"
#include "par/trainer.h"
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
    memory_bytes_per_param(FP_BF16, OPT_ADAMW, grad_fp32, &k);
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

/* Bytes per parameter of the model states with mixed-precision AdamW: the ZeRO paper's 16, or
 * 18 with fp32 gradients (Megatron-LM, DeepSpeed). */
static double mixed_bytes(bool grad_fp32)
{
    struct memory_states k;
    memory_bytes_per_param(FP_BF16, OPT_ADAMW, grad_fp32, &k);
    return k.weights + k.gradients + k.master + k.optimizer;
}

static double bytes_per_param(void)
{
    return mixed_bytes(false);
}

static double bytes_per_param18(void)
{
    return mixed_bytes(true);
}

/* Korthikanti et al. 2022: a GPT layer's activations, sbh(34 + 5as/h) bytes for b = 1. */
static double activ_gpt_layer(double s, double h, double a)
{
    if (!(s >= 1 && h >= 1 && a >= 1))
        return NAN;
    return s * h * (34 + 5 * a * s / h);
}

/* ------------------------------------------------------------------ a model preset's (MODEL.) */

static double m_params(const struct model_shape *m)
{
    return params_total(m);
}

/* The parameters a token uses: all of them for a dense model, the total less the experts it
 * does not go to for a mixture (calc/params.h). */
static double m_active_params(const struct model_shape *m)
{
    return params_active(m);
}

/* Its model states with mixed-precision AdamW, 16 bytes per parameter. */
static double m_states(const struct model_shape *m)
{
    return mixed_bytes(false) * params_total(m);
}

/* The width of a layer's K and of its V: its key/value heads' (d_model with kv_heads = heads). */
static double m_kv_width(const struct model_shape *m)
{
    return (double)m->kv_heads * (m->d_model / m->heads);
}

/* A field of the shape, or of the cluster, as a quantity. */
#define FIELD(prefix, type, field)                                                                 \
    static double prefix##_##field(const struct type *x)                                           \
    {                                                                                              \
        return x->field;                                                                           \
    }

FIELD(m, model_shape, layers)
FIELD(m, model_shape, d_model)
FIELD(m, model_shape, heads)
FIELD(m, model_shape, kv_heads)
FIELD(m, model_shape, ffn)
FIELD(m, model_shape, vocab)
FIELD(m, model_shape, seq)
FIELD(m, model_shape, experts)
FIELD(m, model_shape, top_k)
FIELD(c, cluster_spec, alpha_intra)
FIELD(c, cluster_spec, alpha_inter)
FIELD(c, cluster_spec, beta_intra)
FIELD(c, cluster_spec, beta_inter)
FIELD(c, cluster_spec, peak_flops)
FIELD(c, cluster_spec, gpus_per_node)
FIELD(c, cluster_spec, hbm_bytes)

/* One layer's parameters: what FSDP gathers for a layer wrapped as one unit (layer 0's: with
 * its experts, in a mixture). */
static double m_layer_params(const struct model_shape *m)
{
    struct params_breakdown b;
    params_count(m, &b);
    return b.moe_layers ? b.moe_layer : b.per_layer;
}

bool quantity_whole(double x, double lo, double hi)
{
    return x >= lo && x <= hi && x == floor(x);
}

static bool whole(double x, double lo, double hi)
{
    return quantity_whole(x, lo, hi);
}

/* k as a checkpoint policy's name (base/ckpt.h): 0 none, -1 selective, -2 sqrt, k >= 1
 * every:k (1 is full). */
static bool policy_name(const struct model_shape *m, double k, char *buf, size_t n)
{
    if (!whole(k, -2, m->layers))
        return false;
    if (k >= 2)
        snprintf(buf, n, "every:%d", (int)k);
    else
        snprintf(buf, n, "%s", k == 1 ? "full" : k == 0 ? "none" : k == -1 ? "selective" : "sqrt");
    return true;
}

static bool policy_of(const struct model_shape *m, double k, struct ckpt_policy *pol)
{
    char name[32];
    return policy_name(m, k, name, sizeof name) && ckpt_parse(name, pol, NULL) == 0;
}

/* The matmul FLOPs policy k recomputes in a step of b sequences, a share of the forward and
 * backward passes', as train's summary counts them (par/predict.h; it prints percent). */
static double m_recompute(const struct model_shape *m, double b, double k)
{
    char name[32];
    if (!whole(b, 1, 1 << 20) || !policy_name(m, k, name, sizeof name))
        return NAN;
    return predict_recompute_pct(m, (int)b, name) / 100;
}

/* Bytes one layer saves for one micro-batch of b sequences of s tokens in bf16, without
 * checkpointing (calc/activ.h's list), with the attention kernel given. */
static double activ_layer_with(const struct model_shape *m, double s, double b,
                               enum activ_attention att)
{
    if (!whole(s, 1, 1 << 20) || !whole(b, 1, 1 << 20))
        return NAN;
    struct activ_config c = {
        .micro_batch = (int)b, .seq = (int)s, .tp = 1, .sp = false, .bytes = 2, .attention = att};
    struct activ_list l;
    if (m->experts > 0) /* layer 0 has the experts */
        activ_moe_layer(m, &c, &l);
    else
        activ_layer(m, &c, &l);
    return l.total;
}

static double m_activ_layer(const struct model_shape *m, double s, double b)
{
    return activ_layer_with(m, s, b, ACTIV_FLASH);
}

static double m_activ_layer_eager(const struct model_shape *m, double s, double b)
{
    return activ_layer_with(m, s, b, ACTIV_EAGER);
}

/* The whole model (its layers and its ends), b sequences of s tokens in p-byte activations
 * on one GPU, with the attention kernel given. */
static double activ_whole(const struct model_shape *m, double s, double b, double k, int p,
                          enum activ_attention att)
{
    struct ckpt_policy pol;
    if (!whole(s, 1, 1 << 20) || !whole(b, 1, 1 << 20) || !policy_of(m, k, &pol))
        return NAN;
    struct activ_config c = {
        .micro_batch = (int)b, .seq = (int)s, .tp = 1, .sp = false, .bytes = p, .attention = att};
    struct activ_total t;
    activ_total(m, &c, &pol, m->layers, true, true, &t);
    return t.peak;
}

static double m_activ(const struct model_shape *m, double s, double b, double k)
{
    return activ_whole(m, s, b, k, 2, ACTIV_FLASH);
}

static double m_activ32(const struct model_shape *m, double s, double b, double k)
{
    return activ_whole(m, s, b, k, 4, ACTIV_FLASH);
}

static double m_activ_eager(const struct model_shape *m, double s, double b, double k)
{
    return activ_whole(m, s, b, k, 2, ACTIV_EAGER);
}

static double m_activ32_eager(const struct model_shape *m, double s, double b, double k)
{
    return activ_whole(m, s, b, k, 4, ACTIV_EAGER);
}

/* Its states (16 bytes per parameter) plus the peak activations: one GPU, no parallelism. */
static double m_total(const struct model_shape *m, double s, double b, double k)
{
    return m_states(m) + m_activ(m, s, b, k);
}

static double m_total_eager(const struct model_shape *m, double s, double b, double k)
{
    return m_states(m) + m_activ_eager(m, s, b, k);
}

/* Model FLOPs of one training step over t tokens of its sequences, 6 Psi t + 12 L h s t
 * (Narayanan et al. 2021, as 'scalelab plan' counts them). */
static double m_flops(const struct model_shape *m, double t)
{
    return t >= 1 ? plan_model_flops(m, params_active(m), t, m->seq) : NAN;
}

/* Bytes one GPU sends per step for Megatron tensor parallelism of degree t over all of its
 * layers (pp = 1), mb micro-batches of one sequence in bf16: two all-reduces of the s x h
 * activations forward and two backward per layer, each 2(t-1)/t x s h x 2 B on a ring
 * (Shoeybi et al. 2019): the layers' part of calc/traffic.h's figure, without the ends. */
static double m_tp_comm(const struct model_shape *m, double t, double mb)
{
    if (!whole(t, 1, 1024) || !whole(mb, 1, 1 << 20))
        return NAN;
    double act = (double)m->seq * m->d_model * 2;
    return 4.0 * m->layers * mb * 2 * (t - 1) / t * act;
}

/* The calculator (`scalelab memory`) on dp x tp x pp GPUs of h100-80gb: bf16 mixed-precision
 * AdamW, b sequences of the model's length per micro-batch, mb micro-batches under 1F1B,
 * sequence parallelism with tp > 1, ZeRO stage z, checkpoint policy k, flash attention (its
 * default); the fullest stage. */
static bool layout_b(const struct model_shape *m, double dp, double tp, double pp, double mb,
                     double z, double k, double b, struct memory_config *c, struct memory_result *r,
                     struct traffic *t)
{
    struct ckpt_policy pol;
    if (!whole(dp, 1, 1 << 20) || !whole(tp, 1, 4096) || !whole(pp, 1, m->layers) ||
        !whole(mb, 1, 1 << 16) || !whole(z, 0, 3) || !whole(b, 1, 1 << 16) ||
        !policy_of(m, k, &pol))
        return false;
    *c = (struct memory_config){.model = m,
                                .precision = FP_BF16,
                                .optimizer = OPT_ADAMW,
                                .dp = (int)dp,
                                .tp = (int)tp,
                                .pp = (int)pp,
                                .zero = (int)z,
                                .micro_batch = (int)b,
                                .seq = m->seq,
                                .micro_batches = (int)mb,
                                .schedule = SCHED_1F1B,
                                .sp = tp > 1,
                                .ckpt = pol};
    struct cluster_spec cl;
    if (preset_load_cluster(PRESET_CLUSTER, &cl, NULL) < 0)
        spec_default(&cl);
    c->capacity = cl.hbm_bytes;
    cl.nodes = (int)ceil(dp * tp * pp / cl.gpus_per_node);
    return memory_compute(c, r, NULL) == 0 &&
           traffic_compute(c, &cl, r->stage, r->params_gpu, r->stage_layers, 0, 0, t, NULL) == 0;
}

/* The same with one sequence a micro-batch. */
static bool layout(const struct model_shape *m, double dp, double tp, double pp, double mb,
                   double z, double k, struct memory_config *c, struct memory_result *r,
                   struct traffic *t)
{
    return layout_b(m, dp, tp, pp, mb, z, k, 1, c, r, t);
}

/* What the first stage's GPUs send per step (calc/traffic.h, as train measures it): tp GPUs
 * to a stage, pp stages, m micro-batches of b sequences, activations of fp bytes (4: fp32,
 * else bf16), no ZeRO. */
static bool sent(const struct model_shape *m, double tp, double pp, double mb, double b, double fp,
                 struct traffic *t)
{
    if (!whole(tp, 1, 4096) || !whole(pp, 1, m->layers) || !whole(mb, 1, 1 << 16) ||
        !whole(b, 1, 1 << 16) || (fp != 2 && fp != 4))
        return false;
    struct memory_config c = {.model = m,
                              .precision = fp == 4 ? FP_FP32 : FP_BF16,
                              .optimizer = OPT_ADAMW,
                              .dp = 1,
                              .tp = (int)tp,
                              .pp = (int)pp,
                              .micro_batch = (int)b,
                              .seq = m->seq,
                              .micro_batches = (int)mb,
                              .schedule = SCHED_1F1B};
    struct cluster_spec cl;
    struct memory_result r;
    if (preset_load_cluster(PRESET_CLUSTER, &cl, NULL) < 0)
        spec_default(&cl);
    c.capacity = cl.hbm_bytes;
    return memory_compute_stage(&c, 0, &r, NULL) == 0 &&
           traffic_compute(&c, &cl, 0, r.params_gpu, r.stage_layers, 0, 0, t, NULL) == 0;
}

/* Tensor parallelism of degree t on one stage, b sequences of fp-byte activations: its layers
 * and both ends (embedding, head, the loss's scalars). */
static double m_tp_sent(const struct model_shape *m, double t, double b, double fp)
{
    struct traffic x;
    return sent(m, t, 1, 1, b, fp, &x) ? x.tp.bytes : NAN;
}

/* The first of p stages' pipeline bytes: m micro-batches of b sequences of fp-byte activations
 * forward, and the tied embedding's gradient summed with the last stage. */
static double m_pp_sent(const struct model_shape *m, double p, double mb, double b, double fp)
{
    struct traffic x;
    return sent(m, 1, p, mb, b, fp, &x) ? x.pp.bytes : NAN;
}

/* One GPU's memory for n data-parallel GPUs at ZeRO stage z with checkpoint policy k. */
static double m_per_gpu(const struct model_shape *m, double n, double z, double k)
{
    struct memory_config c;
    struct memory_result r;
    struct traffic t;
    return layout(m, n, 1, 1, 1, z, k, &c, &r, &t) ? r.total : NAN;
}

/* The same with micro-batches of b sequences. */
static double m_per_gpu_b(const struct model_shape *m, double n, double z, double k, double b)
{
    struct memory_config c;
    struct memory_result r;
    struct traffic t;
    return layout_b(m, n, 1, 1, 1, z, k, b, &c, &r, &t) ? r.total : NAN;
}

/* The communication buffers ZeRO holds at stage z on n GPUs (calc/memory.h's memory_comm). */
static double m_comm_buffers(const struct model_shape *m, double n, double z)
{
    struct memory_config c;
    struct memory_result r;
    struct traffic t;
    return layout(m, n, 1, 1, 1, z, 0, &c, &r, &t) ? r.comm : NAN;
}

/* The fullest GPU's memory on dp x tp x pp GPUs with mb micro-batches (1F1B, sequence
 * parallelism with tp > 1, no ZeRO, no checkpointing). */
static double m_per_gpu_3d(const struct model_shape *m, double dp, double tp, double pp, double mb)
{
    struct memory_config c;
    struct memory_result r;
    struct traffic t;
    return layout(m, dp, tp, pp, mb, 0, 0, &c, &r, &t) ? r.total : NAN;
}

/* The bytes a GPU sends per step for data parallelism (DDP) on that layout. */
static double m_dp_comm_3d(const struct model_shape *m, double dp, double tp, double pp)
{
    struct memory_config c;
    struct memory_result r;
    struct traffic t;
    return layout(m, dp, tp, pp, pp, 0, 0, &c, &r, &t) ? t.dp.bytes : NAN;
}

/* One GPU's memory and traffic with context parallelism over c GPUs and nothing else
 * (calc/memory.h, calc/traffic.c's context_parallel): one micro-batch of b sequences of s
 * tokens, fp-byte activations and ring blocks (4: fp32 training, else bf16), checkpoint
 * policy k, the balanced split. */
static bool with_cp(const struct model_shape *m, double c, double s, double b, double k, double fp,
                    struct memory_result *r, struct traffic *t)
{
    struct ckpt_policy pol;
    if (!whole(c, 1, 1024) || !whole(s, 1, 1 << 20) || !whole(b, 1, 1 << 16) ||
        (fp != 2 && fp != 4) || !policy_of(m, k, &pol))
        return false;
    struct memory_config mc = {.model = m,
                               .precision = fp == 4 ? FP_FP32 : FP_BF16,
                               .optimizer = OPT_ADAMW,
                               .dp = 1,
                               .tp = 1,
                               .pp = 1,
                               .cp = (int)c,
                               .micro_batch = (int)b,
                               .seq = (int)s,
                               .micro_batches = 1,
                               .schedule = SCHED_1F1B,
                               .ckpt = pol};
    struct cluster_spec cl;
    if (preset_load_cluster(PRESET_CLUSTER, &cl, NULL) < 0)
        spec_default(&cl);
    mc.capacity = cl.hbm_bytes;
    cl.nodes = (int)ceil(c / cl.gpus_per_node);
    return memory_compute(&mc, r, NULL) == 0 &&
           traffic_compute(&mc, &cl, 0, r->params_gpu, r->stage_layers, 0, 0, t, NULL) == 0;
}

/* The activations a GPU holds with context parallelism c: s tokens, b sequences, bf16,
 * checkpoint policy k (c = 1: MODEL.activ_peak's). */
static double m_activ_cp(const struct model_shape *m, double s, double b, double k, double c)
{
    struct memory_result r;
    struct traffic t;
    return with_cp(m, c, s, b, k, 2, &r, &t) ? r.activations : NAN;
}

/* The bytes a GPU sends round the ring per step: c GPUs, s tokens, b sequences, fp bytes. */
static double m_cp_sent(const struct model_shape *m, double c, double s, double b, double fp)
{
    struct memory_result r;
    struct traffic t;
    return with_cp(m, c, s, b, 0, fp, &r, &t) ? t.cp.bytes : NAN;
}

/* One GPU's memory and traffic with expert parallelism over p GPUs (dp p, ep p, nothing
 * else: calc/memory.h's memory_ep_experts, calc/traffic.c's expert_parallel): a micro-batch of
 * b sequences of the model's length, capacity factor c (the static rows ep needs), fp-byte
 * activations (4: fp32 training, else bf16); mc points at shape. */
static bool with_ep(const struct model_shape *m, double p, double b, double c, double fp,
                    struct model_shape *shape, struct memory_config *mc, struct memory_result *r,
                    struct traffic *t)
{
    if (m->experts < 2 || !whole(p, 1, 1024) || !whole(b, 1, 1 << 16) || !(c > 0 && c <= 64) ||
        (fp != 2 && fp != 4) || m->experts % (int)p)
        return false;
    *shape = *m; /* the config points at it */
    shape->capacity_factor = c;
    *mc = (struct memory_config){.model = shape,
                                 .precision = fp == 4 ? FP_FP32 : FP_BF16,
                                 .optimizer = OPT_ADAMW,
                                 .dp = (int)p,
                                 .tp = 1,
                                 .pp = 1,
                                 .cp = 1,
                                 .ep = (int)p,
                                 .micro_batch = (int)b,
                                 .seq = m->seq,
                                 .micro_batches = 1,
                                 .schedule = SCHED_1F1B,
                                 .ckpt = {CKPT_NONE, 0}};
    struct cluster_spec cl;
    if (preset_load_cluster(PRESET_CLUSTER, &cl, NULL) < 0)
        spec_default(&cl);
    mc->capacity = cl.hbm_bytes;
    cl.nodes = (int)ceil(p / cl.gpus_per_node);
    return memory_compute(mc, r, NULL) == 0 &&
           traffic_compute(mc, &cl, 0, r->params_gpu, r->stage_layers, 0, 0, t, NULL) == 0;
}

/* The expert parameters a GPU holds with expert parallelism over p GPUs (all with p = 1). */
static double m_ep_experts(const struct model_shape *m, double p)
{
    struct model_shape sh;
    struct memory_config mc;
    struct memory_result r;
    struct traffic t;
    return with_ep(m, p, 1, 1, 2, &sh, &mc, &r, &t) ? memory_ep_experts(&mc) : NAN;
}

/* The bytes a GPU sends per step in its experts' all-to-alls: p GPUs, b sequences a GPU,
 * capacity factor c, fp bytes. */
static double m_ep_sent(const struct model_shape *m, double p, double b, double c, double fp)
{
    struct model_shape sh;
    struct memory_config mc;
    struct memory_result r;
    struct traffic t;
    return with_ep(m, p, b, c, fp, &sh, &mc, &r, &t) ? t.ep.bytes : NAN;
}

/* A GPU's memory with expert parallelism over p GPUs: b sequences a GPU, capacity factor c,
 * fp bytes (4: fp32 training as the window runs it). */
static double m_ep_per_gpu(const struct model_shape *m, double p, double b, double c, double fp)
{
    struct model_shape sh;
    struct memory_config mc;
    struct memory_result r;
    struct traffic t;
    return with_ep(m, p, b, c, fp, &sh, &mc, &r, &t) ? r.total : NAN;
}

/* An expert's rows for n tokens with capacity factor c: min(n, ceil(c k n / E))
 * (base/experts.h's rule). */
static double m_capacity(const struct model_shape *m, double n, double c)
{
    if (m->experts < 2 || !whole(n, 1, 1 << 24) || !(c > 0) || !experts_capacity_ok(c))
        return NAN;
    return experts_capacity((int)n, m->experts, m->top_k, c);
}

/* The loss floor of the data the lab trains it on: the entropy rate of the source over its
 * vocabulary, with train's default seed (par/run.h); NAN for a model the tiny GPT does not
 * train or whose vocabulary is beyond the data's (its pair chain has V^2 states). */
static double m_loss_floor(const struct model_shape *m)
{
    struct train_opts o;
    struct gpt_config g;
    if (train_shape_of(m, &g, NULL) < 0 || m->vocab > 4096)
        return NAN;
    train_opts_default(&o);
    return run_data_floor(m->vocab, o.seed);
}

/* ------------------------------------------------------------------ pipelines (calc/sched.h) */

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

/* zb-h1's bubble over ideal time with F = B = W (calc/sched.h, Qi et al. 2024). */
static double bubble_zbh1(double p, double m)
{
    return p >= 1 && m >= 1 ? sched_formula_over_ideal(SCHED_ZBH1, (int)p, (int)m, 1) : NAN;
}

/* zb-h1's bubble over 1F1B's for F, B and W of these times: (F + B - W)/(F + B + W). */
static double zb_share(double f, double b, double w)
{
    if (!(f >= 0 && b >= 0 && w >= 0 && f + b + w > 0))
        return NAN;
    return sched_formula_times(SCHED_ZBH1, 2, 1, 1, f, b, w) /
           sched_formula_times(SCHED_1F1B, 2, 1, 1, f, b, w);
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

/* ------------------------------------------------------------------ the registry */

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

/* libm's functions take and give doubles: the arithmetic quantities are them (sqrt, log2, ...) */
static const struct quantity registry[] = {
    FORMAT_LINES(fp32, "fp32"),
    FORMAT_LINES(fp16, "fp16"),
    FORMAT_LINES(bf16, "bf16"),
    FORMAT_LINES(e4m3, "fp8_e4m3"),
    FORMAT_LINES(e5m2, "fp8_e5m2"),
    M0("params", "", "the model's parameters, counted from its shape", m_params),
    M0("active_params", "",
       "the parameters a token uses: all of them, or a mixture's less the experts it skips",
       m_active_params),
    M0("experts", "", "its experts per expert layer (0: a dense model)", m_experts),
    M0("top_k", "", "the experts each token goes to (0: a dense model)", m_top_k),
    M0("states", "B", "its model states with mixed-precision AdamW, 16 B/param", m_states),
    M0("layers", "", "its layers", m_layers),
    M0("d_model", "", "its hidden size", m_d_model),
    M0("heads", "", "its attention heads", m_heads),
    M0("kv_heads", "", "its key/value heads (fewer than heads: grouped-query attention)",
       m_kv_heads),
    M0("kv_width", "", "the width of its K and V, kv_heads x d_model / heads", m_kv_width),
    M0("ffn", "", "its feed-forward width", m_ffn),
    M0("vocab", "", "its vocabulary", m_vocab),
    M0("seq", "", "its sequence length", m_seq),
    M0("layer_params", "", "parameters of one of its layers", m_layer_params),
    M2("activ_layer", "B",
       "bytes one layer saves for b sequences of s tokens in bf16, no checkpointing, flash "
       "attention (the calculator's default): (s, b)",
       m_activ_layer),
    M3("activ_peak", "B",
       "its peak activations, s tokens x b sequences, bf16, flash attention; k: 0 none, -1 "
       "selective, -2 sqrt, every:k",
       m_activ),
    M3("activ_peak32", "B", "the same in fp32 training (4-byte activations)", m_activ32),
    M3("total", "B", "its states plus peak activations on one GPU (s, b, k as above)", m_total),
    M2("activ_layer_eager", "B",
       "activ_layer with eager attention: the a s^2 b probabilities kept (the tiny GPT's "
       "kernel without cp)",
       m_activ_layer_eager),
    M3("activ_peak_eager", "B", "activ_peak with eager attention", m_activ_eager),
    M3("activ_peak32_eager", "B", "activ_peak32 with eager attention", m_activ32_eager),
    M3("total_eager", "B", "total with eager attention", m_total_eager),
    M1("flops", "",
       "model FLOPs of a step over t tokens: 6 Psi t + 12 L h s t (Psi: the active parameters)",
       m_flops),
    M2("tp_comm", "B", "bytes a GPU sends per step for its layers' tp = t, m micro-batches",
       m_tp_comm),
    M3("per_gpu", "B", "memory per GPU: n data-parallel GPUs, ZeRO stage z, checkpoint k",
       m_per_gpu),
    M4("per_gpu_b", "B", "the same with micro-batches of b sequences: (n, z, k, b)", m_per_gpu_b),
    M2("comm_buffers", "B", "ZeRO's communication buffers per GPU: n GPUs, stage z",
       m_comm_buffers),
    M4("per_gpu_3d", "B", "the fullest GPU on dp x tp x pp GPUs, m micro-batches (1F1B, sp)",
       m_per_gpu_3d),
    M3("dp_comm_3d", "B", "bytes a GPU sends per step for data parallelism on dp x tp x pp",
       m_dp_comm_3d),
    M3("tp_sent", "B", "tp bytes a GPU sends per step: t GPUs, b sequences, fp-byte activations",
       m_tp_sent),
    M4("pp_sent", "B", "the first stage's pipeline bytes: p stages, m micro-batches of b, fp bytes",
       m_pp_sent),
    M4("activ_cp", "B",
       "activations a GPU holds with cp c: s tokens, b sequences, bf16, checkpoint k: (s, b, k, c)",
       m_activ_cp),
    M4("cp_sent", "B",
       "bytes a GPU sends round the cp ring per step: c GPUs, s tokens, b sequences, fp bytes",
       m_cp_sent),
    M1("ep_experts", "", "expert parameters a GPU holds with expert parallelism over p GPUs",
       m_ep_experts),
    M4("ep_sent", "B",
       "bytes a GPU sends per step in its experts' all-to-alls: p GPUs, b sequences a GPU, "
       "capacity factor c, fp bytes: (p, b, c, fp)",
       m_ep_sent),
    M4("ep_per_gpu", "B",
       "a GPU's memory with experts over p GPUs: b sequences a GPU, capacity c, fp bytes",
       m_ep_per_gpu),
    M2("capacity", "", "an expert's rows for n tokens, capacity factor c: min(n, ceil(c k n/E))",
       m_capacity),
    M0("loss_floor", "", "the entropy rate of the data the lab trains it on (nats per token)",
       m_loss_floor),
    M2("recompute", "", "the share of matmul FLOPs policy k adds to a step of b sequences",
       m_recompute),
    C0("alpha_intra", "s", "α between two GPUs of a node", c_alpha_intra),
    C0("alpha_inter", "s", "α between nodes", c_alpha_inter),
    C0("beta_intra", "B/s", "β per GPU and direction inside a node", c_beta_intra),
    C0("beta_inter", "B/s", "β per GPU and direction between nodes", c_beta_inter),
    C0("peak_flops", "", "a GPU's dense bf16 peak, FLOP/s", c_peak_flops),
    C0("gpu_mem", "B", "a GPU's memory", c_hbm_bytes),
    C0("gpus_per_node", "", "GPUs in a node", c_gpus_per_node),
    Q0("mixed.bytes_per_param", "B", "model states per parameter, mixed-precision AdamW: 16",
       bytes_per_param),
    Q0("mixed.bytes_per_param18", "B", "the same with fp32 gradients: 18", bytes_per_param18),
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
    Q2("pipeline.bubble_zbh1", "", "zb-h1's bubble over ideal time, F = B = W: (p-1)/(3m)",
       bubble_zbh1),
    Q3("pipeline.zb_share", "", "zb-h1's bubble over 1F1B's, (F+B-W)/(F+B+W)", zb_share),
    Q3("pipeline.peak_1f1b", "", "micro-batches stage s of p holds at once under 1F1B, m of them",
       peak_1f1b),
    Q3("pipeline.peak_gpipe", "", "micro-batches stage s of p holds at once under GPipe",
       peak_gpipe),
    Q1("sqrt", "", "the square root of x", sqrt),
    Q1("log2", "", "the base-2 logarithm of x", log2),
    Q1("ln", "", "the natural logarithm of x", log),
    Q1("ceil", "", "x rounded up to a whole number", ceil),
    Q1("floor", "", "x rounded down to a whole number", floor),
    Q1("round", "", "x rounded to the nearest whole number", round),
    Q2("min", "", "the smaller of x and y", fmin),
    Q2("max", "", "the larger of x and y", fmax),
};

/* The table here, then the collectives' (quantity_comm.c). */
size_t quantity_count(void)
{
    return sizeof registry / sizeof registry[0] + quantity_comm_count;
}

const struct quantity *quantity_at(size_t i)
{
    size_t here = sizeof registry / sizeof registry[0];
    return i < here ? &registry[i] : i < quantity_count() ? &quantity_comm[i - here] : NULL;
}

static const struct quantity *exact(const char *name)
{
    for (size_t i = 0; i < quantity_count(); i++)
        if (strcmp(quantity_at(i)->name, name) == 0)
            return quantity_at(i);
    return NULL;
}

/* A family's member: "PRESET.rest" as "MODEL.rest" (or "CLUSTER.rest"); *preset gets the
 * preset's name ('_' read as '-'). */
static const struct quantity *family(const char *name, char *preset, size_t n)
{
    const char *dot = strchr(name, '.');
    if (!dot || dot == name || (size_t)(dot - name) >= n)
        return NULL;
    for (size_t i = 0; i < (size_t)(dot - name); i++)
        preset[i] = name[i] == '_' ? '-' : name[i];
    preset[dot - name] = '\0';
    char want[128];
    const char *kinds[] = {"MODEL", "CLUSTER"};
    for (int k = 0; k < 2; k++) {
        snprintf(want, sizeof want, "%s%s", kinds[k], dot);
        const struct quantity *q = exact(want);
        if (q)
            return q;
    }
    return NULL;
}

const struct quantity *quantity_lookup(const char *name, char *preset, size_t n)
{
    const struct quantity *q = exact(name);
    if (n)
        preset[0] = '\0';
    return q ? q : family(name, preset, n);
}

const struct quantity *quantity_find(const char *name)
{
    char preset[PRESET_NAME_MAX];
    return quantity_lookup(name, preset, sizeof preset);
}
