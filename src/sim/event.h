/* What happens on the simulated cluster, as typed events stamped with simulated time and
 * device. Devices record their own events (no lock, never blocking on a consumer); after a
 * run the cluster merges them in a deterministic order: simulated time, then device, then the
 * device's own sequence number. A live hook (cluster.h) sees each event as it is recorded.
 *
 * One flat struct serves every type; the fields a type does not use are zero. Strings are
 * static (they must outlive the run): operation, phase and tensor names. */
#ifndef SCALELAB_SIM_EVENT_H
#define SCALELAB_SIM_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum event_type {
    EV_COMPUTE_BEGIN, /* name, layer, micro, flops; t_end the planned end */
    EV_COMPUTE_END,   /* name, layer, micro */
    EV_SEND,          /* peer, bytes, chunk, step, phase, msg; t the start, t_end the end of its
                         time on the sender's port (the arrival when the receiver's incoming
                         link is free: its EV_RECV has the arrival it got) */
    EV_RECV,          /* peer, bytes, chunk, step, phase, msg; t_end the arrival, t the
                         receiver's clock after it (the later of its own and the arrival) */
    EV_MEMORY,        /* category, delta, current (the device's total), peak, capacity,
                         cat_current (the category's bytes after the change) */
    EV_OOM,           /* category, delta (asked for), current, capacity */
    EV_TRAIN_STEP,    /* step, loss, grad_norm, clip_coef, loss_scale, skipped */
    EV_NONFINITE,     /* name (tensor), layer, step */
    EV_FAIL,          /* name (what happened), step: a device stopped */
    EV_PIPE_OP,       /* name ("forward" or "backward"), micro, chunk, step: one operation of a
                         pipeline schedule on a stage, t its start, t_end its end */
    EV_TYPE_COUNT
};

struct event {
    enum event_type type;
    int device;
    uint64_t seq; /* per device, from 0 */
    double t;     /* simulated seconds */
    double t_end;
    int stream; /* the device stream of a send, receive or compute (sim/cluster.h) */
    /* communication */
    int peer, chunk, step;
    const char *phase;
    uint64_t bytes;
    uint64_t msg; /* a send and its receive share it: (sender << 40) | sender's count */
    /* compute and tensors */
    const char *name;
    int layer, micro;
    double flops;
    /* memory */
    int category;
    int64_t delta;
    uint64_t current, peak, capacity, cat_current;
    /* training */
    double loss, grad_norm, clip_coef, loss_scale;
    bool skipped;
};

/* "compute_begin", "compute_end", "send", "recv", "memory", "oom", "train_step",
 * "nonfinite", "fail" */
const char *event_type_name(enum event_type t);

/* Sorts by (t, device, seq). */
void event_sort(struct event *ev, size_t n);

/* For each event ev[i] of n, in out[i]: for a send, the arrival its receive got (its EV_RECV's
 * t_end, matched by msg), else its own t_end. 0, or -1 when out of memory. */
int event_send_arrivals(const struct event *ev, size_t n, double *out);

#endif
