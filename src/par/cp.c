/* Context parallelism's communication: the ring steps of one GPU's attention over its
 * context-parallel group (par/cp.h). */
#include "config.h"
#include "par/cp.h"

#include <stdbool.h>
#include <stdlib.h>

#include "base/error.h"
#include "model/ringattn.h"
#include "num/fp.h"
#include "par/dp.h"
#include "par/layout.h"
#include "par/xbuf.h"
#include "sim/cluster.h"

struct cp_ring {
    struct xbuf x;  /* room for a block's K, V, dK, dV in the training format */
    int next, prev; /* the device ranks the ring sends to and receives from */
    struct dp_mem mem;
    int seq, cp, cprank; /* the sequence's tokens, the ring's GPUs and this one's place */
    enum ring_split split;
    int32_t *share; /* this GPU's tokens of a data-parallel share's sequences, then targets */
    size_t share_bytes;
    /* the ring step posted (cp_post) and not yet waited for */
    bool posted;
    struct dev_req req;
    struct dev_tag tag;
    size_t bytes;
    uint64_t before;
};

int cp_new(struct cp_ring **out, const struct train_opts *o, const struct layout_place *pl,
           struct device *d, const struct dp_mem *mem, struct error *e)
{
    *out = NULL;
    if (pl->cp == 1)
        return 0;
    struct cp_ring *c = calloc(1, sizeof *c);
    if (!c)
        return error_set(e, ERR_NOMEM, "out of memory for context parallelism");
    c->mem = *mem;
    c->next = layout_rank(pl, LAYOUT_CP, (pl->cprank + 1) % pl->cp);
    c->prev = layout_rank(pl, LAYOUT_CP, (pl->cprank + pl->cp - 1) % pl->cp);
    /* K, V, dK, dV of this GPU's tokens and heads: 4 x micro x seq / cp x d / tp elements */
    size_t elems =
        4 * (size_t)pl->micro * (size_t)(o->shape.seq / pl->cp) * (size_t)(o->shape.d / pl->tp);
    c->seq = o->shape.seq, c->cp = pl->cp, c->cprank = pl->cprank;
    c->split = o->cp_naive ? RING_NAIVE : RING_BALANCED;
    c->share_bytes = 2 * (size_t)(o->batch / pl->dp) * (size_t)(c->seq / c->cp) * sizeof(int32_t);
    int rc = xbuf_init(&c->x, d, mem, o->precision, elems, "ring send buffer",
                       "ring receive buffer", "context parallelism's ring", e);
    if (rc) {
        free(c);
        return rc;
    }
    c->share = mem->alloc(mem->ctx, GPT_MEM_WORKSPACE, c->share_bytes, "batch share");
    if (!c->share) {
        cp_free(c);
        return error_set(e, ERR_NOMEM, "out of memory for context parallelism's batch share");
    }
    *out = c;
    return 0;
}

void cp_free(struct cp_ring *c)
{
    if (!c)
        return;
    xbuf_fini(&c->x);
    if (c->share)
        c->mem.free(c->mem.ctx, GPT_MEM_WORKSPACE, c->share, c->share_bytes);
    free(c);
}

void cp_share(struct cp_ring *c, int rows, const int32_t **tokens, const int32_t **targets)
{
    size_t T = (size_t)c->seq, n = T / (size_t)c->cp, share = (size_t)rows * n;
    const int32_t *whole[2] = {*tokens, *targets};
    for (size_t k = 0; k < 2; k++) /* the tokens, the targets */
        for (size_t b = 0; b < (size_t)rows; b++)
            for (size_t i = 0; i < n; i++)
                c->share[k * share + b * n + i] =
                    whole[k][b * T +
                             (size_t)ring_position((int)T, c->cp, c->cprank, c->split, (int)i)];
    *tokens = c->share, *targets = c->share + share;
}

