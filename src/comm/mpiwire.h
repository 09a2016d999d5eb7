/* The wire of a training run over MPI ranks (sim/cluster.h's struct dev_wire, over the
 * transport of comm/mpi.h): device d is rank d of MPI_COMM_WORLD, and this process runs it. A
 * message is a header (its size, key, the sender's simulated start and arrival, the tag;
 * matched by key, as dev_recv_key) and its bytes, sent together without a copy; the receiver
 * books its incoming link, takes the bytes (into a scratch buffer first when it sums them, as
 * the collective transport does) and answers the arrival to the sender, whose dev_wait ends on
 * it: the rendezvous of the thread transport, so the simulated clocks advance as they do on
 * threads. Every wait polls with the deadline; past it, or when a device fails, every rank ends
 * (MPI_Abort, exit 1) with a message ("scalelab: WHO: ..." for a deadline). mpi_wire_share is
 * the wire's share: every rank's bytes, in rank order, to every rank (also before a run: the
 * ranks' arguments). */
#ifndef SCALELAB_COMM_MPIWIRE_H
#define SCALELAB_COMM_MPIWIRE_H

#include <stddef.h>

struct dev_wire;
struct error;
struct mpi_wire;

int mpi_wire_open(struct mpi_wire **out, struct dev_wire *dw, const char *who, double deadline_s,
                  struct error *e);
int mpi_wire_share(struct mpi_wire *w, const void *mine, size_t bytes, void *all, struct error *e);
/* The deadline from now on (the options are read after the wire opens); the distinct
 * processor names among the ranks (rank 0's answer; every rank calls it). */
void mpi_wire_deadline(struct mpi_wire *w, double deadline_s);
int mpi_wire_hosts(struct mpi_wire *w);
void mpi_wire_close(struct mpi_wire *w);

#endif
