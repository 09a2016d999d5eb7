/* Checkpoint policy names: parsing, printing, segment length (base/ckpt.h). */
#include "config.h"
#include "base/ckpt.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/units.h"

int ckpt_parse(const char *s, struct ckpt_policy *out, struct error *e)
{
    if (!s)
        s = "";
    if (!strcmp(s, "none"))
        *out = (struct ckpt_policy){CKPT_NONE, 0};
    else if (!strcmp(s, "full"))
        *out = (struct ckpt_policy){CKPT_FULL, 1};
    else if (!strcmp(s, "selective"))
        *out = (struct ckpt_policy){CKPT_SELECTIVE, 0};
    else if (!strcmp(s, "sqrt"))
        *out = (struct ckpt_policy){CKPT_SQRT, 0};
    else if (!strncmp(s, "every:", 6)) {
        long long k;
        if (units_parse_int(s + 6, 1, 100000, &k, NULL) < 0)
            return error_set(e, ERR_INVAL,
                             "checkpoint policy '%s': every:K needs a whole number K from 1 to "
                             "100000",
                             s);
        *out = (struct ckpt_policy){CKPT_EVERY, (int)k};
    } else
        return error_set(e, ERR_INVAL,
                         "'%s' is not a checkpoint policy (use none, full, selective, sqrt or "
                         "every:K)",
                         s);
    return 0;
}

char *ckpt_name(char *buf, size_t n, const struct ckpt_policy *p)
{
    static const char *const names[] = {"none", "full", "every", "sqrt", "selective"};
    if (p->kind == CKPT_EVERY)
        snprintf(buf, n, "every:%d", p->every);
    else
        snprintf(buf, n, "%s", names[p->kind]);
    return buf;
}

int ckpt_segment(const struct ckpt_policy *p, int n)
{
    int k = ckpt_every(p, n);
    return k < n ? k : n;
}

int ckpt_every(const struct ckpt_policy *p, int n)
{
    int k = 1;
    switch (p->kind) {
    case CKPT_FULL: return 1;
    case CKPT_EVERY: return p->every;
    case CKPT_SQRT: /* ceil(sqrt(n)), in integers */
        while ((long)k * k < n)
            k++;
        return k;
    default: return 0;
    }
}
