/* The default cluster description, its checks, and how a run timed as another model charges
 * its operations and messages (sim/spec.h). */
#include "config.h"
#include "sim/spec.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"

void spec_default(struct cluster_spec *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", "h100-80gb (built in)");
    s->gpus_per_node = 8;
    s->nodes = 1;
    s->hbm_bytes = 80.0 * 1024 * 1024 * 1024;
    s->peak_flops = 989.4e12;
    s->alpha_intra = 2e-6;
    s->beta_intra = 450e9;
    s->alpha_inter = 5e-6;
    s->beta_inter = 50e9;
}

int spec_check(const struct cluster_spec *s, struct error *e)
{
    if (s->gpus_per_node < 1)
        return error_set(e, ERR_INVAL, "cluster %s: gpus_per_node must be >= 1", s->name);
    if (s->nodes < 1)
        return error_set(e, ERR_INVAL, "cluster %s: nodes must be >= 1", s->name);
    if (!(s->hbm_bytes > 0))
        return error_set(e, ERR_INVAL, "cluster %s: the memory per GPU must be > 0", s->name);
    if (!(s->peak_flops > 0))
        return error_set(e, ERR_INVAL, "cluster %s: the peak FLOP/s must be > 0", s->name);
    if (!(s->alpha_intra >= 0 && s->alpha_inter >= 0))
        return error_set(e, ERR_INVAL, "cluster %s: α must be >= 0", s->name);
    if (!(s->beta_intra > 0 && s->beta_inter > 0))
        return error_set(e, ERR_INVAL, "cluster %s: β must be > 0", s->name);
    if (s->time.as[0] && !(s->time.efficiency > 0 && s->time.efficiency <= 1))
        return error_set(e, ERR_INVAL, "cluster %s timed as %s: the efficiency must be in (0, 1]",
                         s->name, s->time.as);
    return 0;
}

int spec_node(const struct cluster_spec *s, int gpu)
{
    return gpu / (s->gpus_per_node > 0 ? s->gpus_per_node : 1);
}

double spec_compute_time(const struct cluster_spec *s, double flops)
{
    if (!(flops > 0))
        return 0;
    double eff = s->time.as[0] ? s->time.efficiency : 1;
    return flops / (s->peak_flops * eff);
}

double time_flops(const struct time_scale *t, enum time_op op, double flops)
{
    return t->as[0] && op >= 0 && op < TIME_OPS ? flops * t->flops[op] : flops;
}

struct time_msg_scale time_msg(const struct time_scale *t, int stage, enum time_msg k)
{
    if (!t->as[0] || stage < 0 || stage >= TIME_STAGES || k < 0 || k >= TIME_MSGS)
        return (struct time_msg_scale){1, 1, 0, k >= 0 && k < TIME_MSGS ? k : TIME_MSG_NONE};
    struct time_msg_scale s = t->msg[stage][k];
    s.kind = k;
    return s;
}
