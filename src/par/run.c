/* A training run on the simulated cluster: device threads driving trainers, the ledger seam,
 * the step records merged for a reader, the pacing gate (par/run.h). */
#include "config.h"
#include "par/run.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/hostmem.h"
#include "base/units.h"
#include "model/blasbuf.h"
#include "model/markov.h"
#include "par/dp.h"
#include "par/strategies.h"
#include "sim/cluster.h"

#define MAX_COMMANDS 64

struct run_cmd {
    long from_step; /* applies from this step on */
    enum { CMD_INJECT, CMD_CLIP, CMD_LR } kind;
    enum train_inject_kind inject;
    double value;
    int gpu;
};

/* A step's records as the GPUs finish it: merged once the last one is in. */
struct slot {
    long step;
    int done;
    struct run_step rec;
};

struct run {
    struct run_config cfg;
    struct cluster *cl;
    pthread_t driver;
    bool started, joined;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* any change below */
    /* the gate */
    long allowed, started_max, consumed;
    int waiting; /* GPUs held at a step's gate */
    bool stop;
    struct run_cmd cmd[MAX_COMMANDS];
    int ncmd;
    /* the records */
    struct slot slot[RUN_AHEAD + 1];
    long produced; /* steps merged */
    bool ended;
    int rc;
    struct error err;
    int blas_claimed; /* OpenBLAS buffers claimed for the GPUs (model/blasbuf.h) */
    /* after the run */
    struct run_gpu *gpu;
    double floor, t0, wall;
    /* non-finite tensors' names, for events (which keep static strings): a name is one of
     * the model's tensors, so a table of their number holds every one (under mu) */
    char (*names)[48];
    size_t nnames, capnames;
    /* with a wire: this GPU's step record and every GPU's (struct train_step, then its
     * underflow counts: share_bytes each) */
    char *share_mine, *share_all;
    /* step 1, kept */
    int32_t *first_tokens;
    float *first_grads;
    double first_loss;
    bool have_first;
    /* without a scaler, the step whose loss was not finite and the step that applied the
     * inf/NaN gradients (0: none): the run's message names the first non-finite tensor of
     * that step over every GPU, from its merged record (under mu) */
    long nan_step, nan_applied;
    bool nan_is_inf;
};

/* ------------------------------------------------------------------ the ledger seam */

/* The model's and the strategy's allocator seam on a simulated GPU: every buffer comes from
 * the device's ledger (the arenas as reserved memory, the CPU emulation's fp32 copies and the
 * batch as workspace), so the capacity check sees every byte before the first step. As kept
 * tensors and gathered weights live and die, their bytes move from reserved to activations
 * or communication and back (model/gpt.h, par/dp.h). Compute advances the compute stream. */
struct seam {
    struct device *d;
    struct error err; /* the first out-of-memory or accounting error */
};

static enum ledger_cat ledger_of(enum gpt_mem kind)
{
    switch (kind) {
    case GPT_MEM_WEIGHTS: return MEM_WEIGHTS;
    case GPT_MEM_GRADS: return MEM_GRADIENTS;
    case GPT_MEM_MASTER: return MEM_MASTER;
    case GPT_MEM_OPTIMIZER: return MEM_OPTIMIZER;
    case GPT_MEM_ACTIVATIONS: return MEM_ACTIVATIONS;
    case GPT_MEM_ARENA: return MEM_RESERVED;
    case GPT_MEM_COMM: return MEM_COMM;
    default: return MEM_WORKSPACE;
    }
}

static void *seam_alloc(void *ctx, enum gpt_mem kind, size_t bytes, const char *what)
{
    struct seam *s = ctx;
    (void)what;
    struct error e = {0};
    void *p = ledger_alloc(dev_ledger(s->d), ledger_of(kind), bytes, &e);
    if (!p && !s->err.code)
        s->err = e;
    return p;
}

static void seam_free(void *ctx, enum gpt_mem kind, void *p, size_t bytes)
{
    struct seam *s = ctx;
    (void)kind, (void)bytes;
    ledger_free(dev_ledger(s->d), p);
}

static void seam_charge(void *ctx, enum gpt_mem kind, long long delta)
{
    struct seam *s = ctx;
    struct error e = {0};
    struct ledger *l = dev_ledger(s->d);
    int rc = delta > 0 ? ledger_move(l, MEM_RESERVED, ledger_of(kind), (uint64_t)delta, &e)
                       : ledger_move(l, ledger_of(kind), MEM_RESERVED, (uint64_t)-delta, &e);
    if (rc && !s->err.code)
        s->err = e;
}

static void seam_compute(void *ctx, double flops, const char *what, int layer)
{
    struct seam *s = ctx;
    dev_compute_on(s->d, DP_STREAM_COMPUTE, flops, what, layer, -1);
}

/* ------------------------------------------------------------------ waits */

