/* The training strategies behind their one face (par/strategy.h): data, tensor, pipeline,
 * context and expert parallelism, in a table. A run's options are checked here in one pass:
 * the settings alone (par/settings.h), the model's shape, the grid (par/layout.h), then each
 * strategy its own part; and what a run will allocate and do per step is each GPU's trainer
 * (its model parts, its batch) plus what each strategy says of itself. */
#ifndef SCALELAB_PAR_STRATEGIES_H
#define SCALELAB_PAR_STRATEGIES_H

#include "par/strategy.h"

struct error;
struct layout_place;
struct train_opts;

/* The strategy of a kind. */
const struct strategy *strategy_of(enum strategy_kind k);
/* "data_parallel", "tensor_parallel", "pipeline", "context_parallel", "expert_parallel". */
const char *strategy_name(enum strategy_kind k);

/* Checks a run's options: the settings (ranges, injections within the run, a shape that is
 * set), the shape the model can hold, the grid, then tensor, context, pipeline, data and
 * expert parallelism's parts (the data-parallel size is what the others leave of the GPUs).
 * 0 or ERR_INVAL naming the option. */
int train_opts_check(const struct train_opts *o, struct error *e);

/* What every strategy adds on the GPU at pl (par/strategy.h's count), summed into *c. */
void strategies_count(const struct train_opts *o, const struct layout_place *pl,
                      struct strategy_count *c);

#endif
