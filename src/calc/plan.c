/* The planner: every dp x tp x pp layout of a model on a cluster, whether it fits, and its
 * predicted step time (calc/plan.h). */
#include "config.h"
#include "calc/plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "calc/params.h"
#include "calc/sched.h"
#include "sim/spec.h"

#define GIB 1073741824.0

double plan_model_flops(const struct model_shape *m, double params, double tokens, int seq)
{
    return 6 * params * tokens + 12.0 * m->layers * m->d_model * (double)seq * tokens;
}

void plan_op_flops(const struct model_shape *m, double params, int b, int s, double *layer,
                   double *ends)
{
    struct params_breakdown pb;
    params_count(m, &pb);
    double bd = b, sd = s;
    *layer = 2 * pb.per_layer * bd * sd + 4 * bd * sd * sd * m->d_model;
    *ends = 2 * (params - m->layers * pb.per_layer) * bd * sd;
}

double plan_attn_flops(const struct model_shape *m, int b, int s, bool causal)
{
    double bd = b, sd = s;
    return causal ? 2 * bd * m->d_model * sd * (sd + 1) : 4 * bd * sd * sd * m->d_model;
}

/* The pipeline's stage imbalance (calc/plan.h): each stage's work per micro-batch, its
 * layers' (forward, backward, recompute) and its ends', the head's on the last stage (with a
 * tied embedding the head's matmul is that embedding's) and an untied embedding's on the
 * first, against the mean stage's. */
static double stage_imbalance(const struct model_shape *m, const struct memory_config *mc,
                              double layer_fwd, double recompute_layer, double compute_s)
{
    if (mc->pp <= 1 || mc->micro_batches <= 1)
        return 0;
    struct params_breakdown pb;
    params_count(m, &pb);
    double bs = (double)mc->micro_batch * mc->seq, layer = 3 * layer_fwd + recompute_layer;
    double head = 3 * 2 * (m->tied ? pb.first + pb.last : pb.last) * bs;
    double embed = 3 * 2 * (m->tied ? 0 : pb.first) * bs;
    double most = 0, total = m->layers * layer + head + embed;
    for (int s = 0; s < mc->pp; s++) {
        int first, count;
        params_stage_layers(m->layers, s, mc->pp, &first, &count);
        double w = count * layer + (s == mc->pp - 1 ? head : 0) + (s == 0 ? embed : 0);
        most = w > most ? w : most;
    }
    return (mc->micro_batches - 1.0) / mc->micro_batches * compute_s * (most * mc->pp / total - 1);
}

