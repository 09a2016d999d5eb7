/* scalelab plan: the parallel layouts that fit a model on a cluster, ranked by predicted step
 * time (calc/plan.h), and why the others do not. */
#include "config.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "base/units.h"
#include "calc/params.h"
#include "calc/plan.h"
#include "cli/calcargs.h"
#include "cli/command.h"
#include "cli/emit.h"
#include "cli/opts.h"

static const struct opt options[] = {
    {"model", 0, true},      {"cluster", 0, true},      {"nodes", 0, true},
    {"gpus", 0, true},       {"global-batch", 0, true}, {"seq", 0, true},
    {"precision", 0, true},  {"optimizer", 0, true},    {"grad-accum", 0, true},
    {"efficiency", 0, true}, {"gpu-mem", 0, true},      {"top", 0, true},
    {"units", 0, true},      {"json", 0, false},        {"emit", 0, true},
    {"pick", 0, true},       {NULL, 0, false},
};

enum {
    O_MODEL,
    O_CLUSTER,
    O_NODES,
    O_GPUS,
    O_BATCH,
    O_SEQ,
    O_PREC,
    O_OPT,
    O_ACCUM,
    O_EFF,
    O_MEM,
    O_TOP,
    O_UNITS,
    O_JSON,
    O_EMIT,
    O_PICK,
    O_COUNT
};

struct run {
    struct model_shape model;
    struct cluster_spec cluster;
    struct plan_config c;
    int top;
    enum units_system units;
    bool json;
    bool emit;
    enum emit_kind kind;
    int pick; /* 1-based rank of the layout --emit writes */
};

static int configure(const char **v, struct run *r, struct error *e)
{
    int rc;
    if ((rc = calcargs_model(v[O_MODEL] ? v[O_MODEL] : "synthetic-7b", &r->model, e)) < 0)
        return rc;
    if ((rc = calcargs_cluster(v[O_CLUSTER] ? v[O_CLUSTER] : "h100-80gb", v[O_NODES], &r->cluster,
                               e)) < 0)
        return rc;
    struct plan_config *c = &r->c;
    *c = (struct plan_config){.model = &r->model,
                              .cluster = &r->cluster,
                              .gpus = r->cluster.gpus_per_node * r->cluster.nodes,
                              .global_batch = 256,
                              .seq = r->model.seq,
                              .precision = PREC_BF16,
                              .optimizer = OPT_ADAMW,
                              .efficiency = 0.5,
                              .capacity = r->cluster.hbm_bytes};
    r->top = 10;
    r->units = UNITS_BINARY;
    if (v[O_GPUS] && (rc = calcargs_int("gpus", v[O_GPUS], 1, PRESET_MAX_GPUS, &c->gpus, e)) < 0)
        return rc;
    if (v[O_BATCH] &&
        (rc = calcargs_int("global-batch", v[O_BATCH], 1, 1 << 24, &c->global_batch, e)) < 0)
        return rc;
    if (v[O_SEQ] && (rc = calcargs_int("seq", v[O_SEQ], 1, 1 << 20, &c->seq, e)) < 0)
        return rc;
    if (v[O_TOP] && (rc = calcargs_int("top", v[O_TOP], 0, 1 << 20, &r->top, e)) < 0)
        return rc;
    if (v[O_PREC] && (rc = memory_parse_precision(v[O_PREC], &c->precision, e)) < 0) {
        error_prefix(e, "--precision");
        return rc;
    }
    if (v[O_OPT] && (rc = memory_parse_optimizer(v[O_OPT], &c->optimizer, e)) < 0) {
        error_prefix(e, "--optimizer");
        return rc;
    }
    if (v[O_ACCUM]) {
        if (!strcmp(v[O_ACCUM], "fp32"))
            c->grad_fp32 = true;
        else if (strcmp(v[O_ACCUM], "same"))
            return error_set(e, ERR_INVAL, "--grad-accum: '%s' is not allowed (fp32 or same)",
                             v[O_ACCUM]);
    }
    if (v[O_EFF]) {
        double x;
        if (units_parse_double(v[O_EFF], false, &x, NULL) < 0 || !(x > 0 && x <= 1))
            return error_set(e, ERR_INVAL,
                             "--efficiency: '%s' is not allowed (a share of peak above 0 and at "
                             "most 1, e.g. 0.5)",
                             v[O_EFF]);
        c->efficiency = x;
    }
    if (v[O_MEM] && (rc = calcargs_bytes("gpu-mem", v[O_MEM], &c->capacity, e)) < 0)
        return rc;
    if (v[O_UNITS] && (rc = units_parse_system(v[O_UNITS], &r->units, e)) < 0) {
        error_prefix(e, "--units");
        return rc;
    }
    r->json = v[O_JSON] != NULL;
    /* what plan_run refuses too, in the options' names */
    int all = r->cluster.gpus_per_node * r->cluster.nodes;
    if (c->gpus > all)
        return error_set(e, ERR_INVAL,
                         "--gpus %d: the cluster has %d GPUs (%d node%s of %d; use --nodes K)",
                         c->gpus, all, r->cluster.nodes, r->cluster.nodes == 1 ? "" : "s",
                         r->cluster.gpus_per_node);
    if (r->model.ffn_kind == FFN_GELU && c->seq > r->model.seq)
        return error_set(e, ERR_INVAL, "--seq %d is longer than the %d learned positions of %s",
                         c->seq, r->model.seq, r->model.name);
    r->pick = 1;
    if (v[O_PICK] && !v[O_EMIT])
        return error_set(e, ERR_INVAL, "--pick chooses the layout --emit writes: give --emit too");
    if (v[O_EMIT]) {
        if ((rc = emit_parse(v[O_EMIT], &r->kind, e)) < 0)
            return rc;
        if (r->json)
            return error_set(e, ERR_INVAL,
                             "--emit writes the framework's own file: no --json with it");
        r->emit = true;
    }
    if (v[O_PICK] && (rc = calcargs_int("pick", v[O_PICK], 1, 1 << 20, &r->pick, e)) < 0)
        return rc;
    return 0;
}

