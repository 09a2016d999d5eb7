/* scalelab memory: per-GPU memory and its parts for a model, precision, optimizer, parallel
 * layout, ZeRO stage and checkpoint policy (the formulas live in src/calc). */
#include "config.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "base/units.h"
#include "calc/activ.h"
#include "calc/memory.h"
#include "calc/params.h"
#include "calc/plan.h"
#include "calc/sched.h"
#include "calc/traffic.h"
#include "cli/calcargs.h"
#include "cli/command.h"
#include "cli/emit.h"
#include "cli/opts.h"

/* The options as given: the whole numbers and the parsed choices read by the table, the
 * model, cluster and sizes kept as text for configure (they depend on each other). */
struct memory_args {
    const char *model, *params, *cluster, *nodes, *grad_accum, *bucket, *gpu_mem, *emit;
    const char *capacity_factor;
    int gpus, dp, tp, pp, cp, ep, zero, micro_batch, seq, micro_batches, prefetch, unit_layers,
        chunks;
    enum fp_format precision;
    enum calc_optimizer optimizer;
    enum calc_schedule schedule;
    struct ckpt_policy ckpt;
    enum activ_attention attention;
    enum units_system units;
    bool sp, cp_naive, json, tensors, force;
};

static int parse_schedule(const struct opt_entry *o, const char *arg, void *field, struct error *e)
{
    int rc = sched_parse(arg, field, e);
    if (rc < 0)
        error_prefix(e, "--%s", o->opt.name);
    return rc;
}

#define A struct memory_args
static const struct opt_entry options[] = {
    OPT_WITH("model", "NAME|FILE", opts_str, A, model,
             "a model preset (assets/models: synthetic-7b, tiny, small, gpt3-175b,\n"
             "llama2-13b, llama2-70b) or an INI file; default synthetic-7b"),
    OPT_WITH("params", "COUNT", opts_str, A, params,
             "a bare parameter count (7.5e9, 7.5B): model states only"),
    OPT_WITH("cluster", "NAME|FILE", opts_str, A, cluster,
             "a cluster preset (assets/clusters) or an INI file; default h100-80gb"),
    OPT_WITH("nodes", "K", opts_str, A, nodes, "scale the cluster out to K nodes"),
    OPT_INT("gpus", "N", A, gpus, 1, PRESET_MAX_GPUS,
            "GPUs in the layout; dp defaults to N / (tp x pp)"),
    OPT_INT("dp", "N", A, dp, 1, PRESET_MAX_GPUS, "data parallel size (default 1)"),
    OPT_INT("tp", "N", A, tp, 1, 4096, "tensor parallel size (default 1)"),
    OPT_INT("pp", "N", A, pp, 1, PRESET_MAX_LAYERS, "pipeline parallel size (default 1)"),
    OPT_INT("zero", "STAGE", A, zero, 0, 3, "ZeRO stage 0 (DDP), 1, 2 or 3 (default 0)"),
    OPT_WITH("precision", "P", calcargs_precision, A, precision,
             "fp32, or bf16/fp16 mixed precision (default bf16)"),
    OPT_WITH("optimizer", "O", calcargs_optimizer, A, optimizer,
             "adamw (default), sgd or sgd-momentum"),
    OPT_WITH("grad-accum", "fp32|same", opts_str, A, grad_accum,
             "fp32 keeps gradients in fp32 (18 bytes per parameter with AdamW)"),
    OPT_WITH("bucket", "SIZE", opts_str, A, bucket,
             "ZeRO-2's gradient buckets, two held (default 25MiB, as train's)"),
    OPT_INT("prefetch", "0|1", A, prefetch, 0, 1,
            "ZeRO-3 gathers the next unit while one computes (default 1): two\n"
            "units' weights held at once, or one"),
    OPT_INT("unit-layers", "N", A, unit_layers, 1, PRESET_MAX_LAYERS,
            "ZeRO-3's units hold N layers, gathered and reduced whole (default 1,\n"
            "as train's; PyTorch FSDP's wrapped modules may hold more)"),
    OPT_INT("micro-batch", "B", A, micro_batch, 1, 1 << 16,
            "sequences per micro-batch (default 1)"),
    OPT_INT("seq", "S", A, seq, 1, 1 << 20, "sequence length (default the model's)"),
    OPT_INT("micro-batches", "M", A, micro_batches, 1, 1 << 16,
            "micro-batches per step (default pp)"),
    OPT_WITH("schedule", "S", parse_schedule, A, schedule,
             "pipeline schedule, gpipe, 1f1b (default), interleaved (Megatron-LM's,\n"
             "--chunks V model chunks per stage), zb-h1, zb-h2 or zbv (B and W apart): how\n"
             "many micro-batches each stage holds"),
    OPT_INT("chunks", "V", A, chunks, 2, SCHED_MAX_CHUNKS,
            "interleaved: V model chunks per stage (default 2), as train's"),
    OPT_FLAG("sequence-parallel", A, sp, "split the norm-region activations over tp too"),
    OPT_INT("cp", "C", A, cp, 1, 4096,
            "context parallel size (default 1): each sequence over C GPUs,\n"
            "attention by ring (activations of s/C tokens, the ring's buffers)"),
    OPT_INT("ep", "P", A, ep, 1, 4096,
            "expert parallel size (default 1), a model with experts: each expert\n"
            "layer's experts over P of the dp GPUs (E / P each, sharded over\n"
            "dp / P), the tokens' all-to-alls: dropless without a capacity factor"),
    OPT_WITH("capacity-factor", "C", opts_str, A, capacity_factor,
             "a model with experts: an expert takes at most ceil(C k tokens / E)\n"
             "of a micro-batch's tokens (default the model's; train's option)"),
    OPT_FLAG("cp-naive", A, cp_naive, "with --cp: GPU i holds chunk i of C, not i and 2C-1-i"),
    OPT_WITH("checkpoint", "P", calcargs_policy, A, ckpt,
             "none (default), full, selective, sqrt or every:K"),
    OPT_WITH("attention", "K", calcargs_attention, A, attention, CALCARGS_ATTENTION_HELP),
    OPT_WITH("gpu-mem", "SIZE", opts_str, A, gpu_mem,
             "memory per GPU (default the cluster's), e.g. 80GiB"),
    OPT_WITH("units", "U", calcargs_units, A, units,
             "auto (default: each figure in B, KiB, MiB or GiB, as\nsuits it), GiB or GB"),
    OPT_FLAG("json", A, json, "one JSON document; sizes in bytes (with both lists)"),
    OPT_FLAG("tensors", A, tensors, "list the parameter tensors and the activations a layer saves"),
    OPT_WITH("emit", "FRAMEWORK", opts_str, A, emit,
             "write this layout for deepspeed (ds_config.json; comments on\n"
             "standard error), megatron (Megatron-LM's arguments) or fsdp (a\n"
             "torchrun line and a PyTorch FSDP snippet), as 'plan --emit' does:\n"
             "the layout as that framework runs it, or its reason for refusing it\n"
             "(exit 2); the global batch is dp x micro-batch x micro-batches. A\n"
             "layout that does not fit is not written (exit 1) unless --force"),
    OPT_FLAG("force", A, force, "with --emit: write a layout that does not fit all the same"),
    OPT_END,
};
#undef A