void cp_post(struct cp_ring *c, const float *send, size_t n, const char *what)
{
    struct xbuf *x = c ? &c->x : NULL;
    if (!x || !xbuf_pack(x, send, n, "context parallelism's ring"))
        return;
    c->tag = (struct dev_tag){.phase = what};
    c->bytes = xbuf_size(x, n);
    c->before = xbuf_device_sent(x);
    c->posted = dev_isend(x->d, c->next, x->send, c->bytes, &c->tag, &c->req, &x->err) == 0;
}

void cp_wait(struct cp_ring *c, float *recv, size_t n)
{
    if (!c || !c->posted)
        return;
    struct xbuf *x = &c->x;
    struct error we;
    c->posted = false;
    int rc = dev_recv(x->d, c->prev, x->recv, c->bytes, &c->tag, NULL, NULL, &x->err);
    int wrc = dev_wait(x->d, &c->req, rc ? &we : &x->err);
    xbuf_unpack(x, rc ? rc : wrc, c->before, recv, n);
}

/* ------------------------------------------------------------------ its face */

static int check(const struct train_opts *o, struct error *e)
{
    enum ring_split split = o->cp_naive ? RING_NAIVE : RING_BALANCED;
    if (o->cp > 1 && o->attention == TRAIN_ATTN_EAGER)
        return error_set(e, ERR_INVAL,
                         "--attention eager with --cp %d: ring attention is a flash-style kernel, "
                         "it never holds the probabilities (--attention flash)",
                         o->cp);
    if (train_flash(o) && o->ckpt.kind == CKPT_SELECTIVE)
        return error_set(e, ERR_INVAL,
                         "--checkpoint selective with flash attention%s: the trainer's flash "
                         "kernel keeps no probabilities and does not recompute its core alone "
                         "(memory --checkpoint selective counts Megatron-LM's, which does); use "
                         "full, or eager attention with --cp 1",
                         o->cp > 1 ? " (--cp's ring)" : "");
    if (o->cp_naive && o->cp == 1)
        return error_set(e, ERR_INVAL,
                         "--cp-naive splits a sequence over the context-parallel GPUs: it goes "
                         "with --cp 2 or more");
    if (o->cp == 1)
        return 0;
    if (!ring_split_ok(o->shape.seq, o->cp, split))
        return error_set(e, ERR_INVAL,
                         "--cp %d cuts the sequence of %d tokens in %d chunks%s: it must divide "
                         "it",
                         o->cp, o->shape.seq, split == RING_NAIVE ? o->cp : 2 * o->cp,
                         split == RING_NAIVE ? " (--cp-naive)" : " of T / 2C tokens");
    if (o->sp && (o->shape.seq / o->cp) % o->tp)
        return error_set(e, ERR_INVAL,
                         "--sequence-parallel splits each GPU's %d tokens (seq / --cp %d) over "
                         "--tp %d: it must divide them",
                         o->shape.seq / o->cp, o->cp, o->tp);
    return 0;
}

static void count(const struct train_opts *o, const struct layout_place *pl,
                  struct strategy_count *c)
{
    if (pl->cp == 1)
        return;
    c->buffers += 3;
    c->messages += layout_calls(o, pl).cp_shift;
}

static void step_begin(void *self)
{
    struct cp_ring *c = self;
    xbuf_step_begin(&c->x);
}

static int failed(const void *self, struct error *e)
{
    const struct cp_ring *c = self;
    return xbuf_failed(&c->x, e);
}

static void sent(const void *self, struct strategy_sent *s)
{
    const struct cp_ring *c = self;
    s->bytes[STRATEGY_CP] += c->x.sent;
}

static size_t mem_bytes(const void *self, enum gpt_mem kind)
{
    const struct cp_ring *c = self;
    return kind == GPT_MEM_COMM ? 2 * c->x.bytes : kind == GPT_MEM_WORKSPACE ? c->share_bytes : 0;
}

const struct strategy cp_strategy = {STRATEGY_CP, check, count,    step_begin,
                                     failed,      sent,  mem_bytes};
