/* The MPI transport below the collectives and a collective run over MPI ranks, checked and
 * timed beside the MPI library's own (comm/mpi.h). */
#include "config.h"
#include "comm/mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

#if HAVE_MPI

#include <limits.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <unistd.h>

#include "comm/coll.h"
#include "comm/reduce.h"
#include "comm/verify.h"

bool mpi_built(void)
{
    return true;
}

const char *mpi_about(void)
{
    static char buf[MPI_MAX_LIBRARY_VERSION_STRING + 64];
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(v, &len); /* allowed before MPI_Init */
    v[strcspn(v, ",\n")] = '\0';
    snprintf(buf, sizeof buf, "MPI transport: %s (--transport mpi under mpirun)", v);
    return buf;
}

int mpi_begin(int *argc, char ***argv, int *rank, int *size, struct error *e)
{
    int provided = 0;
    /* serialized: a training run's device thread makes the calls while the main thread waits */
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    if (provided < MPI_THREAD_SERIALIZED) {
        MPI_Comm_rank(MPI_COMM_WORLD, rank);
        MPI_Comm_size(MPI_COMM_WORLD, size);
        return error_set(e, ERR_INVAL,
                         "--transport mpi: this MPI library does not let a thread other than "
                         "the main one call it (MPI_THREAD_SERIALIZED)");
    }
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return 0;
}

void mpi_end(void)
{
    int done = 0;
    MPI_Finalized(&done);
    if (!done)
        MPI_Finalize();
}

/* ------------------------------------------------------------------ the transport */

/* sends in flight at once: a tree posts up to four, the direct all-to-all N-1 */
#define SLOTS CLUSTER_MAX_GPUS

struct mx {
    MPI_Comm comm;
    int rank, size;
    char *scratch; /* a summing receive lands here, then is combined */
    size_t scratch_bytes;
    MPI_Request req[SLOTS];
    uint64_t bytes_sent;
    int fail_rank, fail_step;
    double deadline_s;
};

/* Ends every rank: the message, then MPI_Abort (exit 1). */
static const char *stop_who = "collective"; /* the command whose messages these are */

static _Noreturn void stop(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void stop(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "scalelab: %s: ", stop_who);
    vfprintf(stderr, fmt, ap);
    fputs("\n", stderr);
    va_end(ap);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* Waits for r, polling, within the deadline; what it waits for (from GPU peer, or from all
 * the ranks when peer is -1) names it in the message. */
static void await(const struct mx *m, MPI_Request *r, MPI_Status *st, const char *what, int peer)
{
    int done = 0;
    double t0 = 0;
    for (long i = 0;; i++) {
        MPI_Test(r, &done, st);
        if (done)
            return;
        if (i < 64)
            continue;
        if (t0 == 0)
            t0 = MPI_Wtime();
        else if (MPI_Wtime() - t0 > m->deadline_s) {
            if (peer >= 0)
                stop("GPU %d: waited %g s for %s GPU %d: is that rank running and reachable? "
                     "stopping every rank",
                     m->rank, m->deadline_s, what, peer);
            stop("GPU %d: waited %g s for %s: is every rank running and reachable? stopping "
                 "every rank",
                 m->rank, m->deadline_s, what);
        }
        sched_yield();
    }
}

static int m_step(void *self, int step, struct error *e)
{
    struct mx *m = self;
    (void)e;
    if (m->rank == m->fail_rank && step == m->fail_step)
        stop("GPU %d: failed at step %d (--fail): MPI_Abort ends every rank", m->rank, step);
    return 0;
}

static int m_isend(void *self, int peer, const void *buf, size_t bytes, const struct dev_tag *tag,
                   struct dev_req *req, struct error *e)
{
    struct mx *m = self;
    int slot = 0;
    while (slot < SLOTS && m->req[slot] != MPI_REQUEST_NULL)
        slot++;
    if (slot == SLOTS)
        return error_set(e, ERR_RUN, "GPU %d: more than %d sends in flight", m->rank, SLOTS);
    MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, 0, m->comm, &m->req[slot]);
    m->bytes_sent += bytes;
    memset(req, 0, sizeof *req);
    req->buf = buf;
    req->bytes = bytes;
    req->from = m->rank;
    req->to = peer;
    req->msg = (uint64_t)slot; /* the request lives in this transport's table */
    req->tag = *tag;
    return 0;
}