int plan_time(const struct plan_config *pc, const struct memory_config *mc,
              const struct memory_result *mr, struct plan_layout *l, struct error *e)
{
    const struct model_shape *m = pc->model;
    const struct cluster_spec *cl = pc->cluster;
    double gpus = (double)mc->dp * mc->tp * mc->pp * (mc->cp > 1 ? mc->cp : 1);
    double tokens = (double)pc->global_batch * mc->seq;
    /* a mixture of experts computes with the parameters a token uses (calc/params.h) */
    double model =
        plan_model_flops(m, m->experts > 0 ? params_active(m) : mr->params, tokens, mc->seq);

    /* Recompute, per micro-batch of the whole model (tp = 1), times the micro-batches of the
     * global batch. */
    double layer_fwd, ends_fwd;
    plan_op_flops(m, mr->params, mc->micro_batch, mc->seq, &layer_fwd, &ends_fwd);
    /* Under context parallelism the attention is the ring's, whose blocks compute the scores
     * the causal mask leaves (model/ringattn.h), about half of the square the model's FLOPs
     * count: the GPUs compute that much less (MFU keeps the convention). */
    double causal = 0;
    if (mc->cp > 1) {
        causal = plan_attn_flops(m, mc->micro_batch, mc->seq, false) -
                 plan_attn_flops(m, mc->micro_batch, mc->seq, true);
        layer_fwd -= causal;
    }
    struct activ_config ac = {.micro_batch = mc->micro_batch,
                              .seq = mc->seq,
                              .tp = 1,
                              .sp = false,
                              .bytes = 2,
                              .cp = mc->cp,
                              .attention = mc->attention};
    double recompute_mb = activ_recompute_flops(m, &ac, &mc->ckpt, m->layers, layer_fwd);
    double recompute = recompute_mb * ((double)pc->global_batch / mc->micro_batch);

    double rate = gpus * cl->peak_flops * pc->efficiency;
    double skipped = 3 * m->layers * causal * ((double)pc->global_batch / mc->micro_batch);
    l->compute_s = (model - skipped + recompute) / rate;
    /* the bubble as the schedule's timeline has it (calc/sched.h) */
    struct sched sc;
    int v = sched_chunks(mc->schedule, mc->chunks);
    int rc = sched_build(mc->schedule, mc->pp, mc->micro_batches, v, &sc, e);
    if (rc < 0)
        return rc;
    double per_micro = l->compute_s / mc->micro_batches;
    rc = traffic_compute(mc, cl, mr->stage, mr->params_gpu, mr->stage_layers, per_micro / 3,
                         per_micro * 2 / 3, &l->traffic, e);
    if (rc < 0) {
        sched_free(&sc);
        return rc;
    }
    double cp_wait;
    traffic_cp_overlap(mc, cl, mr->stage_layers, cl->peak_flops * pc->efficiency, &l->traffic,
                       &cp_wait);
    /* a stage's micro-batch is its compute and the sums and exchanges on its path (tensor,
     * context and expert parallelism's), and the pipeline fills and drains with all of it */
    const struct traffic *t = &l->traffic;
    double path = l->compute_s + t->tp.exposed + t->cp.exposed + t->ep.exposed;
    l->bubble_s = sched_bubble_time(&sc, path);
    if (sched_splits(mc->schedule) && mc->micro_batches >= mc->pp) {
        /* zb-h1, zb-h2 and zbv with F, B and W as a layer computes them: W the matmuls' weight
         * gradients (the forward's linear FLOPs), B the rest of the backward, the attention
         * core's twice and the recomputation; zb-h2's step waits for the later of its stage 0's
         * idle time and its last stage's p - 1 forwards late start, the parallelogram's ends
         * (calc/sched.h: the optimizer step is synchronized), zbv's the same in a chunk's */
        double core = 4.0 * mc->micro_batch * mc->seq * mc->seq * m->d_model, w = layer_fwd - core;
        double b = 2 * layer_fwd - w + recompute_mb / m->layers, f = layer_fwd;
        int p = mc->pp, mb = mc->micro_batches;
        bool ends_apart = mc->schedule == SCHED_ZBH2 || mc->schedule == SCHED_ZBV; /* zbv: a V */
        double ends = ends_apart ? (p - 1.0) * f / ((double)v * mb * (f + b + w)) : 0;
        l->bubble_s = path * fmax(sched_formula_times(mc->schedule, p, mb, v, f, b, w), ends);
    }
    sched_free(&sc);
    /* the pipeline's slowest stage, and the naive split's busiest GPU of the ring */
    l->imbalance_s =
        stage_imbalance(m, mc, layer_fwd, recompute_mb / m->layers, l->compute_s) + cp_wait;
    l->comm_exposed_s = l->traffic.exposed;
    l->comm_bytes_per_gpu = l->traffic.bytes;
    l->step_time_s = l->compute_s + l->bubble_s + l->imbalance_s + l->comm_exposed_s;
    l->mfu = model / (l->step_time_s * gpus * cl->peak_flops);
    return 0;
}

int plan_step(const struct memory_config *mc, const struct memory_result *mr,
              const struct cluster_spec *cluster, struct plan_layout *out, struct error *e)
{
    struct plan_config pc = {.model = mc->model,
                             .cluster = cluster,
                             .gpus = mc->dp * mc->tp * mc->pp * (mc->cp > 1 ? mc->cp : 1),
                             .global_batch = mc->dp * mc->micro_batch * mc->micro_batches,
                             .seq = mc->seq,
                             .precision = mc->precision,
                             .optimizer = mc->optimizer,
                             .grad_fp32 = mc->grad_fp32,
                             .efficiency = PLAN_EFFICIENCY,
                             .capacity = mc->capacity,
                             .attention = mc->attention};
    *out = (struct plan_layout){.dp = mc->dp,
                                .tp = mc->tp,
                                .pp = mc->pp,
                                .zero = mc->zero,
                                .cp = mc->cp,
                                .ep = mc->ep,
                                .ckpt = mc->ckpt,
                                .micro_batch = mc->micro_batch,
                                .micro_batches = mc->micro_batches,
                                .per_gpu_bytes = mr->total};
    return plan_time(&pc, mc, mr, out, e);
}

void plan_memory_config(const struct plan_config *c, const struct plan_layout *l,
                        struct memory_config *out)
{
    *out = (struct memory_config){.model = c->model,
                                  .precision = c->precision,
                                  .optimizer = c->optimizer,
                                  .grad_fp32 = c->grad_fp32,
                                  .dp = l->dp,
                                  .tp = l->tp,
                                  .pp = l->pp,
                                  .zero = l->zero,
                                  .micro_batch = l->micro_batch,
                                  .seq = c->seq,
                                  .micro_batches = l->micro_batches,
                                  .schedule = SCHED_1F1B,
                                  .sp = l->tp > 1,
                                  .cp = l->cp > 1 ? l->cp : 1,
                                  .ep = l->ep > 1 ? l->ep : 1,
                                  .ckpt = l->ckpt,
                                  .attention = c->attention,
                                  .capacity = c->capacity};
}

