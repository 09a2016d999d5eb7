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
#include "calc/sched.h"
#include "calc/traffic.h"
#include "cli/calcargs.h"
#include "cli/command.h"
#include "cli/emit.h"
#include "cli/opts.h"

static const struct opt options[] = {
    {"model", 0, true},
    {"params", 0, true},
    {"cluster", 0, true},
    {"nodes", 0, true},
    {"gpus", 0, true},
    {"dp", 0, true},
    {"tp", 0, true},
    {"pp", 0, true},
    {"zero", 0, true},
    {"precision", 0, true},
    {"optimizer", 0, true},
    {"grad-accum", 0, true},
    {"bucket", 0, true},
    {"prefetch", 0, true},
    {"micro-batch", 0, true},
    {"seq", 0, true},
    {"micro-batches", 0, true},
    {"schedule", 0, true},
    {"sequence-parallel", 0, false},
    {"checkpoint", 0, true},
    {"gpu-mem", 0, true},
    {"units", 0, true},
    {"json", 0, false},
    {"tensors", 0, false},
    {"emit", 0, true},
    {NULL, 0, false},
};

struct args {
    const char *v[sizeof options / sizeof options[0]];
    bool set[sizeof options / sizeof options[0]];
};

static const char *get(const struct args *a, const char *name)
{
    for (int i = 0; options[i].name; i++)
        if (!strcmp(options[i].name, name))
            return a->set[i] ? (a->v[i] ? a->v[i] : "") : NULL;
    return NULL;
}

struct run {
    struct model_shape shape;
    struct cluster_spec cluster;
    struct memory_config c;
    struct memory_result r;
    struct traffic t;
    int gpus;
    enum units_system units;
    bool capacity_given;
};

