/* Pipeline parallelism, one GPU's part: the stage's operations in the schedule's order, with
 * the activations and their gradients sent between stages (par/pp.h). */
#include "config.h"
#include "par/pp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "par/dp.h"
#include "par/layout.h"
#include "sim/cluster.h"

struct pp {
    struct layout_place pl;
    const struct sched_op *ops; /* this stage's, in order */
    int nops;
    int v;                           /* model chunks */
    struct gpt *g[SCHED_MAX_CHUNKS]; /* and their parts */
    struct gpt_part part[SCHED_MAX_CHUNKS];
    struct device *d;
    struct dp_mem mem;
    size_t mt, bytes;    /* tokens of a micro-batch; bytes of its activations */
    int m;               /* micro-batches per step */
    char *in, *dout;     /* what arrives: the input of a forward, the gradient of a backward */
    char *out, *din;     /* what leaves, one buffer per micro-batch and chunk (pending until the
                            step ends) */
    struct dev_req *req; /* [2 m v]: the forward sends, then the backward sends */
    bool *posted;
    int *holder; /* [v][slots]: the micro-batch whose activations a slot holds, -1: none */
    bool split;  /* the schedule runs W apart from B (zb-h1, zb-h2, zbv) */
    enum calc_schedule kind;
    int wslots[SCHED_MAX_CHUNKS]; /* each chunk's weight slots (model/gpt.h) */
    struct pp_done *done;
    int in_flight, peak;
    uint64_t sent;
};

int pp_slots(const struct sched *s, int stage, int chunk)
{
    int held = 0, most = 1;
    for (int i = 0; i < s->count[stage]; i++)
        if (s->ops[stage][i].chunk == chunk) {
            held += sched_held_change(s->ops[stage][i].kind);
            most = held > most ? held : most;
        }
    return most;
}

void pp_free(struct pp *p)
{
    if (!p)
        return;
    size_t m = (size_t)p->m * (size_t)p->v;
    if (p->mem.free) {
        if (p->in)
            p->mem.free(p->mem.ctx, GPT_MEM_WORKSPACE, p->in, p->bytes);
        if (p->dout)
            p->mem.free(p->mem.ctx, GPT_MEM_WORKSPACE, p->dout, p->bytes);
        if (p->out)
            p->mem.free(p->mem.ctx, GPT_MEM_WORKSPACE, p->out, m * p->bytes);
        if (p->din)
            p->mem.free(p->mem.ctx, GPT_MEM_WORKSPACE, p->din, m * p->bytes);
    }
    free(p->req);
    free(p->posted);
    free(p->holder);
    free(p->done);
    free(p);
}

int pp_new(struct pp **out, const struct layout_place *pl, const struct sched *s,
           struct gpt *const *g, const struct gpt_part *parts, enum fp_format fmt, struct device *d,
           const struct dp_mem *mem, struct error *e)
{
    *out = NULL;
    struct pp *p = calloc(1, sizeof *p);
    if (!p)
        return error_set(e, ERR_NOMEM, "out of memory");
    p->pl = *pl;
    p->ops = s->ops[pl->stage];
    p->nops = s->count[pl->stage];
    p->v = s->v;
    for (int c = 0; c < p->v; c++)
        p->g[c] = g[c], p->part[c] = parts[c];
    p->d = d;
    p->mem = *mem;
    p->m = s->m;
    p->split = sched_splits(s->kind);
    p->kind = s->kind;
    for (int k = 0; k < p->v; k++)
        p->wslots[k] = parts[k].wslots;
    const struct gpt_config *c = gpt_config(g[0]);
    p->mt = (size_t)pl->micro * (size_t)(c->seq / pl->cp); /* with cp, its share of them */
    /* a micro-batch's residual stream: this rank's rows of it under sequence parallelism */
    p->bytes =
        gpt_part_rows(c, &parts[0], pl->micro) * (size_t)c->d * (size_t)(fp_info(fmt)->bits / 8);
    size_t n = (size_t)p->m * (size_t)p->v;
    p->req = calloc(2 * n, sizeof *p->req);
    p->posted = calloc(2 * n, sizeof *p->posted);
    p->done = calloc((size_t)p->nops, sizeof *p->done);
    p->holder = malloc((size_t)p->v * (size_t)p->m * sizeof *p->holder);
    bool ok = p->req && p->posted && p->done && p->holder;
    /* a GPU of a pipeline receives and sends both ways, but at the very ends */
    bool first = pl->stage == 0 && p->v == 1, last = pl->stage == pl->pp - 1 && p->v == 1;
    if (ok && !first && pl->pp > 1)
        ok = (p->in = mem->alloc(mem->ctx, GPT_MEM_WORKSPACE, p->bytes, "pipeline input")) &&
             (p->din = mem->alloc(mem->ctx, GPT_MEM_WORKSPACE, n * p->bytes,
                                  "pipeline input gradients"));
    if (ok && !last && pl->pp > 1)
        ok = (p->dout =
                  mem->alloc(mem->ctx, GPT_MEM_WORKSPACE, p->bytes, "pipeline output gradient")) &&
             (p->out = mem->alloc(mem->ctx, GPT_MEM_WORKSPACE, n * p->bytes, "pipeline outputs"));
    if (!ok) {
        pp_free(p);
        return error_set(e, ERR_NOMEM, "out of memory allocating the pipeline's buffers");
    }
    *out = p;
    return 0;
}

