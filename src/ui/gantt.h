/* The pipeline Gantt charts' columns (lesson 4's layout panel draws a schedule in slots, its run
 * panel a step's operations in simulated seconds): each operation's columns on one time axis
 * shared by the stages, so that every operation of the step shows, however short.
 *
 * The scale is linear when each operation gets a column of its own that way. When one would
 * not (an operation narrower than a column, next to another on its row), the axis stretches:
 * every operation gets at least one column and the time between them keeps the columns left
 * over, in proportion, so the stages stay aligned in time and no operation is dropped. Only
 * when the stages' operations cannot all get a column in the width does the chart give up
 * time and draw each stage's operations one column each, in the order they ran; beyond the
 * width even that cuts the last ones, and says how many it shows.
 *
 * A pure function, tested without a terminal (test_ui). */
#ifndef SCALELAB_UI_GANTT_H
#define SCALELAB_UI_GANTT_H

#include <stddef.h>

#include "calc/sched.h"

/* An operation: its row (stage) and its time; the layout fills its columns [c0, c1], or
 * c0 = -1 when it could not be drawn (GANTT_CUT). Items come row by row, each row's in the
 * order its stage ran them (their starts do not decrease). */
struct gantt_item {
    int row;
    double start, end;
    int c0, c1;
};

enum gantt_scale {
    GANTT_LINEAR,    /* per time units a column */
    GANTT_STRETCHED, /* every operation a column at least, the idle time shares the rest */
    GANTT_ORDER,     /* one column an operation, in order: time is not to scale */
    GANTT_CUT,       /* as GANTT_ORDER, but a stage has more operations than columns */
};

/* Lays out n items in w columns; *per: the time a column spans (GANTT_LINEAR), else the
 * chart's mean. Returns the scale used. */
enum gantt_scale gantt_layout(struct gantt_item *items, int n, int w, double *per);

/* The scale in words for the chart's foot, in buf (n bytes): "1 column = PER_TEXT" (a column's
 * span, as the caller writes it: "0.5 us", "1 slot"), "stretched: every operation a column",
 * "a column per operation, in order (not to scale)" or "the first SHOWN operations of each
 * stage (wider shows all)"; shorter words with short_form ("col PER_TEXT", ...). */
char *gantt_scale_text(char *buf, size_t n, enum gantt_scale s, const char *per_text, int shown,
                       int short_form);

/* An operation's letter: by micro-batch k of m when they can be told apart (m <= 10 with one
 * chunk: forwards 0-9, backwards a-j; m <= 8 with two: chunk 1's forwards A-H, backwards i-p),
 * else its kind (F, B; chunk 1 f, b; W, w: the weights' gradients apart). gantt_legend says which,
 * in buf: "0-3 forward, a-d backward", or shorter for a narrow chart (short); with W (a schedule
 * that runs B and W apart, zb-h1), the backward is B and W's letter is named too. */
char gantt_char(enum sched_op_kind kind, int micro, int chunk, int m, int v);
char *gantt_legend(char *buf, size_t n, int m, int v, bool w, int short_form);

#endif
