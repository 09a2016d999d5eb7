/* The trainer's step in phases on one GPU of a data-parallel group: the batch share,
 * forward and backward, gradient sync, unscale, agreement, clipping, skip or update,
 * parameter sync; the spike detector (par/trainer.h). */
#include "config.h"
#include "par/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/rng.h"
#include "model/markov.h"
#include "num/adamw.h"
#include "num/clip.h"
#include "num/fp.h"
#include "num/scaler.h"
#include "par/cp.h"
#include "par/dp.h"
#include "par/ep.h"
#include "par/pp.h"
#include "par/strategies.h"
#include "par/tp.h"
#include "sim/cluster.h"

/* A strategy at work on this GPU: its face and its instance. */
struct instance {
    const struct strategy *s;
    void *self;
};

struct trainer {
    struct train_opts o;
    int v;                           /* model chunks: 1, or the interleaved schedule's */
    struct gpt *g[SCHED_MAX_CHUNKS]; /* chunk c's model part and its strategy */
    struct dp *dp[SCHED_MAX_CHUNKS];
    int observing;       /* the chunk of the observer's call (trainer_whole_index) */
    uint64_t *underflow; /* L + 1: the chunks' counts added up */
    struct device *d;    /* NULL on the host */
    int rank;
    struct layout_place pl; /* chunk 0's part */
    struct gpt_part part[SCHED_MAX_CHUNKS];
    struct sched sched; /* pipelined: the schedule the stages run */
    struct pp *pp;      /* pipelined: this stage's executor */
    struct markov *data;
    struct rng rng;
    struct adamw adam;
    struct scaler scaler;
    int32_t *tokens, *targets; /* the global batch; this GPU computes rows [rank B/N, ...) */
    long step;
    double *window; /* the last spike_window losses (a ring) */
    int nwin, iwin, outliers_in_a_row;
    train_observer observe;
    void *observe_ctx;
    struct gpt_alloc alloc; /* the caller's seam */
    size_t extra[GPT_MEM_KINDS];
    long poisoned_at;     /* the step whose update made the weights non-finite (0: none) */
    char poisoned_by[48]; /* the first non-finite tensor of that step */
    struct tp_group *tp;  /* tensor parallelism's communication (NULL: one GPU per layer) */
    struct cp_ring *cp;   /* context parallelism's ring (NULL: one GPU per sequence) */
    struct ep_group *ep;  /* expert parallelism's all-to-alls (NULL: every expert here) */
    bool in_layer;        /* the model is inside a layer (its hooks say), not at the ends */
    /* every strategy at work here, each chunk's data parallelism apart, in the order their
     * failures are said */
    struct instance inst[SCHED_MAX_CHUNKS + STRATEGIES];
    int ninst;
};

static void *tmalloc(struct trainer *t, enum gpt_mem kind, size_t bytes, const char *what)
{
    void *p = t->alloc.alloc(t->alloc.ctx, kind, bytes, what);
    if (p)
        t->extra[kind] += bytes;
    return p;
}

static size_t batch_bytes(const struct train_opts *o)
{
    return 2 * (size_t)o->batch * (size_t)o->shape.seq * sizeof(int32_t);
}

void trainer_count(const struct train_opts *o, const struct layout_place *pl,
                   struct strategy_count *c)
{
    struct gpt_calls g = layout_calls(o, pl);
    struct gpt_alloc seam = {0};
    dp_model_seam(o, NULL, &seam);
    /* the model parts' (weights, gradients, arena, workspace: fewer when its fp32 weights and
     * gradients are workspace), the batch, and the whole model's initial weights drawn on
     * the side when the GPU holds a part of them */
    c->buffers += layout_chunks(o) * (GPT_BUFFERS - seam.params_workspace - seam.grads_workspace);
    c->buffers += 1 + (layout_pipelined(o) || pl->tp > 1 || pl->ep > 1);
    c->computes += g.compute, c->charges += g.charge;
    strategies_count(o, pl, c);
}

/* The model's seam: the caller's, with the strategy's hook points. */
static void *w_alloc(void *ctx, enum gpt_mem kind, size_t bytes, const char *what)
{
    struct trainer *t = ctx;
    return t->alloc.alloc(t->alloc.ctx, kind, bytes, what);
}