/* Waits for every send of the step to have been taken. */
static int drain(struct pp *p, struct error *e)
{
    int rc = 0;
    for (int i = 0; i < 2 * p->m * p->v; i++)
        if (p->posted[i]) {
            int r = dev_wait(p->d, &p->req[i], e);
            p->posted[i] = false;
            if (r && !rc)
                rc = r;
        }
    return rc;
}

static double now(const struct pp *p)
{
    return p->d ? dev_stream_now(p->d, 0) : 0;
}

/* The stage's sends timed as the activations they stand for (sim/spec.h); the scale before. */
static struct time_msg_scale timed(struct pp *p)
{
    return dev_time_msgs(p->d, time_msg(&dev_spec(p->d)->time, p->pl.stage, TIME_MSG_ACTS));
}

/* The operation done, for the window's Gantt chart and the trace. */
static void emit(struct pp *p, int step, const struct pp_done *dn)
{
    if (!p->d)
        return;
    struct event ev = {.type = EV_PIPE_OP, .t = dn->start_s, .t_end = dn->end_s, .step = step};
    ev.name = sched_op_info(dn->kind)->name;
    ev.micro = dn->micro, ev.chunk = dn->chunk;
    dev_emit(p->d, &ev);
}

/* The device rank of virtual stage vs (calc/sched.h's stage of it), this data rank's. */
static int rank_of(const struct pp *p, int vs)
{
    return layout_rank(&p->pl, LAYOUT_PP, sched_stage_of(p->kind, p->pl.pp, vs));
}

/* Whether virtual stage vs is this GPU's too (zbv's turn at the last stage): its activations
 * and their gradients are then handed over in memory, not sent. */
static bool here(const struct pp *p, int vs)
{
    return sched_stage_of(p->kind, p->pl.pp, vs) == p->pl.stage;
}

/* Where micro-batch k's message of chunk c is staged: its output or its input gradient. */
static size_t staged(const struct pp *p, int c, int k)
{
    return ((size_t)c * (size_t)p->m + (size_t)k) * p->bytes;
}

/* A message's key: which way, to which virtual stage, which micro-batch (sim/cluster.h). */
static int key_of(const struct pp *p, bool back, int vs, int k)
{
    return 1 + ((back ? 1 : 0) * p->pl.pp * p->v + vs) * p->m + k;
}

