/* scalelab plan: the parallel layouts that fit a model on a cluster, ranked by predicted step
 * time (calc/plan.h), and why the others do not. */
#include "config.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The options as given: numbers and choices read by the table, the model, cluster and sizes
 * kept as text for configure. */
struct plan_args {
    const char *model, *cluster, *nodes, *grad_accum, *gpu_mem, *emit, *framework;
    int gpus, global_batch, seq, top, pick, cp_max, ep_max;
    const char *capacity_factor;
    double efficiency;
    enum fp_format precision;
    enum calc_optimizer optimizer;
    enum activ_attention attention;
    enum units_system units;
    bool json;
};

static int parse_efficiency(const struct opt_entry *o, const char *arg, void *field,
                            struct error *e)
{
    double x;
    if (units_parse_double(arg, false, &x, NULL) < 0 || !(x > 0 && x <= 1))
        return error_set(e, ERR_INVAL,
                         "--%s: '%s' is not allowed (a share of peak above 0 and at most 1, e.g. "
                         "0.5)",
                         o->opt.name, arg);
    *(double *)field = x;
    return 0;
}

#define A struct plan_args
static const struct opt_entry options[] = {
    OPT_WITH("model", "NAME|FILE", opts_str, A, model,
             "model preset or file (default synthetic-7b)"),
    OPT_WITH("cluster", "NAME|FILE", opts_str, A, cluster,
             "cluster preset or file (default h100-80gb)"),
    OPT_WITH("nodes", "K", opts_str, A, nodes, "scale the cluster out to K nodes"),
    OPT_INT("gpus", "N", A, gpus, 1, PRESET_MAX_GPUS, "GPUs to use (default all of the cluster's)"),
    OPT_INT("global-batch", "B", A, global_batch, 1, 1 << 24, "sequences per step (default 256)"),
    OPT_INT("seq", "S", A, seq, 1, 1 << 20, "sequence length (default the model's)"),
    OPT_WITH("precision", "P", calcargs_precision, A, precision,
             "fp32, or bf16/fp16 mixed precision (default bf16)"),
    OPT_WITH("optimizer", "O", calcargs_optimizer, A, optimizer,
             "adamw (default), sgd or sgd-momentum"),
    OPT_WITH("grad-accum", "fp32|same", opts_str, A, grad_accum,
             "fp32 keeps gradients in fp32, as for 'scalelab memory'"),
    OPT_WITH("attention", "K", calcargs_attention, A, attention, CALCARGS_ATTENTION_HELP),
    OPT_WITH("efficiency", "X", parse_efficiency, A, efficiency,
             "share of peak FLOP/s the matmuls reach, (0, 1] (default 0.5)"),
    OPT_WITH("gpu-mem", "SIZE", opts_str, A, gpu_mem, "memory per GPU (default the cluster's)"),
    OPT_INT("top", "N", A, top, 0, 1 << 20,
            "layouts and closest misses to show (default 10; 0: all)"),
    OPT_WITH("units", "U", calcargs_units, A, units, "GiB (default), GB or auto"),
    OPT_FLAG("json", A, json,
             "{\"layouts\": [{\"dp\", \"tp\", \"pp\", \"zero\", \"checkpoint\",\n"
             "\"micro_batch\", \"per_gpu_bytes\", \"step_time_s\", \"mfu\",\n"
             "\"comm_bytes_per_gpu\"}...], \"rejected\": [{..., \"reason\"}...]}"),
    OPT_WITH("framework", "F", opts_str, A, framework,
             "rank only the layouts F runs (deepspeed, megatron or fsdp), each\n"
             "as F runs it: Megatron-LM's and FSDP's fp32 gradients, say; the\n"
             "others are rejected with F's reason (--emit F sets it)"),
    OPT_WITH("emit", "FRAMEWORK", opts_str, A, emit,
             "write the best layout FRAMEWORK runs (or --pick K, the K-th ranked)\n"
             "in its own terms: deepspeed (a ds_config.json; its comments go to\n"
             "standard error), megatron (a torchrun line with Megatron-LM's\n"
             "arguments and the model's shape), fsdp (a torchrun line and a\n"
             "PyTorch FSDP snippet). Comments give the predicted memory per GPU\n"
             "and the 'scalelab memory' command that computes it"),
    OPT_INT("pick", "K", A, pick, 1, 1 << 20, "the layout --emit writes, by its rank (default 1)"),
    OPT_INT("ep-max", "P", A, ep_max, 1, 4096,
            "a model with experts: consider expert parallelism, ep 2, 4, ... up\n"
            "to P (default 1: none), its experts over ep of the dp GPUs; dropless\n"
            "without a capacity factor (the model's, or --capacity-factor)"),
    OPT_WITH("capacity-factor", "C", opts_str, A, capacity_factor,
             "a model with experts: an expert takes at most ceil(C k tokens / E)\n"
             "of a micro-batch's tokens (default the model's)"),
    OPT_INT("cp-max", "C", A, cp_max, 1, 4096,
            "consider context parallelism, cp 2, 4, ... up to C (default 1: none):\n"
            "each sequence over cp GPUs, for long sequences' activations"),
    OPT_END,
};
#undef A