const struct opts_spec opts_memory = {"memory", options, NULL, NULL};

struct run {
    struct model_shape shape;
    struct cluster_spec cluster;
    struct memory_config c;
    struct memory_result r;
    struct traffic t;        /* the reported GPU's stage's */
    struct plan_layout step; /* the step time as plan computes it (has_step: a model's) */
    bool has_step;
    int gpus;
    enum units_system units;
    bool capacity_given;
};

/* --model or --params into r->c and r->shape. */
static int configure_model(const struct memory_args *a, struct run *r, struct error *e)
{
    struct memory_config *c = &r->c;
    if (a->model && a->params)
        return error_set(e, ERR_INVAL,
                         "--model and --params exclude each other (a shape, or a "
                         "bare parameter count for the model states alone)");
    if (a->tensors && a->params)
        return error_set(e, ERR_INVAL,
                         "--tensors lists a shape's tensors: it needs --model, not --params");
    if (a->params) {
        struct error sub = {0};
        if (units_parse_count(a->params, 1e15, &c->params, &sub) < 0 || !(c->params >= 1))
            return error_set(e, ERR_INVAL,
                             "--params: '%s' is not allowed (a count from 1 to "
                             "1e15, e.g. 7.5e9 or 7.5B)",
                             a->params);
        c->model = NULL;
        return 0;
    }
    int rc = calcargs_model(a->model ? a->model : "synthetic-7b", &r->shape, e);
    c->model = rc < 0 ? NULL : &r->shape;
    if (rc < 0)
        return rc;
    return calcargs_capacity(a->capacity_factor, &r->shape, e);
}

/* --gpus, --dp, --tp and --pp into a whole layout. */
static int configure_layout(const struct memory_args *a, struct run *r, struct error *e)
{
    struct memory_config *c = &r->c;
    int gpus = a->gpus, dp = a->dp, tpp = c->tp * c->pp * c->cp;
    char axes[64]; /* the axes besides dp, as the options name them */
    if (c->cp > 1)
        snprintf(axes, sizeof axes, "--tp %d x --cp %d x --pp %d", c->tp, c->cp, c->pp);
    else
        snprintf(axes, sizeof axes, "--tp %d x --pp %d", c->tp, c->pp);
    if (gpus && dp && (long long)dp * tpp != gpus)
        return error_set(e, ERR_INVAL, "inconsistent layout: --dp %d x %s = %lld, not --gpus %d",
                         dp, axes, (long long)dp * tpp, gpus);
    if (gpus && !dp) {
        if (gpus % tpp)
            return error_set(e, ERR_INVAL,
                             "--gpus %d is not a multiple of %s (dp = gpus / (tp x %spp) must be "
                             "whole)",
                             gpus, axes, c->cp > 1 ? "cp x " : "");
        dp = gpus / tpp;
    }
    c->dp = dp ? dp : 1;
    r->gpus = gpus ? gpus : c->dp * tpp;
    return 0;
}

/* An option given that the layout gives nothing to act on is refused, saying what it goes
 * with, rather than ignored. */
