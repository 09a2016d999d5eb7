/* A panel's plot of one value per step (lesson 1's loss, gradient norm, clip coefficient and
 * loss scale; the Lab's loss): h rows by w columns beside a margin holding the plot's title and
 * its axis labels, the top label on the top row (the value it names) and the bottom one on the
 * last, never both on one row.
 *
 * The axis is robust: on a log axis its range comes from the positive values only, at most
 * PLOT_DECADES decades below the largest, so a value at or below zero (a batch scoring under
 * the loss floor) or a stray tiny one never squeezes the curve onto a row; a value at or
 * below zero is drawn on the bottom row, marked 'v'. Extremes are never averaged away: a
 * column that holds several steps draws the rows from their smallest to their largest value,
 * so one clipped step shows however many steps share its column. A step flagged bad (skipped,
 * a spike) is drawn 'x' where its value lies, a non-finite value 'x' on the top row.
 *
 * plot_range and plot_columns are pure functions (tested without a terminal); plot_draw
 * draws what plot_columns lays out. */
#ifndef SCALELAB_UI_PLOT_H
#define SCALELAB_UI_PLOT_H

#include <stdbool.h>
#include <stddef.h>

struct ui_canvas;

#define PLOT_DECADES 4
#define PLOT_MARGIN  11 /* "title label" before the curve: 5 + 1 + 5 columns */

enum plot_axis { PLOT_LINEAR, PLOT_LOG };

/* The steps' values: v[i % cap] for i from first to n - 1 (a ring), and per step a flag
 * (0 good, else bad: drawn 'x'), or flags NULL. */
struct plot_series {
    const float *v;
    const unsigned char *flags;
    long first, n, cap;
};

/* A column of the plot: the rows (0 the top) of its good values, from top to bottom (-1: none),
 * the row of its last bad value (-1: none), and whether it holds a value below the axis
 * (at or below zero on a log axis: the bottom row, 'v') or a non-finite one. */
struct plot_col {
    int top, bottom, bad;
    bool below, nonfinite;
};

/* The axis for the series: its smallest and largest finite values (positive ones on a log
 * axis, the smallest at most PLOT_DECADES decades under the largest), widened by pad (a
 * factor on a log axis, a share of the span on a linear one) and never empty (a single value
 * gets a factor of 2 or +-1 around it); [0.1, 1] (log) or [0, 1] when there is none. */
void plot_range(const struct plot_series *s, enum plot_axis axis, double pad, double *lo,
                double *hi);

/* The row (0 .. h-1, 0 the top) of value v on the axis [lo, hi], clamped to the ends; -1 for
 * a value below a log axis (v <= 0) or NaN. */
int plot_row(double v, enum plot_axis axis, double lo, double hi, int h);

/* Lays the series out in at most w columns of h rows, as many steps per column as it takes
 * (ceil(count / w)); fills cols[0..k) and returns k. */
int plot_columns(const struct plot_series *s, enum plot_axis axis, double lo, double hi, int h,
                 int w, struct plot_col *cols);

/* Draws it at (y, x) of c in h x (PLOT_MARGIN + w) cells: the title and the top label (its
 * text) on row y, the bottom label on row y + h - 1, a line at value `line` (NAN: none), then
 * the columns: '*' at the ends of each column's span, '|' between, 'x' for a bad or non-finite
 * value, 'v' on the bottom row for one below the axis. */
void plot_draw(struct ui_canvas *c, int y, int x, int h, int w, const char *title, const char *top,
               const char *bottom, const struct plot_series *s, enum plot_axis axis, double lo,
               double hi, double line);

#endif
