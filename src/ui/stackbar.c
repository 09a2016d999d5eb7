/* A stacked bar laid out as a pure function: each cell shows the part under its middle,
 * what lies past the capacity marked (ui/stackbar.h). */
#include "config.h"
#include "ui/stackbar.h"

#include <math.h>
#include <string.h>

void stackbar_layout(const double *parts, int n, double scale, double capacity, int width,
                     struct stackbar *out)
{
    if (width < 0)
        width = 0;
    if (width > STACKBAR_MAX_CELLS)
        width = STACKBAR_MAX_CELLS;
    memset(out, 0, sizeof *out);
    out->width = width;
    out->cap_col = -1;
    bool ok = scale > 0 && isfinite(scale);
    if (ok && capacity >= 0 && capacity <= scale)
        out->cap_col = (int)lround(capacity / scale * width);
    for (int i = 0; i < width; i++) {
        out->part[i] = -1;
        if (!ok)
            continue;
        double mid = (i + 0.5) * scale / width, end = 0;
        for (int k = 0; k < n; k++) {
            double p = parts[k] > 0 ? parts[k] : 0; /* also NaN -> 0 */
            end += p;
            if (mid < end) {
                out->part[i] = (signed char)k;
                break;
            }
        }
        out->over[i] = out->part[i] >= 0 && mid > capacity;
    }
}

double stackbar_scale(double largest_total, double capacity)
{
    double m = largest_total > capacity ? largest_total : capacity;
    if (largest_total > 0 && largest_total * STACKBAR_SMALL < capacity)
        m = largest_total; /* a tiny model's megabytes: bars to see, the capacity beyond */
    return m > 0 && isfinite(m) ? 1.1 * m : 1;
}
