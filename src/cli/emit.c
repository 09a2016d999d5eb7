/* A chosen layout written for DeepSpeed, Megatron-LM or PyTorch FSDP (cli/emit.h).
 *
 * The names are the frameworks' documented ones (tests/cli/emit.sh holds them):
 *   DeepSpeed   deepspeed.ai/docs/config-json: bucket sizes count elements, not bytes;
 *               fp16.loss_scale 0 means dynamic, starting at 2^initial_scale_power
 *   Megatron-LM megatron/training/arguments.py (--recompute-granularity full|selective,
 *               --recompute-method uniform, --use-distributed-optimizer = ZeRO-1)
 *   PyTorch     torch.distributed.fsdp (ShardingStrategy, MixedPrecision, BackwardPrefetch),
 *               torch.distributed.algorithms._checkpoint.checkpoint_wrapper, torchrun
 * The loss scaler is the one the lessons teach (num/scaler.h): 65536 = 2^16 at the start,
 * halved on an overflow, doubled after 2000 clean steps. */
#include "config.h"
#include "cli/emit.h"

#include <jansson.h>
#include <stdarg.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "base/units.h"
#include "calc/params.h"
#include "sim/spec.h"

int emit_parse(const char *s, enum emit_kind *out, struct error *e)
{
    static const char *names[] = {"deepspeed", "megatron", "fsdp"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, names[i])) {
            *out = (enum emit_kind)i;
            return 0;
        }
    return error_set(e, ERR_INVAL, "--emit: '%s' is not allowed (deepspeed, megatron or fsdp)", s);
}

static int nodes_of(const struct emit_plan *p)
{
    int per = p->cluster->gpus_per_node;
    return (p->gpus + per - 1) / per;
}

static int per_node(const struct emit_plan *p)
{
    return p->gpus < p->cluster->gpus_per_node ? p->gpus : p->cluster->gpus_per_node;
}

static int global_batch(const struct emit_plan *p)
{
    return p->dp * p->micro_batch * p->micro_batches;
}

/* The heading every format shares, each line starting with "# ". */
static void heading(FILE *f, const struct emit_plan *p, const char *framework)
{
    char pol[32], b1[32], b2[32];
    fprintf(f, "# %s for %s, from scalelab %s\n", framework, p->model->name, p->source);
    fprintf(f,
            "# layout: %d GPUs (%d node%s x %d) = dp %d x tp %d x pp %d, ZeRO-%d, checkpoint %s\n",
            p->gpus, nodes_of(p), nodes_of(p) == 1 ? "" : "s", per_node(p), p->dp, p->tp, p->pp,
            p->zero, activ_policy_name(pol, sizeof pol, &p->ckpt));
    fprintf(f,
            "# batch: %d sequences of %d tokens = %d micro-batches of %d on each of %d replicas\n",
            global_batch(p), p->seq, p->micro_batches, p->micro_batch, p->dp);
    fprintf(f, "# scalelab predicts %s per GPU of %s (%s)",
            units_format_bytes(b1, sizeof b1, p->per_gpu_bytes, UNITS_BINARY),
            units_format_bytes(b2, sizeof b2, p->capacity, UNITS_BINARY), p->cluster->name);
    if (p->step_time_s > 0) {
        char t[32];
        fprintf(f, " and a step of %s", units_format_seconds(t, sizeof t, p->step_time_s));
    }
    fprintf(f, "\n");
}

