/* A chosen layout written for DeepSpeed, Megatron-LM or PyTorch FSDP (cli/emit.h).
 *
 * What is written is the layout the framework runs (calc/framework.h), and the names are the
 * frameworks' own; tests/cli/emit.sh checks each export against a table of the frameworks'
 * rules written from these files:
 *   DeepSpeed   deepspeed/runtime/constants.py, zero/config.py: bucket sizes count
 *               elements, not bytes; fp16.loss_scale 0 means dynamic, starting at
 *               2^initial_scale_power; data_types.grad_accum_dtype "fp32", "bf16" or "fp16";
 *               zero_allow_untested_optimizer for an optimizer ZeRO has not tested (SGD:
 *               engine.py's _do_optimizer_sanity_check); train_batch_size = micro x
 *               accumulation x the data-parallel size, which DeepSpeed takes from the mpu
 *               given to deepspeed.initialize, or from a PipelineModule's topology, and is
 *               otherwise the whole world (config.py)
 *   Megatron-LM megatron/training/arguments.py and training/config/ (--recompute-granularity
 *               full|selective, --recompute-method uniform, --use-distributed-optimizer,
 *               --use-megatron-fsdp, --data-parallel-sharding-strategy,
 *               --megatron-fsdp-main-grads-dtype, --ckpt-format fsdp_dtensor,
 *               --num-layers-per-virtual-pipeline-stage = the layers of one model chunk,
 *               --sgd-momentum, 0.9 unless given)
 *   PyTorch     torch.distributed.fsdp (ShardingStrategy, MixedPrecision, BackwardPrefetch),
 *               torch.distributed.algorithms._checkpoint.checkpoint_wrapper, torchrun
 *               (torch/distributed/run.py: --nproc_per_node, --nnodes, --node_rank,
 *               --master_addr and --master_port, spellings torch 1.x and 2.x both take)
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
#include "calc/sched.h"
#include "par/settings.h"
#include "sim/spec.h"

int emit_parse(const char *option, const char *s, enum framework *out, struct error *e)
{
    int rc = framework_parse(s, out, e);
    if (rc < 0)
        error_prefix(e, "--%s", option);
    return rc;
}

static int gpus_of(const struct memory_config *c)
{
    return c->dp * c->tp * c->pp * (c->cp > 1 ? c->cp : 1);
}

/* " x cp C" where context parallelism runs, else "". */
static const char *cp_words(const struct memory_config *c)
{
    static _Thread_local char buf[24];
    if (c->cp <= 1)
        return "";
    snprintf(buf, sizeof buf, " x cp %d", c->cp);
    return buf;
}

static int nodes_of(const struct emit_plan *p, const struct memory_config *c)
{
    int per = p->cluster->gpus_per_node;
    return (gpus_of(c) + per - 1) / per;
}

static int per_node(const struct emit_plan *p, const struct memory_config *c)
{
    int per = p->cluster->gpus_per_node;
    return gpus_of(c) < per ? gpus_of(c) : per;
}

static int global_batch(const struct memory_config *c)
{
    return c->dp * c->micro_batch * c->micro_batches;
}

static bool mixed(const struct memory_config *c)
{
    return fp_precision(c->precision)->mixed;
}

/* The type gradients accumulate in. */
static const char *grad_type(const struct memory_config *c)
{
    return c->grad_fp32 || !mixed(c) ? "fp32" : fp_info(c->precision)->name;
}

static double grad_bytes(const struct memory_config *c)
{
    return c->grad_fp32 || !mixed(c) ? 4 : 2;
}

static const char *opt_name(enum calc_optimizer o)
{
    return o == OPT_ADAMW ? "AdamW" : o == OPT_SGD ? "SGD" : "SGD with momentum";
}

/* K of the every:K the policy is for the n layers of a pipeline stage (or of one model
 * chunk, interleaved), as calc/memory.c counts it; 0 for none and selective. */
static int every_of(const struct memory_config *c)
{
    int n = c->model->layers / c->pp;
    if (c->schedule == SCHED_INTERLEAVED && c->chunks > 1)
        n /= c->chunks;
    return ckpt_every(&c->ckpt, n);
}

