/* What DeepSpeed, Megatron-LM and PyTorch FSDP run for a layout: the calculator's layout
 * (calc/memory.h) passed through each framework's own rules, so that an export's prediction
 * (cli/emit.h) and the planner's ranking for a framework (plan --framework, calc/plan.h) are
 * the calculator's figures for what the framework will actually run. A layout the framework
 * cannot run is refused with its reason; one it runs differently is changed, and each change
 * is noted with its source. tests/cli/emit.sh checks the exports against a table of the same
 * rules written from these files.
 *
 * DeepSpeed 0.18 and later (deepspeed/runtime/engine.py: get_data_types and
 * _do_optimizer_sanity_check; deepspeed/runtime/pipe/engine.py and pipe/schedule.py;
 * deepspeed/runtime/bf16_optimizer.py):
 *   - ZeRO-2 and ZeRO-3 with a pipeline are refused (the PipelineEngine asserts "ZeRO-2 and
 *     ZeRO-3 are incompatible with pipeline parallelism").
 *   - Gradients accumulate in data_types.grad_accum_dtype, which the export always writes
 *     (its default changed in 0.18: bf16 without ZeRO used to accumulate in fp32).
 *   - Without ZeRO the weights' type and the accumulation's must agree ("unsupported mix of
 *     model_dtype and grad_accum_dtype"): bf16 or fp16 with fp32 accumulation is refused.
 *     With ZeRO-1, bf16 and fp32 accumulation run the BF16_Optimizer: a ZeRO-1 all the same.
 *   - bf16 with a pipeline and no ZeRO runs the BF16_Optimizer too, which shards the fp32
 *     master weights and the optimizer state over the data-parallel GPUs: ZeRO-1.
 *   - The pipeline engine has one schedule, TrainSchedule, which holds min(p - s, m)
 *     micro-batches at stage s: 1F1B (gpipe and interleaved run as 1F1B).
 * Megatron-LM core_v0.19 (megatron/training/arguments.py, megatron/training/config/,
 * megatron/training/theoretical_memory_usage.py):
 *   - Context parallelism is --context-parallel-size, always with the balanced split
 *     (get_batch_on_this_cp_rank, megatron/core/utils.py): a naive split runs as balanced.
 *     DeepSpeed (whose Ulysses splits heads, not a ring) and the FSDP export refuse it.
 *   - Mixed precision accumulates and all-reduces gradients in fp32
 *     (--accumulate-allreduce-grads-in-fp32, which --bf16 turns on by itself): fp32
 *     gradients, the 18 bytes per parameter (Adam) of Megatron's own estimator.
 *   - ZeRO-1 is --use-distributed-optimizer; ZeRO-2 and ZeRO-3 are Megatron-FSDP
 *     (--use-megatron-fsdp with --data-parallel-sharding-strategy optim_grads or
 *     optim_grads_params), which the export writes only without a pipeline.
 *   - Pipelines run 1F1B or interleaved 1F1B; gpipe runs as 1F1B.
 * PyTorch FSDP, 1.13 to 2.x (torch/distributed/fsdp/fully_sharded_data_parallel.py,
 * api.py, wrap.py; torch/distributed/algorithms/_checkpoint/checkpoint_wrapper.py):
 *   - FSDP alone has no tensor or pipeline parallelism: a layout with tp or pp above 1 is
 *     refused (torchrun would run every GPU as a data-parallel replica: tp x pp times the
 *     global batch).
 *   - ShardingStrategy has no optimizer-only sharding: ZeRO-1 runs as SHARD_GRAD_OP, ZeRO-2.
 *   - With MixedPrecision the reduced gradients are cast to the parameters' fp32 and
 *     accumulated there (_cast_grad_to_param_dtype): fp32 gradients.
 *   - checkpoint_wrapper recomputes whole modules: selective runs as full. A checkpointed
 *     segment of K layers (every:K) is one wrapped module, so ZeRO-3 gathers and reduces K
 *     layers at a time (memory_config.unit_layers).
 * ZeRO-3 in DeepSpeed and Megatron-FSDP gathers a layer at a time (DeepSpeed fetches each
 * module's parameters, Megatron-FSDP's units are its TransformerLayers): units of one layer,
 * whatever unit_layers asked. */
#ifndef SCALELAB_CALC_FRAMEWORK_H
#define SCALELAB_CALC_FRAMEWORK_H

#include <stdbool.h>

#include "calc/memory.h"

struct error;

enum framework { FRAMEWORK_NONE, FRAMEWORK_DEEPSPEED, FRAMEWORK_MEGATRON, FRAMEWORK_FSDP };

/* "deepspeed", "megatron" or "fsdp"; ERR_INVAL naming the allowed ones. */
int framework_parse(const char *s, enum framework *out, struct error *e);
/* "DeepSpeed", "Megatron-LM", "PyTorch FSDP" ("" for none). */
const char *framework_title(enum framework f);

#define FRAMEWORK_NOTES    6
#define FRAMEWORK_NOTE_LEN 360

struct framework_run {
    struct memory_config c; /* the layout the framework runs */
    bool changed;           /* its ZeRO stage, checkpointing, schedule or units differ from
                               the layout asked (the gradients' type alone does not count) */
    int n_notes;
    char notes[FRAMEWORK_NOTES][FRAMEWORK_NOTE_LEN]; /* each change: what, why, where from */
    int why; /* the note of the first change that makes it `changed` (-1: none) */
};

/* The layout framework f runs for `asked` (a shaped model, checked by memory_check): 0, or
 * ERR_INVAL with the framework's reason when it cannot run it. FRAMEWORK_NONE runs it as
 * asked. */
int framework_runs(enum framework f, const struct memory_config *asked, struct framework_run *out,
                   struct error *e);

#endif
