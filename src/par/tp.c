/* Tensor and sequence parallelism's communication over a GPU's tensor-parallel group
 * (par/tp.h). */
#include "config.h"
#include "par/tp.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "comm/coll.h"
#include "num/fp.h"
#include "par/dp.h"
#include "par/layout.h"
#include "sim/cluster.h"

struct tp_group {
    struct device *d;
    int n;      /* the group's GPUs */
    int *group; /* their device ranks */
    struct dp_mem mem;
    enum fp_format fmt, gdt; /* the activations' and the gradients' formats */
    const struct gpt_config *shape;
    void *buf; /* a sum in the training format: a micro-batch's b s h elements */
    size_t buf_bytes;
    /* sequence parallelism: where the norms are, and room to sum their gradients */
    bool sp;
    size_t *norm_off, norm_max;
    float *norm_buf;
    void *norm_wire;
    size_t bytes[GPT_MEM_KINDS];
    uint64_t sent;
    struct error err;
};

static void *tp_alloc(struct tp_group *t, size_t bytes, const char *what)
{
    void *p = t->mem.alloc(t->mem.ctx, GPT_MEM_WORKSPACE, bytes, what);
    if (p)
        t->bytes[GPT_MEM_WORKSPACE] += bytes;
    return p;
}

void tp_free(struct tp_group *t)
{
    if (!t)
        return;
    size_t nb = t->norm_max * (size_t)t->shape->d * 4;
    if (t->buf)
        t->mem.free(t->mem.ctx, GPT_MEM_WORKSPACE, t->buf, t->buf_bytes);
    if (t->norm_buf)
        t->mem.free(t->mem.ctx, GPT_MEM_WORKSPACE, t->norm_buf, nb);
    if (t->norm_wire)
        t->mem.free(t->mem.ctx, GPT_MEM_WORKSPACE, t->norm_wire, nb / 2);
    free(t->norm_off);
    free(t->group);
    free(t);
}

int tp_new(struct tp_group **out, const struct train_opts *o, const struct layout_place *pl,
           struct device *d, const struct dp_mem *mem, struct error *e)
{
    *out = NULL;
    if (pl->tp == 1)
        return 0;
    struct tp_group *t = calloc(1, sizeof *t);
    if (!t)
        return error_set(e, ERR_NOMEM, "out of memory for tensor parallelism");
    t->d = d, t->n = pl->tp, t->mem = *mem, t->shape = &o->shape;
    t->fmt = o->precision;
    t->gdt = o->precision == FP_FP32 || o->grad_fp32 ? FP_FP32 : o->precision;
    t->buf_bytes = (size_t)pl->micro * o->shape.seq * o->shape.d * 2;
    t->group = malloc((size_t)t->n * sizeof *t->group);
    if (t->group)
        layout_group(pl, LAYOUT_TP, t->group);
    if (o->precision != FP_FP32)
        t->buf = tp_alloc(t, t->buf_bytes, "tensor-parallel sums");
    if (!t->group || (o->precision != FP_FP32 && !t->buf)) {
        tp_free(t);
        return error_set(e, ERR_NOMEM, "out of memory for tensor parallelism");
    }
    if (o->sp) { /* at most every layer's two norms and the final one */
        t->sp = true;
        t->norm_max = 2 * (size_t)o->shape.layers + 1;
        size_t bytes = t->norm_max * (size_t)o->shape.d * 4;
        t->norm_off = malloc(t->norm_max * sizeof *t->norm_off);
        t->norm_buf = tp_alloc(t, bytes, "norm gradients");
        t->norm_wire = tp_alloc(t, bytes / 2, "norm gradients, 16-bit");
        if (!t->norm_off || !t->norm_buf || !t->norm_wire) {
            tp_free(t);
            return error_set(e, ERR_NOMEM, "out of memory for sequence parallelism");
        }
    }
    *out = t;
    return 0;
}

/* A collective over the group, its bytes counted. */
static int run(struct tp_group *t, struct coll *c, struct error *e)
{
    c->algo = COST_RING;
    c->group = t->group, c->group_size = t->n;
    uint64_t before = dev_stats(t->d).bytes_sent;
    int rc = coll_run(t->d, c, e);
    t->sent += dev_stats(t->d).bytes_sent - before;
    return rc;
}