static void no_equiv(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void no_equiv(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("# no equivalent: ", f);
    vfprintf(f, fmt, ap);
    fputs("\n", f);
    va_end(ap);
}

static double grad_bytes(const struct emit_plan *p)
{
    return p->grad_fp32 || p->precision == PREC_FP32 ? 4 : 2;
}

static const char *opt_name(enum calc_optimizer o)
{
    return o == OPT_ADAMW ? "AdamW" : o == OPT_SGD ? "SGD" : "SGD with momentum";
}

/* ------------------------------------------------------------------ DeepSpeed */

static void deepspeed(FILE *out, FILE *notes, const struct emit_plan *p)
{
    heading(notes, p, "ds_config.json");
    json_t *o = json_object();
    json_object_set_new(o, "train_batch_size", json_integer(global_batch(p)));
    json_object_set_new(o, "train_micro_batch_size_per_gpu", json_integer(p->micro_batch));
    json_object_set_new(o, "gradient_accumulation_steps", json_integer(p->micro_batches));
    json_object_set_new(o, "gradient_clipping", json_real(1.0));
    double bucket = (p->bucket_bytes > 0 ? p->bucket_bytes : MEMORY_BUCKET) / grad_bytes(p);
    json_t *z = json_object();
    json_object_set_new(z, "stage", json_integer(p->zero));
    if (p->zero >= 1) {
        json_object_set_new(z, "reduce_bucket_size", json_integer((json_int_t)bucket));
        json_object_set_new(z, "overlap_comm", json_true());
        json_object_set_new(z, "contiguous_gradients", json_true());
    }
    if (p->zero == 1 || p->zero == 2) {
        json_object_set_new(z, "allgather_bucket_size", json_integer((json_int_t)bucket));
        json_object_set_new(z, "reduce_scatter", json_true());
    }
    if (p->zero == 3) {
        struct params_breakdown pb;
        params_count(p->model, &pb);
        /* the lab gathers one layer ahead (ZeRO-3's prefetch of the next unit) */
        json_object_set_new(z, "stage3_prefetch_bucket_size",
                            json_integer((json_int_t)(pb.per_layer / p->tp)));
    }
    json_object_set_new(o, "zero_optimization", z);
    if (p->precision == PREC_FP16) {
        json_object_set_new(o, "fp16",
                            json_pack("{s:b, s:i, s:i, s:i, s:i, s:i}", "enabled", 1, "loss_scale",
                                      0, "initial_scale_power", 16, "loss_scale_window", 2000,
                                      "hysteresis", 1, "min_loss_scale", 1));
    } else {
        json_object_set_new(o, "bf16", json_pack("{s:b}", "enabled", p->precision == PREC_BF16));
    }
    if (p->ckpt.kind != ACTIV_NONE)
        json_object_set_new(o, "activation_checkpointing",
                            json_pack("{s:b, s:b, s:b, s:b}", "partition_activations", p->tp > 1,
                                      "contiguous_memory_optimization", 0, "cpu_checkpointing", 0,
                                      "synchronize_checkpoint_boundary", 0));
    json_write(out, o, JSON_FIGURES); /* takes o */
    fprintf(notes, "# bucket sizes count elements: %.0f of %g bytes = the lab's %s buckets\n",
            bucket, grad_bytes(p), p->bucket_bytes > 0 ? "chosen" : "25 MiB");
    if (p->tp > 1)
        no_equiv(notes,
                 "tensor parallel size %d (DeepSpeed's config has none: Megatron-DeepSpeed's "
                 "--tensor-model-parallel-size%s)",
                 p->tp, p->sp ? " --sequence-parallel" : "");
    if (p->pp > 1)
        no_equiv(notes,
                 "pipeline parallel size %d (in code: deepspeed.pipe.PipelineModule(..., "
                 "num_stages=%d))",
                 p->pp, p->pp);
    if (p->ckpt.kind != ACTIV_NONE)
        fprintf(notes, "# activation_checkpointing configures deepspeed.checkpointing; the model "
                       "must call deepspeed.checkpointing.checkpoint on each layer\n");
    if (p->ckpt.kind == ACTIV_SELECTIVE)
        no_equiv(notes, "selective recompute (only QK^T and the softmax): DeepSpeed checkpoints "
                        "whole layers");
    if (p->grad_fp32)
        no_equiv(notes, "fp32 gradient accumulation (newer DeepSpeed: \"data_types\": "
                        "{\"grad_accum_dtype\": \"fp32\"})");
    fprintf(notes,
            "# optimizer %s: add an \"optimizer\" section or pass yours to "
            "deepspeed.initialize; gradient_clipping 1.0 is a max global norm to tune\n",
            opt_name(p->optimizer));
}

/* ------------------------------------------------------------------ Megatron-LM */

static void arg(FILE *f, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void arg(FILE *f, const char *name, const char *fmt, ...)
{
    fprintf(f, " \\\n    %s", name);
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputc(' ', f);
        vfprintf(f, fmt, ap);
        va_end(ap);
    }
}

static void megatron(FILE *out, const struct emit_plan *p)
{
    const struct model_shape *m = p->model;
    bool swiglu = m->ffn_kind == FFN_SWIGLU;
    heading(out, p, "Megatron-LM arguments");
    if (p->zero >= 2)
        no_equiv(out,
                 "ZeRO-%d: --use-distributed-optimizer shards the optimizer state and master "
                 "weights (ZeRO-1); Megatron-LM keeps whole %s",
                 p->zero, p->zero == 2 ? "gradients" : "weights and gradients");
    fprintf(out, "# schedule: %s\n",
            p->schedule == SCHED_INTERLEAVED ? "interleaved 1F1B"
                                             : "1F1B, Megatron-LM's own without "
                                               "--num-layers-per-virtual-pipeline-stage");
    fprintf(out, "# vocabulary %d: from your tokenizer (--vocab-size with the NullTokenizer)\n",
            m->vocab);
    fprintf(out, "torchrun --nnodes %d --nproc-per-node %d pretrain_gpt.py", nodes_of(p),
            per_node(p));
    arg(out, "--num-layers", "%d", m->layers);
    arg(out, "--hidden-size", "%d", m->d_model);
    arg(out, "--num-attention-heads", "%d", m->heads);
    if (m->kv_heads > 0 && m->kv_heads != m->heads) {
        arg(out, "--group-query-attention", NULL);
        arg(out, "--num-query-groups", "%d", m->kv_heads);
    }
    arg(out, "--ffn-hidden-size", "%d", m->ffn);
    arg(out, "--seq-length", "%d", p->seq);
    arg(out, "--max-position-embeddings", "%d", p->seq > m->seq ? p->seq : m->seq);
    if (swiglu) {
        arg(out, "--swiglu", NULL);
        arg(out, "--normalization", "RMSNorm");
        arg(out, "--position-embedding-type", "rope");
        arg(out, "--disable-bias-linear", NULL);
    } else {
        arg(out, "--normalization", "LayerNorm");
        arg(out, "--position-embedding-type", "learned_absolute");
    }
    if (!m->tied)
        arg(out, "--untie-embeddings-and-output-weights", NULL);
    arg(out, "--tensor-model-parallel-size", "%d", p->tp);
    arg(out, "--pipeline-model-parallel-size", "%d", p->pp);
    if (p->schedule == SCHED_INTERLEAVED && p->pp > 1)
        arg(out, "--num-layers-per-virtual-pipeline-stage", "%d", 1);
    if (p->sp && p->tp > 1)
        arg(out, "--sequence-parallel", NULL);
    arg(out, "--micro-batch-size", "%d", p->micro_batch);
    arg(out, "--global-batch-size", "%d", global_batch(p));
    if (p->ckpt.kind == ACTIV_SELECTIVE)
        arg(out, "--recompute-granularity", "selective");
    else if (p->ckpt.kind != ACTIV_NONE) {
        /* uniform: the input of every chunk of N layers is kept, the rest recomputed: the
         * lab's every:N (full is every:1) */
        int every = activ_policy_every(&p->ckpt, p->model->layers / p->pp);
        arg(out, "--recompute-granularity", "full");
        arg(out, "--recompute-method", "uniform");
        arg(out, "--recompute-num-layers", "%d", every > 0 ? every : 1);
    }
    if (p->zero >= 1)
        arg(out, "--use-distributed-optimizer", NULL);
    if (p->precision == PREC_BF16)
        arg(out, "--bf16", NULL);
    else if (p->precision == PREC_FP16) {
        arg(out, "--fp16", NULL);
        arg(out, "--initial-loss-scale", "%d", 65536);
        arg(out, "--min-loss-scale", "%d", 1);
        arg(out, "--loss-scale-window", "%d", 2000);
        arg(out, "--hysteresis", "%d", 1);
    }
    if (p->grad_fp32)
        arg(out, "--accumulate-allreduce-grads-in-fp32", NULL);
    arg(out, "--optimizer", "%s", p->optimizer == OPT_ADAMW ? "adam" : "sgd");
    arg(out, "--clip-grad", "%s", "1.0");
    fprintf(out, "\n");
    if (p->optimizer == OPT_SGD)
        no_equiv(out, "plain SGD without momentum: Megatron-LM's sgd takes --sgd-momentum 0");
}

/* ------------------------------------------------------------------ PyTorch FSDP */

static void fsdp(FILE *out, const struct emit_plan *p)
{
    heading(out, p, "PyTorch FSDP");
    static const char *strategy[] = {"NO_SHARD", "SHARD_GRAD_OP", "SHARD_GRAD_OP", "FULL_SHARD"};
    if (p->zero == 1)
        no_equiv(out, "ZeRO-1 (optimizer state only): SHARD_GRAD_OP shards the gradients too, as "
                      "ZeRO-2 does, which needs less memory than the lab predicts");
    if (nodes_of(p) > 1 && p->zero == 3)
        fprintf(out,
                "# ShardingStrategy.HYBRID_SHARD (PyTorch 2.0 and later) would shard within each "
                "node of %d and "
                "replicate across the %d nodes: more memory than this layout, less traffic "
                "between nodes\n",
                per_node(p), nodes_of(p));
    if (p->tp > 1)
        no_equiv(out,
                 "tensor parallel size %d in FSDP alone (torch.distributed.tensor.parallel "
                 "over a 2-D DeviceMesh)",
                 p->tp);
    if (p->pp > 1)
        no_equiv(out, "pipeline parallel size %d in FSDP alone (torch.distributed.pipelining)",
                 p->pp);
    if (p->ckpt.kind == ACTIV_SELECTIVE)
        no_equiv(out, "selective recompute (QK^T and the softmax only): the wrapper below "
                      "checkpoints whole layers");
    if (p->ckpt.kind == ACTIV_EVERY || p->ckpt.kind == ACTIV_SQRT)
        fprintf(out, "# keeping every %d-th layer's input: check_fn picks those layers\n",
                activ_policy_every(&p->ckpt, p->model->layers));
    if (p->grad_fp32)
        fprintf(out, "# fp32 gradient accumulation: reduce_dtype=torch.float32\n");
    fprintf(out,
            "# on each of the %d node%s (NODE_RANK 0 to %d, MASTER the first node's address):\n",
            nodes_of(p), nodes_of(p) == 1 ? "" : "s", nodes_of(p) - 1);
    fprintf(out,
            "torchrun --nnodes %d --nproc-per-node %d --node-rank $NODE_RANK --rdzv-backend "
            "c10d --rdzv-endpoint $MASTER:29500 train.py\n",
            nodes_of(p), per_node(p));
    fprintf(out, "\n# train.py, after torch.distributed.init_process_group(\"nccl\") and building "
                 "`model` from layers of class `Block`:\n");
    const char *dt = p->precision == PREC_BF16 ? "torch.bfloat16" : "torch.float16";
    fprintf(out, "import functools\n\nimport torch\n");
    fprintf(out, "from torch.distributed.fsdp import BackwardPrefetch, MixedPrecision, "
                 "ShardingStrategy\n");
    fprintf(out, "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n");
    fprintf(out, "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n");
    if (p->ckpt.kind != ACTIV_NONE)
        fprintf(out, "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
                     "    apply_activation_checkpointing,\n    checkpoint_wrapper,\n)\n");
    if (p->precision == PREC_FP16)
        fprintf(out, "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n");
    fprintf(out, "\n");
    if (p->precision != PREC_FP32)
        fprintf(out, "mixed = MixedPrecision(param_dtype=%s, reduce_dtype=%s, buffer_dtype=%s)\n",
                dt, p->grad_fp32 ? "torch.float32" : dt, dt);
    fprintf(out, "wrap = functools.partial(transformer_auto_wrap_policy, "
                 "transformer_layer_cls={Block})\n");
    fprintf(out, "model = FSDP(\n    model,\n    sharding_strategy=ShardingStrategy.%s,\n",
            strategy[p->zero]);
    if (p->precision != PREC_FP32)
        fprintf(out, "    mixed_precision=mixed,\n");
    fprintf(out,
            "    auto_wrap_policy=wrap,\n    backward_prefetch=BackwardPrefetch.BACKWARD_PRE,\n"
            "    device_id=torch.cuda.current_device(),\n)\n");
    if (p->ckpt.kind != ACTIV_NONE) {
        int every = activ_policy_every(&p->ckpt, p->model->layers);
        if (every > 1)
            fprintf(out,
                    "layers = [m for m in model.modules() if isinstance(m, Block)]\n"
                    "keep = {id(m) for m in layers[::%d]}\n",
                    every);
        fprintf(out,
                "apply_activation_checkpointing(\n    model,\n    checkpoint_wrapper_fn="
                "checkpoint_wrapper,\n    check_fn=lambda m: isinstance(m, Block)%s,\n)\n",
                every > 1 ? " and id(m) in keep" : "");
    }
    if (p->precision == PREC_FP16)
        fprintf(out, "scaler = ShardedGradScaler(init_scale=65536.0, growth_factor=2.0, "
                     "backoff_factor=0.5, growth_interval=2000)\n");
    fprintf(out,
            "# each step: %d micro-batch%s of %d sequences per GPU (no_sync() on all but the "
            "last), then model.clip_grad_norm_(1.0) and the %s step\n\n",
            p->micro_batches, p->micro_batches == 1 ? "" : "es", p->micro_batch,
            opt_name(p->optimizer));
}

void emit_write(FILE *out, FILE *notes, enum emit_kind k, const struct emit_plan *p)
{
    switch (k) {
    case EMIT_DEEPSPEED: deepspeed(out, notes, p); break;
    case EMIT_MEGATRON: megatron(out, p); break;
    default: fsdp(out, p); break;
    }
}
