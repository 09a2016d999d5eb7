/* A layout in a training framework's own terms: `plan --emit` and `memory --emit`.
 *
 *   deepspeed  a ds_config.json (DeepSpeed's documented keys: train_batch_size,
 *              train_micro_batch_size_per_gpu, gradient_accumulation_steps,
 *              zero_optimization.stage and its bucket sizes, bf16 / fp16 with the loss
 *              scaler, gradient_clipping, activation_checkpointing)
 *   megatron   a torchrun line with Megatron-LM's pretrain_gpt.py arguments: the parallel
 *              sizes, batch sizes, recompute, distributed optimizer, precision and loss-scale
 *              flags, and the model's shape
 *   fsdp       a torchrun line and a short Python snippet wrapping a model in PyTorch's
 *              FullyShardedDataParallel (ShardingStrategy, MixedPrecision, activation
 *              checkpointing)
 * Each is headed by comments: the layout, the memory per GPU the lab predicts for it, and
 * every setting the framework has no equivalent for (never dropped silently). JSON has no
 * comments: deepspeed's go to `notes` (standard error), so the file stays loadable. */
#ifndef SCALELAB_CLI_EMIT_H
#define SCALELAB_CLI_EMIT_H

#include <stdio.h>

#include "calc/memory.h"

struct cluster_spec;
struct error;

enum emit_kind { EMIT_DEEPSPEED, EMIT_MEGATRON, EMIT_FSDP };

/* "deepspeed", "megatron" or "fsdp"; ERR_INVAL naming the allowed ones. */
int emit_parse(const char *s, enum emit_kind *out, struct error *e);

struct emit_plan {
    const char *source; /* the command that chose it, for the heading */
    const struct model_shape *model;
    const struct cluster_spec *cluster;
    int gpus, dp, tp, pp, zero;
    struct activ_policy ckpt;
    int micro_batch, micro_batches, seq; /* global batch = dp x micro_batch x micro_batches */
    enum calc_precision precision;
    enum calc_optimizer optimizer;
    bool grad_fp32, sp;
    enum calc_schedule schedule;
    double bucket_bytes;  /* ZeRO-1/2 buckets (0: MEMORY_BUCKET) */
    double per_gpu_bytes; /* the lab's predicted peak memory per GPU */
    double capacity;      /* bytes per GPU */
    double step_time_s;   /* predicted step time, or 0 when not known */
};

void emit_write(FILE *out, FILE *notes, enum emit_kind k, const struct emit_plan *p);

#endif