static int options_act(const struct memory_args *a, const struct memory_config *c, struct error *e)
{
    if (a->cp_naive && c->cp == 1)
        return error_set(e, ERR_INVAL,
                         "--cp-naive splits a sequence over the context-parallel GPUs: it goes "
                         "with --cp 2 or more");
    if (a->bucket && c->zero != 2)
        return error_set(e, ERR_INVAL,
                         "--bucket sizes ZeRO-2's two gradient buckets, the ones memory counts "
                         "(DDP and ZeRO-1 reduce in place): it goes with --zero 2, not %d",
                         c->zero);
    if (!a->prefetch && c->zero != 3)
        return error_set(e, ERR_INVAL,
                         "--prefetch 0 holds one of ZeRO-3's gathered units at a time: it goes "
                         "with --zero 3, not %d",
                         c->zero);
    if (a->unit_layers && c->zero != 3)
        return error_set(e, ERR_INVAL,
                         "--unit-layers sizes ZeRO-3's gathered units: it goes with --zero 3, "
                         "not %d",
                         c->zero);
    if (a->schedule != SCHED_1F1B && c->pp == 1)
        return error_set(e, ERR_INVAL,
                         "--schedule orders a pipeline's stages: it goes with --pp 2 or more");
    return 0;
}

/* Reads the options into r->c; ERR_INVAL with a message naming the option. */
static int configure(const struct memory_args *a, struct run *r, struct error *e)
{
    int rc;
    struct memory_config *c = &r->c;
    *c = (struct memory_config){
        .precision = a->precision,
        .optimizer = a->optimizer,
        .tp = a->tp ? a->tp : 1,
        .pp = a->pp ? a->pp : 1,
        .zero = a->zero,
        .micro_batch = a->micro_batch ? a->micro_batch : 1,
        .schedule = a->schedule,
        .chunks = a->schedule == SCHED_INTERLEAVED ? (a->chunks ? a->chunks : 2) : 0,
        .sp = a->sp,
        .cp = a->cp ? a->cp : 1,
        .ep = a->ep ? a->ep : 1,
        .cp_naive = a->cp_naive,
        .attention = a->attention,
        .no_prefetch = !a->prefetch,
        .unit_layers = a->unit_layers,
        .ckpt = a->ckpt};
    if ((rc = configure_model(a, r, e)) < 0 ||
        (rc = calcargs_cluster(a->cluster ? a->cluster : PRESET_CLUSTER, a->nodes, &r->cluster,
                               e)) < 0)
        return rc;
    c->seq = a->seq ? a->seq : c->model ? c->model->seq : 2048;
    if ((double)c->micro_batch * c->seq > (double)(1 << 30))
        return error_set(e, ERR_INVAL,
                         "--micro-batch %d x --seq %d is more than 2^30 tokens per micro-batch",
                         c->micro_batch, c->seq);
    c->micro_batches = a->micro_batches ? a->micro_batches : c->pp;
    if (a->chunks && a->schedule != SCHED_INTERLEAVED)
        return error_set(e, ERR_INVAL, "--chunks goes with --schedule interleaved");
    if ((rc = configure_layout(a, r, e)) < 0)
        return rc;
    if (c->sp && c->tp == 1) /* as train refuses it: nothing to split the sequence over */
        return error_set(e, ERR_INVAL, "--sequence-parallel goes with --tp 2 or more");
    if (a->grad_accum && strcmp(a->grad_accum, "same")) {
        if (strcmp(a->grad_accum, "fp32"))
            return error_set(e, ERR_INVAL,
                             "--grad-accum: '%s' is not allowed (fp32, or same: "
                             "gradients in the training precision)",
                             a->grad_accum);
        c->grad_fp32 = true;
    }
    if (a->bucket &&
        (units_parse_bytes(a->bucket, 1e12, &c->bucket_bytes, e) < 0 || c->bucket_bytes < 4)) {
        if (!e->code)
            error_set(e, ERR_INVAL, "at least 4 bytes");
        error_prefix(e, "--bucket '%s' (a size, e.g. 25MiB)", a->bucket);
        return ERR_INVAL;
    }
    c->capacity = r->cluster.hbm_bytes;
    if (a->gpu_mem && (rc = calcargs_bytes("gpu-mem", a->gpu_mem, &c->capacity, e)) < 0)
        return rc;
    r->capacity_given = a->gpu_mem != NULL;
    r->units = a->units;
    return options_act(a, c, e);
}

/* ------------------------------------------------------------------ output */

/* A GPU's memory under memory --json's names. */
static json_t *per_gpu_json(const struct memory_result *m)
{
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "weights",
                     json_whole(m->states.weights), "gradients", json_whole(m->states.gradients),
                     "master_weights", json_whole(m->states.master), "optimizer",
                     json_whole(m->states.optimizer), "activations", json_whole(m->activations),
                     "communication", json_whole(m->comm), "total", json_whole(m->total));
}

/* What a GPU sends per step, by kind, each with its pieces (calc/traffic.h). */
static json_t *comm_json(const struct traffic *t)
{
    json_t *comm = json_object();
    const struct traffic_part *parts[] = {&t->dp, &t->tp, &t->pp, &t->cp, &t->ep};
    const char *names[] = {"data_parallel", "tensor_parallel", "pipeline", "context_parallel",
                           "expert_parallel"};
    for (int i = 0; i < 5; i++) { /* context and expert parallelism where they run */
        if (i >= 3 && !(parts[i]->bytes > 0))
            continue;
        json_t *pieces = json_object();
        for (int k = 0; k < parts[i]->npieces; k++)
            json_object_set_new(pieces, parts[i]->piece[k].name,
                                json_whole(parts[i]->piece[k].bytes));
        json_t *kind =
            json_pack("{s:o, s:o, s:s, s:o}", "bytes", json_whole(parts[i]->bytes), "time_s",
                      json_num(parts[i]->time_s), "formula", parts[i]->formula, "parts", pieces);
        if (i == 4 && parts[i]->worst != parts[i]->bytes) /* dropless: bytes is uniform's */
            json_object_set_new(kind, "worst_bytes", json_whole(parts[i]->worst));
        json_object_set_new(comm, names[i], kind);
    }
    json_object_set_new(comm, "bytes", json_whole(t->bytes));
    return comm;
}

