/* The collectives' entry point: checks a call, picks the algorithm, cuts the chunks (evenly
 * or at given bounds), maps a group's members to device ranks and dispatches to ring.c,
 * rhd.c and pipe.c (comm/coll.h). */
#include "config.h"
#include "comm/coll.h"

#include <string.h>

#include "base/error.h"
#include "comm/algo.h"
#include "comm/reduce.h"

void coll_net(const struct cluster_spec *s, int n, struct cost_net *net)
{
    net->gpus = n;
    net->gpus_per_node = s->gpus_per_node;
    net->alpha_intra = s->alpha_intra;
    net->beta_intra = s->beta_intra;
    net->alpha_inter = s->alpha_inter;
    net->beta_inter = s->beta_inter;
}

enum cost_algo coll_resolve(const struct cluster_spec *s, int n, enum cost_op op,
                            enum cost_algo algo, double bytes)
{
    if (algo != COST_AUTO)
        return algo;
    struct cost_net net;
    coll_net(s, n, &net);
    return cost_best_algo(op, &net, bytes);
}

int coll_pipeline_chunks(const struct cluster_spec *s, int n, enum cost_op op, enum cost_algo algo,
                         double bytes, size_t count)
{
    struct cost_net net;
    coll_net(s, n, &net);
    int p = cost_chunks(op, algo, &net, bytes);
    /* the double binary tree cuts each tree's half, the others the whole buffer */
    size_t most = algo == COST_DBTREE ? count / 2 + count % 2 : count;
    if ((size_t)p > most)
        p = most > 0 ? (int)most : 1;
    return p;
}

/* The chunks of a pipelined algorithm, as comm/cost.c counts them. */
static int chunks_for(const struct cluster_spec *s, int n, enum cost_op op, enum cost_algo algo,
                      size_t count, size_t es)
{
    return coll_pipeline_chunks(s, n, op, algo, (double)count * (double)es, count);
}

int coll_steps(const struct cluster_spec *s, int n, enum cost_op op, enum cost_algo algo,
               size_t count, enum fp_format dt)
{
    algo = coll_resolve(s, n, op, algo, (double)count * (double)reduce_elem_size(dt));
    if (n == 1)
        return 0;
    int k = op == COST_ALLREDUCE ? 2 : 1, lg = cost_log2(n);
    switch (algo) {
    case COST_RING:
        if (op == COST_BROADCAST || op == COST_REDUCE)
            return chunks_for(s, n, op, algo, count, reduce_elem_size(dt));
        return k * (n - 1);
    case COST_RHD: return k * lg + (n != (1 << lg) ? 2 : 0);
    case COST_PAIRWISE: return n - 1;
    case COST_DIRECT: return 1;
    case COST_TREE:
    case COST_DBTREE:
        return (op == COST_ALLREDUCE ? 2 : 1) *
               chunks_for(s, n, op, algo, count, reduce_elem_size(dt));
    default: return 0;
    }
}

static int dispatch(enum cost_op op, enum cost_algo algo, const struct algo *a, struct error *e);

int coll_run(struct device *d, const struct coll *c, struct error *e)
{
    struct xport x;
    xport_thread(&x, d);
    return coll_run_on(&x, c, e);
}

int coll_alltoall_check(size_t count, int n, struct error *e)
{
    if (n > 0 && count % (size_t)n != 0)
        return error_set(e, ERR_INVAL,
                         "all-to-all sends count/N elements to each GPU: %zu elements do not "
                         "split into %d equal blocks",
                         count, n);
    return 0;
}

