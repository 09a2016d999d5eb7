/* Pipelined binary trees: broadcast, reduce, all-reduce, and NCCL's double binary tree.
 *
 * The buffer (or each tree's half of it) is cut into a->chunks chunks. Reduce: for each
 * chunk, a GPU adds its children's partial sums into its own buffer (left child first, so
 * the order of additions is fixed) and passes the result to its parent. Broadcast: for each
 * chunk, a GPU takes it from its parent and sends it to its children, one after the other
 * through its one port. All-reduce: the reduce to the tree's root, then the broadcast of the
 * root's result, so every GPU holds the root's bits. The double binary tree runs both trees
 * at once, half the buffer each, on two device streams (so neither tree's simulated time waits
 * for the other's), chunk by chunk: tree 0's chunk k, then tree 1's. Sends are
 * waited for at the end of each chunk, after both trees have posted theirs, so neither tree
 * waits for the other (no deadlock). */
#include "config.h"
#include "comm/algo.h"

#include "base/error.h"
#include "comm/reduce.h"
#include "comm/tree.h"

struct part {
    struct tree_node node;
    int stream; /* the device stream this tree runs on */
    char *base; /* this tree's part of the buffer */
    size_t count;
};

static void piece(const struct algo *a, const struct part *t, int k, char **p, size_t *bytes)
{
    size_t off, len, base = t->count / (size_t)a->chunks, rem = t->count % (size_t)a->chunks;
    off = (size_t)k * base + ((size_t)k < rem ? (size_t)k : rem);
    len = base + ((size_t)k < rem);
    *p = t->base + off * a->es;
    *bytes = len * a->es;
}

static int reduce_chunk(const struct algo *a, const struct part *t, int k, int step,
                        struct dev_req *req, int *nreq, struct error *e)
{
    char *p;
    size_t b;
    enum fp_format dt = a->dt;
    piece(a, t, k, &p, &b);
    struct dev_tag tag = {step, k, "reduce", t->stream};
    for (int c = 0; c < 2; c++)
        if (t->node.child[c] >= 0) {
            int rc = algo_recv(a, t->node.child[c], p, b, &tag, a->combine, &dt, e);
            if (rc)
                return rc;
        }
    if (t->node.parent >= 0)
        return algo_isend(a, t->node.parent, p, b, &tag, &req[(*nreq)++], e);
    return 0;
}

static int bcast_chunk(const struct algo *a, const struct part *t, int k, int step,
                       struct dev_req *req, int *nreq, struct error *e)
{
    char *p;
    size_t b;
    piece(a, t, k, &p, &b);
    struct dev_tag tag = {step, k, "broadcast", t->stream};
    if (t->node.parent >= 0) {
        int rc = algo_recv(a, t->node.parent, p, b, &tag, NULL, NULL, e);
        if (rc)
            return rc;
    }
    for (int c = 0; c < 2; c++)
        if (t->node.child[c] >= 0) {
            int rc = algo_isend(a, t->node.child[c], p, b, &tag, &req[(*nreq)++], e);
            if (rc)
                return rc;
        }
    return 0;
}

/* One phase (reduce or broadcast) over ntrees trees, steps step0 .. step0 + chunks - 1. */
static int phase(const struct algo *a, const struct part *t, int ntrees, bool reduce, int step0,
                 struct error *e)
{
    for (int k = 0; k < a->chunks; k++) {
        struct dev_req req[4];
        int nreq = 0, rc = algo_step(a, step0 + k, e);
        for (int i = 0; i < ntrees && !rc; i++)
            rc = reduce ? reduce_chunk(a, &t[i], k, step0 + k, req, &nreq, e)
                        : bcast_chunk(a, &t[i], k, step0 + k, req, &nreq, e);
        struct error we;
        for (int i = 0; i < nreq; i++) { /* always: the receivers may be reading */
            int wrc = algo_wait(a, &req[i], rc ? &we : e);
            if (!rc)
                rc = wrc;
        }
        if (rc)
            return rc;
    }
    return 0;
}

static void whole(const struct algo *a, int which, int root, struct part *t)
{
    tree_node(a->n, which, root, a->rank, &t->node);
    t->stream = a->stream;
    t->base = a->buf;
    t->count = a->count;
}

int pipe_broadcast(const struct algo *a, struct error *e)
{
    struct part t;
    whole(a, 0, a->root, &t);
    return phase(a, &t, 1, false, 0, e);
}

int pipe_reduce(const struct algo *a, struct error *e)
{
    struct part t;
    whole(a, 0, a->root, &t);
    return phase(a, &t, 1, true, 0, e);
}

int pipe_allreduce(const struct algo *a, struct error *e)
{
    struct part t;
    whole(a, 0, -1, &t);
    int rc = phase(a, &t, 1, true, 0, e);
    return rc ? rc : phase(a, &t, 1, false, a->chunks, e);
}

int pipe_dbtree_allreduce(const struct algo *a, struct error *e)
{
    struct part t[2];
    size_t half = a->count / 2 + a->count % 2;
    for (int i = 0; i < 2; i++) {
        tree_node(a->n, i, -1, a->rank, &t[i].node);
        t[i].stream = a->stream + i; /* the trees run side by side, as NCCL's channels do */
        t[i].base = a->buf + (i ? half * a->es : 0);
        t[i].count = i ? a->count - half : half;
    }
    int rc = phase(a, t, 2, true, 0, e);
    return rc ? rc : phase(a, t, 2, false, a->chunks, e);
}