static int m_wait(void *self, struct dev_req *req, struct error *e)
{
    struct mx *m = self;
    (void)e;
    await(m, &m->req[req->msg], MPI_STATUS_IGNORE, "a receive from", req->to);
    return 0;
}

/* The receive posted as r has ended: its size, then the sum when it combines. */
static void land(struct mx *m, MPI_Request *r, int peer, void *buf, size_t bytes,
                 dev_combine_fn combine, void *ctx)
{
    MPI_Status st;
    int got = 0;
    await(m, r, &st, "a message from", peer);
    MPI_Get_count(&st, MPI_BYTE, &got);
    if ((size_t)got != bytes)
        stop("GPU %d: GPU %d sent %d bytes where %zu were expected", m->rank, peer, got, bytes);
    if (combine)
        combine(buf, m->scratch, bytes, ctx);
}

static int post_recv(struct mx *m, int peer, void *buf, size_t bytes, dev_combine_fn combine,
                     MPI_Request *r, struct error *e)
{
    if (combine && bytes > m->scratch_bytes)
        return error_set(e, ERR_RUN, "GPU %d: a message of %zu bytes is larger than the buffer",
                         m->rank, bytes);
    MPI_Irecv(combine ? m->scratch : buf, (int)bytes, MPI_BYTE, peer, 0, m->comm, r);
    return 0;
}

static int m_recv(void *self, int peer, void *buf, size_t bytes, const struct dev_tag *tag,
                  dev_combine_fn combine, void *ctx, struct error *e)
{
    struct mx *m = self;
    MPI_Request r;
    (void)tag;
    int rc = post_recv(m, peer, buf, bytes, combine, &r, e);
    if (!rc)
        land(m, &r, peer, buf, bytes, combine, ctx);
    return rc;
}

static int m_sendrecv(void *self, int to, const void *sbuf, size_t sbytes, int from, void *rbuf,
                      size_t rbytes, const struct dev_tag *tag, dev_combine_fn combine, void *ctx,
                      struct error *e)
{
    struct mx *m = self;
    MPI_Request r, s;
    (void)tag;
    int rc = post_recv(m, from, rbuf, rbytes, combine, &r, e);
    if (rc)
        return rc;
    MPI_Isend(sbuf, (int)sbytes, MPI_BYTE, to, 0, m->comm, &s);
    m->bytes_sent += sbytes;
    land(m, &r, from, rbuf, rbytes, combine, ctx);
    await(m, &s, MPI_STATUS_IGNORE, "a receive from", to);
    return 0;
}

static void m_sync(void *self, int a, int b)
{
    (void)self, (void)a, (void)b; /* no simulated streams: wall time is real */
}

static const struct xport_ops mpi_ops = {m_step, m_isend, m_wait, m_recv, m_sendrecv, m_sync};

/* ------------------------------------------------------------------ the wire */

static int count_hosts(const struct mx *m, char *host0, size_t n0);

/* sends in flight from one device at once (a pipeline stage's stay posted to the step's end);
 * answers in flight from a receiver */
enum { WIRE_SLOTS = 1024, WIRE_ACKS = 256, WIRE_TAG_MAX = 32767 };

struct wire_send {
    struct dev_req hdr; /* the header, as sent (the sender's request may change meanwhile) */
    MPI_Request head, body, ack;
    double arrival; /* the receiver's answer */
    bool used;
};

/* Four communicators, so that each kind of message is matched apart: headers (tag: the
 * message's key), bodies (the same tag), the answers (tag: the sender's slot), and the run's
 * records (m.comm). */
struct mpi_wire {
    struct mx m;
    MPI_Comm head, body, ack;
    struct wire_send send[WIRE_SLOTS];
    int next;
    MPI_Request ackreq[WIRE_ACKS];
    double ackval[WIRE_ACKS];
    unsigned nack;
    /* SCALELAB_MPI_STALL_RANK: that rank stops itself at its first send (SIGSTOP), or with
     * SCALELAB_MPI_STALL=exit ends there (exit status 9), as a crash would end it */
    int stall_rank;
    bool die;
};

