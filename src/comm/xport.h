/* The transport below the collectives: how one member's point-to-point sends travel.
 *
 * The algorithms of comm/ (ring.c, rhd.c, pipe.c) move data only through these six calls, so
 * the same code runs over either transport, chosen at run time:
 *   thread  a device thread of the simulated cluster (sim/cluster.h): rendezvous copies with
 *           simulated time; the default, and the only one inside the lab's engines
 *   mpi     one MPI rank per GPU (comm/mpi.h): the bytes cross real process boundaries,
 *           shared memory or a network, and only wall time is measured
 * A transport carries the semantics of sim/cluster.h: messages between two members are
 * matched in the order they were sent; a posted send's buffer stays the sender's to read, not
 * to write, until wait returns; a receive with a combine function sums into its buffer
 * instead of copying; every wait has a deadline; step(s) is where an injected failure
 * (--fail GPU@STEP) happens. A request (struct dev_req) lives with the sender until wait. */
#ifndef SCALELAB_COMM_XPORT_H
#define SCALELAB_COMM_XPORT_H

#include <stddef.h>

#include "sim/cluster.h"

struct error;

struct xport_ops {
    int (*step)(void *self, int step, struct error *e);
    int (*isend)(void *self, int peer, const void *buf, size_t bytes, const struct dev_tag *tag,
                 struct dev_req *req, struct error *e);
    int (*wait)(void *self, struct dev_req *req, struct error *e);
    int (*recv)(void *self, int peer, void *buf, size_t bytes, const struct dev_tag *tag,
                dev_combine_fn combine, void *ctx, struct error *e);
    int (*sendrecv)(void *self, int to, const void *sbuf, size_t sbytes, int from, void *rbuf,
                    size_t rbytes, const struct dev_tag *tag, dev_combine_fn combine, void *ctx,
                    struct error *e);
    /* Streams a and b wait for each other (simulated time only; a no-op elsewhere). */
    void (*sync)(void *self, int a, int b);
};

struct xport {
    const struct xport_ops *ops;
    void *self;
    int rank, size;                  /* this member and how many there are */
    const struct cluster_spec *spec; /* the links the algorithm choice and chunking assume */
};

/* The thread transport of device d. */
void xport_thread(struct xport *x, struct device *d);

#endif
