/* One collective run over MPI ranks, checked and timed in turns beside the MPI library's own
 * (comm/mpitrial.h). */
#include "config.h"
#include "comm/mpitrial.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "comm/mpi.h"

#if HAVE_MPI

#include <limits.h>
#include <mpi.h>
#include <signal.h>

#include "comm/coll.h"
#include "comm/mpi_impl.h"
#include "comm/reduce.h"
#include "comm/verify.h"

/* Bounded versions of the few collectives the run itself needs. */
static void barrier(const struct mx *m)
{
    MPI_Request r;
    MPI_Ibarrier(m->comm, &r);
    mpi_await(m, &r, MPI_STATUS_IGNORE, "the other ranks at a barrier", -1);
}

static double slowest(const struct mx *m, double t)
{
    MPI_Request r;
    double out = t;
    MPI_Iallreduce(&t, &out, 1, MPI_DOUBLE, MPI_MAX, m->comm, &r);
    mpi_await(m, &r, MPI_STATUS_IGNORE, "the other ranks' times", -1);
    return out;
}

/* The library's sum of 2-byte formats: fp32 additions rounded once, as reduce_sum. */
static void sum_bf16(void *in, void *inout, int *len, MPI_Datatype *t)
{
    enum fp_format f = FP_BF16;
    (void)t;
    reduce_sum(inout, in, (size_t)*len * 2, &f);
}

static void sum_fp16(void *in, void *inout, int *len, MPI_Datatype *t)
{
    enum fp_format f = FP_FP16;
    (void)t;
    reduce_sum(inout, in, (size_t)*len * 2, &f);
}

struct libcall {
    MPI_Comm comm;
    MPI_Datatype type;
    MPI_Op sum;
    char *buf;
    char *rbuf; /* all-to-all's receive buffer */
    size_t count;
    int rank, n, root;
    bool even;            /* n divides count: the _block and plain variants */
    int *counts, *displs; /* the chunks of coll_chunk, for the v-variants */
};

static void lib_run(const struct libcall *l, enum cost_op op)
{
    int c = (int)l->count, per = (int)(l->count / (size_t)l->n);
    switch (op) {
    case COST_ALLREDUCE: MPI_Allreduce(MPI_IN_PLACE, l->buf, c, l->type, l->sum, l->comm); break;
    case COST_REDUCE_SCATTER:
        if (l->even)
            MPI_Reduce_scatter_block(MPI_IN_PLACE, l->buf, per, l->type, l->sum, l->comm);
        else
            MPI_Reduce_scatter(MPI_IN_PLACE, l->buf, l->counts, l->type, l->sum, l->comm);
        break;
    case COST_ALLGATHER:
        if (l->even)
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, l->buf, per, l->type, l->comm);
        else
            MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, l->buf, l->counts, l->displs,
                           l->type, l->comm);
        break;
    case COST_BROADCAST: MPI_Bcast(l->buf, c, l->type, l->root, l->comm); break;
    case COST_REDUCE:
        if (l->rank == l->root)
            MPI_Reduce(MPI_IN_PLACE, l->buf, c, l->type, l->sum, l->root, l->comm);
        else
            MPI_Reduce(l->buf, NULL, c, l->type, l->sum, l->root, l->comm);
        break;
    case COST_ALLTOALL: /* out of place, as ours */
        MPI_Alltoall(l->buf, per, l->type, l->rbuf, per, l->type, l->comm);
        break;
    default: break;
    }
}

static const char *lib_name(enum cost_op op, bool even)
{
    switch (op) {
    case COST_ALLREDUCE: return "MPI_Allreduce";
    case COST_REDUCE_SCATTER: return even ? "MPI_Reduce_scatter_block" : "MPI_Reduce_scatter";
    case COST_ALLGATHER: return even ? "MPI_Allgather" : "MPI_Allgatherv";
    case COST_BROADCAST: return "MPI_Bcast";
    case COST_ALLTOALL: return "MPI_Alltoall";
    default: return "MPI_Reduce";
    }
}

/* The library's calls on buf (and all-to-all's rbuf), as trial a makes ours: its sum for 16-bit
 * data, the chunks of coll_chunk, and in ops (r->nlib of them) the collectives to time, each
 * figure of r ready. */
