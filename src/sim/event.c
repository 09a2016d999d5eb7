/* Event type names, the deterministic order of a run's events, and each send's arrival
 * (sim/event.h). */
#include "config.h"
#include "sim/event.h"

#include <stdlib.h>

static const char *const names[EV_TYPE_COUNT] = {
    "compute_begin", "compute_end", "send",      "recv", "memory",
    "oom",           "train_step",  "nonfinite", "fail", "pipe_op",
};

const char *event_type_name(enum event_type t)
{
    return t < EV_TYPE_COUNT ? names[t] : "?";
}

static int cmp(const void *pa, const void *pb)
{
    const struct event *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void event_sort(struct event *ev, size_t n)
{
    if (n > 1)
        qsort(ev, n, sizeof *ev, cmp);
}

struct keyed {
    uint64_t msg;
    size_t i;
};

static int by_msg(const void *pa, const void *pb)
{
    const struct keyed *a = pa, *b = pb;
    return a->msg < b->msg ? -1 : a->msg > b->msg;
}

int event_send_arrivals(const struct event *ev, size_t n, double *out)
{
    struct keyed *recv = malloc((n ? n : 1) * sizeof *recv);
    if (!recv)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = ev[i].t_end;
        if (ev[i].type == EV_RECV)
            recv[k++] = (struct keyed){ev[i].msg, i};
    }
    qsort(recv, k, sizeof *recv, by_msg);
    for (size_t i = 0; i < n; i++) {
        if (ev[i].type != EV_SEND)
            continue;
        struct keyed key = {ev[i].msg, 0};
        const struct keyed *r = bsearch(&key, recv, k, sizeof *recv, by_msg);
        if (r)
            out[i] = ev[r->i].t_end;
    }
    free(recv);
    return 0;
}