/* --emit: the layout ranked --pick, in the framework's terms. */
static int emit(const struct run *r, const struct plan_result *res)
{
    if (res->n_kept == 0)
        return cli_usage("plan", "--emit: no layout fits, so there is none to write");
    if ((size_t)r->pick > res->n_kept)
        return cli_usage("plan", "--pick %d: %zu layout%s fit (1 to %zu)", r->pick, res->n_kept,
                         res->n_kept == 1 ? "" : "s", res->n_kept);
    const struct plan_layout *l = &res->kept[r->pick - 1];
    char src[64];
    snprintf(src, sizeof src, "plan (layout %d of %zu)", r->pick, res->n_kept);
    struct emit_plan p = {
        .source = src,
        .model = &r->model,
        .cluster = &r->cluster,
        .gpus = r->c.gpus,
        .dp = l->dp,
        .tp = l->tp,
        .pp = l->pp,
        .zero = l->zero,
        .ckpt = l->ckpt,
        .micro_batch = l->micro_batch,
        .micro_batches = l->micro_batches,
        .seq = r->c.seq,
        .precision = r->c.precision,
        .optimizer = r->c.optimizer,
        .grad_fp32 = r->c.grad_fp32,
        .sp = l->tp > 1, /* the planner's tensor parallelism is sequence parallel */
        .schedule = SCHED_1F1B,
        .per_gpu_bytes = l->per_gpu_bytes,
        .capacity = r->c.capacity,
        .step_time_s = l->step_time_s,
    };
    emit_write(stdout, stderr, r->kind, &p);
    return 0;
}

static const char *policy(const struct plan_layout *l, char *buf, size_t n)
{
    return activ_policy_name(buf, n, &l->ckpt);
}

/* Rejected layouts worth showing: the closest misses (up to top), then one of each other
 * reason. */
static bool show_rejected(const struct plan_result *res, size_t i, size_t top)
{
    const struct plan_layout *l = &res->rejected[i];
    if (l->over > 0)
        return top == 0 || i < top;
    for (size_t j = 0; j < i; j++)
        if (res->rejected[j].over <= 0 && !strcmp(res->rejected[j].reason, l->reason))
            return false;
    return true;
}

static json_t *jlayout(const struct plan_layout *l, bool kept)
{
    char pol[32];
    json_t *o = json_pack("{s:i, s:i, s:i, s:i, s:s, s:i, s:i}", "dp", l->dp, "tp", l->tp, "pp",
                          l->pp, "zero", l->zero, "checkpoint", policy(l, pol, sizeof pol),
                          "micro_batch", l->micro_batch, "micro_batches", l->micro_batches);
    if (l->per_gpu_bytes > 0)
        json_object_set_new(o, "per_gpu_bytes", json_whole(l->per_gpu_bytes));
    if (kept) {
        json_object_set_new(o, "step_time_s", json_num(l->step_time_s));
        json_object_set_new(o, "compute_s", json_num(l->compute_s));
        json_object_set_new(o, "bubble_s", json_num(l->bubble_s));
        json_object_set_new(o, "comm_exposed_s", json_num(l->comm_exposed_s));
        json_object_set_new(o, "mfu", json_num(l->mfu));
        json_object_set_new(o, "comm_bytes_per_gpu", json_whole(l->comm_bytes_per_gpu));
    } else {
        json_object_set_new(o, "reason", json_string(l->reason));
        if (l->over > 0)
            json_object_set_new(o, "over_bytes", json_whole(l->over));
    }
    return o;
}