const struct opts_spec opts_plan = {"plan", options, NULL, NULL};

struct run {
    struct model_shape model;
    struct cluster_spec cluster;
    struct plan_config c;
    int top;
    enum units_system units;
    bool json;
    bool emit; /* for r->c.framework */
    int pick;  /* 1-based rank of the layout --emit writes */
};

/* What plan_run refuses too, in the options' names. */
static int check_fit(const struct run *r, struct error *e)
{
    const struct plan_config *c = &r->c;
    int all = r->cluster.gpus_per_node * r->cluster.nodes;
    if (c->gpus > all)
        return error_set(e, ERR_INVAL,
                         "--gpus %d: the cluster has %d GPUs (%d node%s of %d; use --nodes K)",
                         c->gpus, all, r->cluster.nodes, r->cluster.nodes == 1 ? "" : "s",
                         r->cluster.gpus_per_node);
    if (r->model.ffn_kind == FFN_GELU && c->seq > r->model.seq)
        return error_set(e, ERR_INVAL, "--seq %d is longer than the %d learned positions of %s",
                         c->seq, r->model.seq, r->model.name);
    return 0;
}

static int configure(const struct plan_args *a, struct run *r, struct error *e)
{
    int rc;
    if ((rc = calcargs_model(a->model ? a->model : "synthetic-7b", &r->model, e)) < 0 ||
        (rc = calcargs_cluster(a->cluster ? a->cluster : PRESET_CLUSTER, a->nodes, &r->cluster,
                               e)) < 0)
        return rc;
    struct plan_config *c = &r->c;
    *c = (struct plan_config){.model = &r->model,
                              .cluster = &r->cluster,
                              .gpus =
                                  a->gpus ? a->gpus : r->cluster.gpus_per_node * r->cluster.nodes,
                              .global_batch = a->global_batch,
                              .seq = a->seq ? a->seq : r->model.seq,
                              .precision = a->precision,
                              .optimizer = a->optimizer,
                              .efficiency = a->efficiency,
                              .capacity = r->cluster.hbm_bytes,
                              .cp_max = a->cp_max,
                              .ep_max = a->ep_max,
                              .attention = a->attention};
    if ((rc = calcargs_capacity(a->capacity_factor, &r->model, e)) < 0)
        return rc;
    r->top = a->top;
    r->units = a->units;
    if (a->grad_accum && strcmp(a->grad_accum, "same")) {
        if (strcmp(a->grad_accum, "fp32"))
            return error_set(e, ERR_INVAL, "--grad-accum: '%s' is not allowed (fp32 or same)",
                             a->grad_accum);
        c->grad_fp32 = true;
    }
    if (a->gpu_mem && (rc = calcargs_bytes("gpu-mem", a->gpu_mem, &c->capacity, e)) < 0)
        return rc;
    r->json = a->json;
    if ((rc = check_fit(r, e)) < 0)
        return rc;
    if (a->ep_max > 1 && !(r->model.experts > 0)) /* an option that cannot act is refused */
        return error_set(e, ERR_INVAL,
                         "--ep-max %d: expert parallelism shares a model's experts, and %s has "
                         "none",
                         a->ep_max, r->model.name);
    r->pick = a->pick ? a->pick : 1;
    if (a->pick && !a->emit)
        return error_set(e, ERR_INVAL, "--pick chooses the layout --emit writes: give --emit too");
    if (a->framework && (rc = emit_parse("framework", a->framework, &c->framework, e)) < 0)
        return rc;
    if (a->emit) {
        enum framework f;
        if ((rc = emit_parse("emit", a->emit, &f, e)) < 0)
            return rc;
        if (a->framework && f != c->framework)
            return error_set(e, ERR_INVAL,
                             "--emit %s ranks what %s runs: --framework %s disagrees (give one)",
                             a->emit, a->emit, a->framework);
        if (r->json)
            return error_set(e, ERR_INVAL,
                             "--emit writes the framework's own file: no --json with it");
        c->framework = f;
        r->emit = true;
    }
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
    struct emit_plan p = {.source = src, .cluster = &r->cluster, .step_time_s = l->step_time_s};
    plan_memory_config(&r->c, l, &p.c);
    struct error e = {0};
    int rc = emit_write(stdout, stderr, r->c.framework, &p, &e);
    return rc < 0 ? cli_fail(&e) : rc;
}