int coll_run_on(const struct xport *x, const struct coll *c, struct error *e)
{
    int n = c->group ? c->group_size : x->size, me = x->rank;
    if (c->group) {
        if (n < 1 || n > x->size)
            return error_set(e, ERR_INVAL, "a group holds 1 to %d GPUs, not %d", x->size, n);
        me = -1;
        for (int i = 0; i < n; i++) {
            if (c->group[i] < 0 || c->group[i] >= x->size)
                return error_set(e, ERR_INVAL, "GPU %d of the group is not in the cluster",
                                 c->group[i]);
            for (int j = 0; j < i; j++)
                if (c->group[j] == c->group[i])
                    return error_set(e, ERR_INVAL, "GPU %d is twice in the group", c->group[i]);
            if (c->group[i] == x->rank)
                me = i;
        }
        if (me < 0)
            return error_set(e, ERR_INVAL, "GPU %d calls a collective of a group it is not in",
                             x->rank);
    }
    const struct cluster_spec *s = x->spec;
    struct algo a = {
        .x = x,
        .buf = c->buf,
        .count = c->count,
        .es = reduce_elem_size(c->dtype),
        .dt = c->dtype,
        .n = n,
        .rank = me,
        .root = c->root,
        .stream = c->stream,
        .bounds = c->bounds,
        .group = c->group,
        .combine = c->max ? reduce_max : reduce_sum,
        .phase = c->phase ? c->phase : COLL_ALLTOALL_PHASE,
        .sendcounts = c->sendcounts,
        .recvcounts = c->recvcounts,
    };
    if (c->max && (c->dtype != FP_FP32 || c->op == COST_ALLGATHER || c->op == COST_BROADCAST ||
                   c->op == COST_ALLTOALL))
        return error_set(e, ERR_INVAL, "a maximum reduces fp32 data");
    if (c->op == COST_ALLTOALL) {
        size_t rcount = c->count;
        if (!c->sendcounts != !c->recvcounts)
            return error_set(e, ERR_INVAL, "an all-to-all's block sizes go both ways");
        if (c->sendcounts) {
            size_t sum = 0;
            rcount = 0;
            for (int i = 0; i < n; i++)
                sum += c->sendcounts[i], rcount += c->recvcounts[i];
            if (sum != c->count)
                return error_set(e, ERR_INVAL,
                                 "an all-to-all's blocks hold %zu elements, not its count %zu", sum,
                                 c->count);
        } else if (coll_alltoall_check(c->count, n, e)) {
            return ERR_INVAL;
        }
        if (!c->recv ||
            (c->count > 0 && rcount > 0 && (char *)c->recv < (char *)c->buf + c->count * a.es &&
             (char *)c->buf < (char *)c->recv + rcount * a.es))
            return error_set(e, ERR_INVAL, "all-to-all receives into a buffer of its own");
        a.recv = c->recv;
    } else if (c->recv) {
        return error_set(e, ERR_INVAL, "only all-to-all has a receive buffer");
    }
    if (a.es == 0)
        return error_set(e, ERR_INVAL, "collectives carry fp32, bf16 or fp16 data");
    if ((c->op == COST_BROADCAST || c->op == COST_REDUCE) && (c->root < 0 || c->root >= n))
        return error_set(e, ERR_INVAL, "the root must be a GPU from 0 to %d, not %d", n - 1,
                         c->root);
    enum cost_algo algo = coll_resolve(s, n, c->op, c->algo, (double)c->count * (double)a.es);
    if (!cost_supported(c->op, algo, n, e))
        return ERR_INVAL;
    if (c->bounds) {
        if (algo != COST_RING ||
            (c->op != COST_ALLREDUCE && c->op != COST_REDUCE_SCATTER && c->op != COST_ALLGATHER))
            return error_set(e, ERR_INVAL,
                             "chunk bounds go with ring all-reduce, "
                             "reduce-scatter and all-gather only");
        if (c->bounds[0] != 0 || c->bounds[n] != c->count)
            return error_set(e, ERR_INVAL, "chunk bounds must cover the buffer");
        for (int i = 0; i < n; i++)
            if (c->bounds[i] > c->bounds[i + 1])
                return error_set(e, ERR_INVAL, "chunk bounds must not decrease");
    }
    if (c->stream < 0 || c->stream + (algo == COST_DBTREE) >= DEV_STREAMS)
        return error_set(e, ERR_INVAL, "streams go from 0 to %d (dbtree uses two), not %d",
                         DEV_STREAMS - 1, c->stream);
    if (n == 1) {
        if (c->op == COST_ALLTOALL && c->count) /* its own block, across */
            memcpy(c->recv, c->buf, c->count * a.es);
        return 0;
    }
    if (algo == COST_RING || algo == COST_TREE || algo == COST_DBTREE)
        a.chunks = chunks_for(s, n, c->op, algo, c->count, a.es);
    int rc = dispatch(c->op, algo, &a, e);
    if (algo == COST_DBTREE) /* done on this GPU when both trees are */
        x->ops->sync(x->self, c->stream, c->stream + 1);
    return rc;
}

static int dispatch(enum cost_op op, enum cost_algo algo, const struct algo *a, struct error *e)
{
    switch (op) {
    case COST_ALLREDUCE:
        switch (algo) {
        case COST_RING: return ring_allreduce(a, e);
        case COST_TREE: return pipe_allreduce(a, e);
        case COST_DBTREE: return pipe_dbtree_allreduce(a, e);
        default: return rhd_allreduce(a, e);
        }
    case COST_REDUCE_SCATTER:
        return algo == COST_RING ? ring_reduce_scatter(a, 0, e) : rhd_reduce_scatter(a, 0, e);
    case COST_ALLGATHER:
        return algo == COST_RING ? ring_allgather(a, 0, e) : rhd_allgather(a, 0, e);
    case COST_BROADCAST: return algo == COST_RING ? ring_broadcast(a, e) : pipe_broadcast(a, e);
    case COST_REDUCE: return algo == COST_RING ? ring_reduce(a, e) : pipe_reduce(a, e);
    case COST_ALLTOALL: return algo == COST_DIRECT ? a2a_direct(a, e) : a2a_pairwise(a, e);
    default: return error_set(e, ERR_INVAL, "no such collective");
    }
}

static int one(struct device *d, enum cost_op op, void *buf, size_t count, enum fp_format dt,
               int root, enum cost_algo algo, struct error *e)
{
    struct coll c = {.op = op, .algo = algo, .buf = buf, .count = count, .dtype = dt, .root = root};
    return coll_run(d, &c, e);
}

int coll_allreduce(struct device *d, void *buf, size_t count, enum fp_format dt,
                   enum cost_algo algo, struct error *e)
{
    return one(d, COST_ALLREDUCE, buf, count, dt, 0, algo, e);
}

int coll_reduce_scatter(struct device *d, void *buf, size_t count, enum fp_format dt,
                        enum cost_algo algo, struct error *e)
{
    return one(d, COST_REDUCE_SCATTER, buf, count, dt, 0, algo, e);
}

int coll_allgather(struct device *d, void *buf, size_t count, enum fp_format dt,
                   enum cost_algo algo, struct error *e)
{
    return one(d, COST_ALLGATHER, buf, count, dt, 0, algo, e);
}

int coll_broadcast(struct device *d, void *buf, size_t count, enum fp_format dt, int root,
                   enum cost_algo algo, struct error *e)
{
    return one(d, COST_BROADCAST, buf, count, dt, root, algo, e);
}

int coll_reduce(struct device *d, void *buf, size_t count, enum fp_format dt, int root,
                enum cost_algo algo, struct error *e)
{
    return one(d, COST_REDUCE, buf, count, dt, root, algo, e);
}
