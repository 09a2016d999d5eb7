/* Pipeline parallelism, one GPU's part: it runs its stage's forward and backward passes,
 * micro-batch by micro-batch, in the order of the schedule that `scalelab pipeline` draws
 * (calc/sched.h: GPipe, 1F1B, interleaved or ZB-H1), receiving each micro-batch's activations from
 * the stage before and its activations' gradients from the stage after by point-to-point sends.
 *
 * A forward operation waits for its input (the first stage reads the tokens), runs the
 * stage's layers keeping what the backward pass needs in the micro-batch's slot (model/gpt.h's
 * parts), and posts its output to the next stage; a backward operation waits for the gradient
 * of that output, runs back through the layers (the weight gradients add up over the step's
 * micro-batches) and posts the gradient of its input to the stage before. ZB-H1's B does the
 * same but for the layers' weight gradients, which it leaves in a weight slot (micro-batch k
 * in slot k mod the most the stage holds between B and W); its W computes them from there and
 * sends nothing. Sends are posted
 * and left pending until the step ends, each from a buffer of its own, so no stage ever waits
 * for another to take a message: a stage only waits for what it needs, and any order the
 * schedule allows runs without deadlock. Each message is keyed by its direction, the virtual stage
 * it goes to and its micro-batch (sim/cluster.h's keyed sends): with the interleaved schedule the
 * last stage also sends the next round's first activations, so two kinds of message share a pair of
 * GPUs in orders the two sides do not agree on.
 *
 * The send and receive buffers are the CPU's staging copies (workspace): on a GPU the tensor
 * sent is the last layer's output and the one received becomes the first layer's saved input,
 * both already counted among the activations. Simulated time: the sends and the compute run on
 * stream 0, so an operation starts when its stage is free and its input has arrived; each
 * operation's start and end are recorded, and the bubble is measured on them. */
#ifndef SCALELAB_PAR_PP_H
#define SCALELAB_PAR_PP_H

#include <stddef.h>
#include <stdint.h>

#include "calc/sched.h"
#include "model/gpt.h"
#include "par/strategy.h"

struct device;
struct dp_mem;
struct error;
struct layout_place;

/* One operation as executed: what, and when in simulated time (0 on the host). */
struct pp_done {
    enum sched_op_kind kind;
    int micro, chunk;
    double start_s, end_s;
};

struct pp;

/* The executor of the GPU at place pl for its s->v model chunks g[c] (parts parts[c]: the
 * interleaved schedule's virtual stage c pp + stage), whose activations are in fmt; s the
 * schedule (stage pl->stage's operations are run). d NULL: the host, one stage. 0 or
 * ERR_NOMEM. */
int pp_new(struct pp **out, const struct layout_place *pl, const struct sched *s,
           struct gpt *const *g, const struct gpt_part *parts, enum fp_format fmt, struct device *d,
           const struct dp_mem *mem, struct error *e);

/* The slots chunk `chunk` of stage `stage` needs: the most of its micro-batches the schedule
 * has the stage hold at once. */
int pp_slots(const struct sched *s, int stage, int chunk);
void pp_free(struct pp *p);

/* One step's forward and backward passes: tokens and targets are this data-parallel rank's
 * rows, micro-batch k at k x micro-batch x seq. *loss: the mean of the micro-batches' losses
 * on the last stage, NaN on the others. 0, or the failure of a send. */
int pp_step(struct pp *p, int step, const int32_t *tokens, const int32_t *targets, float scale,
            const struct gpt_inject *inj, double *loss, struct error *e);

/* The last step's operations as executed, in order (*n of them). */
const struct pp_done *pp_ops(const struct pp *p, int *n);
/* Most micro-batches this stage held at once (forward done, backward not yet), over the run. */
int pp_peak_in_flight(const struct pp *p);

/* Its face (par/strategy.h), through which the trainer reads the bytes it sent in the last
 * step (activations and their gradients) and its staging buffers' (workspace): stages dividing the
 * layers, the micro-batches, the interleaved schedule's rules; per GPU the schedule's operations of
 * its stage (calc/sched.h), a send after each but the last virtual stage's forwards and the first's
 * backwards, and its staging buffers (an input and its gradient, each micro-batch's output and
 * input gradient, on the GPUs that have a stage on that side). */
extern const struct strategy pp_strategy;

#endif