static const char *policy(const struct plan_layout *l, char *buf, size_t n)
{
    return ckpt_name(buf, n, &l->ckpt);
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

/* " cp C" and " ep P" for a layout with context or expert parallelism, else "". */
static const char *cp_words(const struct plan_layout *l)
{
    static char buf[48];
    buf[0] = 0;
    if (l->cp > 1)
        snprintf(buf, sizeof buf, " cp %d", l->cp);
    if (l->ep > 1)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " ep %d", l->ep);
    return buf;
}

static json_t *jlayout(const struct plan_layout *l, bool kept)
{
    char pol[32];
    json_t *o = json_pack("{s:i, s:i, s:i, s:i, s:s, s:i, s:i}", "dp", l->dp, "tp", l->tp, "pp",
                          l->pp, "zero", l->zero, "checkpoint", policy(l, pol, sizeof pol),
                          "micro_batch", l->micro_batch, "micro_batches", l->micro_batches);
    if (l->cp > 1)
        json_object_set_new(o, "cp", json_integer(l->cp));
    if (l->ep > 1)
        json_object_set_new(o, "ep", json_integer(l->ep));
    if (l->per_gpu_bytes > 0)
        json_object_set_new(o, "per_gpu_bytes", json_whole(l->per_gpu_bytes));
    if (kept) {
        json_object_set_new(o, "step_time_s", json_num(l->step_time_s));
        json_object_set_new(o, "compute_s", json_num(l->compute_s));
        json_object_set_new(o, "bubble_s", json_num(l->bubble_s));
        json_object_set_new(o, "imbalance_s", json_num(l->imbalance_s));
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
    json_object_set_new(doc, "attention", json_string(activ_attention_name(r->c.attention)));
    if (r->c.framework != FRAMEWORK_NONE)
        json_object_set_new(doc, "framework", json_string(framework_title(r->c.framework)));
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
    printf("batch      %d sequences x %d tokens = %s tokens per step; %s, %s%s, %s attention\n",
           c->global_batch, c->seq, b1, fp_info(c->precision)->name,
           memory_optimizer_name(c->optimizer), c->grad_fp32 ? ", fp32 gradients" : "",
           activ_attention_name(c->attention));
    if (c->framework != FRAMEWORK_NONE)
        printf("framework  %s: the layouts it runs, each as it runs them (the others rejected "
               "with its reason)\n",
               framework_title(c->framework));
    printf("step time  compute (6ΨT + 12LhsT model FLOPs = %.3g, + recompute) / (GPUs x peak x "
           "%.2f)\n"
           "           + bubble (compute + tp/cp/ep communication) x (pp-1)/m (1F1B), and "
           "(m-1)/m x compute x (the slowest stage's share x pp - 1)\n"
           "           + communication not hidden (α-β, comm/cost.h)\n"
           "MFU        model FLOPs / (step time x GPUs x peak)\n\n",
           res->model_flops, c->efficiency);
    if (res->n_kept == 0) {
        printf("no layout fits.\n");
    } else {
        bool cps = c->cp_max > 1; /* a column for cp only where it was considered */
        bool eps = c->ep_max > 1;
        printf("%4s %5s %3s %3s", "rank", "dp", "tp", "pp");
        printf(cps ? " %3s" : "", "cp");
        printf(eps ? " %3s" : "", "ep");
        printf(" %4s %-9s %3s %5s %11s %9s %9s %9s %9s %6s %11s\n", "zero", "ckpt", "mb", "m",
               "memory/GPU", "step", "compute", "bubble", "comm", "MFU", "comm/GPU");
        for (size_t i = 0; i < res->n_kept && (r->top == 0 || i < (size_t)r->top); i++) {
            const struct plan_layout *l = &res->kept[i];
            printf("%4zu %5d %3d %3d", i + 1, l->dp, l->tp, l->pp);
            if (cps)
                printf(" %3d", l->cp > 1 ? l->cp : 1);
            if (eps)
                printf(" %3d", l->ep > 1 ? l->ep : 1);
            printf(" %4d %-9s %3d %5d %11s %9s %9s %9s %9s %5.1f%% %11s\n", l->zero,
                   policy(l, pol, sizeof pol), l->micro_batch, l->micro_batches,
                   calcargs_size(b1, sizeof b1, l->per_gpu_bytes, r->units),
                   units_format_seconds(b2, sizeof b2, l->step_time_s),
                   units_format_seconds(b3, sizeof b3, l->compute_s),
                   units_format_seconds(b4, sizeof b4, l->bubble_s + l->imbalance_s),
                   units_format_seconds(b5, sizeof b5, l->comm_exposed_s), 100 * l->mfu,
                   calcargs_size(b6, sizeof b6, l->comm_bytes_per_gpu, r->units));
        }
        const struct plan_layout *best = &res->kept[0];
        printf("\nbest layout's communication per GPU per step:\n");
        const struct traffic_part *parts[] = {&best->traffic.dp, &best->traffic.tp,
                                              &best->traffic.pp, &best->traffic.cp,
                                              &best->traffic.ep};
        const char *names[] = {"data parallel", "tensor parallel", "pipeline", "context parallel",
                               "expert parallel"};
        for (int i = 0; i < 5; i++)
            if (i < 3 || (i == 3 && best->cp > 1) || (i == 4 && best->ep > 1))
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
            printf("  dp %d tp %d pp %d%s zero %d %s mb %d: %s\n", l->dp, l->tp, l->pp, cp_words(l),
                   l->zero, policy(l, pol, sizeof pol), l->micro_batch, l->reason);
        else
            printf("  dp %d tp %d pp %d%s: %s\n", l->dp, l->tp, l->pp, cp_words(l), l->reason);
    }
}

static int plan_main(int argc, char **argv)
{
    struct plan_args a = {.global_batch = 256,
                          .top = 10,
                          .efficiency = PLAN_EFFICIENCY,
                          .precision = FP_BF16,
                          .optimizer = OPT_ADAMW,
                          .units = UNITS_BINARY};
    int rc = opts_parse(&opts_plan, argc, argv, &a);
    if (rc)
        return rc;
    static struct run r;
    memset(&r, 0, sizeof r);
    struct error e = {0};
    struct plan_result res;
    if (configure(&a, &r, &e) < 0)
        return cli_fail(&e);
    if (plan_run(&r.c, &res, &e) < 0) /* calc/'s checks, in the options' words */
        return opts_fail(&opts_plan, &e);
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
    "                     [--framework deepspeed|megatron|fsdp]\n"
    "                     [--emit deepspeed|megatron|fsdp [--pick K]]\n"
    "\n"
    "Enumerates dp x tp x pp = N layouts, ZeRO stages (2 and 3 without pipelining), checkpoint\n"
    "policies (none, selective, full) and micro-batch sizes (powers of two) for a global batch;\n"
    "keeps those that fit and ranks them by predicted step time: compute (6ΨT + 12LhsT FLOPs\n"
    "plus recompute) at the given efficiency, the pipeline bubble, and the communication that\n"
    "is not hidden (α-β costs of the collectives). Rejected layouts say why. With --framework\n"
    "or --emit, each layout is the one that framework runs, and those it does not say why.\n",
    plan_main,
};