static void wait_for(struct run *r, double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double whole = (double)(long)seconds;
    ts.tv_sec += (time_t)whole;
    ts.tv_nsec += (long)((seconds - whole) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&r->cv, &r->mu, &ts);
}

/* Before step `step` on device d: waits until the reader is near and the pace allows it,
 * then applies the commands due. false: the run stops here (every GPU at the same step). */
static bool gate(struct run *r, struct device *d, struct trainer *t, long step, int *applied)
{
    bool go = true, held = false;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        if (dev_aborted(d)) {
            go = false;
            break;
        }
        if (r->stop && step > r->started_max) {
            go = false;
            break;
        }
        bool paced_ok = !r->cfg.paced || step <= r->allowed || step <= r->started_max;
        bool near = step <= r->consumed + RUN_AHEAD;
        if (paced_ok && near)
            break;
        if (!held)
            r->waiting++, held = true;
        wait_for(r, 0.25);
    }
    if (held)
        r->waiting--;
    if (go) {
        if (step > r->started_max)
            r->started_max = step;
        for (; *applied < r->ncmd; (*applied)++) {
            const struct run_cmd *c = &r->cmd[*applied];
            if (c->from_step > step)
                break;
            if (c->kind == CMD_INJECT)
                trainer_inject_gpu(t, c->inject, c->value, c->gpu);
            else if (c->kind == CMD_CLIP)
                trainer_set_clip(t, c->value);
            else
                trainer_set_lr(t, c->value);
        }
    }
    pthread_mutex_unlock(&r->mu);
    return go;
}

