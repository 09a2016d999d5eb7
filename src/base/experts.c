/* A mixture of experts' capacity: the rule and the reader (base/experts.h). */
#include "config.h"
#include "base/experts.h"

#include <math.h>

#include "base/error.h"
#include "base/units.h"

double experts_capacity(double n, int experts, int k, double capacity_factor)
{
    if (!(capacity_factor > 0))
        return n;
    return fmin(n, ceil(capacity_factor * k * n / experts));
}

double experts_rows(double n, int experts, int k, double capacity_factor)
{
    if (!(capacity_factor > 0))
        return k * n;
    return experts * experts_capacity(n, experts, k, capacity_factor);
}

double experts_rows_held(double n, int experts, int k, double capacity_factor, int ep)
{
    if (capacity_factor > 0 || ep <= 1)
        return experts_rows(n, experts, k, capacity_factor);
    int mine = experts / ep;
    return ep * n * (k < mine ? k : mine);
}

int experts_capacity_ok(double c)
{
    return c >= 0 && c <= EXPERTS_MAX_CAPACITY;
}

int experts_parse_capacity(const char *said, const char *s, double *out, struct error *e)
{
    double v;
    if (units_parse_double(s, false, &v, NULL) || !experts_capacity_ok(v))
        return error_set(e, ERR_INVAL, "%s '%s': a number from 0 to %d", said, s ? s : "",
                         EXPERTS_MAX_CAPACITY);
    *out = v;
    return 0;
}
