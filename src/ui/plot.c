/* A panel's plot of one value per step: a robust axis, the extremes of every column, labels
 * on rows of their own (ui/plot.h). */
#include "config.h"
#include "ui/plot.h"

#include <math.h>
#include <string.h>

#include "ui/draw.h"

static double at(const struct plot_series *s, long i)
{
    return s->v[i % s->cap];
}

void plot_range(const struct plot_series *s, enum plot_axis axis, double pad, double *lo,
                double *hi)
{
    double a = INFINITY, b = -INFINITY;
    for (long i = s->first; i < s->n; i++) {
        double v = at(s, i);
        if (isfinite(v) && (axis == PLOT_LINEAR || v > 0))
            b = fmax(b, v);
    }
    for (long i = s->first; i < s->n; i++) {
        double v = at(s, i);
        if (isfinite(v) && (axis == PLOT_LINEAR || v > 0))
            a = fmin(a, v);
    }
    if (!(a <= b)) { /* nothing to show yet */
        *lo = axis == PLOT_LOG ? 0.1 : 0;
        *hi = 1;
        return;
    }
    if (axis == PLOT_LOG) {
        a = fmax(a, b * pow(10, -PLOT_DECADES));
        if (a == b)
            a /= 2, b *= 2;
        *lo = a / pad;
        *hi = b * pad;
    } else {
        if (a == b)
            a -= 1, b += 1;
        double span = b - a;
        *lo = a - (pad - 1) * span;
        *hi = b + (pad - 1) * span;
    }
}

int plot_row(double v, enum plot_axis axis, double lo, double hi, int h)
{
    if (isnan(v) || (axis == PLOT_LOG && !(v > 0)) || h < 1)
        return -1;
    double f;
    if (axis == PLOT_LOG)
        f = (log(v) - log(lo)) / (log(hi) - log(lo));
    else
        f = (v - lo) / (hi - lo);
    if (!(f > 0)) /* also NaN from an empty axis */
        f = 0;
    if (f > 1)
        f = 1;
    return h - 1 - (int)lround(f * (h - 1));
}

int plot_columns(const struct plot_series *s, enum plot_axis axis, double lo, double hi, int h,
                 int w, struct plot_col *cols)
{
    long count = s->n - s->first;
    if (count <= 0 || w < 1 || h < 1)
        return 0;
    long per = (count + w - 1) / w;
    int k = 0;
    for (long from = s->first; from < s->n; from += per, k++) {
        struct plot_col *c = &cols[k];
        *c = (struct plot_col){-1, -1, -1, false, false};
        for (long i = from; i < from + per && i < s->n; i++) {
            double v = at(s, i);
            if (!isfinite(v)) {
                c->nonfinite = true;
                continue;
            }
            int r = plot_row(v, axis, lo, hi, h);
            if (r < 0) {
                c->below = true;
                continue;
            }
            if (s->flags && s->flags[i % s->cap]) {
                c->bad = r;
                continue;
            }
            c->top = c->top < 0 || r < c->top ? r : c->top;
            c->bottom = r > c->bottom ? r : c->bottom;
        }
    }
    return k;
}

void plot_draw(struct ui_canvas *c, int y, int x, int h, int w, const char *title, const char *top,
               const char *bottom, const struct plot_series *s, enum plot_axis axis, double lo,
               double hi, double line)
{
    if (h < 2 || w < 2)
        return;
    int tx = canvas_text(c, y, x, ROLE_TITLE, title);
    canvas_text(c, y,
                x + PLOT_MARGIN - 1 - layout_text_width(top) > tx
                    ? x + PLOT_MARGIN - 1 - layout_text_width(top)
                    : tx + 1,
                ROLE_DIM, top);
    canvas_text(c, y + h - 1, x + PLOT_MARGIN - 1 - layout_text_width(bottom), ROLE_DIM, bottom);
    int px = x + PLOT_MARGIN;
    const struct ui_glyphs *g = theme_glyphs();
    int lr = isfinite(line) ? plot_row(line, axis, lo, hi, h) : -1;
    if (lr >= 0 && (axis == PLOT_LINEAR || (line >= lo && line <= hi)))
        for (int i = 0; i < w; i++)
            canvas_text(c, y + lr, px + i, ROLE_DIM, g->h);
    static struct plot_col cols[512]; /* UI thread only */
    int k = plot_columns(s, axis, lo, hi, h, w < 512 ? w : 512, cols);
    for (int i = 0; i < k; i++) {
        const struct plot_col *col = &cols[i];
        for (int r = col->top; r >= 0 && r <= col->bottom; r++)
            canvas_text(c, y + r, px + i, r == col->top || r == col->bottom ? ROLE_BAR : ROLE_DIM,
                        r == col->top || r == col->bottom ? "*" : "|");
        if (col->below)
            canvas_text(c, y + h - 1, px + i, ROLE_WARN, "v");
        if (col->bad >= 0)
            canvas_text(c, y + col->bad, px + i, ROLE_ERROR, "x");
        if (col->nonfinite)
            canvas_text(c, y, px + i, ROLE_ERROR, "x");
    }
}
