/* Expert parallelism's communication: the all-to-alls of one GPU's mixture-of-experts layers
 * over its expert-parallel group (par/ep.h). */
#include "config.h"
#include "par/ep.h"

#include <stdlib.h>

#include "base/error.h"
#include "comm/coll.h"
#include "base/experts.h"
#include "num/fp.h"
#include "par/dp.h"
#include "par/layout.h"
#include "par/xbuf.h"
#include "sim/cluster.h"

struct ep_group {
    struct xbuf x; /* room for a layer's rows in the training format */
    int n;         /* the group's GPUs */
    int *group;    /* their device ranks, in expert rank order */
};

void ep_free(struct ep_group *x)
{
    if (!x)
        return;
    xbuf_fini(&x->x);
    free(x->group);
    free(x);
}

int ep_new(struct ep_group **out, const struct train_opts *o, const struct layout_place *pl,
           struct device *d, const struct dp_mem *mem, struct error *e)
{
    *out = NULL;
    if (pl->ep == 1)
        return 0;
    struct ep_group *x = calloc(1, sizeof *x);
    if (!x)
        return error_set(e, ERR_NOMEM, "out of memory for expert parallelism");
    const struct gpt_moe *m = &o->shape.moe;
    x->n = pl->ep;
    /* the static [E, cap, d] rows of a micro-batch's tokens */
    size_t rows =
        (size_t)experts_rows(pl->micro * o->shape.seq, m->experts, m->top_k, m->capacity_factor);
    x->group = malloc((size_t)x->n * sizeof *x->group);
    if (!x->group) {
        free(x);
        return error_set(e, ERR_NOMEM, "out of memory for expert parallelism");
    }
    layout_ep_group(pl, x->group);
    int rc =
        xbuf_init(&x->x, d, mem, o->precision, rows * (size_t)o->shape.d, "expert all-to-all send",
                  "expert all-to-all receive", "expert parallelism", e);
    if (rc) {
        ep_free(x);
        return rc;
    }
    *out = x;
    return 0;
}

void ep_alltoall(struct ep_group *x, const float *send, float *recv, size_t n, const char *what)
{
    struct xbuf *b = x ? &x->x : NULL;
    if (!b || !xbuf_pack(b, send, n, "expert parallelism's all-to-all"))
        return;
    /* the all-to-all's sends carry what it moves (dispatch or combine, forward or backward) */
    struct coll c = {.op = COST_ALLTOALL,
                     .algo = COST_PAIRWISE,
                     .buf = b->send,
                     .recv = b->recv,
                     .count = n,
                     .dtype = b->fmt,
                     .group = x->group,
                     .group_size = x->n,
                     .phase = what};
    uint64_t before = xbuf_device_sent(b);
    xbuf_unpack(b, coll_run(b->d, &c, &b->err), before, recv, n);
}

/* ------------------------------------------------------------------ its face */

static int check(const struct train_opts *o, struct error *e)
{
    const struct gpt_moe *m = &o->shape.moe;
    int dp = layout_dp(o);
    if (o->ep < 1 || o->ep > TRAIN_MAX_GPUS)
        return error_set(e, ERR_INVAL, "--ep %d: from 1 to %d", o->ep, TRAIN_MAX_GPUS);
    if (o->ep == 1)
        return 0;
    if (!m->experts)
        return error_set(e, ERR_INVAL, "--ep %d goes with --experts: the model has none", o->ep);
    if (m->experts % o->ep)
        return error_set(e, ERR_INVAL, "--ep %d must divide the %d experts", o->ep, m->experts);
    if (dp % o->ep)
        return error_set(e, ERR_INVAL,
                         "--ep %d must divide the %d data-parallel ranks (expert parallelism "
                         "splits them, as Megatron-LM's expert-model-parallel size does)",
                         o->ep, dp);
    size_t x = (size_t)gpt_moe_layers(&o->shape) * (size_t)(m->experts / o->ep) * 3 *
               (size_t)o->shape.d * (size_t)o->shape.ffn;
    if (x % (size_t)(dp / o->ep))
        return error_set(e, ERR_INVAL,
                         "--dp %d / --ep %d GPUs hold the same %zu expert parameters and reduce "
                         "their gradients in even shards: they must divide them",
                         dp, o->ep, x);
    if (!(m->capacity_factor > 0))
        return error_set(e, ERR_INVAL,
                         "--ep %d needs --capacity-factor > 0: the all-to-alls send each expert's "
                         "static [capacity, d] rows",
                         o->ep);
    if (o->tp > 1 || o->cp > 1 || o->pp > 1)
        return error_set(e, ERR_INVAL,
                         "--ep %d runs with data parallelism only on the thread-GPUs (not --tp, "
                         "--cp, --pp)",
                         o->ep);
    if (o->zero > 1)
        return error_set(e, ERR_INVAL,
                         "--ep %d with --zero %d: the thread-GPUs run expert parallelism with "
                         "DDP and ZeRO-1 (--zero 0 or 1) for now",
                         o->ep, o->zero);
    return 0;
}

static void count(const struct train_opts *o, const struct layout_place *pl,
                  struct strategy_count *c)
{
    if (pl->ep == 1)
        return;
    c->buffers += 2;
    c->messages += (pl->ep - 1) * layout_calls(o, pl).ep_a2a;
}

static void step_begin(void *self)
{
    struct ep_group *x = self;
    xbuf_step_begin(&x->x);
}

static int failed(const void *self, struct error *e)
{
    const struct ep_group *x = self;
    return xbuf_failed(&x->x, e);
}

static void sent(const void *self, struct strategy_sent *s)
{
    const struct ep_group *x = self;
    s->bytes[STRATEGY_EP] += x->x.sent;
}

static size_t mem_bytes(const void *self, enum gpt_mem kind)
{
    const struct ep_group *x = self;
    return kind == GPT_MEM_COMM ? 2 * x->x.bytes : 0;
}

const struct strategy ep_strategy = {STRATEGY_EP, check, count,    step_begin,
                                     failed,      sent,  mem_bytes};
