/* Expert parallelism's communication: the all-to-alls of one GPU's mixture-of-experts layers
 * over its expert-parallel group (par/ep.h). */
#include "config.h"
#include "par/ep.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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
    bool dropless; /* no capacity: blocks of the routing's sizes, the buffers reserved */
    uint64_t rows_out, rows_in; /* dropless: the step's dispatched rows to and from the others */
    uint64_t held_peak;         /* dropless: the most rows an exchange held (out + in), the run's */
    int me;                     /* this GPU's place in the group */
    int width;                  /* d: elements of a row */
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
    x->dropless = !(m->capacity_factor > 0);
    x->width = o->shape.d;
    /* the static [E, cap, d] rows of a micro-batch's tokens, in each buffer; dropless, the most
     * an exchange holds: its k n rows and the most that can come (base/experts.h) */
    double n = (double)pl->micro * o->shape.seq;
    size_t rows = (size_t)experts_rows_held(n, m->experts, m->top_k, m->capacity_factor, pl->ep);
    if (x->dropless)
        rows += (size_t)(n * m->top_k);
    x->group = malloc((size_t)x->n * sizeof *x->group);
    if (!x->group) {
        free(x);
        return error_set(e, ERR_NOMEM, "out of memory for expert parallelism");
    }
    layout_ep_group(pl, x->group);
    for (int i = 0; i < x->n; i++)
        if (x->group[i] == dev_rank(d))
            x->me = i;
    int rc = (x->dropless ? xbuf_reserve : xbuf_init)(
        &x->x, d, mem, o->precision, rows * (size_t)o->shape.d, "expert all-to-all send",
        "expert all-to-all receive", "expert parallelism", e);
    if (rc) {
        ep_free(x);
        return rc;
    }
    *out = x;
    return 0;
}

/* One all-to-all for both ways of sizing the blocks: the static shape's equal ones go through
 * MPI_Alltoallv's counts as the routing's do (the same pairwise sends, bytes and phases), and
 * only the buffers differ: the static ones are held, the dropless block charged by what an
 * exchange holds. */
void ep_alltoallv(struct ep_group *x, const float *send, const size_t *sendcounts, float *recv,
                  const size_t *recvcounts, const char *what)
{
    struct xbuf *b = x ? &x->x : NULL;
    size_t n = 0, m = 0;
    for (int j = 0; x && j < x->n; j++)
        n += sendcounts[j], m += recvcounts[j];
    const char *name = "expert parallelism's all-to-all";
    if (!b || !(x->dropless ? xbuf_pack_v(b, send, n, m, name) : xbuf_pack(b, send, n, name)))
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
                     .phase = what,
                     .sendcounts = sendcounts,
                     .recvcounts = recvcounts};
    uint64_t before = xbuf_device_sent(b);
    if (!x->dropless) {
        xbuf_unpack(b, coll_run(b->d, &c, &b->err), before, recv, m);
        return;
    }
    if (!strcmp(what, GPT_EP_DISPATCH)) /* the tokens' rows that leave and that come, once a pass */
        for (int j = 0; j < x->n; j++)
            if (j != x->me)
                x->rows_out += sendcounts[j] / (size_t)x->width,
                    x->rows_in += recvcounts[j] / (size_t)x->width;
    if ((n + m) / (size_t)x->width > x->held_peak)
        x->held_peak = (n + m) / (size_t)x->width;
    xbuf_unpack_v(b, coll_run(b->d, &c, &b->err), before, recv, n, m);
}

void ep_counts(struct ep_group *x, const int32_t *send, int32_t *recv, size_t n, const char *what)
{
    struct xbuf *b = x ? &x->x : NULL;
    if (!b || !b->d || b->err.code)
        return;
    /* 4-byte words: an all-to-all only copies them, so fp32's width carries them exactly */
    struct coll c = {.op = COST_ALLTOALL,
                     .algo = COST_PAIRWISE,
                     .buf = (void *)send,
                     .recv = recv,
                     .count = n,
                     .dtype = FP_FP32,
                     .group = x->group,
                     .group_size = x->n,
                     .phase = what};
    uint64_t before = xbuf_device_sent(b);
    coll_run(b->d, &c, &b->err);
    b->sent += xbuf_device_sent(b) - before;
}

void ep_rows(const struct ep_group *x, uint64_t *out, uint64_t *in, uint64_t *held)
{
    *out = x ? x->rows_out : 0, *in = x ? x->rows_in : 0, *held = x ? x->held_peak : 0;
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
    struct gpt_calls n = layout_calls(o, pl);
    c->buffers += 2;
    c->messages += (pl->ep - 1) * n.ep_a2a;  /* dropless: the counts' too */
    if (!(o->shape.moe.capacity_factor > 0)) /* dropless: each exchange charges and releases */
        c->charges += 2 * (n.ep_a2a - n.ep_counts);
}

static void step_begin(void *self)
{
    struct ep_group *x = self;
    xbuf_step_begin(&x->x);
    x->rows_out = x->rows_in = 0;
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
    if (kind != x->x.kind) /* reserved (dropless): charged, not held, as communication */
        return 0;
    return kind == GPT_MEM_ARENA ? x->x.bytes : 2 * x->x.bytes;
}

const struct strategy ep_strategy = {STRATEGY_EP, check, count,    step_begin,
                                     failed,      sent,  mem_bytes};
