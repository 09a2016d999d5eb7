/* Lesson 3's α-β plot: two algorithms' times against the size, log-log, 1 KiB to 1 GiB (ring
 * and tree for an all-reduce, pairwise and direct for an all-to-all: collrun_plot_algos), from
 * the curves a run of ui/collrun.h made at COLLRUN_PLOT_GRID sizes, each column read between
 * two of them. The curves drawn with the algorithms' first letters ('*' where they meet), the
 * crossover and the size chosen marked on the size axis, and a legend (one line when there is
 * room, else two). The panel is ui/panel_collective.c. */
#ifndef SCALELAB_UI_COLLPLOT_H
#define SCALELAB_UI_COLLPLOT_H

#include "comm/cost.h"
#include "ui/draw.h"

struct coll_plot {
    enum cost_op op;
    double size;           /* the size chosen: '^' on the axis */
    double crossover;      /* where the two curves cross (bytes), 0: they do not */
    const double *t0, *t1; /* the two algorithms' times at COLLRUN_PLOT_GRID sizes */
};

/* Draws the plot in h rows x w columns at (y0, x0); nothing when it does not fit. */
void collplot_draw(const struct coll_plot *pl, struct ui_canvas *c, int y0, int x0, int h, int w);

#endif
