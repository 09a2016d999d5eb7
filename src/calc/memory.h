/* Memory per GPU: model states (weights, gradients, master weights, optimizer state) and
 * activations, for a model, a precision, an optimizer, a parallel layout and a ZeRO stage.
 *
 * Model states follow the ZeRO paper (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations
 * Toward Training Trillion Parameter Models", §3.1 and Figure 1): mixed precision with Adam keeps
 * 2 bytes of fp16/bf16 weights, 2 of gradients and K = 12 of fp32 master weights, momentum and
 * variance: 16 bytes per parameter Ψ. With N_d-way data parallelism,
 *   stage 0 (DDP)  (2 + 2 + K) Ψ
 *   stage 1 (P_os) (2 + 2) Ψ + K Ψ / N_d          optimizer state (and master weights) split
 *   stage 2 (P_os+g) 2 Ψ + (2 + K) Ψ / N_d        gradients split too
 *   stage 3 (P_os+g+p) (2 + 2 + K) Ψ / N_d        weights split too
 * Ψ = 7.5e9, N_d = 64: 120, 31.4, 16.6 and 1.875 GB. Megatron-LM and DeepSpeed accumulate
 * gradients in fp32 ("--grad-accum fp32"): 4 bytes of gradients, 18 per parameter.
 * fp32 training keeps 4-byte weights that are their own master copy: 4 + 4 + 8 = 16 with AdamW.
 * Optimizer state: AdamW 8 bytes (m, v in fp32), SGD with momentum 4, plain SGD 0.
 *
 * Tensor and pipeline parallelism divide the parameters before ZeRO does: a GPU of pipeline
 * stage s holds its layers' shards (calc/params.h, params_per_gpu); the reported GPU is the
 * stage whose total is largest. Activations: calc/activ.h for one micro-batch, times the
 * micro-batches a stage holds at once: 1 without pipelining (micro-batches run one after the
 * other), all m with GPipe, min(p - s, m) at stage s with 1F1B (PipeDream-Flush, Narayanan et
 * al. 2021). With k in flight the stage holds (k - 1) x saved + peak. Interleaved (v chunks
 * per stage, virtual stage c p + s holding layers L/(pv) each, the embedding on the first and
 * the head on the last): each chunk's states are padded and counted apart, and the activations
 * are the most the stage holds over its schedule (calc/sched.h), walking its operations: a
 * forward holds the chunks in flight plus its own peak, then keeps its saved bytes; a backward
 * releases them and peaks over the rest (for v = 1 this is (k - 1) x saved + peak again).
 * zb-h1 walks its operations too: a B also books what its W needs (calc/activ.h's
 * activ_wgrad_bytes a layer), which the W releases.
 * Communication buffers (memory_comm) complete the total. */
#ifndef SCALELAB_CALC_MEMORY_H
#define SCALELAB_CALC_MEMORY_H

#include <stdbool.h>
#include <stddef.h>

#include "calc/activ.h"
#include "calc/preset.h"
#include "calc/sched.h"
#include "num/fp.h"

struct error;

enum calc_optimizer { OPT_ADAMW, OPT_SGD, OPT_SGD_MOMENTUM };

int memory_parse_optimizer(const char *s, enum calc_optimizer *out, struct error *e);
const char *memory_optimizer_name(enum calc_optimizer o);

/* Bytes per parameter of each model state, before any partitioning, for a training precision
 * (num/fp.h's table: the format's width for weights and gradients, fp32 master weights when
 * mixed). */
struct memory_states {
    double weights, gradients, master, optimizer;
};

void memory_bytes_per_param(enum fp_format prec, enum calc_optimizer opt, bool grad_fp32,
                            struct memory_states *out);

/* psi parameters' states on one of nd data-parallel GPUs at ZeRO stage 0-3. With nd > 1 the
 * flat buffers are padded to nd ceil(psi/nd) elements and a shard is ceil(psi/nd), as the
 * trainer's GPUs hold them (par/shard.h). */
void memory_zero(double psi, const struct memory_states *per_param, int zero, int nd,
                 struct memory_states *out);

struct memory_config {
    const struct model_shape *model; /* NULL: a bare parameter count, no activations */
    double params;                   /* used when model is NULL */
    enum fp_format precision;
    enum calc_optimizer optimizer;
    bool grad_fp32;
    int dp, tp, pp, zero;
    int cp; /* context parallelism: each sequence over cp GPUs (0 or 1: none) */
    int ep; /* expert parallelism: a layer's experts over ep of the dp GPUs (0, 1: none) */
    /* dropless ep: the rows a layer's experts hold, calc/activ.h's (NULL, false: the bound) */
    const double *ep_rows;
    bool ep_uniform;
    /* and the rows the largest all-to-all held, out and in (a run's: par/ep.h's ep_rows), its
     * buffers' bytes then ep_held d p (0: the bound, memory_ep_buffers) */
    double ep_held;
    bool cp_naive; /* cp: GPU i holds chunk i of cp, not chunks i and 2cp - 1 - i */
    enum activ_attention attention; /* flash (the default: no probabilities kept) or eager;
                                       cp > 1 needs flash (calc/activ.h) */
    int micro_batch, seq, micro_batches;
    enum calc_schedule schedule; /* gpipe, 1f1b, zb-h1, or interleaved with chunks >= 2 */
    int chunks;                  /* v, model chunks per stage (interleaved); 0 or 1 otherwise */
    bool sp;
    struct ckpt_policy ckpt;
    double capacity;     /* bytes per GPU */
    double bucket_bytes; /* ZeRO-2's gradient buckets (0: MEMORY_BUCKET) */
    bool no_prefetch;    /* ZeRO-3 gathers one unit at a time (default: the next one too) */
    int unit_layers;     /* ZeRO-3's units hold this many layers (0 or 1: one each, as the
                            trainer's; PyTorch FSDP's wrapped modules may hold more) */
};