/* Every stage's GPUs: their memory and what they send, as "per_gpu" and "communication" give
 * them for the reported one (empty for a bare parameter count). */
static json_t *per_stage_json(const struct run *r)
{
    const struct memory_config *c = &r->c;
    if (!c->model)
        return json_array();
    json_t *stages = json_array();
    for (int st = 0; st < c->pp; st++) {
        struct memory_result m;
        struct traffic t;
        if (memory_compute_stage(c, st, &m, NULL) < 0 ||
            traffic_compute(c, &r->cluster, st, m.params_gpu, m.stage_layers, 0, 0, &t, NULL) < 0)
            continue;
        json_array_append_new(stages, json_pack("{s:i, s:i, s:o, s:o}", "stage", st, "layers",
                                                m.stage_layers, "per_gpu", per_gpu_json(&m),
                                                "communication", comm_json(&t)));
    }
    return stages;
}

static void print_json(const struct run *r)
{
    const struct memory_result *m = &r->r;
    const struct memory_config *c = &r->c;
    char pol[32];
    json_t *per = per_gpu_json(m), *comm = comm_json(&r->t);
    json_t *doc =
        json_pack("{s:s, s:o, s:i, s:{s:i, s:i, s:i, s:i}, s:o, s:o, s:o, s:b, s:o}", "model",
                  c->model ? c->model->name : "(--params)", "params", json_whole(m->params), "gpus",
                  r->gpus, "layout", "dp", c->dp, "tp", c->tp, "pp", c->pp, "zero", c->zero,
                  "per_gpu", per, "activations_per_layer", json_whole(m->act.per_layer), "capacity",
                  json_whole(m->capacity), "fits", m->fits, "over", json_whole(m->over));
    if (c->cp > 1) { /* only where it is asked for: other layouts' documents read as before */
        json_t *lay = json_object_get(doc, "layout");
        json_object_set_new(lay, "cp", json_integer(c->cp));
        json_object_set_new(lay, "cp_split", json_string(c->cp_naive ? "naive" : "balanced"));
    }
    if (c->ep > 1)
        json_object_set_new(json_object_get(doc, "layout"), "ep", json_integer(c->ep));
    if (memory_ep_dropless(c)) { /* its buffers' bound (in per_gpu's communication) and mean */
        json_object_set_new(doc, "expert_buffers",
                            json_pack("{s:o, s:o}", "worst", json_whole(memory_ep_buffers(c)),
                                      "uniform", json_whole(memory_ep_buffers_at(c, false))));
        /* and the activations' (per_gpu's are the bound): the kept expert tensors' rows */
        struct memory_config u = *c;
        struct memory_result ru;
        u.ep_uniform = true;
        if (memory_compute_stage(&u, 0, &ru, NULL) == 0)
            json_object_set_new(doc, "expert_activations",
                                json_pack("{s:o, s:o}", "worst", json_whole(m->activations),
                                          "uniform", json_whole(ru.activations)));
    }
    json_object_set_new(doc, "precision", json_string(fp_info(c->precision)->name));
    json_object_set_new(doc, "optimizer", json_string(memory_optimizer_name(c->optimizer)));
    json_object_set_new(doc, "bytes_per_param",
                        json_num(m->per_param.weights + m->per_param.gradients +
                                 m->per_param.master + m->per_param.optimizer));
    json_object_set_new(doc, "checkpoint", json_string(ckpt_name(pol, sizeof pol, &c->ckpt)));
    json_object_set_new(doc, "stage", json_integer(m->stage));
    json_object_set_new(doc, "in_flight", json_integer(m->in_flight));
    json_object_set_new(doc, "activations_saved", json_whole(m->act.saved));
    json_object_set_new(doc, "activations_peak", json_whole(m->act.peak));
    json_object_set_new(doc, "activation_formula",
                        json_string(c->model ? m->layer.formula : "none (no shape)"));
    json_object_set_new(doc, "attention", json_string(activ_attention_name(c->attention)));
    json_object_set_new(doc, "communication", comm);
    json_object_set_new(doc, "schedule", json_string(sched_name(c->schedule)));
    json_object_set_new(doc, "chunks", json_integer(c->chunks > 1 ? c->chunks : 1));
    json_object_set_new(doc, "per_stage", per_stage_json(r));
    if (r->has_step) {
        const struct plan_layout *l = &r->step;
        const struct traffic *t = &l->traffic;
        json_object_set_new(
            doc, "step_time",
            json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:i}", "step_time_s",
                      json_num(l->step_time_s), "compute_s", json_num(l->compute_s), "bubble_s",
                      json_num(l->bubble_s), "imbalance_s", json_num(l->imbalance_s),
                      "dp_exposed_s", json_num(t->dp.exposed), "tp_exposed_s",
                      json_num(t->tp.exposed), "pp_exposed_s", json_num(t->pp.exposed),
                      "cp_exposed_s", json_num(t->cp.exposed), "ep_exposed_s",
                      json_num(t->ep.exposed), "mfu", json_num(l->mfu), "global_batch",
                      c->dp * c->micro_batch * c->micro_batches));
    }
    if (c->model) {
        json_t *acts = json_array(), *pars = json_array();
        for (int i = 0; i < m->layer.n; i++) {
            const struct activ_tensor *t = &m->layer.t[i];
            json_array_append_new(acts,
                                  json_pack("{s:s, s:s, s:o, s:i, s:o, s:b}", "name", t->name,
                                            "shape", t->shape, "elements", json_whole(t->elements),
                                            "bytes_per_element", t->bytes_per_elem, "bytes",
                                            json_whole(t->bytes), "attention_core", t->core));
        }
        struct params_breakdown pb;
        params_count(c->model, &pb);
        static const char *where[] = {"first", "layer", "last"};
        for (int i = 0; i < pb.n; i++)
            json_array_append_new(
                pars, json_pack("{s:s, s:I, s:I, s:s, s:b}", "name", pb.t[i].name, "rows",
                                (json_int_t)pb.t[i].rows, "cols", (json_int_t)pb.t[i].cols, "where",
                                where[pb.t[i].where], "tp_split", pb.t[i].tp_split));
        json_object_set_new(doc, "activation_tensors", acts);
        json_object_set_new(doc, "param_tensors", pars);
    }
    json_write(stdout, doc, JSON_FIGURES);
}

