/* Event type names and the deterministic order of a run's events (sim/event.h). */
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