static int w_post(void *ctx, struct dev_req *req, struct error *e)
{
    struct mpi_wire *w = ctx;
    if (req->bytes > INT_MAX || req->key < 0 || req->key > WIRE_TAG_MAX)
        return error_set(e, ERR_RUN,
                         "GPU %d: a message of %zu bytes with key %d cannot go over MPI", w->m.rank,
                         req->bytes, req->key);
    if (w->stall_rank == w->m.rank) { /* the tests of a rank gone silent, or dead */
        w->stall_rank = -1;
        if (w->die)
            _exit(9);
        raise(SIGSTOP); /* this rank hangs as an unreachable one would */
    }
    int s = w->next, tried = 0;
    while (w->send[s].used && tried++ < WIRE_SLOTS)
        s = (s + 1) % WIRE_SLOTS;
    if (w->send[s].used)
        return error_set(e, ERR_RUN, "GPU %d: more than %d sends in flight", w->m.rank, WIRE_SLOTS);
    w->next = (s + 1) % WIRE_SLOTS;
    struct wire_send *ws = &w->send[s];
    req->slot = s;
    ws->hdr = *req;
    ws->used = true;
    MPI_Irecv(&ws->arrival, 1, MPI_DOUBLE, req->to, s, w->ack, &ws->ack);
    MPI_Isend(&ws->hdr, (int)sizeof ws->hdr, MPI_BYTE, req->to, req->key, w->head, &ws->head);
    MPI_Isend(req->buf, (int)req->bytes, MPI_BYTE, req->to, req->key, w->body, &ws->body);
    w->m.bytes_sent += req->bytes;
    return 0;
}

static int w_done(void *ctx, struct dev_req *req, struct error *e)
{
    struct mpi_wire *w = ctx;
    struct wire_send *ws = &w->send[req->slot];
    (void)e;
    await(&w->m, &ws->head, MPI_STATUS_IGNORE, "a receive from", req->to);
    await(&w->m, &ws->body, MPI_STATUS_IGNORE, "a receive from", req->to);
    await(&w->m, &ws->ack, MPI_STATUS_IGNORE, "a receive from", req->to);
    req->t_arrival = ws->arrival;
    ws->used = false;
    return 0;
}

static int w_head(void *ctx, int peer, int key, struct dev_req *hdr, struct error *e)
{
    struct mpi_wire *w = ctx;
    MPI_Request r;
    MPI_Status st;
    int got = 0;
    (void)e;
    MPI_Irecv(hdr, (int)sizeof *hdr, MPI_BYTE, peer, key ? key : MPI_ANY_TAG, w->head, &r);
    await(&w->m, &r, &st, "a message from", peer);
    MPI_Get_count(&st, MPI_BYTE, &got);
    if ((size_t)got != sizeof *hdr)
        stop("GPU %d: GPU %d sent a header of %d bytes: is it the same scalelab?", w->m.rank, peer,
             got);
    hdr->key = st.MPI_TAG;
    hdr->next = NULL, hdr->buf = NULL, hdr->tag.phase = NULL; /* the sender's addresses */
    return 0;
}

static int w_body(void *ctx, const struct dev_req *hdr, void *buf, dev_combine_fn combine,
                  void *cctx, struct error *e)
{
    struct mpi_wire *w = ctx;
    struct mx *m = &w->m;
    if (combine && hdr->bytes > m->scratch_bytes) { /* once, at the largest message */
        free(m->scratch);
        m->scratch_bytes = 0;
        if (!(m->scratch = malloc(hdr->bytes)))
            return error_set(e, ERR_NOMEM, "GPU %d: no memory for a message of %zu bytes", m->rank,
                             hdr->bytes);
        m->scratch_bytes = hdr->bytes;
    }
    MPI_Request r;
    MPI_Irecv(combine ? m->scratch : buf, (int)hdr->bytes, MPI_BYTE, hdr->from, hdr->key, w->body,
              &r);
    land(m, &r, hdr->from, buf, hdr->bytes, combine, cctx);
    unsigned k = w->nack++ % WIRE_ACKS; /* the sender waits for this answer */
    if (w->ackreq[k] != MPI_REQUEST_NULL)
        await(m, &w->ackreq[k], MPI_STATUS_IGNORE, "a receive from", hdr->from);
    w->ackval[k] = hdr->t_arrival;
    MPI_Isend(&w->ackval[k], 1, MPI_DOUBLE, hdr->from, hdr->slot, w->ack, &w->ackreq[k]);
    return 0;
}