/* What is laid out: the model, the training, the layout and the bytes per parameter. */
static void print_setup(const struct run *r)
{
    const struct memory_result *m = &r->r;
    const struct memory_config *c = &r->c;
    char b1[64], pol[32];
    double psi = m->params_gpu;
    const struct memory_states *k = &m->per_param;
    double kk = k->weights + k->gradients + k->master + k->optimizer;

    units_format_grouped(b1, sizeof b1, (unsigned long long)llround(m->params));
    if (c->model)
        printf("model      %s: %s parameters (%d layers, d_model %d, %s)\n", c->model->name, b1,
               c->model->layers, c->model->d_model, preset_ffn_kind_name(c->model->ffn_kind));
    else
        printf("model      --params: %s parameters (model states only: no shape, no "
               "activations)\n",
               b1);
    printf("training   %s%s, %s; gradients %s\n", fp_info(c->precision)->name,
           c->precision == FP_FP32 ? "" : " mixed precision", memory_optimizer_name(c->optimizer),
           k->gradients == 4 ? "fp32" : fp_info(c->precision)->name);
    printf("layout     %d GPU%s = dp %d x tp %d x pp %d", r->gpus, r->gpus > 1 ? "s" : "", c->dp,
           c->tp, c->pp);
    if (c->cp > 1)
        printf(" x cp %d (%s split)", c->cp, c->cp_naive ? "naive" : "balanced");
    if (c->ep > 1)
        printf(", ep %d (%d expert%s a GPU)", c->ep, c->model->experts / c->ep,
               c->model->experts / c->ep > 1 ? "s" : "");
    printf(", ZeRO-%d", c->zero);
    if (c->model)
        printf(", checkpoint %s, micro-batch %d x seq %d%s", ckpt_name(pol, sizeof pol, &c->ckpt),
               c->micro_batch, c->seq, c->sp ? ", sequence parallel" : "");
    printf("\n");
    if (c->pp > 1)
        printf("pipeline   %s, %d micro-batches; the GPU shown is stage %d (%d layers), holding "
               "%d micro-batch%s at once\n",
               sched_name(c->schedule), c->micro_batches, m->stage, m->stage_layers, m->in_flight,
               m->in_flight > 1 ? "es" : "");
    printf("\nbytes per parameter: weights %g + gradients %g + master weights %g + optimizer %g "
           "= %g%s\n",
           k->weights, k->gradients, k->master, k->optimizer, kk,
           kk == 16   ? " (the ZeRO paper's 2 + 2 + K, K = 12)"
           : kk == 18 ? " (Megatron-LM/DeepSpeed with fp32 gradients)"
                      : "");
    units_format_grouped(b1, sizeof b1, (unsigned long long)llround(psi));
    printf("parameters on this GPU Ψ = %s%s", b1,
           c->tp * c->pp > 1 ? " (its tensor/pipeline share)" : "");
    if (c->ep > 1) { /* its experts shard over the GPUs of its expert rank, dp / ep */
        units_format_grouped(b1, sizeof b1, (unsigned long long)llround(memory_ep_experts(c)));
        printf(", of them its experts' Ψ_x = %s", b1);
    }
    printf("; N_d = %s = %d", c->cp > 1 ? "dp x cp" : "dp", memory_grad_ranks(c));
    if (c->ep > 1)
        printf(", the experts' N_x = dp / ep = %d", c->dp / c->ep);
    printf("\n\n");
}