static void print_json(const struct run *r, const struct plan_result *res)
{
    json_t *kept = json_array(), *rej = json_array();
    for (size_t i = 0; i < res->n_kept && (r->top == 0 || i < (size_t)r->top); i++)
        json_array_append_new(kept, jlayout(&res->kept[i], true));
    for (size_t i = 0; i < res->n_rejected; i++)
        if (show_rejected(res, i, (size_t)r->top))
            json_array_append_new(rej, jlayout(&res->rejected[i], false));
    json_t *doc =
        json_pack("{s:s, s:s, s:i, s:i, s:i, s:f, s:f, s:I, s:I, s:o, s:o}", "model", r->model.name,
                  "cluster", r->cluster.name, "gpus", r->c.gpus, "global_batch", r->c.global_batch,
                  "seq", r->c.seq, "efficiency", r->c.efficiency, "model_flops", res->model_flops,
                  "kept_count", (json_int_t)res->n_kept, "rejected_count",
                  (json_int_t)res->n_rejected, "layouts", kept, "rejected", rej);
    json_object_set_new(doc, "capacity", json_whole(r->c.capacity));
    json_write(stdout, doc, JSON_FIGURES);
}

static void print_text(const struct run *r, const struct plan_result *res)
{
    const struct plan_config *c = &r->c;
    char b1[64], b2[64], b3[64], b4[64], b5[64], b6[64], pol[32];
    struct params_breakdown pb;
    params_count(&r->model, &pb);
    units_format_grouped(b1, sizeof b1, (unsigned long long)pb.total);
    printf("plan       %s (%s parameters) on %d GPUs of %s (%d per node, %s and %.1f TFLOP/s "
           "each)\n",
           r->model.name, b1, c->gpus, r->cluster.name, r->cluster.gpus_per_node,
           calcargs_size(b2, sizeof b2, c->capacity, r->units), r->cluster.peak_flops / 1e12);
    units_format_grouped(b1, sizeof b1, (unsigned long long)c->global_batch * c->seq);
    printf("batch      %d sequences x %d tokens = %s tokens per step; %s, %s%s\n", c->global_batch,
           c->seq, b1, memory_precision_name(c->precision), memory_optimizer_name(c->optimizer),
           c->grad_fp32 ? ", fp32 gradients" : "");
    printf("step time  compute (6ΨT + 12LhsT model FLOPs = %.3g, + recompute) / (GPUs x peak x "
           "%.2f)\n"
           "           + bubble compute x (pp-1)/m (1F1B) + communication not hidden (α-β, "
           "comm/cost.h)\n"
           "MFU        model FLOPs / (step time x GPUs x peak)\n\n",
           res->model_flops, c->efficiency);
    if (res->n_kept == 0) {
        printf("no layout fits.\n");
    } else {
        printf("%4s %5s %3s %3s %4s %-9s %3s %5s %11s %9s %9s %9s %9s %6s %11s\n", "rank", "dp",
               "tp", "pp", "zero", "ckpt", "mb", "m", "memory/GPU", "step", "compute", "bubble",
               "comm", "MFU", "comm/GPU");
        for (size_t i = 0; i < res->n_kept && (r->top == 0 || i < (size_t)r->top); i++) {
            const struct plan_layout *l = &res->kept[i];
            printf("%4zu %5d %3d %3d %4d %-9s %3d %5d %11s %9s %9s %9s %9s %5.1f%% %11s\n", i + 1,
                   l->dp, l->tp, l->pp, l->zero, policy(l, pol, sizeof pol), l->micro_batch,
                   l->micro_batches, calcargs_size(b1, sizeof b1, l->per_gpu_bytes, r->units),
                   units_format_seconds(b2, sizeof b2, l->step_time_s),
                   units_format_seconds(b3, sizeof b3, l->compute_s),
                   units_format_seconds(b4, sizeof b4, l->bubble_s),
                   units_format_seconds(b5, sizeof b5, l->comm_exposed_s), 100 * l->mfu,
                   calcargs_size(b6, sizeof b6, l->comm_bytes_per_gpu, r->units));
        }
        const struct plan_layout *best = &res->kept[0];
        printf("\nbest layout's communication per GPU per step:\n");
        const struct traffic_part *parts[] = {&best->traffic.dp, &best->traffic.tp,
                                              &best->traffic.pp};
        const char *names[] = {"data parallel", "tensor parallel", "pipeline"};
        for (int i = 0; i < 3; i++)
            printf("  %-16s %11s  %s\n", names[i],
                   calcargs_size(b1, sizeof b1, parts[i]->bytes, r->units), parts[i]->formula);
    }
    printf("\n%zu layouts fit, %zu rejected", res->n_kept, res->n_rejected);
    if (res->n_rejected)
        printf("; the closest misses and each other reason:\n");
    else
        printf("\n");
    for (size_t i = 0; i < res->n_rejected; i++) {
        if (!show_rejected(res, i, (size_t)r->top))
            continue;
        const struct plan_layout *l = &res->rejected[i];
        if (l->over > 0)
            printf("  dp %d tp %d pp %d zero %d %s mb %d: %s\n", l->dp, l->tp, l->pp, l->zero,
                   policy(l, pol, sizeof pol), l->micro_batch, l->reason);
        else
            printf("  dp %d tp %d pp %d: %s\n", l->dp, l->tp, l->pp, l->reason);
    }
}