static int w_share(void *ctx, const void *mine, size_t bytes, void *all, struct error *e)
{
    struct mpi_wire *w = ctx;
    MPI_Request r;
    (void)e;
    MPI_Iallgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, w->m.comm, &r);
    await(&w->m, &r, MPI_STATUS_IGNORE, "the other ranks' records", -1);
    return 0;
}

static void w_fail(void *ctx, const struct error *why)
{
    (void)ctx;
    fprintf(stderr, "scalelab: %s: MPI_Abort ends every rank\n", why->msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static MPI_Comm dup_world(const struct mx *m)
{
    MPI_Comm c;
    MPI_Request r;
    MPI_Comm_idup(MPI_COMM_WORLD, &c, &r);
    await(m, &r, MPI_STATUS_IGNORE, "the other ranks to start", -1);
    return c;
}

int mpi_wire_open(struct mpi_wire **out, struct dev_wire *dw, const char *who, double deadline_s,
                  struct error *e)
{
    struct mpi_wire *w = calloc(1, sizeof *w);
    if (!w)
        return error_set(e, ERR_NOMEM, "out of memory");
    stop_who = who;
    MPI_Comm_rank(MPI_COMM_WORLD, &w->m.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w->m.size);
    w->m.deadline_s = deadline_s > 0 ? deadline_s : 60;
    w->m.fail_rank = -1;
    const char *stall = getenv("SCALELAB_MPI_STALL_RANK");
    w->stall_rank = stall ? atoi(stall) : -1;
    w->die = getenv("SCALELAB_MPI_STALL") && !strcmp(getenv("SCALELAB_MPI_STALL"), "exit");
    for (int i = 0; i < WIRE_ACKS; i++)
        w->ackreq[i] = MPI_REQUEST_NULL;
    w->m.comm = dup_world(&w->m);
    w->head = dup_world(&w->m);
    w->body = dup_world(&w->m);
    w->ack = dup_world(&w->m);
    *dw = (struct dev_wire){w, w_post, w_done, w_head, w_body, w_share, w_fail};
    *out = w;
    return 0;
}

int mpi_wire_share(struct mpi_wire *w, const void *mine, size_t bytes, void *all, struct error *e)
{
    return w_share(w, mine, bytes, all, e);
}

void mpi_wire_deadline(struct mpi_wire *w, double deadline_s)
{
    if (deadline_s > 0)
        w->m.deadline_s = deadline_s;
}

int mpi_wire_hosts(struct mpi_wire *w)
{
    char host0[64];
    return count_hosts(&w->m, host0, sizeof host0);
}

void mpi_wire_close(struct mpi_wire *w)
{
    if (!w)
        return;
    for (int i = 0; i < WIRE_ACKS; i++)
        if (w->ackreq[i] != MPI_REQUEST_NULL)
            await(&w->m, &w->ackreq[i], MPI_STATUS_IGNORE, "a receive from", -1);
    MPI_Comm_free(&w->head);
    MPI_Comm_free(&w->body);
    MPI_Comm_free(&w->ack);
    MPI_Comm_free(&w->m.comm);
    free(w->m.scratch);
    free(w);
}

/* ------------------------------------------------------------------ the run */

/* Bounded versions of the few collectives the run itself needs. */
static void barrier(const struct mx *m)
{
    MPI_Request r;
    MPI_Ibarrier(m->comm, &r);
    await(m, &r, MPI_STATUS_IGNORE, "the other ranks at a barrier", -1);
}

static double slowest(const struct mx *m, double t)
{
    MPI_Request r;
    double out = t;
    MPI_Iallreduce(&t, &out, 1, MPI_DOUBLE, MPI_MAX, m->comm, &r);
    await(m, &r, MPI_STATUS_IGNORE, "the other ranks' times", -1);
    return out;
}

static void gather(const struct mx *m, const void *mine, int bytes, void *all)
{
    MPI_Request r;
    MPI_Igather(mine, bytes, MPI_BYTE, all, bytes, MPI_BYTE, 0, m->comm, &r);
    await(m, &r, MPI_STATUS_IGNORE, "the other ranks' results", -1);
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

/* Distinct processor names among the ranks (rank 0's answer). */
static int count_hosts(const struct mx *m, char *host0, size_t n0)
{
    char me[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0, hosts = 0;
    MPI_Get_processor_name(me, &len);
    memcpy(host0, me, n0 - 1);
    host0[n0 - 1] = '\0';
    char *all = m->rank == 0 ? calloc((size_t)m->size, MPI_MAX_PROCESSOR_NAME) : NULL;
    if (m->rank == 0 && !all)
        stop("GPU 0: out of memory");
    gather(m, me, MPI_MAX_PROCESSOR_NAME, all);
    for (int i = 0; all && i < m->size; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(all + (size_t)i * MPI_MAX_PROCESSOR_NAME,
                           all + (size_t)j * MPI_MAX_PROCESSOR_NAME);
        hosts += !seen;
    }
    free(all);
    return hosts;
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
        stop("GPU %d: out of memory", rank);
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
            stop("GPU %d: out of memory", rank);
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
        stop("GPU %d: out of memory", rank);
    verify_check_rank(a->op, a->root, a->dtype, buf, rank, n, a->count, a->seed, &v);
    gather(m, &v, (int)sizeof v, all);
    gather(m, &d, (int)sizeof d, digs);
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
    await(&m, &dup, MPI_STATUS_IGNORE, "the other ranks to start", -1);
    r->hosts = count_hosts(&m, r->host0, sizeof r->host0);
    bool a2a = a->op == COST_ALLTOALL;
    char *buf = malloc(bytes ? bytes : 1), *rbuf = a2a ? malloc(bytes ? bytes : 1) : NULL;
    m.scratch = malloc(bytes ? bytes : 1);
    m.scratch_bytes = bytes;
    t->sent = calloc((size_t)n, sizeof *t->sent);
    if (!buf || !m.scratch || !t->sent || (a2a && !rbuf))
        stop("GPU %d: no memory for %d buffers of %zu bytes", rank, a2a ? 3 : 2, bytes);
    memset(m.scratch, 0, bytes); /* touched once, before anything is timed */

    struct xport x = {&mpi_ops, &m, rank, n, &a->spec};
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
        stop("GPU %d: out of memory", rank);

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
            stop("GPU %d: %s", rank, e->msg); /* the others are waiting for this rank */
        double dt = slowest(&m, MPI_Wtime() - t0);
        if (i >= 0) {
            r->sample[i] = dt;
            t->wall_s = dt < t->wall_s ? dt : t->wall_s;
        }
        if (i == r->repeat - 1) { /* our last run: its bytes, its check */
            gather(&m, &m.bytes_sent, sizeof m.bytes_sent, t->sent);
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

bool mpi_built(void)
{
    return false;
}

const char *mpi_about(void)
{
    return "MPI transport: not built (install " MPI_PACKAGES ", then configure again)";
}

static int none(struct error *e)
{
    return error_set(e, ERR_INVAL,
                     "--transport mpi: this scalelab was built without MPI: install the Debian "
                     "packages " MPI_PACKAGES ", then run configure and make again");
}

int mpi_begin(int *argc, char ***argv, int *rank, int *size, struct error *e)
{
    (void)argc, (void)argv;
    *rank = 0, *size = 1;
    return none(e);
}

void mpi_end(void)
{
}

int mpi_trial_run(const struct trial_args *a, double deadline_s, struct mpi_run *r, struct error *e)
{
    (void)a, (void)deadline_s;
    memset(r, 0, sizeof *r);
    return none(e);
}

void mpi_trial_fini(struct mpi_run *r)
{
    memset(r, 0, sizeof *r);
}

int mpi_wire_open(struct mpi_wire **out, struct dev_wire *dw, const char *who, double deadline_s,
                  struct error *e)
{
    (void)dw, (void)who, (void)deadline_s;
    *out = NULL;
    return none(e);
}

int mpi_wire_share(struct mpi_wire *w, const void *mine, size_t bytes, void *all, struct error *e)
{
    (void)w, (void)mine, (void)bytes, (void)all;
    return none(e);
}

void mpi_wire_deadline(struct mpi_wire *w, double deadline_s)
{
    (void)w, (void)deadline_s;
}

int mpi_wire_hosts(struct mpi_wire *w)
{
    (void)w;
    return 1;
}

void mpi_wire_close(struct mpi_wire *w)
{
    (void)w;
}

#endif
