/* Option values the calculator commands share: whole numbers in a range, sizes, the model
 * and cluster presets, each error naming its option (cli/calcargs.h). */
#include "config.h"
#include "cli/calcargs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "base/experts.h"
#include "calc/activ.h"
#include "calc/memory.h"
#include "cli/opts.h"

int calcargs_int(const char *name, const char *arg, long long min, long long max, int *out,
                 struct error *e)
{
    long long v;
    if (units_parse_int(arg, min, max, &v, NULL) < 0)
        return error_set(e, ERR_INVAL,
                         "--%s: '%s' is not allowed (a whole number from %lld to %lld)", name,
                         arg ? arg : "", min, max);
    *out = (int)v;
    return 0;
}

int calcargs_bytes(const char *name, const char *arg, double *out, struct error *e)
{
    double v;
    struct error sub = {0};
    if (units_parse_bytes(arg, 1e15, &v, &sub) < 0)
        return error_set(e, ERR_INVAL, "--%s: %s", name, sub.msg);
    if (!(v > 0))
        return error_set(e, ERR_INVAL, "--%s: '%s' must be above 0 bytes (e.g. 80GiB)", name, arg);
    *out = v;
    return 0;
}

int calcargs_capacity(const char *arg, struct model_shape *m, struct error *e)
{
    if (!arg)
        return 0;
    double cf;
    int rc = experts_parse_capacity("--capacity-factor", arg, &cf, e);
    if (rc)
        return rc;
    if (!m->experts)
        return error_set(e, ERR_INVAL,
                         "--capacity-factor '%s': for a model with experts (%s has none)", arg,
                         m->name);
    m->capacity_factor = cf;
    return 0;
}

int calcargs_model(const char *arg, struct model_shape *m, struct error *e)
{
    int rc = preset_load_model(arg, m, e);
    if (rc < 0)
        error_prefix(e, "--model");
    return rc;
}

int calcargs_cluster(const char *arg, const char *nodes, struct cluster_spec *c, struct error *e)
{
    int rc = preset_load_cluster(arg, c, e);
    if (rc < 0) {
        error_prefix(e, "--cluster");
        return rc;
    }
    if (nodes) {
        int k = 1;
        rc = calcargs_int("nodes", nodes, 1, PRESET_MAX_GPUS / c->gpus_per_node, &k, e);
        if (rc < 0)
            return rc;
        c->nodes = k;
    }
    return 0;
}

/* calc/'s parser CALL behind the option's name. */
#define NAMED_PARSER(NAME, CALL)                                                                   \
    int NAME(const struct opt_entry *o, const char *arg, void *field, struct error *e)             \
    {                                                                                              \
        int rc = CALL(arg, field, e);                                                              \
        if (rc < 0)                                                                                \
            error_prefix(e, "--%s", o->opt.name);                                                  \
        return rc;                                                                                 \
    }
NAMED_PARSER(calcargs_precision, fp_parse_precision)
NAMED_PARSER(calcargs_optimizer, memory_parse_optimizer)
NAMED_PARSER(calcargs_policy, ckpt_parse)
NAMED_PARSER(calcargs_units, units_parse_system)
NAMED_PARSER(calcargs_attention, activ_parse_attention)

char *calcargs_size(char *buf, unsigned long n, double bytes, enum units_system sys)
{
    /* Three decimals below 10, so the ZeRO paper's 1.875 GB reads as written; whole bytes. */
    const char *unit = sys == UNITS_BINARY    ? "GiB"
                       : sys == UNITS_DECIMAL ? "GB"
                                              : units_auto_unit(bytes, UNITS_BINARY);
    double v = bytes / units_factor(unit);
    if (units_factor(unit) == 1)
        snprintf(buf, n, "%.0f B", v);
    else
        snprintf(buf, n, fabs(v) < 10 && v != 0 ? "%.3f %s" : "%.2f %s", v, unit);
    return buf;
}
