/* What DeepSpeed, Megatron-LM and PyTorch FSDP run for a layout (calc/framework.h): each
 * framework's rules, applied to the calculator's layout. */
#include "config.h"
#include "calc/framework.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"

int framework_parse(const char *s, enum framework *out, struct error *e)
{
    static const char *names[] = {"deepspeed", "megatron", "fsdp"};
    for (int i = 0; i < 3; i++)
        if (s && !strcmp(s, names[i])) {
            *out = (enum framework)(i + 1);
            return 0;
        }
    return error_set(e, ERR_INVAL, "'%s' is not allowed (deepspeed, megatron or fsdp)", s ? s : "");
}

const char *framework_title(enum framework f)
{
    static const char *titles[] = {"", "DeepSpeed", "Megatron-LM", "PyTorch FSDP"};
    return titles[f];
}

/* A note on how r differs from the layout asked; `layout`: a change of layout (r->changed),
 * not only of the gradients' type. */
static void note(struct framework_run *r, bool layout, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(struct framework_run *r, bool layout, const char *fmt, ...)
{
    if (r->n_notes == FRAMEWORK_NOTES)
        return;
    if (layout && !r->changed) {
        r->changed = true;
        r->why = r->n_notes;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->notes[r->n_notes++], FRAMEWORK_NOTE_LEN, fmt, ap);
    va_end(ap);
}

static bool mixed(const struct memory_config *c)
{
    return fp_precision(c->precision)->mixed;
}

/* A schedule the framework does not have runs as its 1F1B. */
static void one_f_one_b(struct framework_run *r, const char *why)
{
    struct memory_config *c = &r->c;
    if (c->pp == 1 || c->schedule == SCHED_1F1B)
        return;
    note(r, true, "1F1B, not %s: %s",
         c->schedule == SCHED_GPIPE  ? "GPipe"
         : c->schedule == SCHED_ZBH1 ? "ZB-H1"
         : c->schedule == SCHED_ZBH2 ? "ZB-H2"
         : c->schedule == SCHED_ZBV  ? "ZB-V"
                                     : "interleaved",
         why);
    c->schedule = SCHED_1F1B;
    c->chunks = 0;
}

/* ZeRO-3 gathers the framework's units: `layers` each (1: a layer). */
static void units(struct framework_run *r, int layers, const char *why)
{
    struct memory_config *c = &r->c;
    int asked = c->unit_layers > 1 ? c->unit_layers : 1;
    if (c->zero < 3 || asked == layers)
        return;
    c->unit_layers = layers > 1 ? layers : 0;
    note(r, true, "units of %d layer%s: %s", layers, layers == 1 ? "" : "s", why);
}

/* ZeRO-3 gathers the next unit while one computes, as the framework does by itself. */
static void prefetch(struct framework_run *r, const char *why)
{
    struct memory_config *c = &r->c;
    if (c->zero < 3 || !c->no_prefetch)
        return;
    c->no_prefetch = false;
    note(r, true, "with prefetch: %s", why);
}

static int deepspeed(struct framework_run *r, struct error *e)
{
    struct memory_config *c = &r->c;
    if (c->ep > 1)
        return error_set(e, ERR_INVAL,
                         "DeepSpeed: its experts' parallelism (deepspeed.moe.layer.MoE's ep_size) "
                         "is set in the model's code, not in ds_config.json; use Megatron-LM "
                         "(--expert-model-parallel-size %d), or --ep 1",
                         c->ep);
    if (c->cp > 1)
        return error_set(e, ERR_INVAL,
                         "DeepSpeed: no ring attention: its sequence parallelism "
                         "(DeepSpeed-Ulysses, deepspeed/sequence/layer.py) splits the heads with "
                         "all-to-alls, not the keys and values round a ring; use Megatron-LM "
                         "(--context-parallel-size %d), or --cp 1",
                         c->cp);
    if (c->pp > 1 && c->zero >= 2)
        return error_set(
            e, ERR_INVAL,
            "DeepSpeed: ZeRO-2 and ZeRO-3 are incompatible with pipeline "
            "parallelism (its PipelineEngine asserts it: "
            "deepspeed/runtime/pipe/engine.py); use --zero 0 or 1 with --pp %d, or --pp 1",
            c->pp);
    if (mixed(c) && c->grad_fp32 && c->zero == 0)
        return error_set(e, ERR_INVAL,
                         "DeepSpeed: %s weights with fp32 gradient accumulation need ZeRO "
                         "(without it the two types must agree: \"unsupported mix of "
                         "model_dtype and grad_accum_dtype\", deepspeed/runtime/engine.py); use "
                         "--zero 1 (for bf16, its BF16_Optimizer) or --grad-accum same",
                         fp_info(c->precision)->name);
    if (c->precision == FP_BF16 && c->pp > 1 && c->zero == 0 && c->dp > 1) {
        c->zero = 1;
        note(r, true,
             "ZeRO-1, not ZeRO-0: with bf16 and a pipeline DeepSpeed runs its BF16_Optimizer, "
             "which shards the fp32 master weights and the optimizer state over the %d "
             "data-parallel GPUs (deepspeed/runtime/engine.py, bf16_optimizer.py)",
             c->dp);
    }
    one_f_one_b(r, "DeepSpeed's pipeline has one schedule, TrainSchedule, which holds min(p - s, "
                   "m) micro-batches at stage s (deepspeed/runtime/pipe/schedule.py)");
    units(r, 1,
          "ZeRO-3 fetches each module's parameters, one layer ahead with the "
          "stage3_prefetch_bucket_size written (deepspeed/runtime/zero/"
          "partitioned_param_coordinator.py)");
    return 0;
}

static int megatron(struct framework_run *r, struct error *e)
{
    struct memory_config *c = &r->c;
    if (c->cp > 1 && c->cp_naive) {
        c->cp_naive = false;
        note(r, true,
             "the balanced split, not the naive one: Megatron-LM cuts each sequence in 2 x cp "
             "chunks and gives context rank i chunks i and 2cp-1-i "
             "(get_batch_on_this_cp_rank, megatron/core/utils.py)");
    }
    if (c->zero >= 2 && c->pp > 1)
        return error_set(e, ERR_INVAL,
                         "Megatron-LM: ZeRO-%d is Megatron-FSDP (--use-megatron-fsdp), which "
                         "scalelab writes without a pipeline; use --pp 1, or --zero 1 "
                         "(--use-distributed-optimizer) with --pp %d",
                         c->zero, c->pp);
    if (mixed(c) && !c->grad_fp32) {
        c->grad_fp32 = true;
        note(r, false,
             "fp32 gradients: Megatron-LM accumulates and all-reduces gradients in fp32 "
             "(--accumulate-allreduce-grads-in-fp32, which --bf16 turns on by itself: "
             "megatron/training/arguments.py), the 18 bytes per parameter with Adam of its "
             "own estimator (megatron/training/theoretical_memory_usage.py)");
    }
    if (c->schedule == SCHED_GPIPE)
        one_f_one_b(r, "Megatron-LM's pipelines run 1F1B or its interleaved form "
                       "(megatron/core/pipeline_parallel/schedules.py)");
    if (sched_splits(c->schedule))
        one_f_one_b(r, "Megatron-LM has no zero-bubble schedule upstream (its pipelines run 1F1B "
                       "or its interleaved form: megatron/core/pipeline_parallel/schedules.py); "
                       "the paper's fork (sail-sg/zero-bubble-pipeline-parallelism, README) "
                       "runs its own automatic schedule with --enable-zero-bubble");
    units(r, 1,
          "Megatron-FSDP's units are its TransformerLayers "
          "(megatron/core/distributed/fsdp/mcore_fsdp_adapter.py)");
    prefetch(r, "Megatron-FSDP gathers the next unit's parameters ahead of their use "
                "(megatron/core/distributed/fsdp/src/README.md)");
    return 0;
}

static int fsdp(struct framework_run *r, struct error *e)
{
    struct memory_config *c = &r->c;
    if (c->ep > 1)
        return error_set(e, ERR_INVAL,
                         "PyTorch FSDP: the export's FSDP has no expert parallelism (each GPU "
                         "would hold every expert); use --ep 1, or Megatron-LM "
                         "(--expert-model-parallel-size %d)",
                         c->ep);
    if (c->cp > 1)
        return error_set(e, ERR_INVAL,
                         "PyTorch FSDP: the export's FSDP has no context parallelism (its "
                         "GPUs would each hold whole sequences); use --cp 1, or Megatron-LM "
                         "(--context-parallel-size %d)",
                         c->cp);
    if (c->tp > 1 || c->pp > 1)
        return error_set(e, ERR_INVAL,
                         "PyTorch FSDP: FSDP alone has no %s parallelism: torchrun's %d GPUs "
                         "would each be a data-parallel replica, %d times this layout's global "
                         "batch; use --tp 1 --pp 1 (FSDP over all the GPUs), or Megatron-LM",
                         c->tp > 1 ? "tensor" : "pipeline", c->dp * c->tp * c->pp, c->tp * c->pp);
    if (c->zero == 1) {
        c->zero = 2;
        note(r, true,
             "ZeRO-2, not ZeRO-1: FSDP's ShardingStrategy has no optimizer-only sharding; "
             "SHARD_GRAD_OP shards the gradients as well (torch/distributed/fsdp/api.py)");
    }
    if (mixed(c) && !c->grad_fp32) {
        c->grad_fp32 = true;
        note(r, false,
             "fp32 gradients: FSDP casts the reduced gradients to the parameters' fp32 and "
             "accumulates them there (_cast_grad_to_param_dtype in "
             "torch/distributed/fsdp/fully_sharded_data_parallel.py); the export reduces "
             "them in fp32 too (reduce_dtype)");
    }
    if (c->ckpt.kind == CKPT_SELECTIVE) {
        c->ckpt = (struct ckpt_policy){CKPT_FULL, 1};
        note(r, true,
             "full checkpointing, not selective: checkpoint_wrapper recomputes whole "
             "modules, not the attention core alone "
             "(torch/distributed/algorithms/_checkpoint/checkpoint_wrapper.py)");
    }
    int every = ckpt_every(&c->ckpt, c->model->layers);
    units(r, every > 1 ? every : 1,
          "the export wraps each layer, or each checkpointed segment of layers, as one module "
          "and so one FSDP unit, whose weights are gathered and gradients reduced whole "
          "(torch/distributed/fsdp/wrap.py)");
    prefetch(r, "the export writes BackwardPrefetch.BACKWARD_PRE, which gathers the next unit "
                "while one computes (torch/distributed/fsdp/api.py)");
    return 0;
}

int framework_runs(enum framework f, const struct memory_config *asked, struct framework_run *out,
                   struct error *e)
{
    memset(out, 0, sizeof *out);
    out->c = *asked;
    out->why = -1;
    switch (f) {
    case FRAMEWORK_DEEPSPEED: return deepspeed(out, e);
    case FRAMEWORK_MEGATRON: return megatron(out, e);
    case FRAMEWORK_FSDP: return fsdp(out, e);
    default: return 0;
    }
}
