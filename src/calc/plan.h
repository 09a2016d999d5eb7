/* The planner: every parallel layout of a model on a cluster, those that fit, ranked by
 * predicted step time.
 *
 * Layouts: dp x tp x pp (x cp) = the GPUs, context parallelism's cp a power of two up to
 * plan_config.cp_max (where it pays: long sequences, whose activations it divides); ZeRO stage 0-3
 * (2 and 3 only without pipelining, as DeepSpeed and Megatron-LM allow); checkpoint policy none,
 * selective or full; micro-batch size b a power of two dividing global_batch / dp, so each step
 * runs m = global_batch / (dp b) micro-batches (the pipeline's, or gradient accumulation's). Tensor
 * parallelism uses sequence parallelism (Korthikanti et al. 2022); pipelines run 1F1B.
 *
 * Predicted step time (all on one GPU, the busiest stage):
 *   compute   (model FLOPs + recompute FLOPs) / (GPUs x peak x efficiency)
 *             model FLOPs = 6 Ψ T + 12 L h s T for T tokens (Kaplan et al. 2020's 6 FLOPs per
 *             parameter and token, plus attention's scores and values as PaLM's MFU counts
 *             them, Chowdhery et al. 2022, appendix B); recompute: one more forward of every
 *             layer for full checkpointing, QK^T and P x V for selective (calc/activ.h)
 *   bubble    (compute + the tensor-, context- and expert-parallel communication on each
 *             stage's path) x (pp - 1) / m (calc/sched.h): the pipeline fills and drains with
 *             a stage's whole micro-batch (timed as synthetic-7b, pp 2 x tp 4 ran 3.7% longer
 *             than the calculator said when it counted the compute alone)
 *   imbalance the pipeline runs at its slowest stage: the last one also computes the head (and
 *             the first an untied embedding's FLOPs), so each of the m - 1 micro-batches after
 *             the first waits (its micro-batch - the mean stage's): (m - 1) / m x compute x
 *             (the slowest stage's share x pp - 1). Measured on runs timed as synthetic-7b
 *             (train --time-as): without it 1F1B on 4 stages was 3.6% (m 4) to 5.3% (m 8)
 *             slower than the calculator said, with it within 0.5%
 *   exposed communication: calc/traffic.h
 * MFU = model FLOPs / (step time x GPUs x peak).
 *
 * For a framework (plan_config.framework, calc/framework.h) every layout is what that
 * framework runs: its memory and time are computed for the layout the framework would run
 * (Megatron-LM's and FSDP's fp32 gradients, say), a layout it refuses is rejected with its
 * reason, and one it would run as another layout is rejected as such (that other layout is
 * ranked in its own right). */
#ifndef SCALELAB_CALC_PLAN_H
#define SCALELAB_CALC_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "calc/framework.h"
#include "calc/memory.h"
#include "calc/traffic.h"

struct cluster_spec;
struct error;

struct plan_config {
    const struct model_shape *model;
    const struct cluster_spec *cluster;
    int gpus;         /* at most gpus_per_node x nodes */
    int global_batch; /* sequences per step */
    int seq;
    enum fp_format precision;
    enum calc_optimizer optimizer;
    bool grad_fp32;
    double efficiency;              /* share of peak the matmuls reach, (0, 1] */
    double capacity;                /* bytes per GPU */
    enum framework framework;       /* rank only what it runs (FRAMEWORK_NONE: the lab's layouts) */
    int cp_max;                     /* context parallelism up to this (0 or 1: none) */
    int ep_max;                     /* expert parallelism up to this (0 or 1: none; experts only) */
    enum activ_attention attention; /* flash (the default) or eager (calc/activ.h) */
};

struct plan_layout {
    int dp, tp, pp, zero;
    int cp; /* context parallelism (0 or 1: none) */
    int ep; /* expert parallelism over the dp GPUs (0 or 1: none) */
    struct ckpt_policy ckpt;
    int micro_batch, micro_batches;
    double per_gpu_bytes;
    double compute_s, bubble_s, imbalance_s, comm_exposed_s, step_time_s;
    double mfu;
    double comm_bytes_per_gpu;
    struct traffic traffic;
    double over;      /* bytes above the capacity, 0 if it fits */
    char reason[400]; /* why it was rejected, "" if kept */
};

struct plan_result {
    struct plan_layout *kept, *rejected;
    size_t n_kept, n_rejected;
    double model_flops; /* per step */
};

/* The calculator's layout for l (its sizes, stage, policy and batch) under c: sequence
 * parallel when tp > 1, 1F1B, c's precision, optimizer, gradients and capacity. */
void plan_memory_config(const struct plan_config *c, const struct plan_layout *l,
                        struct memory_config *out);

/* The share of peak FLOP/s the matmuls reach unless told (plan --efficiency): the one a run
 * timed as a model computes at too (train --time-as, par/timeas.h). */
#define PLAN_EFFICIENCY 0.5

/* 6 Ψ T + 12 L h s T. */
double plan_model_flops(const struct model_shape *m, double params, double tokens, int seq);
/* The same count, one micro-batch of b sequences of s tokens, by operation: a layer's forward,
 * 2 Ψ_layer b s + 4 b s^2 h (its parameters, and attention's scores and values), and the ends'
 * (embedding, final norm, head: the rest of Ψ), 2 (Ψ - L Ψ_layer) b s; plan_model_flops is 3
 * (L layer + ends) per micro-batch (a backward pass is twice the forward). */
void plan_op_flops(const struct model_shape *m, double params, int b, int s, double *layer,
                   double *ends);
/* A layer's attention forward (scores and values) for b sequences of s tokens: 4 b s^2 h as
 * plan_op_flops counts it, or, causal, 2 b h s (s + 1), the s (s + 1) / 2 pairs the mask leaves
 * per head, which ring attention's blocks compute (model/ringattn.h): the calculator's count
 * under context parallelism. */
double plan_attn_flops(const struct model_shape *m, int b, int s, bool causal);

/* Step time, MFU and communication of one layout (memory already computed into l's fields by
 * the caller, or not needed). */
int plan_time(const struct plan_config *pc, const struct memory_config *mc,
              const struct memory_result *mr, struct plan_layout *l, struct error *e);

/* The step of the one layout mc describes, whose memory mr is (memory_compute's for mc): a
 * global batch of dp x micro-batch x micro-batches sequences of mc's model, computed at
 * PLAN_EFFICIENCY of cluster's peak, timed by plan_time into out (compute, bubble, the slowest
 * stage's wait, exposed communication by kind, MFU): what `plan` would rank the layout by, what
 * `memory` prints and what a run timed as mc's model (par/timeas.h) is set beside. */
int plan_step(const struct memory_config *mc, const struct memory_result *mr,
              const struct cluster_spec *cluster, struct plan_layout *out, struct error *e);

/* Checks the configuration (ERR_INVAL naming the field of struct plan_config: the command line
 * checks its options first, in its own words), enumerates and ranks: kept by step time,
 * rejected by how far they overflow (then the structural reasons). */
int plan_run(const struct plan_config *c, struct plan_result *out, struct error *e);
void plan_free(struct plan_result *r);

#endif