/* Reads the options into r->c; ERR_INVAL with a message naming the option. */
static int configure(const struct args *a, struct run *r, struct error *e)
{
    const char *s;
    int rc;
    struct memory_config *c = &r->c;
    memset(c, 0, sizeof *c);
    *c = (struct memory_config){.precision = PREC_BF16,
                                .optimizer = OPT_ADAMW,
                                .dp = 1,
                                .tp = 1,
                                .pp = 1,
                                .micro_batch = 1,
                                .micro_batches = 1,
                                .schedule = SCHED_1F1B,
                                .ckpt = {ACTIV_NONE, 0}};
    if (get(a, "model") && get(a, "params"))
        return error_set(e, ERR_INVAL,
                         "--model and --params exclude each other (a shape, or a "
                         "bare parameter count for the model states alone)");
    if (get(a, "tensors") && get(a, "params"))
        return error_set(e, ERR_INVAL,
                         "--tensors lists a shape's tensors: it needs --model, not --params");
    if ((s = get(a, "params"))) {
        struct error sub = {0};
        if (units_parse_count(s, 1e15, &c->params, &sub) < 0 || !(c->params >= 1))
            return error_set(e, ERR_INVAL,
                             "--params: '%s' is not allowed (a count from 1 to "
                             "1e15, e.g. 7.5e9 or 7.5B)",
                             s);
        c->model = NULL;
    } else {
        if ((rc = calcargs_model(get(a, "model") ? get(a, "model") : "synthetic-7b", &r->shape,
                                 e)) < 0)
            return rc;
        c->model = &r->shape;
    }
    if ((rc = calcargs_cluster(get(a, "cluster") ? get(a, "cluster") : "h100-80gb", get(a, "nodes"),
                               &r->cluster, e)) < 0)
        return rc;
    struct {
        const char *name;
        int *out;
        long long min, max;
    } ints[] = {
        {"tp", &c->tp, 1, 4096},
        {"pp", &c->pp, 1, PRESET_MAX_LAYERS},
        {"zero", &c->zero, 0, 3},
        {"micro-batch", &c->micro_batch, 1, 1 << 16},
        {"micro-batches", &c->micro_batches, 1, 1 << 16},
        {"seq", &c->seq, 1, 1 << 20},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if ((s = get(a, ints[i].name)) &&
            (rc = calcargs_int(ints[i].name, s, ints[i].min, ints[i].max, ints[i].out, e)) < 0)
            return rc;
    if (!get(a, "seq"))
        c->seq = c->model ? c->model->seq : 2048;
    if ((double)c->micro_batch * c->seq > (double)(1 << 30))
        return error_set(e, ERR_INVAL,
                         "--micro-batch %d x --seq %d is more than 2^30 tokens per micro-batch",
                         c->micro_batch, c->seq);
    if (!get(a, "micro-batches"))
        c->micro_batches = c->pp;
    int gpus = 0, dp = 0;
    if ((s = get(a, "gpus")) && (rc = calcargs_int("gpus", s, 1, PRESET_MAX_GPUS, &gpus, e)) < 0)
        return rc;
    if ((s = get(a, "dp")) && (rc = calcargs_int("dp", s, 1, PRESET_MAX_GPUS, &dp, e)) < 0)
        return rc;
    int tpp = c->tp * c->pp;
    if (gpus && dp && (long long)dp * tpp != gpus)
        return error_set(e, ERR_INVAL,
                         "inconsistent layout: --dp %d x --tp %d x --pp %d = %lld, not --gpus %d",
                         dp, c->tp, c->pp, (long long)dp * tpp, gpus);
    if (gpus && !dp) {
        if (gpus % tpp)
            return error_set(e, ERR_INVAL,
                             "--gpus %d is not a multiple of --tp %d x --pp %d (dp = gpus / (tp x "
                             "pp) must be whole)",
                             gpus, c->tp, c->pp);
        dp = gpus / tpp;
    }
    c->dp = dp ? dp : 1;
    r->gpus = gpus ? gpus : c->dp * tpp;
    const char *which = "precision";
    if ((s = get(a, which)) && (rc = memory_parse_precision(s, &c->precision, e)) < 0)
        goto named;
    which = "optimizer";
    if ((s = get(a, which)) && (rc = memory_parse_optimizer(s, &c->optimizer, e)) < 0)
        goto named;
    if ((s = get(a, "grad-accum"))) {
        if (!strcmp(s, "fp32"))
            c->grad_fp32 = true;
        else if (strcmp(s, "same"))
            return error_set(e, ERR_INVAL,
                             "--grad-accum: '%s' is not allowed (fp32, or same: "
                             "gradients in the training precision)",
                             s);
    }
    if ((s = get(a, "bucket"))) {
        if (units_parse_bytes(s, 1e12, &c->bucket_bytes, e) < 0 || c->bucket_bytes < 4) {
            if (!e->code)
                error_set(e, ERR_INVAL, "at least 4 bytes");
            error_prefix(e, "--bucket '%s' (a size, e.g. 25MiB)", s);
            return ERR_INVAL;
        }
    }
    int prefetch = 1;
    if ((s = get(a, "prefetch")) && (rc = calcargs_int("prefetch", s, 0, 1, &prefetch, e)) < 0)
        return rc;
    c->no_prefetch = !prefetch;
    which = "schedule";
    if ((s = get(a, which))) {
        if ((rc = sched_parse(s, &c->schedule, e)) < 0)
            goto named;
        if (c->schedule == SCHED_INTERLEAVED)
            return error_set(e, ERR_INVAL,
                             "--schedule: memory takes gpipe or 1f1b (see "
                             "'scalelab pipeline' for interleaved)");
    }
    c->sp = get(a, "sequence-parallel") != NULL;
    which = "checkpoint";
    if ((s = get(a, which)) && (rc = activ_parse_policy(s, &c->ckpt, e)) < 0)
        goto named;
    c->capacity = r->cluster.hbm_bytes;
    if ((s = get(a, "gpu-mem")) && (rc = calcargs_bytes("gpu-mem", s, &c->capacity, e)) < 0)
        return rc;
    r->capacity_given = s != NULL;
    r->units = UNITS_BINARY;
    if ((s = get(a, "units")) && (rc = units_parse_system(s, &r->units, e)) < 0) {
        error_prefix(e, "--units");
        return rc;
    }
    return 0;
named:
    error_prefix(e, "--%s", which);
    return rc;
}

/* ------------------------------------------------------------------ output */

static void print_json(const struct run *r)
{
    const struct memory_result *m = &r->r;
    const struct memory_config *c = &r->c;
    char pol[32];
    json_t *per =
        json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "weights", json_whole(m->states.weights),
                  "gradients", json_whole(m->states.gradients), "master_weights",
                  json_whole(m->states.master), "optimizer", json_whole(m->states.optimizer),
                  "activations", json_whole(m->activations), "communication", json_whole(m->comm),
                  "total", json_whole(m->total));
    json_t *comm = json_object();
    const struct traffic_part *parts[] = {&r->t.dp, &r->t.tp, &r->t.pp};
    const char *names[] = {"data_parallel", "tensor_parallel", "pipeline"};
    for (int i = 0; i < 3; i++)
        json_object_set_new(comm, names[i],
                            json_pack("{s:o, s:o, s:s}", "bytes", json_whole(parts[i]->bytes),
                                      "time_s", json_num(parts[i]->time_s), "formula",
                                      parts[i]->formula));
    json_object_set_new(comm, "bytes", json_whole(r->t.bytes));
    json_t *doc =
        json_pack("{s:s, s:o, s:i, s:{s:i, s:i, s:i, s:i}, s:o, s:o, s:o, s:b, s:o}", "model",
                  c->model ? c->model->name : "(--params)", "params", json_whole(m->params), "gpus",
                  r->gpus, "layout", "dp", c->dp, "tp", c->tp, "pp", c->pp, "zero", c->zero,
                  "per_gpu", per, "activations_per_layer", json_whole(m->act.per_layer), "capacity",
                  json_whole(m->capacity), "fits", m->fits, "over", json_whole(m->over));
    json_object_set_new(doc, "precision", json_string(memory_precision_name(c->precision)));
    json_object_set_new(doc, "optimizer", json_string(memory_optimizer_name(c->optimizer)));
    json_object_set_new(doc, "bytes_per_param",
                        json_num(m->per_param.weights + m->per_param.gradients +
                                 m->per_param.master + m->per_param.optimizer));
    json_object_set_new(doc, "checkpoint",
                        json_string(activ_policy_name(pol, sizeof pol, &c->ckpt)));
    json_object_set_new(doc, "stage", json_integer(m->stage));
    json_object_set_new(doc, "in_flight", json_integer(m->in_flight));
    json_object_set_new(doc, "activations_saved", json_whole(m->act.saved));
    json_object_set_new(doc, "activations_peak", json_whole(m->act.peak));
    json_object_set_new(doc, "activation_formula",
                        json_string(c->model ? m->layer.formula : "none (no shape)"));
    json_object_set_new(doc, "communication", comm);
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

static void print_text(const struct run *r)
{
    const struct memory_result *m = &r->r;
    const struct memory_config *c = &r->c;
    char b1[64], b2[64], b3[64], pol[32];
    enum units_system u = r->units;
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
    printf("training   %s%s, %s; gradients %s\n", memory_precision_name(c->precision),
           c->precision == PREC_FP32 ? "" : " mixed precision", memory_optimizer_name(c->optimizer),
           k->gradients == 4 ? "fp32" : memory_precision_name(c->precision));
    printf("layout     %d GPU%s = dp %d x tp %d x pp %d, ZeRO-%d", r->gpus, r->gpus > 1 ? "s" : "",
           c->dp, c->tp, c->pp, c->zero);
    if (c->model)
        printf(", checkpoint %s, micro-batch %d x seq %d%s",
               activ_policy_name(pol, sizeof pol, &c->ckpt), c->micro_batch, c->seq,
               c->sp ? ", sequence parallel" : "");
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
    printf("parameters on this GPU Ψ = %s%s; N_d = dp = %d\n\n", b1,
           c->tp * c->pp > 1 ? " (its tensor/pipeline share)" : "", c->dp);

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
    for (int i = 0; i < 4; i++) {
        bool split = c->zero >= rows[i].from_stage && c->dp > 1;
        printf("  %-18s %14s   %g B x Ψ%s\n", rows[i].name,
               calcargs_size(b1, sizeof b1, rows[i].bytes, u), rows[i].per, split ? " / N_d" : "");
    }
    double states = m->total - m->activations - m->comm;
    printf("  %-18s %14s\n", "model states", calcargs_size(b1, sizeof b1, states, u));
    if (c->model) {
        printf("  %-18s %14s   ", "activations", calcargs_size(b1, sizeof b1, m->activations, u));
        if (m->in_flight > 1)
            printf("(%d - 1) x saved %s + peak %s\n", m->in_flight,
                   calcargs_size(b2, sizeof b2, m->act.saved, u),
                   calcargs_size(b3, sizeof b3, m->act.peak, u));
        else
            printf("%d layers + the ends, one micro-batch at its peak\n", m->stage_layers);
    }
    if (m->comm > 0)
        printf("  %-18s %14s   %s\n", "comm buffers", calcargs_size(b1, sizeof b1, m->comm, u),
               c->zero == 2     ? "2 gradient buckets (one reduced while the next fills)"
               : c->no_prefetch ? "2 gradient pieces + the largest unit gathered"
                                : "2 gradient pieces + 2 units gathered at once (prefetch)");
    printf("  %-18s %14s\n", "total", calcargs_size(b1, sizeof b1, m->total, u));
    printf("  %-18s %14s   %s\n", "capacity", calcargs_size(b1, sizeof b1, m->capacity, u),
           r->capacity_given ? "--gpu-mem" : r->cluster.name);
    if (m->fits)
        printf("\nfits: %s to spare\n", calcargs_size(b1, sizeof b1, m->capacity - m->total, u));
    else
        printf("\ndoes NOT fit: over by %s\n", calcargs_size(b1, sizeof b1, m->over, u));

    if (c->model) {
        printf("\nactivations, one layer, one micro-batch: %s\n",
               calcargs_size(b1, sizeof b1, m->layer.total, u));
        printf("  formula: %s  (%s)\n", m->layer.formula,
               c->model->ffn_kind == FFN_GELU
                   ? "Korthikanti et al. 2022, a GPT layer"
                   : "our RMSNorm/SwiGLU layer: the tensors it saves, listed in calc/activ.h");
        printf("  with s = %d, b = %d, h = %d, a = %d, t = %d; %d bytes per activation\n", c->seq,
               c->micro_batch, c->model->d_model, c->model->heads, c->tp,
               c->precision == PREC_FP32 ? 4 : 2);
        printf("  policy %s: ", activ_policy_name(pol, sizeof pol, &c->ckpt));
        switch (c->ckpt.kind) {
        case ACTIV_NONE:
            printf("every layer keeps its list, %s per layer\n",
                   calcargs_size(b1, sizeof b1, m->act.per_layer, u));
            break;
        case ACTIV_SELECTIVE:
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

    printf("\ncommunication per GPU per step (%d micro-batch%s; times from the α-β ring model of "
           "comm/cost.h on %s):\n",
           c->micro_batches, c->micro_batches > 1 ? "es" : "", r->cluster.name);
    const struct traffic_part *parts[] = {&r->t.dp, &r->t.tp, &r->t.pp};
    const char *names[] = {"data parallel", "tensor parallel", "pipeline"};
    for (int i = 0; i < 3; i++) {
        units_format_seconds(b2, sizeof b2, parts[i]->time_s);
        printf("  %-16s %14s  %10s   %s\n", names[i],
               calcargs_size(b1, sizeof b1, parts[i]->bytes, u), b2, parts[i]->formula);
    }
    printf("  %-16s %14s\n", "total", calcargs_size(b1, sizeof b1, r->t.bytes, u));
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

static int memory_main(int argc, char **argv)
{
    struct opts p;
    const char *arg;
    struct args a = {0};
    int k;
    opts_init(&p, argc, argv, options, "memory");
    p.once = true;
    while ((k = opts_next(&p, &arg)) != OPTS_END) {
        if (k == OPTS_ERROR)
            return 2;
        if (k == OPTS_POSITIONAL)
            return cli_usage("memory", "unexpected argument '%s'", arg);
        a.set[k] = true, a.v[k] = arg;
    }
    static struct run r; /* large; one per process */
    memset(&r, 0, sizeof r);
    struct error e = {0};
    int rc = configure(&a, &r, &e);
    if (rc == 0)
        rc = memory_check(&r.c, &e);
    int total = r.cluster.gpus_per_node * r.cluster.nodes;
    if (rc == 0 && r.gpus > total)
        rc = error_set(&e, ERR_INVAL,
                       "the layout needs %d GPUs; --cluster %s has %d (%d node%s of %d; use "
                       "--nodes K)",
                       r.gpus, r.cluster.name, total, r.cluster.nodes,
                       r.cluster.nodes == 1 ? "" : "s", r.cluster.gpus_per_node);
    if (rc == 0)
        rc = memory_compute(&r.c, &r.r, &e);
    if (rc == 0)
        rc = traffic_compute(&r.c, &r.cluster, r.r.params_gpu, r.r.stage_layers, 0, 0, &r.t, &e);
    enum emit_kind kind = EMIT_DEEPSPEED;
    if (rc == 0 && get(&a, "emit")) {
        if ((rc = emit_parse(get(&a, "emit"), &kind, &e)) == 0 && !r.c.model)
            rc = error_set(&e, ERR_INVAL,
                           "--emit writes a model's shape: it needs --model, not "
                           "--params");
        if (rc == 0 && (get(&a, "json") || get(&a, "tensors")))
            rc = error_set(&e, ERR_INVAL, "--emit writes the framework's own file: no --%s with it",
                           get(&a, "json") ? "json" : "tensors");
    }
    if (rc < 0)
        return cli_fail(&e);
    if (get(&a, "emit")) {
        struct emit_plan ep = {
            .source = "memory",
            .model = r.c.model,
            .cluster = &r.cluster,
            .gpus = r.gpus,
            .dp = r.c.dp,
            .tp = r.c.tp,
            .pp = r.c.pp,
            .zero = r.c.zero,
            .ckpt = r.c.ckpt,
            .micro_batch = r.c.micro_batch,
            .micro_batches = r.c.micro_batches,
            .seq = r.c.seq,
            .precision = r.c.precision,
            .optimizer = r.c.optimizer,
            .grad_fp32 = r.c.grad_fp32,
            .sp = r.c.sp,
            .schedule = r.c.schedule,
            .bucket_bytes = r.c.bucket_bytes,
            .per_gpu_bytes = r.r.total,
            .capacity = r.r.capacity,
        };
        emit_write(stdout, stderr, kind, &ep);
        return 0;
    }
    if (get(&a, "json")) {
        print_json(&r);
    } else {
        print_text(&r);
        if (get(&a, "tensors"))
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
    "                       [--micro-batches M] [--schedule gpipe|1f1b] [--sequence-parallel]\n"
    "                       [--checkpoint none|full|selective|sqrt|every:K] [--gpu-mem SIZE]\n"
    "                       [--units GiB|GB] [--tensors] [--json]\n"
    "                       [--emit deepspeed|megatron|fsdp]\n"
    "\n"
    "Memory per GPU and its parts (weights, gradients, master weights, optimizer state,\n"
    "activations), whether it fits, and the communication per GPU per step, each with its\n"
    "formula. Model states follow the ZeRO paper (16 bytes per parameter with mixed-precision\n"
    "AdamW; 18 with --grad-accum fp32); activations follow Korthikanti et al. 2022 for GPT\n"
    "layers and the same bookkeeping for our SwiGLU/RMSNorm layers.\n"
    "\n"
    "  --model NAME|FILE    a model preset (assets/models: synthetic-7b, tiny, small, gpt3-175b,\n"
    "                       llama2-13b, llama2-70b) or an INI file; default synthetic-7b\n"
    "  --params COUNT       a bare parameter count (7.5e9, 7.5B): model states only\n"
    "  --cluster NAME|FILE  a cluster preset (assets/clusters) or an INI file; default h100-80gb\n"
    "  --nodes K            scale the cluster out to K nodes\n"
    "  --gpus N             GPUs in the layout; dp defaults to N / (tp x pp)\n"
    "  --dp, --tp, --pp     data, tensor and pipeline parallel sizes (default 1)\n"
    "  --zero STAGE         ZeRO stage 0 (DDP), 1, 2 or 3 (default 0)\n"
    "  --precision P        fp32, or bf16/fp16 mixed precision (default bf16)\n"
    "  --optimizer O        adamw (default), sgd or sgd-momentum\n"
    "  --grad-accum fp32    keep gradients in fp32 (18 bytes per parameter with AdamW)\n"
    "  --bucket SIZE        ZeRO-2's gradient buckets, two held (default 25MiB, as train's)\n"
    "  --prefetch 0|1       ZeRO-3 gathers the next unit while one computes (default 1): two\n"
    "                       units' weights held at once, or one\n"
    "  --micro-batch B      sequences per micro-batch (default 1)\n"
    "  --seq S              sequence length (default the model's)\n"
    "  --micro-batches M    micro-batches per step (default pp)\n"
    "  --schedule S         pipeline schedule, gpipe or 1f1b (default): how many micro-batches\n"
    "                       the first stage holds (m, or p)\n"
    "  --sequence-parallel  split the norm-region activations over tp too\n"
    "  --checkpoint P       none (default), full, selective, sqrt or every:K\n"
    "  --gpu-mem SIZE       memory per GPU (default the cluster's), e.g. 80GiB\n"
    "  --units U            GiB (default) or GB\n"
    "  --tensors            list the parameter tensors and the activations a layer saves\n"
    "  --json               one JSON document; sizes in bytes (with both lists)\n"
    "  --emit FRAMEWORK     write this layout for deepspeed (ds_config.json; comments on\n"
    "                       standard error), megatron (Megatron-LM's arguments) or fsdp (a\n"
    "                       torchrun line and a PyTorch FSDP snippet), as 'plan --emit' does;\n"
    "                       the global batch is dp x micro-batch x micro-batches\n",
    memory_main,
};