static int plan_main(int argc, char **argv)
{
    struct opts o;
    const char *arg, *v[O_COUNT] = {0};
    int k;
    opts_init(&o, argc, argv, options, "plan");
    o.once = true;
    while ((k = opts_next(&o, &arg)) != OPTS_END) {
        if (k == OPTS_ERROR)
            return 2;
        if (k == OPTS_POSITIONAL)
            return cli_usage("plan", "unexpected argument '%s'", arg);
        v[k] = arg ? arg : "";
    }
    static struct run r;
    memset(&r, 0, sizeof r);
    struct error e = {0};
    struct plan_result res;
    if (configure(v, &r, &e) < 0 || plan_run(&r.c, &res, &e) < 0)
        return cli_fail(&e);
    int rc = 0;
    if (r.emit)
        rc = emit(&r, &res);
    else
        r.json ? print_json(&r, &res) : print_text(&r, &res);
    plan_free(&res);
    return rc;
}

const struct command cmd_plan = {
    "plan",
    "rank the parallel layouts that fit a model on a cluster by predicted step time",
    "usage: scalelab plan [--model NAME|FILE] [--cluster NAME|FILE] [--nodes K] [--gpus N]\n"
    "                     [--global-batch B] [--seq S] [--precision fp32|bf16|fp16]\n"
    "                     [--optimizer adamw|sgd|sgd-momentum] [--grad-accum fp32|same]\n"
    "                     [--efficiency X] [--gpu-mem SIZE] [--top N] [--units GiB|GB] [--json]\n"
    "                     [--emit deepspeed|megatron|fsdp [--pick K]]\n"
    "\n"
    "Enumerates dp x tp x pp = N layouts, ZeRO stages (2 and 3 without pipelining), checkpoint\n"
    "policies (none, selective, full) and micro-batch sizes (powers of two) for a global batch;\n"
    "keeps those that fit and ranks them by predicted step time: compute (6ΨT + 12LhsT FLOPs\n"
    "plus recompute) at the given efficiency, the pipeline bubble, and the communication that\n"
    "is not hidden (α-β costs of the collectives). Rejected layouts say why.\n"
    "\n"
    "  --model NAME|FILE    model preset or file (default synthetic-7b)\n"
    "  --cluster NAME|FILE  cluster preset or file (default h100-80gb)\n"
    "  --nodes K            scale the cluster out to K nodes\n"
    "  --gpus N             GPUs to use (default all of the cluster's)\n"
    "  --global-batch B     sequences per step (default 256)\n"
    "  --seq S              sequence length (default the model's)\n"
    "  --precision, --optimizer, --grad-accum   as for 'scalelab memory'\n"
    "  --efficiency X       share of peak FLOP/s the matmuls reach, (0, 1] (default 0.5)\n"
    "  --gpu-mem SIZE       memory per GPU (default the cluster's)\n"
    "  --top N              layouts and closest misses to show (default 10; 0: all)\n"
    "  --units U            GiB (default) or GB\n"
    "  --json               {\"layouts\": [{\"dp\", \"tp\", \"pp\", \"zero\", \"checkpoint\",\n"
    "                       \"micro_batch\", \"per_gpu_bytes\", \"step_time_s\", \"mfu\",\n"
    "                       \"comm_bytes_per_gpu\"}...], \"rejected\": [{..., \"reason\"}...]}\n"
    "  --emit FRAMEWORK     write the best layout (or --pick K, the K-th ranked) for a real\n"
    "                       framework: deepspeed (a ds_config.json; its comments go to\n"
    "                       standard error), megatron (a torchrun line with Megatron-LM's\n"
    "                       arguments and the model's shape), fsdp (a torchrun line and a\n"
    "                       PyTorch FSDP snippet). Comments give the predicted memory per GPU\n"
    "                       and name every setting the framework has no equivalent for\n"
    "  --pick K             the layout --emit writes, by its rank (default 1)\n",
    plan_main,
};