/* The parts of the memory per GPU, the total and whether it fits. */
static void print_parts(const struct run *r)
{
    const struct memory_result *m = &r->r;
    const struct memory_config *c = &r->c;
    const struct memory_states *k = &m->per_param;
    char b1[64], b2[64], b3[64];
    enum units_system u = r->units;
    struct {
        const char *name;
        double bytes, per;
        int from_stage;
    } rows[] = {
        {"weights", m->states.weights, k->weights, 3},
        {"gradients", m->states.gradients, k->gradients, 2},
        {"master weights", m->states.master, k->master, 1},
        {"optimizer state", m->states.optimizer, k->optimizer, 1},
    };
    for (int i = 0; i < 4; i++) { /* each as states_of (calc/memory.c) divides it */
        bool split = c->zero >= rows[i].from_stage && memory_grad_ranks(c) > 1;
        printf("  %-18s %14s   ", rows[i].name, calcargs_size(b1, sizeof b1, rows[i].bytes, u));
        if (split && c->ep > 1)
            printf("%g B x (Ψ - Ψ_x) / N_d + %g B x Ψ_x / N_x\n", rows[i].per, rows[i].per);
        else
            printf("%g B x Ψ%s\n", rows[i].per, split ? " / N_d" : "");
    }
    double states = m->total - m->activations - m->comm;
    printf("  %-18s %14s\n", "model states", calcargs_size(b1, sizeof b1, states, u));
    if (c->model) {
        printf("  %-18s %14s   ", "activations", calcargs_size(b1, sizeof b1, m->activations, u));
        if (m->w_held > 0) /* zb-h1: the walk of calc/memory.c */
            printf("up to %d micro-batch%s saved (%s each, peak %s) and %d W sets (%s each) "
                   "at once\n",
                   m->in_flight, m->in_flight > 1 ? "es" : "",
                   calcargs_size(b2, sizeof b2, m->act.saved, u),
                   calcargs_size(b3, sizeof b3, m->act.peak, u), m->w_held,
                   calcargs_size(b1, sizeof b1, m->wset, u));
        else if (m->in_flight > 1)
            printf("(%d - 1) x saved %s + peak %s\n", m->in_flight,
                   calcargs_size(b2, sizeof b2, m->act.saved, u),
                   calcargs_size(b3, sizeof b3, m->act.peak, u));
        else
            printf("%d layers + the ends, one micro-batch at its peak\n", m->stage_layers);
        printf("  %-18s %14s   %s\n", "", "",
               c->attention == ACTIV_FLASH
                   ? "flash attention: each row's log-sum-exp kept, no probabilities"
                   : "eager attention: the a s^2 b probabilities kept");
    }
    double ring = memory_cp_buffers(c), a2a = memory_ep_buffers(c), dpc = m->comm - ring - a2a;
    if (dpc > 0)
        printf("  %-18s %14s   %s\n", "comm buffers", calcargs_size(b1, sizeof b1, dpc, u),
               c->zero == 2     ? "2 gradient buckets (one reduced while the next fills)"
               : c->no_prefetch ? "2 gradient pieces + the largest unit gathered"
                                : "2 gradient pieces + 2 units gathered at once (prefetch)");
    if (ring > 0)
        printf("  %-18s %14s   %s\n", "ring buffers", calcargs_size(b1, sizeof b1, ring, u),
               "2 x a block's K, V, dK, dV (context parallel: 2 x 4 b s/C kv p)");
    if (a2a > 0 && memory_ep_dropless(c)) {
        printf("  %-18s %14s   %s\n", "all-to-all", calcargs_size(b1, sizeof b1, a2a, u),
               "dropless, at worst: an exchange's k n rows out and every token of the group in,");
        printf("  %-18s %14s   %s%s\n", "", "",
               "(k n + ep n min(k, E/ep)) d p; under uniform routing 2 k n d p = ",
               calcargs_size(b2, sizeof b2, memory_ep_buffers_at(c, false), u));
    } else if (a2a > 0) {
        printf("  %-18s %14s   %s\n", "all-to-all", calcargs_size(b1, sizeof b1, a2a, u),
               "send and receive buffers of the static rows (expert parallel: 2 E cap d p)");
    }
    printf("  %-18s %14s\n", "total", calcargs_size(b1, sizeof b1, m->total, u));
    printf("  %-18s %14s   %s\n", "capacity", calcargs_size(b1, sizeof b1, m->capacity, u),
           r->capacity_given ? "--gpu-mem" : r->cluster.name);
    if (m->fits)
        printf("\nfits: %s to spare\n", calcargs_size(b1, sizeof b1, m->capacity - m->total, u));
    else
        printf("\ndoes NOT fit: over by %s\n", calcargs_size(b1, sizeof b1, m->over, u));
}

/* One layer's activations, their formula and the checkpoint policy. */
static void print_activations(const struct run *r)
{
    const struct memory_result *m = &r->r;
    const struct memory_config *c = &r->c;
    char b1[64], b2[64], pol[32];
    enum units_system u = r->units;
    if (!c->model)
        return;
    printf("\nactivations, one layer, one micro-batch: %s\n",
           calcargs_size(b1, sizeof b1, m->layer.total, u));
    printf("  formula: %s  (%s)\n", m->layer.formula,
           c->model->ffn_kind == FFN_GELU
               ? "Korthikanti et al. 2022, a GPT layer"
               : "our RMSNorm/SwiGLU layer: the tensors it saves, listed in calc/activ.h");
    char cps[48] = "";
    if (c->cp > 1)
        snprintf(cps, sizeof cps, " (seq %d / cp %d)", c->seq, c->cp);
    printf("  with s = %d%s, b = %d, h = %d, a = %d, t = %d; %d bytes per activation\n",
           c->seq / (c->cp > 1 ? c->cp : 1), cps, c->micro_batch, c->model->d_model,
           c->model->heads, c->tp, fp_bytes(c->precision));
    printf("  policy %s: ", ckpt_name(pol, sizeof pol, &c->ckpt));
    switch (c->ckpt.kind) {
    case CKPT_NONE:
        printf("every layer keeps its list, %s per layer\n",
               calcargs_size(b1, sizeof b1, m->act.per_layer, u));
        break;
    case CKPT_SELECTIVE:
        printf("the attention core is recomputed, %s per layer kept\n",
               calcargs_size(b1, sizeof b1, m->act.per_layer, u));
        break;
    default:
        printf("%d checkpoint%s (layer inputs, %s each); segments of %d layers recomputed "
               "in the backward pass\n",
               m->act.checkpoints, m->act.checkpoints == 1 ? "" : "s",
               calcargs_size(b1, sizeof b1, m->act.per_layer, u), m->act.every);
    }
    printf("  one micro-batch on this stage: saved at the end of the forward pass %s, "
           "peak in the backward pass %s\n",
           calcargs_size(b1, sizeof b1, m->act.saved, u),
           calcargs_size(b2, sizeof b2, m->act.peak, u));
}

