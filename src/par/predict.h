/* What the calculator (src/calc) predicts beside a training run: the memory_config a run's
 * options describe, and from it each pipeline stage's memory per GPU, the bytes each of its
 * GPUs sends per step and the schedule the stages run: one function for `scalelab train` and
 * the window's run panels, so that both compare the ledgers with the same figures. And the
 * pipeline's bubble measured on the operations a run executed (par/pp.h), beside the
 * schedule's formula (calc/sched.h). */
#ifndef SCALELAB_PAR_PREDICT_H
#define SCALELAB_PAR_PREDICT_H

#include <stdbool.h>

#include "calc/memory.h"
#include "calc/preset.h"
#include "calc/sched.h"
#include "calc/traffic.h"
#include "par/layout.h"
#include "par/pp.h"
#include "par/settings.h"

struct cluster_spec;
struct error;

/* The calculator's configuration of the run with options o of model m on GPUs of capacity
 * bytes: precision, AdamW, dp x pp, ZeRO stage, micro-batch, schedule, buckets, prefetch and
 * checkpoint policy as the run uses them. 0: every run's options have one (e is kept for
 * the calculator's future refusals). */
int predict_config(const struct train_opts *o, const struct model_shape *m, double capacity,
                   struct memory_config *c, struct error *e);

/* The calculator's figures beside a run, stage by stage. */
struct prediction {
    bool ok;                                    /* the figures below are set */
    struct memory_result mem[SCHED_MAX_STAGES]; /* a GPU of stage s: its memory */
    /* dropless expert parallelism: a GPU's activations under uniform routing (the expected;
     * mem's are the bound, every token of the group routed to it) */
    double act_uniform[SCHED_MAX_STAGES];
    struct traffic comm[SCHED_MAX_STAGES]; /* and what it sends per step, by kind */
    struct sched sched;                    /* pipelined: the schedule the stages run */
    bool have_sched;
};

/* The figures for the run of options o of model m on GPUs like spec's (its capacity, its
 * nodes' links): 0, or ERR_INVAL with the calculator's reason. predict_free frees the
 * schedule. */
int predict_run(const struct train_opts *o, const struct model_shape *m,
                const struct cluster_spec *spec, struct prediction *p, struct error *e);
void predict_free(struct prediction *p);
/* Dropless expert parallelism: a GPU's own routing over a run (model/gpt.h, par/ep.h's ep_rows):
 * the rows its expert layers held in the pass of its activation peak (rows[i], the model's
 * expert layers in order), the rows its largest all-to-all held out and in, and the rows its
 * last step's dispatches sent and received. */
struct predict_routing {
    const double *rows;
    double held, moved;
};
/* The calculator's figures for a GPU of stage st with that routing, for the run of options o
 * of model m: its memory (into r: activations and communication the ledger's at those rows)
 * and the bytes its all-to-alls send per step (*ep_bytes). 0, or -1 when the calculator
 * refuses the layout. */
int predict_at(const struct train_opts *o, const struct model_shape *m, int st,
               const struct predict_routing *rt, struct memory_result *r, double *ep_bytes);

/* The matmul FLOPs a checkpoint policy (base/ckpt.h's names: "full", "selective", ...)
 * recomputes in a training step of model m over batch sequences, in percent of its forward
 * and backward passes: train's recompute_overhead_pct, by the model's own count
 * (model/gpt.h). NAN for a model the tiny GPT cannot train or a policy it does not know. */
double predict_recompute_pct(const struct model_shape *m, int batch, const char *policy);

/* The bubble of a pipeline step as executed: stage s's operations ops[s][0..n[s]), in
 * simulated time. The stages are idle between the step's first start and its last end
 * whenever they do not compute: idle = P x span - busy; over_ideal = idle / busy (the
 * calculator's (p - 1) / m), over_wall = idle / (P x span) (its (p - 1) / (m + p - 1)). Both 0
 * when nothing ran. slowest_s is the busiest stage's compute (busy / P when the stages are
 * equal). */
struct pp_bubble {
    double busy_s, span_s, over_ideal, over_wall, slowest_s;
};
void predict_bubble(const struct pp_done *const *ops, const int *n, int stages,
                    struct pp_bubble *out);

#endif
