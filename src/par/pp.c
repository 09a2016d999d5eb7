/* Pipeline parallelism, one GPU's part: the stage's operations in the schedule's order, with
 * the activations and their gradients sent between stages (par/pp.h). */
#include "config.h"
#include "par/pp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "par/dp.h"
#include "par/trainer.h"
#include "sim/cluster.h"

struct pp {
    struct train_place pl;
    const struct sched_op *ops; /* this stage's, in order */
    int nops;
    struct gpt *g;
    struct device *d;
    struct dp_mem mem;
    int prev, next;      /* the device ranks of the stages before and after; -1 at the ends */
    size_t mt, bytes;    /* tokens of a micro-batch; bytes of its activations */
    int m;               /* micro-batches per step */
    char *in, *dout;     /* what arrives: the input of a forward, the gradient of a backward */
    char *out, *din;     /* what leaves, one buffer per micro-batch (pending until the step ends) */
    struct dev_req *req; /* [2 m]: the forward sends, then the backward sends */
    bool *posted;
    struct pp_done *done;
    int in_flight, peak;
    uint64_t sent0, sent;
};

long pp_buffers(void)
{
    return 4; /* in, dout, out, din */
}

void pp_free(struct pp *p)
{
    if (!p)
        return;
    size_t m = (size_t)p->m;
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
    free(p->done);
    free(p);
}

int pp_new(struct pp **out, const struct train_place *pl, const struct sched *s, struct gpt *g,
           enum fp_format fmt, struct device *d, const struct dp_mem *mem, struct error *e)
{
    *out = NULL;
    struct pp *p = calloc(1, sizeof *p);
    if (!p)
        return error_set(e, ERR_NOMEM, "out of memory");
    p->pl = *pl;
    p->ops = s->ops[pl->stage];
    p->nops = s->count[pl->stage];
    p->g = g;
    p->d = d;
    p->mem = *mem;
    p->m = s->m;
    p->prev = pl->stage > 0 ? (pl->stage - 1) * pl->dp + pl->dprank : -1;
    p->next = pl->stage < pl->pp - 1 ? (pl->stage + 1) * pl->dp + pl->dprank : -1;
    const struct gpt_config *c = gpt_config(g);
    p->mt = (size_t)pl->micro * (size_t)c->seq;
    p->bytes = p->mt * (size_t)c->d * (size_t)(fp_info(fmt)->bits / 8);
    size_t m = (size_t)p->m;
    p->req = calloc(2 * m, sizeof *p->req);
    p->posted = calloc(2 * m, sizeof *p->posted);
    p->done = calloc((size_t)p->nops, sizeof *p->done);
    bool ok = p->req && p->posted && p->done;
    if (ok && p->prev >= 0)
        ok = (p->in = mem->alloc(mem->ctx, GPT_MEM_WORKSPACE, p->bytes, "pipeline input")) &&
             (p->din = mem->alloc(mem->ctx, GPT_MEM_WORKSPACE, m * p->bytes,
                                  "pipeline input gradients"));
    if (ok && p->next >= 0)
        ok = (p->dout =
                  mem->alloc(mem->ctx, GPT_MEM_WORKSPACE, p->bytes, "pipeline output gradient")) &&
             (p->out = mem->alloc(mem->ctx, GPT_MEM_WORKSPACE, m * p->bytes, "pipeline outputs"));
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
    for (int i = 0; i < 2 * p->m; i++)
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

/* The operation done, for the window's Gantt chart and the trace. */
static void emit(struct pp *p, int step, const struct pp_done *dn)
{
    if (!p->d)
        return;
    struct event ev = {.type = EV_PIPE_OP, .t = dn->start_s, .t_end = dn->end_s, .step = step};
    ev.name = dn->kind == 'F' ? "forward" : "backward";
    ev.micro = dn->micro, ev.chunk = dn->chunk;
    dev_emit(p->d, &ev);
}

int pp_step(struct pp *p, int step, const int32_t *tokens, const int32_t *targets, float scale,
            const struct gpt_inject *inj, double *loss, struct error *e)
{
    const struct gpt_part *pt = &p->pl.part;
    int slots = pt->slots, backwards = 0, rc = 0;
    double sum = 0;
    p->sent0 = p->d ? dev_stats(p->d).bytes_sent : 0;
    p->in_flight = 0;
    gpt_part_begin(p->g);
    for (int i = 0; i < p->nops && !rc; i++) {
        const struct sched_op *op = &p->ops[i];
        int k = op->micro, slot = k % slots;
        const int32_t *tok = tokens + (size_t)k * p->mt, *tgt = targets + (size_t)k * p->mt;
        struct pp_done *dn = &p->done[i];
        *dn = (struct pp_done){op->kind, k, op->chunk, 0, 0};
        if (p->d)
            dev_set_micro(p->d, k);
        if (op->kind == 'F') {
            struct dev_tag tag = {step, k, "activations", 0};
            if (p->prev >= 0 &&
                (rc = dev_recv(p->d, p->prev, p->in, p->bytes, &tag, NULL, NULL, e)))
                break;
            dn->start_s = now(p);
            char *o = p->out ? p->out + (size_t)k * p->bytes : NULL;
            double l = gpt_part_forward(p->g, slot, tok, p->in, o, tgt, inj);
            if (pt->head)
                sum += l;
            dn->end_s = now(p);
            emit(p, step, dn);
            if (++p->in_flight > p->peak)
                p->peak = p->in_flight;
            if (p->next >= 0) {
                rc = dev_isend(p->d, p->next, o, p->bytes, &tag, &p->req[k], e);
                p->posted[k] = rc == 0;
            }
        } else {
            struct dev_tag tag = {step, k, "activation gradients", 0};
            if (p->next >= 0 &&
                (rc = dev_recv(p->d, p->next, p->dout, p->bytes, &tag, NULL, NULL, e)))
                break;
            dn->start_s = now(p);
            char *o = p->din ? p->din + (size_t)k * p->bytes : NULL;
            gpt_part_backward(p->g, slot, tok, tgt, scale, p->dout, o, backwards++ > 0, inj);
            dn->end_s = now(p);
            emit(p, step, dn);
            p->in_flight--;
            if (p->prev >= 0) {
                rc = dev_isend(p->d, p->prev, o, p->bytes, &tag, &p->req[p->m + k], e);
                p->posted[p->m + k] = rc == 0;
            }
        }
    }
    int r = drain(p, rc ? &(struct error){0} : e);
    if (!rc)
        rc = r;
    p->sent = (p->d ? dev_stats(p->d).bytes_sent : 0) - p->sent0;
    *loss = pt->head ? sum / p->m : NAN;
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

uint64_t pp_sent(const struct pp *p)
{
    return p->sent;
}
