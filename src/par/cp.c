/* Context parallelism's communication: the ring steps of one GPU's attention over its
 * context-parallel group (par/cp.h). */
#include "config.h"
#include "par/cp.h"

#include <stdlib.h>

#include "base/error.h"
#include "num/fp.h"
#include "par/dp.h"
#include "par/layout.h"
#include "sim/cluster.h"

struct cp_ring {
    struct device *d;
    int next, prev; /* the device ranks the ring sends to and receives from */
    struct dp_mem mem;
    enum fp_format fmt;
    void *sbuf, *rbuf; /* a block's K, V, dK, dV in the training format */
    size_t buf_bytes;
    uint64_t sent;
    struct error err;
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
    c->d = d, c->mem = *mem, c->fmt = o->precision;
    c->next = layout_rank(pl, LAYOUT_CP, (pl->cprank + 1) % pl->cp);
    c->prev = layout_rank(pl, LAYOUT_CP, (pl->cprank + pl->cp - 1) % pl->cp);
    /* K, V, dK, dV of this GPU's tokens and heads: 4 x micro x seq / cp x d / tp elements */
    size_t elems =
        4 * (size_t)pl->micro * (size_t)(o->shape.seq / pl->cp) * (size_t)(o->shape.d / pl->tp);
    c->buf_bytes = elems * (size_t)(fp_info(c->fmt)->bits / 8);
    c->sbuf = mem->alloc(mem->ctx, GPT_MEM_COMM, c->buf_bytes, "ring send buffer");
    c->rbuf = mem->alloc(mem->ctx, GPT_MEM_COMM, c->buf_bytes, "ring receive buffer");
    if (!c->sbuf || !c->rbuf) {
        cp_free(c);
        return error_set(e, ERR_NOMEM, "out of memory for context parallelism's ring buffers");
    }
    *out = c;
    return 0;
}

void cp_free(struct cp_ring *c)
{
    if (!c)
        return;
    if (c->sbuf)
        c->mem.free(c->mem.ctx, GPT_MEM_COMM, c->sbuf, c->buf_bytes);
    if (c->rbuf)
        c->mem.free(c->mem.ctx, GPT_MEM_COMM, c->rbuf, c->buf_bytes);
    free(c);
}

void cp_step_begin(struct cp_ring *c)
{
    if (c)
        c->sent = 0;
}

void cp_shift(struct cp_ring *c, const float *send, float *recv, size_t n, const char *what)
{
    if (!c || !c->d || c->err.code)
        return;
    size_t bytes = n * (size_t)(fp_info(c->fmt)->bits / 8);
    if (bytes > c->buf_bytes) {
        error_set(&c->err, ERR_RUN,
                  "context parallelism: %zu elements round the ring, room for %zu", n,
                  c->buf_bytes / (size_t)(fp_info(c->fmt)->bits / 8));
        return;
    }
    fp_pack_n(c->fmt, c->sbuf, send, n); /* the values are in the format already: exact */
    struct dev_tag tag = {.phase = what};
    uint64_t before = dev_stats(c->d).bytes_sent;
    if (dev_sendrecv(c->d, c->next, c->sbuf, bytes, c->prev, c->rbuf, bytes, &tag, NULL, NULL,
                     &c->err) == 0)
        fp_unpack_n(c->fmt, recv, c->rbuf, n);
    c->sent += dev_stats(c->d).bytes_sent - before;
}

int cp_failed(const struct cp_ring *c, struct error *e)
{
    if (!c || !c->err.code)
        return 0;
    *e = c->err;
    return c->err.code;
}

uint64_t cp_sent(const struct cp_ring *c)
{
    return c ? c->sent : 0;
}

size_t cp_mem_bytes(const struct cp_ring *c, enum gpt_mem kind)
{
    return c && kind == GPT_MEM_COMM ? 2 * c->buf_bytes : 0;
}