static void set_reason(struct plan_layout *l, const char *msg)
{
    size_t n = strlen(msg);
    if (n >= sizeof l->reason)
        n = sizeof l->reason - 1;
    memcpy(l->reason, msg, n);
    l->reason[n] = '\0';
}

struct list {
    struct plan_layout *v;
    size_t n, cap;
};

static int push(struct list *L, const struct plan_layout *l)
{
    if (L->n == L->cap) {
        size_t cap = L->cap ? 2 * L->cap : 256;
        struct plan_layout *v = realloc(L->v, cap * sizeof *v);
        if (!v)
            return ERR_NOMEM;
        L->v = v, L->cap = cap;
    }
    L->v[L->n++] = *l;
    return 0;
}

static int by_time(const void *a, const void *b)
{
    const struct plan_layout *x = a, *y = b;
    if (x->step_time_s != y->step_time_s)
        return (x->step_time_s > y->step_time_s) - (x->step_time_s < y->step_time_s);
    /* Equal time: the one with the most memory to spare first. */
    return (x->per_gpu_bytes > y->per_gpu_bytes) - (x->per_gpu_bytes < y->per_gpu_bytes);
}

/* Closest misses first; structural reasons (over 0) after them. */
static int by_over(const void *a, const void *b)
{
    const struct plan_layout *x = a, *y = b;
    double ox = x->over > 0 ? x->over : INFINITY, oy = y->over > 0 ? y->over : INFINITY;
    return (ox > oy) - (ox < oy);
}

/* For a framework, mc becomes the layout it runs; true when it refuses l or runs it as
 * another layout (l's reason says so). */
static bool runs_as(const struct plan_config *c, struct memory_config *mc, struct plan_layout *l,
                    struct error *sub)
{
    struct framework_run fr;
    if (framework_runs(c->framework, mc, &fr, sub) < 0) {
        set_reason(l, sub->msg);
        return true;
    }
    if (fr.changed) {
        snprintf(l->reason, sizeof l->reason, "%s runs it as another layout: %s",
                 framework_title(c->framework), fr.notes[fr.why]);
        return true;
    }
    *mc = fr.c;
    return false;
}

/* What the planner is asked: 0 or ERR_INVAL naming the problem. */
static int plan_check(const struct plan_config *c, struct error *e)
{
    const struct cluster_spec *cl = c->cluster;
    if (c->gpus < 1 || (long long)c->gpus > (long long)cl->gpus_per_node * cl->nodes)
        return error_set(e, ERR_INVAL, "gpus %d: the cluster has %d GPUs (%d node%s of %d)",
                         c->gpus, cl->gpus_per_node * cl->nodes, cl->nodes,
                         cl->nodes == 1 ? "" : "s", cl->gpus_per_node);
    if (c->global_batch < 1)
        return error_set(e, ERR_INVAL, "global_batch must be at least 1");
    if (!(c->efficiency > 0 && c->efficiency <= 1))
        return error_set(e, ERR_INVAL, "efficiency must be above 0 and at most 1");
    if (!(c->capacity > 0) || !isfinite(c->capacity))
        return error_set(e, ERR_INVAL, "capacity must be a size above 0");
    if (c->model->ffn_kind == FFN_GELU && c->seq > c->model->seq)
        return error_set(e, ERR_INVAL, "seq %d is longer than the %d learned positions of %s",
                         c->seq, c->model->seq, c->model->name);
    return 0;
}

/* One candidate layout l weighed: into kept when it runs and fits, else into rejected with
 * its reason (and by how much it is over). 0, or -1 when out of memory. */
static int weigh(const struct plan_config *c, struct plan_layout *l, struct list *kept,
                 struct list *rejected)
{
    struct memory_config mc;
    struct memory_result mr;
    struct error sub = {0};
    plan_memory_config(c, l, &mc);
    if (runs_as(c, &mc, l, &sub))
        return push(rejected, l);
    if (memory_compute(&mc, &mr, &sub) < 0) {
        set_reason(l, sub.msg);
        return push(rejected, l);
    }
    l->per_gpu_bytes = mr.total;
    if (plan_time(c, &mc, &mr, l, &sub) < 0) {
        set_reason(l, sub.msg);
        return push(rejected, l);
    }
    if (mr.fits)
        return push(kept, l);
    l->over = mr.over;
    snprintf(l->reason, sizeof l->reason, "needs %.2f GiB per GPU: %.2f GiB over the %.2f GiB",
             mr.total / GIB, mr.over / GIB, c->capacity / GIB);
    return push(rejected, l);
}