static void w_free(void *ctx, enum gpt_mem kind, void *p, size_t bytes)
{
    struct trainer *t = ctx;
    t->alloc.free(t->alloc.ctx, kind, p, bytes);
}

static void w_charge(void *ctx, enum gpt_mem kind, long long delta)
{
    struct trainer *t = ctx;
    if (t->alloc.charge)
        t->alloc.charge(t->alloc.ctx, kind, delta);
}

/* The model's operations are charged what they stand for when the run is timed as another
 * model (sim/spec.h): a layer's, the ends' (layer -1), selective recompute's attention core
 * (a layer's "recompute" under the selective policy), or a block of ring attention (model/gpt.h
 * names them). */
static void w_compute(void *ctx, double flops, const char *what, int layer)
{
    struct trainer *t = ctx;
    if (t->d) {
        const struct cluster_spec *spec = dev_spec(t->d);
        enum time_op op =
            layer < 0                                                             ? TIME_OP_ENDS
            : t->o.ckpt.kind == CKPT_SELECTIVE && !strcmp(what, "recompute")      ? TIME_OP_CORE
            : !strcmp(what, GPT_ATTN_FORWARD) || !strcmp(what, GPT_ATTN_BACKWARD) ? TIME_OP_ATTN
                                                                                  : TIME_OP_LAYER;
        flops = time_flops(&spec->time, op, flops);
        if (t->dp[0])
            dp_add_compute(t->dp[0], spec_compute_time(spec, flops));
    }
    if (t->alloc.compute)
        t->alloc.compute(t->alloc.ctx, flops, what, layer);
}

/* This GPU's messages timed as kind k (sim/spec.h's time_msg); the scale before, to put back. */
static struct time_msg_scale timed(struct trainer *t, enum time_msg k)
{
    if (!t->d)
        return (struct time_msg_scale){1, 1, 0, k};
    return dev_time_msgs(t->d, time_msg(&dev_spec(t->d)->time, t->pl.stage, k));
}

static void untimed(struct trainer *t, struct time_msg_scale was)
{
    if (t->d)
        dev_time_msgs(t->d, was);
}

/* Tensor parallelism: the model's reductions over this GPU's group (par/tp.h): a layer's rows,
 * the ends' rows, or the cross-entropy's fp32 numbers per token. */
static void w_tp_reduce(void *ctx, float *buf, size_t n, enum gpt_tp_op op, const char *what)
{
    struct trainer *t = ctx;
    enum time_msg k = op == GPT_TP_SUM_FP32 || op == GPT_TP_MAX_FP32 ? TIME_MSG_TOKENS
                      : t->in_layer                                  ? TIME_MSG_LAYER_ROWS
                                                                     : TIME_MSG_END_ROWS;
    struct time_msg_scale was = timed(t, k);
    tp_collective(t->tp, buf, n, op, what);
    untimed(t, was);
}

/* Expert parallelism: the experts' all-to-alls over this GPU's group (par/ep.h). */
static void w_ep_alltoallv(void *ctx, const float *send, const size_t *sendcounts, float *recv,
                           const size_t *recvcounts, const char *what)
{
    struct trainer *t = ctx;
    ep_alltoallv(t->ep, send, sendcounts, recv, recvcounts, what);
}

static void w_ep_counts(void *ctx, const int32_t *send, int32_t *recv, size_t n, const char *what)
{
    struct trainer *t = ctx;
    ep_counts(t->ep, send, recv, n, what);
}

/* Context parallelism: the attention's ring steps over this GPU's group (par/cp.h), timed as
 * the blocks of K and V (or their gradients) they stand for. */
static void w_cp_post(void *ctx, const float *send, size_t n, const char *what)
{
    struct trainer *t = ctx;
    struct time_msg_scale was = timed(t, TIME_MSG_RING);
    cp_post(t->cp, send, n, what);
    untimed(t, was);
}

static void w_cp_wait(void *ctx, float *recv, size_t n)
{
    struct trainer *t = ctx;
    cp_wait(t->cp, recv, n);
}

static void w_hook(void *ctx, enum gpt_hook h, int unit)
{
    struct trainer *t = ctx;
    /* a layer runs from its FORWARD or BACKWARD to its FORWARD_DONE or GRADS (model/gpt.h) */
    if (h == GPT_HOOK_FORWARD || h == GPT_HOOK_BACKWARD)
        t->in_layer = unit >= 0;
    else
        t->in_layer = false;
    if (t->dp[0] && t->v == 1)
        dp_hook(t->dp[0], h, unit);
}

