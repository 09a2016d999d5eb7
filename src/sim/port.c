/* Where a send fits on a GPU's outgoing port (sim/port.h). */
#include "config.h"
#include "sim/port.h"

double port_earliest(const struct port_busy *busy, int n, double ready, double dur, int *at)
{
    double t = ready;
    int i = 0;
    while (i < n && busy[i].t1 <= t)
        i++;
    for (; i < n; i++) {
        if (t + dur <= busy[i].t0)
            break;
        if (busy[i].t1 > t)
            t = busy[i].t1;
    }
    *at = i;
    return t;
}
