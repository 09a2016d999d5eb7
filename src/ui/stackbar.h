/* A stacked horizontal bar, as a pure function (no curses, tested without a terminal): parts
 * laid end to end on one scale, each its share of the cells rounded, a part above zero at
 * least one cell when the bar has room for each (else each cell shows the part under its
 * middle), the cells past a capacity flagged (they overflow), and the capacity's column. The memory
 * panels draw per-GPU memory with it: weights, gradients, master weights, optimizer state,
 * activations. */
#ifndef SCALELAB_UI_STACKBAR_H
#define SCALELAB_UI_STACKBAR_H

#include <stdbool.h>

enum { STACKBAR_MAX_CELLS = 400, STACKBAR_MAX_PARTS = 16 };

struct stackbar {
    int width;
    int cap_col;                          /* the capacity's column, width if at the end, -1
                                             if beyond the scale */
    signed char part[STACKBAR_MAX_CELLS]; /* the part a cell shows, -1 past the total */
    bool over[STACKBAR_MAX_CELLS];        /* the cell lies past the capacity */
};

/* parts[0..n) (negative or NaN parts count as 0) on a bar of width cells worth `scale` in all
 * (scale <= 0 or NaN: an empty bar). width is clamped to [0, STACKBAR_MAX_CELLS]. */
void stackbar_layout(const double *parts, int n, double scale, double capacity, int width,
                     struct stackbar *out);

/* A scale that shows both the largest total and the capacity, with a little room: the larger
 * of the two, times 1.1; but the largest total times 1.1 alone when it is under a
 * STACKBAR_SMALL-th of the capacity (a tiny model's bars would be empty: the capacity's mark
 * then lies beyond the bar, cap_col -1, and the panel says so). */
#define STACKBAR_SMALL 20
double stackbar_scale(double largest_total, double capacity);

#endif