/* PyTorch DDP's bucket_cap_mb, 25 MiB: the trainer's default too. */
#define MEMORY_BUCKET (25.0 * 1024 * 1024)

/* Checks a layout against the model: sizes at least 1, zero 0..3, pp at most the layers, tp
 * dividing the heads (activ_check), schedule gpipe or 1f1b, or interleaved with chunks >= 2,
 * pp x chunks dividing the layers and pp dividing the micro-batches, unit_layers 0 or more.
 * ERR_INVAL naming the option. */
int memory_check(const struct memory_config *c, struct error *e);

struct memory_result {
    double params;     /* the whole model */
    double params_gpu; /* held by the reported GPU before ZeRO (its tp/pp share) */
    int stage;         /* the pipeline stage of the reported GPU */
    int stage_layers;
    struct memory_states per_param; /* bytes per parameter */
    struct memory_states states;    /* bytes on the reported GPU */
    double activations;
    double comm; /* communication buffers: ZeRO-2's buckets, ZeRO-3's pieces and gathers */
    double total;
    int in_flight;           /* micro-batches that stage holds at once */
    double wset;             /* zb-h1: what one micro-batch's B keeps for its W on the stage */
    int w_held;              /* zb-h1: most of those the stage holds at once (0 otherwise) */
    struct activ_total act;  /* one micro-batch of the stage */
    struct activ_list layer; /* one layer's list (empty without a shape) */
    double capacity;
    bool fits;
    double over; /* total - capacity when it does not fit, else 0 */
};

struct params_breakdown;
/* The communication buffers a GPU holds for data parallelism (par/dp.h): none for DDP and
 * ZeRO-1 (they reduce the gradients in place); ZeRO-2 two buckets of bucket_bytes (at most
 * the padded buffer); ZeRO-3 two gradient pieces of the largest of the embedding, a unit of
 * layers and the final norm with the padding, plus the gathered weights: the larger of the
 * ends (embedding, final norm, padding) and a unit, or with prefetch the largest two units
 * held at once (the ends and a unit, or two units). A unit is one layer, or unit_layers
 * (at most the GPU's layers). psi the GPU's parameters, of which `layers` layers of
 * pb->per_layer; pb NULL for a bare count, which counts no buffers (0). */
double memory_comm(const struct memory_config *c, const struct params_breakdown *pb, double psi,
                   int layers, bool first, bool last);

int memory_compute(const struct memory_config *c, struct memory_result *out, struct error *e);

/* The GPUs holding the same weights, over which ZeRO shards and the gradients reduce: dp x cp
 * (Megatron-LM's data-parallel group with context parallelism). */
int memory_grad_ranks(const struct memory_config *c);
/* Context parallelism's ring buffers (par/cp.h): two of a block's K, V, dK and dV, 2 x 4 b s/cp
 * kv/t p bytes (kv = kv_heads h / a); 0 without cp or a shape. */
double memory_cp_buffers(const struct memory_config *c);

/* Expert parallelism (model/gpt.h, par/layout.h): the expert parameters one GPU holds, E / ep
 * of each expert layer's E experts of 3 d ffn (all E with ep 1; 0 without experts); and its
 * all-to-alls' send and receive buffers (par/ep.h), 2 E cap d p bytes for a micro-batch of n =
 * b s tokens, cap = min(n, ceil(C k n / E)) (model/moe.h), 0 with ep 1. Their weights replicate
 * over the dp / ep GPUs of the same expert rank, over which ZeRO shards them (Megatron-LM's
 * expert-data-parallel group); the others' over dp. */
double memory_ep_experts(const struct memory_config *c);
double memory_ep_buffers(const struct memory_config *c);
/* Dropless expert parallelism (ep > 1, a model with experts and no capacity factor: model/gpt.h):
 * an all-to-all holds its k n rows out and the rows that come in, (k n + in) d p bytes, in one
 * block of that size at most (par/ep.h, par/xbuf.h's xbuf_reserve); memory_ep_buffers is its
 * bound, every token of the group routed to this GPU (in = ep n min(k, E/ep), base/experts.h's
 * experts_rows_held), what the block reserves and the plan counts, and worst false gives the
 * expected, uniform routing (in = k n: 2 k n d p). With a capacity both are 2 E cap d p. */
bool memory_ep_dropless(const struct memory_config *c);
double memory_ep_buffers_at(const struct memory_config *c, bool worst);
/* What a GPU's communication counts for its all-to-alls: memory_ep_buffers, or dropless with
 * ep_held set, the largest exchange's ep_held d p. The block is reserved at the bound (the room
 * a plan must find: memory_ep_buffers), but the ledger charges to communication only what each
 * exchange holds, as activations are booked at the step's rows: the bound says whether it fits,
 * a step's own rows say what it held, and the calculator given them says it to the byte. */
double memory_ep_buffers_held(const struct memory_config *c);
/* Rows a micro-batch's tokens take in an expert layer's static [E, cap, d] shape: E cap. */
double memory_ep_rows(const struct memory_config *c);

/* The same for the GPUs of one pipeline stage (0 <= stage < pp; a shaped model only). */
int memory_compute_stage(const struct memory_config *c, int stage, struct memory_result *out,
                         struct error *e);

/* The micro-batches stage s of pp holds at once (1 when pp is 1). */
int memory_in_flight(enum calc_schedule sched, int stage, int pp, int m);

#endif
