/* The table of the training strategies, the run's check in one pass, their counts
 * (par/strategies.h). */
#include "config.h"
#include "par/strategies.h"

#include "base/error.h"
#include "par/cp.h"
#include "par/dp.h"
#include "par/ep.h"
#include "par/layout.h"
#include "par/pp.h"
#include "par/settings.h"
#include "par/tp.h"

static const struct strategy *const table[STRATEGIES] = {
    [STRATEGY_DP] = &dp_strategy, [STRATEGY_TP] = &tp_strategy, [STRATEGY_PP] = &pp_strategy,
    [STRATEGY_CP] = &cp_strategy, [STRATEGY_EP] = &ep_strategy,
};

/* The order of the checks: what splits each layer and each sequence, then the stages, then
 * the data-parallel ranks the rest of the GPUs make, then the experts over those ranks. */
static const enum strategy_kind check_order[STRATEGIES] = {STRATEGY_TP, STRATEGY_CP, STRATEGY_PP,
                                                           STRATEGY_DP, STRATEGY_EP};

const struct strategy *strategy_of(enum strategy_kind k)
{
    return k < STRATEGIES ? table[k] : NULL;
}

const char *strategy_name(enum strategy_kind k)
{
    static const char *const names[STRATEGIES] = {"data_parallel", "tensor_parallel", "pipeline",
                                                  "context_parallel", "expert_parallel"};
    return k < STRATEGIES ? names[k] : "?";
}

int train_opts_check(const struct train_opts *o, struct error *e)
{
    int rc = settings_check(o, e);
    if (rc || (rc = gpt_config_check(&o->shape, e)) || (rc = layout_check(o, e)))
        return rc;
    for (int i = 0; i < STRATEGIES; i++)
        if ((rc = table[check_order[i]]->check(o, e)))
            return rc;
    return 0;
}

void strategies_count(const struct train_opts *o, const struct layout_place *pl,
                      struct strategy_count *c)
{
    for (int k = 0; k < STRATEGIES; k++)
        table[k]->count(o, pl, c);
}