/* The communication per GPU per step, by kind of parallelism. */
static void print_comm(const struct run *r)
{
    const struct memory_config *c = &r->c;
    char b1[64], b2[64];
    enum units_system u = r->units;
    printf("\ncommunication per GPU per step (%d micro-batch%s; times from the α-β ring model of "
           "comm/cost.h on %s):\n",
           c->micro_batches, c->micro_batches > 1 ? "es" : "", r->cluster.name);
    const struct traffic_part *parts[] = {&r->t.dp, &r->t.tp, &r->t.pp, &r->t.cp, &r->t.ep};
    const char *names[] = {"data parallel", "tensor parallel", "pipeline", "context parallel",
                           "expert parallel"};
    for (int i = 0; i < 5; i++) {
        if ((i == 3 && c->cp <= 1) || (i == 4 && c->ep <= 1))
            continue;
        units_format_seconds(b2, sizeof b2, parts[i]->time_s);
        printf("  %-16s %14s  %10s   %s\n", names[i],
               calcargs_size(b1, sizeof b1, parts[i]->bytes, u), b2, parts[i]->formula);
    }
    printf("  %-16s %14s\n", "total", calcargs_size(b1, sizeof b1, r->t.bytes, u));
}

/* The step time as plan computes it, term by term (calc/plan.h). */
static void print_step(const struct run *r)
{
    if (!r->has_step)
        return;
    const struct plan_layout *l = &r->step;
    const struct memory_config *c = &r->c;
    const struct traffic *t = &l->traffic;
    char b[64];
    printf("\nstep time, as plan computes it (a global batch of %d sequences: dp x micro-batch x "
           "micro-batches; compute at %g%% of peak):\n",
           c->dp * c->micro_batch * c->micro_batches, 100 * PLAN_EFFICIENCY);
    struct {
        const char *name;
        double s;
        const char *says;
    } rows[] = {
        {"compute", l->compute_s, "(6 Ψ T + 12 L h s T + recompute) / (GPUs x peak x efficiency)"},
        {"bubble", l->bubble_s,
         "(compute + the tp, cp and ep exposed on its path) x the schedule's idle share"},
        {"slowest stage", l->imbalance_s,
         "(m-1)/m x compute x (the slowest stage's share x pp - 1)"},
        {"exposed dp", t->dp.exposed, t->dp.formula},
        {"exposed tp", t->tp.exposed, t->tp.formula},
        {"exposed pp", t->pp.exposed, t->pp.formula},
        {"exposed cp", t->cp.exposed, t->cp.formula},
        {"exposed ep", t->ep.exposed, t->ep.formula},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if ((i == 6 && c->cp <= 1) || (i == 7 && c->ep <= 1))
            continue;
        printf("  %-14s %10s   %s\n", rows[i].name, units_format_seconds(b, sizeof b, rows[i].s),
               rows[i].says);
    }
    printf("  %-14s %10s   MFU %.1f%%\n", "step", units_format_seconds(b, sizeof b, l->step_time_s),
           100 * l->mfu);
}

static void print_text(const struct run *r)
{
    print_setup(r);
    print_parts(r);
    print_activations(r);
    print_comm(r);
    print_step(r);
}

/* --tensors: the parameter and activation lists the numbers come from. */
static void print_tensors(const struct run *r)
{
    const struct memory_config *c = &r->c;
    if (!c->model) {
        printf("\n(--tensors needs a model shape, not --params)\n");
        return;
    }
    char b1[64], b2[64];
    struct params_breakdown pb;
    params_count(c->model, &pb);
    static const char *where[] = {"first stage", "each layer", "last stage"};
    printf("\nparameter tensors of %s (y = x W, W is rows x cols):\n", c->model->name);
    for (int i = 0; i < pb.n; i++) {
        const struct params_tensor *t = &pb.t[i];
        units_format_grouped(b1, sizeof b1, (unsigned long long)(t->rows * t->cols));
        printf("  %-16s %8lld x %-8lld %16s  %-11s %s\n", t->name, t->rows, t->cols, b1,
               where[t->where], t->tp_split ? "split by tp" : "replicated");
    }
    units_format_grouped(b1, sizeof b1, (unsigned long long)llround(pb.total));
    printf("  total %s = first + %d x layer + last\n", b1, c->model->layers);
    printf("\nactivations one layer saves for its backward pass (one micro-batch, this GPU):\n");
    for (int i = 0; i < r->r.layer.n; i++) {
        const struct activ_tensor *t = &r->r.layer.t[i];
        units_format_grouped(b1, sizeof b1, (unsigned long long)llround(t->elements));
        printf("  %-13s %-7s %16s x %d B = %14s%s\n", t->name, t->shape, b1, t->bytes_per_elem,
               units_format_bytes(b2, sizeof b2, t->bytes, r->units),
               t->core ? "  (attention core: selective recompute drops it)" : "");
    }
    printf("  total %s\n", units_format_bytes(b1, sizeof b1, r->r.layer.total, r->units));
}

