/* A layout in a training framework's own terms: `plan --emit` and `memory --emit`.
 *
 *   deepspeed  a ds_config.json (DeepSpeed's documented keys: train_batch_size,
 *              train_micro_batch_size_per_gpu, gradient_accumulation_steps,
 *              zero_optimization.stage and its bucket sizes, bf16 / fp16 with the loss
 *              scaler, data_types.grad_accum_dtype, zero_allow_untested_optimizer,
 *              gradient_clipping, activation_checkpointing)
 *   megatron   a torchrun line with Megatron-LM's pretrain_gpt.py arguments: the parallel
 *              sizes, batch sizes, recompute, distributed optimizer or Megatron-FSDP,
 *              precision, gradient accumulation and loss-scale flags, the model's shape
 *   fsdp       a torchrun line and a short Python snippet wrapping a model in PyTorch's
 *              FullyShardedDataParallel (ShardingStrategy, MixedPrecision, checkpointed
 *              segments of layers)
 * What is written is what the framework runs for the layout (calc/framework.h): a layout it
 * cannot run is refused with its reason, and one it runs differently (FSDP's ZeRO-2 for a
 * ZeRO-1, Megatron-LM's fp32 gradients) is written as it runs. Each is headed by comments:
 * the layout run, each way it differs from the one asked and why, the memory per GPU the
 * calculator predicts for it with the `scalelab memory` command that gives the same figure,
 * and whether it fits. JSON has no comments: deepspeed's go to `notes` (standard error), so
 * the file stays loadable. */
#ifndef SCALELAB_CLI_EMIT_H
#define SCALELAB_CLI_EMIT_H

#include <stdbool.h>
#include <stdio.h>

#include "calc/framework.h"
#include "calc/memory.h"

struct cluster_spec;
struct error;

/* --emit's value: deepspeed, megatron or fsdp; ERR_INVAL naming --OPTION and the allowed. */
int emit_parse(const char *option, const char *s, enum framework *out, struct error *e);

struct emit_plan {
    const char *source; /* the command that chose it, for the heading */
    const struct cluster_spec *cluster;
    struct memory_config c; /* the layout, a shaped model (the global batch is
                               dp x micro_batch x micro_batches) */
    double step_time_s;     /* predicted step time, or 0 when not known */
    bool force;             /* written even when it does not fit */
};

/* Writes p's layout for framework f (not FRAMEWORK_NONE): 0; 1 when it does not fit and
 * p->force is not set, with only the heading written, which says so; ERR_INVAL (e says
 * why) when the framework does not run it, with nothing written. */
int emit_write(FILE *out, FILE *notes, enum framework f, const struct emit_plan *p,
               struct error *e);

#endif
