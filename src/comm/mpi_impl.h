/* Private to comm/'s MPI files: what the transport (comm/mpi.c) shares with the training wire
 * (comm/mpiwire.c) and the benchmark run (comm/mpitrial.c). Only with HAVE_MPI. */
#ifndef SCALELAB_COMM_MPI_IMPL_H
#define SCALELAB_COMM_MPI_IMPL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/xport.h"
#include "sim/cluster.h"

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

/* The transport's point-to-point operations over m->comm (self: a struct mx). */
extern const struct xport_ops mpi_xport_ops;

/* Ends every rank: "scalelab: WHO: " and the message, then MPI_Abort (exit 1). WHO is the
 * command whose messages these are ("collective" until mpi_stop_as says another). */
_Noreturn void mpi_stop(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mpi_stop_as(const char *who);
/* Waits for r, polling, within m's deadline; what it waits for (from GPU peer, or from all the
 * ranks when peer is -1) names it in the message past it. */
void mpi_await(const struct mx *m, MPI_Request *r, MPI_Status *st, const char *what, int peer);
/* The receive posted as r from peer has ended: its size checked, then summed into buf out of
 * m's scratch when it combines. */
void mpi_land(struct mx *m, MPI_Request *r, int peer, void *buf, size_t bytes,
              dev_combine_fn combine, void *ctx);
/* Every rank's `bytes` at mine into rank 0's all; the distinct processor names among the ranks
 * (every rank's answer, each keeping every rank's name for the deadlines' messages), rank
 * 0's into host0; a communicator of its own, like MPI_COMM_WORLD. */
void mpi_gather(const struct mx *m, const void *mine, int bytes, void *all);
int mpi_count_hosts(const struct mx *m, char *host0, size_t n0);
MPI_Comm mpi_dup_world(const struct mx *m);

#endif