void tp_collective(struct tp_group *t, float *buf, size_t n, enum gpt_tp_op op, const char *what)
{
    (void)what;
    if (!t || !t->d || t->err.code)
        return;
    bool fp32 = op == GPT_TP_SUM_FP32 || op == GPT_TP_MAX_FP32;
    enum fp_format fmt = fp32 ? FP_FP32 : t->fmt;
    enum cost_op cop = op == GPT_TP_GATHER    ? COST_ALLGATHER
                       : op == GPT_TP_SCATTER ? COST_REDUCE_SCATTER
                                              : COST_ALLREDUCE;
    struct coll c = {
        .op = cop, .buf = buf, .count = n, .dtype = FP_FP32, .max = op == GPT_TP_MAX_FP32};
    size_t es = fmt == FP_FP32 ? 4 : 2;
    if (fmt != FP_FP32) {
        if (n * es > t->buf_bytes) {
            error_set(&t->err, ERR_RUN, "tensor parallelism: %zu elements to sum, room for %zu", n,
                      t->buf_bytes / es);
            return;
        }
        fp_pack_n(fmt, t->buf, buf, n);
        c.buf = t->buf, c.dtype = fmt;
    }
    run(t, &c, &t->err);
    if (fmt != FP_FP32)
        fp_unpack_n(fmt, buf, t->buf, n);
}

int tp_norm_sync(struct tp_group *t, struct gpt *const *g, const struct gpt_part *parts, int v,
                 struct error *e)
{
    if (!t || !t->sp || !t->d)
        return 0;
    size_t d = (size_t)t->shape->d;
    for (int c = 0; c < v; c++) {
        size_t n = gpt_part_norms(t->shape, &parts[c], t->norm_off, t->norm_max);
        float *grads = gpt_grads(g[c]);
        for (size_t k = 0; k < n; k++)
            memcpy(t->norm_buf + k * d, grads + t->norm_off[k], d * 4);
        void *buf = t->norm_buf;
        if (t->gdt != FP_FP32) { /* the values are in the format already: exact */
            buf = t->norm_wire;
            fp_pack_n(t->gdt, buf, t->norm_buf, n * d);
        }
        struct coll cl = {.op = COST_ALLREDUCE, .buf = buf, .count = n * d, .dtype = t->gdt};
        int rc = run(t, &cl, e);
        if (rc)
            return rc;
        if (t->gdt != FP_FP32)
            fp_unpack_n(t->gdt, t->norm_buf, buf, n * d);
        for (size_t k = 0; k < n; k++)
            memcpy(grads + t->norm_off[k], t->norm_buf + k * d, d * 4);
    }
    return 0;
}

/* ------------------------------------------------------------------ its face */

static int check(const struct train_opts *o, struct error *e)
{
    if (o->shape.heads % o->tp || o->shape.ffn % o->tp || o->shape.vocab % o->tp)
        return error_set(e, ERR_INVAL,
                         "--tp %d must divide the attention heads (%d) and the FFN width (%d), "
                         "which it splits, and the vocabulary (%d)",
                         o->tp, o->shape.heads, o->shape.ffn, o->shape.vocab);
    if (o->sp && o->shape.seq % o->tp)
        return error_set(e, ERR_INVAL,
                         "--sequence-parallel splits the sequence of %d tokens over --tp %d: it "
                         "must divide it",
                         o->shape.seq, o->tp);
    return 0;
}

static void count(const struct train_opts *o, const struct layout_place *pl,
                  struct strategy_count *c)
{
    if (pl->tp == 1)
        return;
    struct gpt_calls g = layout_calls(o, pl);
    long hop = pl->tp - 1; /* a ring pass: T - 1 sends */
    c->buffers += (o->precision != FP_FP32) + (o->sp ? 2 : 0);
    c->messages += 2 * hop * g.tp_sum + hop * g.tp_half;
    if (o->sp) /* the norms' gradients, each chunk's once */
        c->messages += 2 * hop * layout_chunks(o);
}

static void step_begin(void *self)
{
    struct tp_group *t = self;
    t->sent = 0;
}

static int failed(const void *self, struct error *e)
{
    const struct tp_group *t = self;
    if (t->err.code)
        *e = t->err;
    return t->err.code;
}

static void sent(const void *self, struct strategy_sent *s)
{
    const struct tp_group *t = self;
    s->bytes[STRATEGY_TP] += t->sent;
}

static size_t mem_bytes(const void *self, enum gpt_mem kind)
{
    const struct tp_group *t = self;
    return kind < GPT_MEM_KINDS ? t->bytes[kind] : 0;
}

const struct strategy tp_strategy = {STRATEGY_TP, check, count,    step_begin,
                                     failed,      sent,  mem_bytes};
