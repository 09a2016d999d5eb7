/* The pipeline Gantt chart of the window's run panel (panel_pprun.c), as data: no curses, so
 * that the unit tests build it from a real run's events. One step's operations per stage, in
 * the order the stage ran them (the EV_PIPE_OP events of the stage's first data-parallel GPU),
 * and what is measured on them: the bubble (par/predict.h), the micro-batches each stage held
 * at once, whether the order is the schedule's (calc/sched.h), and the same operations retimed
 * with free sends. */
#ifndef SCALELAB_UI_PPGANTT_H
#define SCALELAB_UI_PPGANTT_H

#include <stdbool.h>

#include "calc/sched.h"
#include "par/pp.h"
#include "par/predict.h"

#define PPG_STAGES 16
#define PPG_OPS    48 /* 3 m (F, B and W apart): up to 16 micro-batches */

struct ppgantt {
    int stages;
    int n[PPG_STAGES];
    struct pp_done ops[PPG_STAGES][PPG_OPS];
    bool overflow; /* an operation did not fit (the chart is cut) */
};

void ppg_reset(struct ppgantt *g, int stages);
/* Stage s ran op (the next in its order). */
void ppg_add(struct ppgantt *g, int stage, const struct pp_done *op);

/* The bubble measured on the operations (predict_bubble). */
void ppg_bubble(const struct ppgantt *g, struct pp_bubble *out);

/* Most micro-batches stage s held at once: forwards done whose backward is not. */
int ppg_peak_in_flight(const struct ppgantt *g, int stage);

/* Whether every stage ran the schedule's operations (kind, micro-batch, chunk) in its order. */
bool ppg_same_order(const struct ppgantt *g, const struct sched *s);

/* The same operations in the same order, each lasting as long as it did, but starting as soon
 * as its stage is free and its input computed: a forward after the previous stage's forward of
 * its micro-batch, a backward after the next stage's backward (sends take no time, as the
 * schedule's own timeline assumes). False if the order cannot run (an input never comes). */
bool ppg_retime(const struct ppgantt *g, struct ppgantt *out);

#endif