/* The `scalelab memory` options of layout c: the command that gives the same figure. */
static void memory_command(FILE *f, const struct emit_plan *p, const struct memory_config *c)
{
    char pol[32];
    fprintf(f, "#   = scalelab memory --model %s --cluster %s", c->model->name, p->cluster->name);
    if (p->cluster->nodes > 1)
        fprintf(f, " --nodes %d", p->cluster->nodes);
    fprintf(f,
            " --dp %d --tp %d --pp %d --zero %d --precision %s --optimizer %s --grad-accum %s "
            "--micro-batch %d --micro-batches %d --seq %d --checkpoint %s --attention %s",
            c->dp, c->tp, c->pp, c->zero, fp_info(c->precision)->name,
            memory_optimizer_name(c->optimizer), c->grad_fp32 ? "fp32" : "same", c->micro_batch,
            c->micro_batches, c->seq, ckpt_name(pol, sizeof pol, &c->ckpt),
            activ_attention_name(c->attention));
    if (c->sp)
        fprintf(f, " --sequence-parallel");
    if (c->cp > 1)
        fprintf(f, " --cp %d%s", c->cp, c->cp_naive ? " --cp-naive" : "");
    if (c->ep > 1)
        fprintf(f, " --ep %d", c->ep);
    if (c->model->experts && c->model->capacity_factor > 0)
        fprintf(f, " --capacity-factor %g", c->model->capacity_factor);
    if (c->pp > 1 && c->schedule != SCHED_1F1B)
        fprintf(f, " --schedule %s", sched_name(c->schedule));
    if (c->pp > 1 && c->schedule == SCHED_INTERLEAVED)
        fprintf(f, " --chunks %d", c->chunks);
    /* each where it acts (memory refuses it elsewhere) */
    if (c->bucket_bytes > 0 && c->zero == 2)
        fprintf(f, " --bucket %.0f", c->bucket_bytes);
    if (c->no_prefetch && c->zero == 3)
        fprintf(f, " --prefetch 0");
    if (c->unit_layers > 1 && c->zero == 3)
        fprintf(f, " --unit-layers %d", c->unit_layers);
    if (c->capacity != p->cluster->hbm_bytes)
        fprintf(f, " --gpu-mem %.0f", c->capacity);
    fprintf(f, "\n");
}

/* The heading every format shares, each line starting with "# ": the layout run, how it
 * differs from the one asked, the prediction and whether it fits. */
static void heading(FILE *f, const struct emit_plan *p, enum framework fw,
                    const struct framework_run *fr, const struct memory_result *mr,
                    const char *title)
{
    const struct memory_config *c = &fr->c;
    char pol[32], b1[32], b2[32];
    int nodes = nodes_of(p, c);
    fprintf(f, "# %s for %s, from scalelab %s\n", title, c->model->name, p->source);
    fprintf(f,
            "# layout: %d GPU%s (%d node%s x %d) = dp %d x tp %d x pp %d%s, ZeRO-%d, checkpoint "
            "%s, %s with %s gradients\n",
            gpus_of(c), gpus_of(c) == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s", per_node(p, c),
            c->dp, c->tp, c->pp, cp_words(c), c->zero, ckpt_name(pol, sizeof pol, &c->ckpt),
            fp_info(c->precision)->name, grad_type(c));
    fprintf(
        f, "# batch: %d sequence%s of %d tokens = %d micro-batch%s of %d on each of %d replica%s\n",
        global_batch(c), global_batch(c) == 1 ? "" : "s", c->seq, c->micro_batches,
        c->micro_batches == 1 ? "" : "es", c->micro_batch, c->dp, c->dp == 1 ? "" : "s");
    if (fr->n_notes)
        fprintf(f, "# what %s runs, where it differs from the layout asked:\n",
                framework_title(fw));
    for (int i = 0; i < fr->n_notes; i++)
        fprintf(f, "#   %s\n", fr->notes[i]);
    fprintf(f, "# scalelab predicts %s per GPU of %s (%s)",
            units_format_bytes(b1, sizeof b1, mr->total, UNITS_BINARY),
            units_format_bytes(b2, sizeof b2, mr->capacity, UNITS_BINARY), p->cluster->name);
    if (p->step_time_s > 0) {
        char t[32];
        fprintf(f, " and a step of %s", units_format_seconds(t, sizeof t, p->step_time_s));
    }
    fprintf(f, " for this layout, its parts from\n");
    memory_command(f, p, c);
    if (!mr->fits)
        fprintf(f, "# does NOT fit: %s over the %s of each GPU%s\n",
                units_format_bytes(b1, sizeof b1, mr->over, UNITS_BINARY),
                units_format_bytes(b2, sizeof b2, mr->capacity, UNITS_BINARY),
                p->force ? " (written anyway: --force)" : "; not written (--force writes it)");
}

