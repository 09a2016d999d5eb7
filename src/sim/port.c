/* Where a send fits on a GPU's outgoing port (sim/port.h). */
#include "config.h"
#include "sim/port.h"

double port_earliest(const struct port_busy *busy, int n, double ready, double dur, int *at)
{
    double t = ready;
    /* the first interval still busy at ready: the intervals are sorted and apart, so their
     * ends rise too (a binary search: a port that sent thousands of messages is not walked
     * from its first one at every send) */
    int i = 0, hi = n;
    while (i < hi) {
        int mid = i + (hi - i) / 2;
        if (busy[mid].t1 <= t)
            i = mid + 1;
        else
            hi = mid;
    }
    for (; i < n; i++) {
        if (t + dur <= busy[i].t0)
            break;
        if (busy[i].t1 > t)
            t = busy[i].t1;
    }
    *at = i;
    return t;
}
