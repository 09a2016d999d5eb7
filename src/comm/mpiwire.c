/* The wire of a training run over MPI ranks: each message a header and its bytes, the
 * receiver's answer of the arrival, the records shared (comm/mpiwire.h). */
#include "config.h"
#include "comm/mpiwire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "comm/mpi.h"

#if HAVE_MPI

#include <limits.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include "comm/mpi_impl.h"
#include "sim/cluster.h"

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
    mpi_await(&w->m, &ws->head, MPI_STATUS_IGNORE, "a receive from", req->to);
    mpi_await(&w->m, &ws->body, MPI_STATUS_IGNORE, "a receive from", req->to);
    mpi_await(&w->m, &ws->ack, MPI_STATUS_IGNORE, "a receive from", req->to);
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
    mpi_await(&w->m, &r, &st, "a message from", peer);
    MPI_Get_count(&st, MPI_BYTE, &got);
    if ((size_t)got != sizeof *hdr)
        mpi_stop("GPU %d: GPU %d sent a header of %d bytes: is it the same scalelab?", w->m.rank,
                 peer, got);
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
    mpi_land(m, &r, hdr->from, buf, hdr->bytes, combine, cctx);
    unsigned k = w->nack++ % WIRE_ACKS; /* the sender waits for this answer */
    if (w->ackreq[k] != MPI_REQUEST_NULL)
        mpi_await(m, &w->ackreq[k], MPI_STATUS_IGNORE, "a receive from", hdr->from);
    w->ackval[k] = hdr->t_arrival;
    MPI_Isend(&w->ackval[k], 1, MPI_DOUBLE, hdr->from, hdr->slot, w->ack, &w->ackreq[k]);
    return 0;
}

/* Each rank's record sent to every other rank, point to point (the tag of no other message on
 * the records' communicator), and the others' taken in rank order: a rank that does not
 * answer is named with its host by the wait past the deadline (comm/mpi.c), as a message's
 * sender is. (An all-gather's wait could only say that some rank had not answered.) */
enum { SHARE_TAG = 32000 };

static int w_share(void *ctx, const void *mine, size_t bytes, void *all, struct error *e)
{
    struct mpi_wire *w = ctx;
    int n = w->m.size, me = w->m.rank;
    if (bytes > INT_MAX)
        return error_set(e, ERR_RUN, "GPU %d: a record of %zu bytes cannot go over MPI", me, bytes);
    MPI_Request *r = malloc(2 * (size_t)n * sizeof *r);
    if (!r)
        return error_set(e, ERR_NOMEM, "GPU %d: out of memory", me);
    for (int p = 0; p < n; p++) {
        r[p] = r[n + p] = MPI_REQUEST_NULL;
        if (p == me)
            continue;
        MPI_Irecv((char *)all + (size_t)p * bytes, (int)bytes, MPI_BYTE, p, SHARE_TAG, w->m.comm,
                  &r[p]);
        MPI_Isend(mine, (int)bytes, MPI_BYTE, p, SHARE_TAG, w->m.comm, &r[n + p]);
    }
    memcpy((char *)all + (size_t)me * bytes, mine, bytes);
    for (int p = 0; p < n; p++)
        if (p != me)
            mpi_await(&w->m, &r[p], MPI_STATUS_IGNORE, "the records of", p);
    for (int p = 0; p < n; p++)
        if (p != me)
            mpi_await(&w->m, &r[n + p], MPI_STATUS_IGNORE, "its records to reach", p);
    free(r);
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

int mpi_wire_open(struct mpi_wire **out, struct dev_wire *dw, const char *who, double deadline_s,
                  struct error *e)
{
    struct mpi_wire *w = calloc(1, sizeof *w);
    if (!w)
        return error_set(e, ERR_NOMEM, "out of memory");
    mpi_stop_as(who);
    MPI_Comm_rank(MPI_COMM_WORLD, &w->m.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w->m.size);
    w->m.deadline_s = deadline_s > 0 ? deadline_s : 60;
    w->m.fail_rank = -1;
    const char *stall = getenv("SCALELAB_MPI_STALL_RANK");
    w->stall_rank = stall ? atoi(stall) : -1;
    w->die = getenv("SCALELAB_MPI_STALL") && !strcmp(getenv("SCALELAB_MPI_STALL"), "exit");
    for (int i = 0; i < WIRE_ACKS; i++)
        w->ackreq[i] = MPI_REQUEST_NULL;
    w->m.comm = mpi_dup_world(&w->m);
    w->head = mpi_dup_world(&w->m);
    w->body = mpi_dup_world(&w->m);
    w->ack = mpi_dup_world(&w->m);
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
    return mpi_count_hosts(&w->m, host0, sizeof host0);
}

void mpi_wire_close(struct mpi_wire *w)
{
    if (!w)
        return;
    for (int i = 0; i < WIRE_ACKS; i++)
        if (w->ackreq[i] != MPI_REQUEST_NULL)
            mpi_await(&w->m, &w->ackreq[i], MPI_STATUS_IGNORE, "a receive from", -1);
    MPI_Comm_free(&w->head);
    MPI_Comm_free(&w->body);
    MPI_Comm_free(&w->ack);
    MPI_Comm_free(&w->m.comm);
    free(w->m.scratch);
    free(w);
}

#else /* no MPI */

int mpi_wire_open(struct mpi_wire **out, struct dev_wire *dw, const char *who, double deadline_s,
                  struct error *e)
{
    (void)dw, (void)who, (void)deadline_s;
    *out = NULL;
    return mpi_refuse(e);
}

int mpi_wire_share(struct mpi_wire *w, const void *mine, size_t bytes, void *all, struct error *e)
{
    (void)w, (void)mine, (void)bytes, (void)all;
    return mpi_refuse(e);
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