int pp_step(struct pp *p, int step, const int32_t *tokens, const int32_t *targets, float scale,
            const struct gpt_inject *inj, double *loss, struct error *e)
{
    int P = p->pl.pp, V = p->v, last_vs = P * V - 1, rc = 0;
    int backwards[SCHED_MAX_CHUNKS] = {0}, weights[SCHED_MAX_CHUNKS] = {0};
    double sum = 0;
    p->sent = 0; /* the sends of this executor (the stage's collectives are counted apart) */
    p->in_flight = 0;
    for (int i = 0; i < V * p->m; i++)
        p->holder[i] = -1;
    for (int c = 0; c < V; c++)
        gpt_part_begin(p->g[c]);
    for (int i = 0; i < p->nops && !rc; i++) {
        const struct sched_op *op = &p->ops[i];
        int k = op->micro, c = op->chunk, vs = sched_vstage(p->kind, P, p->pl.stage, c);
        int slot = k % p->part[c].slots, *hold = &p->holder[c * p->m + slot];
        struct gpt *g = p->g[c];
        const int32_t *tok = tokens + (size_t)k * p->mt, *tgt = targets + (size_t)k * p->mt;
        size_t mine = ((size_t)c * (size_t)p->m + (size_t)k) * p->bytes;
        struct pp_done *dn = &p->done[i];
        *dn = (struct pp_done){op->kind, k, c, 0, 0};
        if (p->d)
            dev_set_micro(p->d, k);
        if (op->kind == SCHED_OP_F) {
            if (*hold >= 0) { /* the schedule holds more than the part has slots for: a bug */
                rc = error_set(e, ERR_RUN, "stage %d: no slot for micro-batch %d of chunk %d",
                               p->pl.stage, k, c);
                break;
            }
            *hold = k;
            struct dev_tag tag = {step, k, "activations", 0};
            if (vs > 0 && here(p, vs - 1)) /* from this GPU's other chunk */
                memcpy(p->in, p->out + staged(p, 1 - c, k), p->bytes);
            else if (vs > 0 && (rc = dev_recv_key(p->d, rank_of(p, vs - 1), key_of(p, false, vs, k),
                                                  p->in, p->bytes, &tag, e)))
                break;
            dn->start_s = now(p);
            char *o = vs < last_vs ? p->out + mine : NULL;
            double l = gpt_part_forward(g, slot, tok, p->in, o, tgt, inj);
            if (p->part[c].head)
                sum += l;
            dn->end_s = now(p);
            emit(p, step, dn);
            if (++p->in_flight > p->peak)
                p->peak = p->in_flight;
            if (vs < last_vs && !here(p, vs + 1)) {
                size_t r = (size_t)c * (size_t)p->m + (size_t)k;
                struct time_msg_scale was = timed(p);
                rc = dev_isend_key(p->d, rank_of(p, vs + 1), key_of(p, false, vs + 1, k), o,
                                   p->bytes, &tag, &p->req[r], e);
                dev_time_msgs(p->d, was);
                p->posted[r] = rc == 0;
                p->sent += rc == 0 ? p->bytes : 0;
            }
        } else if (op->kind == SCHED_OP_W) { /* from what its B kept; nothing to send */
            dn->start_s = now(p);
            gpt_part_backward_weights(g, k % p->wslots[c], weights[c]++ > 0);
            dn->end_s = now(p);
            emit(p, step, dn);
        } else {
            struct dev_tag tag = {step, k, "activation gradients", 0};
            if (vs < last_vs && here(p, vs + 1)) /* from this GPU's other chunk */
                memcpy(p->dout, p->din + staged(p, 1 - c, k), p->bytes);
            else if (vs < last_vs &&
                     (rc = dev_recv_key(p->d, rank_of(p, vs + 1), key_of(p, true, vs, k), p->dout,
                                        p->bytes, &tag, e)))
                break;
            dn->start_s = now(p);
            char *o = vs > 0 ? p->din + mine : NULL;
            if (p->split) /* B: its W later, from weight slot k % wslots */
                gpt_part_backward_input(g, slot, k % p->wslots[c], tok, tgt, scale, p->dout, o,
                                        backwards[c]++ > 0, inj);
            else
                gpt_part_backward(g, slot, tok, tgt, scale, p->dout, o, backwards[c]++ > 0, inj);
            dn->end_s = now(p);
            emit(p, step, dn);
            *hold = -1;
            p->in_flight--;
            if (vs > 0 && !here(p, vs - 1)) {
                size_t r = (size_t)(V + c) * (size_t)p->m + (size_t)k;
                struct time_msg_scale was = timed(p);
                rc = dev_isend_key(p->d, rank_of(p, vs - 1), key_of(p, true, vs - 1, k), o,
                                   p->bytes, &tag, &p->req[r], e);
                dev_time_msgs(p->d, was);
                p->posted[r] = rc == 0;
                p->sent += rc == 0 ? p->bytes : 0;
            }
        }
    }
    int r = drain(p, rc ? &(struct error){0} : e);
    if (!rc)
        rc = r;
    if (p->d)
        dev_set_micro(p->d, 0);
    *loss = p->part[V - 1].head ? sum / p->m : NAN;
    return rc;
}

const struct pp_done *pp_ops(const struct pp *p, int *n)
{
    *n = p->nops;
    return p->done;
}

