/* Recursive halving and doubling (Rabenseifner's all-reduce; Thakur, Rabenseifner and Gropp,
 * "Optimization of collective communication operations in MPICH", IJHPCA 2005).
 *
 * With N' = 2^k GPUs the buffer is cut into N' blocks (coll_chunk). Reduce-scatter by
 * recursive halving: in round j (distance d = N'/2, N'/4, ..., 1) a GPU and its partner
 * (rank XOR d) share a range of 2d blocks; the one whose bit d is 0 keeps the lower half and
 * sends the upper, the other the reverse, each adding the half it keeps from its partner.
 * After k rounds GPU i owns block i. All-gather by recursive doubling undoes it: distances
 * 1, 2, ..., N'/2, each GPU sending the range it has and copying its partner's.
 *
 * Other N: r = N - N' extra GPUs fold in first: GPU 2i (i < r) sends its whole buffer to GPU
 * 2i+1, which adds it; GPU 2i sits out; the N' others run the above with new numbers (2i+1
 * -> i, and GPU g >= 2r -> g - r); at the end GPU 2i+1 sends the result back to 2i. */
#include "config.h"
#include "comm/algo.h"

#include "base/error.h"
#include "comm/reduce.h"

/* The byte range of blocks [lo, hi) of nb. */
static void blocks(const struct algo *a, int nb, int lo, int hi, char **p, size_t *bytes)
{
    char *q;
    size_t b;
    algo_chunk(a, nb, lo, p, bytes);
    if (hi - 1 > lo) {
        algo_chunk(a, nb, hi - 1, &q, &b);
        *bytes = (size_t)(q + b - *p);
    } else if (hi <= lo) {
        *bytes = 0;
    }
}

/* In these two, `me` is the GPU's number among np = 2^k, and real[] maps it back. */
static int halving(const struct algo *a, int np, int me, const int *real, int step, struct error *e)
{
    enum fp_format dt = a->dt;
    int lo = 0, hi = np;
    for (int d = np / 2; d >= 1; d /= 2, step++) {
        int partner = me ^ d, mid = lo + d;
        bool low = (me & d) == 0;
        char *sp, *kp;
        size_t sb, kb;
        blocks(a, np, low ? mid : lo, low ? hi : mid, &sp, &sb);
        blocks(a, np, low ? lo : mid, low ? mid : hi, &kp, &kb);
        struct dev_tag tag = {step, low ? mid : lo, "reduce-scatter", a->stream};
        int rc = algo_step(a, step, e);
        if (!rc)
            rc = algo_sendrecv(a, real[partner], sp, sb, real[partner], kp, kb, &tag, a->combine,
                               &dt, e);
        if (rc)
            return rc;
        if (low)
            hi = mid;
        else
            lo = mid;
    }
    return 0;
}

static int doubling(const struct algo *a, int np, int me, const int *real, int step,
                    struct error *e)
{
    for (int d = 1; d < np; d *= 2, step++) {
        int partner = me ^ d;
        int lo = me & ~(d - 1), plo = partner & ~(d - 1);
        char *sp, *rp;
        size_t sb, rb;
        blocks(a, np, lo, lo + d, &sp, &sb);
        blocks(a, np, plo, plo + d, &rp, &rb);
        struct dev_tag tag = {step, lo, "all-gather", a->stream};
        int rc = algo_step(a, step, e);
        if (!rc)
            rc =
                algo_sendrecv(a, real[partner], sp, sb, real[partner], rp, rb, &tag, NULL, NULL, e);
        if (rc)
            return rc;
    }
    return 0;
}

static int log2i(int n)
{
    int k = 0;
    while ((1 << (k + 1)) <= n)
        k++;
    return k;
}

int rhd_reduce_scatter(const struct algo *a, int step0, struct error *e)
{
    int real[CLUSTER_MAX_GPUS];
    for (int i = 0; i < a->n; i++)
        real[i] = i;
    return halving(a, a->n, a->rank, real, step0, e);
}

int rhd_allgather(const struct algo *a, int step0, struct error *e)
{
    int real[CLUSTER_MAX_GPUS];
    for (int i = 0; i < a->n; i++)
        real[i] = i;
    return doubling(a, a->n, a->rank, real, step0, e);
}

int rhd_allreduce(const struct algo *a, struct error *e)
{
    int n = a->n, k = log2i(n), np = 1 << k, r = n - np, rank = a->rank;
    int real[CLUSTER_MAX_GPUS];
    for (int i = 0; i < np; i++)
        real[i] = i < r ? 2 * i + 1 : i + r;
    int step = 0, rc;
    enum fp_format dt = a->dt;
    size_t bytes = a->count * a->es;
    bool extra = rank < 2 * r && rank % 2 == 0; /* sits out */
    int me = rank < 2 * r ? rank / 2 : rank - r;
    if (r > 0) {
        struct dev_tag tag = {0, 0, "fold-in", a->stream};
        if ((rc = algo_step(a, 0, e)))
            return rc;
        if (extra) {
            struct dev_req req;
            rc = algo_isend(a, rank + 1, a->buf, bytes, &tag, &req, e);
            if (!rc)
                rc = algo_wait(a, &req, e);
        } else if (rank < 2 * r) {
            rc = algo_recv(a, rank - 1, a->buf, bytes, &tag, a->combine, &dt, e);
        }
        if (rc)
            return rc;
        step = 1;
    }
    if (!extra) {
        if ((rc = halving(a, np, me, real, step, e)) ||
            (rc = doubling(a, np, me, real, step + k, e)))
            return rc;
    } else {
        for (int s = step; s < step + 2 * k; s++) /* idle, but counts the steps (--fail) */
            if ((rc = algo_step(a, s, e)))
                return rc;
    }
    step += 2 * k;
    if (r > 0) {
        struct dev_tag tag = {step, 0, "fold-out", a->stream};
        if ((rc = algo_step(a, step, e)))
            return rc;
        if (extra) {
            rc = algo_recv(a, rank + 1, a->buf, bytes, &tag, NULL, NULL, e);
        } else if (rank < 2 * r) {
            struct dev_req req;
            rc = algo_isend(a, rank - 1, a->buf, bytes, &tag, &req, e);
            if (!rc)
                rc = algo_wait(a, &req, e);
        }
        if (rc)
            return rc;
    }
    return 0;
}
