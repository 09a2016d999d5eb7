/* What the calculator (src/calc) predicts for a training run's layout: the memory_config a
 * run's options describe, one function for `scalelab train` and the window's run panels, so
 * that both compare the ledgers with the same figures. And the pipeline's bubble measured on
 * the operations a run executed (par/pp.h), beside the schedule's formula (calc/sched.h). */
#ifndef SCALELAB_PAR_PREDICT_H
#define SCALELAB_PAR_PREDICT_H

#include "calc/memory.h"
#include "calc/preset.h"
#include "par/pp.h"
#include "par/trainer.h"

struct error;

/* The calculator's configuration of the run with options o of model m on GPUs of capacity
 * bytes: precision, AdamW, dp x pp, ZeRO stage, micro-batch, schedule, buckets, prefetch and
 * checkpoint policy as the run uses them. 0, or ERR_INVAL for a checkpoint policy the
 * calculator does not know. */
int predict_config(const struct train_opts *o, const struct model_shape *m, double capacity,
                   struct memory_config *c, struct error *e);

/* The matmul FLOPs a checkpoint policy (base/ckpt.h's names: "full", "selective", ...)
 * recomputes in a training step of model m over batch sequences, in percent of its forward
 * and backward passes: train's recompute_overhead_pct, by the model's own count
 * (model/gpt.h). NAN for a model the tiny GPT cannot train or a policy it does not know. */
double predict_recompute_pct(const struct model_shape *m, int batch, const char *policy);

/* The bubble of a pipeline step as executed: stage s's operations ops[s][0..n[s]), in
 * simulated time. The stages are idle between the step's first start and its last end
 * whenever they do not compute: idle = P x span - busy; over_ideal = idle / busy (the
 * calculator's (p - 1) / m), over_wall = idle / (P x span) (its (p - 1) / (m + p - 1)). Both 0
 * when nothing ran. */
struct pp_bubble {
    double busy_s, span_s, over_ideal, over_wall;
};
void predict_bubble(const struct pp_done *const *ops, const int *n, int stages,
                    struct pp_bubble *out);

#endif