static void lib_open(const struct mx *m, const struct trial_args *a, char *buf, char *rbuf,
                     struct mpi_run *r, struct libcall *l, enum cost_op *ops)
{
    int rank = m->rank, n = m->size;
    MPI_Op sum = MPI_SUM;
    MPI_Datatype type = MPI_FLOAT;
    if (a->dtype != FP_FP32) {
        type = MPI_UINT16_T;
        MPI_Op_create(a->dtype == FP_BF16 ? sum_bf16 : sum_fp16, 1, &sum);
    }
    *l = (struct libcall){.comm = m->comm,
                          .type = type,
                          .sum = sum,
                          .buf = buf,
                          .rbuf = rbuf,
                          .count = a->count,
                          .rank = rank,
                          .n = n,
                          .root = a->root,
                          .even = a->count % n == 0,
                          .counts = calloc((size_t)n, sizeof(int)),
                          .displs = calloc((size_t)n, sizeof(int))};
    if (!l->counts || !l->displs)
        mpi_stop("GPU %d: out of memory", rank);
    for (int g = 0; g < n; g++) {
        size_t off, len;
        coll_chunk(a->count, n, g, &off, &len);
        l->counts[g] = (int)len, l->displs[g] = (int)off;
    }
    ops[0] = COST_ALLREDUCE, ops[1] = COST_REDUCE_SCATTER, ops[2] = COST_ALLGATHER;
    r->nlib = 3;
    if (a->op == COST_BROADCAST || a->op == COST_REDUCE || a->op == COST_ALLTOALL)
        ops[r->nlib++] = a->op;
    for (int k = 0; k < r->nlib; k++) {
        r->lib[k] = (struct mpi_lib_figure){lib_name(ops[k], l->even), ops[k], 1e300,
                                            calloc((size_t)r->repeat, sizeof(double))};
        if (!r->lib[k].sample)
            mpi_stop("GPU %d: out of memory", rank);
    }
}

/* Round i of the library's calls (-1: the warm-up), each on the trial's data, timed. */
static void lib_round(const struct mx *m, const struct trial_args *a, const struct libcall *l,
                      const enum cost_op *ops, struct mpi_run *r, int i)
{
    for (int k = 0; k < r->nlib; k++) {
        verify_fill(a->dtype, l->buf, a->count, a->seed, m->rank);
        barrier(m);
        double t1 = MPI_Wtime();
        lib_run(l, ops[k]);
        double lt = slowest(m, MPI_Wtime() - t1);
        if (i >= 0) {
            r->lib[k].sample[i] = lt;
            r->lib[k].time_s = lt < r->lib[k].time_s ? lt : r->lib[k].time_s;
        }
    }
}

static void lib_close(struct libcall *l)
{
    if (l->sum != MPI_SUM)
        MPI_Op_free(&l->sum);
    free(l->counts);
    free(l->displs);
}

/* Each rank checks its own part of the result and its digest; rank 0 gathers them. */
static void check(const struct mx *m, const struct trial_args *a, const char *buf,
                  struct mpi_run *r)
{
    struct trial *t = &r->t;
    int n = m->size, rank = m->rank;
    size_t bytes = a->count * reduce_elem_size(a->dtype);
    struct verify v, *all = rank == 0 ? calloc((size_t)n, sizeof *all) : NULL;
    uint64_t d = verify_digest(buf, bytes), *digs = calloc((size_t)n, sizeof *digs);
    if (!digs || (rank == 0 && !all))
        mpi_stop("GPU %d: out of memory", rank);
    verify_check_rank(a->op, a->root, a->dtype, buf, rank, n, a->count, a->seed, &v);
    mpi_gather(m, &v, (int)sizeof v, all);
    mpi_gather(m, &d, (int)sizeof d, digs);
    if (rank == 0) {
        t->check = all[0];
        for (int g = 1; g < n; g++)
            verify_merge(&t->check, &all[g]);
        for (int g = 1; g < n && verify_same_everywhere(a->op); g++)
            if (digs[g] != digs[0] && t->check.identical) {
                t->check.identical = false;
                if (t->check.ok)
                    t->check.bad_gpu = g, t->check.bad_index = 0;
                t->check.ok = false;
            }
        t->digest = verify_digest_all(digs, n);
    }
    free(all);
    free(digs);
}

/* The trial's algorithm over n ranks, its predicted time and its steps, into t. */
static int predict(const struct trial_args *a, int n, size_t bytes, struct trial *t,
                   struct error *e)
{
    if (a->op == COST_ALLTOALL && coll_alltoall_check(a->count, n, e))
        return ERR_INVAL;
    t->bytes = (double)bytes;
    t->algo = coll_resolve(&a->spec, n, a->op, a->algo, t->bytes);
    if (!cost_supported(a->op, t->algo, n, e))
        return ERR_INVAL;
    struct cost_net net;
    coll_net(&a->spec, n, &net);
    int rc = cost_collective(a->op, t->algo, &net, t->bytes, &t->predicted, e);
    if (rc)
        return rc;
    t->steps = coll_steps(&a->spec, n, a->op, t->algo, a->count, a->dtype);
    return 0;
}

