/* Lesson 3's α-β plot (ui/collplot.h). */
#include "config.h"
#include "ui/collplot.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "base/units.h"
#include "ui/collrun.h"

void collplot_draw(const struct coll_plot *pl, struct ui_canvas *c, int y0, int x0, int h, int w)
{
    bool one_line = w >= 40; /* the legend on one row (in fewer words below 52 columns) */
    int ph = h - (one_line ? 2 : 3), pw = w - 10;
    if (ph < 2 || w < 30)
        return;
    double lo = COLLRUN_PLOT_LO, hi = COLLRUN_PLOT_HI, tmin = INFINITY, tmax = 0;
    double v0[COLLRUN_PLOT_GRID], v1[COLLRUN_PLOT_GRID];
    enum cost_algo pa[2];
    collrun_plot_algos(pl->op, pa);
    const char *n0 = cost_algo_name(pa[0]), *n1 = cost_algo_name(pa[1]);
    char c0[2] = {n0[0], 0}, c1[2] = {n1[0], 0}; /* r t, or p d */
    if (pw > COLLRUN_PLOT_GRID)
        pw = COLLRUN_PLOT_GRID;
    for (int i = 0; i < pw; i++) { /* between the grid's sizes, log-log interpolated */
        double x = (double)i / (pw - 1) * (COLLRUN_PLOT_GRID - 1);
        int j = x < COLLRUN_PLOT_GRID - 1 ? (int)x : COLLRUN_PLOT_GRID - 2;
        double f = x - j;
        v0[i] = exp((1 - f) * log(pl->t0[j]) + f * log(pl->t0[j + 1]));
        v1[i] = exp((1 - f) * log(pl->t1[j]) + f * log(pl->t1[j + 1]));
        tmin = fmin(tmin, fmin(v0[i], v1[i]));
        tmax = fmax(tmax, fmax(v0[i], v1[i]));
    }
    double l0 = log(tmin), l1 = log(tmax);
    char b[32];
    canvas_text(c, y0, x0, ROLE_DIM, units_format_seconds(b, sizeof b, tmax));
    canvas_text(c, y0 + ph - 1, x0, ROLE_DIM, units_format_seconds(b, sizeof b, tmin));
    int xc =
        pl->crossover > 0 ? (int)lround(log(pl->crossover / lo) / log(hi / lo) * (pw - 1)) : -1;
    int xs = (int)lround(log(pl->size / lo) / log(hi / lo) * (pw - 1));
    int px = x0 + 10;
    for (int row = 0; row < ph; row++)
        if (xc >= 0 && xc < pw)
            canvas_text(c, y0 + row, px + xc, ROLE_DIM, theme_glyphs()->v);
    for (int i = 0; i < pw; i++) {
        int yr = ph - 1 - (int)lround((log(v0[i]) - l0) / (l1 - l0 + 1e-300) * (ph - 1));
        int yt = ph - 1 - (int)lround((log(v1[i]) - l0) / (l1 - l0 + 1e-300) * (ph - 1));
        if (yr == yt) {
            canvas_text(c, y0 + yr, px + i, ROLE_TEXT, "*");
        } else {
            canvas_text(c, y0 + yr, px + i, ROLE_GOOD, c0);
            canvas_text(c, y0 + yt, px + i, ROLE_WARN, c1);
        }
    }
    canvas_text(c, y0 + ph, px, ROLE_DIM, "1 KiB");
    canvas_text(c, y0 + ph, px + pw - 5, ROLE_DIM, "1 GiB");
    if (xs >= 0 && xs < pw)
        canvas_text(c, y0 + ph, px + xs, ROLE_SELECTED, "^");
    char cross[64] = "", legend[2][128];
    if (xc >= 0 && xc < pw)
        snprintf(cross, sizeof cross, "%s crossover %s", theme_glyphs()->v,
                 units_format_bytes(b, sizeof b, pl->crossover, UNITS_BINARY));
    /* all-to-all's two take the same time on one node: say that the one curve is both */
    const char *both = pl->op == COST_ALLTOALL ? "* both  " : "";
    snprintf(legend[0], sizeof legend[0], "%s %s  %s %s  %s%s%s^ this size", c0, n0, c1, n1, both,
             cross, *cross ? "  " : "");
    snprintf(legend[1], sizeof legend[1], "%s %s %s %s %s%s%s%s^ size", c0, n0, c1, n1,
             *both ? "* both " : "", *cross ? theme_glyphs()->v : "", *cross ? b : "",
             *cross ? " " : "");
    if (one_line) {
        canvas_text(c, y0 + ph + 1, x0, ROLE_DIM, legend[layout_text_width(legend[0]) > w]);
    } else {
        char two[64];
        snprintf(two, sizeof two, "%s %s  %s %s  %s^ this size", c0, n0, c1, n1, both);
        canvas_text(c, y0 + ph + 1, x0, ROLE_DIM, two);
        canvas_text(c, y0 + ph + 2, x0, ROLE_DIM, cross);
    }
}
