/* The algorithms' helpers (comm/algo.h): a chunk of the buffer (at the caller's bounds or
 * evenly, comm/chunk.h), and point-to-point calls between members of the algorithm's group
 * through its transport, peers translated from group indices to device ranks. ring.c, rhd.c and
 * pipe.c are built on these alone; coll.c chooses among them. */
#include "config.h"
#include "comm/algo.h"

#include "comm/chunk.h"

void algo_chunk(const struct algo *a, int n, int i, char **p, size_t *bytes)
{
    size_t off, len;
    if (a->bounds && n == a->n)
        off = a->bounds[i], len = a->bounds[i + 1] - a->bounds[i];
    else
        coll_chunk(a->count, n, i, &off, &len);
    *p = a->buf + off * a->es;
    *bytes = len * a->es;
}

static int peer_rank(const struct algo *a, int idx)
{
    return a->group ? a->group[idx] : idx;
}

int algo_sendrecv(const struct algo *a, int to, const void *sbuf, size_t sbytes, int from,
                  void *rbuf, size_t rbytes, const struct dev_tag *tag, dev_combine_fn combine,
                  void *ctx, struct error *e)
{
    return a->x->ops->sendrecv(a->x->self, peer_rank(a, to), sbuf, sbytes, peer_rank(a, from), rbuf,
                               rbytes, tag, combine, ctx, e);
}

int algo_isend(const struct algo *a, int peer, const void *buf, size_t bytes,
               const struct dev_tag *tag, struct dev_req *req, struct error *e)
{
    return a->x->ops->isend(a->x->self, peer_rank(a, peer), buf, bytes, tag, req, e);
}

int algo_recv(const struct algo *a, int peer, void *buf, size_t bytes, const struct dev_tag *tag,
              dev_combine_fn combine, void *ctx, struct error *e)
{
    return a->x->ops->recv(a->x->self, peer_rank(a, peer), buf, bytes, tag, combine, ctx, e);
}

int algo_step(const struct algo *a, int step, struct error *e)
{
    return a->x->ops->step(a->x->self, step, e);
}

int algo_wait(const struct algo *a, struct dev_req *req, struct error *e)
{
    return a->x->ops->wait(a->x->self, req, e);
}
