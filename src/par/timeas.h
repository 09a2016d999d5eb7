/* A run timed as the model it stands for (train --time-as MODEL; DESIGN.md, "Time as a
 * model"). The run computes its own small model; its simulated clock charges each operation
 * and message what the one it stands for costs in MODEL, in the same layout on the run's
 * cluster. One mechanism, sim/spec.h's struct time_scale, whose figures are all ratios of the
 * calculator's own counts (src/calc) for MODEL and for the run's model:
 *   compute   a layer's FLOPs (plan_op_flops: 2 Ψ_layer b s + 4 b s^2 h at MODEL's sequence,
 *             the run's micro-batch) times MODEL's layers over the run's, over the layer the run
 *             computes (the model's own count, gpt_step_flops); the ends (embedding, final norm,
 *             head) the same way; selective recompute's attention core by activ_recompute_flops;
 *             all at peak x PLAN_EFFICIENCY, as plan_time charges them;
 *   messages  per pipeline stage and by what they carry, the calculator's bytes of that kind
 *             for MODEL over the run's (calc/traffic.h's kinds and pieces): gradients and weights
 *             scale with the parameters a GPU holds, tensor-parallel sums with b s h (and, inside
 *             a layer, a message stands for MODEL's layers over the run's messages: as many α),
 *             the loss's numbers with b s, pipeline sends with b s h.
 * The order of operations, their dependencies and their overlap stay the run's. */
#ifndef SCALELAB_PAR_TIMEAS_H
#define SCALELAB_PAR_TIMEAS_H

#include <stddef.h>

#include "calc/plan.h"
#include "calc/preset.h"
#include "par/settings.h"
#include "sim/spec.h"

struct error;

/* The time scale of the run of options o and model `run` timed as model `as` on GPUs like
 * spec's (its capacity, links and peak), into spec->time. 0, or ERR_INVAL saying why MODEL
 * cannot be timed so: a layout it cannot hold (the calculator's check, or its memory per GPU
 * over the capacity), a kind of run not timed as another model yet (context and expert
 * parallelism, mixtures of experts), more than TIME_STAGES stages. */
int timeas_scale(const struct train_opts *o, const struct model_shape *run,
                 const struct model_shape *as, struct cluster_spec *spec, struct error *e);

/* The bytes of the run's gradient bucket when bucket_bytes is MODEL's (o->bucket_bytes, 25 MiB
 * by default, PyTorch DDP's): the bucket over the parameters' scale, at least an element of es
 * bytes, so that the run reduces as many buckets as MODEL would and they overlap its backward
 * pass as MODEL's would. */
size_t timeas_bucket(const struct cluster_spec *spec, size_t bucket_bytes, size_t es);

/* The calculator's step for the same layout of MODEL `as` (plan_step: compute, bubble, exposed
 * communication by kind, MFU), what `plan` ranks it by and `memory` prints for it. */
int timeas_predict(const struct train_opts *o, const struct model_shape *as,
                   const struct cluster_spec *spec, struct plan_layout *out, struct error *e);

#endif
