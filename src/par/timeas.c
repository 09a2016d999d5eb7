/* A run's time scale when it is timed as another model, from the calculator's counts for both
 * models, and the calculator's step for that model (par/timeas.h). */
#include "config.h"
#include "par/timeas.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "calc/activ.h"
#include "calc/memory.h"
#include "calc/params.h"
#include "calc/traffic.h"
#include "model/gpt.h"
#include "par/layout.h"
#include "par/predict.h"

#define GIB 1073741824.0

/* a / b where both count something; 1 where the run has none of it (no such message). */
static double ratio(double a, double b)
{
    return b > 0 ? a / b : 1;
}

/* The bytes of a kind's piece named name (0 if it has none). */
static double piece(const struct traffic_part *t, const char *name)
{
    for (int i = 0; i < t->npieces; i++)
        if (!strcmp(t->piece[i].name, name))
            return t->piece[i].bytes;
    return 0;
}

/* The calculator's configuration of MODEL in the run's layout: the run's (par/predict.h) with
 * flash attention, what MODEL trains with at its sequence length (the calculator's default,
 * Megatron-LM's); the run computes eager attention, whose FLOPs the calculator counts alike. */
static int as_config(const struct train_opts *o, const struct model_shape *as, double capacity,
                     struct memory_config *c, struct error *e)
{
    int rc = predict_config(o, as, capacity, c, e);
    c->attention = ACTIV_FLASH;
    return rc;
}

/* What the run cannot be timed as yet, or MODEL cannot hold: 0 or ERR_INVAL. */
static int refuse(const struct train_opts *o, const struct model_shape *run,
                  const struct model_shape *as, const struct cluster_spec *spec, struct error *e)
{
    if (as->experts || run->experts)
        return error_set(e, ERR_INVAL, "%s: a mixture of experts is not timed as another model yet",
                         as->experts ? as->name : run->name);
    if (o->ep > 1)
        return error_set(e, ERR_INVAL, "%s: expert parallelism is not timed as another model yet",
                         as->name);
    if (train_flash(o) && o->cp == 1) /* its causal block's FLOPs are not eager's the
                                       * calculator counts for MODEL at cp 1 */
        return error_set(e, ERR_INVAL,
                         "%s: the run's flash attention is not timed as another model yet (its "
                         "eager attention is)",
                         as->name);
    if (o->pp > TIME_STAGES)
        return error_set(e, ERR_INVAL, "%s: at most %d pipeline stages are timed", as->name,
                         TIME_STAGES);
    struct memory_config c;
    int rc = as_config(o, as, spec->hbm_bytes, &c, e);
    if (!rc && (rc = memory_check(&c, e)) < 0) {
        error_prefix(e, "%s cannot run this layout", as->name);
        return rc;
    }
    for (int s = 0; !rc && s < o->pp; s++) {
        struct memory_result r;
        if ((rc = memory_compute_stage(&c, s, &r, e)) < 0) {
            error_prefix(e, "%s", as->name);
            return rc;
        }
        if (!r.fits)
            return error_set(e, ERR_INVAL,
                             "%s does not fit this layout: %.2f GiB per GPU%s, over the %.2f GiB "
                             "of a %s GPU",
                             as->name, r.total / GIB, o->pp > 1 ? " on a stage" : "",
                             spec->hbm_bytes / GIB, spec->name);
    }
    return rc;
}

/* The factors of compute: the calculator's FLOPs of a layer of MODEL times its layers over the
 * run's, over the run's layer's (the model's own count); the ends the same; selective
 * recompute's core. */
static int compute_scale(const struct train_opts *o, const struct model_shape *as,
                         const struct memory_config *cm, struct time_scale *t, struct error *e)
{
    struct gpt_config ends = o->shape;
    ends.layers = 0;
    int b = cm->micro_batch, L = o->shape.layers;
    struct gpt_flops whole = gpt_step_flops(&o->shape, b, NULL);
    struct gpt_flops head = gpt_step_flops(&ends, b, NULL);
    double run_layer = (whole.forward - head.forward) / L, run_ends = head.forward;
    double layer, end;
    plan_op_flops(as, params_total(as), b, cm->seq, &layer, &end);
    if (!(run_layer > 0 && run_ends > 0))
        return error_set(e, ERR_INVAL, "%s: the run computes nothing to scale", as->name);
    double per = (double)as->layers / L; /* MODEL's layers a run's layer stands for */
    t->flops[TIME_OP_LAYER] = layer * per / run_layer;
    /* Ring attention charges its blocks apart (model/gpt.h's GPT_ATTN_*), each the FLOPs of
     * the scores the causal mask leaves, so the layer's factor is its linear parts' (2 Ψ_layer
     * b s of MODEL over the run's layer less its attention, 4 b T^2 h), and a block's is the
     * ratio of a sequence's causal scores, 2 b h s (s + 1) FLOPs forward: the calculator's
     * count under context parallelism (plan_attn_flops), over the run's at its own T. Its
     * mean GPU then computes MODEL's mean GPU's FLOPs; one GPU of the naive split its blocks'
     * share, at the run's block size. */
    double T = o->shape.seq, run_attn = 4.0 * b * T * T * o->shape.d;
    if (o->cp > 1) {
        t->flops[TIME_OP_LAYER] =
            (layer - plan_attn_flops(as, b, cm->seq, false)) * per / (run_layer - run_attn);
        t->flops[TIME_OP_ATTN] =
            plan_attn_flops(as, b, cm->seq, true) * per / (2.0 * b * o->shape.d * T * (T + 1));
    }
    t->flops[TIME_OP_ENDS] = end / run_ends;
    /* selective recompute, the attention core alone: the calculator's for MODEL, the model's */
    struct ckpt_policy sel = {CKPT_SELECTIVE, 0};
    struct activ_config ac = {
        .micro_batch = b, .seq = cm->seq, .tp = 1, .bytes = 2, .cp = 1, .attention = cm->attention};
    double core = activ_recompute_flops(as, &ac, &sel, 1, layer) * per;
    double run_core = gpt_step_flops(&o->shape, b, &sel).recompute / L;
    t->flops[TIME_OP_CORE] = ratio(core, run_core);
    return 0;
}