int mpi_trial_run(const struct trial_args *a, double deadline_s, struct mpi_run *r, struct error *e)
{
    memset(r, 0, sizeof *r);
    struct trial *t = &r->t;
    int n, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    r->rank = rank, r->size = n;
    r->repeat = a->repeat < 1 ? 1 : a->repeat;
    size_t es = reduce_elem_size(a->dtype), bytes = a->count * es;
    if (es == 0)
        return error_set(e, ERR_INVAL, "collectives carry fp32, bf16 or fp16 data");
    if (bytes > INT_MAX)
        return error_set(e, ERR_INVAL, "--size: at most %d bytes over MPI, not %zu", INT_MAX,
                         bytes);
    int rc = predict(a, n, bytes, t, e);
    if (rc)
        return rc;

    struct mx m = {.rank = rank,
                   .size = n,
                   .fail_rank = a->fail_gpu,
                   .fail_step = a->fail_step,
                   .deadline_s = deadline_s > 0 ? deadline_s : 60};
    for (int i = 0; i < SLOTS; i++)
        m.req[i] = MPI_REQUEST_NULL;
    MPI_Request dup; /* a communicator of its own, without an unbounded wait */
    MPI_Comm_idup(MPI_COMM_WORLD, &m.comm, &dup);
    mpi_await(&m, &dup, MPI_STATUS_IGNORE, "the other ranks to start", -1);
    r->hosts = mpi_count_hosts(&m, r->host0, sizeof r->host0);
    bool a2a = a->op == COST_ALLTOALL;
    char *buf = malloc(bytes ? bytes : 1), *rbuf = a2a ? malloc(bytes ? bytes : 1) : NULL;
    m.scratch = malloc(bytes ? bytes : 1);
    m.scratch_bytes = bytes;
    t->sent = calloc((size_t)n, sizeof *t->sent);
    if (!buf || !m.scratch || !t->sent || (a2a && !rbuf))
        mpi_stop("GPU %d: no memory for %d buffers of %zu bytes", rank, a2a ? 3 : 2, bytes);
    memset(m.scratch, 0, bytes); /* touched once, before anything is timed */

    struct xport x = {&mpi_xport_ops, &m, rank, n, &a->spec};
    struct coll op = {.op = a->op,
                      .algo = t->algo,
                      .buf = buf,
                      .count = a->count,
                      .dtype = a->dtype,
                      .root = a->root,
                      .recv = rbuf};
    const char *stall = getenv("SCALELAB_MPI_STALL_RANK");

    /* the library's collectives on the same buffers */
    struct libcall l;
    enum cost_op ops[MPI_LIB_MAX];
    lib_open(&m, a, buf, rbuf, r, &l, ops);
    r->sample = calloc((size_t)r->repeat, sizeof *r->sample);
    if (!r->sample)
        mpi_stop("GPU %d: out of memory", rank);

    /* rounds: a warm-up, then the timed ones; in each, ours, then the library's */
    t->wall_s = 1e300;
    for (int i = -1; i < r->repeat; i++) {
        verify_fill(a->dtype, buf, a->count, a->seed, rank);
        if (rbuf) /* what the check reads is this run's, not the library's before it */
            memset(rbuf, 0, bytes);
        m.bytes_sent = 0;
        barrier(&m);
        double t0 = MPI_Wtime();
        if (i < 0 && stall && atoi(stall) == rank)
            raise(SIGSTOP); /* the deadline's test: this rank hangs as an unreachable one would */
        if (coll_run_on(&x, &op, e) != 0)
            mpi_stop("GPU %d: %s", rank, e->msg); /* the others are waiting for this rank */
        double dt = slowest(&m, MPI_Wtime() - t0);
        if (i >= 0) {
            r->sample[i] = dt;
            t->wall_s = dt < t->wall_s ? dt : t->wall_s;
        }
        if (i == r->repeat - 1) { /* our last run: its bytes, its check */
            mpi_gather(&m, &m.bytes_sent, sizeof m.bytes_sent, t->sent);
            for (int g = 0; g < n && rank == 0; g++)
                t->sent_total += t->sent[g];
            if (a->verify)
                check(&m, a, rbuf ? rbuf : buf, r);
        }
        lib_round(&m, a, &l, ops, r, i);
    }
    lib_close(&l);
    free(buf);
    free(rbuf);
    free(m.scratch);
    MPI_Comm_free(&m.comm);
    return 0;
}

void mpi_trial_fini(struct mpi_run *r)
{
    free(r->t.sent);
    free(r->sample);
    for (int k = 0; k < r->nlib; k++)
        free(r->lib[k].sample);
    memset(r, 0, sizeof *r);
}

#else /* no MPI */

int mpi_trial_run(const struct trial_args *a, double deadline_s, struct mpi_run *r, struct error *e)
{
    (void)a, (void)deadline_s;
    memset(r, 0, sizeof *r);
    return mpi_refuse(e);
}

void mpi_trial_fini(struct mpi_run *r)
{
    memset(r, 0, sizeof *r);
}

#endif