int run_waiting(struct run *r)
{
    pthread_mutex_lock(&r->mu);
    int n = r->waiting;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* ------------------------------------------------------------------ the device */

static void keep_first(void *ctx, const struct trainer *t, long step, const int32_t *tokens,
                       const int32_t *targets, double loss, const float *grads, size_t off,
                       size_t n)
{
    struct run *r = ctx;
    const struct train_opts *o = &r->cfg.o;
    if (step != 1 || !r->first_grads)
        return;
    size_t bt = (size_t)o->batch * o->shape.seq;
    /* DDP: every GPU of a stage holds all of its part and its data-parallel rank 0 alone
     * keeps them; ZeRO: each its shard. Each element goes where the whole model has it. */
    const struct layout_place *pl = trainer_place(t);
    /* expert parallelism: the other ranks of data rank 0's group keep their experts alone */
    bool only_experts = pl->ep > 1 && pl->dprank > 0 && o->zero == 0;
    size_t nx = only_experts ? gpt_part_experts(&o->shape, &pl->part, NULL, 0) : 0;
    size_t(*xr)[2] = nx ? malloc(nx * sizeof *xr) : NULL;
    if (nx && !xr)
        return;
    if (nx)
        gpt_part_experts(&o->shape, &pl->part, xr, nx);
    for (size_t i = 0, k = 0; i < n; i++) {
        while (k < nx && off + i >= xr[k][0] + xr[k][1])
            k++;
        if (only_experts && !(k < nx && off + i >= xr[k][0]))
            continue;
        size_t w = trainer_whole_index(t, off + i);
        if (w != SIZE_MAX)
            r->first_grads[w] = grads[i];
    }
    free(xr);
    if (pl->stage == 0 && pl->dprank == 0 && pl->tprank == 0) {
        memcpy(r->first_tokens, tokens, bt * sizeof *tokens);
        memcpy(r->first_tokens + bt, targets, bt * sizeof *targets);
        r->first_loss = loss;
    }
}

const char *const run_wait_names[RUN_WAITS] = {"dp", "tp", "pp", "cp", "ep", "bubble", "other"};

/* A GPU's exposed time of a step by kind (enum run_wait), its waits by the kind of message
 * (sim/spec.h's enum time_msg); the rest of `exposed` is the other's. */
static void exposed_by(const struct train_step *s, double exposed, double out[RUN_WAITS])
{
    static const enum run_wait kind[TIME_MSGS] = {
        [TIME_MSG_NONE] = RUN_WAIT_OTHER,    [TIME_MSG_PARAMS] = RUN_WAIT_DP,
        [TIME_MSG_LAYER_ROWS] = RUN_WAIT_TP, [TIME_MSG_END_ROWS] = RUN_WAIT_TP,
        [TIME_MSG_TOKENS] = RUN_WAIT_TP,     [TIME_MSG_NORMS] = RUN_WAIT_TP,
        [TIME_MSG_ACTS] = RUN_WAIT_PP,       [TIME_MSG_TIED] = RUN_WAIT_PP,
        [TIME_MSG_RING] = RUN_WAIT_CP};
    double known = 0;
    for (int w = 0; w < RUN_WAITS; w++)
        out[w] = 0;
    for (int k = 0; k < TIME_MSGS; k++) {
        if (kind[k] == RUN_WAIT_OTHER)
            continue;
        /* a pipeline's message not posted yet is the bubble, and so is a ring's (a GPU of the
         * ring still computing more attention: the naive split's imbalance); another's, its
         * kind's */
        bool idle = kind[k] == RUN_WAIT_PP || k == TIME_MSG_RING;
        out[kind[k]] += s->waited[k] + (idle ? 0 : s->waited_peer[k]);
        out[RUN_WAIT_BUBBLE] += idle ? s->waited_peer[k] : 0;
        known += s->waited[k] + s->waited_peer[k];
    }
    out[RUN_WAIT_OTHER] = exposed - known;
}

/* The merged record of a step: the global figures from GPU 0, the rest over every GPU. */
static void merge(struct run_step *m, const struct train_step *s, int gpu, int gpus, int layers)
{
    struct run_gpu_step *g = &m->gpu[gpu];
    memcpy(g->sent, s->sent.bytes, sizeof g->sent);
    g->ring_scores = s->ring_scores;
    g->routed = s->routed, g->dropped = s->dropped;
    memcpy(g->expert_load, s->expert_load, sizeof g->expert_load);
    memcpy(g->expert_kept, s->expert_kept, sizeof g->expert_kept);
    g->aux_loss = s->aux_loss;
    snprintf(g->nonfinite, sizeof g->nonfinite, "%s", s->nonfinite);
    g->nonfinite_forward = s->nonfinite_forward;
    g->skipped = s->skipped;
    g->next_scale = s->next_scale, g->clip_coef = s->clip_coef;
    g->grad_sumsq = s->grad_sumsq;
    g->overflow_own = s->overflow_own;
    if (gpu == 0) {
        m->s = *s;
        m->s.underflow = NULL;
        m->s.nonfinite[0] = 0;
    }
    m->gpus = gpus;
    if (s->sent.bytes[STRATEGY_DP] > m->comm_bytes_per_gpu)
        m->comm_bytes_per_gpu = s->sent.bytes[STRATEGY_DP];
    if (s->sent.scalars > m->scalar_bytes)
        m->scalar_bytes = s->sent.scalars;
    double sim = s->sim_end_s - s->sim_start_s;
    /* the step's span (a difference of clock readings) less the sum of its compute times:
     * equal up to rounding when nothing is exposed, which must not show as a negative time
     * (-1e-20 s). Of the GPUs with the longest span, the most exposed: the same whatever
     * order the GPUs merge in (pipeline stages often tie on the span) */
    double exposed = sim > s->compute_s ? sim - s->compute_s : 0;
    if (sim > m->sim_time_s || (sim == m->sim_time_s && exposed > m->exposed_s)) {
        m->sim_time_s = sim;
        m->exposed_s = exposed;
    }
    /* by kind, of the GPU on the step's path: the one whose compute ended last (the others
     * wait for it at the step's end; the first of them if they tie, whatever order the GPUs
     * merge in) */
    if (!m->by_set || s->compute_end_s > m->by_end_s ||
        (s->compute_end_s == m->by_end_s && gpu < m->by_gpu)) {
        m->by_end_s = s->compute_end_s, m->by_gpu = gpu, m->by_set = true;
        exposed_by(s, exposed, m->exposed_by);
    }
    m->compute_sum_s += s->compute_s;
    if (s->compute_s > m->compute_max_s)
        m->compute_max_s = s->compute_s;
    int nl = layers < 64 ? layers : 64; /* the last entry: embedding and norms */
    for (int l = 0; l < nl && s->underflow; l++)
        m->underflow[l] += s->underflow[l];
    if (s->underflow)
        m->underflow[nl] += s->underflow[layers];
    for (int i = 0; i < GPT_LINEARS; i++)
        for (int k = 0; k < FP8_ROLES; k++)
            if (s->fp8[i][k].n)
                fp8_stats_add(&m->fp8[i][k], &s->fp8[i][k]);
}

/* A mixture's routing, every GPU's: the choices routed and dropped and each expert's load
 * summed, the busiest expert over the mean of those, and the load-balancing loss as the loss
 * has it, the mean over the GPUs (each one's is part of its loss, which the step averages). */
static void merge_routing(struct run_step *m, int experts)
{
    struct train_step *s = &m->s;
    s->routed = s->dropped = 0, s->aux_loss = 0;
    memset(s->expert_load, 0, sizeof s->expert_load);
    memset(s->expert_kept, 0, sizeof s->expert_kept);
    for (int g = 0; g < m->gpus; g++) {
        const struct run_gpu_step *x = &m->gpu[g];
        s->routed += x->routed, s->dropped += x->dropped, s->aux_loss += x->aux_loss / m->gpus;
        for (int i = 0; i < experts; i++)
            s->expert_load[i] += x->expert_load[i], s->expert_kept[i] += x->expert_kept[i];
    }
    s->expert_imbalance = train_expert_imbalance(s->expert_load, experts);
}

/* The first non-finite tensor of the step, in the order computed: forward passes run from
 * the first pipeline stage to the last, backward passes back (every GPU of a stage at once:
 * the lowest rank is named). */
static void finish_merge(struct run_step *m, const struct train_opts *o)
{
    memcpy(m->s.fp8, m->fp8, sizeof m->s.fp8); /* every GPU's quantisations */
    if (m->s.routed) /* a mixture's routing over every GPU's tokens, as the window shows it */
        merge_routing(m, o->shape.moe.experts);
    m->nonfinite_gpu = -1;
    int best = -1, key = 0;
    for (int g = 0; g < m->gpus; g++) {
        if (!m->gpu[g].nonfinite[0])
            continue;
        struct layout_place pl;
        layout_place(o, g, 1, &pl);
        int k = m->gpu[g].nonfinite_forward ? pl.stage : 2 * pl.pp - pl.stage;
        if (best < 0 || k < key)
            best = g, key = k;
    }
    if (best >= 0) {
        m->nonfinite_gpu = best;
        memcpy(m->s.nonfinite, m->gpu[best].nonfinite, sizeof m->s.nonfinite);
    }
}

static const char *intern(struct run *r, const char *name)
{
    const char *out = "tensor";
    pthread_mutex_lock(&r->mu);
    size_t i = 0;
    while (i < r->nnames && strcmp(r->names[i], name))
        i++;
    if (i == r->nnames && r->nnames < r->capnames)
        snprintf(r->names[r->nnames++], sizeof r->names[0], "%s", name);
    if (i < r->nnames)
        out = r->names[i];
    pthread_mutex_unlock(&r->mu);
    return out;
}

/* A step record as the wire carries it: the record, then its layers + 1 underflow counts. */
static size_t share_bytes(const struct train_opts *o)
{
    return sizeof(struct train_step) + ((size_t)o->shape.layers + 1) * sizeof(uint64_t);
}

/* Every GPU's record of a step over the wire, into r->share_all (without r->mu: the reader
 * must not wait for the network). */
static void share_step(struct run *r, const struct train_step *s)
{
    const struct train_opts *o = &r->cfg.o;
    size_t nuf = (size_t)o->shape.layers + 1;
    struct error e = {0};
    memcpy(r->share_mine, s, sizeof *s);
    if (s->underflow)
        memcpy(r->share_mine + sizeof *s, s->underflow, nuf * sizeof(uint64_t));
    r->cfg.wire->share(r->cfg.wire->ctx, r->share_mine, share_bytes(o), r->share_all, &e);
}

/* The shared records merged into the step's slot, as the GPUs of a run on threads merge
 * theirs; r->mu held. */
static void merge_shared(struct run *r, const struct train_step *s, struct slot *sl)
{
    const struct train_opts *o = &r->cfg.o;
    size_t n = share_bytes(o);
    for (int g = 0; g < o->gpus; g++) {
        struct train_step t;
        char *at = r->share_all + (size_t)g * n;
        memcpy(&t, at, sizeof t);
        t.underflow = s->underflow ? (const uint64_t *)(void *)(at + sizeof t) : NULL;
        merge(&sl->rec, &t, g, o->gpus, o->shape.layers);
    }
    sl->done = o->gpus;
}

/* A GPU's step done: its events, and its record merged into the step's (the reader's once
 * every GPU's is in). */
static void record_step(struct run *r, struct device *d, const struct train_step *s, long i)
{
    const struct train_opts *o = &r->cfg.o;
    struct event ev = {.type = EV_TRAIN_STEP, .t = dev_now(d), .step = (int)i};
    ev.loss = s->loss, ev.grad_norm = s->grad_norm, ev.clip_coef = s->clip_coef;
    ev.loss_scale = s->loss_scale, ev.skipped = s->skipped;
    dev_emit(d, &ev);
    if (s->nonfinite[0]) {
        struct event nf = {.type = EV_NONFINITE, .t = dev_now(d), .step = (int)i};
        nf.name = intern(r, s->nonfinite);
        nf.layer = atoi(strncmp(s->nonfinite, "layer ", 6) ? "-1" : s->nonfinite + 6);
        dev_emit(d, &nf);
    }
    if (r->cfg.wire)
        share_step(r, s);
    pthread_mutex_lock(&r->mu);
    struct slot *sl = &r->slot[i % (RUN_AHEAD + 1)];
    if (sl->step != i) {
        memset(sl, 0, sizeof *sl);
        sl->step = i;
    }
    if (r->cfg.wire)
        merge_shared(r, s, sl);
    else
        merge(&sl->rec, s, dev_rank(d), o->gpus, o->shape.layers), sl->done++;
    if (sl->done == o->gpus) {
        finish_merge(&sl->rec, o);
        r->produced = i;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
}

/* Every GPU's summary (struct run_gpu, its pipeline's operations) over the wire, at the end
 * of the run, into r->gpu: each process then holds every GPU's, as a run on threads does. */
static void share_gpus(struct run *r, int rank)
{
    const struct dev_wire *w = r->cfg.wire;
    int n = r->cfg.o.gpus, most = 0;
    struct error e = {0};
    struct run_gpu *all = calloc((size_t)n, sizeof *all), mine = r->gpu[rank];
    mine.ops = NULL;
    if (!all) {
        error_set(&e, ERR_NOMEM, "GPU %d: out of memory for the run's summary", rank);
        w->fail(w->ctx, &e);
    }
    w->share(w->ctx, &mine, sizeof mine, all, &e);
    for (int g = 0; g < n; g++)
        most = all[g].nops > most ? all[g].nops : most;
    size_t bytes = (size_t)(most ? most : 1) * sizeof(struct pp_done);
    char *ops = calloc((size_t)n + 1, bytes);
    if (!ops) {
        error_set(&e, ERR_NOMEM, "GPU %d: out of memory for the run's summary", rank);
        w->fail(w->ctx, &e);
    }
    char *mops = ops + (size_t)n * bytes;
    if (r->gpu[rank].nops)
        memcpy(mops, r->gpu[rank].ops, (size_t)r->gpu[rank].nops * sizeof(struct pp_done));
    w->share(w->ctx, mops, bytes, ops, &e);
    for (int g = 0; g < n; g++) {
        if (g == rank)
            continue;
        r->gpu[g] = all[g];
        r->gpu[g].ops = NULL, r->gpu[g].nops = 0;
        size_t k = (size_t)all[g].nops * sizeof(struct pp_done);
        if (k && (r->gpu[g].ops = malloc(k))) {
            memcpy(r->gpu[g].ops, ops + (size_t)g * bytes, k);
            r->gpu[g].nops = all[g].nops;
        }
    }
    free(ops);
    free(all);
}

static int device_main(struct device *d, void *arg, struct error *e)
{
    struct run *r = arg;
    const struct train_opts *o = &r->cfg.o;
    int rank = dev_rank(d);
    struct seam seam = {d, {0}};
    struct gpt_alloc alloc = {.alloc = seam_alloc,
                              .free = seam_free,
                              .charge = seam_charge,
                              .compute = seam_compute,
                              .ctx = &seam};
    struct trainer *t;
    int rc = trainer_new_on(&t, o, &alloc, d, e);
    if (rc) {
        if (seam.err.code)
            *e = seam.err;
        const char *msg = e->msg, *colon = strstr(msg, ": ");
        if (!strncmp(msg, "GPU ", 4) && colon) /* dev_fail adds its own "GPU d: " */
            msg = colon + 2;
        return dev_fail(d, e, "%s", msg);
    }
    if (rank == 0) {
        pthread_mutex_lock(&r->mu);
        r->floor = trainer_loss_floor(t);
        pthread_mutex_unlock(&r->mu);
    }
    /* DDP: data rank 0 holds every gradient of its part, and with expert parallelism the
     * ranks of its expert-parallel group the other experts' */
    if (r->cfg.keep_first_step && (o->zero > 0 || trainer_place(t)->dprank < trainer_place(t)->ep))
        trainer_observe(t, keep_first, r);
    int applied = 0;
    struct train_step s;
    for (long i = 1; i <= o->steps; i++) {
        if (!gate(r, d, t, i, &applied))
            break;
        if ((rc = dev_step(d, (int)i, e)))
            break;
        if ((rc = trainer_run_step(t, &s, e)))
            break;
        if (seam.err.code) { /* accounting went wrong: a bug, said rather than hidden */
            rc = dev_fail(d, e, "%s", seam.err.msg);
            break;
        }
        s.act_peak_bytes = dev_ledger(d)->peak_cat[MEM_ACTIVATIONS]; /* the ledger's word */
        record_step(r, d, &s, i);
        if (s.weights_nonfinite_since && !isfinite(s.loss)) {
            /* Without a scaler the run goes on as plain PyTorch would, applying the bad
             * step; once that shows as a non-finite loss, every later step would only
             * repeat it: stop (every GPU at this step: the loss is the agreed one). The
             * message, said once the run has ended, names the step's first non-finite
             * tensor over every GPU (nan_message); this GPU's own may be none. */
            pthread_mutex_lock(&r->mu);
            if (!r->nan_step) {
                r->nan_step = i;
                r->nan_applied = trainer_poisoned(t, NULL);
                r->nan_is_inf = !isnan(s.loss);
            }
            /* every GPU merges this step before failing: a failure aborts the cluster, which
             * would stop a GPU still in the step's last collective before its record is in */
            const struct slot *done = &r->slot[i % (RUN_AHEAD + 1)];
            while (done->step == i && done->done < o->gpus && !dev_aborted(d))
                wait_for(r, 0.25);
            pthread_mutex_unlock(&r->mu);
            /* over a wire every process stops here by itself (the loss is the agreed one):
             * no failure to spread, and each says nan_message */
            rc = r->cfg.wire ? error_set(e, ERR_RUN, "step %ld: the loss is not finite", i)
                             : dev_fail(d, e, "step %ld: the loss is not finite", i);
            break;
        }
    }
    struct ledger *led = dev_ledger(d);
    struct run_gpu *g = &r->gpu[rank];
    memcpy(g->peak_cat, led->peak_cat, sizeof g->peak_cat);
    g->peak = led->peak;
    memcpy(g->sent_per_step, s.sent.bytes, sizeof g->sent_per_step);
    g->ring_scores_per_step = s.ring_scores;
    g->ep_rows[0] = s.ep_rows_out, g->ep_rows[1] = s.ep_rows_in, g->ep_rows[2] = s.ep_rows_held;
    memcpy(g->ep_rows_kept, s.ep_rows_kept, sizeof g->ep_rows_kept);
    g->place = *trainer_place(t);
    int nops;
    const struct pp_done *ops = trainer_pipeline(t, &nops, &g->peak_in_flight);
    if (nops && (g->ops = malloc((size_t)nops * sizeof *g->ops))) {
        memcpy(g->ops, ops, (size_t)nops * sizeof *ops);
        g->nops = nops;
    }
    trainer_free(t);
    if (r->cfg.wire)
        share_gpus(r, rank);
    return rc;
}

/* The message of a run stopped by a non-finite loss without a scaler (every thread joined,
 * every record of the steps done merged): why, and what would have saved the run. */
static void nan_message(struct run *r, struct error *e)
{
    const struct slot *sl = &r->slot[r->nan_applied % (RUN_AHEAD + 1)];
    char tensor[96] = "?";
    if (sl->step == r->nan_applied && sl->done == r->cfg.o.gpus && sl->rec.nonfinite_gpu >= 0) {
        if (r->cfg.o.gpus > 1)
            snprintf(tensor, sizeof tensor, "%s, on GPU %d", sl->rec.s.nonfinite,
                     sl->rec.nonfinite_gpu);
        else
            snprintf(tensor, sizeof tensor, "%s", sl->rec.s.nonfinite);
    }
    error_set(e, ERR_RUN,
              "step %ld: the loss is %s: without a loss scaler nothing skips a step whose "
              "gradients hold inf or NaN, step %ld applied one (first non-finite tensor: %s) "
              "and the weights are now NaN; stopping. A scaler skips such steps: "
              "--loss-scale dynamic or a fixed VALUE (1 for bf16)",
              r->nan_step, r->nan_is_inf ? "inf" : "NaN", r->nan_applied, tensor);
}

static void *driver_main(void *arg)
{
    struct run *r = arg;
    struct error e = {0};
    int rc = cluster_run(r->cl, device_main, r, &e);
    if (rc && r->nan_step) /* the threads are joined: no lock needed to read */
        nan_message(r, &e);
    pthread_mutex_lock(&r->mu);
    r->rc = rc;
    r->err = e;
    r->ended = true;
    r->wall = clock_now() - r->t0;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* ------------------------------------------------------------------ the reader's side */

#define DRIVER_STACK_BYTES (8u << 20)  /* the driver thread's: glibc's default */
#define RUN_SMALL_BYTES    (16u << 20) /* the run's own tables, stdio, what libraries keep */

/* The GPUs this process runs: all of them, or its own over a wire. */
static int run_gpus_here(const struct run_config *cfg)
{
    return cfg->wire ? 1 : cfg->o.gpus;
}

double run_host_bytes(const struct run_config *cfg)
{
    const struct train_opts *o = &cfg->o;
    struct error e = {0};
    int dp = layout_dp(o), rows = (o->batch + dp - 1) / dp, cp = o->cp > 1 ? o->cp : 1;
    double params = (double)gpt_param_count(&o->shape);
    /* the whole model's buffers for the GPU's rows, of its seq / cp tokens each; with cp, the
     * ring's two buffers (4 rows x seq/cp x d elements, at most 4 bytes each) */
    struct gpt_part whole = {
        .count = o->shape.layers, .embed = true, .head = true, .slots = 1, .tp = 1, .cp = cp};
    double ring = cp > 1 ? 2.0 * 4 * rows * (double)(o->shape.seq / cp) * o->shape.d * 4 : 0;
    struct gpt_config shape = o->shape;
    shape.fp8 = train_fp8(o); /* its operands and histories */
    double per_gpu =
        (double)gpt_estimate_part_bytes(&shape, rows, o->precision, &o->ckpt, &whole, &e) + ring +
        5.0 * 4 * params + CLUSTER_STACK_BYTES;
    double first = cfg->keep_first_step ? 4.0 * params + 8.0 * o->batch * o->shape.seq : 0;
    return (double)run_gpus_here(cfg) * per_gpu + DRIVER_STACK_BYTES + RUN_SMALL_BYTES + first;
}

int run_host_check(const struct run_config *cfg, struct error *e)
{
    double need = run_host_bytes(cfg);
    double host = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    char a[32], b[32];
    if (host > 0 && need > host / 2)
        return error_set(e, ERR_INVAL,
                         "the run's buffers need %s, more than half of this host's %s",
                         units_format_bytes(a, sizeof a, need, UNITS_BINARY),
                         units_format_bytes(b, sizeof b, host, UNITS_BINARY));
    return 0;
}

int run_reserve(const struct run_config *cfg, int *claimed, struct error *e)
{
    const struct train_opts *o = &cfg->o;
    *claimed = 0;
    int rc = run_host_check(cfg, e);
    if (rc)
        return rc;
    double room = hostmem_room(), lack = 0, host = run_host_bytes(cfg);
    rc = blasbuf_claim(run_gpus_here(cfg), claimed, &lack, e);
    if (rc == 0 && host <= hostmem_room())
        return 0;
    blasbuf_release(*claimed);
    *claimed = 0;
    char what[256], a[32], b[32];
    snprintf(what, sizeof what,
             "the run (%d GPU%s: their buffers and threads %s, OpenBLAS's matrix buffers %s)",
             o->gpus, o->gpus > 1 ? "s" : "", units_format_bytes_in(a, sizeof a, host, "MiB"),
             units_format_bytes_in(b, sizeof b, lack, "MiB"));
    return hostmem_refuse(host + lack, room, what, e);
}

int run_new(struct run **out, const struct run_config *cfg, struct error *e)
{
    *out = NULL;
    int rc = train_opts_check(&cfg->o, e); /* once: the GPUs' trainers take them as they are */
    if (rc)
        return rc;
    struct run *r = calloc(1, sizeof *r);
    if (!r)
        return error_set(e, ERR_NOMEM, "out of memory");
    r->cfg = *cfg;
    if ((rc = run_reserve(cfg, &r->blas_claimed, e))) {
        free(r);
        return rc;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    int n = cfg->o.gpus;
    r->gpu = calloc((size_t)n, sizeof *r->gpu);
    r->capnames = 32 * ((size_t)cfg->o.shape.layers + 2);
    r->names = calloc(r->capnames, sizeof *r->names);
    if (cfg->keep_first_step) {
        size_t bt = (size_t)cfg->o.batch * cfg->o.shape.seq;
        r->first_tokens = calloc(2 * bt, sizeof *r->first_tokens);
        r->first_grads = calloc(gpt_param_count(&cfg->o.shape), sizeof *r->first_grads);
    }
    if (cfg->wire) {
        r->share_mine = malloc(share_bytes(&cfg->o));
        r->share_all = calloc((size_t)n, share_bytes(&cfg->o));
    }
    if (!r->gpu || !r->names || (cfg->keep_first_step && (!r->first_tokens || !r->first_grads)) ||
        (cfg->wire && (!r->share_mine || !r->share_all))) {
        run_free(r);
        return error_set(e, ERR_NOMEM, "out of memory");
    }
    /* the loss floor: the data's entropy rate, of the source every GPU draws from, whose
     * trainer computes it as it sets up (GPU 0's is kept): not here, on the caller's thread
     * (0.2 s for small's vocabulary, a window's frame four times over) */
    if ((rc = markov_check(cfg->o.shape.vocab, e))) {
        run_free(r);
        return rc;
    }
    r->floor = NAN;
    struct cluster_config cc;
    cluster_config_init(&cc);
    cc.spec = cfg->spec;
    cc.gpus = n;
    cc.seed = cfg->o.seed;
    cc.deadline_s = cfg->deadline_s > 0 ? cfg->deadline_s : 600;
    cc.on_event = cfg->on_event;
    cc.event_ctx = cfg->event_ctx;
    cc.wire = cfg->wire;
    cc.local = cfg->local;
    r->cl = cluster_new(&cc, e);
    if (!r->cl) {
        run_free(r);
        return e->code ? e->code : ERR_INVAL;
    }
    *out = r;
    return 0;
}

int run_start(struct run *r, struct error *e)
{
    r->t0 = clock_now();
    /* signals belong to the caller's thread (the window's): the run's threads block them */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&r->driver, NULL, driver_main, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return error_set(e, ERR_NOMEM, "cannot start the run's thread: %s", strerror(rc));
    r->started = true;
    return 0;
}

int run_next(struct run *r, struct run_step *out, double timeout_s)
{
    double until = clock_now() + timeout_s;
    int got = 0;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        if (r->produced > r->consumed) {
            long step = r->consumed + 1;
            *out = r->slot[step % (RUN_AHEAD + 1)].rec;
            r->consumed = step;
            pthread_cond_broadcast(&r->cv);
            got = 1;
            break;
        }
        if (r->ended) {
            got = -1;
            break;
        }
        double left = until - clock_now();
        if (left <= 0)
            break;
        wait_for(r, left < 0.25 ? left : 0.25);
    }
    pthread_mutex_unlock(&r->mu);
    return got;
}

/* A command from the reader, for the first step no GPU has started. */
static void post_cmd(struct run *r, struct run_cmd c)
{
    pthread_mutex_lock(&r->mu);
    c.from_step = r->started_max + 1;
    if (r->ncmd < MAX_COMMANDS)
        r->cmd[r->ncmd++] = c;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

void run_inject(struct run *r, enum train_inject_kind kind, double factor, int gpu)
{
    post_cmd(r, (struct run_cmd){.kind = CMD_INJECT, .inject = kind, .value = factor, .gpu = gpu});
}

void run_set_clip(struct run *r, double clip)
{
    post_cmd(r, (struct run_cmd){.kind = CMD_CLIP, .value = clip});
}

void run_set_lr(struct run *r, double lr)
{
    post_cmd(r, (struct run_cmd){.kind = CMD_LR, .value = lr});
}

void run_allow(struct run *r, long step)
{
    pthread_mutex_lock(&r->mu);
    if (step > r->allowed)
        r->allowed = step;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

void run_stop(struct run *r)
{
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

int run_finish(struct run *r, struct error *e)
{
    if (r->started && !r->joined) {
        /* a reader that stops reading must not hold the GPUs: let them run out */
        pthread_mutex_lock(&r->mu);
        r->consumed = r->cfg.o.steps;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->driver, NULL);
        r->joined = true;
    }
    if (r->rc && e)
        *e = r->err;
    return r->rc;
}

bool run_ended(struct run *r)
{
    pthread_mutex_lock(&r->mu);
    bool ended = r->ended || !r->started;
    pthread_mutex_unlock(&r->mu);
    return ended;
}

void run_free(struct run *r)
{
    if (!r)
        return;
    if (r->started && !r->joined) {
        run_stop(r);
        run_finish(r, NULL);
    }
    cluster_free(r->cl);
    blasbuf_release(r->blas_claimed);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    for (int i = 0; r->gpu && i < r->cfg.o.gpus; i++)
        free(r->gpu[i].ops);
    free(r->gpu);
    free(r->names);
    free(r->first_tokens);
    free(r->first_grads);
    free(r->share_mine);
    free(r->share_all);
    free(r);
}

const struct run_gpu *run_gpu(const struct run *r, int gpu)
{
    return gpu >= 0 && gpu < r->cfg.o.gpus ? &r->gpu[gpu] : NULL;
}

double run_loss_floor(const struct run *r)
{
    pthread_mutex_t *mu = (pthread_mutex_t *)&r->mu; /* (a lock does not change the run) */
    pthread_mutex_lock(mu);
    double floor = r->floor;
    pthread_mutex_unlock(mu);
    return floor;
}

double run_data_floor(int vocab, uint64_t seed)
{
    struct markov *src;
    if (markov_new(&src, vocab, seed, NULL))
        return NAN;
    double h = markov_entropy(src);
    markov_free(src);
    return h;
}

double run_wall_s(const struct run *r)
{
    return r->wall;
}

bool run_first_step(const struct run *r, const int32_t **tokens, const int32_t **targets,
                    double *loss, const float **grads)
{
    if (!r->first_grads || r->consumed < 1)
        return false;
    size_t bt = (size_t)r->cfg.o.batch * r->cfg.o.shape.seq;
    *tokens = r->first_tokens;
    *targets = r->first_tokens + bt;
    *loss = r->first_loss;
    *grads = r->first_grads;
    return true;
}

double run_trace_events(const struct run_config *cfg)
{
    const struct train_opts *o = &cfg->o;
    double events = 0;
    for (int g = 0; g < o->gpus; g++) {
        struct layout_place pl;
        struct strategy_count c = {0};
        layout_place(o, g, 1, &pl);
        trainer_count(o, &pl, &c);
        /* a step's: a begin and an end per compute, two per charge (out of one kind, into
         * another), a send and its receive per message, each operation, the step's record and
         * a non-finite value at most */
        double per_step = 2.0 * c.computes + 2.0 * c.charges + 2.0 * c.messages + c.ops + 2;
        events += 2.0 * (double)c.buffers + (double)o->steps * per_step + 1; /* a failure */
    }
    return events;
}