/* Stage s's factors of messages: the calculator's bytes of each kind for MODEL over the run's. */
static int stage_scale(const struct train_opts *o, const struct model_shape *run,
                       const struct model_shape *as, const struct cluster_spec *spec, int s,
                       struct time_msg_scale *msg, struct error *e)
{
    struct memory_config c[2];
    struct memory_result r[2];
    struct traffic t[2];
    const struct model_shape *m[2] = {run, as};
    for (int i = 0; i < 2; i++) {
        int rc = i ? as_config(o, m[i], spec->hbm_bytes, &c[i], e)
                   : predict_config(o, m[i], spec->hbm_bytes, &c[i], e);
        if (!rc)
            rc = memory_compute_stage(&c[i], s, &r[i], e);
        if (!rc)
            rc =
                traffic_compute(&c[i], spec, s, r[i].params_gpu, r[i].stage_layers, 0, 0, &t[i], e);
        if (rc) {
            error_prefix(e, "%s", m[i]->name);
            return rc;
        }
    }
    bool last = s == o->pp - 1;
    const char *end = last ? "head" : "embedding";
    msg[TIME_MSG_PARAMS] =
        (struct time_msg_scale){ratio(t[1].dp.bytes, t[0].dp.bytes), 1, 0, TIME_MSG_PARAMS};
    msg[TIME_MSG_LAYER_ROWS] = (struct time_msg_scale){
        ratio(piece(&t[1].tp, "layers"), piece(&t[0].tp, "layers")),
        ratio(r[1].stage_layers, r[0].stage_layers), 0, TIME_MSG_LAYER_ROWS};
    msg[TIME_MSG_END_ROWS] = (struct time_msg_scale){
        ratio(piece(&t[1].tp, end), piece(&t[0].tp, end)), 1, 0, TIME_MSG_END_ROWS};
    msg[TIME_MSG_TOKENS] = (struct time_msg_scale){
        ratio(piece(&t[1].tp, "loss"), piece(&t[0].tp, "loss")), 1, 0, TIME_MSG_TOKENS};
    msg[TIME_MSG_NORMS] = (struct time_msg_scale){
        ratio(piece(&t[1].tp, "norm_grads"), piece(&t[0].tp, "norm_grads")), 1, 0, TIME_MSG_NORMS};
    msg[TIME_MSG_ACTS] = (struct time_msg_scale){
        ratio(piece(&t[1].pp, "activations"), piece(&t[0].pp, "activations")), 1, 0, TIME_MSG_ACTS};
    msg[TIME_MSG_TIED] = (struct time_msg_scale){
        ratio(piece(&t[1].pp, "tied_embedding"), piece(&t[0].pp, "tied_embedding")), 1, 0,
        TIME_MSG_TIED};
    /* the ring's blocks, b s kv p bytes at MODEL's sequence; a send stands for as many of
     * MODEL's as a layer (3 (C-1) of two blocks a layer, each side) */
    msg[TIME_MSG_RING] =
        (struct time_msg_scale){ratio(t[1].cp.bytes, t[0].cp.bytes),
                                ratio(r[1].stage_layers, r[0].stage_layers), 0, TIME_MSG_RING};
    return 0;
}

int timeas_scale(const struct train_opts *o, const struct model_shape *run,
                 const struct model_shape *as, struct cluster_spec *spec, struct error *e)
{
    struct time_scale t = {0};
    int rc = refuse(o, run, as, spec, e);
    if (rc)
        return rc;
    struct memory_config cm;
    if ((rc = as_config(o, as, spec->hbm_bytes, &cm, e)) || (rc = compute_scale(o, as, &cm, &t, e)))
        return rc;
    for (int s = 0; s < o->pp; s++)
        if ((rc = stage_scale(o, run, as, spec, s, t.msg[s], e)))
            return rc;
    snprintf(t.as, sizeof t.as, "%s", as->name);
    t.efficiency = PLAN_EFFICIENCY;
    spec->time = t;
    return 0;
}

size_t timeas_bucket(const struct cluster_spec *spec, size_t bucket_bytes, size_t es)
{
    double f = time_msg(&spec->time, 0, TIME_MSG_PARAMS).bytes;
    double b = f > 0 ? round((double)bucket_bytes / f / (double)es) * (double)es : 0;
    return b >= (double)es ? (size_t)b : es;
}

int timeas_predict(const struct train_opts *o, const struct model_shape *as,
                   const struct cluster_spec *spec, struct plan_layout *out, struct error *e)
{
    struct memory_config mc;
    struct memory_result mr;
    int rc = as_config(o, as, spec->hbm_bytes, &mc, e);
    if (rc || (rc = memory_compute(&mc, &mr, e)) < 0)
        return rc;
    return plan_step(&mc, &mr, spec, out, e);
}
