/* A run's last step as a timeline (the run panels' `w` view): per GPU a compute row and a
 * communication row on one axis of simulated seconds, the communication no compute of its GPU
 * hides marked as exposed.
 *
 * Spans in, rows out. A span is one GPU's compute (an operation's begin to its end) or one of
 * its messages on its port (a send's start to the end of its time on the port); a ring's step
 * sends and receives on every GPU at once, so its sends show its time on each of them. Per GPU
 * the compute spans are merged into busy time, the messages into communication time, and the
 * communication outside busy time is exposed: what the step waits for. A row has a cell per
 * w-th of the step: computing in any of it, or communicating (exposed when at least half of the
 * communication in it is). Pure but for timeline_draw, and tested without a terminal
 * (test_timeline). */
#ifndef SCALELAB_UI_TIMELINE_H
#define SCALELAB_UI_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>

struct ui_canvas;

#define TIMELINE_GPUS  16
#define TIMELINE_W     256 /* cells a row holds at most */
#define TIMELINE_LABEL 10  /* the columns of a row's label */

enum timeline_kind { TIMELINE_COMPUTE, TIMELINE_COMM };

struct timeline_span {
    int gpu;
    enum timeline_kind kind;
    double t0, t1; /* simulated seconds */
};

/* A cell: nothing, computing, communicating hidden by compute, or exposed. */
enum timeline_cell { TL_IDLE, TL_BUSY, TL_HIDDEN, TL_EXPOSED };

struct timeline {
    int gpus, w;
    double t0, t1;                                    /* the step's span */
    unsigned char cell[TIMELINE_GPUS][2][TIMELINE_W]; /* [gpu][kind][column] */
    /* per GPU, seconds: computing, communicating, communicating while not computing */
    double busy[TIMELINE_GPUS], comm[TIMELINE_GPUS], exposed[TIMELINE_GPUS];
};

/* The timeline of spans s[0..n) of GPUs 0..gpus-1 over [t0, t1] in w cells (at most
 * TIMELINE_W; spans are clipped to the step, those of other GPUs left out). 0, or -1 when out
 * of memory. */
int timeline_build(struct timeline *tl, const struct timeline_span *s, size_t n, int gpus,
                   double t0, double t1, int w);

/* The cells of GPU g's row of kind k as text, NUL-terminated in buf (w + 1 bytes): '#'
 * computing, '=' hidden communication, 'X' exposed, '.' idle. */
char *timeline_row_text(const struct timeline *tl, int g, enum timeline_kind k, char *buf);
char timeline_glyph(enum timeline_cell c);

/* The axis under w cells of a span of `span` seconds, in buf (n bytes, w + 1 at least): its
 * start "0", its middle and its end in the unit that suits the span ("0  12.5 ms  25.0 ms"),
 * as many labels as fit. */
char *timeline_axis(char *buf, size_t n, int w, double span);

/* The rows of the first `shown` GPUs (two each, "GPU0  comp" and "      comm", then the cells
 * from column TIMELINE_LABEL), the axis and the legend, from row y at column 0; "(N of M GPUs: a
 * larger window shows all)" when shown < tl->gpus. The rows drawn. */
int timeline_draw(const struct timeline *tl, struct ui_canvas *c, int y, int shown);
/* The rows timeline_draw takes for `shown` GPUs: 2 each, the axis, the legend and the note. */
int timeline_rows(int shown, bool all);

#endif
