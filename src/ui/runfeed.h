/* What the window's run panels (the Lab's data-parallel run, panel_dprun.c; lesson 4's
 * pipeline, panel_pprun.c) take from a running engine (par/run.h), and how they replay it.
 *
 * The GPUs' threads hand every event to runfeed_on_event (the run's on_event hook): memory
 * changes, sends, operations computed (their begin, with their end), pipeline operations go
 * into a ring under a lock of their own, held for a
 * copy and never waited on for long; a GPU's step events move its step count on, so each
 * record knows the step it belongs to. The screen's side (the UI thread) takes the records of
 * one finished step at a time, in simulated-time order (runfeed_begin_step), walks them as its
 * clock passes them (runfeed_next, which keeps each GPU's ledger, category by category, as the
 * memory records go by) and ends the step with each ledger exact (runfeed_end_step: a GPU's
 * streams do not record in time order, so the last record of each category by the GPU's own
 * sequence gives its value).
 *
 * A run writes through a tap (runfeed_tap_open), and a reset of the feed closes the taps
 * opened before it: a run that is still stopping when the next one starts (the window never
 * waits for it) writes nothing into the next run's records. */
#ifndef SCALELAB_UI_RUNFEED_H
#define SCALELAB_UI_RUNFEED_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calc/memory.h"
#include "calc/sched.h"
#include "sim/event.h"
#include "sim/ledger.h"

struct error;
struct train_opts;

#define RUNFEED_GPUS 16
#define RUNFEED_RING (1 << 16) /* records between two ticks: a 16-GPU ZeRO-3 step makes ~6000 */

/* One event as the panels keep it. */
struct runrec {
    double t, t_end;
    long step; /* the step of its GPU it belongs to (1-based; step 1 includes the setup) */
    uint64_t seq, cat_current, bytes;
    int64_t delta;
    const char *phase; /* EV_SEND: its phase (a static string), or NULL */
    short device, category, micro, chunk;
    short peer; /* EV_SEND: the GPU it went to */
    unsigned char type;
    enum sched_op_kind kind; /* EV_PIPE_OP: what the operation ran (calc/sched.h) */
};

struct runfeed {
    /* what the GPUs' threads write, under mu */
    pthread_mutex_t mu;
    struct runrec *ring;
    size_t head, count;
    unsigned long gen;           /* bumped by each reset: taps of another gen are closed */
    long dev_step[RUNFEED_GPUS]; /* steps each GPU has finished */
    bool failed;                 /* a GPU failed or ran out of memory */
    unsigned long lost;
    /* the screen's: records taken, not replayed yet; the step being replayed */
    struct runrec *pend, *rep;
    size_t npend, cappend, nrep, caprep, irep;
    double t0, t1;         /* the step's span in simulated time */
    unsigned long dropped; /* records the full ring could not take (the bars may be off) */
    /* each GPU's ledger as replayed so far, and its peaks */
    uint64_t cur[RUNFEED_GPUS][MEM_CAT_COUNT], peak[RUNFEED_GPUS][MEM_CAT_COUNT];
};

int runfeed_init(struct runfeed *f, struct error *e);
void runfeed_fini(struct runfeed *f);
/* Empty, every ledger 0: for a new run (its threads stopped). */
void runfeed_reset(struct runfeed *f);

/* One run's way into the feed: its event_ctx (run_config), which must outlive the run. */
struct runfeed_tap {
    struct runfeed *feed;
    unsigned long gen;
};
/* Opens t on f, until the next runfeed_reset. */
void runfeed_tap_open(struct runfeed *f, struct runfeed_tap *t);
/* The run's hook (run_config.on_event, event_ctx a runfeed_tap): on the GPUs' threads. */
void runfeed_on_event(void *ctx, const struct event *ev);

/* Before the first step: the buffers the GPUs allocate as they start, into the ledgers. */
void runfeed_take_setup(struct runfeed *f);
/* Whether a GPU failed or ran out of memory. */
bool runfeed_failed(struct runfeed *f);

/* The records of steps up to `step` (just finished), in (time, GPU, sequence) order, into
 * rep[0..nrep), and their span [t0, t1]; false when out of memory. */
bool runfeed_begin_step(struct runfeed *f, long step);
/* The next record of the step at or before simulated time tc (a memory record already applied
 * to its GPU's ledger), or NULL. */
const struct runrec *runfeed_next(struct runfeed *f, double tc);
/* The rest of the step, then each ledger exact. */
void runfeed_end_step(struct runfeed *f);

/* The ledger's categories a run panel's bars show, in memui's order (ui/memui.h): weights,
 * gradients, master weights, optimizer state, activations, communication buffers; and the
 * calculator's figure for each. */
extern const enum ledger_cat runfeed_part_cat[6];
double runfeed_predicted_part(const struct memory_result *m, int i);
/* Whether the ledger peaks of each GPU of the run of o equal the calculator's figures for its
 * pipeline stage (per_stage[stage], par/layout.h): -1 if so, else the first of the bars'
 * parts that differs, on GPU *gpu. */
int runfeed_verdict(const struct runfeed *f, const struct train_opts *o,
                    const struct memory_result *per_stage, int *gpu);
/* A ledger's categories as a memory_result, for memui's bar on GPUs of `capacity` bytes. */
void runfeed_as_result(const uint64_t *cat, double capacity, struct memory_result *m);
/* bytes in fewer than w cells: exact, with separators, when they fit; else in KiB or MiB. */
void runfeed_bytes(char *buf, size_t n, double bytes, int w);

#endif