int plan_run(const struct plan_config *c, struct plan_result *out, struct error *e)
{
    memset(out, 0, sizeof *out);
    int rc = plan_check(c, e);
    if (rc)
        return rc;

    struct params_breakdown pb;
    params_count(c->model, &pb);
    out->model_flops =
        plan_model_flops(c->model, pb.active, (double)c->global_batch * c->seq, c->seq);
    struct list kept = {0}, rejected = {0};
    static const struct ckpt_policy policies[] = {
        {CKPT_NONE, 0}, {CKPT_SELECTIVE, 0}, {CKPT_FULL, 1}};
    int ncp = 0; /* the sizes of context parallelism tried: 1, 2, 4, ... up to cp_max */
    for (int x = 1; x <= (c->cp_max > 1 ? c->cp_max : 1); x *= 2)
        ncp++;
    for (int tp = 1; tp <= c->gpus && rc == 0; tp++) {
        if (c->gpus % tp)
            continue;
        for (int k = 0; k < c->gpus / tp * ncp && rc == 0; k++) {
            /* k runs over pp (1, 2, ...) and, for each, cp (1, 2, 4, ... up to cp_max) */
            int pp = k / ncp + 1, cp = 1 << (k % ncp);
            if (pp > c->gpus / tp || (c->gpus / tp) % pp || (c->gpus / tp / pp) % cp)
                continue;
            int dp = c->gpus / tp / pp / cp;
            struct plan_layout l = {.dp = dp,
                                    .tp = tp,
                                    .pp = pp,
                                    .cp = cp,
                                    .ckpt = policies[0],
                                    .micro_batch = 1,
                                    .micro_batches = 1};
            struct memory_config mc;
            plan_memory_config(c, &l, &mc);
            struct error sub = {0};
            if (memory_check(&mc, &sub) < 0) {
                set_reason(&l, sub.msg);
                rc = push(&rejected, &l);
                continue;
            }
            if (c->global_batch % dp) {
                snprintf(l.reason, sizeof l.reason, "global batch %d is not a multiple of dp = %d",
                         c->global_batch, dp);
                rc = push(&rejected, &l);
                continue;
            }
            for (int zero = 0; zero <= 3 && rc == 0; zero++) {
                if (zero >= 2 && pp > 1)
                    continue; /* not a combination the frameworks offer */
                if (zero > 0 && dp * cp == 1)
                    continue; /* nothing to partition (ZeRO shards over dp x cp) */
                for (size_t q = 0; q < sizeof policies / sizeof policies[0] && rc == 0; q++) {
                    /* expert parallelism: 1, 2, 4, ... up to ep_max, dividing dp and the
                     * experts, with one stage (the calculator's); without a capacity factor
                     * dropless, weighed at its bound's memory and uniform routing's time */
                    for (int ep = 1; ep <= (c->ep_max > 1 ? c->ep_max : 1) && rc == 0; ep *= 2) {
                        if (ep > 1 && (dp % ep || c->model->experts % ep || pp > 1))
                            continue;
                        for (int b = 1; b <= c->global_batch / dp && b <= 64 && rc == 0; b *= 2) {
                            if ((c->global_batch / dp) % b)
                                continue;
                            l = (struct plan_layout){.dp = dp,
                                                     .tp = tp,
                                                     .pp = pp,
                                                     .cp = cp,
                                                     .ep = ep,
                                                     .zero = zero,
                                                     .ckpt = policies[q],
                                                     .micro_batch = b,
                                                     .micro_batches = c->global_batch / dp / b};
                            rc = weigh(c, &l, &kept, &rejected);
                        }
                    }
                }
            }
        }
    }
    if (rc < 0) {
        free(kept.v);
        free(rejected.v);
        return error_set(e, ERR_NOMEM, "out of memory while planning");
    }
    if (kept.n)
        qsort(kept.v, kept.n, sizeof *kept.v, by_time);
    if (rejected.n)
        qsort(rejected.v, rejected.n, sizeof *rejected.v, by_over);
    out->kept = kept.v, out->n_kept = kept.n;
    out->rejected = rejected.v, out->n_rejected = rejected.n;
    return 0;
}

void plan_free(struct plan_result *r)
{
    free(r->kept);
    free(r->rejected);
    memset(r, 0, sizeof *r);
}