/* --emit: the layout in a framework's own file; emit_write's status. */
static int write_emit(const struct run *r, enum framework kind, bool force, struct error *e)
{
    struct emit_plan ep = {.source = "memory", .cluster = &r->cluster, .c = r->c, .force = force};
    return emit_write(stdout, stderr, kind, &ep, e);
}

/* The step time of the layout as plan ranks it (calc/plan.h's plan_step). */
static int step_time(struct run *r, struct error *e)
{
    int rc = plan_step(&r->c, &r->r, &r->cluster, &r->step, e);
    r->has_step = rc == 0;
    return rc;
}

/* The configured layout checked against the cluster, then computed. */
static int compute(struct run *r, struct error *e)
{
    int rc = memory_check(&r->c, e);
    int total = r->cluster.gpus_per_node * r->cluster.nodes;
    if (rc == 0 && r->gpus > total)
        rc = error_set(e, ERR_INVAL,
                       "the layout needs %d GPUs; --cluster %s has %d (%d node%s of %d; use "
                       "--nodes K)",
                       r->gpus, r->cluster.name, total, r->cluster.nodes,
                       r->cluster.nodes == 1 ? "" : "s", r->cluster.gpus_per_node);
    if (rc == 0)
        rc = memory_compute(&r->c, &r->r, e);
    if (rc == 0)
        rc = traffic_compute(&r->c, &r->cluster, r->r.stage, r->r.params_gpu, r->r.stage_layers, 0,
                             0, &r->t, e);
    if (rc == 0 && r->c.model)
        rc = step_time(r, e);
    return rc;
}

static int memory_main(int argc, char **argv)
{
    struct memory_args a = {.precision = FP_BF16,
                            .optimizer = OPT_ADAMW,
                            .prefetch = 1,
                            .schedule = SCHED_1F1B,
                            .ckpt = {CKPT_NONE, 0},
                            .units = UNITS_AUTO};
    int rc = opts_parse(&opts_memory, argc, argv, &a);
    if (rc)
        return rc;
    static struct run r; /* large; one per process */
    memset(&r, 0, sizeof r);
    struct error e = {0};
    if (configure(&a, &r, &e) < 0)
        return cli_fail(&e);
    if (compute(&r, &e) < 0) /* calc/'s checks, in the options' words */
        return opts_fail(&opts_memory, &e);
    enum framework kind = FRAMEWORK_NONE;
    if (a.force && !a.emit)
        rc = error_set(&e, ERR_INVAL, "--force writes an --emit that does not fit: give --emit");
    if (a.emit) {
        if ((rc = emit_parse("emit", a.emit, &kind, &e)) == 0 && !r.c.model)
            rc = error_set(&e, ERR_INVAL,
                           "--emit writes a model's shape: it needs --model, not "
                           "--params");
        if (rc == 0 && (a.json || a.tensors))
            rc = error_set(&e, ERR_INVAL, "--emit writes the framework's own file: no --%s with it",
                           a.json ? "json" : "tensors");
    }
    if (rc < 0)
        return cli_fail(&e);
    if (a.emit) {
        if ((rc = write_emit(&r, kind, a.force, &e)) < 0) {
            error_prefix(&e, "--emit %s", a.emit);
            return cli_fail(&e);
        }
        if (rc == 1)
            fprintf(stderr,
                    "scalelab: memory: the layout does not fit: --emit %s wrote its "
                    "heading only (--force writes it all)\n",
                    a.emit);
        return rc;
    } else if (a.json)
        print_json(&r);
    else {
        print_text(&r);
        if (a.tensors)
            print_tensors(&r);
    }
    return 0;
}

const struct command cmd_memory = {
    "memory",
    "per-GPU memory for a model, precision, optimizer, parallel layout and ZeRO stage",
    "usage: scalelab memory [--model NAME|FILE | --params COUNT] [--cluster NAME|FILE]\n"
    "                       [--nodes K] [--gpus N] [--dp N] [--tp N] [--pp N] [--zero 0-3]\n"
    "                       [--precision fp32|bf16|fp16] [--optimizer adamw|sgd|sgd-momentum]\n"
    "                       [--grad-accum fp32|same] [--micro-batch B] [--seq S]\n"
    "                       [--micro-batches M]\n"
    "                       [--schedule gpipe|1f1b|interleaved|zb-h1|zb-h2|zbv]\n"
    "                       [--chunks V] [--sequence-parallel] [--cp C [--cp-naive]]\n"
    "                       [--checkpoint none|full|selective|sqrt|every:K] [--gpu-mem SIZE]\n"
    "                       [--units auto|GiB|GB] [--tensors] [--json]\n"
    "                       [--unit-layers N] [--emit deepspeed|megatron|fsdp [--force]]\n"
    "\n"
    "Memory per GPU and its parts (weights, gradients, master weights, optimizer state,\n"
    "activations), whether it fits, and the communication per GPU per step, each with its\n"
    "formula. Model states follow the ZeRO paper (16 bytes per parameter with mixed-precision\n"
    "AdamW; 18 with --grad-accum fp32); activations follow Korthikanti et al. 2022 for GPT\n"
    "layers and the same bookkeeping for our SwiGLU/RMSNorm layers.\n",
    memory_main,
};