/* The torchrun line's launcher part: one node alone, or each of several with its rank. */
static void torchrun(FILE *f, const struct emit_plan *p, const struct memory_config *c, int port)
{
    int nodes = nodes_of(p, c);
    fprintf(f, "torchrun --nnodes %d --nproc_per_node %d", nodes, per_node(p, c));
    if (nodes > 1)
        fprintf(f, " --node_rank $NODE_RANK --master_addr $MASTER_ADDR --master_port %d", port);
}

static void on_each_node(FILE *f, const struct emit_plan *p, const struct memory_config *c)
{
    int nodes = nodes_of(p, c);
    if (nodes > 1)
        fprintf(f,
                "# on each of the %d nodes: NODE_RANK 0 to %d, MASTER_ADDR the first node's "
                "address\n",
                nodes, nodes - 1);
}

/* ------------------------------------------------------------------ DeepSpeed */

static void deepspeed(FILE *out, FILE *notes, const struct memory_config *c)
{
    json_t *o = json_object();
    json_object_set_new(o, "train_batch_size", json_integer(global_batch(c)));
    json_object_set_new(o, "train_micro_batch_size_per_gpu", json_integer(c->micro_batch));
    json_object_set_new(o, "gradient_accumulation_steps", json_integer(c->micro_batches));
    json_object_set_new(o, "gradient_clipping", json_real(1.0));
    double bucket = (c->bucket_bytes > 0 ? c->bucket_bytes : MEMORY_BUCKET) / grad_bytes(c);
    json_t *z = json_object();
    json_object_set_new(z, "stage", json_integer(c->zero));
    if (c->zero >= 1) {
        json_object_set_new(z, "reduce_bucket_size", json_integer((json_int_t)bucket));
        json_object_set_new(z, "overlap_comm", json_true());
        json_object_set_new(z, "contiguous_gradients", json_true());
    }
    if (c->zero == 1 || c->zero == 2) {
        json_object_set_new(z, "allgather_bucket_size", json_integer((json_int_t)bucket));
        json_object_set_new(z, "reduce_scatter", json_true());
    }
    if (c->zero == 3) {
        struct params_breakdown pb;
        params_count(c->model, &pb);
        /* the lab gathers one layer ahead (ZeRO-3's prefetch of the next unit), or none:
         * 0 turns prefetching off (zero/partitioned_param_coordinator.py) */
        json_object_set_new(z, "stage3_prefetch_bucket_size",
                            json_integer(c->no_prefetch ? 0 : (json_int_t)(pb.per_layer / c->tp)));
    }
    json_object_set_new(o, "zero_optimization", z);
    if (c->precision == FP_FP16) {
        json_object_set_new(o, "fp16",
                            json_pack("{s:b, s:i, s:i, s:i, s:i, s:i}", "enabled", 1, "loss_scale",
                                      0, "initial_scale_power", 16, "loss_scale_window", 2000,
                                      "hysteresis", 1, "min_loss_scale", 1));
    } else {
        json_object_set_new(o, "bf16", json_pack("{s:b}", "enabled", c->precision == FP_BF16));
    }
    json_object_set_new(o, "data_types", json_pack("{s:s}", "grad_accum_dtype", grad_type(c)));
    if (c->zero >= 1 && c->optimizer != OPT_ADAMW)
        json_object_set_new(o, "zero_allow_untested_optimizer", json_true());
    if (c->ckpt.kind != CKPT_NONE)
        json_object_set_new(o, "activation_checkpointing",
                            json_pack("{s:b, s:b, s:b, s:b}", "partition_activations", c->tp > 1,
                                      "contiguous_memory_optimization", 0, "cpu_checkpointing", 0,
                                      "synchronize_checkpoint_boundary", 0));
    json_write(out, o, JSON_FIGURES); /* takes o */

    fprintf(notes, "# bucket sizes count elements: %.0f of %g bytes = the lab's %s buckets\n",
            bucket, grad_bytes(c), c->bucket_bytes > 0 ? "chosen" : "25 MiB");
    fprintf(notes,
            "# written for DeepSpeed 0.18 and later: data_types.grad_accum_dtype is set, as its "
            "default became the weights' type there (before, bf16 without ZeRO accumulated in "
            "fp32 and refused bf16)\n");
    if (c->tp > 1) {
        fprintf(notes,
                "# tensor parallel size %d: DeepSpeed's config has none (the model's layers are "
                "split, e.g. Megatron-DeepSpeed's --tensor-model-parallel-size%s); ",
                c->tp, c->sp ? " --sequence-parallel" : "");
        if (c->pp == 1)
            fprintf(notes,
                    "pass deepspeed.initialize(..., mpu=...) an object whose "
                    "get_data_parallel_world_size() is %d, or DeepSpeed takes all %d GPUs as "
                    "data parallel and asserts train_batch_size = micro x accumulation x %d\n",
                    c->dp, gpus_of(c), gpus_of(c));
        else
            fprintf(notes, "the PipelineModule's topology below gives DeepSpeed the "
                           "data-parallel size\n");
    }
    if (c->pp > 1)
        fprintf(notes,
                "# pipeline parallel size %d: in code, deepspeed.pipe.PipelineModule(..., "
                "%s), whose topology gives the data-parallel size %d (deepspeed.initialize "
                "takes no mpu with it)\n",
                c->pp,
                c->tp > 1 ? "topology=PipeModelDataParallelTopology(num_pp=P, num_mp=T, num_dp=D)"
                          : "num_stages=P",
                c->dp);
    if (c->pp > 1 && c->tp > 1)
        fprintf(notes, "#   with P = %d, T = %d, D = %d\n", c->pp, c->tp, c->dp);
    if (c->ckpt.kind == CKPT_SELECTIVE)
        fprintf(notes, "# activation_checkpointing configures deepspeed.checkpointing: the model "
                       "calls deepspeed.checkpointing.checkpoint on each layer's attention core "
                       "(QK^T, the softmax and P x V), as selective recompute does\n");
    else if (c->ckpt.kind != CKPT_NONE)
        fprintf(notes,
                "# activation_checkpointing configures deepspeed.checkpointing: the model calls "
                "deepspeed.checkpointing.checkpoint on each segment of %d consecutive layers "
                "(a function running them in turn), keeping only each segment's input\n",
                every_of(c));
    if (c->zero >= 1 && c->optimizer != OPT_ADAMW)
        fprintf(notes, "# zero_allow_untested_optimizer: ZeRO refuses an optimizer it has not "
                       "tested, SGD among them, without it (deepspeed/runtime/engine.py)\n");
    fprintf(notes,
            "# optimizer %s: add an \"optimizer\" section or pass yours to "
            "deepspeed.initialize; gradient_clipping 1.0 is a max global norm to tune\n",
            opt_name(c->optimizer));
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

/* The comments above the command: the schedule, what FSDP needs, the drop policy, the
 * vocabulary */
static void megatron_notes(FILE *out, const struct memory_config *c)
{
    const struct model_shape *m = c->model;
    bool interleaved = c->schedule == SCHED_INTERLEAVED;
    if (c->pp > 1)
        fprintf(out, "# schedule: %s\n",
                interleaved ? "interleaved 1F1B, model chunks of "
                              "--num-layers-per-virtual-pipeline-stage layers"
                            : "1F1B, Megatron-LM's own without "
                              "--num-layers-per-virtual-pipeline-stage");
    if (c->zero >= 2)
        fprintf(out, "# Megatron-FSDP: CUDA_DEVICE_MAX_CONNECTIONS unset or above 1 "
                     "(arguments.py asserts it)\n");
    if (m->experts > 0 && m->capacity_factor > 0 && m->top_k > 1)
        fprintf(out,
                "# the drop policy: position keeps each expert's earliest tokens, as the lab "
                "does; the lab also takes every token's first choice before any second one "
                "(GShard), Megatron-LM a choice of either rank by its token's place, so when "
                "tokens drop a top-%d run differs (moe_utils.py)\n",
                m->top_k);
    fprintf(out, "# vocabulary %d: from your tokenizer (--vocab-size with the NullTokenizer)\n",
            m->vocab);
}

/* A mixture of experts' arguments (megatron/core/transformer/moe): E experts, top-k, every
 * k-th layer */
static void megatron_moe(FILE *out, const struct memory_config *c)
{
    const struct model_shape *m = c->model;
    arg(out, "--num-experts", "%d", m->experts);
    arg(out, "--moe-router-topk", "%d", m->top_k);
    if (m->moe_every > 1)
        arg(out, "--moe-layer-freq", "%d", m->moe_every);
    if (c->ep > 1) /* E / ep experts a GPU, expert rank = data rank % ep */
        arg(out, "--expert-model-parallel-size", "%d", c->ep);
    arg(out, "--moe-token-dispatcher-type", "alltoall");
    if (m->capacity_factor > 0) { /* the static [E, cap, d] rows: drop and pad */
        arg(out, "--moe-expert-capacity-factor", "%g", m->capacity_factor);
        arg(out, "--moe-pad-expert-input-to-capacity", NULL);
        /* its default, probs, drops the lowest gates; the lab drops the last tokens */
        arg(out, "--moe-token-drop-policy", "position");
    }
    /* Switch Transformer's load-balancing loss with the lab's α (Megatron-LM's
     * --moe-aux-loss-coeff defaults to 0) */
    arg(out, "--moe-router-load-balancing-type", "aux_loss");
    arg(out, "--moe-aux-loss-coeff", "%g", TRAIN_AUX_COEF);
}

static void megatron(FILE *out, const struct emit_plan *p, const struct memory_config *c)
{
    const struct model_shape *m = c->model;
    bool swiglu = m->ffn_kind == FFN_SWIGLU, interleaved = c->schedule == SCHED_INTERLEAVED;
    megatron_notes(out, c);
    on_each_node(out, p, c);
    /* arguments.py (validate_args): tensor or context parallelism without Megatron-FSDP (or
     * overlap_moe_expert_parallel_comm) on a GPU before Blackwell, as every preset's is,
     * asserts CUDA_DEVICE_MAX_CONNECTIONS == "1" */
    if ((c->tp > 1 || c->cp > 1) && c->zero < 2)
        fprintf(out, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n");
    torchrun(out, p, c, 6000);
    fprintf(out, " pretrain_gpt.py");
    arg(out, "--num-layers", "%d", m->layers);
    arg(out, "--hidden-size", "%d", m->d_model);
    arg(out, "--num-attention-heads", "%d", m->heads);
    if (m->kv_heads > 0 && m->kv_heads != m->heads) {
        arg(out, "--group-query-attention", NULL);
        arg(out, "--num-query-groups", "%d", m->kv_heads);
    }
    arg(out, "--ffn-hidden-size", "%d", m->ffn);
    arg(out, "--seq-length", "%d", c->seq);
    arg(out, "--max-position-embeddings", "%d", c->seq > m->seq ? c->seq : m->seq);
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
    arg(out, "--tensor-model-parallel-size", "%d", c->tp);
    arg(out, "--pipeline-model-parallel-size", "%d", c->pp);
    if (c->cp > 1) /* ring attention over the cp group (TransformerEngine's p2p by default) */
        arg(out, "--context-parallel-size", "%d", c->cp);
    if (m->experts > 0)
        megatron_moe(out, c);
    if (interleaved && c->pp > 1) /* the layers of one model chunk: L / (pp v) */
        arg(out, "--num-layers-per-virtual-pipeline-stage", "%d", m->layers / (c->pp * c->chunks));
    if (c->sp && c->tp > 1)
        arg(out, "--sequence-parallel", NULL);
    arg(out, "--micro-batch-size", "%d", c->micro_batch);
    arg(out, "--global-batch-size", "%d", global_batch(c));
    if (c->ckpt.kind == CKPT_SELECTIVE)
        arg(out, "--recompute-granularity", "selective");
    else if (c->ckpt.kind != CKPT_NONE) {
        /* uniform: the input of every chunk of N layers is kept, the rest recomputed: the
         * lab's every:N (full is every:1) */
        arg(out, "--recompute-granularity", "full");
        arg(out, "--recompute-method", "uniform");
        arg(out, "--recompute-num-layers", "%d", every_of(c));
    }
    if (c->zero >= 1)
        arg(out, "--use-distributed-optimizer", NULL);
    if (c->zero >= 2) {
        arg(out, "--use-megatron-fsdp", NULL);
        arg(out, "--data-parallel-sharding-strategy", "%s",
            c->zero == 2 ? "optim_grads" : "optim_grads_params");
        if (c->grad_fp32 && mixed(c))
            arg(out, "--megatron-fsdp-main-grads-dtype", "fp32");
        arg(out, "--ckpt-format", "fsdp_dtensor");
    }
    if (c->precision == FP_BF16)
        arg(out, "--bf16", NULL);
    else if (c->precision == FP_FP16) {
        arg(out, "--fp16", NULL);
        arg(out, "--initial-loss-scale", "%d", 65536);
        arg(out, "--min-loss-scale", "%d", 1);
        arg(out, "--loss-scale-window", "%d", 2000);
        arg(out, "--hysteresis", "%d", 1);
    }
    if (c->grad_fp32 && mixed(c))
        arg(out, "--accumulate-allreduce-grads-in-fp32", NULL);
    arg(out, "--optimizer", "%s", c->optimizer == OPT_ADAMW ? "adam" : "sgd");
    if (c->optimizer == OPT_SGD) /* plain SGD: no momentum buffer (Megatron's default is 0.9) */
        arg(out, "--sgd-momentum", "%d", 0);
    arg(out, "--clip-grad", "%s", "1.0");
    fprintf(out, "\n");
}

/* ------------------------------------------------------------------ PyTorch FSDP */

static void fsdp(FILE *out, const struct emit_plan *p, const struct memory_config *c,
                 const struct memory_result *mr)
{
    static const char *strategy[] = {"NO_SHARD", "SHARD_GRAD_OP", "SHARD_GRAD_OP", "FULL_SHARD"};
    int nodes = nodes_of(p, c), every = every_of(c);
    if (nodes > 1 && c->zero == 3)
        fprintf(out,
                "# ShardingStrategy.HYBRID_SHARD (PyTorch 2.0 and later) would shard within each "
                "node of %d and replicate across the %d nodes: more memory than this layout, "
                "less traffic between nodes\n",
                per_node(p, c), nodes);
    if (c->zero == 3 && mixed(c)) {
        char b[32];
        fprintf(out,
                "# FULL_SHARD gathers each unit's %s weights from its fp32 shard and keeps no %s "
                "copy between uses: up to %s of the prediction's weights are not held\n",
                fp_info(c->precision)->name, fp_info(c->precision)->name,
                units_format_bytes(b, sizeof b, mr->states.weights, UNITS_BINARY));
    }
    on_each_node(out, p, c);
    torchrun(out, p, c, 29500);
    fprintf(out, " train.py\n");
    fprintf(out, "\n# train.py, after torch.distributed.init_process_group(\"nccl\") and building "
                 "`model`,\n# whose forward runs the modules of `model.layers` (an nn.ModuleList "
                 "of class `Block`) in turn:\n");
    const char *dt = c->precision == FP_BF16 ? "torch.bfloat16" : "torch.float16";
    fprintf(out, "import functools\n\nimport torch\n");
    if (c->ckpt.kind != CKPT_NONE)
        fprintf(out, "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
                     "    CheckpointImpl,\n    CheckpointWrapper,\n    checkpoint_wrapper,\n)\n");
    fprintf(out, "from torch.distributed.fsdp import BackwardPrefetch, MixedPrecision, "
                 "ShardingStrategy\n");
    fprintf(out, "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n");
    if (c->precision == FP_FP16)
        fprintf(out, "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n");
    fprintf(out, "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n\n");
    if (c->ckpt.kind != CKPT_NONE) {
        /* checkpointed first, then wrapped: each segment one FSDP unit, FSDP(checkpoint(...)) */
        char pol[32];
        fprintf(out,
                "# checkpoint %s: segments of %d layer%s, each keeping only its input and "
                "recomputing\n# its layers in the backward pass; each segment is one FSDP "
                "unit\n",
                ckpt_name(pol, sizeof pol, &c->ckpt), every, every == 1 ? "" : "s");
        fprintf(out, "blocks = list(model.layers)\nmodel.layers = torch.nn.ModuleList(\n");
        if (every == 1)
            fprintf(out, "    checkpoint_wrapper(b, checkpoint_impl=CheckpointImpl.NO_REENTRANT) "
                         "for b in blocks\n)\n");
        else
            fprintf(out,
                    "    checkpoint_wrapper(\n"
                    "        torch.nn.Sequential(*blocks[i : i + %d]),\n"
                    "        checkpoint_impl=CheckpointImpl.NO_REENTRANT,\n"
                    "    )\n    for i in range(0, len(blocks), %d)\n)\n",
                    every, every);
    }
    if (mixed(c))
        fprintf(
            out,
            "mixed = MixedPrecision(\n    param_dtype=%s, reduce_dtype=%s, buffer_dtype=%s\n)\n",
            dt, c->grad_fp32 ? "torch.float32" : dt, dt);
    fprintf(out,
            "wrap = functools.partial(transformer_auto_wrap_policy, "
            "transformer_layer_cls={%s})\n",
            c->ckpt.kind != CKPT_NONE ? "CheckpointWrapper" : "Block");
    fprintf(out, "model = FSDP(\n    model,\n    sharding_strategy=ShardingStrategy.%s,\n",
            strategy[c->zero]);
    if (mixed(c))
        fprintf(out, "    mixed_precision=mixed,\n");
    fprintf(out,
            "    auto_wrap_policy=wrap,\n    backward_prefetch=BackwardPrefetch.BACKWARD_PRE,\n"
            "    device_id=torch.cuda.current_device(),\n)\n");
    if (c->precision == FP_FP16)
        fprintf(out, "scaler = ShardedGradScaler(init_scale=65536.0, growth_factor=2.0, "
                     "backoff_factor=0.5, growth_interval=2000)\n");
    fprintf(out,
            "# each step: %d micro-batch%s of %d sequence%s per GPU, each forward and backward "
            "reducing\n# its gradients into the fp32 ones FSDP keeps (not under no_sync(), "
            "which holds full\n# unsharded gradients: its docstring), then "
            "model.clip_grad_norm_(1.0) and the %s step\n",
            c->micro_batches, c->micro_batches == 1 ? "" : "es", c->micro_batch,
            c->micro_batch == 1 ? "" : "s", opt_name(c->optimizer));
}

int emit_write(FILE *out, FILE *notes, enum framework f, const struct emit_plan *p, struct error *e)
{
    struct framework_run fr;
    struct memory_result mr;
    int rc = framework_runs(f, &p->c, &fr, e);
    if (rc == 0)
        rc = memory_compute(&fr.c, &mr, e);
    if (rc < 0)
        return rc;
    static const char *titles[] = {"", "ds_config.json", "Megatron-LM arguments", "PyTorch FSDP"};
    FILE *head = f == FRAMEWORK_DEEPSPEED ? notes : out;
    heading(head, p, f, &fr, &mr, titles[f]);
    if (!mr.fits && !p->force)
        return 1;
    switch (f) {
    case FRAMEWORK_DEEPSPEED: deepspeed(out, notes, &fr.c); break;
    case FRAMEWORK_MEGATRON: megatron(out, p, &fr.c); break;
    default: fsdp(out, p, &fr.c, &mr); break;
    }
    return 0;
}
