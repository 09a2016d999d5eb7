/* The face every training strategy shows the run: data parallelism (par/dp.h), tensor and
 * sequence parallelism (par/tp.h), pipelines (par/pp.h), context parallelism (par/cp.h) and
 * expert parallelism (par/ep.h) each answer through it for what they add to a run, so that
 * nothing above them keeps a formula of theirs:
 *   - before the run, from the options: their part of the run's check (each once, in one pass:
 *     par/strategies.h), and what one GPU of theirs allocates and does per step: its buffers,
 *     its point-to-point sends (each a send event on the sender and a receive event on the
 *     receiver), its compute and memory events and its pipeline operations. A trace is sized
 *     from the sum (run_trace_events), so a strategy that sends more says so itself;
 *   - during the run, from the GPU's instance: the bytes it sent in the step, by the kind of
 *     parallelism they serve (train's byte report), and the bytes of its buffers by the
 *     ledger's kind (the model's seam, model/gpt.h's enum gpt_mem).
 * A new strategy is a kind below, its file with these functions, and its line in
 * par/strategies.c. */
#ifndef SCALELAB_PAR_STRATEGY_H
#define SCALELAB_PAR_STRATEGY_H

#include <stdint.h>

#include "model/gpt.h"

struct error;
struct layout_place;
struct train_opts;

/* The kinds of parallelism, as a step's bytes are reported (memory --json's names:
 * par/strategies.h's strategy_name). */
enum strategy_kind { STRATEGY_DP, STRATEGY_TP, STRATEGY_PP, STRATEGY_CP, STRATEGY_EP, STRATEGIES };

/* What one GPU does for a strategy, counted from the options before the run: at most what it
 * does (exactly, where no data decides it). */
struct strategy_count {
    long buffers;  /* allocated before step 1, freed after the last: an event each time */
    long messages; /* sends per step */
    long computes; /* compute calls per step (a begin and an end event each) */
    long charges;  /* memory moves per step (two events each: out of a kind, into another) */
    long ops;      /* pipeline operations per step (an event each) */
};

/* Bytes a GPU sent in a step: by kind, and for the agreement (the loss, the norm, inf/NaN). */
struct strategy_sent {
    uint64_t bytes[STRATEGIES];
    uint64_t scalars;
};

/* A strategy. check: its part of the run's check (0 or ERR_INVAL naming the option); count:
 * adds what the GPU at place pl does for it to *c (nothing where it does not run). The
 * instance's side, for the GPU's trainer (each may be NULL): step_begin as a step begins;
 * failed, the first failure of the step's communication (0, or its code with e set); sent adds
 * the bytes sent since the step began; mem_bytes, the bytes of its buffers of a kind. */
struct strategy {
    enum strategy_kind kind;
    int (*check)(const struct train_opts *o, struct error *e);
    void (*count)(const struct train_opts *o, const struct layout_place *pl,
                  struct strategy_count *c);
    void (*step_begin)(void *self);
    int (*failed)(const void *self, struct error *e);
    void (*sent)(const void *self, struct strategy_sent *s);
    size_t (*mem_bytes)(const void *self, enum gpt_mem kind);
};

#endif