void trainer_free(struct trainer *t)
{
    if (!t)
        return;
    if (t->tokens)
        t->alloc.free(t->alloc.ctx, GPT_MEM_WORKSPACE, t->tokens, batch_bytes(&t->o));
    pp_free(t->pp);
    sched_free(&t->sched);
    tp_free(t->tp);
    cp_free(t->cp);
    ep_free(t->ep);
    for (int c = 0; c < SCHED_MAX_CHUNKS; c++) {
        dp_free(t->dp[c]);
        gpt_free(t->g[c]);
    }
    free(t->underflow);
    markov_free(t->data);
    free(t->window);
    free(t);
}

/* Where element i of this GPU's flat buffer sits in the whole model's (model/gpt.h's order:
 * the embedding, the layers, the final norm); SIZE_MAX for the padding. */
/* The initial weights: the whole model's, drawn as on one GPU, cut to this GPU's parts. */
static int load_part(struct trainer *t, struct error *e)
{
    if (!layout_pipelined(&t->o) && t->pl.tp == 1 && t->pl.ep == 1) {
        float *mine = gpt_params(t->g[0]);
        gpt_init_params(&t->o.shape, t->o.seed, mine);
        dp_load_weights(t->dp[0], mine);
        return 0;
    }
    size_t n = gpt_param_count(&t->o.shape), bytes = n * sizeof(float);
    float *all = t->alloc.alloc(t->alloc.ctx, GPT_MEM_WORKSPACE, bytes, "initial weights");
    if (!all)
        return error_set(e, ERR_NOMEM, "out of memory drawing the initial weights");
    gpt_init_params(&t->o.shape, t->o.seed, all);
    for (int c = 0; c < t->v; c++) {
        float *mine = gpt_params(t->g[c]);
        gpt_part_gather(&t->o.shape, &t->part[c], all, mine);
        dp_load_weights(t->dp[c], mine);
    }
    t->alloc.free(t->alloc.ctx, GPT_MEM_WORKSPACE, all, bytes);
    return 0;
}

/* A strategy at work here (self NULL: it has nothing to do on this GPU). */
static void at_work(struct trainer *t, const struct strategy *s, void *self)
{
    if (self)
        t->inst[t->ninst++] = (struct instance){s, self};
}

