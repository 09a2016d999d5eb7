/* A stacked bar laid out as a pure function: each part its share of the cells, a part above
 * zero at least one, what lies past the capacity marked (ui/stackbar.h). */
#include "config.h"
#include "ui/stackbar.h"

#include <math.h>
#include <string.h>

/* Each part's cells: as many as its share of the bar's, rounded, but at least one for a part
 * above zero, when the bar has a cell for each (a small part, a ZeRO stage's sharded
 * gradients, shows rather than vanish); the cells taken from the parts shown widest against
 * their share, given to those shown narrowest. false: the bar is too short for that (the
 * middle of each cell then says which part it shows). */
static bool apportion(const double *parts, int n, double scale, int width, int *cells)
{
    double total = 0, ideal[STACKBAR_MAX_PARTS];
    int shown = 0, sum = 0;
    for (int k = 0; k < n; k++) {
        double p = parts[k] > 0 ? parts[k] : 0; /* also NaN -> 0 */
        ideal[k] = p / scale * width;
        total += p, shown += p > 0;
    }
    int want = (int)lround(total / scale * width);
    want = want > width ? width : want;
    if (shown == 0 || want < shown)
        return false;
    for (int k = 0; k < n; k++) {
        cells[k] = ideal[k] > 0 ? (int)fmax(1, lround(ideal[k])) : 0;
        sum += cells[k];
    }
    while (sum != want) {
        int best = -1;
        for (int k = 0; k < n; k++) {
            bool can = sum > want ? cells[k] > 1 : ideal[k] > 0;
            double d = sum > want ? cells[k] - ideal[k] : ideal[k] - cells[k];
            if (can && (best < 0 ||
                        d > (sum > want ? cells[best] - ideal[best] : ideal[best] - cells[best])))
                best = k;
        }
        if (best < 0)
            return false;
        cells[best] += sum > want ? -1 : 1;
        sum += sum > want ? -1 : 1;
    }
    return true;
}

void stackbar_layout(const double *parts, int n, double scale, double capacity, int width,
                     struct stackbar *out)
{
    if (width < 0)
        width = 0;
    if (width > STACKBAR_MAX_CELLS)
        width = STACKBAR_MAX_CELLS;
    if (n > STACKBAR_MAX_PARTS)
        n = STACKBAR_MAX_PARTS;
    memset(out, 0, sizeof *out);
    out->width = width;
    out->cap_col = -1;
    bool ok = scale > 0 && isfinite(scale);
    if (ok && capacity >= 0 && capacity <= scale)
        out->cap_col = (int)lround(capacity / scale * width);
    int cells[STACKBAR_MAX_PARTS];
    bool apportioned = ok && apportion(parts, n, scale, width, cells);
    for (int i = 0, k = 0, used = 0; i < width; i++) {
        out->part[i] = -1;
        if (!ok)
            continue;
        double mid = (i + 0.5) * scale / width, end = 0;
        if (apportioned) {
            while (k < n && used == cells[k])
                k++, used = 0;
            if (k < n)
                out->part[i] = (signed char)k, used++;
        } else {
            for (int j = 0; j < n; j++) {
                double p = parts[j] > 0 ? parts[j] : 0; /* also NaN -> 0 */
                end += p;
                if (mid < end) {
                    out->part[i] = (signed char)j;
                    break;
                }
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
