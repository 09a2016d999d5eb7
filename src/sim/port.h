/* A GPU's outgoing port in simulated time: the intervals it is booked for, and where a new
 * send of some duration fits. One rule for the simulator's sends (sim/cluster.c) and for the
 * cost model that replays a collective's messages without threads (comm/cost.c), so that
 * predicted and simulated times agree. */
#ifndef SCALELAB_SIM_PORT_H
#define SCALELAB_SIM_PORT_H

struct port_busy {
    double t0, t1; /* booked for [t0, t1) */
    int kind;      /* what the booking carries (the simulator's sim/spec.h enum time_msg) */
};

/* Among n booked intervals sorted by time, the earliest t >= ready with [t, t + dur) free (a
 * send that is ready early passes one that waits for its data); *at is the index where an
 * interval starting at t keeps the list sorted. */
double port_earliest(const struct port_busy *busy, int n, double ready, double dur, int *at);

#endif