int trainer_new_on(struct trainer **out, const struct train_opts *o, const struct gpt_alloc *alloc,
                   struct device *d, struct error *e)
{
    *out = NULL;
    int rc = 0, n = d ? dev_count(d) : 1;
    if (o->gpus != n)
        return error_set(e, ERR_INVAL, "the trainer is set for %d GPUs, the cluster has %d",
                         o->gpus, n);
    struct trainer *t = calloc(1, sizeof *t);
    if (!t)
        return error_set(e, ERR_NOMEM, "out of memory");
    t->o = *o;
    t->d = d;
    t->rank = d ? dev_rank(d) : 0;
    if (alloc)
        t->alloc = *alloc;
    if (!t->alloc.alloc)
        t->alloc.alloc = gpt_host_alloc, t->alloc.free = gpt_host_free;
    struct gpt_alloc seam = {.alloc = w_alloc,
                             .free = w_free,
                             .charge = w_charge,
                             .compute = w_compute,
                             .hook = w_hook,
                             .tp_reduce = w_tp_reduce,
                             .cp_post = w_cp_post,
                             .cp_wait = w_cp_wait,
                             .ep_alltoallv = w_ep_alltoallv,
                             .ep_counts = w_ep_counts,
                             .ctx = t};
    t->v = layout_chunks(o);
    if (layout_pipelined(o) && /* the schedule the stages run */
        (rc = sched_build(o->schedule, o->pp, o->micro_batches, t->v, &t->sched, e)))
        goto fail;
    layout_place(o, t->rank, 1, &t->pl);
    struct dp_mem mem = {w_alloc, w_free, w_charge, t};
    if ((rc = tp_new(&t->tp, o, &t->pl, d, &mem, e)) ||
        (rc = cp_new(&t->cp, o, &t->pl, d, &mem, e)) ||
        (rc = ep_new(&t->ep, o, &t->pl, d, &mem, e)))
        goto fail;
    for (int c = 0; c < t->v; c++) {
        /* each chunk's part, a slot per micro-batch it holds at once */
        int slots = layout_pipelined(o) ? pp_slots(&t->sched, t->pl.stage, c) : 1;
        layout_chunk_part(o, &t->pl, c, slots, &t->part[c]);
        /* and one per micro-batch between its B and its W, when they run apart */
        t->part[c].wslots = layout_pipelined(o) ? sched_wslots(&t->sched, t->pl.stage, c) : 0;
        struct layout_place pl = t->pl;
        pl.part = t->part[c];
        dp_model_seam(o, &pl.part, &seam);
        struct gpt_config shape = o->shape;
        shape.fp8 = train_fp8(o); /* how its linear layers train, beside the shape */
        rc = gpt_new_part(&t->g[c], &shape, pl.micro, o->precision, &o->ckpt, &seam, &pl.part, e);
        if (rc)
            goto fail;
        /* the gradients of the global batch's mean: each share's add up to them */
        gpt_set_loss_tokens(t->g[c], (double)o->batch * o->shape.seq);
        if ((rc = dp_new(&t->dp[c], o, t->g[c], d, &pl, &mem, e)))
            goto fail;
        at_work(t, &dp_strategy, t->dp[c]);
    }
    at_work(t, &tp_strategy, t->tp);
    at_work(t, &cp_strategy, t->cp);
    at_work(t, &ep_strategy, t->ep);
    t->pl.part = t->part[0];
    t->underflow = calloc((size_t)o->shape.layers + 1, sizeof *t->underflow);
    if (!t->underflow) {
        rc = error_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (layout_pipelined(o) &&
        (rc = pp_new(&t->pp, &t->pl, &t->sched, t->g, t->part, o->precision, d, &mem, e)))
        goto fail;
    at_work(t, &pp_strategy, t->pp);
    rc = markov_new(&t->data, o->shape.vocab, o->seed, e);
    if (rc)
        goto fail;
    size_t bt = (size_t)o->batch * o->shape.seq;
    /* the global batch, tokens then targets: on a GPU it is copied to the device each step */
    if ((t->tokens = tmalloc(t, GPT_MEM_WORKSPACE, batch_bytes(o), "batch")))
        t->targets = t->tokens + bt;
    t->window = calloc((size_t)o->spike_window, sizeof *t->window);
    if (!t->tokens || !t->window) {
        rc = error_set(e, ERR_NOMEM, "out of memory allocating the trainer's buffers");
        goto fail;
    }
    /* every GPU draws the same initial weights and keeps its part */
    if ((rc = load_part(t, e)))
        goto fail;
    rng_seed(&t->rng, o->seed, 0x64617461);
    adamw_init(&t->adam, o->lr, o->beta1, o->beta2, o->eps, o->wd);
    if (o->scaling == TRAIN_SCALE_DYNAMIC)
        scaler_init(&t->scaler, (float)o->scale, o->growth_interval, o->hysteresis);
    else
        scaler_init_static(&t->scaler, o->scaling == TRAIN_SCALE_STATIC ? (float)o->scale : 1.0f);
    *out = t;
    return 0;
fail:
    trainer_free(t);
    return rc;
}

int trainer_new(struct trainer **out, const struct train_opts *o, const struct gpt_alloc *alloc,
                struct error *e)
{
    int rc = train_opts_check(o, e);
    if (rc)
        return rc;
    return trainer_new_on(out, o, alloc, NULL, e);
}

void trainer_observe(struct trainer *t, train_observer fn, void *ctx)
{
    t->observe = fn;
    t->observe_ctx = ctx;
}

/* The z-score of a loss within the window of recent losses: llm.c's OutlierDetector
 * (llmc/outlier_detector.h; train_gpt2.cu skips the update when the loss z-score exceeds -sl).
 * NaN until the window is full; then the new loss replaces the oldest and z is computed over
 * the window including it (so z <= sqrt(window - 1)). An outlier is taken back out of the
 * window, so that it does not make the detector less picky, except on the third outlier in a
 * row, which stays, so the detector cannot get stuck. */
static double spike_zscore(struct trainer *t, double loss)
{
    int w = t->o.spike_window;
    if (t->nwin < w) {
        t->window[t->nwin++] = loss;
        t->outliers_in_a_row = 0;
        return NAN;
    }
    double old = t->window[t->iwin];
    t->window[t->iwin] = loss;
    double s = 0, ss = 0;
    for (int i = 0; i < w; i++)
        s += t->window[i], ss += t->window[i] * t->window[i];
    double mean = s / w, sd = sqrt(fmax(ss / w - mean * mean, 0.0));
    if (sd == 0.0) {
        t->iwin = (t->iwin + 1) % w;
        return 0.0;
    }
    double z = (loss - mean) / sd;
    if (z > t->o.spike_z && ++t->outliers_in_a_row < 3)
        t->window[t->iwin] = old; /* as if it never happened */
    else {
        if (!(z > t->o.spike_z))
            t->outliers_in_a_row = 0;
        t->iwin = (t->iwin + 1) % w;
    }
    return z;
}

/* This GPU's injections of this step. */
static struct gpt_inject injections(const struct trainer *t, long step)
{
    const struct train_opts *o = &t->o;
    struct gpt_inject inj = {-1, -1, 1.0f};
    for (int i = 0; i < o->ninject; i++) {
        const struct train_inject *x = &o->inject[i];
        /* on the GPUs of the injection GPU's data-parallel rank: each stage does what its
         * part holds (the NaN in the middle layer, the inf in the last, the spike at the head) */
        if (x->step != step || x->gpu / (t->pl.tp * t->pl.cp) % t->pl.dp != t->pl.dprank)
            continue;
        if (x->kind == TRAIN_INJECT_NAN)
            inj.nan_scores_layer = o->shape.layers / 2;
        else if (x->kind == TRAIN_INJECT_INF)
            inj.inf_grad_layer = o->shape.layers - 1;
        else
            inj.logit_factor *= (float)x->factor;
    }
    return inj;
}

/* The step's diagnosis over the chunks: the first non-finite tensor in the order computed
 * (forward passes by ascending chunk, backward passes by descending), the underflow counts
 * added up. */
static void diagnose(struct trainer *t, struct gpt_diag *out)
{
    int L = t->o.shape.layers, best = -1, key = 0;
    memset(t->underflow, 0, ((size_t)L + 1) * sizeof *t->underflow);
    uint64_t total = 0, elems = 0;
    struct gpt_diag d;
    for (int c = 0; c < t->v; c++) {
        gpt_diag(t->g[c], &d);
        for (int l = 0; l <= L; l++)
            t->underflow[l] += d.underflow[l];
        total += d.underflow_total, elems += d.grad_elements;
        int k = d.nonfinite_forward ? c : 2 * t->v - c;
        if (d.nonfinite[0] && (best < 0 || k < key))
            best = c, key = k, *out = d;
    }
    if (best < 0)
        *out = d, out->nonfinite[0] = 0, out->nonfinite_forward = false;
    out->underflow = t->underflow;
    out->underflow_total = total, out->grad_elements = elems;
}

double train_expert_imbalance(const uint32_t *load, int experts)
{
    double sum = 0, most = 0;
    for (int i = 0; i < experts; i++)
        sum += load[i], most = load[i] > most ? load[i] : most;
    return sum > 0 ? most / (sum / experts) : 0;
}

/* The routing's figures of the step (model/gpt.h's diagnosis). */
static void describe_experts(const struct trainer *t, const struct gpt_diag *d,
                             struct train_step *out)
{
    const struct gpt_moe *m = &t->o.shape.moe;
    int layers = gpt_moe_layers(&t->o.shape);
    out->aux_loss = d->aux_loss, out->routed = d->routed, out->dropped = d->dropped;
    out->aux_layers = layers;
    out->expert_imbalance = 0;
    memset(out->expert_load, 0, sizeof out->expert_load);
    memset(out->expert_kept, 0, sizeof out->expert_kept);
    if (!layers || !d->expert_load || !d->routed)
        return;
    for (int i = 0; i < layers * m->experts; i++) {
        out->expert_load[i % m->experts] += (uint32_t)d->expert_load[i];
        out->expert_kept[i % m->experts] += (uint32_t)d->expert_kept[i];
    }
    out->expert_imbalance = train_expert_imbalance(out->expert_load, m->experts);
}

/* 1-3. The global batch and this GPU's share; forward and backward (the strategy reduces
 * buckets as they complete; pipelined, micro-batch by micro-batch in the schedule's order),
 * then the rest of the gradient sync. *local: this GPU's loss (NaN off the last stage). */
static int forward_backward(struct trainer *t, long step, double *local, struct error *e)
{
    const struct train_opts *o = &t->o;
    struct gpt_inject inj = injections(t, step);
    markov_batch(t->data, &t->rng, o->batch, o->shape.seq, t->tokens, t->targets);
    size_t share = (size_t)(o->batch / t->pl.dp) * o->shape.seq;
    size_t first = (size_t)t->pl.dprank * share;
    const int32_t *tok = t->tokens + first, *tgt = t->targets + first;
    if (t->cp) /* this GPU's tokens of each of its sequences */
        cp_share(t->cp, o->batch / t->pl.dp, &tok, &tgt);
    int rc;
    if (t->pp) {
        if ((rc = pp_step(t->pp, (int)step, tok, tgt, t->scaler.scale, &inj, local, e)))
            return rc;
    } else
        *local = gpt_step(t->g[0], tok, tgt, t->scaler.scale, &inj);
    for (int i = 0; i < t->ninst; i++)
        if (t->inst[i].s->failed && (rc = t->inst[i].s->failed(t->inst[i].self, e)))
            return rc;
    struct time_msg_scale was = timed(t, TIME_MSG_NORMS);
    rc = tp_norm_sync(t->tp, t->g, t->part, t->v, e);
    untimed(t, was);
    if (rc)
        return rc;
    if (t->d && o->fail_gpu == t->rank && o->fail_step == step)
        return dev_fail(t->d, e, "failed in step %ld's gradient sync (--fail %d@%ld)", step,
                        t->rank, step);
    if (t->v == 2) /* zbv: both ends of the tied embedding on this GPU */
        dp_tie(t->dp[0], t->dp[1]);
    for (int c = 0; c < t->v; c++)
        if ((rc = dp_grad_sync(t->dp[c], e)))
            return rc;
    return 0;
}

/* The step's gradients: each chunk's range, unscaled (grads[c], n[c] elements). */
struct step_grads {
    float *grads[SCHED_MAX_CHUNKS];
    size_t off[SCHED_MAX_CHUNKS], n[SCHED_MAX_CHUNKS];
    double sumsq;      /* global */
    bool found_inf;    /* any GPU's, as they agreed */
    bool overflow_own; /* this GPU's own range (or loss), before the agreement */
};

/* 4-5. Unscales this GPU's ranges, then agrees with the others on the loss, the norm and
 * inf/NaN (the last chunk's strategy speaks for the GPU: it holds the loss on the last stage);
 * the observer sees them. */
static int unscale_agree(struct trainer *t, long step, double local, struct step_grads *sg,
                         double *loss, struct error *e)
{
    bool found_local = false;
    double sumsq_local = 0;
    int v = t->v;
    for (int c = 0; c < v; c++) {
        bool f;
        double ss;
        sg->grads[c] = dp_unscale(t->dp[c], scaler_inv_scale(&t->scaler), &f, &ss);
        found_local |= f, sumsq_local += ss;
        dp_range(t->dp[c], &sg->off[c], &sg->n[c]);
    }
    bool bad_loss = t->part[v - 1].head && !isfinite(local);
    sg->overflow_own = found_local || bad_loss;
    int rc = dp_agree(t->dp[v - 1], local, sumsq_local, found_local || bad_loss, loss, &sg->sumsq,
                      &sg->found_inf, e);
    if (rc)
        return rc;
    for (int c = 0; c < v && t->observe; c++) {
        t->observing = c;
        t->observe(t->observe_ctx, t, step, t->tokens, t->targets, *loss, sg->grads[c], sg->off[c],
                   sg->n[c]);
    }
    t->observing = 0;
    return 0;
}

/* 6-7. Clips by the global norm, then skips or updates (the working weights follow; ZeRO-1/2
 * all-gather them), and the scaler moves on. */
static int clip_update(struct trainer *t, long step, const struct step_grads *sg,
                       const struct gpt_diag *d, struct train_step *out, struct error *e)
{
    const struct train_opts *o = &t->o;
    out->grad_sumsq = sg->sumsq;
    out->grad_norm = (float)sqrt(sg->sumsq);
    out->clip_coef = o->clip > 0 ? clip_coef(out->grad_norm, (float)o->clip) : 1.0f;
    if (isfinite(out->loss)) {
        out->zscore = spike_zscore(t, out->loss);
        out->spike = out->zscore > o->spike_z;
    } else
        out->zscore = NAN;
    out->overflow = sg->found_inf;
    out->overflow_own = sg->overflow_own;
    /* A scaler, dynamic or constant, skips a non-finite step; without one nothing looks. */
    bool skip_inf = sg->found_inf && o->scaling != TRAIN_SCALE_NONE;
    out->skipped = skip_inf || (o->skip_spikes && out->spike);
    if (!out->skipped) {
        adamw_advance(&t->adam);
        for (int c = 0; c < t->v; c++) {
            /* with the working weights following; ZeRO-1/2 all-gather them */
            int rc = dp_update(t->dp[c], &t->adam, sg->grads[c], out->clip_coef, e);
            if (rc)
                return rc;
        }
        /* AdamW turns inf/NaN gradients into NaN weights (inf / sqrt(inf) is NaN) */
        if (sg->found_inf && !t->poisoned_at) {
            t->poisoned_at = step;
            snprintf(t->poisoned_by, sizeof t->poisoned_by, "%s", d->nonfinite);
        }
    }
    out->weights_nonfinite_since = t->poisoned_at;
    scaler_update(&t->scaler, sg->found_inf);
    out->next_scale = t->scaler.scale;
    return 0;
}

/* What the step says of itself beyond its verdict: the diagnosis, the memory and the bytes
 * sent by kind, its compute and its end in simulated time. */
static void describe(const struct trainer *t, const struct gpt_diag *d, struct train_step *out)
{
    memcpy(out->nonfinite, d->nonfinite, sizeof out->nonfinite);
    out->nonfinite_forward = d->nonfinite_forward;
    describe_experts(t, d, out);
    out->underflow = d->underflow;
    out->underflow_frac = (double)d->underflow_total / (double)d->grad_elements;
    for (int c = 0; c < t->v; c++)
        out->act_peak_bytes += gpt_mem_bytes(t->g[c], GPT_MEM_ACTIVATIONS);
    for (int i = 0; i < t->ninst; i++)
        t->inst[i].s->sent(t->inst[i].self, &out->sent);
    for (int c = 0; c < t->v; c++)
        out->ring_scores += gpt_ring_scores(t->g[c]);
    for (int c = 0; c < t->v; c++)
        gpt_fp8_stats(t->g[c], out->fp8);
    ep_rows(t->ep, &out->ep_rows_out, &out->ep_rows_in, &out->ep_rows_held);
    int ml = gpt_moe_layers(&t->o.shape);
    if (t->ep && d->expert_rows_at_peak) /* the first chunk's: expert parallelism has one */
        memcpy(out->ep_rows_kept, d->expert_rows_at_peak,
               (size_t)(ml < TRAIN_MAX_EXPERT_LAYERS ? ml : TRAIN_MAX_EXPERT_LAYERS) *
                   sizeof *out->ep_rows_kept);
    out->compute_s = dp_compute_s(t->dp[0]);
    out->sim_end_s = t->d ? dev_now(t->d) : 0;
    out->compute_end_s = t->d ? dev_compute_end(t->d) : 0;
    if (t->d) { /* since the step began (trainer_run_step put the counts before it in out) */
        double w[TIME_MSGS], p[TIME_MSGS];
        dev_waited(t->d, w, p);
        for (int k = 0; k < TIME_MSGS; k++)
            out->waited[k] = w[k] - out->waited[k],
            out->waited_peer[k] = p[k] - out->waited_peer[k];
    }
}

int trainer_run_step(struct trainer *t, struct train_step *out, struct error *e)
{
    long step = ++t->step;
    memset(out, 0, sizeof *out);
    out->step = step;
    out->loss_scale = t->scaler.scale;
    out->sim_start_s = t->d ? dev_now(t->d) : 0;
    if (t->d)
        dev_waited(t->d, out->waited, out->waited_peer);
    for (int i = 0; i < t->ninst; i++)
        if (t->inst[i].s->step_begin)
            t->inst[i].s->step_begin(t->inst[i].self);
    double local;
    struct step_grads sg;
    struct gpt_diag d;
    int rc;
    if ((rc = forward_backward(t, step, &local, e)) ||
        (rc = unscale_agree(t, step, local, &sg, &out->loss, e)))
        return rc;
    diagnose(t, &d);
    if ((rc = clip_update(t, step, &sg, &d, out, e)))
        return rc;
    describe(t, &d, out);
    return 0;
}

void trainer_step(struct trainer *t, struct train_step *out)
{
    struct error e = {0};
    trainer_run_step(t, out, &e);
}

void trainer_inject_gpu(struct trainer *t, enum train_inject_kind kind, double factor, int gpu)
{
    int n = 0; /* drop the injections already done */
    for (int i = 0; i < t->o.ninject; i++)
        if (t->o.inject[i].step > t->step)
            t->o.inject[n++] = t->o.inject[i];
    t->o.ninject = n;
    if (t->o.ninject < TRAIN_MAX_INJECT && gpu >= 0 && gpu < t->o.gpus)
        t->o.inject[t->o.ninject++] = (struct train_inject){kind, t->step + 1, factor, gpu};
}

void trainer_inject(struct trainer *t, enum train_inject_kind kind, double factor)
{
    trainer_inject_gpu(t, kind, factor, 0);
}

void trainer_set_clip(struct trainer *t, double clip)
{
    t->o.clip = clip > 0 && isfinite(clip) ? clip : 0;
}

void trainer_set_lr(struct trainer *t, double lr)
{
    if (lr >= 0 && isfinite(lr))
        t->o.lr = t->adam.lr = lr;
}

long trainer_steps_done(const struct trainer *t)
{
    return t->step;
}

double trainer_loss_floor(const struct trainer *t)
{
    return markov_entropy(t->data);
}

struct gpt *trainer_model(const struct trainer *t)
{
    return t->g[0];
}

const float *trainer_master(const struct trainer *t)
{
    return dp_master(t->dp[0]);
}

void trainer_range(const struct trainer *t, size_t *off, size_t *n)
{
    dp_range(t->dp[0], off, n);
}

const struct train_opts *trainer_opts(const struct trainer *t)
{
    return &t->o;
}

long trainer_adam_steps(const struct trainer *t)
{
    return t->adam.step;
}

const float *trainer_moments(const struct trainer *t, int which)
{
    return dp_moment(t->dp[0], which);
}

long trainer_poisoned(const struct trainer *t, const char **tensor)
{
    if (tensor)
        *tensor = t->poisoned_by;
    return t->poisoned_at;
}

size_t trainer_mem_bytes(const struct trainer *t, enum gpt_mem kind)
{
    size_t sum = t->extra[kind];
    for (int c = 0; c < t->v; c++)
        sum += gpt_mem_bytes(t->g[c], kind);
    for (int i = 0; i < t->ninst; i++)
        sum += t->inst[i].s->mem_bytes(t->inst[i].self, kind);
    return sum;
}

const struct layout_place *trainer_place(const struct trainer *t)
{
    return &t->pl;
}

size_t trainer_whole_index(const struct trainer *t, size_t i)
{
    /* the last stage's copy of the tied embedding is the first stage's */
    const struct gpt_part *pt = &t->part[t->observing];
    const struct gpt_config *c = &t->o.shape;
    if (t->pl.pp > 1 && !pt->embed && pt->head && i < (size_t)(c->vocab / t->pl.tp) * c->d)
        return SIZE_MAX;
    i = dp_flat_index(t->dp[t->observing], i); /* ZeRO-1 with ep: a packed range */
    size_t w = i == SIZE_MAX ? SIZE_MAX : gpt_part_whole_index(c, pt, i);
    if (t->pl.tprank > 0 && w != SIZE_MAX) { /* the norms, whole on every rank, are rank 0's */
        enum gpt_kind k = gpt_kind_at(c, w);
        if (k == GPT_ATTN_NORM || k == GPT_MLP_NORM || k == GPT_FINAL_NORM)
            return SIZE_MAX;
    }
    return w;
}

const struct pp_done *trainer_pipeline(const struct trainer *t, int *n, int *peak)
{
    *n = 0, *peak = 1;
    if (!t->pp)
        return NULL;
    *peak = pp_peak_in_flight(t->pp);
    return pp_ops(t->pp, n);
}