int pp_peak_in_flight(const struct pp *p)
{
    return p->peak;
}

/* ------------------------------------------------------------------ its face */

static int check(const struct train_opts *o, struct error *e)
{
    if (o->pp > o->shape.layers || o->shape.layers % o->pp != 0)
        return error_set(e, ERR_INVAL,
                         "--pp %d: the pipeline's stages must divide the model's %d layers", o->pp,
                         o->shape.layers);
    if (o->micro_batches < 1 || o->micro_batches > SCHED_MAX_MICRO)
        return error_set(e, ERR_INVAL, "--micro-batches %d: from 1 to %d", o->micro_batches,
                         SCHED_MAX_MICRO);
    if (sched_splits(o->schedule) && o->pp < 2)
        return error_set(e, ERR_INVAL,
                         "--schedule %s needs --pp 2 or more: its W fill the bubble between "
                         "stages",
                         sched_name(o->schedule));
    if (o->schedule == SCHED_ZBV && o->shape.layers % (2 * o->pp) != 0)
        return error_set(e, ERR_INVAL,
                         "--schedule zbv with --pp %d: each stage holds 2 chunks in a V, so 2 x "
                         "%d chunks must divide the model's %d layers",
                         o->pp, o->pp, o->shape.layers);
    if (o->schedule == SCHED_ZBV)
        return sched_check(o->schedule, o->pp, o->micro_batches, 2, e);
    if (o->schedule != SCHED_INTERLEAVED)
        return 0;
    /* one stage has no other stage to interleave its chunks with (and, with one micro-batch,
     * no pipeline would run its chunks at all) */
    if (o->pp < 2)
        return error_set(e, ERR_INVAL,
                         "--schedule interleaved needs --pp 2 or more: it interleaves the "
                         "model chunks of several stages");
    int rc = sched_check(o->schedule, o->pp, o->micro_batches, o->chunks, e);
    if (rc)
        return rc;
    if (o->shape.layers % (o->pp * o->chunks) != 0)
        return error_set(e, ERR_INVAL,
                         "--pp %d x --chunks %d does not divide the model's %d layers", o->pp,
                         o->chunks, o->shape.layers);
    if (layout_dp(o) > 1)
        return error_set(e, ERR_INVAL,
                         "--schedule interleaved runs on one data-parallel copy (--dp 1) on "
                         "the thread-GPUs");
    return 0;
}

static void count(const struct train_opts *o, const struct layout_place *pl,
                  struct strategy_count *c)
{
    struct sched s;
    if (!layout_pipelined(o) ||
        sched_build(o->schedule, pl->pp, o->micro_batches, layout_chunks(o), &s, NULL))
        return;
    int last = pl->pp * s.v - 1;
    c->ops += s.count[pl->stage];
    for (int i = 0; i < s.count[pl->stage]; i++) {
        const struct sched_op *op = &s.ops[pl->stage][i];
        int vs = sched_vstage(o->schedule, pl->pp, pl->stage, op->chunk);
        int to = op->kind == SCHED_OP_F ? vs + 1 : vs - 1; /* none to this GPU's other chunk */
        bool away = to >= 0 && to <= last && sched_stage_of(o->schedule, pl->pp, to) != pl->stage;
        c->messages += op->kind != SCHED_OP_W && away;
    }
    if (pl->pp > 1) /* an input and its gradients; an output gradient and the outputs */
        c->buffers +=
            (pl->stage > 0 || s.v > 1 ? 2 : 0) + (pl->stage < pl->pp - 1 || s.v > 1 ? 2 : 0);
    sched_free(&s);
}

/* the sends of this executor, in its last step (the stage's collectives are counted apart) */
static void sent(const void *self, struct strategy_sent *s)
{
    const struct pp *p = self;
    s->bytes[STRATEGY_PP] += p->sent;
}

/* its staging copies: workspace */
static size_t mem_bytes(const void *self, enum gpt_mem kind)
{
    const struct pp *p = self;
    size_t n = (size_t)p->m * (size_t)p->v;
    if (kind != GPT_MEM_WORKSPACE)
        return 0;
    return (p->in ? p->bytes + n * p->bytes : 0) + (p->out ? p->bytes + n * p->bytes : 0);
}

const struct strategy pp_strategy = {STRATEGY_PP, check, count, NULL, NULL, sent, mem_bytes};
