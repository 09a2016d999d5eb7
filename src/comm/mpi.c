/* The MPI transport below the collectives: MPI's start and end, the bounded waits and the
 * stop every rank shares, and the point-to-point sends of comm/xport.h over a communicator
 * (comm/mpi.h). The training wire (comm/mpiwire.c) and the benchmark beside the library
 * (comm/mpitrial.c) stand on it through comm/mpi_impl.h. */
#include "config.h"
#include "comm/mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

int mpi_refuse(struct error *e)
{
    return error_set(e, ERR_INVAL,
                     "--transport mpi: this scalelab was built without MPI: install the Debian "
                     "packages " MPI_PACKAGES ", then run configure and make again");
}

#if HAVE_MPI

#include <mpi.h>
#include <sched.h>
#include <stdarg.h>

#include "comm/mpi_impl.h"

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

/* ------------------------------------------------------------------ the bounded waits */

static const char *stop_who = "collective"; /* the command whose messages these are */

/* every rank's processor name, in rank order, once mpi_count_hosts has gathered them: a
 * deadline's message names the hosts of both ends (across hosts, a cut link is one host's) */
static char (*host_names)[MPI_MAX_PROCESSOR_NAME];
static int host_count;

static const char *host_of(int rank)
{
    return host_names && rank >= 0 && rank < host_count ? host_names[rank] : NULL;
}

void mpi_stop_as(const char *who)
{
    stop_who = who;
}

void mpi_stop(const char *fmt, ...)
{
    /* one write of the whole line: ranks stopping together write to one stream, and pieces
     * written apart would interleave */
    char line[1024];
    int at = snprintf(line, sizeof line - 1, "scalelab: %s: ", stop_who);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + at, sizeof line - 1 - (size_t)at, fmt, ap);
    va_end(ap);
    fputs(strcat(line, "\n"), stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

void mpi_await(const struct mx *m, MPI_Request *r, MPI_Status *st, const char *what, int peer)
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
            const char *mine = host_of(m->rank), *theirs = host_of(peer);
            if (peer >= 0 && mine && theirs)
                mpi_stop("GPU %d: waited %g s for %s GPU %d: is that rank running and reachable? "
                         "GPU %d is on host %s, GPU %d on host %s; stopping every rank",
                         m->rank, m->deadline_s, what, peer, peer, theirs, m->rank, mine);
            if (peer >= 0)
                mpi_stop("GPU %d: waited %g s for %s GPU %d: is that rank running and reachable? "
                         "stopping every rank",
                         m->rank, m->deadline_s, what, peer);
            mpi_stop("GPU %d: waited %g s for %s: is every rank running and reachable?%s%s "
                     "stopping every rank",
                     m->rank, m->deadline_s, what, mine ? " this is host " : "", mine ? mine : "");
        }
        sched_yield();
    }
}

void mpi_gather(const struct mx *m, const void *mine, int bytes, void *all)
{
    MPI_Request r;
    MPI_Igather(mine, bytes, MPI_BYTE, all, bytes, MPI_BYTE, 0, m->comm, &r);
    mpi_await(m, &r, MPI_STATUS_IGNORE, "the other ranks' results", -1);
}

int mpi_count_hosts(const struct mx *m, char *host0, size_t n0)
{
    char me[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0, hosts = 0;
    MPI_Get_processor_name(me, &len);
    char(*all)[MPI_MAX_PROCESSOR_NAME] = calloc((size_t)m->size, sizeof *all);
    if (!all)
        mpi_stop("GPU %d: out of memory", m->rank);
    MPI_Request r; /* every rank keeps the table, for the deadlines' messages */
    MPI_Iallgather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                   m->comm, &r);
    mpi_await(m, &r, MPI_STATUS_IGNORE, "the other ranks' host names", -1);
    for (int i = 0; i < m->size; i++) {
        all[i][MPI_MAX_PROCESSOR_NAME - 1] = '\0';
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(all[i], all[j]);
        hosts += !seen;
    }
    memcpy(host0, all[0], n0 - 1);
    host0[n0 - 1] = '\0';
    free(host_names);
    host_names = all;
    host_count = m->size;
    return hosts;
}

MPI_Comm mpi_dup_world(const struct mx *m)
{
    MPI_Comm c;
    MPI_Request r;
    MPI_Comm_idup(MPI_COMM_WORLD, &c, &r);
    mpi_await(m, &r, MPI_STATUS_IGNORE, "the other ranks to start", -1);
    return c;
}

/* ------------------------------------------------------------------ the transport */

static int m_step(void *self, int step, struct error *e)
{
    struct mx *m = self;
    (void)e;
    if (m->rank == m->fail_rank && step == m->fail_step)
        mpi_stop("GPU %d: failed at step %d (--fail): MPI_Abort ends every rank", m->rank, step);
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
    mpi_await(m, &m->req[req->msg], MPI_STATUS_IGNORE, "a receive from", req->to);
    return 0;
}

void mpi_land(struct mx *m, MPI_Request *r, int peer, void *buf, size_t bytes,
              dev_combine_fn combine, void *ctx)
{
    MPI_Status st;
    int got = 0;
    mpi_await(m, r, &st, "a message from", peer);
    MPI_Get_count(&st, MPI_BYTE, &got);
    if ((size_t)got != bytes)
        mpi_stop("GPU %d: GPU %d sent %d bytes where %zu were expected", m->rank, peer, got, bytes);
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
        mpi_land(m, &r, peer, buf, bytes, combine, ctx);
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
    mpi_land(m, &r, from, rbuf, rbytes, combine, ctx);
    mpi_await(m, &s, MPI_STATUS_IGNORE, "a receive from", to);
    return 0;
}

static void m_sync(void *self, int a, int b)
{
    (void)self, (void)a, (void)b; /* no simulated streams: wall time is real */
}

const struct xport_ops mpi_xport_ops = {m_step, m_isend, m_wait, m_recv, m_sendrecv, m_sync};

#else /* no MPI */

bool mpi_built(void)
{
    return false;
}

const char *mpi_about(void)
{
    return "MPI transport: not built (install " MPI_PACKAGES ", then configure again)";
}

int mpi_begin(int *argc, char ***argv, int *rank, int *size, struct error *e)
{
    (void)argc, (void)argv;
    *rank = 0, *size = 1;
    return mpi_refuse(e);
}

void mpi_end(void)
{
}

#endif
